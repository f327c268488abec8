# ggmlR's GPU-only switches and probes (0.8.6 spec §11): the same signatures and checks, so
# ggmlR scripts run unchanged; this engine runs on the CPU, where they change nothing, and the
# probes answer "no GPU" so scripts take their CPU branch.
.gpu <- new.env(parent = emptyenv())
.gpu$graph <- toupper(Sys.getenv("GGMLR_AG_DEFER")) %in% c("1", "TRUE")
.gpu$precision <- "default"

.is_flag <- function(x) is.logical(x) && length(x) == 1L && !is.na(x)

ag_graph_mode <- function(on, check = NULL) {
  if (!is.null(check) && !.is_flag(check))
    .arg_stop("ag_graph_mode(): `check` must be TRUE, FALSE or NULL")
  if (missing(on)) return(.gpu$graph)
  if (!.is_flag(on)) .arg_stop("ag_graph_mode(): `on` must be TRUE or FALSE")
  prev <- .gpu$graph
  .gpu$graph <- on
  invisible(prev)
}

ag_matmul_precision <- function(precision) {
  if (missing(precision)) return(.gpu$precision)
  precision <- .arg_match(precision, c("default", "f32"), "ag_matmul_precision", "precision")
  prev <- .gpu$precision
  .gpu$precision <- precision
  invisible(prev)
}

.gpu_restore <- function(prev) {
  if (!is.null(prev$matmul_precision)) .gpu$precision <- prev$matmul_precision
  if (!is.null(prev$graph)) .gpu$graph <- prev$graph
}

# Set the modes for the rest of the calling function (envir) and put them back when it exits,
# normally or by an error.
ag_local_mode <- function(graph = NULL, matmul_precision = NULL, envir = parent.frame()) {
  if (!is.environment(envir))  # else on.exit's own unclassed error, after the modes were read
    .arg_fail("argument", "ag_local_mode: envir must be an environment, got %s", .arg_show(envir))
  if (!is.null(graph) && !.is_flag(graph))
    .arg_stop("ag_local_mode(): `graph` must be TRUE, FALSE or NULL")
  if (!is.null(matmul_precision)) matmul_precision <- .arg_match(matmul_precision,
      c("default", "f32"), "ag_local_mode", "matmul_precision")
  prev <- list()  # read, restore registered, then set: no exit path keeps the new modes
  if (!is.null(matmul_precision)) prev$matmul_precision <- ag_matmul_precision()
  if (!is.null(graph)) prev$graph <- ag_graph_mode()
  do.call(on.exit, list(as.call(list(.gpu_restore, prev)), add = TRUE), envir = envir)
  if (!is.null(matmul_precision)) ag_matmul_precision(matmul_precision)
  if (!is.null(graph)) ag_graph_mode(graph)
  invisible(prev)
}

ggml_vulkan_available <- function() FALSE
ggml_vulkan_device_count <- function() 0L
ggml_backend_dev_count <- function() 0L
ggml_vulkan_status <- function() {
  cat("Vulkan: not available (pyggmlr computes on the CPU)\n")
  invisible(list(available = FALSE, n_devices = 0L, devices = list()))
}
