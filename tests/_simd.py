"""Runs a computation at every SIMD level the CPU has (native pg_simd_select) and checks the
bits equal the portable level's: the vmath, GELU and recurrent kernels' tests (not collected)."""

SIMD_LEVELS = {0: "SSE2", 1: "AVX2", 2: "AVX-512"}


def same_bits_at_every_level(run):
    """run() (a list of bytes) at each SIMD level the CPU has: all equal to the portable one's."""
    from pyggmlr._native import lib

    out = {}
    try:
        for level in sorted(SIMD_LEVELS):
            if lib.pg_simd_select(level) == level:
                out[level] = run()
    finally:
        lib.pg_simd_select(-1)
    assert 0 in out
    for level, res in out.items():
        assert res == out[0], SIMD_LEVELS[level]
    return sorted(out)
