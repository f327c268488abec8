"""Command line: ``python -m pyggmlr <command>``.

Commands:
  demo   train a small MLP on the shipped iris data with ag_fit (progress bar, per-epoch table,
         final accuracy), print the tape memory report and the memory estimate beside the
         measured peak, train a CNN next to an MLP on the 8x8 digits, save a loss-curve PNG and, when R is available, run the same training
         through the R package (rpy2) and print one parity line (no network; a few seconds).
  parity run every cross-language parity case in Python and in R (through rpy2), print the
         table and exit non-zero on any mismatch (the harness in tests/parity of a source
         checkout, not installed with the package; needs R and rpy2)."""

import argparse
import gc
import importlib
import os
import sys
import tempfile
import time

import numpy as np

import pyggmlr as pg

from . import r


def _nbytes(t):
    return t.size * (4 if t.dtype == "f32" else 8)


def _kib(n):
    return f"{n:,} bytes ({n / 1024:.1f} KiB)"


class _EpochBar:
    """One progress bar for the whole run (tqdm when installed, else a line every 10 epochs),
    driven by ag_fit's callbacks."""

    def __init__(self, nepoch, quiet):
        self.nepoch, self.quiet, self.bar = nepoch, quiet, None
        if not quiet:
            try:
                from tqdm.auto import tqdm

                self.bar = tqdm(total=nepoch, desc="training", unit="epoch", dynamic_ncols=True)
            except ImportError:
                pass

    def on_epoch_end(self, epoch, logs):
        if self.quiet:
            return None
        post = f"loss={logs['loss']:.4f} val_loss={logs['val_loss']:.4f} val_acc={logs['val_accuracy']:.3f}"
        if self.bar is not None:
            self.bar.set_postfix_str(post, refresh=False)
            self.bar.update(1)
        elif epoch % 10 == 0 or epoch == self.nepoch:
            print(f"training: epoch {epoch}/{self.nepoch}  {post}", flush=True)
        return None

    def on_train_end(self, fit):
        if self.bar is not None:
            self.bar.close()


def _memory(pg, model, x, y, batch_size):
    """The tape report of one training step, the model-based estimate and the measured peak of
    the same step from a clean start (weights + batch + tape + gradients + Adam moments)."""
    xb = pg.ag_tensor(x[:, :batch_size])
    yb = pg.ag_tensor(y[:batch_size])  # [batch, 1]: one 0-based class id per sample
    loss_fn = pg.ag_softmax_cross_entropy_loss

    with pg.with_grad_tape():
        loss = loss_fn(model.forward(xb), yb)
    grads = pg.backward(loss)
    print(
        "Tape after one forward + backward on a batch of "
        f"{batch_size} (ag_tape_memory, between backward() and the step):"
    )
    rep = pg.ag_tape_memory(top=5, quiet=True)
    print(rep)
    print(
        f"  in bytes: {rep.bytes_total:,} held ({rep.bytes_inputs:,} operands, "
        f"{rep.bytes_snapshots:,} activations, {rep.bytes_fields:,} node structs)"
    )
    del grads, loss
    pg.ag_tape_clear()
    gc.collect()

    est = pg.ag_estimate_training_memory(
        model=model, x=xb, y=yb, loss_fn=loss_fn, optimizer="adam", quiet=True
    )
    print()
    print(est)

    # measured: one full step (forward, backward, Adam) from a clean start, counted like the
    # estimate: the weights plus everything the step allocates
    weights = sum(_nbytes(t) for t in model.parameters().values())
    base = pg.ag_memory_stats()["total"]["current"] - weights - _nbytes(xb) - _nbytes(yb)
    opt = pg.optimizer_adam(model.parameters(), lr=1e-3)
    pg.ag_memory_reset_peak()
    with pg.with_grad_tape():
        loss = loss_fn(model.forward(xb), yb)
    grads = pg.backward(loss)
    opt.step(grads)
    peak = pg.ag_memory_peak() - base
    del grads, loss
    opt.zero_grad()
    del opt
    gc.collect()
    print(
        f"  in bytes: {est.weights:,} weights + {est.gradients:,} gradients + {est.optimizer:,} Adam "
        f"moments + {est.activations:,} activations"
    )
    print(
        f"memory: estimate {_kib(int(est.total))} vs measured peak of one training step "
        f"{_kib(peak)} (ag_memory_peak; estimate / measured = {est.total / peak:.3f})"
    )
    return est.total, peak


