"""ag_flash_attention (one fused core node) against the ag_multihead_attention composition it
replaces, forward + backward, one thread.

The composition is ag_multihead_attention's attention core without its projections (there are
none in ag_flash_attention): per head ag_slice_rows of q, k, v, the transposed scores product,
the causal mask, ag_softmax, ag_matmul with v_h, ag_concat_rows of the heads. Both run on a tape,
then backward of sum(out * G). Cases: d_model 256, 4 heads, seq 128 and d_model 32, 4 heads, seq
16, plain and causal, f32 and f64; the results are checked against each other first.
PyTorch's scaled_dot_product_attention runs beside them when torch is importable (it is not
installed for this: the column then shows "-"). Medians (µs) of BENCH_ROUNDS rounds in turns,
the ratio fused / composition (below 1: the fused op is faster) and the CPU are printed and
written to bench/results/bench_flash.json. Run: python bench/bench_flash.py
"""

import os

from bench_common import pin_blas_env

pin_blas_env()

import functools  # noqa: E402
import pathlib  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402
from bench_common import cell, cpu_name, median_us, write_results  # noqa: E402

import pyggmlr as pg  # noqa: E402

# the composition, shared with tests/test_attention.py (which checks it against numpy)
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
from _fd import attention_composition as composition  # noqa: E402

try:
    import torch  # noqa: E402

    torch.set_num_threads(1)
except ImportError:
    torch = None

ROUNDS = int(os.environ.get("BENCH_ROUNDS", 15))
CASES = [(256, 4, 128), (32, 4, 16)]  # (d_model, n_heads, seq)


def fused(Q, K, V, H, causal):
    return pg.ag_flash_attention(Q, K, V, H, causal=causal)


def step(f, Q, K, V, G, H, causal):
    with pg.with_grad_tape():
        out = f(Q, K, V, H, causal)
        loss = pg.ag_sum(pg.ag_mul(out, G))
    g = pg.backward(loss)
    return out, g


def torch_step(q, k, v, g, H, causal):
    """q, k, v [seq, d_model] leaves (torch's row = our column), heads split from the features."""
    S, D = q.shape

    def split(t):  # [H, seq, d_head]
        return t.reshape(S, H, D // H).transpose(0, 1)

    out = torch.nn.functional.scaled_dot_product_attention(
        split(q), split(k), split(v), is_causal=causal
    )
    out = out.transpose(0, 1).reshape(S, D)
    (out * g).sum().backward()
    return out


def main():
    pg.ggml_set_seed(0)  # inputs from the core's generator (R's stream), as everything else
    res = {
        "cpu": cpu_name(),
        "blas": pg.ag_blas_name(),
        "rounds": ROUNDS,
        "torch": torch.__version__ if torch else None,
        "cases": {},
    }
    print(
        f"pyggmlr {pg.__version__}, GEMM {pg.ag_blas_name()}, one thread, CPU: {res['cpu']}, torch: {'yes' if torch else 'no'}"
    )
    print("forward + backward (µs, median); ratio = fused / composition")
    print(
        f"{'case':28s}{'dtype':>6s}{'fused':>10s}{'compos.':>10s}{'torch':>10s}{'ratio':>8s}{'f/torch':>9s}"
    )
    for D, H, S in CASES:
        for causal in (False, True):
            for dt in ("f32", "f64"):
                q, k, v, g = (pg.random.rnorm(D * S).reshape((D, S), order="F") for _ in range(4))
                Q, K, V = (pg.ag_param(x, dtype=dt) for x in (q, k, v))
                G = pg.ag_tensor(g, dtype=dt)
                o1, g1 = step(fused, Q, K, V, G, H, causal)
                o2, g2 = step(composition, Q, K, V, G, H, causal)
                tol = 1e-4 if dt == "f32" else 1e-10
                np.testing.assert_allclose(o1.numpy(), o2.numpy(), atol=tol)
                for t in (Q, K, V):
                    np.testing.assert_allclose(g1[t], g2[t], atol=tol)
                tt = None
                if torch:
                    tdt = torch.float32 if dt == "f32" else torch.float64
                    tt = [
                        torch.tensor(x.T.copy(), dtype=tdt, requires_grad=True) for x in (q, k, v)
                    ]
                    tg = torch.tensor(g.T.copy(), dtype=tdt)
                # each timed call bound to this case's inputs (a closure would see the loop's last)
                timed = {
                    "fused": functools.partial(step, fused, Q, K, V, G, H, causal),
                    "composition": functools.partial(step, composition, Q, K, V, G, H, causal),
                }
                if torch:
                    timed["torch"] = functools.partial(torch_step, *tt, tg, H, causal)
                t = {"fused": [], "composition": [], "torch": []}
                for _ in range(ROUNDS):  # in turns, so drifts in load hit all alike
                    for key, fn in timed.items():
                        t[key].append(median_us(fn))
                m = {k2: float(np.median(v2)) if v2 else None for k2, v2 in t.items()}
                name = f"d{D} h{H} seq{S}{' causal' if causal else ''}"
                res["cases"][f"{name} {dt}"] = m
                tor = cell(m["torch"], 10)
                rto = cell(m["torch"] and m["fused"] / m["torch"], 9, ".2f")
                print(
                    f"{name:28s}{dt:>6s}{m['fused']:10.1f}{m['composition']:10.1f}{tor}"
                    f"{m['fused'] / m['composition']:8.2f}{rto}"
                )
    write_results("bench_flash", res)


if __name__ == "__main__":
    main()
