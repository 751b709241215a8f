"""The shared-memory bounds and alignment test every shared access goes through (one reduction where the
block's window is a power of two bytes), against its definition, address by address."""

import numpy as np

from gpusim.functional.lanes import _in_window


def test_in_window_matches_its_definition():
    rng = np.random.default_rng(3)
    for size in (1, 2, 4, 16, 64, 4096, 4224, 1 << 16, 48 * 1024):
        for width in (1, 2, 4, 8, 16):
            if size < width:
                continue
            for _ in range(200):
                a = rng.integers(-8, size + 8, int(rng.integers(0, 40))).astype(np.int64)
                if rng.random() < 0.5:
                    a -= a % width
                if rng.random() < 0.3:  # every address valid
                    a = np.clip(a, 0, size - width)
                    a -= a % width
                want = bool(((a >= 0) & (a <= size - width) & (a % width == 0)).all())
                assert _in_window(a, size, width) == want, (a.tolist(), size, width)
    assert not _in_window(np.array([-(1 << 62), 0]), 4096, 4)  # (a negative address, huge as unsigned)
