# Model files written before the model-file schema moved into the core (issue 29), by main's
# Python and R code then (tests/io/fixtures/make_v1.*), load with today's code and give what
# main's loaders gave. The fixtures live in the repository, not in the package: skipped there.
fixtures <- file.path("..", "..", "..", "tests", "io", "fixtures")

test_that("version-1 files written by Python and by R before the move still load", {
  skip_if_not(dir.exists(fixtures), "run from a source checkout")
  x <- matrix(seq(-1, 1, length.out = 15), 3, 5, byrow = TRUE)
  want <- jsonlite::fromJSON(file.path(fixtures, "v1_expected.json"), simplifyVector = TRUE)
  for (dt in c("f32", "f64")) {
    f <- file.path(fixtures, sprintf("v1_py_%s.safetensors", dt))
    info <- ag_model_info(f)
    expect_setequal(names(info$parameters), names(want[[dt]]$info$parameters))
    expect_identical(info$epoch, 7)
    expect_identical(info$optimizer, if (dt == "f32") "adam" else "sgd")
    expect_identical(info$extra$note, "fixture")
    m <- ag_load_model(f)
    expect_equal(ag_predict(m, x), want[[dt]]$predict, tolerance = 1e-6)
  }
  want_r <- jsonlite::fromJSON(file.path(fixtures, "v1_r_expected.json"), simplifyVector = TRUE)
  f <- file.path(fixtures, "v1_r.safetensors")
  info <- ag_model_info(f)
  expect_identical(names(info$parameters), want_r$parameters)
  expect_identical(info$epoch, 3)
  m <- ag_load_model(f)
  expect_equal(ag_predict(m, x), want_r$predict, tolerance = 1e-13)
  opt <- optimizer_adam(m$parameters(), lr = 0.01)
  ag_load_model(f, model = m, optimizer = opt)
  expect_identical(opt$state()$t, 1L)
})

test_that("checkpoints written before the training session moved into the core resume", {
  # tests/io/fixtures/make_ckpt_v1.py (Python's code then, f32) and make_ckpt_v1.R (R's, f64):
  # each runs on to epoch 4 with the bits that code gave, its early-stopping state and best
  # weights read back
  skip_if_not(dir.exists(fixtures), "run from a source checkout")
  x <- matrix(sin((0:159) * 0.37), 4, 40)
  y <- (0:39) %% 3
  resume <- function(who, dtype) {
    want <- jsonlite::fromJSON(file.path(fixtures, sprintf("ckpt_v1%s_expected.json", who)))
    prev <- ag_default_dtype()
    on.exit(ag_dtype(prev))
    ag_dtype(dtype)
    ggml_set_seed(5)
    m <- ag_sequential(ag_linear(4, 6, activation = "tanh"), ag_linear(6, 3))
    es <- ag_early_stopping(patience = 5L, monitor = "val_loss")
    f <- file.path(fixtures, sprintf("ckpt_v1%s.safetensors", who))
    h <- ag_fit(m, x, y, nepoch = 4L, batch_size = 5L, val_split = 0.25, seed = 2L, silent = TRUE,
                static = FALSE, resume_from = f, callbacks = list(es))
    expect_identical(h$loss, want$loss)
    expect_identical(h$val_loss, want$val_loss)
    expect_identical(h$accuracy, want$accuracy)
    w <- unlist(lapply(m$parameters(), function(t) as.vector(t$data)), use.names = FALSE)
    expect_identical(w, want$weights)
    expect_identical(es$best, want$val_loss[[4L]])
    expect_identical(es$best_epoch, 4L)
  }
  resume("", "f32")
  resume("_r", "f64")
})
