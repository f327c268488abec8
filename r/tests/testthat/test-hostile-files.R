# Issue 19, "nothing lost" and hostile files (as test_hostile_files.py): a load that fails
# leaves the model and the optimizer bit-identical; a save the loader would refuse is refused
# before the old file is touched; whatever saves loads back identically; symlinks and modes;
# huge or odd files fail on their header; checkpoint paths are checked at construction.

hf_model <- function(seed = 1) {
  ggml_set_seed(seed)
  ag_sequential(ag_linear(3, 4, "relu"), ag_batch_norm(4), ag_linear(4, 2))
}
hf_trained <- function(seed = 1) {
  m <- hf_model(seed)
  opt <- optimizer_adam(m$parameters(), lr = 0.01)
  set.seed(seed)
  x <- matrix(runif(15), 3, 5)
  with_grad_tape(l <- ag_mse_loss(m$forward(x), matrix(0, 2, 5)))
  opt$step(backward(l))
  opt$zero_grad()
  ag_tape_clear()
  list(m = m, opt = opt)
}
# every tensor the user owns: weights, buffers, optimizer slots and counters
hf_snap <- function(m, opt = NULL) {
  sd <- ag_state_dict(m)
  out <- list(p = sd$parameters, b = sd$buffers)
  if (!is.null(opt)) { s <- suppressWarnings(opt$state()); out$t <- c(s$t, s$accum_count,
      opt$accumulate_steps)
      out$slots <- s$slots }
  out
}
# rewrite a model file: fn(header list, body raw) returns list(h, body)
hf_edit <- function(path, fn) {
  con <- file(path, "rb")
  data <- readBin(con, "raw", file.info(path)$size)
  close(con)
  n <- sum(as.numeric(data[1:8]) * 256^(0:7))
  h <- jsonlite::parse_json(rawToChar(data[9:(8 + n)]), simplifyVector = FALSE)
  r <- fn(h, data[-(1:(8 + n))])
  hb <- charToRaw(as.character(jsonlite::toJSON(r$h, auto_unbox = TRUE, digits = NA)))
  hb <- c(hb, rep(charToRaw(" "), (8 - length(hb) %% 8) %% 8))
  len <- length(hb)
  lb <- as.raw(vapply(0:7, function(k) (len %/% 256^k) %% 256, 0))
  writeBin(c(lb, hb, r$body), path)
}
hf_poke <- function(name, value) function(h, body) {
  o <- unlist(h[[name]]$data_offsets)
  body[(o[1] + 1):o[2]] <- writeBin(rep(value, (o[2] - o[1]) / 4), raw(), size = 4,
                                    endian = "little")
  list(h = h, body = body)
}
hf_names <- function(path) {
  con <- file(path, "rb")
  b <- readBin(con, "raw", 8)
  n <- sum(as.numeric(b) * 256^(0:7))
  h <- readBin(con, "raw", n)
  close(con)
  names(jsonlite::parse_json(rawToChar(h)))
}

test_that("optimizer load_state with a bad field changes nothing", {
  a <- hf_trained()
  st <- a$opt$state()
  b <- hf_trained(2)
  before <- hf_snap(b$m, b$opt)
  bad <- st
  bad$slots$v <- lapply(st$slots$v, function(v) v - 1)
  expect_error(b$opt$load_state(bad), "second moments must be >= 0", fixed = TRUE)
  bad <- st
  bad$t <- NaN
  expect_error(b$opt$load_state(bad), "t / accum_count are not counts", fixed = TRUE)
  bad <- st
  bad$slots$m <- lapply(st$slots$m, function(v) v * 0 + 1e300)
  expect_error(b$opt$load_state(bad), "outside the f32 range", fixed = TRUE)
  bad <- st
  bad$slots$m[[length(bad$slots$m)]] <- matrix(0, 9, 9)
  expect_error(b$opt$load_state(bad), "has shape 9x9", fixed = TRUE)
  expect_identical(hf_snap(b$m, b$opt), before)
})

