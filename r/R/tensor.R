# Tensors: environments of class "ag_tensor" around an external pointer to a core tensor.

# fn: the public function, named first in the message (NULL: none)
.dtype_code <- function(dtype, fn = NULL) {
  if (is.null(dtype)) return(.Call(R_pg_default_dtype, NULL))
  pre <- if (is.null(fn)) "" else paste0(fn, ": ")
  if (!is.character(dtype) || length(dtype) != 1L || is.na(dtype))
    .arg_fail("dtype", "%sdtype must be \"f32\" or \"f64\", got %s", pre, .arg_show(dtype))
  # classed as Python's DTypeError
  switch(tolower(dtype), f32 = .pg$code$dtype[["F32"]], f64 = .pg$code$dtype[["F64"]],
         f16 = , bf16 = .arg_fail("dtype",
                                  paste0("%sdtype \"%s\" is not supported by the CPU engine; use ",
                                         "\"f32\" or \"f64\""), pre, dtype),
         .arg_fail("dtype", "%sdtype must be \"f32\" or \"f64\", got \"%s\"", pre, dtype))
}
.dtype_name <- function(code) if (code == .pg$code$dtype[["F64"]]) "f64" else "f32"

# Wrap a new core reference (an external pointer) as an ag_tensor environment holding `.ptr`,
# `id`, `dtype`, `device` and `grad_fn` (built in C, src/r_util.c). `data`, `grad` and
# `requires_grad` are read and written through the `$`/`[[` methods below, straight from the
# core. An ag_tensor passes through unchanged.
.wrap <- function(ptr) .Call(R_pg_wrap, ptr)
utils::globalVariables(c(".map", ".id")) # bound in the enclosures made in C

`$.ag_tensor` <- function(x, name) .Call(R_pg_tensor_field, x, name)
`[[.ag_tensor` <- function(x, i, ...) .Call(R_pg_tensor_field, x, i)
# nolint start: object_name_linter. (an S3 method of a symbol generic)
`$<-.ag_tensor` <- function(x, name, value) .Call(R_pg_tensor_field_set, x, name, value)
# nolint end
`[[<-.ag_tensor` <- function(x, i, ..., value) .Call(R_pg_tensor_field_set, x, i, value)
.TENSOR_FIELDS <- c("data", "grad", "requires_grad", "id", "dtype", "device", "grad_fn")
names.ag_tensor <- function(x) union(.TENSOR_FIELDS,
                                     setdiff(ls(x, all.names = FALSE), .TENSOR_FIELDS))
.DollarNames.ag_tensor <- function(x, pattern = "") { # nolint: object_name_linter.
  grep(pattern, names(x), value = TRUE)
}

.check_device <- function(device, where = "ag_tensor") {
  if (is.null(device) || identical(device, "cpu")) return(invisible())
  if (identical(device, "gpu"))  # ggmlR's text, classed as Python's DeviceError
    .arg_fail("device", "No ggml backend available. Install Vulkan drivers or use device='cpu'.")
  .arg_fail("value", "%s(): device must be \"cpu\" or \"gpu\", got %s", where,
            .arg_show(device))  # the value shown and classed as Python's (issue 29)
}

ag_tensor <- function(data, device = ag_default_device(), dtype = ag_default_dtype()) {
  .check_device(device)
  code <- .dtype_code(dtype, "ag_tensor")
  if (is_ag_tensor(data)) return(.wrap(.Call(R_pg_tensor_cast, data$.ptr, code)))
  .wrap(.Call(R_pg_tensor_new, data, code, FALSE))
}

ag_param <- function(data, device = ag_default_device(), dtype = ag_default_dtype()) {
  .check_device(device, "ag_param")
  code <- .dtype_code(dtype, "ag_param")
  if (is_ag_tensor(data)) data <- data$data
  .wrap(.Call(R_pg_tensor_new, data, code, TRUE))
}

is_ag_tensor <- function(x) inherits(x, "ag_tensor")

ag_grad <- function(x) {
  if (!is_ag_tensor(x)) .arg_stop("ag_grad(): `x` must be an ag_tensor")
  x$grad
}

as.matrix.ag_tensor <- function(x, ...) x$data

dim.ag_tensor <- function(x) {
  info <- .Call(R_pg_tensor_info, x$.ptr)
  as.integer(info[2:3])
}

