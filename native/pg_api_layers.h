/* pyggmlr C core: layer ops (ops_layers.c). cdef-clean like pg_api.h. */
