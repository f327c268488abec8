# Scopes closed in C (issue 28): with_grad_tape, ag_no_grad, a stream switch and a default-dtype
# switch evaluate the user's expression under R_UnwindProtect and close in C (src/r_scope.c).
# An on.exit handler is R code: an interrupt that R delivers while the handler runs abandons it,
# which left the tape open (depth 1, recording on) in about one Ctrl-C of ten.

.depth <- function() .Call(pyggmlr:::R_pg_tape, pyggmlr:::.pg$code$tape[["DEPTH"]])
.recording <- function() .Call(pyggmlr:::R_pg_tape, pyggmlr:::.pg$code$tape[["ENABLED"]])

# R handles a pending interrupt at its next check, one every so many evaluations: an interrupt
# raised inside the scope and followed by k more steps of work lands, over k = 0..1500, at every
# point of the scope's exit, the close included. The number of k whose exit left state wrong.
.interrupt_sweep <- function(scope, wrong, repair) {
  bad <- 0L
  for (k in 0:1500) {
    tryCatch({
      scope({
        tools::pskill(Sys.getpid(), tools::SIGINT)
        i <- 0L
        while (i < k) i <- i + 1L
      })
      for (j in 1:3000) NULL  # the interrupt, if still pending, is delivered here
    }, interrupt = function(e) NULL)
    if (wrong()) {
      bad <- bad + 1L
      repair()
    }
  }
  bad
}

test_that("an interrupt at any point of with_grad_tape's exit leaves depth 0 and recording off", {
  skip_on_os("windows")
  bad <- .interrupt_sweep(with_grad_tape, function() .depth() != 0L || .recording(),
                          function() .Call(pyggmlr:::R_pg_scope,
                                           pyggmlr:::.pg$code$scope[["END_TO"]], 0L))
  expect_identical(bad, 0L)
  expect_identical(.depth(), 0L)
  expect_false(.recording())
})

test_that("an interrupt at any point of ag_no_grad's exit gives recording back", {
  skip_on_os("windows")
  with_grad_tape({
    bad <- .interrupt_sweep(ag_no_grad, function() !.recording(),
                            function() .Call(pyggmlr:::R_pg_tape_set_enabled, TRUE))
    expect_identical(bad, 0L)
    expect_true(.recording())
  })
  expect_identical(.depth(), 0L)
})

test_that("an interrupt at any point of a stream or dtype scope's exit restores the switch", {
  skip_on_os("windows")
  s <- pyggmlr:::.rng_stream(1L)
  bad <- .interrupt_sweep(function(expr) pyggmlr:::.with_stream(s, expr),
                          function() !is.null(.Call(pyggmlr:::R_pg_rng_current)),
                          function() .Call(pyggmlr:::R_pg_rng_use, NULL))
  expect_identical(bad, 0L)
  prev <- ag_default_dtype()
  other <- if (prev == "f32") "f64" else "f32"
  bad <- .interrupt_sweep(function(expr) pyggmlr:::.with_dtype(other, function() expr),
                          function() ag_default_dtype() != prev, function() ag_dtype(prev))
  expect_identical(bad, 0L)
  expect_identical(ag_default_dtype(), prev)
})

test_that("an error in the expression closes each scope; the value comes back on success", {
  w <- ag_param(matrix(0.5, 2, 2))
  expect_error(with_grad_tape({ ag_scale(w, 2); stop("boom") }), "boom")
  expect_identical(.depth(), 0L)
  expect_false(.recording())
  expect_error(with_grad_tape(with_grad_tape(stop("inner"))), "inner")
  expect_identical(.depth(), 0L)
  with_grad_tape({
    expect_error(ag_no_grad(stop("boom")), "boom")
    expect_true(.recording())
    expect_identical(ag_no_grad({ expect_false(.recording()); 7 }), 7)
  })
  expect_false(.recording())
  prev <- ag_default_dtype()
  expect_error(pyggmlr:::.with_dtype("f64", function() stop("boom")), "boom")
  expect_identical(ag_default_dtype(), prev)
  # the value, visible, and evaluated in the caller's frame
  v <- 1
  expect_identical(with_grad_tape({ v <- v + 1; v }), 2)
  expect_identical(v, 2)
  # a bad stream opens nothing
  expect_error(pyggmlr:::.with_stream("not a stream", 1))
  expect_null(.Call(pyggmlr:::R_pg_rng_current))
})