test_that("ag_load_model(path, model =, optimizer =) with a bad value changes nothing", {
  a <- hf_trained()
  f <- tempfile(fileext = ".st")
  ag_save_model(a$m, f, optimizer = a$opt, epoch = 3)
  vname <- grep("^optimizer\\.v\\.", hf_names(f), value = TRUE)[[1]]
  hf_edit(f, hf_poke(vname, -2))
  b <- hf_trained(2)
  before <- hf_snap(b$m, b$opt)
  expect_error(ag_load_model(f, model = b$m, optimizer = b$opt), "second moments must be >= 0",
               fixed = TRUE)
  expect_identical(hf_snap(b$m, b$opt), before)
  ag_save_model(a$m, f, optimizer = a$opt, epoch = 3)
  bn <- grep("running_var", hf_names(f), value = TRUE)[[1]]
  hf_edit(f, function(h, body) { h[[bn]]$shape <- list(2L, 2L); list(h = h, body = body) })
  expect_error(ag_load_model(f, model = b$m, optimizer = b$opt), "shape mismatch", fixed = TRUE)
  expect_identical(hf_snap(b$m, b$opt), before)
})

test_that("ag_load_state_dict with a bad last entry changes nothing", {
  a <- hf_trained()
  b <- hf_trained(2)
  before <- hf_snap(b$m)
  for (bad in list(NaN, 1e300, "shape")) {
    sd <- ag_state_dict(a$m)
    k <- names(sd$parameters)[length(sd$parameters)]
    sd$parameters[[k]] <- if (identical(bad, "shape")) matrix(0, 7,
        7) else sd$parameters[[k]] * 0 + bad
    expect_error(ag_load_state_dict(b$m, sd))
    expect_identical(hf_snap(b$m), before)
  }
  sd <- ag_state_dict(a$m)
  k <- names(sd$parameters)[1]
  sd$parameters[[k]] <- sd$parameters[[k]] * 0 + 1e300
  expect_error(ag_load_state_dict(b$m, sd), "outside the f32 range", fixed = TRUE)
})

test_that("a refused resume_from changes nothing (batch size, tampered state, negative moments)", {
  set.seed(0)
  x <- matrix(runif(24), 3, 8)
  y <- matrix(runif(16), 2, 8)
  fitit <- function(m, opt, ...) ag_fit(m, x, y, loss = "mse", optimizer = opt, silent = TRUE, ...)
  for (tamper in c("batch_size", "rng", "split", "history", "neg_v", "callback")) {
    f <- tempfile(fileext = ".st")
    a <- hf_trained()
    cbs <- function() list(ag_model_checkpoint(f), ag_early_stopping(patience = 5))
    fitit(a$m, a$opt, nepoch = 1, batch_size = 4, callbacks = cbs())
    if (tamper %in% c("rng", "split", "history", "callback")) hf_edit(f, function(h, body) {
      ex <- jsonlite::parse_json(h$`__metadata__`$extra, simplifyVector = FALSE)
      if (tamper == "rng") ex$fit$rng_state <- list("x")
      else if (tamper == "split") ex$fit$settings$split_state <- list(1L, 2L)
      else if (tamper == "callback") ex$fit$callbacks[[2]]$wait <- "soon"
      else ex$fit$history$loss <- list("nope")
      h$`__metadata__`$extra <- as.character(jsonlite::toJSON(ex, auto_unbox = TRUE, null = "null",
          digits = NA))
      list(h = h, body = body)
    })
    if (tamper == "neg_v") hf_edit(f,
                                   hf_poke(grep("^optimizer\\.v\\.", hf_names(f),
                                                value = TRUE)[[1]], -1))
    b <- hf_trained(2)
    b$opt$accumulate_steps <- 3
    b$opt$accum_count <- 1  # ag_fit sets its own: put back on a refusal
    before <- hf_snap(b$m, b$opt)
    expect_error(fitit(b$m, b$opt, nepoch = 2, batch_size = if (tamper == "batch_size") 2 else 4,
                       resume_from = f,
                       callbacks = cbs()),
                 class = if (tamper == "split") "pyggmlr_value_error" else "error")
    expect_identical(hf_snap(b$m, b$opt), before, info = tamper)
  }
})

