"""The PTX of a checked-in CUDA source, both ways a test should run it: the `.ptx` checked in beside it (made
by nvcc elsewhere), and nvcc's output for the source now when nvcc is on PATH (skipped, with the reason,
where it is not)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gpusim.isa.cuda import checked_in_ptx, compile_cu, is_current

WAYS = ("checked-in", "nvcc")


def ptx_of(source: Path, way: str, tmp_path_factory) -> Path:
    if way == "checked-in":
        ptx = checked_in_ptx(source)
        assert is_current(source, ptx), f"{ptx.name} is not nvcc's output for {source.name} as it is: regenerate it"
        return ptx
    if shutil.which("nvcc") is None:
        pytest.skip(f"nvcc is not on PATH: the checked-in {checked_in_ptx(source).name} stands in for it")
    path = tmp_path_factory.mktemp("nvcc") / checked_in_ptx(source).name
    path.write_text(compile_cu(source))
    return path
