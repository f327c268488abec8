# Layers as R closures over core ops. Initialisers draw in ggmlR's order, through the core's copy
# of R's generator (random.R), from the one stream R's set.seed() seeds.

# 0-based row / class ids: numbers with whole values only (as.integer would take 1.5 as 1, TRUE
# as 1 and 0.9 as 0), as doubles: the core checks the range and names an id past R's integers;
# Python's _class_ids (ops.py) has the same texts
.ids <- function(v, fn, what) {
  if (is.logical(v)) .arg_fail("argument", "%s: %s must be 0-based integers, got booleans", fn,
                               what)
  if (!is.numeric(v) || is.factor(v)) .arg_fail("argument", "%s: %s must be numeric, got %s", fn,
                                                what, class(v)[[1L]])
  v <- as.double(as.vector(v))
  # NA, NaN, +/-Inf, 2.5: the core's rule and text (pg_arg_whole_ids, as Python's _class_ids)
  .Call(R_pg_arg_whole_ids, fn, what, v)
  v
}

# NULL is the identity; an unknown name is an error (ggmlR silently used the identity), as in Python
.act <- function(activation, fn = "ag_linear") {
  if (is.null(activation)) return(identity)
  acts <- list(gelu = ag_gelu, relu = ag_relu, sigmoid = ag_sigmoid, softmax = ag_softmax,
               tanh = ag_tanh)
  if (!is.character(activation) || length(activation) != 1L || !activation %in% names(acts))
    .arg_stop(sprintf("%s: activation must be one of %s or NULL, got %s", fn,
                 paste(sprintf("'%s'", names(acts)), collapse = ", "),
                 paste(deparse(activation), collapse = " ")), kind = "value")
  acts[[activation]]
}

# U(-a, a) [rows, cols]: one runif(rows * cols, -a, a) filled column-major (ggmlR's draw); the
# count in double (no integer overflow); a draw too large for memory names the layer
.uniform_weight <- function(rows, cols, a, op) {
  u <- tryCatch(.rng_runif(as.double(rows) * cols, -a, a), error = function(e)
    .arg_fail("memory", "%s: out of memory drawing a [%dx%d] weight (%s)", op, as.integer(rows),
              as.integer(cols),
              conditionMessage(e)))
  matrix(u, rows, cols)
}

# A layer's allocations (expr): n values (R's double copy and the tensor, 16 bytes each) checked
# against the memory available before the first (the core's pg_check_alloc), and R's own
# "cannot allocate vector" (or a core memory error) inside re-raised naming the layer and its
# size, as Python does: pyggmlr_memory_error "ag_batch_norm: out of memory allocating ..."
.layer_memory <- function(op, what, n, expr) {
  if (n > 0) .Call(R_pg_check_alloc, op, what, as.double(n))
  tryCatch(expr, error = function(e) {
    msg <- conditionMessage(e)
    if (inherits(e, "pyggmlr_memory_error") && startsWith(msg, paste0(op, ":"))) stop(e)
    if (inherits(e, "pyggmlr_memory_error") || grepl("cannot allocate", msg, fixed = TRUE))
      .arg_fail("memory", "%s: out of memory %s (%s)", op, what, msg)
    stop(e)
  })
}

.glorot <- function(out, inp, gain = 1, op = "ag_linear") {
  a <- gain * sqrt(6 / (inp + out))
  .uniform_weight(out, inp, a, op)
}

