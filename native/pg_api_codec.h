/* pyggmlr C core: the model-file codec (safetensors with a JSON header; docs/model-format.md),
 * one implementation for both front ends (codec.c reads, codec_write.c writes, codec_json.c
 * parses, codec_meta.c checks metadata, codec_plan.c matches a config against the tensors).
 * cdef-clean like pg_api.h. Messages (pg_last_error) never name the file: the front end
 * prefixes "<path>: " to content errors (PG_STATUS_ERR_VALUE). PG_STATUS_ERR_IO: the operating
 * system refused a read or write (its text in the message, its errno in pg_last_errno). */

/* a tensor's dtype in a safetensors file */
enum pg_st_dtype { PG_ST_DTYPE_F32 = 0, PG_ST_DTYPE_F64 = 1, PG_ST_DTYPE_COUNT };

typedef struct pg_st_file pg_st_file;

/* Opens path and validates it: the 8-byte header length against 100 MiB and the file size
 * (before reading the header, the data is never read here), UTF-8, strict JSON without
 * duplicate keys, __metadata__ strings only, each tensor's dtype (F32/F64), shape (at most 2
 * non-negative integers; [n] is [n, 1], [] is [1, 1]) and data_offsets (in range, size =
 * elements * itemsize, no overlaps, no gaps, no trailing bytes). On success *out holds the
 * open file; on failure *out is NULL and nothing stays open. */
int pg_st_open(const char *path, pg_st_file **out);
/* What path is, without opening it (a FIFO or device must not block a reader): MISSING also
 * for not reachable, OTHER for a FIFO, device or socket. Model files are read only from regular
 * files (pg_st_open refuses the rest, checking the file it opened); the front ends ask first to
 * give their own errors and to keep R's readBin/readRDS off FIFOs and devices. */
enum pg_file_kind {
    PG_FILE_KIND_MISSING = 0,
    PG_FILE_KIND_REGULAR = 1,
    PG_FILE_KIND_DIR = 2,
    PG_FILE_KIND_OTHER = 3,
    PG_FILE_KIND_COUNT
};
int pg_file_kind(const char *path); /* an enum pg_file_kind value */
/* 1 when path is a regular file in R's serialization (saveRDS: gzip, bzip2, xz or none) rather
 * than a model file (a plausible safetensors start wins), else 0: R's ag_load_model reads
 * ggmlR's containers */
int pg_file_is_rds(const char *path);
void pg_st_close(pg_st_file *f);

int64_t pg_st_count(const pg_st_file *f);               /* tensors, in header order */
const char *pg_st_name(const pg_st_file *f, int64_t i); /* UTF-8, borrowed */
int pg_st_dtype(const pg_st_file *f, int64_t i); /* PG_ST_DTYPE_F32 or PG_ST_DTYPE_F64, -1 bad i */
int64_t pg_st_rows(const pg_st_file *f, int64_t i);
int64_t pg_st_cols(const pg_st_file *f, int64_t i);
int64_t pg_st_nbytes(const pg_st_file *f, int64_t i);
/* Copies tensor i's bytes (row-major, little endian, nbytes = pg_st_nbytes) into dst. */
int pg_st_read(pg_st_file *f, int64_t i, void *dst, int64_t nbytes);
/* Same, converted to doubles in column-major order (R's matrices): dst holds rows * cols. */
int pg_st_read_colmajor_f64(pg_st_file *f, int64_t i, double *dst, int64_t n);

int64_t pg_st_meta_count(const pg_st_file *f); /* __metadata__ entries, in file order */
const char *pg_st_meta_key(const pg_st_file *f, int64_t i);
const char *pg_st_meta_value(const pg_st_file *f, int64_t i);

/* Nesting limits: any metadata JSON text (the parser's), and an architecture config (pg_json_check
 * with a budget, pg_config_match). The front ends bound their own walks of configs and of
 * `extra` by the same numbers, so what one saves the other loads. */
enum { PG_JSON_MAX_DEPTH = 128, PG_CONFIG_MAX_DEPTH = 64 };

/* Checks a JSON text from the metadata (len bytes of UTF-8): strict syntax within the limits,
 * no duplicate keys. what names it in the message ("metadata 'config'"). config_budget > 0:
 * also the architecture's plausibility (no number beyond 1e8 in magnitude, nesting at most 64,
 * no object whose integer fields > 1 multiply to more than config_budget). */
int pg_json_check(const char *text, int64_t len, const char *what, int64_t config_budget);

/* An architecture config (a JSON text, as ag_module_from_config takes it) against a file's
 * tensors, before anything is built: every built-in layer it declares (linear, batch_norm,
 * layer_norm, embedding, multihead_attention, dropout; sequential nesting, named layer<i>_ as
 * both front ends name them) must find each of its tensors among names[0..n) with its shape
 * rows[i] x cols[i]. A hostile 900-byte file cannot make a loader allocate a layer its own
 * tensors do not back. Layer types the core does not know (registered in a front end) and
 * fields it cannot read are left to the front end's builder. PG_STATUS_ERR_VALUE "architecture
 * config: layer 'layer2' (multihead_attention) needs tensor 'layer2_W_q' [4096x4096]
 * (16777216 values), the file holds [4x4]" (or "... which the file does not hold"). */
int pg_config_match(const char *text, int64_t len, int64_t n, const char **names,
                    const int64_t *rows, const int64_t *cols);

/* One tensor to write: data holds rows * cols values of dtype, row-major, little endian;
 * ndim 0, 1 or 2 says how the header writes the shape ([], [rows], [rows, cols]). */
typedef struct {
    const char *name;
    int dtype;
    int ndim;
    int64_t rows, cols;
    const void *data;
} pg_st_tensor;

/* Writes header + data to ".<name>.<random>.tmp" in path's directory, fsyncs it, renames it
 * over path and fsyncs the directory. Header: {"__metadata__": {keys[i]: values[i], ...},
 * then each tensor in order}, compact, non-ASCII escaped, padded with spaces to a multiple of 8.
 * A failure leaves path untouched and no temporary file. */
int pg_st_write(const char *path, const pg_st_tensor *tensors, int64_t n, const char **keys,
                const char **values, int64_t n_meta);

/* Tests only: make the next pg_st_write fail at stage 1 (its third write), 2 (fsync) or 3
 * (rename); 0 = none. pg_codec_trace: the last write's steps, e.g. "write fsync rename fsync-dir". */
void pg_codec_test_fault(int stage);
const char *pg_codec_trace(void);
