"""conv3x3 16 channels on 8x8x1 images, batch 32, f32, one thread: forward + backward time of
pyggmlr's ag_conv2d against torch 2.13's Conv2d (issue 30's layer), and one Adam step of a small
CNN without pooling (conv3x3 16 + ReLU + dense 64 + 10, softmax cross-entropy) eager and
compiled. Prints the ratios."""

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
    print(f"conv fwd+bwd: pyggmlr {a * 1e6:.1f} us, torch {b * 1e6:.1f} us, ratio {a / b:.3f}")

    # the small CNN, one Adam step (no pooling: that layer is not here yet)
    y = np.eye(10)[rng.integers(0, 10, 32)].T
    c1 = pg.ag_conv2d(1, 16, 3, padding=1, input_shape=(1, 8, 8))
    l1, l2 = pg.ag_linear(1024, 64, "relu"), pg.ag_linear(64, 10)
    params = [*c1.parameters().values(), *l1.parameters().values(), *l2.parameters().values()]
    opt = pg.optimizer_adam(params, lr=1e-3)

    def model(a):
        return l2(l1(pg.ag_relu(c1(a))))

    Y = pg.ag_tensor(y)

    def cnn_pg():
        with pg.with_grad_tape():
            loss = pg.ag_softmax_cross_entropy_loss(model(X), Y)
        opt.step(pg.backward(loss))
        opt.zero_grad()

    step = pg.ag_compile(
        lambda a, t: pg.ag_softmax_cross_entropy_loss(model(a), t), X, Y, optimizer=opt
    )
    tm = torch.nn.Sequential(
        torch.nn.Conv2d(1, 16, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(1024, 64),
        torch.nn.ReLU(),
        torch.nn.Linear(64, 10),
    )
    topt = torch.optim.Adam(tm.parameters(), lr=1e-3)
    yt = torch.tensor(y.argmax(0))

    def cnn_torch():
        topt.zero_grad()
        torch.nn.functional.cross_entropy(tm(xt), yt).backward()
        topt.step()

    e, c, t = best(cnn_pg, 100), best(lambda: step(X, Y), 100), best(cnn_torch, 100)
    print(
        f"CNN step: pyggmlr eager {e * 1e6:.1f} us ({e / t:.3f}x), compiled {c * 1e6:.1f} us "
        f"({c / t:.3f}x), torch {t * 1e6:.1f} us"
    )


if __name__ == "__main__":
    main()
