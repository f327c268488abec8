# ag_module_from_config's checks are the core's layer table (native/layer_config.c): the same
# texts as Python's (tests/nn/test_nn.py, tests/parity's config case)

test_that("the core's table words every refusal, as in Python", {
  lin <- list(type = "linear", in_features = 2, out_features = 3)
  pre <- "ag_module_from_config: bad arguments for a 'linear' layer: "
  refused <- function(edit, text) {
    cfg <- utils::modifyList(lin, edit)
    e <- tryCatch({ ag_module_from_config(cfg); NULL }, error = function(e) e)
    expect_s3_class(e, "pyggmlr_value_error")
    expect_true(startsWith(conditionMessage(e), paste0(pre, text)), info = conditionMessage(e))
  }
  size <- "in_features must be a whole number in [1, 2147483647], got "
  refused(list(in_features = 2.5), paste0(size, "2.5"))
  refused(list(in_features = "4"), paste0(size, "\"4\""))
  refused(list(in_features = TRUE), paste0(size, "true"))
  refused(list(gain = NaN), "gain must be a finite number, got null")
  refused(list(gain = new.env()), "gain must be a finite number, got \"")
  refused(list(activation = "swish"),
          paste("activation must be one of \"gelu\", \"relu\", \"sigmoid\", \"softmax\",",
                "\"tanh\" or null"))
  refused(list(bogus = 1, x = list(1)), "unknown arguments 'bogus', 'x'")
  expect_error(ag_module_from_config(list(type = "dropout")),
               "^ag_module_from_config: bad arguments for a 'dropout' layer: rate is missing$",
               class = "pyggmlr_value_error")
  expect_error(ag_module_from_config(list(type = "multihead_attention", d_model = 6, n_heads = 4)),
               "d_model (6) must be divisible by n_heads (4)", fixed = TRUE,
               class = "pyggmlr_value_error")
  expect_error(ag_module_from_config(list(type = "sequential", layers = list(), name = "x")),
               "^ag_module_from_config: a sequential config", class = "pyggmlr_value_error")
  expect_error(ag_module_from_config(list(types = "linear")), "with a 'type' entry",
               class = "pyggmlr_value_error")
  # a list that repeats a name is not a config
  expect_error(ag_module_from_config(list(type = "dropout", rate = 0.1, rate = 0.2)),
               "not valid JSON", class = "pyggmlr_value_error")
})

test_that("the core fills the defaults and the types agree with the constructors", {
  expect_identical(.Call(pyggmlr:::R_pg_layer_types),
                   c("sequential", sort(names(pyggmlr:::.BUILDERS))))
  expect_true(all(vapply(pyggmlr:::.BUILDERS, exists, logical(1),
                         envir = asNamespace("pyggmlr"), inherits = FALSE)))
  m <- ag_module_from_config(list(type = "linear", in_features = 2L, out_features = 3))
  expect_identical(m$to_config(), list(type = "linear", in_features = 2L, out_features = 3L,
                                       activation = NULL, init = "glorot_uniform", gain = 1))
  bn <- ag_module_from_config(list(type = "batch_norm", num_features = 4))
  expect_identical(c(bn$eps, bn$momentum), c(1e-5, 0.1))
  mha <- ag_module_from_config(list(type = "multihead_attention", d_model = 4, n_heads = 2,
                                    bias = FALSE))
  expect_null(mha$b_o)
  expect_error(ag_register_layer("sequential", function(cfg) NULL), "built-in")
})

test_that("the config API's argument refusals are the core's texts, as Python's", {
  msg <- function(expr) tryCatch({ expr; "" }, error = function(e)
    c(class(e)[[1L]], conditionMessage(e)))
  expect_identical(msg(ag_register_layer("my_layer", 5)),
                   c("pyggmlr_argument_error",
                     "ag_register_layer: builder must be a function (cfg -> layer)"))
  expect_identical(msg(ag_register_layer("", function(cfg) NULL)),
                   c("pyggmlr_argument_error",
                     "ag_register_layer: type must be a non-empty string"))
  expect_identical(msg(ag_to_config(1)),
                   c("pyggmlr_argument_error",
                     "ag_to_config: the model has no to_config() (got numeric)"))
  ag_register_layer("test_returns_42", function(cfg) 42)
  expect_identical(msg(ag_module_from_config(list(type = "test_returns_42"))),
                   c("pyggmlr_argument_error",
                     paste0("ag_module_from_config: the builder registered for 'test_returns_42' ",
                            "returned a numeric, not a layer with forward()")))
})

