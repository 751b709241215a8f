"""PTX's tensor-core and asynchronous-copy forms read into the sasm ISA: mma.sync, ldmatrix, cp.async (with
src-size zero fill, commit_group, wait_group), cvta.to.shared, mov of {lo, hi} halves and bfe, checked
against numpy; a Triton tl.dot matmul (checked-in PTX; compiled live where triton is installed) and the
CUDA inline-asm workload gemm_mma_cu, functional and timing; the located errors for what the ISA lacks;
fuzzing of both kernels' PTX."""

import importlib.util
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

import gpusim
from gpusim.data import data_dir
from gpusim.errors import AssemblyError, GpusimError
from gpusim.isa import Unit, cuda, read_ptx, read_ptx_file
from gpusim.isa.ptx import with_dynamic_shared
from gpusim.kernel_launch import TritonKernel

FIX = Path(__file__).parent / "ptx_fixtures"
CU = data_dir("workloads") / "gemm_mma_cu" / "gemm_mma_cu.cu"
RNG = np.random.default_rng(22)
HEAD = ".version 8.5\n.target sm_80\n.address_size 64\n"


def kernel(params: str, body: str, regs: str = "") -> str:
    return (HEAD + f".visible .entry k({params})\n{{\n\t.reg .pred %p<4>;\n\t.reg .b16 %rs<8>;\n"
            f"\t.reg .b32 %r<32>;\n\t.reg .b64 %rd<16>;\n{regs}{body}\tret;\n}}\n")


# ---- the forms, one at a time ----------------------------------------------------------------------------

def test_mov_of_halves_and_bfe_against_numpy():
    body = ("\tld.param.u64 %rd1, [k_param_0];\n\tld.param.u64 %rd2, [k_param_1];\n"
            "\tmov.u32 %r1, %tid.x;\n\tmul.wide.u32 %rd3, %r1, 4;\n\tadd.s64 %rd4, %rd1, %rd3;\n"
            "\tld.global.u32 %r2, [%rd4];\n"
            "\tmov.b32 {%rs1, %rs2}, %r2;\n"        # unpack: rs1 the low half
            "\tmov.b32 %r3, {%rs2, %rs1};\n"        # pack, halves swapped
            "\tbfe.u32 %r4, %r2, 4, 8;\n"
            "\tbfe.s32 %r5, %r2, 4, 8;\n"
            "\tbfe.s32 %r6, %r2, 28, 8;\n"          # the field runs past bit 31: sign-extended from it
            "\tbfe.u32 %r7, %r2, 40, 3;\n"          # past the register: 0
            "\tmul.wide.u32 %rd5, %r1, 20;\n\tadd.s64 %rd6, %rd2, %rd5;\n"
            "\tst.global.u32 [%rd6], %r3;\n\tst.global.u32 [%rd6+4], %r4;\n\tst.global.u32 [%rd6+8], %r5;\n"
            "\tst.global.u32 [%rd6+12], %r6;\n\tst.global.u32 [%rd6+16], %r7;\n")
    prog = read_ptx(kernel(".param .u64 k_param_0, .param .u64 k_param_1", body), "h.ptx")
    ops = [i.mnemonic for i in prog.instructions]
    # one instruction a move of halves; two a bfe (sm_70+ has no bit-field extract: ptxas shifts and masks too)
    assert ops[6:16] == ["mov.b32", "mov.b32", "shr.u32", "and.b32", "shl.b32", "shr.s32", "shr.s32",
                         "mov.b32", "mul.wide.u32", "add.s64"]
    assert gpusim.disassemble(prog).count("{%rs") == 2
    assert gpusim.assemble(gpusim.disassemble(prog)).instructions == prog.instructions
    x = RNG.integers(0, 2**32, 64, dtype=np.uint32)
    x[:4] = [0x12345678, 0x80000ff0, 0xF00000F0, 0x7fffffff]
    out = np.zeros((64, 5), np.uint32)
    gpusim.launch(prog, 1, 64, [x, out], mode="functional")
    s = x.view(np.int32)
    assert np.array_equal(out[:, 0], (x >> 16) | (x << 16))
    assert np.array_equal(out[:, 1], (x >> 4) & 0xFF)
    assert np.array_equal(out[:, 2].view(np.int32), ((s << 20) >> 24))
    assert np.array_equal(out[:, 3].view(np.int32), s >> 28)
    assert not out[:, 4].any()
    assert out[0, 0] == 0x56781234 and out[1, 2].view(np.int32) == -1  # 0xff sign-extended


