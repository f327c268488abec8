"""conv3x3 16 channels on 8x8x1 images, batch 32, f32, one thread: forward + backward time of
pyggmlr's ag_conv2d against torch 2.13's Conv2d (issue 30's layer). Prints the ratio."""

import time

import numpy as np
import torch

import pyggmlr as pg


def best(f, reps=200, rounds=5):
    out = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(reps):
            f()
        out.append((time.perf_counter() - t) / reps)
    return min(out)


def main():
    torch.set_num_threads(1)
    pg.ag_set_threads(1)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 1, 8, 8)).astype(np.float32)
    conv = pg.ag_conv2d(1, 16, 3, padding=1)
    X = pg.ag_images(x, dtype="f32")

    def step_pg():
        with pg.with_grad_tape():
            y = conv(X)
            s = pg.ag_sum(y)
        pg.backward(s)
        pg.ag_tape_clear()

    tconv = torch.nn.Conv2d(1, 16, 3, padding=1)
    xt = torch.tensor(x)

    def step_torch():
        tconv.zero_grad()
        tconv(xt).sum().backward()

    a, b = best(step_pg), best(step_torch)
    print(f"pyggmlr {a * 1e6:.1f} us, torch {b * 1e6:.1f} us, ratio {a / b:.3f}")


if __name__ == "__main__":
    main()
