test_that("ggml_set_seed seeds R's RNG", {
  ggml_set_seed(5)
  a <- runif(3)
  set.seed(5)
  expect_equal(a, runif(3))
  expect_null(ggml_set_seed(NULL))
})

test_that("XOR-ish training loop lowers the loss", {
  set.seed(1)
  x <- matrix(c(0, 0, 0, 1, 1, 0, 1, 1), 2, 4)
  y <- matrix(c(0, 1, 1, 0), 1, 4)
  l1 <- ag_linear(2, 8, "tanh")
  l2 <- ag_linear(8, 1, "sigmoid")
  opt <- optimizer_adam(c(l1$params(), l2$params()), lr = 0.05)
  losses <- numeric(50)
  for (i in 1:50) {
    with_grad_tape(l <- ag_mse_loss(l2$forward(l1$forward(x)), y))
    losses[i] <- l$data[1, 1]
    opt$step(backward(l))
    opt$zero_grad()
  }
  expect_lt(mean(losses[41:50]), mean(losses[1:10]))
})

# ---------------------------------------------------------------------------------------------
# ag_fit


test_that("ag_fit: iris MLP reaches >= 0.95 validation accuracy; the split follows set.seed(seed)",
          {
  x <- iris_x()
  set.seed(1)
  m <- ag_sequential(ag_linear(4, 16, "relu"), ag_linear(16, 3))
  h <- ag_fit(m, x, iris$Species, nepoch = 50, batch_size = 16, val_split = 0.2, seed = 1,
              lr = 0.01, silent = TRUE)
  expect_s3_class(h, "ag_history")
  expect_equal(h$epoch, 1:50)
  expect_gte(h$val_accuracy[50], 0.95)
  expect_lt(h$loss[50], h$loss[1] / 3)
  expect_false(m$training)
  # the held-out part is the last 20% of sample.int(150) after set.seed(seed)
  set.seed(1)
  val <- sample.int(150)[121:150]
  pred <- max.col(t(ag_predict(m, x[, val])), ties.method = "first")
  expect_equal(mean(pred == as.integer(iris$Species[val])), h$val_accuracy[50])
  a <- h$val_accuracy[50]
  expect_equal(h$val_accuracy_unc[50], sqrt(a * (1 - a) / 29))
  # 120 training samples in batches of 16: 7 full batches = 112 samples per epoch
  expect_true(all(abs(h$accuracy * 112 - round(h$accuracy * 112)) < 1e-9))
  df <- as.data.frame(h)
  expect_equal(nrow(df), 50L)
  expect_equal(df$val_loss, h$val_loss)
  out <- capture.output(print(h))
  expect_match(out[1], "<ag_history: 50 epochs>")
  expect_match(out[2], "epoch +loss +accuracy +val_loss +val_accuracy +time")
  grDevices::pdf(NULL)
  on.exit(grDevices::dev.off(), add = TRUE)
  expect_identical(plot(h), h)
})

test_that("ag_fit: loss statistics are ggml's (mean and standard error of the batch losses)", {
  local_f64()
  set.seed(2)
  x <- matrix(rnorm(3 * 12), 3, 12)
  y <- matrix(rnorm(2 * 12), 2, 12)
  m <- ag_linear(3, 2)
  h <- ag_fit(m, x, y, loss = "mse", optimizer = "sgd", lr = 0, nepoch = 1, batch_size = 4,
              shuffle = FALSE,
              silent = TRUE)
  per <- sapply(0:2,
                function(b) { i <- b * 4 + 1:4; mean((m$W$data %*% x[, i] + c(m$b$data) - y[,
                    i])^2) })
  expect_equal(h$loss, mean(per), tolerance = 1e-12)
  expect_equal(h$loss_unc, sqrt((mean(per^2) - mean(per)^2) / 2), tolerance = 1e-12)
  expect_true(is.nan(h$accuracy))
  expect_true(is.nan(h$val_loss))
  hs <- ag_fit(m, x, loss = "sum", optimizer = "sgd", lr = 0, nepoch = 1, batch_size = 4,
               shuffle = FALSE, silent = TRUE)
  tot <- sapply(0:2, function(b) sum(m$W$data %*% x[, b * 4 + 1:4] + c(m$b$data)))
  expect_equal(hs$loss, sum(tot), tolerance = 1e-12)
})

