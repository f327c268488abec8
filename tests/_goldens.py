"""Initialiser goldens from ggmlR (spec section on the initialisers), shared by the tests of the
random stream (core/test_random.py) and of the layers (nn/test_layers_086.py)."""

# ggml_set_seed(42); ag_linear(5, 3)$W: its first four values in column order (Glorot uniform)
GLOROT_5X3_SEED42 = [
    0.7184651426223132,
    0.75703682257106242,
    -0.37041719148036939,
    0.57235207758912954,
]

# ggml_set_seed(1); ag_linear(3, 2, init = "orthogonal")$W, row by row (10 digits)
ORTHOGONAL_3X2_SEED1 = [
    [-0.5907722096, 0.1731833546, -0.7880328179],
    [0.8042142009, 0.2051024658, -0.5578283765],
]