_R_TRAIN = r"""
ggml_set_seed(seed)
model <- ag_sequential(ag_linear(4L, hidden, activation = "relu"), ag_linear(hidden, 3L))
h <- ag_fit(model, x, y, loss = "cross_entropy", optimizer = "adamw", lr = lr, nepoch = nepoch,
            batch_size = batch_size, val_split = val_split, seed = seed, silent = TRUE)
list(losses = h$loss, val_accuracy = h$val_accuracy,
     params = lapply(model$parameters(), function(p) p$data))
"""


def _r_parity(pg, weights, hist, x, y, args):
    """The demo's script run again in R (the R package through rpy2) from the same seed alone:
    the same initial weights, shuffles and validation split come from R's generator in both
    languages; returns the parity line."""
    why = r.unavailable_reason()
    if why:
        return f"R parity: skipped ({why})"
    try:
        t0 = time.perf_counter()
        r.start()
    except Exception as e:  # noqa: BLE001  (R present but the package is not installed, ...)
        return f"R parity: skipped ({e})"
    res = r.run(
        _R_TRAIN,
        x=np.asfortranarray(x),
        y=np.asarray(y).astype(np.int32),
        hidden=args.hidden,
        lr=args.lr,
        nepoch=args.epochs,
        batch_size=args.batch_size,
        val_split=args.val_split,
        seed=args.seed,
    )
    d_loss = float(np.max(np.abs(np.asarray(res["losses"], float) - np.asarray(hist.loss, float))))
    d_w = max(
        float(np.max(np.abs(np.asarray(res["params"][k], float) - w.astype(float))))
        for k, w in weights.items()
    )
    n = sum(w.size for w in weights.values())
    return (
        f"R parity: the same script in R (seed {args.seed} only: nothing passed across but the data): "
        f"max |R - Python| = {d_w:.3g} over the {n} final weights, {d_loss:.3g} over the "
        f"{args.epochs} epoch losses (R via rpy2 in {time.perf_counter() - t0:.1f} s)"
    )


def _digits_cnn(seed):
    """The 8x8 digits: a CNN next to an MLP of about its size, the same split and settings
    (vignettes/07-images.md); the test accuracy and the training time of each."""
    x, y, _, _ = pg.load_digits()
    x = x / 16
    pg.ggml_set_seed(seed)
    order = pg.random.sample_int(x.shape[1]) - 1
    test, train = order[:360], order[360:]
    models = {
        "MLP 64-128-64-10": lambda: pg.ag_sequential(
            pg.ag_linear(64, 128, "relu"), pg.ag_linear(128, 64, "relu"), pg.ag_linear(64, 10)
        ),
        "CNN conv3x3 16, pool, conv3x3 32, pool, 64, 10": lambda: pg.ag_sequential(
            pg.ag_conv2d(1, 16, 3, padding=1, activation="relu", input_shape=(1, 8, 8)),
            pg.ag_max_pool2d(2),
            pg.ag_conv2d(16, 32, 3, padding=1, activation="relu"),
            pg.ag_max_pool2d(2),
            pg.ag_flatten(),
            pg.ag_linear(128, 64, "relu"),
            pg.ag_linear(64, 10),
        ),
    }
    print(f"digits: {train.size} 8x8 images to train on, {test.size} to test (30 epochs, Adam)")
    for name, make in models.items():
        pg.ggml_set_seed(seed + 1)
        model = make()
        n = sum(int(np.prod(t.shape)) for t in model.parameters().values())
        t0 = time.perf_counter()
        pg.ag_fit(model, x[:, train], y[train], loss="cross_entropy", nepoch=30, batch_size=32,
                  lr=3e-3, seed=seed + 2, verbose=0)  # fmt: skip
        secs = time.perf_counter() - t0
        acc = pg.ag_evaluate(model, x[:, test], y[test], metrics="accuracy")["accuracy"]
        print(f"  {name:<48} {n:>6,} parameters  test accuracy {acc:.4f}  ({secs:.2f} s)")


