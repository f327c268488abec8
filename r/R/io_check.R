# Checks that keep a model file round-trip safe (issue 19, "nothing lost"), as Python's
# pyggmlr/io/check.py: what ag_save_model would write is checked against what ag_load_model
# accepts before the old file is touched, and what a load would write into the user's objects is
# checked before the first write.

# Evaluate expr, then put back the random state it drew from (the core's current stream, or
# R's .Random.seed when the R generator is in use): a save draws nothing.
.keep_rng <- function(expr) {
  s <- .Call(R_pg_rng_current)
  st <- if (!is.null(s)) .Call(R_pg_rng_get_state, s)
  if (!is.null(s)) on.exit(.Call(R_pg_rng_set_state, s, st), add = TRUE)
  g <- globalenv()
  old <- g[[".Random.seed"]]  # NULL: none, and none is left behind
  on.exit(if (is.null(old)) suppressWarnings(rm(".Random.seed", envir = g))
          else assign(".Random.seed", old, envir = g), add = TRUE)
  expr
}

# The architecture as the loader will rebuild it: the core (native/modelfile_check.c) checks
# it with the loader's budget, compares the rebuilt names and shapes with the model's, words the
# refusals and remembers what passed; this rebuilds.
.check_save_config <- function(text, m) {
  dt <- .Call(R_pg_mf_config_begin, enc2utf8(text), m)
  if (is.list(dt)) .mf_fail(dt, "")
  if (is.null(dt)) return(invisible(NULL))  # checked before (ag_fit's checkpoints, each epoch)
  built <- tryCatch(.keep_rng(.with_dtype(dt, function() {
    b <- ag_module_from_config(jsonlite::parse_json(text, simplifyVector = FALSE))
    .mf_model(.model_params(b, "ag_save_model()"), .model_buffers(b))
  })), error = function(e) .mf_fail(.Call(R_pg_mf_rebuild_fail, NULL,
                                          .pg$code$rebuild[["SAVE"]], conditionMessage(e)), ""))
  .mf_fail(.Call(R_pg_mf_config_end, enc2utf8(text), m, built), "")
}
