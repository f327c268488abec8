# Recurrent layers: ag_lstm, ag_gru, ag_rnn, as Python's nn/recurrent.py (torch.nn.LSTM / GRU /
# RNN with batch_first). The whole sequence runs in one core op per layer and direction
# (native/ops_rnn.c: forward, exact backpropagation through time, compiled replays); this file
# checks the arguments, draws the weights and stacks the ops.
# A sequence batch is x [F*T, N]: column n is one sequence, its time steps' features stacked.

.RNN_MODE <- c(tanh = 0L, relu = 1L, lstm = 2L, gru = 3L)  # the core's enum pg_rnn_mode
.RNN_GATES <- c(lstm = 4L, gru = 3L, rnn = 1L)

.recurrent <- function(kind, input_size, hidden_size, num_layers, bias, dropout, bidirectional,
                       return_sequences, nonlinearity = "tanh", return_state = FALSE) {
  fn <- paste0("ag_", kind)
  e <- .layer(kind, "")
  e$input_size <- .arg_int(input_size, fn, "input_size", 1L)
  e$hidden_size <- .arg_int(hidden_size, fn, "hidden_size", 1L)
  e$num_layers <- .arg_int(num_layers, fn, "num_layers", 1L)
  e$bias <- .arg_flag(bias, fn, "bias")
  e$dropout <- .arg_num(dropout, fn, "dropout", 0, 1, hi_open = TRUE)
  e$bidirectional <- .arg_flag(bidirectional, fn, "bidirectional")
  e$return_sequences <- .arg_flag(return_sequences, fn, "return_sequences")
  e$return_state <- .arg_flag(return_state, fn, "return_state")
  if (kind == "rnn") {
    if (!.is_str(nonlinearity) || !nonlinearity %in% c("tanh", "relu"))
      .arg_fail("value", "%s: nonlinearity must be 'tanh' or 'relu', got %s", fn,
                .arg_show(nonlinearity))
    e$nonlinearity <- nonlinearity
    mode <- .RNN_MODE[[nonlinearity]]
  } else {
    mode <- .RNN_MODE[[kind]]
  }
  H <- e$hidden_size
  G <- .RNN_GATES[[kind]]
  D <- if (e$bidirectional) 2L else 1L
  a <- 1 / sqrt(H)  # torch's default: every tensor U(-1/sqrt(hidden), 1/sqrt(hidden))
  b <- if (e$bias) 2 else 0  # the values to allocate, closed form (doubles): a loop over
  # num_layers = 2^31 - 1 layers hung before the memory check could refuse them (issue 29)
  n <- as.double(D) * G * H * ((e$input_size + H + b) + (e$num_layers - 1) * (D * H + H + b))
  what <- sprintf("for input_size = %d, hidden_size = %d, num_layers = %d", e$input_size, H,
                  e$num_layers)
  params <- list()
  .layer_memory(fn, what, n, {
    for (l in seq_len(e$num_layers) - 1L) {
      f_in <- if (l == 0L) e$input_size else D * H
      for (k in seq_len(D) - 1L) {
        sx <- paste0("_l", l, if (k == 1L) "_reverse" else "")
        shapes <- list(W_ih = c(G * H, f_in), W_hh = c(G * H, H))
        if (e$bias) shapes <- c(shapes, list(b_ih = c(G * H, 1L), b_hh = c(G * H, 1L)))
        for (nm in names(shapes))  # torch's order, one draw each, column-major
          params[[paste0(nm, sx)]] <- ag_param(.uniform_weight(shapes[[nm]][1L], shapes[[nm]][2L],
                                                               a, fn))
      }
    }
  })
  e$params_list <- params
  extra <- paste0("", if (identical(e$nonlinearity, "relu")) ", relu",
                  if (e$num_layers > 1L) sprintf(", num_layers=%d", e$num_layers),
                  if (e$bidirectional) ", bidirectional",
                  if (e$dropout != 0) sprintf(", dropout=%.15g", e$dropout),
                  if (e$return_sequences) ", return_sequences",
                  if (e$return_state) ", return_state")
  e$name <- sprintf("%s(%d, %d%s)", kind, e$input_size, H, extra)
  e$output_size <- D * H
  e$parameters <- function() e$params_list
  states <- function(s, arg, N) {  # one [H, N] tensor per layer and direction, or NULLs
    k <- e$num_layers * D
    if (is.null(s)) return(vector("list", k))
    if (is.list(s) && !is_ag_tensor(s)) {
      if (length(s) != k)
        .arg_fail("shape", paste0("%s: %s has %d states, expected %d (one [hidden_size, batch] ",
                                  "per layer and direction)"), fn, arg, length(s), k)
      return(lapply(s, function(v) .need_tensor(v, fn, e$params_list[[1L]])))
    }
    t <- .need_tensor(s, fn, e$params_list[[1L]])
    d <- dim(t)
    if (d[1L] != k * H || d[2L] != N)
      .arg_fail("shape", paste0("%s: %s is [%dx%d] but must be [%d, %d] (num_layers * ",
                                "directions * hidden_size, batch)"), fn, arg, d[1L], d[2L], k * H,
                N)
    if (k == 1L) return(list(t))
    lapply(seq_len(k) - 1L, function(i) .wrap(.Call(R_pg_slice_rows, t$.ptr, i * H, H)))
  }
  e$forward <- function(x, h0 = NULL, c0 = NULL) {
    x <- .need_tensor(x, fn, e$params_list[[1L]])  # the weights' dtype, as Python's
    if (!is.null(c0) && kind != "lstm")
      .arg_fail("argument", "%s: c0 (an initial cell state) is for ag_lstm only", fn)
    n_in <- e$input_size
    d <- dim(x)
    if (d[1L] < n_in || d[1L] %% n_in != 0)
      .arg_fail("shape", paste0("%s: x is [%dx%d], its rows are not a multiple of input_size = ",
                                "%d; x is [input_size*T, batch], each column one sequence with ",
                                "the time steps' features stacked (numpy (N, T, F) as ",
                                "x.reshape(N, -1).T)"), fn, d[1L], d[2L], n_in)
    steps <- d[1L] %/% n_in
    hs <- states(h0, "h0", d[2L])
    cs <- states(c0, "c0", d[2L])
    seq <- x
    outs <- list()
    hn <- list()  # the final states per layer and direction; the LSTM's cells come out of the op
    cn <- list()
    cell <- e$return_state && kind == "lstm"
    for (l in seq_len(e$num_layers) - 1L) {
      if (l > 0L && e$dropout != 0 && isTRUE(e$training)) seq <- .dropout_mul(seq, e$dropout)
      outs <- list()
      for (k in seq_len(D) - 1L) {
        sx <- paste0("_l", l, if (k == 1L) "_reverse" else "")
        p <- e$params_list
        b <- function(nm) if (e$bias) p[[paste0(nm, sx)]]$.ptr else NULL
        h <- hs[[l * D + k + 1L]]
        cc <- cs[[l * D + k + 1L]]
        o <- .wrap(.Call(R_pg_rnn, mode, seq$.ptr, p[[paste0("W_ih", sx)]]$.ptr,
                         p[[paste0("W_hh", sx)]]$.ptr, b("b_ih"), b("b_hh"),
                         if (is.null(h)) NULL else h$.ptr, if (is.null(cc)) NULL else cc$.ptr,
                         k + if (cell) 2L else 0L))  # flags: PG_RNN_REVERSE, PG_RNN_CELL
        if (cell) {  # [H*T + H, N]: the hidden states over the last cell state
          cn[[length(cn) + 1L]] <- .wrap(.Call(R_pg_slice_rows, o$.ptr, steps * H, H))
          o <- .wrap(.Call(R_pg_slice_rows, o$.ptr, 0, steps * H))
        }
        outs[[k + 1L]] <- o
        if (e$return_state || (l == e$num_layers - 1L && !e$return_sequences))
          hn[[length(hn) + 1L]] <- .wrap(.Call(R_pg_slice_rows, o$.ptr,
                                               if (k == 0L) (steps - 1) * H else 0, H))
      }
      seq <- if (D == 1L) outs[[1L]] else .wrap(.Call(R_pg_seq_concat, outs[[1L]]$.ptr,
                                                      outs[[2L]]$.ptr, steps, fn))
    }
    nh <- length(hn)
    out <- if (e$return_sequences) seq
           else if (D == 1L) hn[[nh]]
           else .wrap(.Call(R_pg_concat_rows, hn[[nh - 1L]]$.ptr, hn[[nh]]$.ptr))
    if (!e$return_state) return(out)
    stack <- function(ts) Reduce(function(a, t) .wrap(.Call(R_pg_concat_rows, a$.ptr, t$.ptr)), ts)
    c(list(out, stack(hn)), if (cell) list(stack(cn)))
  }
  e$to_config <- function() {
    cfg <- list(type = kind, input_size = e$input_size, hidden_size = H,
                num_layers = e$num_layers, bias = e$bias, dropout = e$dropout,
                bidirectional = e$bidirectional, return_sequences = e$return_sequences,
                return_state = e$return_state)
    if (kind == "rnn") cfg$nonlinearity <- e$nonlinearity
    cfg
  }
  e
}