test_that("ag_fit: batch_size b with nbatch_logical 4b equals batch_size 4b (SGD, f64)", {
  local_f64()
  set.seed(3)
  x <- matrix(rnorm(5 * 64), 5, 64)
  y <- sample(0:2, 64, replace = TRUE)
  make <- function() { set.seed(30); ag_sequential(ag_linear(5, 7, "tanh"), ag_linear(7, 3)) }
  a <- make()
  b <- make()
  expect_identical(a$parameters()$layer1_W$data, b$parameters()$layer1_W$data)
  ha <- ag_fit(a, x, y, optimizer = "sgd", lr = 0.5, nepoch = 3, batch_size = 4,
               nbatch_logical = 16,
               shuffle = FALSE, silent = TRUE)
  hb <- ag_fit(b, x, y, optimizer = "sgd", lr = 0.5, nepoch = 3, batch_size = 16, shuffle = FALSE,
               silent = TRUE)
  pa <- a$parameters()
  pb <- b$parameters()
  for (k in names(pa)) expect_equal(pa[[k]]$data, pb[[k]]$data, tolerance = 1e-12, info = k)
  start <- make()$parameters()$layer2_W$data
  expect_gt(max(abs(pa$layer2_W$data - start)), 1e-3)  # 12 steps actually moved the weights
  # the optimizer object route: its accumulate_steps is set by ag_fit
  c3 <- make()
  o <- optimizer_sgd(c3$parameters(), lr = 0.5)
  ag_fit(c3, x, y, optimizer = o, nepoch = 3, batch_size = 4, nbatch_logical = 16, shuffle = FALSE,
         silent = TRUE)
  expect_equal(o$accumulate_steps, 4L)
  expect_equal(c3$parameters()$layer2_W$data, pb$layer2_W$data, tolerance = 1e-12)
  expect_error(ag_fit(make(), x, y, batch_size = 4, nbatch_logical = 10, silent = TRUE),
               "multiple of batch_size")
  expect_error(ag_fit(make(), x, y[1:10], silent = TRUE), "64 samples .* 10")
})

test_that("ag_early_stopping stops and restores the best weights; function callbacks; opt_params", {
  local_f64()
  x <- iris_x()
  set.seed(4)
  m <- ag_sequential(ag_linear(4, 8, "relu"), ag_batch_norm(8), ag_linear(8, 3))
  seen <- list()
  record <- function(epoch, logs) {
    seen[[epoch]] <<- list(p = lapply(m$parameters(), function(t) t$data),
                           b = lapply(m$buffers(), function(t) t$data), logs = logs)
    NULL
  }
  # min_delta so large that nothing improves after epoch 1: stops at epoch 1 + patience
  es <- ag_early_stopping(patience = 2, min_delta = 1e9)
  expect_output(print(es), "ag_early_stopping \\| patience=2")
  h <- ag_fit(m, x, iris$Species, nepoch = 20, batch_size = 25, val_split = 0.2, seed = 4,
              lr = 0.05,
              callbacks = list(record, es), silent = TRUE)
  expect_equal(length(h$epoch), 3L)
  expect_equal(h$stopped_epoch, 3L)
  expect_equal(h$best_epoch, 1L)
  expect_false(isTRUE(all.equal(seen[[3]]$p$layer1_W, seen[[1]]$p$layer1_W)))
  for (k in names(m$parameters())) expect_identical(m$parameters()[[k]]$data, seen[[1]]$p[[k]],
                                                    info = k)
  for (k in names(m$buffers())) expect_identical(m$buffers()[[k]]$data, seen[[1]]$b[[k]], info = k)
  expect_equal(seen[[2]]$logs$val_loss, h$val_loss[2])
  # ordinary early stopping on the validation loss picks the epoch of the minimum
  set.seed(5)
  m2 <- ag_sequential(ag_linear(4, 16, "relu"), ag_linear(16, 3))
  h2 <- ag_fit(m2, x, iris$Species, nepoch = 200, batch_size = 8, val_split = 0.3, seed = 5,
               lr = 0.05,
               callbacks = list(ag_early_stopping(patience = 3)), silent = TRUE)
  expect_lt(length(h2$epoch), 200L)
  expect_equal(h2$best_epoch, which.min(h2$val_loss))
  # a plain function returning FALSE stops; opt_params sets hyper-parameters per epoch (lr logged)
  h3 <- ag_fit(ag_linear(4, 3), x, iris$Species, nepoch = 10, batch_size = 50, silent = TRUE,
               opt_params = function(epoch) list(alpha = 0.1 / epoch),
               callbacks = function(epoch, logs) if (epoch == 4) FALSE)
  expect_equal(h3$epoch, 1:4)
  expect_equal(h3$lr, 0.1 / (1:4))
  expect_error(ag_fit(ag_linear(4, 3), x, iris$Species, nepoch = 1, silent = TRUE,
                      opt_params = function(e) list(bogus = 1)), "unknown hyper-parameter 'bogus'")
})

