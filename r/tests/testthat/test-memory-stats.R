# The allocator's counters and ag_accuracy, the same functions Python has.

test_that("ag_memory_stats / peak / reset / trim read the core's counters", {
  gc()
  ag_tape_clear()
  p0 <- ag_memory_reset_peak()
  expect_identical(p0, ag_memory_stats()$total$current)
  x <- ag_tensor(matrix(1, 200, 50))          # f32: 40000 bytes of storage
  s <- ag_memory_stats()
  expect_gte(ag_memory_peak(), p0 + 200 * 50 * 4)
  expect_true(all(c("param", "grad", "optim", "saved", "other", "total", "live_tensors",
                    "cached") %in% names(s)))
  expect_gte(s$live_tensors, 1)
  rm(x)
  gc()
  expect_gte(ag_memory_trim(), 0)
  expect_identical(ag_memory_stats()$cached, 0)
  expect_gte(ag_get_threads(), 1L)
})

test_that("ag_accuracy: ids, factors and one-hot targets", {
  m <- ag_linear(2, 3)
  m$W$data <- matrix(c(1, 0, -1, 0, 1, 0), 3, 2)
  x <- matrix(c(2, 0, 0, 2, -2, 0, 0, -2), 2, 4)   # arg-max rows: 1, 2, 3, 1 -> ids 0, 1, 2, 0
  expect_equal(ag_accuracy(m, x, c(0, 1, 2, 0)), 1)
  expect_equal(ag_accuracy(m, x, c(0, 1, 2, 2)), 0.75)
  expect_equal(ag_accuracy(m, x, factor(c("a", "b", "c", "a"))), 1)
  expect_equal(ag_accuracy(m, x, diag(3)[, c(1, 2, 3, 1)]), 1)
  expect_error(ag_accuracy(m, x, c(0, 1)), "ag_accuracy: x has 4 samples but y has 2", fixed = TRUE)
})