def test_packing_conversions_against_numpy():
    """cvt.rn.f16x2.f32 / cvt.rz.f16x2.f32 / cvt.rn.bf16x2.f32 d, a, b: a in the upper half, b in the lower;
    cvt.rna.tf32.f32 (round to nearest, ties away from zero)."""
    body = ("\tld.param.u64 %rd1, [k_param_0];\n\tld.param.u64 %rd2, [k_param_1];\n"
            "\tmov.u32 %r1, %tid.x;\n\tmul.wide.u32 %rd3, %r1, 8;\n\tadd.s64 %rd4, %rd1, %rd3;\n"
            "\tld.global.v2.f32 {%f1, %f2}, [%rd4];\n"
            "\tcvt.rn.f16x2.f32 %r2, %f1, %f2;\n\tcvt.rz.f16x2.f32 %r3, %f1, %f2;\n"
            "\tcvt.rn.bf16x2.f32 %r4, %f1, %f2;\n\tcvt.rna.tf32.f32 %r5, %f1;\n"
            "\tmul.wide.u32 %rd5, %r1, 16;\n\tadd.s64 %rd6, %rd2, %rd5;\n"
            "\tst.global.v4.b32 [%rd6], {%r2, %r3, %r4, %r5};\n")
    prog = read_ptx(kernel(".param .u64 k_param_0, .param .u64 k_param_1", body, "\t.reg .f32 %f<4>;\n"), "c.ptx")
    assert [i.mnemonic for i in prog.instructions][6:10] == [
        "cvt.rn.f16x2.f32", "cvt.rz.f16x2.f32", "cvt.rn.bf16x2.f32", "cvt.rna.tf32.f32"]
    assert gpusim.assemble(gpusim.disassemble(prog)).instructions == prog.instructions
    x = (RNG.standard_normal((64, 2)) * 1000).astype(np.float32)
    x[0] = [70000.0, 1.00146484375]  # past f16's range: rn +inf, rz 65504; a tie of f16 (1 + 3 * 2^-11)
    out = np.zeros((64, 4), np.uint32)
    gpusim.launch(prog, 1, 64, [x, out], mode="functional")
    with np.errstate(over="ignore"):
        h = x.astype(np.float16)  # numpy: nearest even
        rz = np.where(np.abs(h.astype(np.float32)) > np.abs(x), np.nextafter(h, np.float16(0)), h).view(np.uint16)
    h = h.view(np.uint16).astype(np.uint32)
    assert np.array_equal(out[:, 0], (h[:, 0] << 16) | h[:, 1]) and out[0, 0] & 0xFFFF == 0x3C02
    assert np.array_equal(out[:, 1], (rz[:, 0].astype(np.uint32) << 16) | rz[:, 1])
    assert out[0, 1] >> 16 == 0x7BFF and out[0, 0] >> 16 == 0x7C00  # 65504 and +inf
    u = x.view(np.uint32).astype(np.uint64)
    bf = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint32)  # f32 -> bf16, nearest even (no NaN here)
    assert np.array_equal(out[:, 2], (bf[:, 0] << 16) | bf[:, 1])
    tf = ((u[:, 0] + 0x1000) & 0xFFFFE000).astype(np.uint32)  # tf32: nearest, ties away from zero
    assert np.array_equal(out[:, 3], tf)


