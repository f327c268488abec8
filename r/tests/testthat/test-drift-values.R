# Hostile values that R and Python refused in different words, or not at all (issue 29): a model
# with more output columns than samples, a dtype other than the model's in
# ag_estimate_training_memory, ids beyond int64, non-finite numbers in the core's texts. Python's
# tests/train/test_drift_values.py has the same cases.

values_refused <- function(expr, cls, text) {
  e <- tryCatch({ expr; NULL }, error = identity)
  expect_s3_class(e, cls)  # nolint: object_usage_linter.
  expect_identical(conditionMessage(e), text)  # nolint: object_usage_linter.
}

test_that("ag_predict needs one output column per sample (a [2x10] result for 5 before)", {
  cols <- function(fn, k, n, bs) {
    sprintf(paste0("%s: the model returned [%s] for a batch of %d samples (batch_size %d); it ",
                   "must return one column per sample ([outputs x %d]); reshape per-step or ",
                   "per-token outputs to one column per sample first"), fn, k, n, bs, n)
  }
  wide <- function(x) ag_reshape(x, c(2, 2 * ncol(x)))
  x <- matrix(1, 4, 5)
  values_refused(ag_predict(wide, x), "pyggmlr_shape_error", cols("ag_predict", "2x10", 5, 256))
  values_refused(ag_evaluate(wide, x, matrix(1, 2, 5), loss = "mse"), "pyggmlr_shape_error",
                 cols("ag_evaluate", "2x10", 5, 256))
  values_refused(ag_accuracy(wide, x, rep(0, 5)), "pyggmlr_shape_error",
                 cols("ag_accuracy", "2x10", 5, 256))
  values_refused(ag_predict(function(x) ag_sum(x), x, batch_size = 2), "pyggmlr_shape_error",
                 cols("ag_predict", "1x1", 2, 2))
  ggml_set_seed(1)  # recurrent sequences are rows: [hidden*T, n], predicted as before
  expect_identical(dim(ag_predict(ag_gru(2, 3, return_sequences = TRUE), x)), c(6L, 5L))
})

test_that("ag_estimate_training_memory's dtype is the model's (ag_linear's words before)", {
  ggml_set_seed(1)
  m <- ag_linear(3, 4)
  x <- matrix(1, 3, 8)
  est <- "ag_estimate_training_memory(): "
  model <- paste0("the model's parameters are f32; give %s in f32 (or as numbers: converted to ",
                  "the model's dtype)")
  values_refused(ag_estimate_training_memory(model = m, x = x, dtype = "f64", quiet = TRUE),
                 "pyggmlr_dtype_error",
                 paste0(est, "dtype is \"f64\" but the model's parameters are f32; with a model, ",
                        "leave dtype out (the model's) or give \"f32\""))
  values_refused(ag_estimate_training_memory(model = m, x = ag_tensor(x, dtype = "f64"),
                                             quiet = TRUE),
                 "pyggmlr_dtype_error",
                 paste0(est, "x is an f64 tensor but ", sprintf(model, "x")))
  y <- ag_tensor(matrix(1, 4, 8), dtype = "f64")
  values_refused(ag_estimate_training_memory(model = m, x = x, y = y, quiet = TRUE,
                                             static = TRUE),
                 "pyggmlr_dtype_error", paste0(est, "y is an f64 tensor but ", sprintf(model, "y")))
  values_refused(ag_estimate_training_memory(model = m, x = x, input_shape = 5, quiet = TRUE),
                 "pyggmlr_argument_error",
                 paste0(est, "with model =, give x = (a batch) or input_shape =, not both"))
  a <- ag_estimate_training_memory(model = m, x = x, quiet = TRUE)
  expect_identical(ag_estimate_training_memory(model = m, x = x, dtype = "f32",
                                               y = matrix(1, 4, 8), quiet = TRUE)$total, a$total)
  expect_identical(a$bytes_per_scalar, 4)
})

test_that("ids past int64 name their value (1.18059e+21 before)", {
  ggml_set_seed(1)
  m <- ag_linear(3, 2)
  x <- matrix(1, 3, 2)
  big <- "1180591620717411303424"  # two to the power 70
  values_refused(ag_embedding(5, 3)$forward(c(2^70, 1)), "pyggmlr_value_error",
                 paste0("ag_embedding: id ", big, " at position 1 is out of range [0, 5) for ",
                        "weight [3x5] f32 (ids are 0-based)"))
  values_refused(ag_softmax_cross_entropy_loss(ag_tensor(matrix(1, 3, 2)), c(1, 2^70)),
                 "pyggmlr_value_error",
                 paste0("ag_softmax_cross_entropy_loss: class id ", big, " at position 2 is out ",
                        "of range [0, 3) for logits [3x2] f32"))
  values_refused(ag_fit(m, x, c(2^70, 1), nepoch = 1, verbose = 0), "pyggmlr_value_error",
                 paste0("ag_fit: y holds class ids up to ", big, " but the model has 2 outputs; ",
                        "ids are 0-based, in [0, 2)"))
  values_refused(ag_accuracy(m, x, c(2^70, 1)), "pyggmlr_value_error",
                 paste0("ag_accuracy: y must be 0-based class ids in [0, 2) (the model has 2 ",
                        "outputs), got ", big, " at position 1"))
  values_refused(ag_evaluate(m, x, c(2^70, 1), loss = "cross_entropy"), "pyggmlr_value_error",
                 paste0("ag_evaluate: y must be 0-based class ids in [0, 2), sample 1 has ", big))
  values_refused(ag_embedding(5, 3)$forward(c(1234567, 1e300)), "pyggmlr_value_error",
                 paste0("ag_embedding: id 1234567 at position 1 is out of range [0, 5) for ",
                        "weight [3x5] f32 (ids are 0-based)"))
})

test_that("the core's texts print R's Inf / -Inf / NaN / NA (inf, nan from %g before)", {
  x <- ag_tensor(matrix(1, 2, 2))
  values_refused(ag_huber_loss(x, x, delta = Inf), "pyggmlr_value_error",
                 "ag_huber_loss: delta must be a finite number > 0, got Inf")
  values_refused(ag_huber_loss(x, x, delta = NA), "pyggmlr_value_error",
                 "ag_huber_loss: delta must be a finite number > 0, got NA")
  values_refused(ag_huber_loss(x, x, delta = NaN), "pyggmlr_value_error",
                 "ag_huber_loss: delta must be a finite number > 0, got NaN")
  values_refused(ag_clamp(x, Inf, 0), "pyggmlr_value_error", "ag_clamp: lo (Inf) must be <= hi (0)")
  values_refused(ag_dropout(Inf), "pyggmlr_value_error",
                 "ag_dropout: rate must be a finite number in [0, 1), got Inf")
})