test_that("resume_from refuses a history that is not the epochs done, numbered 1 to epoch", {
  set.seed(0)
  x <- matrix(runif(24), 3, 8)
  y <- matrix(runif(16), 2, 8)
  f <- tempfile(fileext = ".st")
  a <- hf_trained()
  ag_fit(a$m, x, y, loss = "mse", optimizer = a$opt, silent = TRUE, nepoch = 2, batch_size = 4,
         callbacks = list(ag_model_checkpoint(f)))
  edits <- list(
    short = list(function(ex, h) { ex$fit$history[] <- lapply(ex$fit$history, function(v)
      if (is.list(v)) v[1] else v); list(ex, h) },
      "(its history has 1 epoch, the checkpoint's epoch is 2)"),
    epoch_up = list(function(ex, h) { h$`__metadata__`$epoch <- "1000000"; list(ex, h) },
      "(its history has 2 epochs, the checkpoint's epoch is 1000000)"),
    renumbered = list(function(ex, h) { ex$fit$history$epoch <- list(3L, 4L); list(ex, h) },
      "(its history's epochs are not numbered 1 to 2)"),
    best = list(function(ex, h) { ex$fit$history$best_epoch <- 7L; list(ex, h) },
      "(its history's best_epoch is not an epoch from 0 to 2)"))
  for (case in names(edits)) {
    g <- tempfile(fileext = ".st")
    file.copy(f, g)
    hf_edit(g, function(h, body) {
      ex <- jsonlite::parse_json(h$`__metadata__`$extra, simplifyVector = FALSE)
      r <- edits[[case]][[1]](ex, h)
      h <- r[[2]]
      h$`__metadata__`$extra <- as.character(jsonlite::toJSON(r[[1]], auto_unbox = TRUE,
          null = "null", digits = NA))
      list(h = h, body = body)
    })
    b <- hf_trained(2)
    before <- hf_snap(b$m, b$opt)
    err <- tryCatch(ag_fit(b$m, x, y, loss = "mse", optimizer = b$opt, silent = TRUE,
                           nepoch = 3, batch_size = 4, resume_from = g),
                    error = function(e) e)
    expect_s3_class(err, "pyggmlr_value_error")
    expect_identical(conditionMessage(err),
                     paste("ag_fit:", g, "holds an unusable training state", edits[[case]][[2]]),
                     info = case)
    expect_identical(hf_snap(b$m, b$opt), before, info = case)
  }
})

test_that("resume_from's file errors name ag_fit and the argument, not an internal function", {
  set.seed(0)
  x <- matrix(runif(24), 3, 8)
  y <- matrix(runif(16), 2, 8)
  a <- hf_trained()
  junk <- tempfile(fileext = ".st")
  writeBin(as.raw(c(16, 0, 0, 0, 0, 0, 0, 0, charToRaw('{"a":1}'))), junk)
  go <- function(p) ag_fit(a$m, x, y, loss = "mse", optimizer = a$opt, nepoch = 1, silent = TRUE,
                           resume_from = p)
  expect_error(go(junk), paste0("ag_fit: resume_from: ", junk, ": truncated file"), fixed = TRUE,
               class = "pyggmlr_value_error")
  expect_error(go(paste0(junk, ".none")), "ag_fit: resume_from: cannot open file", fixed = TRUE,
               class = "pyggmlr_io_error")
  expect_error(go(tempdir()), "ag_fit: resume_from: '", fixed = TRUE, class = "pyggmlr_io_error")
})

test_that("a save the loader would refuse is refused before the old file is touched", {
  a <- hf_trained()
  f <- tempfile(fileext = ".st")
  ag_save_model(a$m, f, optimizer = a$opt, epoch = 3)
  old <- readBin(f, "raw", file.info(f)$size)
  for (ep in list(1e12, -1, 2.5, NA))
    expect_error(ag_save_model(a$m, f, epoch = ep), "epoch must be an integer in [0, 1e12)",
                 fixed = TRUE)
  bad <- list(parameters = a$m$parameters, buffers = a$m$buffers, to_config = function() {
    cfg <- a$m$to_config()
    cfg$layers[[1]]$activation <- "bogus"
    cfg
  })
  expect_error(ag_save_model(bad, f), "would not load back.*bogus.*nothing was written")
  expect_identical(readBin(f, "raw", file.info(f)$size), old)
  expect_length(list.files(dirname(f), pattern = "\\.tmp$"), 0L)
  ag_save_model(a$m, f, epoch = 1e12 - 1)
  expect_identical(ag_model_info(f)$epoch, 1e12 - 1)
  # the rebuild check draws nothing from the random streams
  draw <- function() ag_sample_normal(matrix(0, 3, 1), matrix(0, 3, 1))$data
  ggml_set_seed(7)
  set.seed(7)
  r1 <- draw()
  u1 <- runif(2)
  ggml_set_seed(7)
  set.seed(7)
  ag_save_model(a$m, f)
  r2 <- draw()
  u2 <- runif(2)
  expect_identical(r1, r2)
  expect_identical(u1, u2)
})