# R's jsonlite-based config writer before the glue took every value (r/src/r_cfg_json.c): the
# reference the glue's text is held to
ref_num <- function(x) {
  for (d in 15:17) {
    s <- sprintf("%.*g", d, x)
    if (as.numeric(s) == x) break
  }
  structure(s, class = "json")
}
ref_clean <- function(v) {
  if (is.factor(v)) v <- as.character(v)
  if (!is.null(v) && !(is.list(v) && !is.data.frame(v)) && !is.logical(v) && !is.numeric(v) &&
      !is.character(v)) stop("not JSON")
  if (is.list(v)) return(`names<-`(lapply(v, ref_clean), names(v)))
  if (!is.double(v)) return(v)
  v <- lapply(as.list(v), function(x) if (is.finite(x)) ref_num(x) else NULL)
  if (length(v) == 1L) v[[1L]] else v
}
ref_json <- function(v) as.character(jsonlite::toJSON(ref_clean(v), auto_unbox = TRUE,
                                                       null = "null", na = "null", digits = NA,
                                                       json_verbatim = TRUE))
ref_cfg <- function(cfg) {
  val <- function(v) {
    if (pyggmlr:::.nested_over(v, 8L)) return(ref_json("a list nested deeper than 8 levels"))
    tryCatch(ref_json(v), error = function(e) ref_json(pyggmlr:::.arg_show(v)))
  }
  paste0("{", paste(vapply(seq_along(cfg), function(i)
    paste0(ref_json(names(cfg)[[i]]), ": ", val(cfg[[i]])), ""), collapse = ", "), "}")
}

test_that("the glue's config writer gives R's former writer's JSON values", {
  fast <- pyggmlr:::.cfg_json
  same <- function(cfg, text = TRUE) {  # text: the same bytes too (ASCII; R's writer kept UTF-8)
    js <- fast(cfg)
    expect_identical(jsonlite::parse_json(js), jsonlite::parse_json(ref_cfg(cfg)))
    if (text) expect_identical(js, ref_cfg(cfg))
  }
  same(list(type = "linear", in_features = 4L, out_features = 64, activation = "relu",
            gain = 1 / 3, bias = TRUE, init = NULL))
  same(list(type = "conv2d", kernel_size = c(3, 5), stride = 1L, padding = "same",
            dilation = c(2L, 1L), input_shape = c(1, 8, 8)))
  same(list(a = NA, b = NA_real_, c = Inf, d = -Inf, e = NaN, f = NA_character_, g = NA_integer_,
            h = c(1, NA, 3), i = logical(0), j = character(0), k = numeric(0)))
  same(list(s = "quote \" back \\ tab \t nl \n", u = "\u00e9\u4e2d\U0001F600",
            f = factor("b", c("a", "b")), ff = factor(c("x", "y", "x"))), text = FALSE)
  expect_identical(fast(list(u = "\u00e9")), "{\"u\": \"\\u00e9\"}")  # Python's json.dumps
  same(list(x = 1e-300, y = 2^60, z = .Machine$double.xmax, w = -0.1, v = 123456789.123456789,
            big = 2147483647L, neg = -5L))
  same(list(nest = list(a = list(1, 2, list(b = "c")), e = list()),
            named_empty = setNames(list(), character(0))))
  # values beyond the plain writer: as a file's JSON, or described (.arg_show) for the table
  same(list(e = new.env()))
  same(list(f = function(x) x))
  same(list(m = matrix(1:4, 2), v = c(a = 1, b = 2), l = list(a = 1, 2)), text = FALSE)
  same(list(d = as.Date("2020-01-01"), w = data.frame(a = 1)))
  deep <- 1
  for (i in 1:10) deep <- list(deep)
  same(list(d = deep))
  expect_identical(fast(setNames(list(), character(0))), "{}")
  # every built-in layer's config, through the core's table, either way
  layers <- list(ag_linear(3, 4, "gelu"), ag_conv2d(1, 4, 3, input_shape = c(1, 8, 8)),
                 ag_max_pool2d(2), ag_lstm(3, 5, return_sequences = TRUE), ag_dropout(0.25),
                 ag_batch_norm(4), ag_embedding(10, 4), ag_multihead_attention(8, 2))
  for (l in layers) {
    cfg <- l$to_config()
    same(cfg)
    st <- c(-1, -1, -1, -1)
    expect_identical(.Call(pyggmlr:::R_pg_layer_shape, fast(cfg), st, NULL),
                     .Call(pyggmlr:::R_pg_layer_shape, ref_cfg(cfg), st, NULL))
  }
})

test_that("a convolution's pair in a config is a number or a list of two, as Python's", {
  # jsonlite reads [3] as list(3), which the constructor had taken as 3 (Python refused it)
  expect_error(ag_module_from_config('{"type": "conv2d", "in_channels": 1, "out_channels": 2,
                                       "kernel_size": [3]}'),
               paste("ag_module_from_config: bad arguments for a 'conv2d' layer: kernel_size must",
                     "be a whole number >= 1 or a list of two, got [3]"),
               fixed = TRUE, class = "pyggmlr_value_error")
  expect_identical(ag_module_from_config('{"type": "max_pool2d", "kernel_size": [3]}')$kernel_size,
                   ag_max_pool2d(3)$kernel_size)  # a pool's: one or two
})
