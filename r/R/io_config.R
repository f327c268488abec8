# Architectures as configs (io.R's files hold one as JSON): ag_register_layer for custom layers,
# ag_module_from_config and ag_to_config, as in Python's nn.py. The core's layer table
# (native/layer_config.c) checks each layer's arguments, fills the defaults and words every
# refusal, in Python's texts; this maps the types to their constructors.

ag_register_layer <- function(type, builder) {
  .Call(R_pg_layer_register_check, type, is.function(builder))  # the core's rules and texts
  .pg$layer_builders[[type]] <- builder
  invisible(builder)
}

# the constructor of each built-in type of the core's layer table, ag_<type> (set in .onLoad);
# the core's normalized arguments go to it by name
.BUILDERS <- NULL

# TRUE when v nests lists deeper than k levels (it stops looking there)
.nested_over <- function(v, k) {
  if (!is.list(v)) return(FALSE)
  if (k <= 0L) return(TRUE)
  for (x in v) if (.nested_over(x, k - 1L)) return(TRUE)
  FALSE
}

# One layer's config as JSON for the core, by the glue's writer (r/src/r_cfg_json.c): what JSON
# cannot hold (an environment, a function, a deep nest) goes as a short description (.arg_show),
# which the core's table then refuses by name; NA, NaN and Inf are null, as in Python.
.cfg_json <- function(cfg) .Call(R_pg_cfg_json, cfg, .arg_show)

ag_module_from_config <- function(cfg) {
  if (is.character(cfg) && length(cfg) == 1L && !is.na(cfg)) {
    # the core's parser first: its nesting limit keeps jsonlite and the walk off R's C stack
    bad <- .Call(R_pg_json_check, enc2utf8(cfg), "cfg", 0)
    if (!is.null(bad)) .pg_stop("value", sprintf("ag_module_from_config: %s", bad))
    cfg <- tryCatch(jsonlite::parse_json(cfg, simplifyVector = FALSE), error = function(e)
      .pg_stop("value",
               sprintf("ag_module_from_config: cfg is not valid JSON (%s)", conditionMessage(e))))
  }
  .keep_rng_on_error(.module_from_config(cfg, 0L))  # refused part-way: nothing drawn
}

# sequentials within sequentials: the core bounds the depth by PG_CONFIG_MAX_DEPTH, so a config
# nested a few hundred levels is a classed error, not a C stack overflow. A sequential goes to
# the core with its layers emptied; this walks them.
.module_from_config <- function(cfg, depth) {
  # [[ ]]: exact names (cfg$type would take a 'types' entry)
  if (!.is_obj(cfg) || !.is_str(cfg[["type"]]))
    .pg_stop("value", sprintf(paste0("ag_module_from_config: expected a list with a 'type' ",
                                     "entry, got %s"),
                              if (.nested_over(cfg, 8L)) "a list nested deeper than 8 levels"
                              else substr(tryCatch(.to_json(cfg), error = function(e)
                                class(cfg)[[1L]]), 1L, 200L)))
  kind <- cfg[["type"]]
  layers <- cfg[["layers"]]
  shallow <- cfg
  if (kind == "sequential" && is.list(layers) && is.null(names(layers))) shallow$layers <- list()
  custom <- .pg$layer_builders[[kind]]
  args <- .Call(R_pg_layer_config, .cfg_json(shallow), depth, !is.null(custom))
  if (kind == "sequential")
    return(ag_sequential(lapply(layers, .module_from_config, depth = depth + 1L)))
  if (nzchar(args))
    return(do.call(.BUILDERS[[kind]], jsonlite::parse_json(args, simplifyVector = FALSE)))
  layer <- custom(cfg)
  if (!((is.environment(layer) || is.list(layer)) && is.function(layer$forward)))
    .Call(R_pg_layer_arg_fail, .pg$code$layer_bad[["BUILT"]], kind, class(layer)[[1L]])
  layer
}

ag_to_config <- function(model) {
  if (!(is.environment(model) || is.list(model)) || !is.function(model$to_config))
    .Call(R_pg_layer_arg_fail, .pg$code$layer_bad[["NO_CONFIG"]], NULL, class(model)[[1L]])
  model$to_config()
}
