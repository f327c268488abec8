test_that("dataloader: batches, coverage, shuffle with sample(), errors, print", {
  x <- matrix(1:20, 2, 10)
  y <- matrix(1:10, 1, 10)
  dl <- ag_dataloader(x, y, batch_size = 4, shuffle = FALSE)
  expect_equal(dl$n_batches(), 2L)
  b <- dl$next_batch()
  expect_equal(dim(b$x$data), c(2L, 4L))
  expect_equal(b$y$data, matrix(1:4, 1, 4) + 0)
  expect_true(dl$has_next())
  dl$next_batch()
  expect_false(dl$has_next())
  expect_error(dl$next_batch(), "^ag_dataloader: No more batches", class = "pyggmlr_state_error")
  expect_equal(length(dl$epoch()), 2L)
  set.seed(42)
  ds <- ag_dataloader(x, y, batch_size = 5)
  set.seed(42)
  expect_equal(ds$order, sample(10))
  expect_equal(ds$next_batch()$y$data[1, ], as.double(sample_order <- ds$order[1:5]))
  dr <- ag_dataloader(t(x), batch_size = 5, shuffle = FALSE, col_major = FALSE)
  expect_equal(dr$next_batch()$x$data, x[, 1:5] + 0)
  expect_error(ag_dataloader(x, matrix(1, 1, 3)),
               "ag_dataloader: x has 10 samples (columns) but y has 3", fixed = TRUE,
               class = "pyggmlr_shape_error")
  expect_error(ag_dataloader(array(1, c(2, 2, 2))),  # Python's text too (issue 29)
               "^ag_dataloader: x must be a matrix or a vector, got a 2x2x2 array$",
               class = "pyggmlr_shape_error")
  expect_equal(ag_dataloader(3, batch_size = 1L)$n_batches(), 1L)  # one sample, as Python's
  expect_equal(capture.output(print(dl)),
               "ag_dataloader | n=10 | batch_size=4 | n_batches=2 | shuffle=FALSE")
})

test_that("dataloader drop_last: the core's batch count, the same order, Python's semantics", {
  x <- matrix(as.double(1:20), 2, 10)
  y <- matrix(as.double(0:9), 1, 10)
  sizes <- function(dl) vapply(dl$epoch(), function(b) ncol(b$x$data), integer(1))
  cases <- list(list(4L, TRUE, c(4L, 4L)), list(4L, FALSE, c(4L, 4L, 2L)), list(10L, FALSE, 10L),
                list(11L, TRUE, integer(0)), list(11L, FALSE, 10L),
                list(3L, FALSE, c(3L, 3L, 3L, 1L)))
  for (cs in cases) {
    dl <- ag_dataloader(x, y, batch_size = cs[[1L]], shuffle = FALSE, drop_last = cs[[2L]])
    expect_identical(dl$n_batches(), length(cs[[3L]]))
    expect_identical(sizes(dl), cs[[3L]])
    expect_false(dl$has_next())
  }
  dl <- ag_dataloader(x, y, batch_size = 4L, shuffle = FALSE, drop_last = FALSE)
  expect_equal(dl$epoch()[[3L]]$y$data, matrix(c(8, 9), 1, 2))
  ids <- function(dl) unlist(lapply(dl$epoch(), function(b) b$y$data[1L, ]))
  a <- ids(ag_dataloader(x, y, batch_size = 4L, seed = 3L))
  b <- ids(ag_dataloader(x, y, batch_size = 4L, seed = 3L, drop_last = FALSE))
  expect_identical(length(a), 8L)
  expect_identical(b[1:8], a)
  expect_identical(sort(b), 0:9 + 0)
  expect_error(ag_dataloader(x, drop_last = NA), "ag_dataloader: drop_last must be TRUE or FALSE",
               class = "pyggmlr_argument_error")
  expect_error(ag_dataloader(x, drop_last = "no"), class = "pyggmlr_argument_error")
  expect_error(ag_dataloader(x, seed = "a"), "^ag_dataloader: ", class = "pyggmlr_value_error")
  expect_match(capture.output(print(dl)), "n_batches=3")
})

test_that("dataloader: a vector is one value per sample; a tensor's dtype is kept (as Python's)", {
  x <- matrix(as.double(1:20), 2, 10)
  b <- ag_dataloader(x, 0:9 %% 3, batch_size = 5L, shuffle = FALSE)$next_batch()
  expect_equal(b$y$data, matrix(c(0, 1, 2, 0, 1), 1, 5))
  b <- ag_dataloader(t(x), 0:9 %% 3, batch_size = 5L, shuffle = FALSE,
                     col_major = FALSE)$next_batch()
  expect_equal(b$x$data, x[, 1:5])
  expect_equal(dim(b$y$data), c(1L, 5L))
  expect_equal(dim(ag_dataloader(1:10, batch_size = 5L)$next_batch()$x$data), c(1L, 5L))
  old <- ag_dtype("f32")
  on.exit(ag_dtype(old))
  dl <- ag_dataloader(ag_tensor(x, dtype = "f64"), ag_tensor(matrix(0, 1, 10), dtype = "f64"),
                      batch_size = 5L)
  b <- dl$next_batch()
  expect_identical(c(b$x$dtype, b$y$dtype), c("f64", "f64"))
  expect_identical(ag_dataloader(x, batch_size = 5L)$next_batch()$x$dtype, "f32")
})