# init: "glorot_uniform" (one runif(out * in, -a, a), a = sqrt(6 / (in + out)); ggmlR's default and
# draw order), "orthogonal" (QR of a Gaussian with the sign fix), a function (out, in) -> matrix, or
# an [out, in] matrix; checked in ggmlR 0.8.6's order and texts, before any draw.
.init_weight <- function(init, gain, out, inp) {
  if (is.character(init)) {
    init <- .arg_match(init, c("glorot_uniform", "orthogonal"), "ag_linear", "init")
    w <- if (init == "glorot_uniform") .glorot(out, inp) else .orthogonal(out, inp, 1)
    return(if (gain != 1) w * gain else w)  # scaled after the draw: gain = 1 keeps the bits
  }
  if (gain != 1)
    .arg_stop("ag_linear: gain applies to string inits only; scale a function or matrix init ",
              "yourself", kind = "value")
  w <- if (is.function(init)) init(out, inp) else init
  if (is_ag_tensor(w)) w <- w$data
  if (!is.matrix(w) || !is.numeric(w))
    .arg_stop("ag_linear: init must be \"glorot_uniform\", \"orthogonal\", a function(out, in) ",
              "or a numeric matrix", kind = "value")
  if (!identical(dim(w), c(out, inp)))
    .arg_fail("shape", "ag_linear: init matrix is %dx%d, expected %dx%d (out x in)", nrow(w),
              ncol(w), out, inp)
  if (!all(is.finite(w))) .arg_stop("ag_linear: init matrix contains NA, NaN or Inf",
                                    kind = "value")
  storage.mode(w) <- "double"
  w
}

# G = matrix(rnorm(n * k), n, k), n = max(out, in), k = min; Q of its QR with the sign fix; W = Q
# or t(Q), times gain (the core, so R and Python get the same bits).
.orthogonal <- function(out, inp, gain) .Call(R_pg_rng_orthogonal, out, inp, gain)

ag_linear <- function(in_features, out_features, activation = NULL, init = "glorot_uniform",
                      gain = 1) {
  in_features <- .arg_int(in_features, "ag_linear", "in_features", 1L)
  out_features <- .arg_int(out_features, "ag_linear", "out_features", 1L)
  kind <- is.numeric(gain) && length(gain) == 1L
  gain <- if (kind) as.double(gain) else NaN
  .Call(R_pg_arg_gain, "ag_linear", gain, !kind)  # the core's rule and text, as Python's
  act <- .act(activation)  # refused before anything is drawn
  .layer_memory("ag_linear", sprintf("for in_features = %d, out_features = %d (a [%dx%d] weight)",
                                     in_features, out_features, out_features, in_features), 0, {
    W <- ag_param(.init_weight(init, gain, out_features, in_features))
    b <- ag_param(matrix(0, out_features, 1L))
  })
  # relu / sigmoid / tanh (or none) fuse with the matmul and bias into one node (as in Python)
  fused <- if (is.null(activation)) .pg$code$act[["NONE"]]
           else .pg$code$act[toupper(activation)][[1L]]
  init_name <- if (is.character(init)) .arg_match(init, c("glorot_uniform", "orthogonal"),
                                                  "ag_linear", "init") else "glorot_uniform"
  # a classed list (ggmlR's was a plain list): $W, $forward, is.list() as before, R-like print
  structure(list(W = W, b = b,
       forward = function(x) {
         if (!is.na(fused)) return(.Call(R_pg_linear, W, x, b, fused))
         act(ag_add(ag_matmul(W, x), b))
       },
       params = function() list(W = W, b = b),
       to_config = function() list(type = "linear", in_features = in_features,
                                   out_features = out_features,
                                   activation = activation, init = init_name, gain = gain)),
       class = c("ag_linear", "list"))
}

.layer <- function(kind, name, training = TRUE) {
  e <- new.env(parent = emptyenv())
  e$name <- name
  e$training <- training
  class(e) <- c(paste0("ag_", kind), "ag_layer")
  e
}

ag_dropout <- function(rate) {
  rate <- .arg_num(rate, "ag_dropout", "rate", 0, 1, hi_open = TRUE)
  # the name as Python's (%.15g; format() followed options(digits): 0.1234568)
  e <- .layer("dropout", sprintf("dropout(%.15g)", as.double(rate)))
  e$rate <- rate
  e$forward <- function(x) {
    rate <- .subset2(e, "rate")  # (`$` on a classed environment looks for a method first)
    if (!isTRUE(.subset2(e, "training")) || rate == 0) return(x)
    .dropout_mul(x, rate)  # compile.R: a compiled step redraws the mask on every call
  }
  e$parameters <- function() list()
  e$to_config <- function() list(type = "dropout", rate = e$rate)
  e
}

