# ag_save_model / ag_load_model: the safetensors + JSON format shared with the Python package.

# Run Python code (with the pyggmlr Python package). R puts its own library directories on
# LD_LIBRARY_PATH, which can make a shared-library Python pick up another libpython; the child
# gets the caller's value without them.
py_run <- function(code) {
  old <- Sys.getenv("LD_LIBRARY_PATH", unset = NA)
  Sys.unsetenv("LD_LIBRARY_PATH")
  on.exit(if (!is.na(old)) Sys.setenv(LD_LIBRARY_PATH = old), add = TRUE)
  f <- tempfile(fileext = ".py")
  on.exit(unlink(f), add = TRUE)
  writeLines(code, f)
  out <- suppressWarnings(system2("python3", shQuote(f), stdout = TRUE, stderr = TRUE))
  list(status = if (is.null(attr(out, "status"))) 0L else attr(out, "status"), out = out)
}
have_python_pyggmlr <- function() {
  r <- tryCatch(py_run("import pyggmlr"), error = function(e) list(status = 1L))
  identical(r$status, 0L)
}

mlp <- function() ag_sequential(ag_linear(4, 6, "relu"), ag_batch_norm(6), ag_dropout(0.2),
                                ag_linear(6, 3))

# put the batch-norm running statistics somewhere other than their initial values
warm_up <- function(m, x) { ag_train(m); with_grad_tape(m$forward(x)); ag_tape_clear(); ag_eval(m) }

test_that("round trip: same outputs, buffers, eval mode, layout of the file", {
  set.seed(3)
  m <- mlp()
  x <- matrix(rnorm(4 * 10), 4, 10)
  warm_up(m, x)
  f <- tempfile(fileext = ".safetensors")
  expect_identical(ag_save_model(m, f), f)
  ag_train(m)
  m2 <- ag_load_model(f)
  expect_s3_class(m2, "ag_sequential")
  expect_false(m2$training)
  expect_false(m2$layers[[3]]$training)
  ag_eval(m)
  expect_equal(ag_predict(m2, x), ag_predict(m, x), tolerance = 1e-6)
  expect_identical(m2$layers[[2]]$running_mean, m$layers[[2]]$running_mean)
  expect_false(all(m$layers[[2]]$running_mean == 0))
  expect_identical(m2$parameters()$layer4_W$data, m$parameters()$layer4_W$data)
  # file layout: 8-byte length, JSON header padded to 8, row-major data
  raw <- readBin(f, "raw", file.info(f)$size)
  n <- sum(as.numeric(raw[1:8]) * 256^(0:7))
  expect_equal(n %% 8, 0)
  hdr <- jsonlite::fromJSON(rawToChar(raw[9:(8 + n)]), simplifyVector = FALSE)
  expect_equal(hdr$layer1_W$dtype, "F32")
  expect_equal(unlist(hdr$layer1_W$shape), c(6L, 4L))
  W <- m$parameters()$layer1_W$data
  first <- readBin(raw[(9 + n):(8 + n + 16)], "double", 4, size = 4, endian = "little")
  expect_equal(first, W[1, ])  # row 1 first (row-major), exact after the f32 round trip
  meta <- hdr[["__metadata__"]]
  expect_equal(meta$format, "pyggmlr.ag_model")
  expect_equal(jsonlite::fromJSON(meta$buffers), c("layer2_running_mean", "layer2_running_var"))
  expect_equal(jsonlite::fromJSON(meta$config, simplifyVector = FALSE), ag_to_config(m))
  info <- ag_model_info(f)
  expect_equal(info$parameters$layer1_W$shape, c(6L, 4L))
  expect_null(info$epoch)
})