def _cmd_demo(args):
    x, y, classes = pg.load_iris()
    x = (x - x.mean(axis=1, keepdims=True)) / x.std(axis=1, keepdims=True)
    print(
        f"pyggmlr {pg.__version__} demo: iris ({x.shape[1]} flowers, {x.shape[0]} features, "
        f"{len(classes)} classes: {', '.join(classes)}); data are [features, samples] = {list(x.shape)}"
    )
    pg.ggml_set_seed(args.seed)
    model = pg.ag_sequential(
        pg.ag_linear(4, args.hidden, "relu"), pg.ag_linear(args.hidden, len(classes))
    )
    print(model)
    print(
        f"ag_fit: AdamW lr={args.lr:g}, {args.epochs} epochs, batch_size={args.batch_size}, "
        f"val_split={args.val_split:g}, seed={args.seed}"
    )
    t0 = time.perf_counter()
    hist = pg.ag_fit(
        model,
        x,
        y,
        loss="cross_entropy",
        optimizer="adamw",
        lr=args.lr,
        nepoch=args.epochs,
        batch_size=args.batch_size,
        val_split=args.val_split,
        seed=args.seed,
        silent=True,
        callbacks=[_EpochBar(args.epochs, args.quiet)],
    )
    secs = time.perf_counter() - t0
    trained = {
        k: t.numpy() for k, t in model.parameters().items()
    }  # the memory report below steps the model
    print()
    print(hist.table())
    print()
    n_val = int(round(args.val_split * x.shape[1]))
    print(
        f"final validation accuracy: {hist.val_accuracy[-1]:.4f} ({n_val} held-out flowers), "
        f"validation loss: {hist.val_loss[-1]:.5f}; trained in {secs:.2f} s"
    )
    print()
    _memory(pg, model, x, y, args.batch_size)
    print()
    _digits_cnn(args.seed)
    print()

    if args.plot != "none":
        path = args.plot or os.path.join(tempfile.gettempdir(), "pyggmlr-demo-loss.png")
        try:
            import matplotlib

            if not os.environ.get("MPLBACKEND"):
                matplotlib.use("Agg")  # files only, never a window
        except ImportError:
            print("loss curve: skipped (matplotlib is not installed; pip install matplotlib)")
        else:
            fig = hist.plot()
            fig.suptitle(
                f"pyggmlr demo: {model.layers[0].in_features}-{args.hidden}-{len(classes)} MLP on iris "
                f"(AdamW lr={args.lr:g}, batch {args.batch_size}); bands: ± standard error"
            )
            fig.tight_layout()
            fig.savefig(path, dpi=100)
            print(f"loss curve: {path}")

    if args.no_r:
        print("R parity: skipped (--no-r)")
    else:
        print(_r_parity(pg, trained, hist, x, y, args))
    return 0


def _parser():
    p = argparse.ArgumentParser(prog="python -m pyggmlr", description="pyggmlr command line tools.")
    sub = p.add_subparsers(dest="command", metavar="command")
    d = sub.add_parser(
        "demo",
        help="train an MLP on iris with ag_fit and report the results",
        description="Train a 4-16-3 MLP on the shipped iris data with ag_fit (AdamW), "
        "print a per-epoch table and the final validation accuracy, the "
        "tape memory report and the memory estimate beside the measured "
        "peak, save a loss-curve PNG, and (when R, rpy2 and the R package "
        "are installed) compare the same training run in R.",
    )
    d.add_argument("--epochs", type=int, default=50, help="number of epochs (default 50)")
    d.add_argument("--hidden", type=int, default=16, help="hidden units (default 16)")
    d.add_argument("--lr", type=float, default=0.01, help="AdamW learning rate (default 0.01)")
    d.add_argument("--batch-size", type=int, default=16, help="batch size (default 16)")
    d.add_argument("--val-split", type=float, default=0.2, help="held-out fraction (default 0.2)")
    d.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    d.add_argument(
        "--plot",
        default=None,
        metavar="PATH",
        help="where to save the loss curve (default: pyggmlr-demo-loss.png in the temp "
        "directory; 'none' to skip)",
    )
    d.add_argument("--quiet", action="store_true", help="no progress bar")
    d.add_argument("--no-r", action="store_true", help="skip the R parity run")
    d.set_defaults(func=_cmd_demo)
    # listed for --help; main() hands `parity ...` to _parity (the harness has its own options)
    sub.add_parser(
        "parity", add_help=False, help="compare Python and R (rpy2) case by case, bit for bit"
    )
    return p


def _parity(argv):
    """`parity ...`: run tests/parity's main() from the source checkout this package sits in;
    exits 2 with one line saying where the harness lives when there is none (an install)."""
    tests = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests")
    if not os.path.isfile(os.path.join(tests, "parity", "__init__.py")):
        print(
            "pyggmlr parity: the parity harness is not installed with the package; it lives in "
            "tests/parity of the source checkout (run python -m pyggmlr parity there)",
            file=sys.stderr,
        )
        return 2
    sys.path.insert(0, tests)
    try:
        parity = importlib.import_module("parity")
    finally:
        sys.path.remove(tests)
    return parity.main(argv)


def main(argv=None):
    """Run the command line (``argv`` defaults to ``sys.argv[1:]``); returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["parity"]:
        return _parity(argv[1:])
    p = _parser()
    args = p.parse_args(argv)
    if not getattr(args, "func", None):
        p.print_help()
        return 1
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
