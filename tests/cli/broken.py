"""A copy of the vecadd workload whose numpy reference is wrong at one element, for tests of how
`gpusim run` reports a failed verification."""

from __future__ import annotations

import shutil
from pathlib import Path

from gpusim.data import data_dir


def broken_vecadd(tmp_path: Path, index: int, value: float) -> Path:
    """vecadd in `tmp_path`, with inputs of ones and a reference that expects `value` at `index`."""
    wl = tmp_path / "vecadd"
    shutil.copytree(data_dir("workloads") / "vecadd", wl)
    (wl / "reference.py").write_text(
        "import numpy as np\n\n"
        "def inputs(p, rng):\n"
        "    n = p['n']\n"
        "    one = np.ones(n, np.float32)\n"
        "    return {'a': one, 'b': one.copy(), 'c': np.zeros(n, np.float32), 'n': n}\n\n"
        "def reference(p, inputs):\n"
        "    c = inputs['a'] + inputs['b']\n"
        f"    c[{index}] = {value!r}\n"
        "    return {'c': c}\n")
    return wl