ag_batch_norm <- function(num_features, eps = 1e-5, momentum = 0.1) {
  n_feat <- .arg_int(num_features, "ag_batch_norm", "num_features", 1L)
  eps <- .arg_num(eps, "ag_batch_norm", "eps", 0)
  momentum <- .arg_num(momentum, "ag_batch_norm", "momentum", 0, 1)
  e <- .layer("batch_norm", sprintf("batch_norm(%d)", n_feat))
  e$num_features <- n_feat
  e$eps <- eps
  e$momentum <- momentum
  .layer_memory("ag_batch_norm",
                sprintf(paste0("allocating num_features = %d ([%dx1] gamma, beta, running_mean, ",
                               "running_var)"), n_feat, n_feat), 4 * n_feat, {
    e$gamma <- ag_param(matrix(1, n_feat, 1L))
    e$beta <- ag_param(matrix(0, n_feat, 1L))
    e$.running_mean <- ag_tensor(matrix(0, n_feat, 1L))
    e$.running_var <- ag_tensor(matrix(1, n_feat, 1L))
  })
  makeActiveBinding("running_mean", function(value) {
    if (missing(value)) e$.running_mean$data else e$.running_mean$data <- value
  }, e)
  makeActiveBinding("running_var", function(value) {
    if (missing(value)) e$.running_var$data else e$.running_var$data <- value
  }, e)
  e$forward <- function(x) {
    x <- .need_tensor(x, "ag_batch_norm", .subset2(e, "gamma"))  # its dtype, as Python's
    f <- function(name) .subset2(.subset2(e, name), ".ptr")  # the fields' handles, without `$`
    .wrap(.Call(R_pg_batch_norm, .subset2(x, ".ptr"), f("gamma"), f("beta"), f(".running_mean"),
                f(".running_var"), .subset2(e, "eps"), .subset2(e, "momentum"),
                isTRUE(.subset2(e, "training"))))
  }
  e$parameters <- function() list(gamma = e$gamma, beta = e$beta)
  e$buffers <- function() list(running_mean = e$.running_mean, running_var = e$.running_var)
  e$to_config <- function() list(type = "batch_norm", num_features = e$num_features, eps = e$eps,
                                 momentum = e$momentum)
  e
}

# ggmlR 0.8.3's layer norm: per column over its d features; gamma/beta only when affine
ag_layer_norm <- function(normalized_shape, eps = 1e-5, elementwise_affine = TRUE,
                          num_features = NULL) {
  # older name
  if ((missing(normalized_shape) || is.null(normalized_shape)) && !is.null(num_features))
    normalized_shape <- num_features  # (NULL too, as Python's None)
  # one number >= 1 in R's integer range, truncated as ggmlR's as.integer() (4.9 -> 4): the core's
  # rule and text (as Python's); a factor, a data frame, a logical or a string is a bad value
  d <- .arg_as_integer(normalized_shape, "ag_layer_norm", "normalized_shape",
                  "a single positive integer", kind_error = FALSE)
  eps <- .arg_num(eps, "ag_layer_norm", "eps", 0)
  e <- .layer("layer_norm", sprintf("layer_norm(%d)", d))
  e$normalized_shape <- d
  e$num_features <- d
  e$eps <- eps
  e$elementwise_affine <- isTRUE(elementwise_affine)
  .layer_memory("ag_layer_norm",
                sprintf("allocating normalized_shape = %d ([%dx1] gamma and beta)", d, d),
                if (e$elementwise_affine) 2 * d else 0, {
    e$gamma <- if (e$elementwise_affine) ag_param(matrix(1, d, 1L)) else NULL
    e$beta <- if (e$elementwise_affine) ag_param(matrix(0, d, 1L)) else NULL
  })
  e$forward <- function(x) {
    x <- .need_tensor(if (is.numeric(x) && is.null(dim(x))) matrix(x, ncol = 1L) else x,
                      "ag_layer_norm", .subset2(e, "gamma"))
    n <- .Call(R_pg_tensor_info, .subset2(x, ".ptr"))[[2L]]
    if (n != d) .arg_fail("shape", "ag_layer_norm: expected %d features, got %d", d, n)
    g <- .subset2(e, "gamma")
    b <- .subset2(e, "beta")
    .wrap(.Call(R_pg_layer_norm, .subset2(x, ".ptr"), if (!is.null(g)) .subset2(g, ".ptr"),
                if (!is.null(b)) .subset2(b, ".ptr"), .subset2(e, "eps")))
  }
  e$parameters <- function() if (e$elementwise_affine) list(gamma = e$gamma,
                                                            beta = e$beta) else list()
  e$to_config <- function() list(type = "layer_norm", normalized_shape = d, eps = e$eps,
                                 elementwise_affine = e$elementwise_affine)
  e
}

