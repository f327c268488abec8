# Issue 28 (as tests/io/test_io_limits.py and tests/hostile/test_hostile_sizes.py): a small file
# whose config declares layers its tensors cannot back is refused before a layer is built;
# configs and extra nested without end are classed errors, not C stack overflows; save errors
# are classed and name the path; layer constructors name themselves and the size when memory
# runs out; a ggmlR RDS container's closure runs only with trust = TRUE.

il_meta <- function(path, fn) {  # rewrite a model file's __metadata__ with fn(meta)
  data <- readBin(path, "raw", file.info(path)$size)
  n <- sum(as.numeric(data[1:8]) * 256^(0:7))
  h <- jsonlite::parse_json(rawToChar(data[9:(8 + n)]), simplifyVector = FALSE)
  h$`__metadata__` <- fn(h$`__metadata__`)
  hb <- charToRaw(as.character(jsonlite::toJSON(h, auto_unbox = TRUE, digits = NA)))
  hb <- c(hb, rep(charToRaw(" "), (8 - length(hb) %% 8) %% 8))
  lb <- as.raw(vapply(0:7, function(k) (length(hb) %/% 256^k) %% 256, 0))
  writeBin(c(lb, hb, data[-(1:(8 + n))]), path)
}
il_cfg <- function(path, edit) il_meta(path, function(m) {
  cfg <- jsonlite::parse_json(m$config, simplifyVector = FALSE)
  m$config <- as.character(jsonlite::toJSON(edit(cfg), auto_unbox = TRUE, null = "null",
                                            digits = NA))
  m
})
# a child Rscript under a 4 GB address-space limit (a size the memory check lets through
# fails there, not in the test runner); its output lines
il_child <- function(lines) {
  script <- tempfile(fileext = ".R")
  writeLines(c("suppressMessages(library(pyggmlr))", lines), script)
  cmd <- sprintf("ulimit -v 4000000; exec %s %s 2>&1", shQuote(file.path(R.home("bin"), "Rscript")),
                 shQuote(script))
  suppressWarnings(system2("bash", c("-c", shQuote(cmd)), stdout = TRUE, timeout = 300))
}

test_that("a config the file's tensors cannot back is refused before any layer is built", {
  skip_on_os("windows")
  f <- tempfile(fileext = ".st")
  ag_save_model(ag_sequential(ag_multihead_attention(4, 2)), f)
  il_cfg(f, function(cfg) {
    cfg$layers[[1]]$d_model <- 11585L  # 2 GB of weights, within the old size budget
    cfg$layers[[1]]$n_heads <- 5L
    cfg
  })
  expect_lt(file.info(f)$size, 1024)
  out <- il_child(c(sprintf("e <- tryCatch(ag_load_model('%s'), error = identity)", f),
                    "cat(class(e)[[1L]], conditionMessage(e), sep = '\\n')",
                    "cat(sum(gc()[, 6L]) < 600, '\\n')"))  # max MB used by R
  expect_identical(out[[1L]], "pyggmlr_value_error")
  expect_true(startsWith(out[[2L]], sprintf("ag_load_model(): %s: architecture config", f)))
  expect_match(out[[2L]], "'layer1_W_q' [11585x11585] (134212225 values), the file holds [4x4]",
               fixed = TRUE)
  expect_identical(trimws(out[[3L]]), "TRUE")
})

