#!/usr/bin/env bash
# lintr on the R package (r/R, r/tests and the vignettes' code; settings in r/.lintr) and the
# parity harness's R halves (tests/parity, its own .lintr): prints
# every lint and exits non-zero when there is one. Needs lintr (scripts/install-r.sh) and the
# package installed where R finds it (object_usage_linter resolves the package's own names).
# r/.lintr departs from lintr's defaults only where the code's style is deliberate:
#   object names: also CamelCase / UPPERCASE (matrices W, X; constants .IO_VERSION) and dotted
#     (S3 methods); ggmlR's argument names (T_max) are marked in place;
#   semicolons: compound `a; b` allowed inside one-line blocks, trailing ones still refused;
#   brace_linter off: one-expression functions and if/else without braces, continued over lines;
#   cyclocomp off: the API functions' argument checks (one `if` each, as ggmlR's) set the count.
set -euo pipefail
cd "$(dirname "$0")/.."
Rscript -e '
if (!requireNamespace("lintr", quietly = TRUE)) {
  message("lintr is not installed (apt-get install r-cran-lintr)"); quit(status = 2)
}
lints <- c(lintr::lint_package("r"), lintr::lint_dir("tests/parity"))  # parity: tests/parity/.lintr
if (length(lints)) print(lints)
n <- length(lints)
cat(sprintf("lint-r: %d lint%s\n", n, if (n == 1L) "" else "s"))
quit(status = if (n > 0L) 1L else 0L)
'
# the help pages parse as R CMD check parses them (an unbalanced quote inside \code{} breaks a
# whole page): tools::checkRd on each, any message fails
Rscript -e '
msgs <- unlist(lapply(list.files("r/man", "[.]Rd$", full.names = TRUE), function(f)
  tryCatch(as.character(tools::checkRd(f)), error = function(e) paste(f, conditionMessage(e)))))
if (length(msgs)) writeLines(msgs)
cat(sprintf("checkRd: %d message%s\n", length(msgs), if (length(msgs) == 1L) "" else "s"))
quit(status = if (length(msgs)) 1L else 0L)
'