test_that("f64 models keep f64 and are rebuilt in f64; epoch and extra are stored", {
  local_f64()
  set.seed(4)
  m <- ag_sequential(ag_linear(3, 2, "tanh"), ag_layer_norm(2))
  f <- tempfile(fileext = ".safetensors")
  ag_save_model(m, f, epoch = 7, extra = list(note = "hi", v = c(1.5, 2)))
  ag_dtype("f32")
  m2 <- ag_load_model(f)
  expect_equal(m2$parameters()$layer1_W$dtype, "f64")
  expect_identical(m2$parameters()$layer1_W$data, m$parameters()$layer1_W$data)
  info <- ag_model_info(f)
  expect_equal(info$epoch, 7)
  expect_equal(info$extra, list(note = "hi", v = list(1.5, 2)))
})

test_that("model = and model_fn = load into a given model; ggmlR's mismatch errors", {
  set.seed(5)
  m <- mlp()
  f <- tempfile(fileext = ".safetensors")
  ag_save_model(m, f)
  set.seed(99)
  target <- mlp()
  expect_false(identical(target$parameters()$layer1_W$data, m$parameters()$layer1_W$data))
  out <- ag_load_model(f, model = target)
  expect_identical(out, target)
  expect_identical(target$parameters()$layer1_W$data, m$parameters()$layer1_W$data)
  via_fn <- ag_load_model(f, model_fn = mlp)
  expect_identical(ag_load_model(f, mlp)$parameters()$layer2_gamma$data,
                   m$parameters()$layer2_gamma$data)  # ggmlR's order
  expect_identical(via_fn$parameters()$layer4_b$data, m$parameters()$layer4_b$data)
  expect_error(ag_load_model(f, model = ag_sequential(ag_linear(4, 6), ag_linear(6, 3))),
               paste0("parameter mismatch between saved state and model. missing in file: ",
                      "layer2_W, layer2_b; not in model: layer2_gamma, layer2_beta, ",
                      "layer4_W, layer4_b"))
  expect_error(ag_load_model(f,
                             model = ag_sequential(ag_linear(4, 5, "relu"), ag_batch_norm(5),
                                                   ag_dropout(0.2), ag_linear(5, 3))),
               "shape mismatch for parameter 'layer1_W': model 5x4 vs file 6x4", fixed = TRUE)
  nobn <- ag_sequential(ag_linear(4, 6, "relu"), ag_layer_norm(6), ag_dropout(0.2), ag_linear(6, 3))
  expect_error(ag_load_model(f, model = nobn),
               paste0("buffer mismatch between saved state and model. missing in file: (none); ",
                                                      "not in model: layer2_running_mean, ",
                      "layer2_running_var"), fixed = TRUE)
  # all or nothing: a failed load changes nothing
  before <- target$parameters()$layer1_W$data
  expect_error(ag_load_model(f,
                             model = ag_sequential(ag_linear(4, 6, "relu"), ag_linear(6, 6),
                                                   ag_dropout(0.2), ag_linear(6, 3))))
  expect_identical(target$parameters()$layer1_W$data, before)
  expect_error(ag_save_model(list(a = 1), f), "ag_sequential")
  expect_error(ag_load_model(f, model_fn = 3), "model_fn")
})

test_that("a file without an architecture needs model or model_fn", {
  set.seed(6)
  custom <- new.env()
  custom$w <- ag_param(matrix(1:4, 2, 2))
  custom$forward <- function(x) ag_matmul(custom$w, x)
  custom$parameters <- function() list(w = custom$w)
  m <- ag_sequential(ag_linear(2, 2), custom)
  f <- tempfile(fileext = ".safetensors")
  expect_warning(ag_save_model(m, f), "without the architecture")
  w <- tryCatch(ag_save_model(m, f), warning = function(w) conditionMessage(w))  # the core's text
  expect_match(w, paste0("^ag_save_model\\(\\): saving the weights without the architecture ",
                        "\\(.*\\); load with ag_load_model\\(path, model = \\.\\.\\.\\)$"))
  expect_error(ag_load_model(f), "model_fn")
  custom$w$data <- matrix(0, 2, 2)
  ag_load_model(f, model = m)
  expect_equal(custom$w$data, matrix(1:4, 2, 2) + 0)
})

