# Optimizer $state() / $load_state() in ggmlR 0.8.6's layout, and the layout this project's model
# files store (io.R). Tables, checks, messages and the write are the C core's
# (native/optim_state.c, shared with Python); this walks the list and raises or warns in R.

.opt_state <- function(e) {
  p <- .Call(R_pg_optim_state_parts, e$.h)  # all but the names and the slot values
  if (!is.null(p$note)) warning(p$note, call. = FALSE)
  slots <- lapply(seq_along(p$slots), function(s) e$.slot(s - 1L))
  names(slots) <- p$slots
  c(p[c("format", "version", "type", "t", "accum_count")],
    list(names = names(e$params), slots = slots, hyper = p$hyper))
}

# a value as the core's checks see it: list(value, R's display when it is no plain scalar, or
# always with show)
.st_val <- function(x, show = FALSE) {
  plain <- (is.numeric(x) || is.logical(x) || is.character(x)) && length(x) == 1L &&
    is.null(attr(x, "class")) && !is.na(x)
  list(if (is.null(x) || plain) x else NA, if (show || !(is.null(x) || plain))
    paste(format(x), collapse = " "))
}

# the core's hyper-parameter comparison d (a list from R_pg_optim_state_check, or from
# R_pg_mf_load_check with the file's values in d$state), warned with ggmlR's condition class;
# sh: the state list's hyper-parameters that d$entry indexes
.opt_hyper_warn <- function(e, d, sh = NULL) {
  if (is.null(d)) return(invisible())
  changed <- list()
  for (k in seq_along(d$name)) {
    dflt <- if (d$is_flag[[k]]) as.logical(d$default[[k]]) else d$default[[k]]
    sv <- if (d$entry[[k]] == 0L) dflt else if (is.null(sh)) d$state[[k]] else sh[[d$entry[[k]]]]
    changed[[d$name[[k]]]] <- list(current = get(d$name[[k]], envir = e), state = sv)
  }
  warning(structure(class = c("ggmlR_opt_hyper_warning", "warning", "condition"),
                    list(message = d$message, call = NULL, changed = changed)))
}

.opt_load_state <- function(e, state) {
  parts <- .Call(R_pg_optim_state_parts, e$.h)
  st <- if (is.list(state)) state else list()
  # a state() of pyggmlr before ggmlR 0.8.6's layout: the model files' layout, parameter-major
  # over the file slots; else slot-major (the core checks the counts first). The rule is the
  # core's (a NULL value counts as absent), Python's too
  form <- .Call(R_pg_optim_state_form, !is.null(st[["type"]]), !is.null(st[["kind"]]),
                is.list(st[["params"]]))
  legacy <- form == .pg$code$state_form[["LEGACY"]]
  if (legacy) {
    vals <- do.call(c, lapply(st[["params"]], function(p)
      lapply(parts$file_slots, function(s) if (is.list(p)) p[[s]])))
    slot_len <- length(st[["params"]])
  } else {
    sl <- st[["slots"]]
    # a slot's per-parameter values: a list's entries, else one value (a matrix or a plain
    # vector: not split into numbers, which as.list would do; Python's rule: a sequence, or one)
    per <- function(v) if (is.list(v)) v else if (!is.null(v)) list(v)
    lists <- lapply(parts$slots, function(s) if (is.list(sl)) per(sl[[s]]))
    vals <- do.call(c, lists)
    slot_len <- lengths(lists)
  }
  # the state list as the core's description (pg_optim_state_in); sh: its hyper-parameters,
  # kept for the warning's "changed" values
  sh <- if (is.list(st[["hyper"]]) && !is.null(names(st[["hyper"]]))) st[["hyper"]] else list()
  nm <- st[["names"]]  # names: characters or a list of them; else refused, as Python's
  desc <- list(form = form,
               is_map = is.list(state), format = .st_val(st[["format"]]),
               version = .st_val(st[["version"]]),
               type = .st_val(st[[if (legacy) "kind" else "type"]], TRUE),
               t = .st_val(st[["t"]]), accum_count = .st_val(st[["accum_count"]]),
               slot_len = as.integer(slot_len),
               names = if (is.character(nm) || is.list(nm)) as.character(nm),
               names_bad = if (!is.null(nm) && !is.character(nm) && !is.list(nm)) class(nm)[[1L]],
               opt_names = names(e$params), slots = vals,
               hyper_names = names(sh), hyper = lapply(sh, .st_val))
  # checked (ggmlR's 8 checks, in order), warned, then written: nothing is written unless all pass
  .opt_hyper_warn(e, .Call(R_pg_optim_state_check, e$.h, desc), sh)
  .Call(R_pg_optim_state_load, e$.h, desc, FALSE)
  invisible(TRUE)
}