test_that(paste0("ag_fit shows one cli bar for the run with progress = \"bar\", a line per epoch ",
                 "matching the history"), {
  x <- iris_x()
  # a console that redraws (testthat sets cli.dynamic = FALSE, as a log is)
  old <- options(cli.progress_show_after = 0, cli.dynamic = TRUE)
  on.exit(options(old))
  msgs <- character()
  set.seed(6)
  out <- capture.output(h <- withCallingHandlers(
    with_cli_ticks(ag_fit(ag_linear(4, 3), x, iris$Species, nepoch = 2, batch_size = 50,
                          val_split = 0.2, progress = "bar")),
    message = function(m) { msgs <<- c(msgs,
                                       conditionMessage(m))
                                       invokeRestart("muffleMessage") }))
  expect_identical(out, character())  # cli writes to the message stream
  txt <- paste(msgs, collapse = "")
  for (e in 1:2)
    expect_true(grepl(sprintf("epoch %4d/2  loss=%.5f  acc=%.4f  val_loss=%.5f  val_acc=%.4f", e,
                              h$loss[e], h$accuracy[e],
                              h$val_loss[e], h$val_accuracy[e]), txt, fixed = TRUE))
  # one bar over 2 epochs x 2 batches
  expect_match(txt, "4/4 ETA +[0-9]+s | loss [0-9.]+ acc [0-9.]+ | val_lo")
  # silent and "none" are quiet everywhere (the default prints lines here: test-fit-progress.R)
  expect_silent(ag_fit(ag_linear(4, 3), x, iris$Species, nepoch = 1, batch_size = 50, silent = TRUE,
                       progress = "bar"))
  expect_silent(ag_fit(ag_linear(4, 3), x, iris$Species, nepoch = 1, batch_size = 50,
                       progress = "none"))
  expect_error(ag_fit(ag_linear(4, 3), x, iris$Species, progress = "yes"),
               "ag_fit: progress must be \"auto\", \"bar\" or \"none\", got yes", fixed = TRUE)
})

# ag_fit with dropout and batch norm, a validation split whose last batch is partial; returns
# the history, weights, buffers and the next number of R's stream
.fit_run <- function(static, dtype, accum, loss = "cross_entropy", onehot = FALSE, model = NULL,
                     callbacks = list(),
                     seed = 3) {
  old <- ag_dtype(dtype)
  on.exit(ag_dtype(old))
  set.seed(1)
  x <- matrix(rnorm(4 * 90), 4, 90)
  y <- sample(0:2, 90, TRUE)
  if (onehot) y <- sapply(y, function(k) as.numeric(0:2 == k))
  if (loss == "mse") y <- matrix(rnorm(180), 2, 90)
  set.seed(2)
  m <- if (!is.null(model)) model() else
    ag_sequential(ag_linear(4, 16, "relu"), ag_batch_norm(16), ag_dropout(0.3),
                  ag_linear(16, if (loss == "mse") 2 else 3))
  h <- ag_fit(m, x, y, loss = loss, nepoch = 3, batch_size = 8, nbatch_logical = 8 * accum,
              val_split = 0.2,
              silent = TRUE, static = static, seed = seed, callbacks = callbacks)
  list(h = unclass(h)[setdiff(names(unclass(h)), c("time_train", "time_val"))],
       p = lapply(.layer_params_of(m), function(t) t$data),
       b = lapply(.buffers_of(m), function(t) t$data),
       next_draw = runif(1))
}
.layer_params_of <- function(m) if (is.environment(m)) m$parameters() else m$params()
.buffers_of <- function(m) if (is.environment(m) && is.function(m$buffers)) m$buffers() else list()