print.ag_layer_norm <- function(x, ...) {
  cat(sprintf("ag_layer_norm(%d) | eps=%g | affine=%s\n", x$normalized_shape, x$eps,
              x$elementwise_affine))
  invisible(x)
}

ag_embedding <- function(vocab_size, dim) {
  V <- .arg_int(vocab_size, "ag_embedding", "vocab_size", 1L)
  D <- .arg_int(dim, "ag_embedding", "dim", 1L)
  e <- .layer("embedding", sprintf("embedding(%d, %d)", V, D))
  e$vocab_size <- V
  e$dim <- D
  a <- sqrt(1 / V)
  .layer_memory("ag_embedding",
                sprintf("for vocab_size = %d, dim = %d (a [%dx%d] weight)", V, D, D, V), 0,
                e$weight <- ag_param(.uniform_weight(D, V, a, "ag_embedding")))
  e$forward <- function(idx) {
    # ids in a tensor are read by the core on every run, so compiled graphs refill them
    w <- .subset2(.subset2(e, "weight"), ".ptr")  # (`$` on a classed environment: a lookup)
    if (inherits(idx, "ag_tensor"))
      return(.wrap(.Call(R_pg_embedding_ids, w, .subset2(idx, ".ptr"))))
    .wrap(.Call(R_pg_embedding, w, .ids(idx, "ag_embedding", "ids")))
  }
  e$parameters <- function() list(weight = e$weight)
  e$to_config <- function() list(type = "embedding", vocab_size = e$vocab_size, dim = e$dim)
  e
}

ag_slice_rows <- function(x, from, n)  # whole numbers (1.5 was truncated), as Python's
  .wrap(.Call(R_pg_slice_rows, .need_tensor(x, "ag_slice_rows")$.ptr,
              # R's integer range at both ends, as Python's (-1e300 reached an undefined
              # (int64_t) cast: issue 29)
              .arg_int(from, "ag_slice_rows", "from", -.INT_MAX),
              .arg_int(n, "ag_slice_rows", "n", -.INT_MAX)))
ag_concat_rows <- function(a, b) {  # plain data take the tensor operand's dtype, as Python's
  a <- .need_tensor(a, "ag_concat_rows", if (inherits(b, "ag_tensor")) b)
  .wrap(.Call(R_pg_concat_rows, a$.ptr, .need_tensor(b, "ag_concat_rows", a)$.ptr))
}