test_that("the config is matched layer by layer; every built-in layer still round-trips", {
  m <- ag_sequential(ag_linear(3, 4), ag_batch_norm(4), ag_dropout(0.1))
  f <- tempfile(fileext = ".st")
  ag_save_model(m, f)
  il_cfg(f, function(cfg) { cfg$layers[[2]]$num_features <- 5L; cfg })
  expect_error(ag_load_model(f), "'layer2_gamma' [5x1] (5 values), the file holds [4x1]",
               fixed = TRUE, class = "pyggmlr_value_error")
  ag_save_model(m, f)
  il_cfg(f, function(cfg) {
    cfg$layers[[4]] <- list(type = "embedding", vocab_size = 9L, dim = 2L)
    cfg
  })
  expect_error(ag_load_model(f), "'layer4_weight' [2x9] (18 values), which the file does not hold",
               fixed = TRUE)
  all <- ag_sequential(ag_linear(3, 4, "relu"), ag_batch_norm(4), ag_layer_norm(4),
                       ag_layer_norm(4, elementwise_affine = FALSE),
                       ag_sequential(ag_embedding(5, 4), ag_dropout(0.2)),
                       ag_multihead_attention(4, 2), ag_multihead_attention(4, 1, bias = FALSE))
  ag_save_model(all, f)
  back <- ag_load_model(f)
  expect_identical(lapply(back$parameters(), function(t) t$data),
                   lapply(all$parameters(), function(t) t$data))
})

test_that("deep configs are classed errors, not C stack overflows", {
  nested <- function(n) {
    cfg <- list(type = "dropout", rate = 0.1)
    for (i in seq_len(n)) cfg <- list(type = "sequential", layers = list(cfg))
    cfg
  }
  expect_error(ag_module_from_config(nested(300)), "nested deeper than 64 levels", fixed = TRUE,
               class = "pyggmlr_value_error")
  js <- paste0(strrep('{"type":"sequential","layers":[', 3000), '{"type":"dropout","rate":0.1}',
               strrep("]}", 3000))
  expect_error(ag_module_from_config(js), "nested deeper than 128", class = "pyggmlr_value_error")
  deep <- list()
  for (i in 1:5000) deep <- list(a = deep)
  expect_error(ag_module_from_config(deep), "a list nested deeper than 8 levels", fixed = TRUE)
  expect_length(ag_module_from_config(nested(60))$layers, 1L)
})

test_that("extra nested deeper than the loader reads is refused, nothing written", {
  m <- ag_sequential(ag_linear(2, 2))
  f <- tempfile(fileext = ".st")
  deep <- list()
  for (i in 1:5000) deep <- list(deep)
  expect_error(ag_save_model(m, f, extra = deep), "nested deeper than 128 levels", fixed = TRUE,
               class = "pyggmlr_value_error")
  expect_false(file.exists(f))
  ok <- list(1)
  for (i in 1:120) ok <- list(ok)
  ag_save_model(m, f, extra = list(x = ok))
  expect_true(is.list(ag_model_info(f)$extra$x))
})

test_that("save errors are classed and name the path, with errno", {
  m <- ag_sequential(ag_linear(2, 2))
  f <- file.path(tempfile(), "m.st")
  e <- tryCatch(ag_save_model(m, f), error = identity)
  expect_s3_class(e, "pyggmlr_io_error")
  expect_identical(e$path, f)
  expect_identical(e$errno, 2L)  # ENOENT
  expect_match(conditionMessage(e), f, fixed = TRUE)
  skip_on_os(c("windows", "mac"))
  e <- tryCatch(ag_save_model(m, "/sys/pyggmlr-test.st"), error = identity)
  expect_s3_class(e, "pyggmlr_io_error")
  expect_true(e$errno %in% c(1L, 13L))  # the errno of EPERM or EACCES
  expect_match(conditionMessage(e), "/sys/pyggmlr-test.st", fixed = TRUE)
})

test_that("the metadata epoch takes ASCII digits only, as in Python", {
  m <- ag_sequential(ag_linear(2, 2))
  f <- tempfile(fileext = ".st")
  for (ep in c("\u00b2", "\u0663", "3a", "1234567890123")) {
    ag_save_model(m, f, epoch = 3)
    il_meta(f, function(meta) { meta$epoch <- ep; meta })
    expect_error(ag_load_model(f), "metadata 'epoch' is not a non-negative integer", fixed = TRUE,
                 class = "pyggmlr_value_error")
    expect_null(ag_model_info(f)$epoch)
  }
})

