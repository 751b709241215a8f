"""Tensor-core and matrix-load instructions against numpy: mma.sync.aligned per shape on random
fragments laid out as the PTX ISA describes them (9.7.13.4.8-10, written out again here lane by lane),
ldmatrix (.x1/.x2/.x4, .trans), cp.async ordering, and cvt's rounding and saturation."""

import numpy as np
import pytest

from gpusim.errors import AssemblyError, KernelFault
from gpusim.isa import assemble, floats

from .kernels import elementwise, run

RNG = np.random.default_rng(22)


def _lanes():
    lane = np.arange(32)
    return lane >> 2, lane % 4  # groupID, threadID_in_group


def _pack_a(A, shape):
    """Per lane, the A fragment's 32-bit registers (PTX's tables, element by element)."""
    g, t = _lanes()
    words = np.zeros((32, 4), np.uint32)
    for lane in range(32):
        G, T = g[lane], t[lane]
        if shape == "m16n8k16":  # a_i, i = 0..7, two 16-bit halves a register
            el = [A[G + 8 * (i in (2, 3, 6, 7)), 2 * T + (i & 1) + 8 * (i >= 4)] for i in range(8)]
            h = np.array(el).view(np.uint16).astype(np.uint32)
            words[lane] = h[0::2] | (h[1::2] << 16)
        elif shape == "m16n8k8":  # tf32: a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4)
            words[lane] = np.array([A[G, T], A[G + 8, T], A[G, T + 4], A[G + 8, T + 4]]).view(np.uint32)
        else:  # m16n8k32, s8: a_i, i = 0..15, four bytes a register
            el = [A[G + 8 * ((i // 4) % 2), 4 * T + (i & 3) + 16 * (i >= 8)] for i in range(16)]
            words[lane] = np.array(el, np.int8).view(np.uint32)
    return words


def _pack_b(B, shape):
    g, t = _lanes()
    words = np.zeros((32, 2), np.uint32)
    for lane in range(32):
        G, T = g[lane], t[lane]
        if shape == "m16n8k16":
            el = [B[2 * T + (i & 1) + 8 * (i >= 2), G] for i in range(4)]
            h = np.array(el).view(np.uint16).astype(np.uint32)
            words[lane] = h[0::2] | (h[1::2] << 16)
        elif shape == "m16n8k8":
            words[lane] = np.array([B[T, G], B[T + 4, G]]).view(np.uint32)
        else:
            el = [B[4 * T + (i & 3) + 16 * (i >= 4), G] for i in range(8)]
            words[lane] = np.array(el, np.int8).view(np.uint32)
    return words


def _pack_c(C):
    g, t = _lanes()
    return np.stack([C[g, 2 * t], C[g, 2 * t + 1], C[g + 8, 2 * t], C[g + 8, 2 * t + 1]], 1)


def _mma_kernel(mnem, acc):
    return f"""
.kernel mma_test
.param .u64 pa
.param .u64 pb
.param .u64 pc
.param .u64 pd
.reg .u32 %t
.reg .u64 %base, %off, %addr
.reg .b32 %a<4>, %b<2>
.reg .{acc} %c<4>, %d<4>
    mov.u32 %t, %tid.x
    mul.wide.u32 %off, %t, 16
    ld.param.u64 %base, [pa]
    add.u64 %addr, %base, %off
    ld.global.v4.b32 {{%a0, %a1, %a2, %a3}}, [%addr]
    ld.param.u64 %base, [pc]
    add.u64 %addr, %base, %off
    ld.global.v4.{acc} {{%c0, %c1, %c2, %c3}}, [%addr]
    mul.wide.u32 %off, %t, 8
    ld.param.u64 %base, [pb]
    add.u64 %addr, %base, %off
    ld.global.v2.b32 {{%b0, %b1}}, [%addr]
    {mnem} {{%d0, %d1, %d2, %d3}}, {{%a0, %a1, %a2, %a3}}, {{%b0, %b1}}, {{%c0, %c1, %c2, %c3}}
    mul.wide.u32 %off, %t, 16
    ld.param.u64 %base, [pd]
    add.u64 %addr, %base, %off
    st.global.v4.{acc} [%addr], {{%d0, %d1, %d2, %d3}}
"""


def _run_mma(mnem, shape, A, B, C, acc):
    dt = np.int32 if acc == "s32" else np.float32
    out, _ = run(_mma_kernel(mnem, acc), 1, 32, {"pa": _pack_a(A, shape), "pb": _pack_b(B, shape),
                                                 "pc": _pack_c(C).astype(dt), "pd": np.zeros((32, 4), dt)})
    g, t = _lanes()
    D = np.zeros(C.shape, dt)
    d = out["pd"]
    D[g, 2 * t], D[g, 2 * t + 1], D[g + 8, 2 * t], D[g + 8, 2 * t + 1] = d[:, 0], d[:, 1], d[:, 2], d[:, 3]
    return D


def test_mma_m16n8k16_f16_against_numpy():
    A = RNG.standard_normal((16, 16)).astype(np.float16)
    B = RNG.standard_normal((16, 8)).astype(np.float16)
    C = RNG.standard_normal((16, 8)).astype(np.float32)
    D = _run_mma("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "m16n8k16", A, B, C, "f32")
    want = A.astype(np.float64) @ B.astype(np.float64) + C  # exact products, one rounding
    np.testing.assert_allclose(D, want.astype(np.float32), rtol=2**-23, atol=1e-6)
    assert np.abs(D - C).max() > 0.5  # (the product is there)


def test_mma_m16n8k16_bf16_against_numpy():
    Af = RNG.standard_normal((16, 16)).astype(np.float32)
    Bf = RNG.standard_normal((16, 8)).astype(np.float32)
    A, B = floats.to_bf16(Af), floats.to_bf16(Bf)  # bit patterns
    C = RNG.standard_normal((16, 8)).astype(np.float32)
    D = _run_mma("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "m16n8k16", A, B, C, "f32")
    want = floats.from_bf16(A).astype(np.float64) @ floats.from_bf16(B).astype(np.float64) + C
    np.testing.assert_allclose(D, want.astype(np.float32), rtol=2**-23, atol=1e-6)
    assert np.abs(D - (Af.astype(np.float64) @ Bf + C)).max() > 1e-4  # the inputs were rounded to bf16


def test_mma_m16n8k8_tf32_truncates_the_low_mantissa_bits():
    A = RNG.standard_normal((16, 8)).astype(np.float32)
    B = RNG.standard_normal((8, 8)).astype(np.float32)
    C = RNG.standard_normal((16, 8)).astype(np.float32)
    D = _run_mma("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", "m16n8k8", A, B, C, "f32")
    trunc = lambda x: (x.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)  # noqa: E731
    np.testing.assert_allclose(D, (trunc(A) @ trunc(B) + C).astype(np.float32), rtol=2**-23, atol=1e-6)
    assert np.abs(D - (A.astype(np.float64) @ B + C)).max() > 1e-5


def test_mma_m16n8k32_s8_exact_and_wrapping():
    A = RNG.integers(-128, 128, (16, 32)).astype(np.int8)
    B = RNG.integers(-128, 128, (32, 8)).astype(np.int8)
    C = RNG.integers(-1000, 1000, (16, 8)).astype(np.int32)
    C[0, 0] = 2**31 - 1  # wraps past the s32 range
    D = _run_mma("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32", "m16n8k32", A, B, C, "s32")
    want = (A.astype(np.int64) @ B.astype(np.int64) + C).astype(np.uint32).view(np.int32)
    np.testing.assert_array_equal(D, want)
    sat = _run_mma("mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32", "m16n8k32", A, B, C, "s32")
    assert sat[0, 0] == (2**31 - 1 if A[0].astype(np.int64) @ B[:, 0] > 0 else want[0, 0])


def test_mma_needs_the_whole_warp_and_right_types():
    with pytest.raises(KernelFault, match="partial warp"):
        run(_mma_kernel("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "f32"), 1, 16,
            {k: np.zeros((32, 4), np.uint32) for k in ("pa", "pb", "pc", "pd")})
    with pytest.raises(AssemblyError, match="m16n8k8 takes"):
        assemble(_mma_kernel("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32", "f32"))


def _ldmatrix_kernel(n, trans):
    regs = ", ".join(f"%d{i}" for i in range(n))
    q = ".trans" if trans else ""
    return f"""
.kernel ldm
.param .u64 pin
.param .u64 pout
.shared .align 16 .b16 tile[256]
.reg .u32 %t, %row, %sa, %w, %v
.reg .u64 %base, %off, %addr
.reg .b32 %d<4>
    mov.u32 %t, %tid.x
    ld.param.u64 %base, [pin]
    mul.wide.u32 %off, %t, 16
    add.u64 %addr, %base, %off
    ld.global.v4.b32 {{%d0, %d1, %d2, %d3}}, [%addr]
    mov.u32 %sa, tile
    shl.b32 %w, %t, 4
    add.u32 %w, %sa, %w
    st.shared.v4.b32 [%w], {{%d0, %d1, %d2, %d3}}
    bar.sync 0
    xor.b32 %row, %t, 5
    shl.b32 %row, %row, 4
    add.u32 %row, %sa, %row
    ldmatrix.sync.aligned.m8n8.x{n}{q}.shared.b16 {{{regs}}}, [%row]
    ld.param.u64 %base, [pout]
    add.u64 %addr, %base, %off
    st.global.v4.b32 [%addr], {{%d0, %d1, %d2, %d3}}
"""


@pytest.mark.parametrize("n", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_layouts(n, trans):
    tile = RNG.integers(0, 2**16, (32, 8)).astype(np.uint16)  # 32 rows of 8 halves; lane l addresses row l ^ 5
    out, _ = run(_ldmatrix_kernel(n, trans), 1, 32, {"pin": tile, "pout": np.zeros((32, 4), np.uint32)})
    got = out["pout"]
    for i in range(n):
        M = tile[[(8 * i + r) ^ 5 for r in range(8)]]  # matrix i: the rows lanes 8i..8i+7 addressed
        if trans:
            M = M.T
        for lane in range(32):
            lo, hi = M[lane // 4, 2 * (lane % 4)], M[lane // 4, 2 * (lane % 4) + 1]
            assert got[lane, i] == int(lo) | (int(hi) << 16), (i, lane)
    if n < 4:  # registers past .xN are not written (they keep what the kernel loaded)
        np.testing.assert_array_equal(got[:, n:], tile.reshape(32, 8).view(np.uint32)[:, n:])


CP_ASYNC = """
.kernel cpa
.param .u64 pin
.param .u64 pout
.shared .align 16 .u32 buf[128]
.reg .u32 %t, %s, %v0, %v1, %v2
.reg .u64 %base, %off, %addr
    mov.u32 %t, %tid.x
    shl.b32 %s, %t, 2
    st.shared.u32 [%s+buf], 7
    st.shared.u32 [%s+buf+128], 7
    bar.sync 0
    ld.param.u64 %base, [pin]
    mul.wide.u32 %off, %t, 4
    add.u64 %addr, %base, %off
    mov.u32 %v0, buf
    add.u32 %v0, %v0, %s
    cp.async.ca.shared.global [%v0], [%addr], 4
    cp.async.commit_group
    cp.async.ca.shared.global [%v0+128], [%addr+128], 4
    cp.async.commit_group
    ld.shared.u32 %v1, [%v0]
    cp.async.wait_group 1
    ld.shared.u32 %v2, [%v0]
    ld.shared.u32 %v0, [%v0+128]
    ld.param.u64 %base, [pout]
    mul.wide.u32 %off, %t, 16
    add.u64 %addr, %base, %off
    st.global.v2.u32 [%addr], {%v1, %v2}
    st.global.u32 [%addr+8], %v0
    cp.async.wait_all
    mov.u32 %v0, buf
    add.u32 %v0, %v0, %s
    ld.shared.u32 %v0, [%v0+128]
    st.global.u32 [%addr+12], %v0
"""


def test_cp_async_data_lands_at_its_wait_group():
    src = np.arange(64, dtype=np.uint32) + 100
    out, stats = run(CP_ASYNC, 1, 32, {"pin": src, "pout": np.zeros((32, 4), np.uint32)})
    o = out["pout"]
    np.testing.assert_array_equal(o[:, 0], 7)  # before any wait: the old value
    np.testing.assert_array_equal(o[:, 1], src[:32])  # wait_group 1: the older group has landed
    np.testing.assert_array_equal(o[:, 2], 7)  # ... the newer one not yet
    np.testing.assert_array_equal(o[:, 3], src[32:])  # wait_all: everything
    assert stats.global_bytes_read >= 2 * 32 * 4


def test_cp_async_assembly_errors():
    head = ".kernel k\n.shared .u32 s[4]\n.reg .u64 %a\n.reg .u32 %b\n"
    with pytest.raises(AssemblyError, match="copy size of 16"):
        assemble(head + "cp.async.cg.shared.global [%b], [%a], 8")
    with pytest.raises(AssemblyError, match="copy size of 4 or 8 or 16"):
        assemble(head + "cp.async.ca.shared.global [%b], [%a], 2")
    with pytest.raises(AssemblyError, match="count of groups"):
        assemble(head + "cp.async.wait_group %b")


# ---- cvt ---------------------------------------------------------------------------------------------

def _cvt(mnem, src_decl, dst_decl, a, out_dtype):
    return elementwise(f"    {mnem} %d, %a", f".reg .{src_decl} %a, %b, %c\n.reg .{dst_decl} %d", a,
                       out_dtype=out_dtype)


def test_cvt_f32_to_f16_rounding_modes():
    # 1 + 2^-11 lies halfway between f16 1.0 and 1 + 2^-10; 1 + 3 * 2^-12 above the middle
    vals = np.array([1 + 2**-11, 1 + 3 * 2**-12, -(1 + 2**-11), 70000.0, -70000.0, 1e-9, -1e-9, 0.1] * 4,
                    np.float32)
    up = {m: _cvt(f"cvt.{m}.f16.f32", "f32", "f16", vals, np.float16)[:8] for m in ("rn", "rz", "rm", "rp")}
    e = np.float16(2**-10)
    np.testing.assert_array_equal(up["rn"][:3], [1, 1 + e, -1])  # the tie to even; above it, up
    np.testing.assert_array_equal(up["rz"][:3], [1, 1, -1])
    np.testing.assert_array_equal(up["rm"][:3], [1, 1, -(1 + e)])
    np.testing.assert_array_equal(up["rp"][:3], [1 + e, 1 + e, -1])
    assert np.isinf(up["rn"][3]) and up["rz"][3] == 65504 and up["rm"][4] == -np.inf and up["rp"][4] == -65504
    assert up["rp"][5] == np.float16(2**-24) and up["rz"][5] == 0 and up["rm"][6] == -np.float16(2**-24)
    for m in ("rz", "rm", "rp"):  # each is a neighbour of the exact value on its side
        x, r = vals.astype(np.float64)[:8], up[m].astype(np.float64)
        ok = {"rz": np.abs(r) <= np.abs(x), "rm": r <= x, "rp": r >= x}[m]
        assert ok[np.isfinite(r) | (m != "rn")].all(), m


def test_cvt_bf16_round_trip_and_modes():
    x = RNG.standard_normal(32).astype(np.float32) * 1000
    x[:4] = [1 + 2**-8, 1 + 3 * 2**-9, np.nan, -(1 + 2**-8)]  # ties and above-ties for bf16 (7 bits)
    bits = x.view(np.uint32).astype(np.uint64)
    for m in ("rn", "rz", "rm", "rp"):
        got = _cvt(f"cvt.{m}.bf16.f32", "f32", "b16", x, np.uint16)
        lo = (bits >> 16).astype(np.uint16)  # truncation: toward zero
        rem = bits & 0xFFFF
        neg = x < 0
        if m == "rz":
            want = lo
        elif m == "rn":
            want = lo + ((rem > 0x8000) | ((rem == 0x8000) & (lo & 1 == 1)))
        elif m == "rp":
            want = lo + ((rem > 0) & ~neg)
        else:
            want = lo + ((rem > 0) & neg)
        want = np.where(np.isnan(x), 0x7FC0, want).astype(np.uint16)
        np.testing.assert_array_equal(got, want, err_msg=m)
    back = _cvt("cvt.f32.bf16", "b16", "f32", floats.to_bf16(x), np.float32)
    np.testing.assert_array_equal(back[4:], floats.from_bf16(floats.to_bf16(x))[4:])
    np.testing.assert_allclose(back[4:], x[4:], rtol=2**-8)


def test_cvt_to_s8_saturates_and_rounds():
    x = np.array([127.6, -200.0, 3.5, 2.5, -2.5, np.nan, 1e10, -0.4] * 4, np.float32)
    rni = _cvt("cvt.rni.s8.f32", "f32", "s32", x, np.int32)[:8]
    np.testing.assert_array_equal(rni, [127, -128, 4, 2, -2, 0, 127, 0])
    rzi = _cvt("cvt.rzi.s8.f32", "f32", "s32", x, np.int32)[:8]
    np.testing.assert_array_equal(rzi, [127, -128, 3, 2, -2, 0, 127, 0])
    i = np.array([300, -300, 100, -5] * 8, np.int32)
    np.testing.assert_array_equal(_cvt("cvt.sat.s8.s32", "s32", "s32", i, np.int32)[:4], [127, -128, 100, -5])
    h = _cvt("cvt.rn.f16.s32", "s32", "f16", np.array([2049, 2051, -2049, 7] * 8, np.int32), np.float16)[:4]
    np.testing.assert_array_equal(h, [2048, 2052, -2048, 7])
    sat = _cvt("cvt.rn.sat.f16.f32", "f32", "f16", np.array([1.5, -0.25, 0.5, np.nan] * 8, np.float32),
               np.float16)[:4]
    np.testing.assert_array_equal(sat, [1, 0, 0.5, 0])


def test_cvt_tf32_rounds_ties_away():
    x = np.array([1 + 2**-11, -(1 + 2**-11), 1 + 2**-12, 1 + 2**-11 + 2**-12] * 8, np.float32)
    got = _cvt("cvt.rna.tf32.f32", "f32", "b32", x, np.uint32)[:4].view(np.float32)
    np.testing.assert_array_equal(got, np.array([1 + 2**-10, -(1 + 2**-10), 1, 1 + 2**-10], np.float32))
    with pytest.raises(AssemblyError, match="tf32 conversions"):
        assemble(".kernel k\n.reg .f32 %a\n.reg .b32 %b\ncvt.rn.tf32.f32 %b, %a")


@pytest.mark.parametrize("name", ["gemm_mma", "gemm_mma_tf32", "gemm_mma_int8"])
def test_tensor_core_kernels_disassemble_and_reassemble(name):
    from gpusim.isa.disassembler import disassemble
    from gpusim.workloads import load_workload

    prog = load_workload(name).program
    assert assemble(disassemble(prog)).instructions == prog.instructions
