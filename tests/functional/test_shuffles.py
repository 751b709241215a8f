"""PTX shfl.sync against the PTX ISA's own pseudo-code for it, lane by lane: every mode, segments of 32, 16 and
8 lanes (the clamp operand), with the shift or lane operand the same on every lane (an immediate, or a register
that holds one value: the executor's column gather) and different from lane to lane (its general path)."""

import numpy as np
import pytest

import gpusim

HEAD = (".version 8.5\n.target sm_80\n.address_size 64\n.visible .entry k(\n\t.param .u64 k_param_0\n)\n{\n"
        "\t.reg .pred %p<4>;\n\t.reg .b32 %r<16>;\n\t.reg .b64 %rd<8>;\n"
        "\tmov.u32 %r1, %tid.x;\n\tmov.u32 %r9, %ctaid.x;\n\tmov.u32 %r10, %ntid.x;\n"
        "\tmad.lo.u32 %r11, %r9, %r10, %r1;\n\tld.param.u64 %rd1, [k_param_0];\n\tcvta.to.global.u64 %rd2, %rd1;\n"
        "\tmul.wide.u32 %rd3, %r11, 8;\n\tadd.s64 %rd4, %rd2, %rd3;\n"
        "\tmul.lo.u32 %r2, %r11, 7;\n\tadd.u32 %r2, %r2, 3;\n")  # %r2: each thread's value, 7 * gid + 3
TAIL = ("\tselp.u32 %r6, 1, 0, %p1;\n\tst.global.u32 [%rd4], %r5;\n\tst.global.u32 [%rd4+4], %r6;\n"
        "\tret;\n}\n")


def ptx_shfl(mode: str, values: np.ndarray, b: np.ndarray, c: int) -> tuple[np.ndarray, np.ndarray]:
    """The PTX ISA's pseudo-code for shfl.sync, per lane of each 32-lane warp (every lane active)."""
    out, pred = values.copy(), np.zeros(values.size, bool)
    seg, clamp = (c >> 8) & 0x1F, c & 0x1F
    for g in range(values.size):
        lane, base = g % 32, g - g % 32
        bval = int(b[g])
        max_lane = (lane & seg) | (clamp & ~seg)
        min_lane = lane & seg
        if mode == "up":
            j, ok = lane - bval, lane - bval >= max_lane
        elif mode == "down":
            j, ok = lane + bval, lane + bval <= max_lane
        elif mode == "bfly":
            j, ok = lane ^ bval, (lane ^ bval) <= max_lane
        else:
            j = min_lane | (bval & 0x1F & ~seg)
            ok = j <= max_lane
        if ok:
            out[g], pred[g] = values[base + j], True
    return out, pred


@pytest.mark.parametrize("mode", ["up", "down", "bfly", "idx"])
@pytest.mark.parametrize("width", [32, 16, 8])
@pytest.mark.parametrize("operand", ["immediate", "uniform register", "per lane"])
def test_shfl_sync_matches_the_isa_pseudo_code(mode, width, operand):
    c = ((32 - width) << 8) | (0 if mode == "up" else 31)
    grid, block = 3, 64
    gid = np.arange(grid * block)
    shift = 5 if mode != "bfly" else 6
    if operand == "immediate":
        setup, arg, b = "", str(shift), np.full(gid.size, shift)
    elif operand == "uniform register":
        setup, arg, b = f"\tmov.u32 %r3, {shift};\n", "%r3", np.full(gid.size, shift)
    else:  # (lane l: (3 l) mod 32)
        setup, arg, b = "\tmul.lo.u32 %r3, %r1, 3;\n\tand.b32 %r3, %r3, 31;\n", "%r3", (gid % block * 3) % 32
    body = setup + f"\tshfl.sync.{mode}.b32 %r5|%p1, %r2, {arg}, {c}, -1;\n"
    out = np.zeros(2 * gid.size, np.uint32)
    gpusim.launch(HEAD + body + TAIL, grid, block, [out], mode="functional")
    want, pred = ptx_shfl(mode, (7 * gid + 3).astype(np.uint32), b, c)
    assert np.array_equal(out[0::2], want) and np.array_equal(out[1::2], pred)
