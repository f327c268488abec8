test_that("ag_tensor and ag_param: class, shape, flags, vectors become columns", {
  t <- ag_tensor(matrix(1:6, 2, 3))
  expect_s3_class(t, "ag_tensor")
  expect_equal(dim(t$data), c(2L, 3L))
  expect_false(t$requires_grad)
  expect_null(t$grad)
  expect_equal(t$data, matrix(as.double(1:6), 2, 3))
  v <- ag_tensor(c(1, 2, 3))
  expect_equal(dim(v$data), c(3L, 1L))
  expect_equal(ag_tensor(c(TRUE, FALSE))$data, matrix(c(1, 0), 2, 1))
  p <- ag_param(matrix(0, 2, 2))
  expect_true(p$requires_grad)
  expect_true(is_ag_tensor(p))
  expect_false(is_ag_tensor(matrix(1)))
  expect_true(p$id > t$id)
  expect_equal(p$device, "cpu")
  expect_equal(p$dtype, "f32")
})

test_that("$data assignment writes in place; $grad and $requires_grad are assignable", {
  local_f64()
  p <- ag_param(matrix(1:4, 2, 2))
  q <- p
  p$data <- matrix(c(9, 8, 7, 6), 2, 2)
  expect_equal(q$data, matrix(c(9, 8, 7, 6), 2, 2))
  expect_error(p$data <- matrix(1, 3, 3), "3x3")
  p$grad <- matrix(1, 2, 2)
  expect_equal(ag_grad(p), matrix(1, 2, 2))
  p$grad <- NULL
  expect_null(p$grad)
  p$requires_grad <- FALSE
  expect_false(p$requires_grad)
  expect_equal(as.matrix(p), p$data)
})

test_that("dtypes: f64 keeps doubles exactly, f32 rounds, bad dtypes error", {
  prev <- ag_dtype("f64")
  on.exit(ag_dtype(prev))
  expect_equal(prev, "f32")
  expect_equal(ag_default_dtype(), "f64")
  expect_identical(ag_tensor(0.1)$data[1, 1], 0.1)
  expect_equal(ag_tensor(0.1, dtype = "f32")$data[1, 1], 0.1, tolerance = 1e-7)
  expect_false(identical(ag_tensor(0.1, dtype = "f32")$data[1, 1], 0.1))
  expect_error(ag_dtype("bf16"), "not supported")
  expect_error(ag_tensor(1, dtype = "int8"), "f32")
})

test_that("devices: cpu is the default; gpu gives a clear error", {
  expect_equal(ag_default_device(), "cpu")
  expect_equal(ag_device("cpu"), "cpu")
  expect_error(ag_device("gpu"),
               "No ggml backend available. Install Vulkan drivers or use device='cpu'.",
               fixed = TRUE)
  expect_error(ag_tensor(1, device = "gpu"), "No ggml backend available", fixed = TRUE)
  t <- ag_tensor(1:3)
  expect_identical(ag_to_device(t, "cpu")$id, t$id)
  expect_error(ag_device(), "missing")
})

test_that("print.ag_tensor uses ggmlR's header", {
  p <- ag_param(matrix(c(1, 2), 1, 2))
  out <- capture.output(print(p))
  expect_equal(out[1], "ag_tensor [1x2] (requires_grad)")
  local_f64()
  out <- capture.output(print(ag_tensor(1)))
  expect_equal(out[1], "ag_tensor [1x1] [f64]")
  capture.output(expect_invisible(print(ag_tensor(1))))
})

test_that("a serialized and restored tensor gives a clear error, not a crash", {
  t <- ag_tensor(1:3)
  t2 <- unserialize(serialize(t, NULL))
  expect_error(t2$data, "tensor handle is dead")
  expect_error(ag_relu(t2), "dead")
  expect_output(print(t2), "dead handle")
  f <- tempfile(fileext = ".rds")
  saveRDS(t, f)
  expect_error(readRDS(f)$grad, "saveRDS")
})

test_that(paste0("tensor fields: data, grad and requires_grad read and write the core; id and ",
                 "dtype are read-only"), {
  local_f64()
  W <- ag_param(matrix(1:4, 2, 2))
  expect_equal(W$data, matrix(1:4, 2, 2))
  expect_equal(W[["data"]], W$data)
  W$data <- matrix(0, 2, 2)
  expect_equal(W$data, matrix(0, 2, 2))
  W[["data"]] <- ag_tensor(matrix(2, 2, 2))          # an ag_tensor gives its values
  expect_equal(W$data, matrix(2, 2, 2))
  expect_error(W$data <- matrix(0, 3, 3), "new value is \\[3x3\\]")
  expect_null(W$grad)
  W$grad <- matrix(5, 2, 2)
  expect_equal(W$grad, matrix(5, 2, 2))
  W$grad <- NULL
  expect_null(W$grad)
  expect_true(W$requires_grad)
  W$requires_grad <- FALSE
  expect_false(W$requires_grad)
  expect_error(W$id <- 3, "`id` is read-only")
  expect_error(W$dtype <- "f32", "read-only; ag_tensor\\(x, dtype")
  expect_error(W$device <- "gpu", "`device` is read-only")
  expect_equal(W$device, "cpu")
  expect_null(W$grad_fn)
  expect_equal(W$dtype, "f64")
  expect_equal(W[["id"]], W$id)
  W$label <- "first layer"                           # other fields are plain, as in an environment
  expect_equal(W$label, "first layer")
  expect_null(W$nothing)
  expect_true(all(c("data", "grad", "requires_grad", "id", "dtype", "label") %in% names(W)))
  expect_true(is.environment(W))
})