test_that("to_config() failing other than as a value error propagates; nothing is written", {
  # Python's rule (tests/r/test_saveargs_parity.py): only a pyggmlr value error means "no config"
  e <- new.env()
  e$w <- ag_param(matrix(1, 1, 1))
  e$parameters <- function() list(w = e$w)
  e$forward <- function(x) x
  e$to_config <- function() stop("boom")
  f <- tempfile(fileext = ".safetensors")
  expect_error(ag_save_model(e, f), "^boom$")
  expect_false(file.exists(f))
  e$to_config <- function() ag_to_config(3)  # an argument error: a fault too
  expect_error(ag_save_model(e, f), class = "pyggmlr_argument_error")
  expect_false(file.exists(f))
})

test_that("a builder given as model = is refused; the model is checked before model_fn", {
  f <- tempfile(fileext = ".safetensors")
  ag_save_model(ag_linear(2, 2), f)
  expect_error(ag_load_model(f, model = function() ag_linear(2, 2)),
               paste0("ag_load_model(): `model` must be an ag_sequential or ag_* layer (an ",
                      "object with parameters()), got function"), fixed = TRUE,
               class = "pyggmlr_argument_error")
  expect_error(ag_save_model(list(), f, model_fn = 5), "`model` must be", fixed = TRUE)
})

test_that("custom layers round-trip through ag_register_layer", {
  scale_layer <- function(n) {
    e <- new.env()
    e$n <- n
    e$s <- ag_param(matrix(2, n, 1))
    e$forward <- function(x) ag_mul(x, e$s)
    e$parameters <- function() list(s = e$s)
    e$to_config <- function() list(type = "test_scale", n = e$n)
    e
  }
  ag_register_layer("test_scale", function(cfg) scale_layer(cfg$n))
  m <- ag_sequential(ag_linear(3, 3), scale_layer(3))
  m$layers[[2]]$s$data <- matrix(c(1, 2, 3), 3, 1)
  f <- tempfile(fileext = ".safetensors")
  ag_save_model(m, f)
  m2 <- ag_load_model(f)
  expect_equal(m2$layers[[2]]$s$data, matrix(c(1, 2, 3), 3, 1))
  expect_error(ag_register_layer("linear", function(cfg) NULL), "built-in")
  expect_error(ag_module_from_config(list(type = "nope")), "unknown layer type")
  expect_error(ag_module_from_config(list(type = "linear", in_features = 2, out_features = 3,
                                          bogus = 1)), "bogus")
})

test_that("optimizer state is saved and restored (Adam moments, t)", {
  local_f64()
  set.seed(7)
  m <- ag_sequential(ag_linear(3, 4, "tanh"), ag_linear(4, 2))
  x <- matrix(rnorm(12), 3, 4)
  y <- matrix(rnorm(8), 2, 4)
  opt <- optimizer_adam(m$parameters(), lr = 0.01)
  for (i in 1:3) { with_grad_tape(l <- ag_mse_loss(m$forward(x),
                                                   y))
                                                   opt$step(backward(l))
                                                   opt$zero_grad() }
  f <- tempfile(fileext = ".safetensors")
  ag_save_model(m, f, optimizer = opt)
  set.seed(8)
  m2 <- ag_sequential(ag_linear(3, 4, "tanh"), ag_linear(4, 2))
  opt2 <- optimizer_adam(m2$parameters(), lr = 0.01)
  ag_load_model(f, model = m2, optimizer = opt2)
  expect_equal(opt2$t, 3L)
  expect_identical(opt2$state()$slots, opt$state()$slots)
  # both continue identically
  for (o in list(list(m, opt), list(m2, opt2))) {
    with_grad_tape(l <- ag_mse_loss(o[[1]]$forward(x), y))
    o[[2]]$step(backward(l))
    o[[2]]$zero_grad()
  }
  expect_identical(m2$parameters()$layer2_W$data, m$parameters()$layer2_W$data)
  sgd <- optimizer_sgd(m2$parameters())
  expect_error(ag_load_model(f, model = m2, optimizer = sgd), "optimizer state mismatch")
  g <- tempfile(fileext = ".safetensors")
  ag_save_model(m, g)
  expect_error(ag_load_model(g, model = m2, optimizer = opt2), "no optimizer state")
  # not an optimizer: the core's text, with the language's type name (Python: its type)
  expect_error(ag_save_model(m, g, optimizer = list()),
               "^ag_save_model\\(\\): optimizer must be an optimizer object, got list$",
               class = "pyggmlr_argument_error")
  expect_error(ag_load_model(g, model = m2, optimizer = list()),
               "^ag_load_model\\(\\): optimizer must be an optimizer object, got list$",
               class = "pyggmlr_argument_error")
  expect_error(ag_load_model(g, model_fn = function() 42),
               paste0("^ag_load_model\\(\\): `model_fn` must return an ag_sequential or ag_\\* ",
                      "layer \\(got class: numeric\\)\\.$"), class = "pyggmlr_argument_error")
})

