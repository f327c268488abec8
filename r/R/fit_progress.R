# ag_fit's progress display: one cli bar for the whole run (epochs x batches) whose status shows
# the epoch, the running loss / accuracy (from the core's plan), the last epoch's validation
# values and the ETA, plus one compact line per finished epoch printed above the bar (as keras).
# Where nothing can redraw a bar (Rscript into a file or pipe, R CMD check, testthat, knitr) it
# is one line per epoch instead, as keras' progress bar prints only finished epochs there.

# "bar" (verbose = 1), "lines" (verbose = 2) or "none": "auto" and "bar" draw the bar where it
# can be redrawn and print the lines elsewhere, as Python's (silent wins). A console redraws a
# line in place when cli says so (a terminal, RStudio, R.app; the cli.dynamic option overrides),
# never while knitting, where messages go into the document.
.fit_progress_mode <- function(progress, silent) {
  # a string shown as it is, any other value as every argument check shows it (format() gave
  # "1 2" for list(1, list(2)) and "" for NULL: issue 29)
  shown <- if (is.character(progress) && length(progress) == 1L) progress else .arg_show(progress)
  m <- .Call(R_pg_fit_progress_parse, progress, shown,
             isTRUE(silent))  # the core's rule and text ("lines": verbose = 2)
  # cli asked only for a bar: its tty test is a tenth of a silent ag_fit's set-up
  if (m == "bar" && (isTRUE(getOption("knitr.in.progress")) || !cli::is_dynamic_tty())) "lines"
  else m
}

# the compact per-epoch line, shared by the bar and its fallback (the core's, as Python's)
.fit_epoch_line <- function(logs, nepoch) .Call(R_pg_fit_epoch_line, logs, logs$epoch, nepoch)

# p$tick() after every training batch, p$epoch_begin(epoch) / p$epoch_end(logs) around an epoch,
# p$close() when the run ends (also on error). All no-ops when the mode is "none".
.fit_progress <- function(mode, plan, total, nepoch) {
  if (!mode %in% c("bar", "lines")) return(.FIT_PROGRESS_NONE)
  # lines: one line per epoch on stderr, no bar (verbose = 2); last: the last epoch's logs, for
  # the status's validation values; n: the batches so far
  p <- list2env(list(on = total > 0L, lines = mode == "lines", epoch = 0L, nepoch = nepoch,
                     last = NULL, id = NULL, n = 0L), parent = baseenv())
  p$ticks <- p$on && !p$lines  # only a bar needs each batch: a static run keeps one-call epochs
  # evaluated by cli only when it redraws (its own throttle), so a batch costs one update call
  p$status <- function() .Call(R_pg_fit_status_line, .Call(R_pg_fit_running, plan), p$last)
  # the run's last batch is counted in close(): cli ends a bar that reaches its total, and the
  # last epoch's line still has to go above it
  p$tick <- function() {
    p$n <- p$n + 1L
    if (!is.null(p$id) && p$n < total) cli::cli_progress_update(id = p$id, .envir = p)
  }
  p$epoch_begin <- function(epoch) {
    p$epoch <- epoch
    if (p$on && !p$lines && is.null(p$id))
      p$id <- cli::cli_progress_bar(
        total = total, clear = FALSE, .auto_close = FALSE, .envir = p,
        format = paste("epoch {epoch}/{nepoch} {cli::pb_bar} {cli::pb_current}/{cli::pb_total}",
                       # the ETA before what a narrow console cuts
                       "ETA {cli::pb_eta} | {status()}"))
  }
  p$epoch_end <- function(logs) {
    if (!p$on) return(invisible())
    p$last <- logs
    p$line <- .fit_epoch_line(logs, nepoch)
    if (p$lines) message(p$line)
    # non-breaking spaces: cli would collapse the line's aligning runs of spaces, and prints
    # them as plain spaces, so the line is the core's text, as Python's
    if (!is.null(p$id)) {
      p$line <- gsub(" ", "\u00a0", p$line, fixed = TRUE)
      cli::cli_progress_output("{line}", id = p$id, .envir = p)
    }
    invisible()
  }
  p$close <- function() {
    if (!is.null(p$id)) {
      if (p$n >= total) cli::cli_progress_update(id = p$id, set = total, force = TRUE, .envir = p)
      else cli::cli_progress_done(id = p$id, .envir = p)
    }
    p$id <- NULL
  }
  p
}

# mode "none" (silent runs): nothing to show, nothing to build per call
.FIT_PROGRESS_NONE <- list(on = FALSE, lines = FALSE, ticks = FALSE, tick = function() NULL,
                           epoch_begin = function(epoch) NULL,
                           epoch_end = function(logs) invisible(), close = function() NULL)
