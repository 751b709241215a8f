"""gpusim.from_triton on an `@triton.autotune` kernel (issue 37, item 9): it took the Autotuner for a
function ("'Autotuner' object has no attribute '__name__'"); now each config is compiled and the fastest
on gpusim is kept per autotune key. Triton is not installed here, so the Autotuner and the compiler are
stood in for: the configs' kernels are the checked-in Triton vector add (BLOCK 1024), launched over the
grid each config's BLOCK asks for, so a BLOCK of 64 launches 16 times the programs (most of them
masked off) and, on one SM, is slower. With triton installed, test_ptx_python.py compiles a live kernel."""

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

import gpusim
from gpusim import kernel_launch
from gpusim.kernel_launch import TritonAutotuned, TritonKernel

PTX = (Path(__file__).parent / "ptx_fixtures" / "triton_add.ptx").read_text()
ONE_SM = gpusim.load_config("a100", overrides={"chip.sm_count": 1})
SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}


@dataclass
class Config:  # triton.Config's fields that gpusim reads
    kwargs: dict
    num_warps: int = 4
    num_stages: int = 2


@dataclass
class Autotuner:  # triton.runtime.autotuner.Autotuner's
    fn: object
    configs: list
    keys: list = field(default_factory=lambda: ["n"])


@pytest.fixture
def compiled(monkeypatch):
    calls = []

    def compile_(fn, signature, constexprs, **options):
        calls.append((constexprs, options["num_warps"]))
        return TritonKernel(PTX, "add_kernel", num_warps=4)

    monkeypatch.setattr(kernel_launch, "_compile_triton", compile_)
    return calls


def test_the_fastest_config_is_kept_per_key(compiled):
    tuned = gpusim.from_triton(Autotuner(lambda: None, [Config({"BLOCK": 64}), Config({"BLOCK": 1024})]), SIG)
    assert isinstance(tuned, TritonAutotuned)
    n = 3000
    x, y = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
    out = np.zeros(n, np.float32)
    grid = lambda meta: ((n + meta["BLOCK"] - 1) // meta["BLOCK"],)  # noqa: E731 - Triton's form
    r = tuned[grid](x, y, out, np.int32(n), config=ONE_SM)
    assert np.array_equal(out, x + y)  # the winner's outputs, written back
    key = (("n", 3000),)
    slow, fast = tuned.timings[key]
    assert tuned.best[key] == 1 and fast < slow and r.kernel_seconds == fast
    assert [c for c, _ in compiled] == [{"BLOCK": 64}, {"BLOCK": 1024}]
    out[:] = 0
    tuned[grid](x, y, out, np.int32(n), config=ONE_SM)  # the same key: the kept config alone, no new compile
    assert np.array_equal(out, x + y) and len(compiled) == 2 and len(tuned.timings) == 1


def test_a_config_that_does_not_compile_is_skipped(monkeypatch):
    def compile_(fn, signature, constexprs, **options):
        if constexprs["BLOCK"] == 4096:
            raise gpusim.LaunchError("out of shared memory", field="from_triton")
        return TritonKernel(PTX, "add_kernel", num_warps=4)

    monkeypatch.setattr(kernel_launch, "_compile_triton", compile_)
    tuned = gpusim.from_triton(Autotuner(lambda: None, [Config({"BLOCK": 4096}), Config({"BLOCK": 1024})]), SIG)
    x = np.ones(1024, np.float32)
    out = np.zeros(1024, np.float32)
    tuned[(1,)](x, x, out, np.int32(1024))
    assert np.array_equal(out, 2 * x) and tuned.best[(("n", 1024),)] == 1
    assert tuned.timings[(("n", 1024),)][0] is None and "out of shared memory" in tuned.errors[0]
