# ag_fit's history: the per-epoch results, their print and plot.


.HIST_KEYS <- c("epoch", "loss", "loss_unc", "accuracy", "accuracy_unc", "val_loss", "val_loss_unc",
                "val_accuracy", "val_accuracy_unc", "lr", "time_train", "time_val")

.make_history <- function(logs, stopped_epoch, best_epoch) {
  h <- lapply(.HIST_KEYS, function(k) vapply(logs, function(l) as.double(l[[k]]), 0))
  names(h) <- .HIST_KEYS
  h$epoch <- as.integer(h$epoch)
  h$stopped_epoch <- stopped_epoch
  h$best_epoch <- best_epoch
  class(h) <- "ag_history"
  h
}

as.data.frame.ag_history <- function(x, ...) as.data.frame(unclass(x)[.HIST_KEYS])

.pm_sym <- function() if (isTRUE(l10n_info()[["UTF-8"]])) " \u00b1 " else " +- "

.pm <- function(v, u) {
  if (is.nan(v) || is.na(v)) return(formatC("-", width = 18))
  if (is.na(u)) sprintf("%9.5f%9s", v, "") else paste0(sprintf("%9.5f", v), .pm_sym(),
                                                       formatC(sprintf("%.5f", u), width = -7))
}

.pm_pct <- function(v, u) {
  if (is.nan(v) || is.na(v)) return(formatC("-", width = 17))
  paste0(sprintf("%6.2f%%", 100 * v), .pm_sym(), sprintf("%5.2f%%", 100 * (if (is.na(u)) 0 else u)))
}

print.ag_history <- function(x, ...) {
  n <- length(x$epoch)
  if (n == 0L) { cat("<ag_history: no epochs>\n"); return(invisible(x)) }
  has_val <- any(!is.nan(x$val_loss))
  has_acc <- any(!is.nan(x$accuracy))
  cat(sprintf("<ag_history: %d epoch%s%s>\n", n, if (n == 1L) "" else "s",
              if (!is.null(x$stopped_epoch)) sprintf(", stopped at epoch %d",
                                                     x$stopped_epoch) else ""))
  head <- sprintf("%5s  %18s", "epoch", "loss")
  if (has_acc) head <- paste0(head, sprintf("  %17s", "accuracy"))
  if (has_val) {
    head <- paste0(head, sprintf("  %18s", "val_loss"))
    if (has_acc) head <- paste0(head, sprintf("  %17s", "val_accuracy"))
  }
  cat(head, sprintf("  %7s", "time"), "\n", sep = "")
  for (i in seq_len(n)) {
    s <- sprintf("%5d  %s", x$epoch[i], .pm(x$loss[i], x$loss_unc[i]))
    if (has_acc) s <- paste0(s, "  ", .pm_pct(x$accuracy[i], x$accuracy_unc[i]))
    if (has_val) {
      s <- paste0(s, "  ", .pm(x$val_loss[i], x$val_loss_unc[i]))
      if (has_acc) s <- paste0(s, "  ", .pm_pct(x$val_accuracy[i], x$val_accuracy_unc[i]))
    }
    cat(s, sprintf("  %6.2fs", x$time_train[i] + x$time_val[i]), "\n", sep = "")
  }
  if (!is.null(x$best_epoch)) cat(sprintf("best epoch: %d\n", x$best_epoch))
  invisible(x)
}

plot.ag_history <- function(x, y, ...) {
  ep <- x$epoch
  if (!length(ep)) .pg_stop("value", "plot.ag_history: no epochs to plot")
  has_acc <- any(!is.nan(x$accuracy))
  has_val <- any(!is.nan(x$val_loss))
  op <- graphics::par(mfrow = c(1L, if (has_acc) 2L else 1L))
  on.exit(graphics::par(op))
  band <- function(v, u, col) {
    u[is.na(u)] <- 0
    ok <- !is.na(v)
    if (sum(ok) > 1L)
      graphics::polygon(c(ep[ok], rev(ep[ok])), c(v[ok] - u[ok], rev(v[ok] + u[ok])),
                        col = grDevices::adjustcolor(col, alpha.f = 0.2), border = NA)
  }
  lo <- c(x$loss - ifelse(is.na(x$loss_unc), 0, x$loss_unc),
          if (has_val) x$val_loss - ifelse(is.na(x$val_loss_unc), 0, x$val_loss_unc))
  hi <- c(x$loss + ifelse(is.na(x$loss_unc), 0, x$loss_unc),
          if (has_val) x$val_loss + ifelse(is.na(x$val_loss_unc), 0, x$val_loss_unc))
  graphics::plot(ep, x$loss, type = "l", col = "steelblue", lwd = 2, xlab = "epoch", ylab = "loss",
                 ylim = range(c(lo, hi), finite = TRUE), main = "loss", ...)
  band(x$loss, x$loss_unc, "steelblue")
  leg <- "train"
  cols <- "steelblue"
  if (has_val) {
    graphics::lines(ep, x$val_loss, col = "darkorange", lwd = 2)
    band(x$val_loss, x$val_loss_unc, "darkorange")
    leg <- c(leg, "validation")
    cols <- c(cols, "darkorange")
  }
  graphics::legend("topright", legend = leg, col = cols, lwd = 2, bty = "n")
  if (has_acc) {
    yl <- range(c(x$accuracy, if (has_val) x$val_accuracy), finite = TRUE)
    graphics::plot(ep, x$accuracy, type = "l", col = "steelblue", lwd = 2, xlab = "epoch",
                   ylab = "accuracy",
                   ylim = yl, main = "accuracy")
    if (has_val) graphics::lines(ep, x$val_accuracy, col = "darkorange", lwd = 2)
    graphics::legend("bottomright", legend = leg, col = cols, lwd = 2, bty = "n")
  }
  invisible(x)
}