print.ag_tensor <- function(x, ...) {
  if (isTRUE(.Call(R_pg_xptr_is_null, get0(".ptr", envir = x, inherits = FALSE)))) {
    cat("ag_tensor <dead handle (was it saved with saveRDS?)>\n")
    return(invisible(x))
  }
  d <- dim(x)
  hdr <- sprintf("ag_tensor [%dx%d]", d[1L], d[2L])
  if (!identical(x$device, "cpu")) hdr <- paste0(hdr, " [", x$device, "]")
  if (!identical(x$dtype, "f32")) hdr <- paste0(hdr, " [", x$dtype, "]")
  if (isTRUE(x$requires_grad)) hdr <- paste0(hdr, " (requires_grad)")
  cat(hdr, "\n", sep = "")
  .print_values(x$data, x$dtype, x$requires_grad)  # print.R: large tensors abbreviated
  g <- x$grad
  if (!is.null(g)) {
    cat("  grad:\n")
    .print_values(g, x$dtype, NULL)
  }
  invisible(x)
}

ag_dtype <- function(dtype) {
  prev <- ag_default_dtype()
  if (!missing(dtype) && !is.null(dtype)) .Call(R_pg_default_dtype, .dtype_code(dtype, "ag_dtype"))
  invisible(prev)
}

ag_default_dtype <- function() .dtype_name(.Call(R_pg_default_dtype, NULL))

ag_device <- function(device) {
  if (missing(device)) .arg_stop("ag_device(): argument \"device\" is missing, with no default")
  if (!is.character(device) || length(device) != 1L || !device %in% c("cpu", "gpu"))
    .arg_stop(sprintf("ag_device(): device must be \"cpu\" or \"gpu\", got %s",
                      .arg_show(device)), kind = "value")  # the value shown, as Python's
  .check_device(device, "ag_device")
  prev <- .pg$device
  .pg$device <- device
  invisible(prev)
}

ag_default_device <- function() .pg$device

ag_to_device <- function(tensor, device) {
  if (!is_ag_tensor(tensor))
    .arg_fail("argument", "ag_to_device(): tensor must be an ag_tensor, got %s",
              class(tensor)[[1L]])
  .check_device(device, "ag_to_device")
  tensor
}

# set.seed(as.integer(seed)): R and the package draw from the one stream it seeds (random.R)
ggml_set_seed <- function(seed) {
  if (is.null(seed)) return(invisible(NULL))
  seed <- .seed_int(seed, "ggml_set_seed")
  set.seed(seed)
  invisible(seed)
}

ag_set_threads <- function(n) {
  n <- .arg_int(n, "ag_set_threads()", "n", 1L, .pg$code$limit[["MAX_THREADS"]])  # the core's bound
  invisible(.Call(R_pg_set_threads, n))
}

ag_blas_name <- function() .Call(R_pg_blas_name)

# The GEMM backend, by the name Python uses too (pyggmlr.ag_set_blas): "default" / "builtin" the
# core's kernel, "r" R's own BLAS, "openblas" the libscipy_openblas at path
ag_set_blas <- function(name = "default", path = NULL) {
  choices <- c("default", "r", "builtin", "openblas")
  if (!is.character(name) || length(name) != 1L || is.na(name) || !name %in% choices)
    .arg_fail(if (is.character(name) && length(name) == 1L) "value" else "argument",  # as Python's
              "ag_set_blas(): name must be one of %s, got %s",
              paste0("'", choices, "'", collapse = ", "), .arg_show(name))
  if (name == "default") name <- "builtin"  # as Python's default: the same bits in both languages
  if (name == "openblas") return(.use_openblas(path, "ag_set_blas()"))
  if (name == "builtin") .Call(R_pg_set_blas, NULL, NULL, NULL, "builtin")
  else .Call(R_pg_use_r_blas, .r_blas_lib())
}

.use_openblas <- function(path, fn) {
  if (!is.character(path) || length(path) != 1L || !file.exists(path))
    .arg_fail("argument", "%s: path must name an existing libscipy_openblas shared library, got %s",
              fn, .arg_show(path))
  dll <- tryCatch(dyn.load(path, local = TRUE, now = TRUE), error = function(e)
    .arg_fail("value", "%s: %s cannot be loaded as a shared library (%s)", fn, path,
              conditionMessage(e)))
  sym <- function(nm) tryCatch(getNativeSymbolInfo(nm, dll)$address, error = function(e)
    .arg_fail("value", "%s: %s is not libscipy_openblas: it has no symbol %s", fn, path, nm))
  .pg$blas_dll <- dll
  .Call(R_pg_set_blas, sym("scipy_cblas_sgemm"), sym("scipy_cblas_dgemm"),
        sym("scipy_openblas_set_num_threads"), "OpenBLAS (scipy-openblas32)")
}

ag_live_objects <- function() .Call(R_pg_live_objects)
