# Issue 19, "Wrong results": backward over a tensor changed since the forward pass is refused,
# every scope closes on every exit path, ag_tape_memory reports what ag_tape_clear frees.

depth <- function() .Call(pyggmlr:::R_pg_tape, pyggmlr:::.pg$code$tape[["DEPTH"]])
n_nodes <- function() .Call(pyggmlr:::R_pg_tape, pyggmlr:::.pg$code$tape[["NODES"]])
recording <- function() .Call(pyggmlr:::R_pg_tape, pyggmlr:::.pg$code$tape[["ENABLED"]])
modified_msg <- function(desc, where, op, now, want)
  sprintf(paste0("backward(): one of the variables needed for gradient computation has been ",
                 "modified by an inplace operation: tensor %s (%s of %s) is at version ",
                 "%d; expected version %d. Write new values after backward(), or record ",
                 "the forward pass again"),
          desc, where, op, now, want)

# ---- versions --------------------------------------------------------------------------------

test_that("x$data <- between forward and backward is refused with a classed condition", {
  w <- ag_param(matrix(c(1, 2, 3, 4, 5, 6), 2, 3))
  x <- ag_tensor(matrix(1:6 / 6, 3, 2))
  with_grad_tape(loss <- ag_sum(ag_matmul(w, x)))
  x$data <- matrix(0, 3, 2)
  e <- tryCatch(backward(loss), error = function(e) e)
  expect_s3_class(e, "pyggmlr_modified_error")
  expect_identical(conditionMessage(e), modified_msg("[3x2] f32", "input 2", "matmul", 1L, 0L))
  expect_null(w$grad)                             # a refused backward changes nothing
  with_grad_tape(loss <- ag_sum(ag_matmul(w, x))) # recorded again: fine, with the new values
  g <- backward(loss)
  expect_equal(as.matrix(w$grad), matrix(0, 2, 3))
})

test_that("an optimizer step on saved weights before backward is refused; after it is fine", {
  set.seed(2)
  m <- ag_linear(3, 2)
  opt <- optimizer_sgd(m$params(), lr = 0.1)
  x <- ag_tensor(matrix(rnorm(6), 3, 2))
  with_grad_tape(loss <- ag_sum(m$forward(x)))
  g <- backward(loss)
  opt$step(g)
  e <- tryCatch(backward(loss), error = function(e) e)  # the same tape again, weights moved
  expect_s3_class(e, "pyggmlr_modified_error")
  expect_match(conditionMessage(e), "is at version 1; expected version 0", fixed = TRUE)
  # the usual loop (forward, backward, step) records a fresh tape each step and never trips
  for (i in 1:3) {
    opt$zero_grad()
    with_grad_tape(loss <- ag_sum(m$forward(x)))
    opt$step(backward(loss))
  }
  expect_true(is.finite(as.matrix(loss$data)[1, 1]))
})

test_that("an op's output overwritten is refused (sigmoid reads its output in backward)", {
  w <- ag_param(matrix(c(0.1, -0.2, 0.3), 3, 1))
  with_grad_tape({ h <- ag_sigmoid(w); loss <- ag_sum(h) })
  h$data <- matrix(0, 3, 1)   # met first as the sum's input: every input of a visited node counts
  expect_error(backward(loss), modified_msg("[3x1] f32", "input 1", "sum", 1L, 0L), fixed = TRUE,
               class = "pyggmlr_modified_error")
  v <- ag_param(matrix(0.3, 1, 1))
  with_grad_tape(loss <- ag_sigmoid(v))
  loss$data <- matrix(0, 1, 1)
  expect_error(backward(loss), modified_msg("[1x1] f32", "output", "sigmoid", 1L, 0L), fixed = TRUE,
               class = "pyggmlr_modified_error")
})