test_that("truncated, corrupt and foreign files give clear errors", {
  set.seed(9)
  m <- mlp()
  f <- tempfile(fileext = ".safetensors")
  ag_save_model(m, f)
  raw <- readBin(f, "raw", file.info(f)$size)
  n <- sum(as.numeric(raw[1:8]) * 256^(0:7))
  bad <- tempfile()
  put <- function(bytes) { writeBin(bytes, bad); bad }
  expect_error(ag_load_model(put(raw[1:5])), "shorter than the 8-byte header")
  expect_error(ag_load_model(put(raw[1:(8 + n - 3)])), "truncated file")
  expect_error(ag_load_model(put(raw[1:(length(raw) - 4)])), "outside the .* data bytes")
  hdr <- rawToChar(raw[9:(8 + n)])
  with_header <- function(h) {
    hb <- charToRaw(h)
    hb <- c(hb, rep(charToRaw(" "), (-length(hb)) %% 8))
    c(as.raw((length(hb) %/% 256^(0:7)) %% 256), hb, raw[(9 + n):length(raw)])
  }
  expect_error(ag_load_model(put(with_header(sub("}$", "", trimws(hdr))))), "not valid JSON")
  expect_error(ag_load_model(put(with_header(sub("\"F32\"", "\"I64\"", hdr)))), "unsupported dtype")
  expect_error(ag_load_model(put(with_header(sub("\"shape\":\\[6,4\\]", "\"shape\":[6,5]", hdr)))),
               "needs")
  expect_error(ag_load_model(put(with_header(sub("\"shape\":\\[6,4\\]", "\"shape\":[6.0,4]",
                                                 hdr)))), "shape must be")
  expect_error(ag_load_model(put(with_header(sub("pyggmlr.ag_model", "other.thing", hdr)))),
               "not a pyggmlr model file")
  expect_error(ag_load_model(put(with_header(sub("\"data_offsets\":\\[96,120\\]",
                                                 "\"data_offsets\":[0,24]", hdr)))), "overlap")
  dup <- sub("\\{\"__metadata__\"",
             paste0("{\"layer1_b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},",
                    "\"__metadata__\""), hdr)
  expect_error(ag_load_model(put(with_header(dup))), "duplicate key")
  # an R serialization file is read as a ggmlR container (test-state.R) and checked as one
  rds <- tempfile(fileext = ".rds")
  saveRDS(list(format = "ggmlR.ag_state", parameters = list()), rds)
  expect_error(ag_load_model(rds), "unsupported container version", fixed = TRUE)
  txt <- tempfile()
  writeLines(c("hello world, not a model", "x"), txt)
  expect_error(ag_load_model(txt), "not a safetensors model file|truncated")
  expect_error(ag_load_model(file.path(tempdir(), "does-not-exist.safetensors")),
               "cannot open file")
  # a plain safetensors file without our metadata loads only into a given model
  h <- jsonlite::parse_json(hdr)
  h[["__metadata__"]] <- NULL
  plain <- with_header(as.character(jsonlite::toJSON(h, auto_unbox = TRUE)))
  expect_error(ag_load_model(put(plain)), "no 'format' metadata")
  m2 <- mlp()
  ag_load_model(put(plain), model = m2)
  expect_identical(m2$parameters()$layer1_W$data, m$parameters()$layer1_W$data)
})