test_that("the epoch's text is the core's, whole, and nothing is written (as in Python)", {
  m <- ag_linear(2, 3)
  f <- tempfile(fileext = ".st")
  rule <- paste("ag_save_model(): epoch must be an integer in [0, 1e12)",
                "(what ag_load_model reads back), got")
  cases <- list(list(-1, "value", "-1"), list(1.5, "value", "1.5"), list("a", "argument", '"a"'),
                list(NA, "argument", "NA"), list(NA_real_, "value", "NA_real_"),
                list(1e12, "value", "1e+12"), list(1e300, "value", "1e+300"))
  for (cs in cases) {
    e <- tryCatch(ag_save_model(m, f, epoch = cs[[1]]), error = function(e) e)
    expect_s3_class(e, paste0("pyggmlr_", cs[[2]], "_error"))
    expect_identical(conditionMessage(e), paste(rule, cs[[3]]))
    expect_false(file.exists(f))
  }
  ag_save_model(m, f, epoch = 999999999999)
  expect_identical(ag_model_info(f)$epoch, 999999999999)
})

test_that("layer constructors name themselves and the size when memory runs out", {
  skip_on_os(c("windows", "mac"))
  cases <- c("ag_batch_norm(2e9)" = "ag_batch_norm: out of memory .*num_features = 2000000000",
             "ag_layer_norm(2e9)" = "ag_layer_norm: out of memory .*normalized_shape = 2000000000",
             "ag_embedding(2e9, 2)" = "ag_embedding: out of memory .*2000000000",
             "ag_linear(2e9, 1)" = "ag_linear: out of memory .*2000000000",
             "ag_multihead_attention(40000, 2)" = "ag_multihead_attention: out of memory .*40000")
  out <- il_child(c("before <- ag_live_objects()",
                    sprintf(paste0("e <- tryCatch(%s, error = identity); ",
                                   "cat(class(e)[[1L]], '|', conditionMessage(e), '\\n')"),
                            names(cases)),
                    "invisible(gc()); cat('LIVE', ag_live_objects() == before, '\\n')"))
  expect_identical(trimws(out[[length(out)]]), "LIVE TRUE")
  for (i in seq_along(cases)) {
    expect_match(out[[i]], "^pyggmlr_memory_error \\| ", info = names(cases)[[i]])
    expect_match(out[[i]], cases[[i]], info = names(cases)[[i]])
  }
})

test_that("a non-ggmlR RDS file is refused naming the function and the path", {
  f <- tempfile(fileext = ".rds")
  saveRDS(list(a = 1), f)
  expect_error(ag_load_model(f), sprintf(paste0("ag_load_model(): file is not a ggmlR ag_state ",
                                               "container. (%s: an R data file"), f),
               fixed = TRUE, class = "pyggmlr_value_error")
})

# a linear layer (2 -> 3) whose config says out_features = out, with extra buffers
io_wrong <- function(out, bufs = list(), cfg = NULL) {
  lin <- ag_linear(2L, 3L)
  list(parameters = lin$params, buffers = function() bufs,
       to_config = function() if (is.null(cfg)) list(type = "linear", in_features = 2L,
                                                     out_features = out) else cfg)
}

test_that("ag_save_model's config check: the core's text, as Python's (test_io_limits.py)", {
  pre <- "ag_save_model(): the model's architecture config would not load back"
  f <- tempfile(fileext = ".st")
  e <- tryCatch(ag_save_model(io_wrong(4L), f), error = function(e) e)
  expect_s3_class(e, "pyggmlr_value_error")
  expect_identical(conditionMessage(e), paste0(
    pre, ": it rebuilds parameters 'W' 4x2, 'b' 4x1, the model has 'W' 3x2, 'b' 3x1; ",
    "nothing was written"))
  e <- tryCatch(ag_save_model(io_wrong(3L, list(rm = ag_tensor(matrix(0, 3, 1)))), f),
                error = function(e) e)
  expect_identical(conditionMessage(e), paste0(
    pre, ": it rebuilds buffers none, the model has 'rm' 3x1; nothing was written"))
  # the rebuild fails: R's reason inside the core's text
  expect_error(ag_save_model(io_wrong(3L, cfg = list(type = "linear", in_features = 2L)), f),
               paste0(pre, " (ag_module_from_config: "), fixed = TRUE)
  expect_error(ag_save_model(io_wrong(3L, cfg = list(type = "linear", in_features = 2L,
                                                     x = 1e6)), f),
               "(architecture config has", fixed = TRUE)
  expect_false(file.exists(f))
})

