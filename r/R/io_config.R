# Architectures as configs (io.R's files hold one as JSON): the built-in layer builders,
# ag_register_layer for custom ones, ag_module_from_config and ag_to_config, as in Python's nn.py

ag_register_layer <- function(type, builder) {
  if (!.is_str(type) || !nzchar(type))
    .pg_stop("argument", "ag_register_layer(): type must be a non-empty string")
  if (type %in% c("sequential", names(.BUILDERS)))
    .pg_stop("value", sprintf("ag_register_layer(): \"%s\" is a built-in layer type", type))
  if (!is.function(builder))
    .pg_stop("argument", "ag_register_layer(): builder must be a function (cfg) -> layer")
  .pg$layer_builders[[type]] <- builder
  invisible(builder)
}

# A layer's arguments from a config. The builders' refusals are raised within
# .module_from_config's handler, which names ag_module_from_config and the layer (classed
# pyggmlr_value_error, as Python's from_config). Sizes go to the layer constructors as they are:
# their integer rule refuses 2.5 or "4", as Python's from_config does.
.cfg_stop <- function(fmt, ...) .arg_fail("value", fmt, ...)
.cfg_show <- function(v) tryCatch(.to_json(v), error = function(e) .arg_show(v))
.cfg_num <- function(v, what) {
  if (!is.numeric(v) || length(v) != 1L || is.na(v))
    .cfg_stop("%s must be a number, got %s", what, .cfg_show(v))
  as.double(v)
}

.BUILDERS <- list(
  linear = list(args = c("in_features", "out_features", "activation", "init", "gain"),
                build = function(a) {
    act <- a$activation
    if (!is.null(act) &&
        (!.is_str(act) || !act %in% c("relu", "sigmoid", "tanh", "softmax", "gelu")))
      .cfg_stop("activation must be one of gelu, relu, sigmoid, softmax, tanh or null, got %s",
                .cfg_show(act))
    init <- if (is.null(a$init)) "glorot_uniform" else a$init
    if (!.is_str(init) || !init %in% c("glorot_uniform", "orthogonal"))
      .cfg_stop("init must be \"glorot_uniform\" or \"orthogonal\", got %s", .cfg_show(init))
    ag_linear(a$in_features, a$out_features, act,
              init = init,
              gain = if (is.null(a$gain)) 1 else .cfg_num(a$gain, "gain"))
  }),
  dropout = list(args = "rate", build = function(a) {
    r <- .cfg_num(a$rate, "rate")
    if (r < 0 || r >= 1) .cfg_stop("rate must satisfy 0 <= rate < 1, got %s", format(r))
    ag_dropout(r)
  }),
  batch_norm = list(args = c("num_features", "eps", "momentum"), build = function(a)
    ag_batch_norm(a$num_features,
                  eps = if (is.null(a$eps)) 1e-5 else .cfg_num(a$eps, "eps"),
                  momentum = if (is.null(a$momentum)) 0.1 else .cfg_num(a$momentum, "momentum"))),
  layer_norm = list(args = c("normalized_shape", "num_features", "eps", "elementwise_affine"),
                    build = function(a) {
    aff <- if (is.null(a$elementwise_affine)) TRUE else a$elementwise_affine
    if (!is.logical(aff) || length(aff) != 1L || is.na(aff))
      .cfg_stop("elementwise_affine must be true or false")
    # num_features: older files
    d <- if (is.null(a$normalized_shape)) a$num_features else a$normalized_shape
    # a whole number here: ag_layer_norm truncates as ggmlR's as.integer(), a file's size must not
    ag_layer_norm(.arg_int(d, "ag_layer_norm", "normalized_shape", 1L),
                  eps = if (is.null(a$eps)) 1e-5 else .cfg_num(a$eps, "eps"),
                  elementwise_affine = aff)
  }),
  embedding = list(args = c("vocab_size", "dim"), build = function(a)
    ag_embedding(a$vocab_size, a$dim)),
  multihead_attention = list(args = c("d_model", "n_heads", "dropout", "bias"),
                             build = function(a) {
    bias <- if (is.null(a$bias)) TRUE else a$bias
    if (!is.logical(bias) || length(bias) != 1L || is.na(bias))
      .cfg_stop("bias must be true or false")
    ag_multihead_attention(a$d_model, a$n_heads,
                           dropout = if (is.null(a$dropout)) 0 else .cfg_num(a$dropout, "dropout"),
                           bias = bias)
  }))

