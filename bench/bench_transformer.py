"""One transformer block's training step: pyggmlr eager, pyggmlr compiled (ag_compile), PyTorch's
idiomatic loop (when torch is importable) and the step's GEMMs alone (numpy), in one process.

Block: embedding, causal multi-head attention (with dropout 0), residual, layer norm, a GELU MLP
(width 4d), residual, layer norm, the vocabulary head, softmax cross-entropy, Adam; f32, one
thread. Sizes: large (vocabulary 1000, width 256, 4 heads, 128 tokens) and small (64, 32, 4,
16). Medians of BENCH_ROUNDS rounds, taken round-robin over the four columns (a noisy spell
of a shared machine hits them alike); ratios against PyTorch and against the GEMM floor; the
CPU is printed. Writes bench/results/bench_transformer.json (with each size's first loss, which
bench_transformer.R checks bit for bit). Run: python bench/bench_transformer.py. Numbers are
printed, never asserted.

BENCH_R=embedded adds R's eager and compiled steps (bench_transformer.R's, sourced into R
embedded through rpy2 on Python's GEMM) to the same round-robin: each round calls R once to run
its steps in R's own loop, so R and Python share every noisy spell and R / Python is a ratio of
one process's medians (separate Rscript runs on a VM whose speed drifts are not). R's first
loss must equal Python's bit for bit. rpy2's event hooks make R's interpreter a little slower
than in Rscript, so R's ratios here are upper bounds. Needs R, rpy2 and the R package (R_LIBS
for a local library)."""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")


import numpy as np  # noqa: E402
from bench_common import cpu_name, medians_interleaved, write_results  # noqa: E402

import pyggmlr as pg  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_ROUNDS", 7))
R_EMBEDDED = os.environ.get("BENCH_R") == "embedded"
SIZES = {"large": (1000, 256, 4, 128), "small": (64, 32, 4, 16)}


def _block(V, D, H):
    emb, att = pg.ag_embedding(V, D), pg.ag_multihead_attention(D, H)
    ln1, ln2 = pg.ag_layer_norm(D), pg.ag_layer_norm(D)
    f1, f2, head = pg.ag_linear(D, 4 * D, "gelu"), pg.ag_linear(4 * D, D), pg.ag_linear(D, V)
    layers = (emb, att, ln1, f1, f2, ln2, head)
    params = {}
    for i, m in enumerate(layers):
        for k, t in m.parameters().items():
            params[f"l{i}_{k}"] = t

    def loss(ids, tgt):
        h = emb(ids)
        h = ln1(pg.ag_add(h, att.forward(h, causal_mask=True)))
        h = ln2(pg.ag_add(h, f2(f1(h))))
        return pg.ag_softmax_cross_entropy_loss(head(h), tgt)

    return params, loss


def pyggmlr_steps(V, D, H, T):
    pg.ggml_set_seed(1)
    params, loss = _block(V, D, H)
    ids = pg.ag_tensor((pg.random.sample_int(V, T, replace=True) - 1).reshape(1, T).astype(float))
    tgt = pg.ag_tensor((pg.random.sample_int(V, T, replace=True) - 1).reshape(1, T).astype(float))
    loss0 = float(np.asarray(loss(ids, tgt)).ravel()[0])  # before any step: R's first loss
    opt = pg.optimizer_adam(params, lr=1e-3)

    def eager():
        with pg.with_grad_tape():
            lv = loss(ids, tgt)
        opt.step(pg.backward(lv))
        opt.zero_grad()

    pg.ggml_set_seed(1)
    params2, loss2 = _block(V, D, H)
    opt2 = pg.optimizer_adam(params2, lr=1e-3)
    step = pg.ag_compile(loss2, ids, tgt, build="opt", optimizer=opt2)
    return eager, lambda: step(ids, tgt), loss0


def torch_step(V, D, H, T):
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(1)

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(V, D)
            self.att = torch.nn.MultiheadAttention(D, H, batch_first=True)
            self.ln1, self.ln2 = torch.nn.LayerNorm(D), torch.nn.LayerNorm(D)
            self.mlp = torch.nn.Sequential(
                torch.nn.Linear(D, 4 * D), torch.nn.GELU(), torch.nn.Linear(4 * D, D)
            )
            self.head = torch.nn.Linear(D, V)

        def forward(self, ids):
            h = self.emb(ids)
            mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
            h = self.ln1(h + self.att(h, h, h, attn_mask=mask, need_weights=False)[0])
            h = self.ln2(h + self.mlp(h))
            return self.head(h)

    m = Block()
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    pg.ggml_set_seed(1)  # the same token ids as pyggmlr's step, from the core's generator
    ids = torch.tensor(pg.random.sample_int(V, T, replace=True) - 1).reshape(1, T)
    tgt = torch.tensor(pg.random.sample_int(V, T, replace=True) - 1)
    lossf = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        lossf(m(ids)[0], tgt).backward()
        opt.step()

    return step


