# One transformer block's training step in R: the model of bench_transformer.py (embedding,
# causal multi-head attention, residual, layer norm, GELU MLP of width 4d, residual, layer norm,
# the vocabulary head, softmax cross-entropy, Adam; f32, one thread), eager (with_grad_tape ->
# backward -> opt$step) and compiled (ag_compile), sizes large (V 1000, d 256, 4 heads, T 128)
# and small (64, 32, 4, 16). Medians of BENCH_ROUNDS rounds. The weights and token ids come
# from set.seed(1), so the first loss equals Python's bit for bit; when
# bench/results/bench_transformer.json exists (run bench_transformer.py first, same machine)
# it checks that loss and prints R / Python. Run: Rscript bench/bench_transformer.R
# Numbers are printed, never asserted.
suppressPackageStartupMessages(library(pyggmlr))
ag_set_threads(as.integer(Sys.getenv("BENCH_THREADS", "1")))
rounds <- as.integer(Sys.getenv("BENCH_ROUNDS", "7"))
sizes <- list(large = c(V = 1000, D = 256, H = 4, T = 128),
              small = c(V = 64, D = 32, H = 4, T = 16))

block <- function(V, D, H, T) {
  set.seed(1)
  emb <- ag_embedding(V, D)
  att <- ag_multihead_attention(D, H)
  ln1 <- ag_layer_norm(D)
  ln2 <- ag_layer_norm(D)
  f1 <- ag_linear(D, 4 * D, "gelu")
  f2 <- ag_linear(4 * D, D)
  head <- ag_linear(D, V)
  ps <- function(m) if (is.function(m$parameters)) m$parameters() else m$params()  # ag_linear
  params <- unlist(lapply(list(emb, att, ln1, f1, f2, ln2, head), ps), recursive = FALSE,
                   use.names = FALSE)
  loss <- function(ids, tgt) {
    h <- emb$forward(ids)
    h <- ln1$forward(ag_add(h, att$forward(h, causal_mask = TRUE)))
    h <- ln2$forward(ag_add(h, f2$forward(f1$forward(h))))
    ag_softmax_cross_entropy_loss(head$forward(h), tgt)
  }
  ids <- ag_tensor(matrix(sample.int(V, T, replace = TRUE) - 1, 1))
  tgt <- ag_tensor(matrix(sample.int(V, T, replace = TRUE) - 1, 1))
  list(params = params, loss = loss, ids = ids, tgt = tgt)
}

steps <- function(V, D, H, T) {
  b <- block(V, D, H, T)
  loss0 <- as.numeric(b$loss(b$ids, b$tgt)$data)  # before any step: Python's first loss
  opt <- optimizer_adam(b$params, lr = 1e-3)
  eager <- function() {
    with_grad_tape(lv <- b$loss(b$ids, b$tgt))
    opt$step(backward(lv))
    opt$zero_grad()
  }
  c2 <- block(V, D, H, T)
  step <- ag_compile(c2$loss, c2$ids, c2$tgt, optimizer = optimizer_adam(c2$params, lr = 1e-3))
  list(loss0 = loss0, eager = eager, compiled = function() step(c2$ids, c2$tgt))
}

median_ms <- function(fn, reps) {
  fn()  # warm up (and record buffers)
  per <- vapply(seq_len(rounds), function(r) {
    t0 <- Sys.time()
    for (i in seq_len(reps)) fn()
    as.numeric(Sys.time() - t0, units = "secs") / reps
  }, numeric(1))
  median(per) * 1e3
}

# run as a script (Rscript); sourced (bench_transformer.py's BENCH_R=embedded), only defines
main <- function() {
  jf <- file.path("bench", "results", "bench_transformer.json")
  py <- if (file.exists(jf)) jsonlite::fromJSON(jf)$sizes else NULL
  cat(sprintf("pyggmlr (R) %s, GEMM: %s, f32, %s thread(s), medians of %d\n",
              utils::packageVersion("pyggmlr"), ag_blas_name(), Sys.getenv("BENCH_THREADS", "1"),
              rounds))
  cat(sprintf("%-7s%10s%10s%12s%12s%14s%12s\n", "size", "eager ms", "compiled", "Py eager",
              "Py compiled", "R/Py eager", "R/Py comp"))
  for (nm in names(sizes)) {
    s <- sizes[[nm]]
    st <- steps(s[["V"]], s[["D"]], s[["H"]], s[["T"]])
    reps <- if (nm == "large") 10L else 200L
    e <- median_ms(st$eager, reps)
    cm <- median_ms(st$compiled, reps)
    p <- if (!is.null(py)) py[[nm]] else NULL
    if (!is.null(p) && !identical(p$loss0, st$loss0))
      cat(sprintf("  %s: the first loss differs from Python's (%.17g vs %.17g)\n", nm, st$loss0,
                  p$loss0))
    pe <- if (is.null(p)) NA else p$eager_ms
    pc <- if (is.null(p)) NA else p$compiled_ms
    cat(sprintf("%-7s%10.3f%10.3f%12.3f%12.3f%14.2f%12.2f\n", nm, e, cm, pe, pc, e / pe, cm / pc))
  }
  if (is.null(py)) cat("(Python columns: NA; run python bench/bench_transformer.py first)\n")
}

if (sys.nframe() == 0L) main()
