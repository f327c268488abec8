# ag_fit(distributed = TRUE) over Rmpi. The 2-rank run against Python's, bit for bit, is
# tests/mpi/test_distributed.py (it needs mpirun for both languages); here one rank, in a child R
# process because Rmpi initialises MPI for the rest of the process.

test_that("ag_fit(distributed = TRUE) argument checks", {
  x <- matrix(rnorm(8), 2, 4)
  expect_error(ag_fit(ag_linear(2, 2), x, x, loss = "mse", nepoch = 1L, silent = TRUE,
                      distributed = "yes"),
               "ag_fit: distributed must be TRUE or FALSE", fixed = TRUE,
               class = "pyggmlr_argument_error")
  expect_error(ag_fit(ag_linear(2, 2), x, x, loss = "mse", nepoch = 1L, silent = TRUE,
                      static = "a"),
               "ag_fit: static must be TRUE, FALSE or NULL", fixed = TRUE,
               class = "pyggmlr_argument_error")
  expect_error(ag_fit(ag_linear(2, 2), x, x, loss = "mse", nepoch = 1L, silent = TRUE,
                      static = TRUE, distributed = TRUE),
               "ag_fit: static cannot be true with distributed training", fixed = TRUE)
})

test_that("ag_allreduce_gradients' weight: the core's rule and text, before any MPI call", {
  m <- ag_linear(2, 3)
  for (w in list(list(-0.5, "-0.5"), list(NaN, "NaN"), list(-Inf, "-Inf"), list(NA_real_, "NA")))
    expect_error(ag_allreduce_gradients(m, weight = w[[1L]]),
                 paste0("ag_allreduce_gradients: weight must be finite and >= 0, got ", w[[2L]]),
                 fixed = TRUE, class = "pyggmlr_value_error")
  expect_error(ag_allreduce_gradients(m, weight = "1"),
               "ag_allreduce_gradients: weight must be a number, got \"1\"", fixed = TRUE,
               class = "pyggmlr_argument_error")
})

test_that("ag_allreduce_gradients(dtype =): f64 only (Rmpi reduces doubles), before any MPI call", {
  m <- ag_linear(2, 3)
  expect_error(ag_allreduce_gradients(m, dtype = "f32"),
               paste0("ag_allreduce_gradients: dtype \"f32\" needs an f32 all-reduce, which Rmpi ",
                      "does not have; use \"f64\" (the default)"), fixed = TRUE,
               class = "pyggmlr_dtype_error")
  expect_error(ag_allreduce_gradients(m, dtype = "x"),  # Python's text, R's quotes
               "ag_allreduce_gradients: dtype must be \"f32\" or \"f64\", got \"x\"", fixed = TRUE,
               class = "pyggmlr_dtype_error")
})

test_that("ag_allreduce_gradients(check =) takes TRUE or FALSE only, before any MPI call", {
  m <- ag_linear(2, 3)
  for (bad in list("no", 1, NA, c(TRUE, TRUE)))  # isTRUE read them as FALSE: no layout check
    expect_error(ag_allreduce_gradients(m, check = bad),
                 paste0("ag_allreduce_gradients: check must be TRUE or FALSE, got ",
                        pyggmlr:::.arg_show(bad)), fixed = TRUE, class = "pyggmlr_argument_error")
})

test_that(paste0("one MPI rank: ag_fit(distributed = TRUE) equals the plain run, and the ",
                 "collectives check their input"), {
  skip_without_rmpi()
  out <- run_rscript(c(
    "suppressMessages(library(pyggmlr))",
    "run <- function(d) { set.seed(4); x <- matrix(rnorm(4 * 40), 4, 40)",
    "  y <- floor(runif(40) * 3)",
    "  ggml_set_seed(2); m <- ag_sequential(ag_linear(4, 6, activation = 'tanh'), ag_linear(6, 3))",
    paste0("  h <- ag_fit(m, x, y, nepoch = 2L, batch_size = 8L, nbatch_logical = 16L, val_split ",
           "= 0.2, seed = 9L,"),
    "              silent = TRUE, static = FALSE, distributed = d)",
    paste0("  list(h = unclass(h)[c('loss', 'accuracy', 'val_loss')], w = lapply(m$parameters(), ",
           "function(t) t$data)) }"),
    "a <- run(FALSE); b <- run(TRUE)",
    "cat('same:', identical(a, b), '\\n')",
    "cat('rank:', ag_mpi_rank(), 'world:', ag_mpi_world_size(), '\\n')",
    "m <- ag_linear(2, 3); cat('spread:', ag_parameters_spread(m), '\\n')",
    "e <- tryCatch(ag_allreduce_gradients(m, weight = -1), error = function(e) e)",
    "cat('class:', inherits(e, 'pyggmlr_value_error'), conditionMessage(e), '\\n')",
    "e2 <- tryCatch(ag_broadcast_parameters(m, root = 5), error = function(e) e)",
    "cat('root:', inherits(e2, 'pyggmlr_value_error'), conditionMessage(e2), '\\n')",
    "invisible(Rmpi::mpi.finalize())"))
  out <- paste(out, collapse = "\n")
  expect_match(out, "same: TRUE", fixed = TRUE)
  expect_match(out, "rank: 0 world: 1", fixed = TRUE)
  expect_match(out, "spread: 0", fixed = TRUE)
  expect_match(out, "class: TRUE ag_allreduce_gradients: weight must be finite and >= 0, got -1",
               fixed = TRUE)
  expect_match(out, "root: TRUE ag_broadcast_parameters: root must be an integer in [0, 0], got 5",
               fixed = TRUE)
})
