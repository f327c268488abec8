"""What a training step holds in memory: the tape report, the estimate, and the core's measured peak.

The Python counterpart of ggmlR's inst/scripts/measure_ag_tape_memory.R, with measurements
instead of guesses. Sweeps relu MLPs (depth 1/2/4/8/16 at width D and batch B; batch 1/8/32/128
at depth 4; width 64/128/256/512 at depth 4) and an attention block (d_model 64, 4 heads, seq
32/64/128). For each case it prints:

  tape   nodes, total MB, operands MB, activations MB and freeable % (= activations / total) of
         ag_tape_memory() called where ggmlR says to call it: after backward(), the gradient
         map still held; "free%-map" is the freeable share once the map is dropped too
  est    ag_estimate_training_memory(model=, input_shape=) total (MB)
  step   measured peak of one full training step from a clean start (forward, MSE loss,
         backward, Adam step; weights + batch + everything the step allocates), and est/step
  loop   measured peak of the third step of a loop that keeps `grads` until the next
         backward() returns (the usual `grads = backward(loss)` loop), and est/loop
  shapes the shapes-only estimate (activation_frac = 0.01): total / step, and its activations
         against the measured ones (frac*: the activation_frac that would have been exact)

Environment: GGMLR_TAPE_D (default 128), GGMLR_TAPE_BATCH (default 32), BENCH_DTYPE (f32).
Writes bench/results/bench_memory.json. Runs in a few seconds.
"""

import gc
import json
import os
import pathlib
import platform
import sys

import numpy as np

import pyggmlr as pg

D = int(os.environ.get("GGMLR_TAPE_D", 128))
BATCH = int(os.environ.get("GGMLR_TAPE_BATCH", 32))
DTYPE = os.environ.get("BENCH_DTYPE", "f32")
MB = 1024.0**2


def current():
    return pg.ag_memory_stats()["total"]["current"]


def n_bytes(model):
    return sum(t.size for t in model.parameters().values()) * (4 if DTYPE == "f32" else 8)


def mlp(depth, width):
    return pg.ag_sequential(*[pg.ag_linear(width, width, "relu") for _ in range(depth)])


def tape_report(model, features, batch):
    """Tape figures after backward(), with the map held (ggmlR's calling point) and dropped."""
    x = pg.ag_tensor(np.zeros((features, batch)))
    y = pg.ag_tensor(np.zeros((features, batch)))
    with pg.with_grad_tape():
        loss = pg.ag_mse_loss(model.forward(x), y)
    grads = pg.backward(loss)
    held = pg.ag_tape_memory(quiet=True)
    del grads
    gc.collect()
    dropped = pg.ag_tape_memory(quiet=True)
    before = current()
    pg.ag_tape_clear()
    assert before - current() == dropped.bytes_snapshots, (
        "clearing must free exactly bytes_snapshots"
    )
    return held, dropped


def step_peak(model, features, batch):
    """Peak bytes of one training step from a clean start, counting weights and batch."""
    gc.collect()
    base = current() - n_bytes(model)
    opt = pg.optimizer_adam(model.parameters())
    pg.ag_memory_reset_peak()
    x = pg.ag_tensor(np.zeros((features, batch)))
    y = pg.ag_tensor(np.zeros((features, batch)))
    with pg.with_grad_tape():
        loss = pg.ag_mse_loss(model.forward(x), y)
    grads = pg.backward(loss)
    opt.step(grads)
    peak = pg.ag_memory_peak() - base
    del grads, loss, x, y
    opt.zero_grad()
    del opt
    gc.collect()
    return peak


def loop_peak(model, features, batch, steps=3):
    """Peak of the last step of a plain loop: `grads` lives until the next backward() returns."""
    gc.collect()
    base = current() - n_bytes(model)
    opt = pg.optimizer_adam(model.parameters())
    x = pg.ag_tensor(np.zeros((features, batch)))
    y = pg.ag_tensor(np.zeros((features, batch)))
    grads = loss = None
    for k in range(steps):
        if k == steps - 1:
            pg.ag_memory_reset_peak()
        with pg.with_grad_tape():
            loss = pg.ag_mse_loss(model.forward(x), y)
        grads = pg.backward(loss)
        opt.step(grads)
        opt.zero_grad()
    peak = pg.ag_memory_peak() - base
    del grads, loss, x, y, opt
    gc.collect()
    return peak


def run_case(name, model, features, batch):
    held, dropped = tape_report(model, features, batch)
    est = pg.ag_estimate_training_memory(model=model, input_shape=(features, batch), quiet=True)
    shapes = [t.shape for t in model.parameters().values()]
    guess = pg.ag_estimate_training_memory(shapes, batch_size=batch, quiet=True)
    step = step_peak(model, features, batch)
    loop = loop_peak(model, features, batch)
    return {
        "case": name,
        "features": features,
        "batch": batch,
        "nodes": held.nodes,
        "tape_total": held.bytes_total,
        "tape_operands": held.bytes_inputs,
        "tape_activations": held.bytes_snapshots,
        "tape_fields": held.bytes_fields,
        "freeable_pct": 100.0 * held.bytes_snapshots / held.bytes_total,
        "freeable_pct_map_dropped": 100.0 * dropped.bytes_snapshots / dropped.bytes_total,
        "params": est.params,
        "estimate_total": est.total,
        "estimate_activations": est.activations,
        "step_peak": step,
        "ratio_step": est.total / step,
        "loop_peak": loop,
        "ratio_loop": est.total / loop,
        "shapes_total": guess.total,
        "shapes_ratio_step": guess.total / step,
        "shapes_activations": guess.activations,
        "shapes_activation_ratio": guess.activations / est.activations,
        "exact_activation_frac": est.activations / (guess.weights * batch),
    }