.count_compiles <- function(expr) {
  cnt <- new.env()
  cnt$n <- 0L
  suppressMessages(trace("ag_compile",
                         tracer = bquote(assign("n", get("n", envir = .(cnt)) + 1L,
                                                envir = .(cnt))), where = asNamespace("pyggmlr"),
                         print = FALSE))
  on.exit(suppressMessages(untrace("ag_compile", where = asNamespace("pyggmlr"))))
  force(expr)
  cnt$n
}

test_that(paste0("ag_fit(static = TRUE) replays an epoch in one core call (pg_fit_run_static) ",
                 "exactly as batch by batch"), {
  n <- 0L
  per_batch <- list(on_epoch_end = function(epoch, logs) NULL,
                    on_batch_end = function(step, logs) n <<- n + 1L)
  # a run stream, R's stream (.Random.seed written back once per epoch)
  for (seed in list(3, NULL)) {
    expect_identical(.fit_run(TRUE, "f32", 2L, seed = seed),
                     .fit_run(TRUE, "f32", 2L, seed = seed, callbacks = list(per_batch)))
  }
  expect_equal(n, 2L * 3L * 8L)  # the batch-by-batch runs: 3 epochs of 8 micro-batches (72 samples)
})

test_that(paste0("ag_fit(static = TRUE) equals the eager ag_fit bit for bit (dropout, batch ",
                 "norm, f32/f64, accumulation)"), {
  for (dt in c("f32", "f64")) for (k in 1:2) {
    n_c <- .count_compiles(rc <- .fit_run(TRUE, dt, k))
    n_e <- .count_compiles(re <- .fit_run(FALSE, dt, k))
    expect_identical(rc, re)
    # one opt graph, forward graphs for validation widths 8 and 2 (18 held-out samples)
    expect_equal(n_c, 3L)
    expect_equal(n_e, 0L)
    expect_gt(length(unique(rc$h$loss)), 1L)
    expect_false(any(is.nan(rc$h$val_accuracy)))
    expect_false(identical(rc$b[[1]], matrix(0, 16, 1)))  # the running statistics moved
  }
  # one-hot and mse targets, a mean loss without y
  expect_identical(.fit_run(TRUE, "f32", 1L, onehot = TRUE),
                   .fit_run(FALSE, "f32", 1L, onehot = TRUE))
  expect_identical(.fit_run(TRUE, "f64", 2L, loss = "mse"),
                   .fit_run(FALSE, "f64", 2L, loss = "mse"))
})