ag_module_from_config <- function(cfg) {
  if (is.character(cfg) && length(cfg) == 1L && !is.na(cfg)) {
    # the core's parser first: its nesting limit keeps jsonlite and the walk off R's C stack
    bad <- .Call(R_pg_json_check, enc2utf8(cfg), "cfg", 0)
    if (!is.null(bad)) .pg_stop("value", sprintf("ag_module_from_config(): %s", bad))
    cfg <- tryCatch(jsonlite::parse_json(cfg, simplifyVector = FALSE), error = function(e)
      .pg_stop("value",
               sprintf("ag_module_from_config(): cfg is not valid JSON (%s)", conditionMessage(e))))
  }
  .module_from_config(cfg, 0L)
}

# TRUE when v nests lists deeper than k levels (it stops looking there)
.nested_over <- function(v, k) {
  if (!is.list(v)) return(FALSE)
  if (k <= 0L) return(TRUE)
  for (x in v) if (.nested_over(x, k - 1L)) return(TRUE)
  FALSE
}

# sequentials within sequentials: depth bounded by the core's PG_CONFIG_MAX_DEPTH, so a config
# nested a few hundred levels is a classed error, not a C stack overflow
.module_from_config <- function(cfg, depth) {
  lim <- .pg$code$limit[["CONFIG_DEPTH"]]
  if (depth > lim)
    .pg_stop("value", sprintf("ag_module_from_config(): the config is nested deeper than %d levels",
                              lim))
  if (!.is_obj(cfg) || !.is_str(cfg$type))
    .pg_stop("value", sprintf(paste0("ag_module_from_config(): expected a list with a 'type' ",
                                     "entry, got %s"),
                              if (.nested_over(cfg, 8L)) "a list nested deeper than 8 levels"
                              else substr(tryCatch(.to_json(cfg), error = function(e)
                                class(cfg)[[1L]]), 1L, 200L)))
  kind <- cfg$type
  args <- cfg[names(cfg) != "type"]
  if (kind == "sequential") {
    layers <- args$layers
    if (!is.list(layers) || !is.null(names(layers)) || length(args) != 1L)
      .pg_stop("value", paste0("ag_module_from_config(): a sequential config is ",
                               "list(type = \"sequential\", layers = list(...))"))
    return(ag_sequential(lapply(layers, .module_from_config, depth = depth + 1L)))
  }
  custom <- .pg$layer_builders[[kind]]
  if (!is.null(custom)) {
    layer <- custom(cfg)
    if (!((is.environment(layer) || is.list(layer)) && is.function(layer$forward)))
      .arg_fail("argument",
                paste0("ag_module_from_config: the builder registered for \"%s\" returned a %s, ",
                       "not a layer with forward()"),
                kind, class(layer)[[1L]])
    return(layer)
  }
  b <- .BUILDERS[[kind]]
  if (is.null(b))
    .pg_stop("value",
             sprintf(paste0("ag_module_from_config(): unknown layer type \"%s\" (built-in: %s; ",
                        "register custom ones with ag_register_layer)"),
                 kind, paste(c("sequential", sort(names(.BUILDERS))), collapse = ", ")))
  bad <- setdiff(names(args), b$args)
  if (length(bad))
    .pg_stop("value",
             sprintf("ag_module_from_config(): bad arguments for a \"%s\" layer: unknown %s", kind,
                 paste(bad, collapse = ", ")))
  tryCatch(b$build(args), error = function(e)
    .pg_stop("value", sprintf("ag_module_from_config(): bad arguments for a \"%s\" layer: %s", kind,
                 conditionMessage(e))))
}

ag_to_config <- function(model) {
  if (!(is.environment(model) || is.list(model)) || !is.function(model$to_config))
    .pg_stop("argument", "ag_to_config(): the model has no to_config()")
  model$to_config()
}
