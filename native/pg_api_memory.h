/* pyggmlr C core: memory reports (memory.c). cdef-clean like pg_api.h. */
