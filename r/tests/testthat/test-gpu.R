# ggmlR's GPU switches and probes: same checks and values, no effect on the CPU (0.8.6 spec §11)

test_that("probes answer no GPU", {
  expect_false(ggml_vulkan_available())
  expect_identical(ggml_vulkan_device_count(), 0L)
  expect_identical(ggml_backend_dev_count(), 0L)
  expect_output(s <- ggml_vulkan_status(), "not available")
  expect_identical(s, list(available = FALSE, n_devices = 0L, devices = list()))
})

test_that("ag_graph_mode and ag_matmul_precision get, set and validate", {
  old <- ag_graph_mode()
  on.exit(ag_graph_mode(old), add = TRUE)
  expect_invisible(prev <- ag_graph_mode(TRUE))
  expect_identical(prev, old)
  expect_true(ag_graph_mode())
  expect_error(ag_graph_mode(NA), "`on` must be TRUE or FALSE")
  expect_error(ag_graph_mode(TRUE, check = "x"), "`check` must be TRUE, FALSE or NULL")
  expect_true(ag_graph_mode())  # nothing changed by the failures
  expect_identical(ag_matmul_precision(), "default")
  expect_identical(ag_matmul_precision("f32"), "default")
  expect_identical(ag_matmul_precision(), "f32")
  expect_error(ag_matmul_precision("f16"), "should be one of")
  ag_matmul_precision("default")
})

test_that("ag_local_mode restores on exit and on error", {
  ag_graph_mode(FALSE)
  f <- function() { ag_local_mode(graph = TRUE, matmul_precision = "f32"); c(ag_graph_mode(),
      ag_matmul_precision()) }
  expect_identical(f(), c("TRUE", "f32"))
  expect_false(ag_graph_mode())
  expect_identical(ag_matmul_precision(), "default")
  g <- function() { ag_local_mode(graph = TRUE); stop("boom") }
  expect_error(g(), "boom")
  expect_false(ag_graph_mode())
  expect_error(ag_local_mode(graph = "yes"), "`graph` must be TRUE, FALSE or NULL")
  h <- function() ag_local_mode(matmul_precision = "f32")
  expect_identical(h(), list(matmul_precision = "default"))
  # an envir that is not an environment: classed, and the modes stay as they were
  k <- function() ag_local_mode(graph = TRUE, envir = 0)
  expect_error(k(), "ag_local_mode: envir must be an environment, got 0",
               class = "pyggmlr_argument_error")
  expect_false(ag_graph_mode())
})