test_that("writes are atomic: a failed save leaves the old file and no temporary file", {
  set.seed(10)
  m <- mlp()
  d <- tempfile("savedir")
  dir.create(d)
  f <- file.path(d, "m.safetensors")
  ag_save_model(m, f)
  before <- readBin(f, "raw", file.info(f)$size)
  expect_error(ag_save_model(m, f, epoch = -1), "epoch")
  expect_error(ag_save_model(m, f, extra = list(f = function() 1)), "JSON")
  expect_identical(readBin(f, "raw", file.info(f)$size), before)
  expect_equal(list.files(d, all.files = TRUE, no.. = TRUE), "m.safetensors")
  expect_error(ag_save_model(m, file.path(d, "no", "such", "dir.safetensors")), "does not exist")
})

test_that("a model without parameters() is the core's refusal naming the function, as Python's", {
  f <- tempfile(fileext = ".safetensors")
  ag_save_model(ag_linear(2, 2), f)
  for (fn in c("ag_save_model()", "ag_load_model()")) {
    e <- tryCatch(if (fn == "ag_save_model()") ag_save_model(5, tempfile()) else
                    ag_load_model(f, model = 5), error = function(e) e)
    expect_s3_class(e, "pyggmlr_argument_error")
    expect_identical(conditionMessage(e), paste0(fn, ": `model` must be an ag_sequential or ",
                                                 "ag_* layer (an object with parameters()), got ",
                                                 "numeric"))
  }
})

test_that("an empty path is the core's refusal at the write, after the other checks, as Python's", {
  m <- ag_linear(2, 2)
  e <- tryCatch(ag_save_model(m, ""), error = function(e) e)
  expect_s3_class(e, "pyggmlr_argument_error")
  expect_identical(conditionMessage(e), "ag_save_model(): path must be a single file name")
  e <- tryCatch(ag_save_model(m, "", optimizer = 5), error = function(e) e)
  expect_identical(conditionMessage(e),
                   "ag_save_model(): optimizer must be an optimizer object, got numeric")
})

test_that("architectures: to_config matches Python's to_config JSON and rebuilds", {
  m <- ag_sequential(ag_linear(4, 8, "relu", init = "orthogonal", gain = 2),
                     ag_batch_norm(8, momentum = 0.2),
                     ag_dropout(0.1), ag_layer_norm(8), ag_multihead_attention(8, 2, bias = FALSE),
                     ag_linear(8, 3))
  cfg <- ag_to_config(m)
  expect_equal(cfg$layers[[1]],
               list(type = "linear", in_features = 4L, out_features = 8L, activation = "relu",
                                     init = "orthogonal", gain = 2))
  expect_null(cfg$layers[[6]]$activation)
  expect_true("activation" %in% names(cfg$layers[[6]]))
  r <- ag_module_from_config(cfg)
  expect_equal(ag_to_config(r), cfg)
  expect_equal(names(r$parameters()), names(m$parameters()))
  W <- m$parameters()$layer1_W$data  # orthogonal init, [8x4]: orthonormal columns times gain
  expect_equal(crossprod(W), diag(4) * 4, tolerance = 1e-5)
})

