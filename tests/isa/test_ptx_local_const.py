"""`.const` and `.local` in nvcc's PTX (ptx_fixtures/local_const.cu and the local_const.ptx nvcc wrote from
it): constant memory at fixed addresses read as the values it holds, a stack array in per-thread frames
(in shared memory, one a thread, for any block shape), and located errors for what is not read yet."""

from pathlib import Path

import numpy as np
import pytest

import gpusim
from gpusim.errors import AssemblyError
from gpusim.isa import read_ptx, read_ptx_file

PTX = Path(__file__).parent / "ptx_fixtures" / "local_const.ptx"
COEF = np.array([0.5, 0.25, 2.0, -1.0], np.float32)


def line_of(text: str) -> int:
    return next(i for i, ln in enumerate(PTX.read_text().split("\n"), 1) if text in ln)


def test_const_loads_at_fixed_addresses_are_the_values_they_read():
    prog = read_ptx_file(PTX, "poly")
    movs = {i.line: i for i in prog.instructions if i.text.startswith("ld.const")}
    # ld.const.f32 %f1, [coef+12] -> mov.f32 %f1, -1.0 (the initializer's bytes 12..15), on the INT pipe
    # as gpusim charges ld.param (the constant bank)
    assert [(m.mnemonic, m.srcs[0].value) for m in movs.values()] == [
        ("mov.f32", -1.0), ("mov.f32", 2.0), ("mov.f32", 0.25), ("mov.f32", 0.5)]
    assert set(movs) == {line_of("[coef+12]"), line_of("[coef+8]"), line_of("[coef+4]"), line_of("[coef];")}
    assert all(m.unit == gpusim.isa.Unit.INT for m in movs.values())
    x = np.linspace(-2, 2, 300).astype(np.float32)
    y = np.zeros_like(x)
    gpusim.launch(PTX, 2, 256, [x, y, 300], kernel_name="poly", mode="functional")
    f64 = x.astype(np.float64)
    assert np.allclose(y, COEF[0] + f64 * (COEF[1] + f64 * (COEF[2] + f64 * COEF[3])), rtol=1e-6, atol=1e-6)


def test_const_indexed_at_run_time_is_a_located_error():
    with pytest.raises(AssemblyError) as e:
        read_ptx_file(PTX, "pick")
    line = line_of("mov.u64 \t%rd9, coef")
    assert str(e.value) == (f"{PTX}:{line}:17: unsupported PTX use of a .const variable's address (constant "
                            "memory indexed at run time) 'coef'")


@pytest.mark.parametrize(("grid", "block"), [(3, 128), (3, (32, 4)), (10, (16, 2))])
def test_local_stack_array_gives_each_thread_its_own_frame(grid, block):
    n = 300
    x = np.random.default_rng(3).integers(-1000, 1000, 8 * n).astype(np.int32)
    y = np.zeros_like(x)
    run = gpusim.launch(PTX, grid, block, [x, y, n], kernel_name="rotate8", mode="functional")
    rows = x.reshape(n, 8)
    s = rows[:, 0] & 7
    want = np.stack([rows[np.arange(n), (s + k) & 7] * (k + 1) for k in range(8)], axis=1)
    assert np.array_equal(y.reshape(n, 8), want)
    # the frame address costs two instructions more than the PTX's one `mov %SPL, __local_depot2` (the
    # thread's index in its block), once per warp
    prog = read_ptx_file(PTX, "rotate8")
    assert sum(1 for i in prog.instructions if i.line == line_of("mov.u64 \t%SPL, __local_depot2")) == 3
    assert run.result.stats.warp_instructions > 0


def test_local_frames_are_laid_out_for_the_launch_s_block():
    # 32-byte frames, 16-byte aligned: 48 bytes a thread (an odd multiple of 16: fewer bank conflicts)
    assert read_ptx_file(PTX, "rotate8").shared_bytes == 48 * 1024  # no .maxntid: the largest block
    assert read_ptx_file(PTX, "rotate8", local_threads=128).shared_bytes == 48 * 128
    text = PTX.read_text().replace(".visible .entry _Z7rotate8PKiPij(", ".visible .entry _Z7rotate8PKiPij(")
    bounded = text.replace("{\n\t.local", ".maxntid 64, 1, 1\n{\n\t.local", 1)
    assert bounded != text and read_ptx(bounded, "b.ptx", "rotate8").shared_bytes == 48 * 64


@pytest.mark.parametrize(("old", "new", "message"), [
    ("= {0, 0, 0, 63, 0, 0, 128, 62, 0, 0, 0, 64, 0, 0, 128, 191}", "",
     "unsupported PTX read of a .const variable without an initializer 'coef'"),
    ("ld.const.f32 \t%f1, [coef+12]", "ld.const.f32 \t%f1, [coef+16]",
     "ld.const reads 4 bytes at offset 16 of the 16-byte .const coef"),
    ("ld.const.f32 \t%f1, [coef+12]", "ld.const.v2.f32 \t{%f1, %f2}, [coef+8]",
     "unsupported PTX constant-memory access 'ld.const.v2.f32 {%f1, %f2}, [coef+8]'"),
])
def test_const_errors(old, new, message):
    text = PTX.read_text()
    assert old in text
    with pytest.raises(AssemblyError) as e:
        read_ptx(text.replace(old, new), "c.ptx", "poly")
    assert str(e.value).split(": ", 1)[1] == message


def test_local_access_without_a_frame_is_a_located_error():
    text = PTX.read_text().replace("ld.const.f32 \t%f1, [coef+12]", "ld.local.f32 \t%f1, [%rd1]")
    with pytest.raises(AssemblyError, match=r"^c\.ptx:\d+:2: unsupported PTX local-memory access 'ld.local.f32"):
        read_ptx(text, "c.ptx", "poly")
