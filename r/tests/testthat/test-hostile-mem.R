# Hostile use, crashes / memory / hangs (issue 19). Cases that could crash or hang R run in a
# child Rscript with a timeout.

# nolint start: object_usage_linter. (run_rscript: helper-pyggmlr.R; %||% below)
run_child <- function(lines, timeout = 60) {
  out <- run_rscript(c("suppressMessages(library(pyggmlr))", lines), timeout)
  list(out = out, status = attr(out, "status") %||% 0L)
}
# nolint end
`%||%` <- function(a, b) if (is.null(a)) b else a

# a matrix whose dim disagrees with its length, made the way a crafted RDS would be
tamper <- function(x, from, to) {
  s <- rawToChar(serialize(x, NULL, ascii = TRUE))
  stopifnot(grepl(from, s, fixed = TRUE))
  unserialize(charToRaw(sub(from, to, s, fixed = TRUE)))
}
bad_big <- function() tamper(structure(c(1, 2, 3, 4), dim = c(2L, 2L)), "13\n2\n2\n2\n",
                             "13\n2\n1000\n1000\n")
bad_dbl <- function() tamper(structure(c(1, 2, 3, 4), dim = c(2L, 2L)), "13\n2\n2\n2\n",
                             "14\n2\n2\n2\n")
bad_na <- function() tamper(structure(c(1, 2, 3, 4), dim = c(2L, 2L)), "13\n2\n2\n2\n",
                            "13\n2\nNA\n2\n")
bad_lgl <- function() tamper(structure(c(TRUE, FALSE, TRUE, TRUE), dim = c(2L, 2L)),
                             "13\n2\n2\n2\n", "13\n2\n9\n9\n")

test_that("a tampered dim is a classed error naming the function and argument, in every entry", {
  x <- bad_big()
  expect_equal(length(x), 4L)
  expect_equal(dim(x), c(1000L, 1000L))
  e <- tryCatch(ag_tensor(x), error = identity)
  expect_s3_class(e, "pyggmlr_shape_error")
  expect_s3_class(e, "pyggmlr_error")
  expect_match(conditionMessage(e), "ag_tensor: argument 'data' has dim c(1000, 1000) but 4 values",
               fixed = TRUE)
  expect_error(ag_param(x), "length != prod(dim)", fixed = TRUE, class = "pyggmlr_shape_error")
  expect_error(ag_tensor(bad_dbl()), "corrupt dim attribute (double", fixed = TRUE,
               class = "pyggmlr_error")
  expect_error(ag_tensor(bad_na()), "entry 1 is NA", class = "pyggmlr_error")
  w <- ag_param(matrix(1, 2, 2))
  expect_error(ag_add(w, x), "ag_add: argument '[bB]' has dim", class = "pyggmlr_shape_error")
  expect_error(ag_matmul(x, w), "ag_matmul: argument '[aA]' has dim", class = "pyggmlr_shape_error")
  expect_error(w$data <- x, "length != prod(dim)", fixed = TRUE)
  expect_equal(w$data, matrix(1, 2, 2))  # a failed call changes nothing
  expect_error(ag_mse_loss(w, x), "prod(dim)", fixed = TRUE)
  expect_error(ag_dataloader(x), "ag_dataloader: argument 'x' has dim",
               class = "pyggmlr_shape_error")
  expect_error(ag_dataloader(matrix(1, 2, 2), x), "ag_dataloader: argument 'y'",
               class = "pyggmlr_shape_error")
  expect_error(ag_predict(ag_linear(1000, 2), x), "ag_predict: argument 'x' has dim",
               class = "pyggmlr_shape_error")
  expect_error(ag_flash_attention(matrix(1, 4, 2), matrix(1, 4, 2), matrix(1, 4, 2), n_heads = 1L,
                                  mask = bad_lgl()),
               "mask", class = "pyggmlr_error")
})

test_that("tampered objects never crash a child R (ag_tensor, ops, loaders, backward)", {
  r <- run_child(c(
    paste0("tamper <- function(x, from, to) unserialize(charToRaw(sub(from, to, ",
           "rawToChar(serialize(x, NULL, ascii = TRUE)), fixed = TRUE)))"),
    paste0("x <- tamper(structure(c(1, 2, 3, 4), dim = c(2L, 2L)), '13\\n2\\n2\\n2\\n', ",
           "'13\\n2\\n100000\\n100000\\n')"),
    "w <- ag_param(matrix(1, 2, 2)); n <- 0L",
    paste0("for (f in list(function() ag_tensor(x), function() ag_param(x), function() ",
           "ag_relu(x), function() ag_add(w, x),"),
    paste0("               function() ag_mse_loss(w, x), function() { w$data <- x }, function() ",
           "ag_dataloader(x),"),
    "               function() ag_fit(ag_linear(2, 2), x, x, nepoch = 1L, silent = TRUE)))",
    "  n <- n + inherits(tryCatch(f(), error = identity), 'pyggmlr_error')",
    "cat('refused', n, '\\n')"))
  expect_equal(r$status, 0L, info = paste(r$out, collapse = "\n"))
  expect_true(any(grepl("refused 8", r$out)), info = paste(r$out, collapse = "\n"))
})