HEADER = (
    f"{'case':<16s}{'nodes':>6s}{'total MB':>10s}{'operands':>10s}{'activ.':>9s}{'free%':>7s}"
    f"{'free%-map':>10s}{'est MB':>9s}{'step MB':>9s}{'est/step':>9s}{'loop MB':>9s}{'est/loop':>9s}"
    f"{'shapes/step':>12s}{'act guess/real':>15s}{'frac*':>8s}"
)


def fmt(r):
    return (
        f"{r['case']:<16s}{r['nodes']:6d}{r['tape_total'] / MB:10.2f}{r['tape_operands'] / MB:10.2f}"
        f"{r['tape_activations'] / MB:9.2f}{r['freeable_pct']:7.1f}{r['freeable_pct_map_dropped']:10.1f}"
        f"{r['estimate_total'] / MB:9.2f}{r['step_peak'] / MB:9.2f}{r['ratio_step']:9.4f}"
        f"{r['loop_peak'] / MB:9.2f}{r['ratio_loop']:9.4f}{r['shapes_ratio_step']:12.3f}"
        f"{r['shapes_activation_ratio']:15.3f}{r['exact_activation_frac']:8.3f}"
    )


def main():
    pg.ag_dtype(DTYPE)
    pg.ggml_set_seed(42)
    rows = []
    sweeps = [
        ("depth", [(f"depth {d}", d, D, BATCH) for d in (1, 2, 4, 8, 16)]),
        ("batch", [(f"batch {b}", 4, D, b) for b in (1, 8, 32, 128)]),
        ("width", [(f"width {w}", 4, w, BATCH) for w in (64, 128, 256, 512)]),
    ]
    print(f"pyggmlr {pg.__version__}, dtype {DTYPE}, D = {D}, batch = {BATCH}; MB = 2^20 bytes")
    for title, cases in sweeps:
        print(f"\n-- {title} sweep (relu MLP) --")
        print(HEADER)
        for name, depth, width, batch in cases:
            r = run_case(name, mlp(depth, width), width, batch)
            r["sweep"], r["model"] = title, f"mlp depth {depth} width {width}"
            rows.append(r)
            print(fmt(r))
    print("\n-- attention block (d_model 64, 4 heads) --")
    print(HEADER)
    for seq in (32, 64, 128):
        r = run_case(f"attn seq {seq}", pg.ag_multihead_attention(64, 4), 64, seq)
        r["sweep"], r["model"] = "attention", "multihead_attention d_model 64 heads 4"
        rows.append(r)
        print(fmt(r))

    print(f"\n-- per-op table, depth 16 (width {D}, batch {BATCH}), after backward() --")
    model = mlp(16, D)
    x = pg.ag_tensor(np.zeros((D, BATCH)))
    with pg.with_grad_tape():
        loss = pg.ag_mse_loss(model.forward(x), np.zeros((D, BATCH)))
    grads = pg.backward(loss)
    table = pg.ag_tape_memory(top=10)
    del grads, loss
    pg.ag_tape_clear()

    mlp_rows = [r for r in rows if r["sweep"] != "attention"]
    worst = max(abs(r["ratio_step"] - 1) for r in rows)
    print(
        f"\nestimate vs one-step peak: worst |ratio - 1| = {100 * worst:.3f} % over {len(rows)} cases "
        f"(goal: within 2 %)"
    )
    print(
        f"est/loop over MLP cases: {min(r['ratio_loop'] for r in mlp_rows):.3f} .. "
        f"{max(r['ratio_loop'] for r in mlp_rows):.3f} (a held gradient map keeps the previous step's gradients)"
    )
    fr = [r["exact_activation_frac"] for r in mlp_rows]
    print(
        f"shapes-only activation_frac = 0.01 vs exact: exact frac ranges {min(fr):.3f} .. {max(fr):.3f} on MLPs"
    )

    out = pathlib.Path(__file__).resolve().parent / "results" / "bench_memory.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "bench": "bench_memory",
                "dtype": DTYPE,
                "D": D,
                "batch": BATCH,
                "python": sys.version.split()[0],
                "machine": platform.machine(),
                "pyggmlr": pg.__version__,
                "node_bytes": pg._core.lib.pg_tape_node_bytes(),
                "cases": rows,
                "per_op_depth16": table["by_op"],
                "worst_step_ratio_error": worst,
            },
            indent=1,
        )
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