test_that("ag_fit(static = NULL) compiles built-in models at once, callable losses after the probe",
          {
  expect_equal(.count_compiles(rd <- .fit_run(NULL, "f32", 1L)), 3L)
  expect_identical(rd, .fit_run(FALSE, "f32", 1L))
  # a callable loss made of ag ops: compiled by default too (the probe's forward graph, then the
  # step), with the numbers of static = TRUE
  ce <- function(out, y) ag_softmax_cross_entropy_loss(out, y)
  fit_cl <- function(static) {
    set.seed(1)
    x <- matrix(rnorm(4 * 40), 4, 40)
    y <- sample(0:2, 40, TRUE)
    m <- ag_sequential(ag_linear(4, 8, "tanh"), ag_linear(8, 3))
    h <- ag_fit(m, x, y, loss = ce, nepoch = 2, batch_size = 8, silent = TRUE, static = static,
                seed = 1)
    list(h$loss, m$parameters()[[1]]$data)
  }
  expect_equal(.count_compiles(a <- fit_cl(NULL)), 2L)
  expect_equal(.count_compiles(b <- fit_cl(TRUE)), 1L)
  expect_identical(a, b)
  # a single ag_linear (a plain list) is built-in; a function model is not
  expect_true(pyggmlr:::.builtin_model(ag_linear(2, 2)))
  expect_false(pyggmlr:::.builtin_model(function(x) x))
  expect_true(pyggmlr:::.builtin_model(ag_sequential(ag_embedding(5, 2), ag_linear(2, 2))))
  expect_error(ag_fit(ag_linear(2, 2), matrix(0, 2, 4), 0:3 %% 2, static = NA),
               "static must be TRUE, FALSE or NULL")
  # an embedding reads its ids from the batch tensor in the core: compiled equals eager
  set.seed(1)
  ids <- matrix(sample(0:5, 16, TRUE), 1, 16)
  lab <- sample(0:1, 16, TRUE)
  fit_emb <- function(static) {
    set.seed(2)
    m <- ag_sequential(ag_embedding(6, 3), ag_linear(3, 2))
    h <- ag_fit(m, ids, lab, nepoch = 2, batch_size = 4, shuffle = FALSE, silent = TRUE,
                static = static)
    list(h$loss, m$parameters()$layer1_weight$data, m$parameters()$layer2_W$data)
  }
  expect_equal(.count_compiles(e1 <- fit_emb(TRUE)), 1L)
  expect_identical(e1, fit_emb(FALSE))
  # a custom layer whose forward reads the ids back into R: a graph would replay the first
  # batch's ids (a constant), so the default's probe finds the replay wrong, trains eagerly and
  # says why once; the eager run is the static = FALSE one
  emb <- ag_embedding(6, 3)
  custom <- list(forward = function(x) emb$forward(as.integer(x$data)),
                 parameters = function() list(weight = emb$weight))
  model <- ag_sequential(custom, ag_linear(3, 2))
  w0 <- lapply(model$parameters(), function(p) p$data)
  expect_message(h <- ag_fit(model, ids, lab, nepoch = 1, batch_size = 4, silent = TRUE,
                             shuffle = FALSE),
                 "static = NULL runs this model eagerly .*a replay of the recorded step gives")
  ps <- model$parameters()
  for (k in names(w0)) ps[[k]]$data <- w0[[k]]
  h2 <- ag_fit(model, ids, lab, nepoch = 1, batch_size = 4, silent = TRUE, shuffle = FALSE,
               static = FALSE)
  expect_identical(h$loss, h2$loss)
})

test_that(paste0("ag_fit(resume_from =) continues a checkpointed run exactly (shuffle, val ",
                 "split, dropout, early stopping)"), {
  local_f64()
  set.seed(3)
  x <- matrix(rnorm(4 * 60), 4, 60)
  y <- as.integer(colSums(x[1:2, ]) > 0)
  mk <- function() { set.seed(11); ag_sequential(ag_linear(4, 8, "relu"), ag_dropout(0.2),
                                                 ag_linear(8, 2)) }
  run <- function(m, nepoch, cbs, resume = NULL)
    ag_fit(m, x, y, nepoch = nepoch, batch_size = 8L, nbatch_logical = 16L, val_split = 0.2,
           seed = 5L, lr = 0.01,
           callbacks = cbs, silent = TRUE, resume_from = resume)
  full <- run(mk(), 6L, list(ag_early_stopping(patience = 10L, restore_best = FALSE)))
  f <- tempfile(fileext = ".safetensors")
  m1 <- mk()
  part <- run(m1, 3L,
              list(ag_early_stopping(patience = 10L, restore_best = FALSE), ag_model_checkpoint(f)))
  expect_true(file.exists(f))
  # other weights: all from the file
  m2 <- ag_sequential(ag_linear(4, 8, "relu"), ag_dropout(0.2), ag_linear(8, 2))
  rest <- run(m2, 6L, list(ag_early_stopping(patience = 10L, restore_best = FALSE)), resume = f)
  expect_identical(rest$loss, full$loss)
  expect_identical(rest$val_accuracy, full$val_accuracy)
  expect_identical(rest$epoch, 1:6)
  expect_error(ag_fit(m2, x, y, nepoch = 6L, batch_size = 4L, nbatch_logical = 16L, val_split = 0.2,
                      seed = 5L,
                      silent = TRUE, resume_from = f),
               "cannot resume: batch_size was 8 in the checkpoint, now 4", fixed = TRUE)
  expect_error(ag_model_checkpoint(f, every = 0), "every must be an integer >= 1", fixed = TRUE)
  expect_output(print(ag_model_checkpoint("a.safetensors", 2)),
                "ag_model_checkpoint | path=a.safetensors | every=2", fixed = TRUE)
})

