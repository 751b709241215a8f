"""Kernels written in Python GPU languages: Numba's and Triton's PTX (checked in under ptx_fixtures/, made by
generate.py from kernels.py) read and run on gpusim with numpy's values, and gpusim.from_numba /
gpusim.from_triton compiling them live where numba-cuda / triton are installed (no GPU is needed)."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import gpusim
from gpusim.errors import AssemblyError
from gpusim.isa import read_ptx
from gpusim.kernel_launch import NumbaKernel, TritonKernel, numba_abi_args

FIX = Path(__file__).parent / "ptx_fixtures"
RNG = np.random.default_rng(21)


def numba_kernel(name: str) -> NumbaKernel:
    return NumbaKernel((FIX / f"numba_{name}.ptx").read_text(), name)


def triton_kernel(name: str, shared: int = 0) -> TritonKernel:
    return TritonKernel((FIX / f"triton_{name}.ptx").read_text(), name, num_warps=4, shared_bytes=shared)


def check_saxpy(k, **kw):
    x = RNG.standard_normal(1000).astype(np.float32)
    y = RNG.standard_normal(1000).astype(np.float32)
    want = (2.5 * x.astype(np.float64) + y).astype(np.float32)  # fma.rn.f32: one rounding (exact in f64 here)
    r = k[4, 256](np.float32(2.5), x, y, **kw)
    assert np.array_equal(y, want)
    return r


def check_block_sum(k, **kw):
    x = RNG.standard_normal(4000).astype(np.float32)
    partial = np.zeros(16, np.float32)
    r = k[16, 256](x, partial, **kw)
    padded = np.zeros(4096)
    padded[:4000] = x
    assert np.allclose(partial, padded.reshape(16, 256).sum(1), rtol=1e-5, atol=1e-4)
    return r


def test_numba_array_arguments_are_numba_s_struct_flattened():
    a = np.zeros((3, 4), np.float32)
    assert numba_abi_args([np.float32(1), a]) == [np.float32(1), 0, 0, 12, 4, a, 3, 4, 16, 4]
    # saxpy(a, x, y): the f32, then two 1-d arrays of 7 parameters each (data is the 5th: param_5, param_12)
    prog = numba_kernel("saxpy").program
    assert [p.type for p in prog.params] == ["f32"] + ["u64"] * 14
    loads = [i for i in prog.instructions if i.opcode == "ld" and "param" not in i.quals]
    assert [i.mnemonic for i in loads] == ["ld.global.f32", "ld.global.f32"]  # generic ld -> global


def test_numba_saxpy_from_checked_in_ptx():
    r = check_saxpy(numba_kernel("saxpy"), mode="functional")
    assert r.result.stats.threads == 1024


def test_numba_shared_memory_reduction_from_checked_in_ptx():
    prog = numba_kernel("block_sum").program
    assert prog.shared_bytes == 1024 and prog.shared[0].name.startswith("_cudapy_smem")
    r = check_block_sum(numba_kernel("block_sum"), config="gtx980")
    assert r.cycles > 0 and r.run.result.stats.barriers > 0


def test_triton_vector_add_from_checked_in_ptx():
    k = triton_kernel("add")
    ops = {i.mnemonic for i in k.program.instructions}
    assert "ld.global.b32" in ops and "st.global.b32" in ops  # `{ %r1 }` one-element vectors read as %r1
    n = 3000  # 3 programs of 1024, the last masked
    x, y = RNG.standard_normal(n).astype(np.float32), RNG.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    r = k[3](x, y, out, np.int32(n), mode="functional")
    assert np.array_equal(out, x + y) and r.result.stats.threads == 3 * 128


def test_triton_softmax_from_checked_in_ptx():
    k = triton_kernel("softmax", shared=16)
    rows, cols = 8, 200
    x = RNG.standard_normal((rows, cols)).astype(np.float32)
    out = np.zeros_like(x)
    k[rows](out, x, np.int32(cols), mode="functional")
    e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
    assert np.allclose(out, e / e.sum(1, keepdims=True), rtol=2e-6, atol=1e-7)


def test_generic_access_through_a_cvta_shared_pointer_is_a_shared_access():
    text = (".version 8.5\n.target sm_80\n.address_size 64\n.visible .shared .align 4 .b8 buf[128];\n"
            ".visible .entry k(\n\t.param .u64 k_param_0\n)\n{\n\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<8>;\n"
            "\tmov.u32 %r1, %tid.x;\n\tmov.u64 %rd1, buf;\n\tcvta.shared.u64 %rd2, %rd1;\n"
            "\tmul.wide.u32 %rd3, %r1, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tst.u32 [%rd4], %r1;\n"
            "\tld.u32 %r2, [%rd2+8];\n\tld.param.u64 %rd5, [k_param_0];\n\tadd.s64 %rd6, %rd5, %rd3;\n"
            "\tst.u32 [%rd6], %r2;\n\tret;\n}\n")
    prog = read_ptx(text, "k.ptx")
    assert [i.mnemonic for i in prog.instructions if i.opcode in ("ld", "st", "mov")][1:] == [
        "mov.u64", "mov.u64", "st.shared.u32", "ld.shared.u32", "ld.param.u64", "st.global.u32"]
    out = np.zeros(32, np.uint32)
    gpusim.launch(prog, 1, 32, [out], mode="functional")
    assert np.array_equal(out, np.full(32, 2))  # every lane read buf[2], lane 2's tid


def test_module_scope_global_variables_are_declarations_only():
    text = (FIX / "numba_saxpy.ptx").read_text()
    name = next(ln.split()[-1].rstrip(";") for ln in text.split("\n") if ln.startswith(".common .global"))
    body = text.replace("\tret;", f"\tmov.u64 %rd1, {name};\n\tret;")
    with pytest.raises(AssemblyError, match="unsupported PTX use of a module-scope .global variable"):
        read_ptx(body, "n.ptx")


def test_numba_s_32_bit_load_into_a_64_bit_register_is_a_located_error():
    # `ld.param.s32 %rd8, [...]` (an int32 argument Numba widens as it loads) needs the ISA to let a 32-bit
    # load write a 64-bit register, as PTX's ld does; until it does, this located error (int64 sizes work)
    orig = (FIX / "numba_saxpy.ptx").read_text()
    text = orig.replace("ld.param.u64 \t%rd3,", "ld.param.s32 \t%rd3,")
    assert text != orig
    line = next(i for i, ln in enumerate(text.split("\n"), 1) if "ld.param.s32" in ln)
    with pytest.raises(AssemblyError, match=rf"^n\.ptx:{line}:16: type mismatch: %rd3 is \.b64"):
        read_ptx(text, "n.ptx")


needs_numba = pytest.mark.skipif(importlib.util.find_spec("numba_cuda") is None, reason="numba-cuda absent")
needs_triton = pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton absent")


def live(kind: str):
    sys.path.insert(0, str(FIX))
    try:
        import kernels
    finally:
        sys.path.remove(str(FIX))
    return getattr(kernels, kind)


def _without_file(ptx: str) -> str:
    return "\n".join(line for line in ptx.splitlines() if not line.lstrip().startswith(".file"))


@needs_numba
def test_from_numba_compiles_and_runs_saxpy_and_a_reduction():
    k = live("NUMBA")
    try:
        saxpy = gpusim.from_numba(*k["saxpy"])
    except gpusim.LaunchError as exc:  # numba-cuda without its NVVM/NVRTC libraries
        pytest.skip(str(exc))
    # the checked-in PTX is today's numba's (but for the .file line, which names the checkout's path)
    assert _without_file(saxpy.ptx) == _without_file((FIX / "numba_saxpy.ptx").read_text())
    check_saxpy(saxpy, mode="functional")
    check_block_sum(gpusim.from_numba(*k["block_sum"]), mode="functional")


@needs_numba
def test_from_numba_errors_are_one_line():
    def not_a_kernel(x):
        return undefined_name  # noqa: F821

    with pytest.raises(gpusim.LaunchError) as e:
        gpusim.from_numba(not_a_kernel, "void(float32[:])")
    assert "\n" not in str(e.value) and "could not compile not_a_kernel" in str(e.value)


@needs_triton
def test_from_triton_compiles_and_runs_a_vector_add():
    fn, sig, consts = live("TRITON")["add"]
    k = gpusim.from_triton(fn, sig, consts)
    x, y = np.arange(2048, dtype=np.float32), np.ones(2048, np.float32)
    out = np.zeros_like(x)
    k[2](x, y, out, np.int32(2048), mode="functional")
    assert np.array_equal(out, x + y)


def test_missing_packages_are_one_line_errors(monkeypatch):
    monkeypatch.setitem(sys.modules, "triton", None)
    with pytest.raises(gpusim.LaunchError, match=r"from_triton needs triton .*pip install 'gpusim\[triton\]'"):
        gpusim.from_triton(lambda: None, {})


@pytest.mark.parametrize(("name", "entry"), [("numba_block_sum", None), ("triton_softmax", None),
                                           ("local_const", "rotate8"), ("local_const", "poly")])
def test_fuzzed_numba_triton_local_and_const_ptx_gives_only_gpusim_errors(name, entry):
    from gpusim.errors import GpusimError
    from tests.isa.test_ptx import _mutants

    errors = 0
    for k, mutant in enumerate(_mutants((FIX / f"{name}.ptx").read_text(), seed=30, count=60)):
        try:
            read_ptx(mutant, f"{name}.ptx", entry)
        except GpusimError as exc:
            assert "\n" not in str(exc) and str(exc).startswith(f"{name}.ptx:"), (k, str(exc))
            errors += 1
    assert errors > 10
