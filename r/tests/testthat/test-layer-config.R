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

test_that("the glue's config writer and R's own give the same JSON values", {
  fast <- function(cfg) .Call(pyggmlr:::R_pg_cfg_json, cfg)
  same <- function(cfg, text = TRUE) {  # text: the same bytes too (ASCII; R's writer keeps UTF-8)
    js <- fast(cfg)
    expect_false(is.null(js))
    expect_identical(jsonlite::parse_json(js), jsonlite::parse_json(pyggmlr:::.cfg_json_r(cfg)))
    if (text) expect_identical(js, pyggmlr:::.cfg_json_r(cfg))
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
  # values only R's writer can take: the glue hands them back (NULL)
  expect_null(fast(list(e = new.env())))
  expect_null(fast(list(f = function(x) x)))
  expect_null(fast(list(m = matrix(1:4, 2))))
  expect_null(fast(list(v = c(a = 1, b = 2))))
  expect_null(fast(list(l = list(a = 1, 2))))
  expect_null(fast(list(1, 2)))
  deep <- 1
  for (i in 1:10) deep <- list(deep)
  expect_null(fast(list(d = deep)))
  expect_identical(pyggmlr:::.cfg_json(list(d = deep)), pyggmlr:::.cfg_json_r(list(d = deep)))
  # every built-in layer's config, through the core's table, either way
  layers <- list(ag_linear(3, 4, "gelu"), ag_conv2d(1, 4, 3, input_shape = c(1, 8, 8)),
                 ag_max_pool2d(2), ag_lstm(3, 5, return_sequences = TRUE), ag_dropout(0.25),
                 ag_batch_norm(4), ag_embedding(10, 4), ag_multihead_attention(8, 2))
  for (l in layers) {
    cfg <- l$to_config()
    same(cfg)
    st <- c(-1, -1, -1, -1)
    expect_identical(.Call(pyggmlr:::R_pg_layer_shape, fast(cfg), st),
                     .Call(pyggmlr:::R_pg_layer_shape, pyggmlr:::.cfg_json_r(cfg), st))
  }
})