def test_cp_async_src_size_zero_fills_and_reads_nothing_past_it():
    """Each lane copies 16 bytes into shared memory with src-size 0, 4, 8, 12 or 16 (PTX's zero fill); a lane
    with src-size 0 is given a null source and reads nothing. The destination comes through
    cvta.shared / cvta.to.shared (nvcc's __cvta_generic_to_shared) and .shared::cta, with an .L2::128B hint."""
    body = ("\tld.param.u64 %rd1, [k_param_0];\n\tld.param.u64 %rd2, [k_param_1];\n"
            "\tmov.u32 %r1, %tid.x;\n\trem.u32 %r2, %r1, 5;\n\tshl.b32 %r3, %r2, 2;\n"   # src-size 4 (tid % 5)
            "\tmul.wide.u32 %rd3, %r1, 16;\n\tadd.s64 %rd4, %rd1, %rd3;\n"
            "\tsetp.eq.s32 %p1, %r3, 0;\n\tselp.b64 %rd4, 0, %rd4, %p1;\n"
            "\tmov.u64 %rd5, buf;\n\tcvta.shared.u64 %rd6, %rd5;\n\tcvta.to.shared.u64 %rd7, %rd6;\n"
            "\tcvt.u32.u64 %r4, %rd7;\n\tshl.b32 %r5, %r1, 4;\n\tadd.s32 %r6, %r4, %r5;\n"
            "\tcp.async.cg.shared::cta.global.L2::128B [%r6], [%rd4], 16, %r3;\n"
            "\tcp.async.commit_group;\n\tcp.async.wait_group 0;\n\tbar.sync 0;\n"
            "\tld.shared.v4.u32 {%r10, %r11, %r12, %r13}, [%r6];\n"
            "\tadd.s64 %rd8, %rd2, %rd3;\n\tst.global.v4.u32 [%rd8], {%r10, %r11, %r12, %r13};\n")
    text = HEAD + ".shared .align 16 .b8 buf[1024];\n" + kernel(
        ".param .u64 k_param_0, .param .u64 k_param_1", body).removeprefix(HEAD)
    prog = read_ptx(text, "cp.ptx")
    cp = next(i for i in prog.instructions if i.opcode == "cp" and len(i.srcs) > 1)
    assert cp.mnemonic == "cp.async.cg.shared.global" and cp.unit == Unit.LDST and len(cp.srcs) == 3
    src = RNG.integers(1, 2**32, (64, 4), dtype=np.uint32)
    out = np.full((64, 4), 7, np.uint32)
    r = gpusim.launch(prog, 1, 64, [src, out], mode="functional")
    words = (np.arange(64) % 5)[:, None]  # words copied (src-size / 4); the rest of the 16 bytes zero
    assert np.array_equal(out, np.where(np.arange(4)[None, :] < words, src, 0))
    assert r.result.stats.global_bytes_read == 4 * int(words.sum())
    assert gpusim.launch(prog, 1, 64, [src, out], config="a100").cycles > 0  # timing: no request for src-size 0


def test_mma_ldmatrix_and_cp_async_map_one_to_one():
    prog = read_ptx_file(FIX / "triton_matmul.ptx")
    lines = (FIX / "triton_matmul.ptx").read_text().split("\n")
    ptx_mma = [k + 1 for k, ln in enumerate(lines) if ln.lstrip().startswith("mma.sync")]
    ins = {i.line: i for i in prog.instructions}
    assert len(ptx_mma) == 16 and all(ins[k].opcode == "mma" and ins[k].unit == Unit.TENSOR for k in ptx_mma)
    count = lambda prefix: sum(ln.lstrip().startswith(prefix) for ln in lines)  # noqa: E731
    for op, prefix in (("ldmatrix", "ldmatrix."), ("cp", "cp.async.")):
        assert sum(i.opcode == op for i in prog.instructions) == count(prefix)
    # every PTX line is one instruction but bfe's (two): the instruction count is the PTX's plus one a bfe
    instr = [k for k, ln in enumerate(lines) if ln.startswith("\t") and ln.strip()
             and not ln.strip().startswith(("//", ".", "$", "{", "}")) and not ln.strip().endswith(":")]
    assert len(prog.instructions) == len(instr) + count("bfe.")
    # the program disassembles to .sasm that assembles back to it (fragments, src-size, halves included)
    prog = with_dynamic_shared(prog, 16384)
    assert gpusim.assemble(gpusim.disassemble(prog)).instructions == prog.instructions