test_that("files cross between R and Python in both directions", {
  skip_if_not(have_python_pyggmlr(), "python3 cannot import the pyggmlr Python package")
  set.seed(11)
  m <- mlp()
  x <- matrix(rnorm(4 * 5), 4, 5)
  warm_up(m, x)
  f <- tempfile(fileext = ".safetensors")
  g <- tempfile(fileext = ".safetensors")
  xf <- tempfile(fileext = ".csv")
  outf <- tempfile(fileext = ".csv")
  write.table(x, xf, sep = ",", row.names = FALSE, col.names = FALSE)
  ag_save_model(m, f)
  # Python loads R's file (rebuilding from the config), predicts, saves it again
  res <- py_run(sprintf(paste(
    "import numpy as np, json, pyggmlr as p",
    "m = p.ag_load_model(%s)",
    "x = np.loadtxt(%s, delimiter=',', ndmin=2)",
    "np.savetxt(%s, p.ag_predict(m, x), delimiter=',', fmt='%%.17g')",
    "print(json.dumps(m.to_config()))",
    "print(m.layers[1].running_var.numpy()[0, 0])",
    "m.layers[0].b.data = m.layers[0].b.numpy() + 1.0",
    "p.ag_save_model(m, %s)", sep = "\n"), shQuote(f), shQuote(xf), shQuote(outf), shQuote(g)))
  expect_equal(res$status, 0L, info = paste(res$out, collapse = "\n"))
  py_pred <- as.matrix(read.csv(outf, header = FALSE))
  dimnames(py_pred) <- NULL
  expect_equal(py_pred, ag_predict(m, x), tolerance = 1e-5)
  expect_equal(jsonlite::fromJSON(res$out[1], simplifyVector = FALSE),
               jsonlite::fromJSON(.to_json(ag_to_config(m)), simplifyVector = FALSE))
  expect_equal(as.numeric(res$out[2]), m$layers[[2]]$running_var[1, 1], tolerance = 1e-6)
  # R loads Python's file
  m2 <- ag_load_model(g)
  expect_equal(m2$parameters()$layer1_b$data, m$parameters()$layer1_b$data + 1, tolerance = 1e-6)
  expect_identical(m2$parameters()$layer4_W$data, m$parameters()$layer4_W$data)
  expect_identical(m2$layers[[2]]$running_mean, m$layers[[2]]$running_mean)
  expect_false(m2$training)
  # a Python model with optimizer state (f64) loads in R with its Adam moments
  h <- tempfile(fileext = ".safetensors")
  res <- py_run(sprintf(paste(
    "import numpy as np, pyggmlr as p",
    "p.ag_dtype('f64')",
    "p.ggml_set_seed(1)",
    "m = p.ag_sequential(p.ag_linear(2, 3, 'tanh'), p.ag_linear(3, 1))",
    "opt = p.optimizer_adam(m.parameters(), lr=0.1)",
    "x = np.array([[1.0, 2.0], [0.5, -1.0]])",
    "for _ in range(2):",
    "    with p.with_grad_tape():",
    "        l = p.ag_mean(m.forward(x))",
    "    opt.step(p.backward(l)); opt.zero_grad()",
    "p.ag_save_model(m, %s, optimizer=opt, epoch=2)",
    "print(repr(float(opt.state()['slots']['m'][0][1, 0])))", sep = "\n"), shQuote(h)))
  expect_equal(res$status, 0L, info = paste(res$out, collapse = "\n"))
  local_f64()
  m3 <- ag_sequential(ag_linear(2, 3, "tanh"), ag_linear(3, 1))
  o3 <- optimizer_adam(m3$parameters(), lr = 0.1)
  ag_load_model(h, model = m3, optimizer = o3)
  expect_equal(o3$t, 2L)
  expect_equal(o3$state()$slots$m$layer1_W[2, 1], as.numeric(res$out[length(res$out)]),
               tolerance = 1e-15)
  expect_true(o3$state()$slots$m$layer1_W[2, 1] != 0)
  expect_equal(ag_model_info(h)$epoch, 2)
})

