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

# the state list as the core's description (pg_optim_state_in); slots: the values in the order
# of the form (GGMLR slot-major, LEGACY / FILE parameter-major); sh: its hyper-parameters, kept
# for the warning's "changed" values
.st_desc <- function(e, state, form, slots, slot_len) {
  st <- if (is.list(state)) state else list()
  sh <- if (is.list(st[["hyper"]]) && !is.null(names(st[["hyper"]]))) st[["hyper"]] else list()
  list(form = .pg$code$state_form[[form]], is_map = is.list(state),
       format = .st_val(st[["format"]]), version = .st_val(st[["version"]]),
       type = .st_val(st[[if (form == "GGMLR") "type" else "kind"]], TRUE),
       t = .st_val(st[["t"]]), accum_count = .st_val(st[["accum_count"]]),
       slot_len = as.integer(slot_len),
       names = if (!is.null(st[["names"]])) as.character(st[["names"]]),
       opt_names = names(e$params), slots = slots,
       hyper_names = names(sh), hyper = lapply(sh, .st_val), sh = sh)
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

# checked (ggmlR's 8 checks, in order), warned, then written: nothing is written unless all pass
.st_load <- function(e, desc) {
  .opt_hyper_warn(e, .Call(R_pg_optim_state_check, e$.h, desc), desc$sh)
  .Call(R_pg_optim_state_load, e$.h, desc, FALSE)
  invisible(TRUE)
}

.opt_load_state <- function(e, state) {
  # a state() of pyggmlr before ggmlR 0.8.6's layout: the model files' layout
  if (is.list(state) && is.null(state[["type"]]) && !is.null(state[["kind"]]) &&
      is.list(state[["params"]])) {  # parameter-major over the file slots
    fs <- .Call(R_pg_optim_state_parts, e$.h)$file_slots
    vals <- do.call(c, lapply(state$params, function(p)
      lapply(fs, function(s) if (is.list(p)) p[[s]])))
    return(.st_load(e, .st_desc(e, state, "LEGACY", vals, length(state$params))))
  }
  sl <- if (is.list(state)) state[["slots"]] else NULL
  lists <- lapply(.Call(R_pg_optim_state_parts, e$.h)$slots,
                  function(s) if (is.list(sl)) as.list(sl[[s]]))
  # every value, slot-major: the core checks the counts first
  .st_load(e, .st_desc(e, state, "GGMLR", do.call(c, lists), lengths(lists)))
}