test_that("a checkpoint segment's input changed before backward is refused", {
  w <- ag_param(matrix(0.5, 2, 2))
  x <- ag_tensor(matrix(1:4 / 4, 2, 2))
  with_grad_tape(loss <- ag_sum(ag_checkpoint(function(a) ag_relu(ag_matmul(w, a)), x)))
  x$data <- matrix(1, 2, 2)
  expect_error(backward(loss), modified_msg("[2x2] f32", "input 1", "checkpoint", 1L, 0L),
               fixed = TRUE)
  # a weight only the segment's closure uses: logged by the forward, checked by the node
  with_grad_tape(loss <- ag_sum(ag_checkpoint(function(a) ag_relu(ag_matmul(w, a)), x)))
  w$data <- matrix(1, 2, 2)
  expect_error(backward(loss), modified_msg("[2x2] f32", "a parameter", "checkpoint", 1L, 0L),
               fixed = TRUE,
               class = "pyggmlr_modified_error")
  with_grad_tape(loss <- ag_sum(ag_checkpoint(function(a) ag_relu(ag_matmul(w, a)), x)))
  g <- backward(loss)
  expect_equal(as.matrix(w$grad), matrix(2, 2, 2))
})

test_that(paste0("a batch-norm layer used twice in one forward is fine (its running buffers are ",
                 "not read by backward)"), {
  set.seed(3)
  bn <- ag_batch_norm(3)
  x <- ag_tensor(matrix(rnorm(12), 3, 4))
  with_grad_tape(loss <- ag_sum(bn$forward(bn$forward(x))))
  g <- backward(loss)
  expect_true(length(bn$parameters()) > 0)
  expect_false(is.null(bn$parameters()[[1]]$grad))
})

test_that("compiled replays rewrite their inputs every step without tripping the check", {
  w <- ag_param(matrix(0.5, 2, 3))
  x <- ag_tensor(matrix(1:6 / 6, 3, 2))
  step <- ag_compile(function(x) ag_sum(ag_matmul(w, x)), x, build = "grad")
  a <- step(matrix(1, 3, 2))$loss
  b <- step(matrix(2, 3, 2))$loss
  expect_equal(c(a, b), c(6, 12))
})

# ---- scopes on abnormal exits ---------------------------------------------------------------

clean_after <- function() {
  expect_identical(depth(), 0L)  # nolint: object_usage_linter.
  expect_false(recording())  # nolint: object_usage_linter.
  w <- ag_param(matrix(0.5, 2, 3))
  x <- ag_tensor(matrix(1:6 / 6, 3, 2))
  before <- n_nodes()
  ag_relu(ag_matmul(w, x))  # outside any tape: nothing recorded
  expect_identical(n_nodes(), before)  # nolint: object_usage_linter.
  # a later compile works
  step <- ag_compile(function(x) ag_sum(ag_matmul(w, x)), x, build = "grad")
  expect_equal(step(x)$loss, sum(0.5 * matrix(1:6 / 6, 3, 2)) * 2)  # nolint: object_usage_linter.
}

exits <- list(
  error = function(body) tryCatch(body(function() stop("boom")), error = function(e) "caught"),
  warning = function(body) tryCatch(body(function() warning("w")), warning = function(e) "caught"),
  message = function(body) tryCatch(body(function() message("m")), message = function(e) "caught"),
  restart = function(body) withRestarts(body(function() invokeRestart("out")),
                                        out = function() "restarted"),
  callCC = function(body) callCC(function(k) body(function() k("jumped"))),
  interrupt = function(body) tryCatch(body(function() {
    tools::pskill(Sys.getpid(), tools::SIGINT)
    Sys.sleep(5)
  }), interrupt = function(e) "interrupted")
)

for (kind in names(exits)) {
  test_that(sprintf("ag_compile left by %s closes the recorder and the tape scope", kind), {
    x <- ag_tensor(matrix(1, 3, 2))
    r <- exits[[kind]](function(leave) ag_compile(function(x) { leave(); ag_sum(x) }, x,
                                                  build = "forward"))
    expect_false(identical(r, NULL))
    clean_after()
  })
  test_that(sprintf("with_grad_tape / ag_no_grad / ag_checkpoint left by %s close their scopes",
                    kind), {
    w <- ag_param(matrix(0.5, 2, 2))
    exits[[kind]](function(leave) with_grad_tape({ ag_scale(w, 2); leave() }))
    clean_after()
    with_grad_tape({
      exits[[kind]](function(leave) ag_no_grad({ leave() }))
      expect_true(recording())                    # the enclosing tape records again
      exits[[kind]](function(leave) ag_checkpoint(function(a) { leave(); ag_relu(a) }, w))
      expect_true(recording())
      # the stashed tape came back
      expect_identical(.Call(pyggmlr:::R_pg_scope, pyggmlr:::.pg$code$scope[["STASHED"]], 0L), 0L)
    })
    clean_after()
  })
}