ag_multihead_attention <- function(d_model, n_heads, dropout = 0.0, bias = TRUE) {
  d_model <- .arg_int(d_model, "ag_multihead_attention", "d_model", 1L)
  n_heads <- .arg_int(n_heads, "ag_multihead_attention", "n_heads", 1L)
  .Call(R_pg_mha_check_sizes, d_model, n_heads)  # the core's rule and text (ggmlR's: stopifnot)
  dropout <- .arg_num(dropout, "ag_multihead_attention", "dropout", 0, 1, hi_open = TRUE)
  e <- .layer("multihead_attention", sprintf("multihead_attention(d=%d, h=%d)", d_model, n_heads))
  e$d_model <- d_model
  e$n_heads <- n_heads
  e$d_k <- d_model %/% n_heads
  e$d_v <- e$d_k
  e$scale <- 1 / sqrt(e$d_k)
  e$dropout <- as.double(dropout)
  op <- "ag_multihead_attention"
  .layer_memory(op, sprintf("for d_model = %d (4 [%dx%d] weights)", d_model, d_model, d_model), 0, {
    e$W_q <- ag_param(.glorot(d_model, d_model, op = op))
    e$W_k <- ag_param(.glorot(d_model, d_model, op = op))
    e$W_v <- ag_param(.glorot(d_model, d_model, op = op))
    e$W_o <- ag_param(.glorot(d_model, d_model, op = op))
    e$b_o <- if (isTRUE(bias)) ag_param(matrix(0, d_model, 1L)) else NULL
  })
  e$forward <- function(q, k = q, v = k, causal_mask = FALSE) {
    f <- .subset2  # e's fields without `$`'s method lookup on a classed environment
    if (is.null(k)) k <- q  # NULL as the default, as Python's None
    if (is.null(v)) v <- k
    w <- f(e, "W_q")  # plain data take the weights' dtype, as Python's
    q <- .need_tensor(q, "ag_multihead_attention", w)
    k <- .need_tensor(k, "ag_multihead_attention", w)
    v <- .need_tensor(v, "ag_multihead_attention", w)
    .Call(R_pg_mha_check, f(e, "d_model"), q, k, v)  # the core's shape checks and texts
    causal_mask <- .arg_flag(causal_mask, "ag_multihead_attention", "causal_mask")  # as Python
    Q <- ag_matmul(f(e, "W_q"), q)
    K <- ag_matmul(f(e, "W_k"), k)
    Vv <- ag_matmul(f(e, "W_v"), v)
    # the heads, one core op (ops_mha.c): the composed per-head loop's bits, one tape node
    rate <- if (isTRUE(f(e, "training"))) f(e, "dropout") else 0
    heads <- .wrap(.Call(R_pg_mha_heads, f(Q, ".ptr"), f(K, ".ptr"), f(Vv, ".ptr"),
                         f(e, "n_heads"), f(e, "scale"), causal_mask, rate))
    out <- ag_matmul(f(e, "W_o"), heads)
    b <- f(e, "b_o")
    if (!is.null(b)) out <- ag_add(out, b)
    out
  }
  e$parameters <- function() {
    p <- list(W_q = e$W_q, W_k = e$W_k, W_v = e$W_v, W_o = e$W_o)
    if (!is.null(e$b_o)) p$b_o <- e$b_o
    p
  }
  e$to_config <- function() list(type = "multihead_attention", d_model = e$d_model,
                                 n_heads = e$n_heads,
                                 dropout = e$dropout, bias = !is.null(e$b_o))
  e
}

# (.subset2: `$` on a classed layer looks for a method first; ag_fit's set-up calls this often)
.layer_params <- function(l) {
  if (is.environment(l)) {  # parameters(), else ggmlR's params() (as Python's objects)
    f <- .subset2(l, "parameters")
    if (!is.function(f)) f <- .subset2(l, "params")
    return(if (is.function(f)) f() else list())
  }
  if (is.list(l)) {
    f <- .subset2(l, "params")
    if (is.function(f)) return(f())
    f <- .subset2(l, "parameters")
    if (is.function(f)) return(f())
  }
  list()
}

# a sequential's forward: each layer's in order (ag_fit's input check walks the layers of a
# sequential whose forward this still is: .SEQ_FORWARD)
.seq_forward <- function(e) function(x) {
  # .subset2: `$` on a classed layer looks for a method first (5x the time, ag_fit's hot path)
  for (l in .subset2(e, "layers")) x <- .subset2(l, "forward")(x)
  x
}
.SEQ_FORWARD <- body(.seq_forward(NULL))

