"""Command line: ``python -m pyggmlr <command>``.

Commands:
  demo   train a small MLP on the shipped iris data with ag_fit, print the per-epoch table and
         the validation accuracy, save a loss-curve PNG (needs no network; a few seconds).
  parity run every cross-language parity case in Python and in R (through rpy2), print the
         table and exit non-zero on any mismatch (pyggmlr.parity; needs R and rpy2)."""
import argparse
import os
import sys
import tempfile
import time


def _cmd_demo(args):
    import pyggmlr as pg

    x, y, classes = pg.load_iris()
    x = (x - x.mean(axis=1, keepdims=True)) / x.std(axis=1, keepdims=True)
    print(f"pyggmlr {pg.__version__} demo: iris ({x.shape[1]} flowers, {x.shape[0]} features, "
          f"{len(classes)} classes: {', '.join(classes)})")
    pg.ggml_set_seed(args.seed)
    model = pg.ag_sequential(pg.ag_linear(4, args.hidden, "relu"), pg.ag_linear(args.hidden, len(classes)))
    print(model)
    print(f"ag_fit: AdamW lr={args.lr:g}, {args.epochs} epochs, batch_size={args.batch_size}, "
          f"val_split={args.val_split:g}, seed={args.seed}")
    t0 = time.perf_counter()
    hist = pg.ag_fit(model, x, y, loss="cross_entropy", optimizer="adamw", lr=args.lr, nepoch=args.epochs,
                     batch_size=args.batch_size, val_split=args.val_split, seed=args.seed, silent=args.quiet)
    secs = time.perf_counter() - t0
    print()
    print(hist.table())
    print()
    n_val = int(round(args.val_split * x.shape[1]))
    print(f"final validation accuracy: {hist.val_accuracy[-1]:.4f} ({n_val} held-out flowers), "
          f"validation loss: {hist.val_loss[-1]:.5f}; trained in {secs:.2f} s")
    if args.plot == "none":
        return 0
    path = args.plot or os.path.join(tempfile.gettempdir(), "pyggmlr-demo-loss.png")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("loss curve: skipped (matplotlib is not installed; pip install matplotlib)")
        return 0
    hist.plot(path)
    print(f"loss curve: {path}")
    return 0


def _parser():
    p = argparse.ArgumentParser(prog="python -m pyggmlr", description="pyggmlr command line tools.")
    sub = p.add_subparsers(dest="command", metavar="command")
    d = sub.add_parser("demo", help="train an MLP on iris with ag_fit and report the results",
                       description="Train a 4-16-3 MLP on the shipped iris data with ag_fit (AdamW), "
                                   "print a per-epoch table and the final validation accuracy, and save a "
                                   "loss-curve PNG.")
    d.add_argument("--epochs", type=int, default=50, help="number of epochs (default 50)")
    d.add_argument("--hidden", type=int, default=16, help="hidden units (default 16)")
    d.add_argument("--lr", type=float, default=0.01, help="AdamW learning rate (default 0.01)")
    d.add_argument("--batch-size", type=int, default=16, help="batch size (default 16)")
    d.add_argument("--val-split", type=float, default=0.2, help="held-out fraction (default 0.2)")
    d.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    d.add_argument("--plot", default=None, metavar="PATH",
                   help="where to save the loss curve (default: pyggmlr-demo-loss.png in the temp "
                        "directory; 'none' to skip)")
    d.add_argument("--quiet", action="store_true", help="no progress bars")
    d.set_defaults(func=_cmd_demo)
    # listed for --help; main() hands `parity ...` to pyggmlr.parity.main (its own options)
    sub.add_parser("parity", add_help=False, help="compare Python and R (rpy2) case by case, bit for bit")
    return p


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["parity"]:
        from . import parity
        return parity.main(argv[1:])
    p = _parser()
    args = p.parse_args(argv)
    if not getattr(args, "func", None):
        p.print_help()
        return 1
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
