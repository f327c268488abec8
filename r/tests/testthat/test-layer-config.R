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