test_that("property: random valid models save and load identically", {
  set.seed(11)
  for (case in 1:15) {
    prev <- ag_dtype(if (case %% 3 == 0) "f64" else "f32")
    ggml_set_seed(case)
    w <- sample(1:5, 1)
    layers <- list()
    for (k in sample(c("linear", "batch_norm", "layer_norm", "dropout"), sample(1:4, 1),
                     replace = TRUE)) {
      if (k == "linear") {
        act <- sample(list(NULL, "relu", "tanh", "sigmoid", "gelu", "softmax"), 1)[[1]]
        layers[[length(layers) + 1L]] <- ag_linear(w, w + 1, act)
        w <- w + 1
      } else if (k == "batch_norm") layers[[length(layers) + 1L]] <- ag_batch_norm(w)
      else if (k == "layer_norm") layers[[length(layers) + 1L]] <- ag_layer_norm(w)
      else layers[[length(layers) + 1L]] <- ag_dropout(0.25)
    }
    m <- do.call(ag_sequential, layers)
    ag_dtype(prev)
    f <- tempfile(fileext = ".st")
    ag_save_model(m, f, epoch = case)
    back <- ag_load_model(f)
    expect_identical(hf_snap(back), hf_snap(m), info = paste("case", case))
    expect_identical(ag_to_config(back), ag_to_config(m))
  }
})

test_that("saving through a symlink writes the target; modes are kept or follow the umask", {
  skip_on_os("windows")
  a <- hf_trained()
  d <- tempfile()
  dir.create(d)
  target <- file.path(d, "real.st")
  link <- file.path(d, "link.st")
  ag_save_model(a$m, target)
  Sys.chmod(target, "640", use_umask = FALSE)
  file.symlink("real.st", link)
  b <- hf_trained(2)
  ag_save_model(b$m, link)
  expect_identical(Sys.readlink(link), "real.st")
  expect_identical(format(file.info(target)$mode), "640")
  expect_identical(hf_snap(ag_load_model(target)), hf_snap(b$m))
  old <- Sys.umask("027")
  on.exit(Sys.umask(old))
  ag_save_model(a$m, file.path(d, "new.st"))
  expect_identical(format(file.info(file.path(d, "new.st"))$mode), "640")
})

test_that("device, sparse and huge-claim files fail on their header, naming path and limit", {
  skip_on_os("windows")
  expect_error(ag_load_model("/dev/zero"), "^ag_load_model\\(\\): /dev/zero: .*not a regular file")
  expect_error(ag_model_info("/dev/zero"), "^ag_model_info\\(\\): /dev/zero: .*not a regular file")
  f <- tempfile(fileext = ".st")
  system2("truncate", c("-s", "8G", shQuote(f)))
  skip_if_not(file.exists(f))
  expect_error(ag_load_model(f), "header length 0 is too small", fixed = TRUE)
  con <- file(f, "wb")
  writeBin(c(writeBin(1e12, raw(), size = 8)[0], as.raw(c(0x00, 0x10, 0xa5, 0xd4, 0xe8, 0, 0, 0)),
                                   charToRaw("{}")), con)
                                   close(con)
  expect_error(ag_load_model(f), "header length 1000000000000 exceeds the 104857600-byte limit",
               fixed = TRUE)
})

test_that("a small file whose config asks for 3e7 features fails before allocating", {
  for (size in c("3e7", "30000000.0", "30000000")) {
    f <- tempfile(fileext = ".st")
    ggml_set_seed(1)
    ag_save_model(ag_sequential(ag_linear(2, 1)), f)
    hf_edit(f, function(h, body) {
      h$`__metadata__`$config <- sub('"in_features":2', paste0('"in_features":', size),
                                     h$`__metadata__`$config, fixed = TRUE)
      list(h = h, body = body)
    })
    expect_lt(file.info(f)$size, 1024)
    expect_error(ag_load_model(f), "implausible layer size", fixed = TRUE)
  }
})