test_that("a config that passed is not rebuilt again; a refused one stays refused", {
  f <- tempfile(fileext = ".st")
  cnt <- new.env()
  cnt$n <- 0L
  bump <- function() cnt$n <- cnt$n + 1L
  trace("ag_module_from_config", bquote(.(bump)()), print = FALSE,
        where = asNamespace("pyggmlr"))
  on.exit(untrace("ag_module_from_config", where = asNamespace("pyggmlr")), add = TRUE)
  m <- io_wrong(3L, cfg = list(type = "linear", in_features = 2L, out_features = 3L,
                               activation = "tanh"))
  ag_save_model(m, f)
  ag_save_model(m, f)
  expect_identical(cnt$n, 1L)
  for (i in 1:2) expect_error(ag_save_model(io_wrong(5L), f), "it rebuilds parameters 'W' 5x2",
                              fixed = TRUE)
  expect_identical(cnt$n, 3L)
})

test_that("a config R cannot build: the core's text, naming the file (as test_io_limits.py)", {
  f <- tempfile(fileext = ".st")
  ag_save_model(ag_sequential(ag_linear(2L, 3L)), f)
  cfg <- '{"type": "sequential", "layers": [{"type": "no_such_layer"}]}'
  il_meta(f, function(meta) { meta$config <- cfg; meta })
  expect_error(ag_load_model(f),
               sprintf("%s: cannot rebuild the model from its architecture config: ", f),
               fixed = TRUE, class = "pyggmlr_value_error")
})

test_that("a model file's JSON: the glue's writer, jsonlite's layout, the core's refusals", {
  js <- function(v) pyggmlr:::.to_json(v, "extra")
  expect_identical(js(list(a = 1L, b = c(x = 0.1, y = 2), m = matrix(1:4, 2), n = NULL, s = NA,
                           f = factor("k"), e = list(), l = list(1, "2", TRUE), z = c(Inf, -1))),
                   paste0("{\"a\":1,\"b\":{\"x\":0.1,\"y\":2},\"m\":[[1,3],[2,4]],\"n\":null,",
                          "\"s\":null,\"f\":\"k\",\"e\":[],\"l\":[1,\"2\",true],\"z\":[null,-1]}"))
  expect_identical(js(list(1 / 3, structure("{\"v\":1}", class = "json"))),
                   "[0.3333333333333333,{\"v\":1}]")
  expect_identical(js(list(a = 1, 2)), "{\"a\":1,\"2\":2}")  # jsonlite's key for no name
  for (bad in list(as.Date("2020-01-01"), new.env(), data.frame(a = 1), quote(x)))
    expect_error(js(list(v = bad)), paste0("^ag_save_model\\(\\): extra must be JSON-serialisable ",
                                           "\\(a \\S+ cannot be written as JSON\\)$"),
                 class = "pyggmlr_argument_error")
  deep <- 1
  for (i in 1:130) deep <- list(deep)
  expect_error(js(deep), "extra is nested deeper than 128 levels", class = "pyggmlr_value_error")
  # a "bytes" string has no text to write: classed (translating it was R's unclassed error)
  b <- "\xff\xfe"
  Encoding(b) <- "bytes"
  named <- list(1)
  names(named) <- b
  for (v in list(list(s = b), named, list(f = factor(b))))
    expect_error(js(v), "(a string in \"bytes\" encoding cannot be written as JSON)", fixed = TRUE,
                 class = "pyggmlr_argument_error")
  expect_error(pyggmlr:::.cfg_json(named), "a config key is a string in \"bytes\" encoding",
               fixed = TRUE, class = "pyggmlr_argument_error")
})