ag_lstm <- function(input_size, hidden_size, num_layers = 1L, bias = TRUE, dropout = 0,
                    bidirectional = FALSE, return_sequences = FALSE, return_state = FALSE) {
  .recurrent("lstm", input_size, hidden_size, num_layers, bias, dropout, bidirectional,
             return_sequences, return_state = return_state)
}

ag_gru <- function(input_size, hidden_size, num_layers = 1L, bias = TRUE, dropout = 0,
                   bidirectional = FALSE, return_sequences = FALSE, return_state = FALSE) {
  .recurrent("gru", input_size, hidden_size, num_layers, bias, dropout, bidirectional,
             return_sequences, return_state = return_state)
}

ag_rnn <- function(input_size, hidden_size, num_layers = 1L, bias = TRUE, dropout = 0,
                   bidirectional = FALSE, return_sequences = FALSE, nonlinearity = "tanh",
                   return_state = FALSE) {
  .recurrent("rnn", input_size, hidden_size, num_layers, bias, dropout, bidirectional,
             return_sequences, nonlinearity, return_state)
}

# A sequence batch from an R array: dim c(N, T, F) ("NTF", keras's) or c(T, N, F) ("TNF",
# torch's default); a matrix is one feature per step, c(N, T) / c(T, N). The core does the copy
# (pg_sequences), as Python's ag_sequences from numpy's arrays.
ag_sequences <- function(x, layout = "NTF", dtype = ag_default_dtype()) {
  fn <- "ag_sequences"
  .batch_array(fn, x, layout, c("NTF", "TNF"), " (a tensor [F*T, N] is already the layers' input)")
  d <- dim(x)
  if (!(length(d) %in% c(2L, 3L)))
    .arg_fail("shape", "%s: x must be a 3-d array c(%s) or a matrix c(%s), got dim %s", fn,
              paste(strsplit(layout, "")[[1L]], collapse = ", "),
              paste(strsplit(substr(layout, 1L, 2L), "")[[1L]], collapse = ", "), .arg_show(d))
  d <- as.double(d)
  st <- cumprod(c(1, d))[seq_along(d)]  # the stride of each dimension
  if (length(d) == 2L) {
    d <- c(d, 1)
    st <- c(st, 0)
  }
  if (layout == "TNF") {  # the core takes (n, step, feature)
    d <- d[c(2L, 1L, 3L)]
    st <- st[c(2L, 1L, 3L)]
  }
  code <- .dtype_code(dtype, fn)  # ag_tensor's rule, class and text (Python's DTypeError)
  .wrap(.Call(R_pg_sequences, as.double(x), d, st, code, fn))
}