test_that("checkpoint paths are checked when the callback is made", {
  d <- tempfile()
  dir.create(d)
  expect_error(ag_model_checkpoint(file.path(d, "runs", "{name}", "m.st")),
               "placeholder other than {epoch}", fixed = TRUE)
  expect_error(ag_model_checkpoint(file.path(d, "missing", "m_{epoch}.st")), "does not exist",
               fixed = TRUE)
  expect_s3_class(ag_model_checkpoint(file.path(d, "m_{epoch}.st")), "ag_model_checkpoint")
  # the core's rule, as Python's: {epoch:03d} zero-pads, {{ and }} are one brace each
  cb <- ag_model_checkpoint(file.path(d, "a{{b}}_{epoch:03d}.st"))
  ag_fit(ag_linear(2, 2), matrix(1:8 / 8, 2), c(0, 1, 0, 1), nepoch = 2L, batch_size = 2L,
         silent = TRUE, callbacks = list(cb))
  expect_identical(basename(cb$saved), c("a{b}_001.st", "a{b}_002.st"))
  expect_true(all(file.exists(cb$saved)))
})

test_that("a refused ag_capture_set keeps the step's clipping limit", {
  W <- ag_param(matrix(0.5, 2, 3))
  o <- optimizer_adam(list(W = W), lr = 0.1)
  cs <- ag_capture_step(function(x, y) ag_mse_loss(ag_matmul(W, x), y), optimizer = o,
                        max_grad_norm = 0.01)
  for (bad in list(NULL, -1, NaN, c(1, 2)))
    expect_error(ag_capture_set(cs, bad), "max_grad_norm must be one positive finite number",
                 fixed = TRUE)
  expect_identical(attr(cs, "ag_capture_step", exact = TRUE)$limit, 0.01)
})

test_that("a ggmlR RDS container with a bad entry changes nothing", {
  sd <- ag_state_dict(hf_model(2))
  target <- hf_model(3)
  before <- hf_snap(target)
  for (bad in list(1e300, NaN, "shape")) {
    p <- sd$parameters
    k <- names(p)[length(p)]
    p[[k]] <- if (identical(bad, "shape")) matrix(0, 5, 5) else p[[k]] * 0 + bad
    f <- tempfile(fileext = ".rds")
    saveRDS(list(format = "ggmlR.ag_state", version = 1L, parameters = p,
                 param_dtypes = sd$param_dtypes,
                 buffers = sd$buffers, model_fn = NULL), f)
    expect_error(ag_load_model(f, model = target),
                 "outside the f32 range|NA, NaN or Inf|shape mismatch")
    expect_identical(hf_snap(target), before)
  }
})

test_that(paste0("ag_fit that fails in its setup leaves the optimizer as it was (a failed call ",
                 "changes nothing)"), {
  m <- ag_sequential(ag_linear(2, 3))
  opt <- optimizer_adam(m$parameters(), lr = 0.01, accumulate_steps = 3L)
  opt$accum_count <- 1
  expect_error(ag_fit(m, matrix(0, 2, 8), c(0, 1, 2, 7, 0, 1, 2, 0.5), optimizer = opt,
                      nbatch_logical = 8L,
                      batch_size = 4L, nepoch = 1L, silent = TRUE))
  expect_equal(c(opt$accumulate_steps, opt$accum_count), c(3, 1))
  # put back before a calling handler sees the error (as Python's except), which it sees once,
  # with its class and message as signalled
  seen <- list()
  e <- tryCatch(withCallingHandlers(
    ag_fit(m, matrix(0, 2, 8), c(0, 1, 2, 1, 0, 1, 2, 0), optimizer = opt, nbatch_logical = 8L,
           batch_size = 4L, nepoch = 1L, silent = TRUE, class_weight = c("7" = 1)),
    error = function(e) seen[[length(seen) + 1L]] <<- c(opt$accumulate_steps, opt$accum_count)),
    error = identity)
  expect_equal(seen, list(c(3, 1)))
  expect_identical(class(e), c("pyggmlr_value_error", "pyggmlr_error", "simpleError", "error",
                               "condition"))
  expect_identical(conditionMessage(e), paste0("ag_fit: class_weight's class id 7 is not a class ",
                                               "of this run (3 classes: ids 0 to 2)"))
})