test_that("R writes the same bytes as Python for the same input (one writer, in the core)", {
  # nolint start: line_length_linter. (the golden file's bytes, as in tests/test_io.py)
  gold <- paste0("d0000000000000007b225f5f6d657461646174615f5f223a7b22666f726d6174223a22707967676d6c722e61675f6d6f64656c222c22636f6e666967",
                 "223a227b5c22615c223a5c225c75303066635c227d227d2c226c61796572315f57223a7b226474797065223a22463332222c227368617065223a5b32",
                 "2c335d2c22646174615f6f666673657473223a5b302c32345d7d2c226361665c7530306539223a7b226474797065223a22463634222c227368617065",
                 "223a5b322c315d2c22646174615f6f666673657473223a5b32342c34305d7d7d202020200000803f0000004000004040000080400000a0400000c040",
                 "000000000000e03f00000000000000c0")  # tests/io/test_io.py's _GOLDEN_FILE
  # nolint end
  f <- tempfile(fileext = ".safetensors")
  w <- matrix(c(1, 2, 3, 4, 5, 6), 2, 3, byrow = TRUE)
  write_safetensors(f, list(list(name = "layer1_W", value = w, dtype = "F32"),
                            list(name = "caf\u00e9", value = matrix(c(0.5, -2), 2, 1),
                                 dtype = "F64")),
                    list(format = "pyggmlr.ag_model", config = "{\"a\":\"\u00fc\"}"))
  expect_identical(paste(as.character(readBin(f, "raw", file.info(f)$size)), collapse = ""), gold)
  r <- read_safetensors(f)
  expect_identical(unname(r$tensors$layer1_W[, ]), w)
  expect_identical(attr(r$tensors[["caf\u00e9"]], "dtype"), "F64")
  expect_identical(r$meta$config, "{\"a\":\"\u00fc\"}")
})

test_that(paste0("hostile config sizes are refused before building, as in Python (the guard is ",
                 "in the core)"), {
  f <- tempfile(fileext = ".safetensors")
  deep <- paste0(strrep("[", 70), "1", strrep("]", 70))
  for (case in list(c("{\"type\":\"linear\",\"in_features\":50000,\"out_features\":50000}",
                      "implausible layer size"),
                    c("{\"type\":\"linear\",\"in_features\":4,\"out_features\":1e9}",
                      "implausible size"),
                    c(paste0("{\"type\":\"linear\",\"x\":", deep, "}"), "nested too deeply"),
                    c("{\"type\":\"linear\",\"a\":1,\"a\":2}", "duplicate key"))) {
    write_safetensors(f, list(),
                      list(format = "pyggmlr.ag_model", format_version = "1", parameters = "[]",
                           buffers = "[]", config = case[[1]]))
    expect_error(ag_load_model(f), case[[2]])
  }
})

test_that(paste0("mutated files (bit flips, truncation, byte edits) only ever give file errors; ",
                 "a refused load changes nothing"), {
  set.seed(11)
  m <- mlp()
  opt <- optimizer_adam(m$parameters(), lr = 0.01)
  f <- tempfile(fileext = ".safetensors")
  ag_save_model(m, f, optimizer = opt, epoch = 3, extra = list(note = "fuzz"))
  raw <- readBin(f, "raw", file.info(f)$size)
  n <- sum(as.numeric(raw[1:8]) * 256^(0:7))
  bad <- tempfile(fileext = ".safetensors")
  target <- mlp()
  before <- lapply(target$parameters(), function(p) p$data)
  refused <- 0L
  for (i in 1:300) {
    b <- raw
    kind <- i %% 4L
    if (kind == 0L) b <- b[seq_len(sample.int(length(b), 1L) - 1L)]
    else if (kind == 1L) { k <- sample.int(8L + n, 1L); b[k] <- xor(b[k],
        as.raw(2^sample(0:7, 1L))) }
    else if (kind == 2L) { k <- sample.int(8L + n, 2L); b[k] <- as.raw(sample(0:255, 2L)) }
    else b[sample.int(8L, 1L)] <- as.raw(sample(0:255, 1L))
    writeBin(b, bad)
    r <- tryCatch({ ag_load_model(bad, model = target); "loaded" },
                  error = function(e) conditionMessage(e))
    if (!identical(r, "loaded")) {
      refused <- refused + 1L
      expect_true(startsWith(r, bad) || startsWith(r, paste0("ag_load_model(): ", bad)) ||
                  grepl("mismatch", r), info = r)
      expect_identical(lapply(target$parameters(), function(p) p$data), before)
    } else {
      before <- lapply(target$parameters(), function(p) p$data)
    }
  }
  expect_gt(refused, 150L)
})