def gemm_floor(V, D, H, T):
    """The step's GEMMs alone: each forward product and its two backward products."""
    pg.ggml_set_seed(0)  # inputs from the core's generator, as everything else

    def normal(r, c):
        return pg.random.rnorm(r * c).reshape((r, c), order="F").astype(np.float32)

    dh = D // H
    shapes = (
        [(D, D, T)] * 4
        + [(T, dh, T)] * H
        + [(dh, T, T)] * H
        + [(4 * D, D, T), (D, 4 * D, T), (V, D, T)]
    )
    mats = [(normal(m, k), normal(k, n), normal(m, n)) for m, k, n in shapes]

    def step():
        for a, b, g in mats:
            a @ b
            g @ b.T
            a.T @ g

    return step


def r_steps(V, D, H, T, reps):
    """R's (eager, compiled) steps of bench_transformer.R, each call running `reps` steps in R's
    own loop, and R's first loss (BENCH_R=embedded)."""
    from pyggmlr import r

    if not r.available():
        raise SystemExit(f"bench_transformer: BENCH_R=embedded: {r.unavailable_reason()}")
    r.start()  # R's core on Python's GEMM
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_transformer.R")
    loss0 = r.run(
        "source(src); ag_set_threads(1L); st <- steps(V, D, H, T)\n"
        "loop <- function(f) function() for (i in seq_len(reps)) f()\n"
        "assign('.bench_tf', list(eager = loop(st$eager), compiled = loop(st$compiled)), globalenv())\n"
        "st$loss0",
        src=src, V=V, D=D, H=H, T=T, reps=reps,
    )  # fmt: skip
    fns = [r.run(f".bench_tf${k}") for k in ("eager", "compiled")]
    return [lambda f=f: r.call(f) for f in fns], float(loss0)


def medians_ms(fns, reps, calls=None):
    for fn in fns:  # warm up (and record buffers)
        fn()
    return [s * 1e3 for s in medians_interleaved(fns, ROUNDS, reps, calls)]


def main():
    pg.ag_set_threads(1)
    print(
        f"pyggmlr {pg.__version__}, GEMM: {pg.ag_blas_name()}, CPU: {cpu_name()}, f32, 1 thread, medians of {ROUNDS}"
    )
    print(
        f"{'size':<7}{'eager ms':>10}{'compiled':>10}{'torch':>9}{'GEMMs':>9}{'eager/torch':>13}{'compiled/torch':>16}"
        f"{'compiled/GEMMs':>16}" + (f"{'R eager':>10}{'R comp':>10}{'R/Py eager':>12}{'R/Py comp':>11}" if R_EMBEDDED else "")
    )  # fmt: skip
    out = {}
    for name, (V, D, H, T) in SIZES.items():
        reps = 5 if name == "large" else 200
        eager, compiled, loss0 = pyggmlr_steps(V, D, H, T)
        cols = {"eager": eager, "compiled": compiled, "gemm": gemm_floor(V, D, H, T)}
        if R_EMBEDDED:
            (cols["r_eager"], cols["r_compiled"]), r_loss0 = r_steps(V, D, H, T, reps)
            if r_loss0 != loss0:
                print(f"  {name}: R's first loss differs from Python's ({r_loss0!r} vs {loss0!r})")
        try:
            cols["torch"] = torch_step(V, D, H, T)
        except ImportError:
            pass
        # round-robin rounds: the columns share each noisy spell of a shared machine
        calls = [1 if k.startswith("r_") else reps for k in cols]
        m = dict(zip(cols, medians_ms(list(cols.values()), reps, calls)))
        e, c, g, t = m["eager"], m["compiled"], m["gemm"], m.get("torch", float("nan"))
        line = f"{name:<7}{e:>10.3f}{c:>10.3f}{t:>9.3f}{g:>9.3f}{e / t:>13.2f}{c / t:>16.2f}{c / g:>16.2f}"
        if R_EMBEDDED:
            re_, rc = m["r_eager"], m["r_compiled"]
            line += f"{re_:>10.3f}{rc:>10.3f}{re_ / e:>12.2f}{rc / c:>11.2f}"
        print(line)
        out[name] = {f"{k}_ms": v for k, v in m.items()} | {"loss0": loss0}
    print(
        "(torch columns: NaN when torch is not installed; pip install torch==2.13.0 takes a local CPU wheel)"
    )
    # for bench_transformer.R (R / Python); NaN (no torch) written as null
    clean = {k: {a: (None if b != b else b) for a, b in v.items()} for k, v in out.items()}
    write_results("bench_transformer", {"cpu": cpu_name(), "sizes": clean})


if __name__ == "__main__":
    main()