# ---- the Triton tl.dot matmul and the CUDA inline-asm workload -----------------------------------------

def triton_matmul() -> TritonKernel:
    return TritonKernel((FIX / "triton_matmul.ptx").read_text(), "matmul_kernel", num_warps=4, shared_bytes=16384)


def run_matmul(k, n, **kw):
    a = RNG.standard_normal((n, n)).astype(np.float16)
    b = RNG.standard_normal((n, n)).astype(np.float16)
    c = np.zeros((n, n), np.float32)
    r = k[(n // 64, n // 64)](a, b, c, *(np.int32(n),) * 6, **kw)
    want = a.astype(np.float64) @ b.astype(np.float64)  # exact products; f32 accumulation within 1e-4
    assert np.allclose(c, want, rtol=1e-4, atol=1e-4), np.abs(c - want).max()
    return r


def test_triton_tl_dot_matmul_from_checked_in_ptx_functional():
    r = run_matmul(triton_matmul(), 256, mode="functional")
    # 16 programs x 4 warps, 8 k-tiles of 32 (3-stage cp.async pipeline), 16 mma a warp each
    assert r.result.stats.threads == 16 * 128


def test_triton_tl_dot_matmul_from_checked_in_ptx_timing():
    r = run_matmul(triton_matmul(), 128, config="a100")
    assert r.cycles > 0 and r.run.result.stats.warp_instructions > 0


def test_gemm_mma_cu_verifies_in_both_modes_and_against_the_sasm_kernel():
    wl = gpusim.load_workload("gemm_mma_cu")
    assert wl.program.name == "gemm_mma_cu" and cuda.ptx_for(CU) == CU.with_suffix(".ptx")
    assert wl.reference_path == gpusim.load_workload("gemm_mma").reference_path
    ops = [i.opcode for i in wl.program.instructions]
    assert ops.count("mma") == 128 and ops.count("ldmatrix") == 32  # 2 k-steps x (32 mma, 8 ldmatrix.x4), x2
    assert gpusim.assemble(gpusim.disassemble(wl.program)).instructions == wl.program.instructions
    for stages in (1, 3):
        assert gpusim.run_workload("gemm_mma_cu", "a100", n=256, stages=stages).ok
    cu = gpusim.simulate("gemm_mma_cu", "a100", n=256, stages=3)
    sa = gpusim.simulate("gemm_mma", "a100", n=256, stages=3)
    assert cu.verified and sa.verified
    # nvcc's version issues more instructions (address arithmetic ptxas would fold into the loads' offsets)
    assert cu.run.result.stats.warp_instructions > sa.run.result.stats.warp_instructions
    assert 0.9 * sa.cycles < cu.cycles < 1.6 * sa.cycles


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_gemm_mma_cu_checked_in_ptx_is_what_nvcc_makes_now():
    header, _, body = CU.with_suffix(".ptx").read_text().partition("\n")
    assert header == cuda.header_line(CU)
    assert body == cuda.compile_cu(CU), (
        f"regenerate: python -c \"from gpusim.isa.cuda import write_checked_in_ptx; write_checked_in_ptx('{CU}')\"")


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton absent")
def test_from_triton_compiles_and_runs_the_tl_dot_matmul():
    sys.path.insert(0, str(FIX))
    try:
        import kernels
    finally:
        sys.path.remove(str(FIX))
    fn, sig, consts, opts = kernels.TRITON["matmul"]
    k = gpusim.from_triton(fn, sig, consts, **opts)
    assert "mma.sync.aligned.m16n8k16" in k.ptx and "cp.async.cg.shared.global" in k.ptx
    run_matmul(k, 128, mode="functional")


# ---- what the ISA lacks: located one-line errors ---------------------------------------------------------

FRAG = "{%r1, %r2, %r3, %r4}, {%r5, %r6, %r7, %r8}, {%r9, %r10}, {%r1, %r2, %r3, %r4}"


@pytest.mark.parametrize(("line", "message"), [
    ("wmma.load.a.sync.aligned.row.m16n16k16.global.f16 {%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8}, [%rd1], 16",
     "unsupported PTX instruction 'wmma.load.a.sync.aligned.row.m16n16k16.global.f16'"),
    (f"mma.sp.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {FRAG}, %r11, 0",
     "unsupported PTX instruction 'mma.sp.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32' (unknown qualifier "
     ".sp for mma)"),
    (f"mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32 {FRAG}",
     "unsupported PTX instruction 'mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32' (unknown qualifier .m8n8k4 "
     "for mma)"),
    ("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%r1, %r2}, {%r5, %r6, %r7, %r8}, {%r9, %r10}, {%r1, %r2}",
     "mma.m16n8k16 takes .f32.AT.BT.f32 with AT, BT among .f16, .bf16 (A and B alike for floats)"),
    ("ldmatrix.sync.aligned.m8n8.x4.shared::cluster.b16 {%r1, %r2, %r3, %r4}, [%r5]",
     "unsupported PTX instruction 'ldmatrix.sync.aligned.m8n8.x4.shared::cluster.b16'"),
    ("cp.async.ca.shared.global.L2::cache_hint [%r1], [%rd1], 16, %rd2",
     "unsupported PTX instruction 'cp.async.ca.shared.global.L2::cache_hint'"),
    ("cp.async.cg.shared.global [%r1], [%rd1], 8",
     "expected a copy size of 16 bytes"),
    ("cp.async.ca.shared.global [%r1], [%rd1], 8, 12",
     "src-size must be 0..8 (the copy's size)"),
    ("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 16, [%r2]",
     "unsupported PTX instruction 'cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes'"),
    ("bfe.u32 %r1, %r2, %r3, 8", "unsupported PTX instruction 'bfe.u32 with a register position or length'"),
    ("bfi.b32 %r1, %r2, %r3, 4, 8", "unsupported PTX instruction 'bfi.b32'"),
    ("mov.b32 {%rs1, _}, %r1", "unsupported PTX instruction 'mov.b32'"),
    ("mov.b32 %r1, {%rs1, %rs2, %rs3, %rs4}", "expected {...} with 2 registers for the halves of a .b32"),
    ("mov.b32 %r1, {%r2, %r3}", "type mismatch: %r2 is .b32; the halves of a .b32 needs a 16-bit register"),
    ("cvt.f16x2.f32 %r1, %f1, %f2", "cvt.f16x2 is cvt.rn.f16x2.f32 or cvt.rz.f16x2.f32 (.rn or .rz required)"),
    ("cvt.rn.relu.bf16x2.f32 %r1, %f1, %f2",
     "unsupported PTX instruction 'cvt.rn.relu.bf16x2.f32' (unknown qualifier .relu for cvt)"),
    ("add.rn.f16x2 %r1, %r2, %r3", "add does not take .f16x2; expected one of .b16"),
])
def test_forms_the_isa_lacks_are_located_one_line_errors(line, message):
    text = kernel("", f"\t{line};\n", "\t.reg .f32 %f<4>;\n")
    at = text.split("\n").index(f"\t{line};") + 1
    with pytest.raises(AssemblyError) as e:
        read_ptx(text, "t.ptx")
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"t.ptx:{at}:") and message in msg, msg


# ---- fuzzing ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", [FIX / "triton_matmul.ptx", CU.with_suffix(".ptx")], ids=["triton", "cuda"])
def test_fuzzed_tensor_core_ptx_gives_only_gpusim_errors(path):
    from tests.isa.test_ptx import _mutants

    errors = 0
    for k, mutant in enumerate(_mutants(path.read_text(), seed=22, count=30)):
        try:
            read_ptx(mutant, "m.ptx")
        except GpusimError as exc:
            assert "\n" not in str(exc) and str(exc).startswith("m.ptx:"), (k, str(exc))
            errors += 1
    assert errors > 5
