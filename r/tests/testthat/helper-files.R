# Raw safetensors files for tests through the package's glue (as Python's tests/_files.py):
# tensors a list of list(name, matrix, dtype "F32"/"F64"), metadata a named list of strings.
write_safetensors <- function(path, tensors, metadata) {
  values <- lapply(tensors, function(t) `storage.mode<-`(as.matrix(t$value), "double"))
  res <- .Call(pyggmlr:::R_pg_st_write, path.expand(path),
               vapply(tensors, function(t) enc2utf8(as.character(t$name)), ""),
               vapply(tensors, function(t) identical(t$dtype, "F64"), logical(1)), values,
               enc2utf8(as.character(names(metadata))),
               enc2utf8(vapply(metadata, as.character, "")))
  if (!identical(res$status, 0L)) stop(res$message)
  invisible(path)
}

# list(tensors = named list of matrices with attribute "dtype", meta = named list of strings)
read_safetensors <- function(path, fn = "ag_load_model()") {
  f <- pyggmlr:::.mf_open(path, fn)
  on.exit(.Call(pyggmlr:::R_pg_mf_close, f), add = TRUE)
  res <- .Call(pyggmlr:::R_pg_mf_read, f)
  if (!is.null(res$status)) pyggmlr:::.mf_fail(res, path)
  res
}