ag_sequential <- function(...) {
  layers <- list(...)
  # one plain list of layers (but not a single ag_linear, which is itself a list)
  if (length(layers) == 1L && is.list(layers[[1L]]) && !is.environment(layers[[1L]]) &&
      !is.function(layers[[1L]]$forward))
    layers <- layers[[1L]]
  if (!length(layers)) .arg_fail("argument", "ag_sequential: needs at least one layer, got none")
  for (i in seq_along(layers)) {
    l <- layers[[i]]  # `$` on a number or a string is R's own error: checked first
    if (!(is.list(l) || is.environment(l)) || !is.function(l$forward))
      .arg_fail("argument", "ag_sequential: layer %d has no forward function (got %s)", i,
                if (is.list(l) || is.environment(l)) class(l)[[1L]] else .arg_show(l))
    if (isTRUE(l$return_state))  # a list feeds no next layer
      .arg_fail("argument", paste0("ag_sequential: layer %d (%s) has return_state set: it ",
                                   "returns (output, h_n[, c_n]), a sequential passes one tensor ",
                                   "from layer to layer; call the layer directly"), i, l$name)
  }
  e <- .layer("sequential", "sequential")
  e$layers <- layers
  e$forward <- .seq_forward(e)
  # the layers' parameters (or buffers) in order, named layer<i>_<name>
  per_layer <- function(get) {
    out <- list()
    layers <- .subset2(e, "layers")
    for (i in seq_along(layers)) {
      p <- get(layers[[i]])
      if (length(p)) {
        names(p) <- paste0("layer", i, "_", names(p))
        out <- c(out, p)
      }
    }
    out
  }
  e$parameters <- function() per_layer(.layer_params)
  e$buffers <- function() per_layer(.layer_buffers)
  e$to_config <- function() {
    cfgs <- lapply(seq_along(e$layers), function(i) {
      l <- e$layers[[i]]
      if (!is.function(l$to_config))
        .arg_fail("value", paste0("ag_sequential to_config: layer %d (%s) has no to_config(); ",
                                  "give custom layers to_config() and register a builder with ",
                                  "ag_register_layer(), or rebuild the model yourself and load ",
                                  "only the weights"), i, .layer_label(l))
      l$to_config()
    })
    list(type = "sequential", layers = cfgs)
  }
  e
}

# buffers (non-trainable state tensors, e.g. batch-norm running statistics) of a layer
# (state.R: a layer's buffers(), else those of its layer-like $layers with ggmlR 0.8.5's nested
# keys)
.layer_buffers <- function(l) .state_buffers(l)

.layer_label <- function(l) {
  if (is.environment(l) && !is.null(l$name)) l$name
  else if (inherits(l, "ag_linear")) .linear_label(l)  # print.R: Python's name, linear(4, 16, relu)
  else class(l)[[1L]]
}

print.ag_sequential <- function(x, ...) {
  cat(sprintf("ag_sequential (%d layers, %s mode)\n", length(x$layers),
              if (isTRUE(x$training)) "train" else "eval"))
  for (i in seq_along(x$layers)) cat(sprintf("  [%d] %s\n", i, .layer_label(x$layers[[i]])))
  .target_line(x)  # predict.R: the loss and labels ag_fit recorded
  invisible(x)
}

# a built-in layer alone: the core's text, as Python's repr ("ag_gru: gru(1, 32) (3360
# parameters, train mode)"), the name the sequential's print and summary() use
print.ag_layer <- function(x, ...) {
  cat(.Call(R_pg_layer_print_text, sub("^ag_", "", class(x)[[1L]]), .layer_label(x),
            as.double(.n_params(x)), isTRUE(x$training)), "\n", sep = "")
  .target_line(x)
  invisible(x)
}

ag_train <- function(model) UseMethod("ag_train")
ag_eval <- function(model) UseMethod("ag_eval")

.set_training <- function(model, flag) {
  if (is.environment(model)) {
    model$training <- flag
    if (is.list(model$layers))
      for (l in model$layers) if (is.environment(l)) { if (flag) ag_train(l) else ag_eval(l) }
  }
  invisible(model)
}

ag_train.default <- function(model) .set_training(model, TRUE)
ag_eval.default <- function(model) .set_training(model, FALSE)