test_that("an ag_checkpoint replay left abnormally inside backward() leaves no private tape behind",
          {
  w <- ag_param(matrix(0.5, 2, 2))
  x <- ag_tensor(matrix(1:4 / 4, 2, 2))
  for (kind in names(exits)) {
    n <- 0L
    with_grad_tape(loss <- ag_sum(ag_checkpoint(function(a) {
      n <<- n + 1L
      if (n == 2L) leave_now()   # the replay, inside backward()
      ag_relu(ag_matmul(w, a))
    }, x)))
    exits[[kind]](function(leave) { leave_now <<- leave; backward(loss) })
    expect_identical(.Call(pyggmlr:::R_pg_scope, pyggmlr:::.pg$code$scope[["STASHED"]], 0L), 0L)
    expect_null(w$grad)
    clean_after()
  }
  g <- backward(with_grad_tape(ag_sum(ag_matmul(w, x))))
  expect_equal(as.matrix(w$grad), matrix(c(1, 1, 1.5, 1.5), 2, 2))
})

test_that("a static ag_fit runs after every kind of abnormal compile exit", {
  set.seed(4)
  x <- matrix(rnorm(40), 4, 10)
  y <- matrix(rnorm(20), 2, 10)
  xt <- ag_tensor(matrix(1, 3, 2))
  for (kind in names(exits))
    exits[[kind]](function(leave) ag_compile(function(x) { leave(); ag_sum(x) }, xt,
                                             build = "forward"))
  m <- ag_sequential(ag_linear(4, 3, activation = "relu"), ag_linear(3, 2))
  h <- ag_fit(m, x, y, loss = "mse", nepoch = 2L, batch_size = 5L, silent = TRUE, seed = 1L,
              static = TRUE)
  expect_length(h$loss, 2L)
  expect_true(all(is.finite(h$loss)))
  clean_after()
})

test_that("closing a scope twice is harmless in the core", {
  expect_identical(.Call(pyggmlr:::R_pg_scope, pyggmlr:::.pg$code$scope[["END_TO"]], 0L), 0L)
  .Call(pyggmlr:::R_pg_scope, pyggmlr:::.pg$code$scope[["UNSTASH_TO"]], 0L)
  .Call(pyggmlr:::R_pg_scope, pyggmlr:::.pg$code$scope[["ABORT"]], 0L)
  expect_identical(depth(), 0L)
})

# ---- ag_tape_memory == what ag_tape_clear frees -------------------------------------------

clear_matches_report <- function(model, x, y) {
  ps <- if (is.function(model$params)) model$params() else model$parameters()
  opt <- optimizer_adam(ps, lr = 0.01)
  step <- function() {   # intermediates are local: their R handles become garbage on return
    loss <- with_grad_tape(ag_mse_loss(model$forward(x), y))
    opt$step(backward(loss))
    invisible(NULL)
  }
  step()
  r <- ag_tape_memory(quiet = TRUE)
  before <- ag_memory_stats()$total$current
  ag_tape_clear()
  freed <- before - ag_memory_stats()$total$current
  expect_gt(r$bytes_snapshots, 0)  # nolint: object_usage_linter.
  expect_identical(freed, r$bytes_snapshots)  # nolint: object_usage_linter.
}

test_that("ag_tape_memory after an MLP step reports exactly the bytes ag_tape_clear frees", {
  set.seed(5)
  m <- ag_sequential(ag_linear(4, 32, activation = "relu"), ag_linear(32, 3))
  clear_matches_report(m, ag_tensor(matrix(rnorm(64), 4, 16)), ag_tensor(matrix(rnorm(48), 3, 16)))
})

test_that("... and with batch norm, dropout and attention", {
  set.seed(6)
  m <- ag_sequential(ag_linear(8, 16, activation = "relu"), ag_batch_norm(16), ag_dropout(0.2),
                     ag_linear(16, 8))
  clear_matches_report(m, ag_tensor(matrix(rnorm(128), 8, 16)),
                       ag_tensor(matrix(rnorm(128), 8, 16)))
  att <- ag_multihead_attention(8, 2)
  clear_matches_report(att, ag_tensor(matrix(rnorm(48), 8, 6)), ag_tensor(matrix(rnorm(48), 8, 6)))
})