test_that("ag_model_checkpoint on a non-default RNGkind without seed is refused before training", {
  old <- RNGkind()
  on.exit(RNGkind(old[[1L]], old[[2L]], old[[3L]]), add = TRUE)
  RNGkind("L'Ecuyer-CMRG")
  set.seed(2)
  x <- matrix(rnorm(4 * 32), 4, 32)
  y <- rep(0:1, 16L)
  m <- ag_sequential(ag_linear(4, 6, "relu"), ag_linear(6, 2))
  before <- lapply(m$parameters(), function(p) p$data)
  f <- tempfile(fileext = ".safetensors")
  err <- tryCatch(ag_fit(m, x, y, nepoch = 2L, batch_size = 8L, silent = TRUE,
                         callbacks = list(ag_model_checkpoint(f))), error = function(e) e)
  expect_s3_class(err, "pyggmlr_state_error")
  expect_match(conditionMessage(err), "ag_model_checkpoint: the run's random stream has no state",
               fixed = TRUE)
  expect_false(file.exists(f))
  expect_identical(lapply(m$parameters(), function(p) p$data), before)  # nothing trained
  # without a checkpoint it trains on R's own stream (as ggmlR's sample()): the same
  # set.seed gives the same run, and R's stream advanced
  run <- function() {
    set.seed(7)
    m <- ag_sequential(ag_linear(4, 6, "relu"), ag_linear(6, 2))
    h <- ag_fit(m, x, y, nepoch = 2L, batch_size = 8L, val_split = 0.25, silent = TRUE)
    list(h$loss, h$val_loss, runif(1))
  }
  a <- run()
  expect_identical(a, run())
  set.seed(7)
  expect_false(identical(a[[3L]], runif(1)))
  # with seed = the run has a stream of its own: it saves
  ag_fit(m, x, y, nepoch = 1L, batch_size = 8L, silent = TRUE, seed = 1L,
         callbacks = list(ag_model_checkpoint(f)))
  expect_true(file.exists(f))
})

test_that("a refused resume_from changes nothing; R resumes a Python checkpoint layout", {
  local_f64()
  set.seed(3)
  x <- matrix(rnorm(4 * 40), 4, 40)
  y <- as.integer(colSums(x[1:2, ]) > 0)
  m <- ag_sequential(ag_linear(4, 6, "relu"), ag_linear(6, 2))
  f <- tempfile(fileext = ".safetensors")
  ag_fit(m, x, y, nepoch = 2L, batch_size = 8L, seed = 1L, silent = TRUE,
         callbacks = list(ag_model_checkpoint(f)))
  m2 <- ag_sequential(ag_linear(4, 6, "relu"), ag_linear(6, 2))
  before <- lapply(m2$parameters(), function(p) p$data)
  expect_error(ag_fit(m2, x, y, nepoch = 3L, batch_size = 4L, seed = 1L, silent = TRUE,
                      resume_from = f),
               "cannot resume: batch_size was 8", fixed = TRUE)
  expect_identical(lapply(m2$parameters(), function(p) p$data), before)  # nothing written
  expect_silent(ag_fit(m2, x, y, nepoch = 3L, batch_size = 8L, seed = 1L, silent = TRUE, lr = 0.5,
                       resume_from = f))
})

test_that("a resumed run keeps the checkpoint's metrics = columns (the core's layout)", {
  local_f64()
  set.seed(1)
  x <- matrix(rnorm(40), 4, 10)
  y <- matrix(rnorm(20), 2, 10)
  f <- tempfile(fileext = ".safetensors")
  run <- function(m, nepoch, ...)
    ag_fit(m, x, y, loss = "mse", nepoch = nepoch, batch_size = 2L, val_split = 0.2,
           silent = TRUE, seed = 3L, metrics = "mae", ...)
  mk <- function() { set.seed(5); ag_linear(4, 2) }
  full <- run(mk(), 4L)
  m <- mk()
  run(m, 2L, callbacks = list(ag_model_checkpoint(f)))
  rest <- run(m, 4L, resume_from = f)
  expect_identical(rest$mae, full$mae)
  expect_identical(rest$val_mae, full$val_mae)
  h <- ag_model_info(f)$extra$fit$history
  expect_identical(names(h)[13:16], c("mae", "val_mae", "stopped_epoch", "best_epoch"))
})
