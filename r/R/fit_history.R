# ag_fit's history: the per-epoch results, their print and plot.


# .HIST_KEYS: "epoch", then the core's per-epoch columns in its log order (set in .onLoad)
.HIST_KEYS <- NULL

.make_history <- function(logs, stopped_epoch, best_epoch, metrics = character(0)) {
  # one column per epoch, in .HIST_KEYS order (the session's logs list them in another), then
  # ag_fit(metrics =)'s columns (NA where an epoch lacks one: a resumed run's earlier epochs)
  keys <- c(.HIST_KEYS, metrics)
  m <- vapply(logs, function(l) as.double(unlist(l)[keys]), double(length(keys)))
  h <- vector("list", length(keys))  # a loop, not a closure per column
  for (i in seq_along(keys)) h[[i]] <- if (length(logs)) m[i, ] else double(0)
  names(h) <- keys
  h$epoch <- as.integer(h$epoch)
  h$stopped_epoch <- stopped_epoch
  h$best_epoch <- best_epoch
  class(h) <- "ag_history"
  h
}

# the metric columns of ag_fit(metrics =) after the History's own (as Python's as_dict)
.hist_metrics <- function(x) setdiff(names(x), c(.HIST_KEYS, "stopped_epoch", "best_epoch"))

as.data.frame.ag_history <- function(x, ...)
  as.data.frame(unclass(x)[c(.HIST_KEYS, .hist_metrics(x))])

.pm_sym <- function() if (isTRUE(l10n_info()[["UTF-8"]])) " \u00b1 " else " +- "

print.ag_history <- function(x, ...) {
  logs <- unlist(lapply(.HIST_KEYS[-1L], function(k) as.double(x[[k]])))  # the core's log order
  mk <- .hist_metrics(x)  # ag_fit(metrics =)'s columns, below the table
  cat(.Call(R_pg_fit_history_format, "ag_history", as.double(x$epoch), logs,
            as.double(x$stopped_epoch), as.double(x$best_epoch), .pm_sym(), mk,
            as.double(unlist(lapply(mk, function(k) as.double(x[[k]]))))), "\n", sep = "")
  invisible(x)
}

# whole epochs on the x axis (R's own ticks put 1.5 between epochs 1 and 2), as Python's plot
.epoch_ticks <- function(ep) {
  at <- pretty(ep)
  at[at == round(at)]
}
.epoch_axis <- function(ep) graphics::axis(1, at = .epoch_ticks(ep))

plot.ag_history <- function(x, y, ...) {
  ep <- x$epoch
  if (!length(ep)) .pg_stop("value", "plot.ag_history: no epochs to plot")
  has_val <- any(!is.nan(x$val_loss))
  # the panels, as Python's: loss, accuracy when counted, one per ag_fit(metrics =) metric
  panels <- c("loss", if (any(!is.nan(x$accuracy))) "accuracy",
              grep("^val_", .hist_metrics(x), value = TRUE, invert = TRUE))
  np <- length(panels)
  op <- graphics::par(mfrow = c(ceiling(np / min(np, 3L)), min(np, 3L)))
  on.exit(graphics::par(op))
  band <- function(v, u, col) {
    u[is.na(u)] <- 0
    ok <- !is.na(v)
    if (sum(ok) > 1L)
      graphics::polygon(c(ep[ok], rev(ep[ok])), c(v[ok] - u[ok], rev(v[ok] + u[ok])),
                        col = grDevices::adjustcolor(col, alpha.f = 0.2), border = NA)
  }
  for (k in panels) {
    v <- x[[k]]
    vv <- if (has_val || !k %in% c("loss", "accuracy")) x[[paste0("val_", k)]]  # NULL: none
    lim <- c(v, vv)
    if (k == "loss") {  # the limits take the bands (an NA band: none)
      u <- c(x$loss_unc, if (has_val) x$val_loss_unc)
      u[is.na(u)] <- 0
      lim <- c(lim - u, lim + u)
    }
    yl <- range(lim, finite = TRUE)
    if (!all(is.finite(yl)) && !k %in% c("loss", "accuracy")) yl <- c(0, 1)  # none finite
    a <- list(ep, v, type = "l", col = "steelblue", lwd = 2, xlab = "epoch", ylab = k, ylim = yl,
              main = k, xaxt = "n")
    do.call(graphics::plot, if (k == "loss") c(a, list(...)) else a)  # `...`: the loss panel's
    .epoch_axis(ep)
    if (k == "loss") band(v, x$loss_unc, "steelblue")
    if (!is.null(vv)) graphics::lines(ep, vv, col = "darkorange", lwd = 2)
    if (k == "loss" && !is.null(vv)) band(vv, x$val_loss_unc, "darkorange")
    graphics::legend(if (k == "loss") "topright" else "bottomright",
                     legend = c("train", if (!is.null(vv)) "validation"),
                     col = c("steelblue", if (!is.null(vv)) "darkorange"), lwd = 2, bty = "n")
  }
  invisible(x)
}