test_that("core errors are classed by status in R too", {
  expect_error(ag_matmul(ag_tensor(matrix(1, 2, 3)), ag_tensor(matrix(1, 2, 2))),
               class = "pyggmlr_shape_error")
  e <- tryCatch(ag_relu("a"), error = identity)
  expect_s3_class(e, "pyggmlr_dtype_error")
  expect_s3_class(e, "simpleError")
  expect_null(conditionCall(e))
})

test_that("tensors made outside a tape in a loop keep core memory bounded", {
  old <- .Call(pyggmlr:::R_pg_gc_room, 16 * 2^20)
  on.exit(.Call(pyggmlr:::R_pg_gc_room, old))
  invisible(gc())
  x <- ag_tensor(matrix(1, 512, 512), dtype = "f64")  # 2 MiB per result
  base <- ag_memory_stats()$total$current
  top <- 0
  for (i in 1:1500) {
    h <- ag_relu(x)
    top <- max(top, ag_memory_stats()$total$current)
  }
  # without R seeing the core's bytes this reached 1500 * 2 MiB = 3 GiB
  expect_lt(top - base, 64 * 2^20)
  rm(h, x)
  invisible(gc())
})

test_that(paste0("ag_load_model and ag_model_info refuse integers, booleans, FIFOs, devices and ",
                 "directories"), {
  for (bad in list(0L, 1L, TRUE, 1.5, NULL, c("a", "b"), NA_character_)) {
    expect_error(ag_load_model(bad), "ag_load_model\\(\\): path must be a file name",
                 class = "pyggmlr_argument_error")
    expect_error(ag_model_info(bad), "ag_model_info\\(\\): path must be a file name",
                 class = "pyggmlr_argument_error")
  }
  expect_error(ag_save_model(ag_linear(2, 1), 1L), "ag_save_model\\(\\): path must be a file name")
  expect_error(ag_load_model(tempdir()), "is a directory")
  skip_on_os("windows")
  fifo <- tempfile(fileext = ".fifo")
  if (system2("mkfifo", fifo) != 0L) skip("no mkfifo")
  r <- run_child(c(
    sprintf("fifo <- '%s'", fifo),
    "for (p in c(fifo, '/dev/zero', '/dev/null')) for (f in list(ag_load_model, ag_model_info)) {",
    "  e <- tryCatch(f(p), error = identity); cat(conditionMessage(e), '\\n') }",
    paste0("e <- tryCatch(ag_save_model(ag_linear(2, 1), fifo), error = identity); ",
           "cat(conditionMessage(e), '\\n')")), timeout = 30)
  expect_equal(r$status, 0L, info = paste(r$out, collapse = "\n"))
  expect_equal(sum(grepl("not a regular file", r$out)), 7L, info = paste(r$out, collapse = "\n"))
  expect_true(file.exists(fifo))
  unlink(fifo)
})

test_that("unbounded requests are refused up front naming the bound", {
  expect_error(ag_set_threads(1e6),
               "ag_set_threads\\(\\): n must be an integer in \\[1, 1024\\], got 1e\\+06",
               class = "pyggmlr_value_error")
  expect_error(ag_set_threads(1e10), "in [1, 1024]", fixed = TRUE)
  expect_error(dp_train(function() ag_linear(1, 1), list(matrix(1)), n_replicas = 1e9),
               "dp_train: n_replicas must be an integer in [1, 1024], got 1e+09", fixed = TRUE,
               class = "pyggmlr_value_error")
  expect_error(dp_train(function() ag_linear(1, 1), list(matrix(1)), n_gpu = 1e10), "n_gpu")
  prev <- ag_set_threads(1L)
  ag_set_threads(prev)
})

test_that("forked children (parallel::mcparallel) with the GEMM pool running do not hang", {
  skip_on_os("windows")
  r <- run_child(c(
    "ag_set_threads(2L); ag_set_blas('builtin')",
    "W <- ag_tensor(matrix(runif(256 * 256), 256)); invisible(ag_matmul(W, W))",
    "ok <- 0L",
    "for (k in 1:20) {",
    paste0("  job <- parallel::mcparallel({ p <- ag_param(matrix(1, 2, 2)); l <- ",
           "with_grad_tape(ag_sum(ag_matmul(p, p)));"),
    "    g <- backward(l); ag_set_threads(1L); ag_memory_trim(); sum(ag_matmul(W, W)$data) > 0 })",
    "  res <- parallel::mccollect(job, wait = FALSE, timeout = 10)",
    "  if (isTRUE(res[[1]])) ok <- ok + 1L else { tools::pskill(job$pid, 9L); break }",
    "  invisible(ag_matmul(W, W))",
    "}",
    "cat('children ok', ok, '\\n')"), timeout = 120)
  expect_equal(r$status, 0L, info = paste(r$out, collapse = "\n"))
  expect_true(any(grepl("children ok 20", r$out)), info = paste(r$out, collapse = "\n"))
})
