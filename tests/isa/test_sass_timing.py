"""The control codes as the timing model honours them, on hand-written listings run by one warp on h200 (whose
FP32 unit issues a warp instruction a cycle, so a stall count, not the port, spaces the instructions): the
cycles a kernel takes move by exactly what the stall counts and dependency barriers say."""

from __future__ import annotations

import numpy as np

import gpusim
from gpusim.config import load_config
from tests.functional.sass_helpers import program

NO_BARRIER = (7 << 5) | (7 << 8)


def ctrl(stall=1, wbar=None, wait=(), yields=False, rbar=None):
    """A 23-bit control field: stall count, yield (bit 4 clear), write barrier, read barrier, wait mask."""
    c = stall | (0 if yields else 1 << 4) | ((7 if rbar is None else rbar) << 8) | ((7 if wbar is None else wbar) << 5)
    for k in wait:
        c |= 1 << (11 + k)
    return c


def cycles(body, controls, params=(), args=()):
    prog = program(body, list(params), controls=controls)
    r = gpusim.launch(prog, grid=1, block=32, args=list(args), config="h200")
    return r.cycles


def test_stall_counts_space_a_warps_instructions():
    body = ["FFMA R1, R1, R1, R1"] * 20 + ["EXIT"]
    c2 = cycles(body, [ctrl(2)] * 20 + [ctrl(5)])
    c6 = cycles(body, [ctrl(6)] * 20 + [ctrl(5)])
    assert c6 - c2 == 20 * (6 - 2)


def test_a_variable_latency_result_is_waited_for_through_its_barrier():
    """MUFU.EX2 sets barrier 0; the FADD that waits on it issues the table's 17 cycles after it (sm_90), not
    the MUFU's one-cycle stall later."""
    body = ["MUFU.EX2 R4, R1", "FADD R5, R4, R4", "EXIT"]
    free = cycles(body, [ctrl(1, wbar=0), ctrl(1), ctrl(5)])
    waits = cycles(body, [ctrl(1, wbar=0), ctrl(1, wait=(0,)), ctrl(5)])
    assert waits - free == 17 - 1


def test_a_load_barrier_holds_its_consumer_until_the_data_returns():
    body = ["LDC.64 R2, c[0x0][0x210]", "LDG.E R4, desc[UR4][R2.64]", "FADD R5, R4, R4", "EXIT"]
    x = np.ones(32, np.float32)
    ctrl_ldg = ctrl(1, wbar=1)
    free = cycles(body, [ctrl(2), ctrl_ldg, ctrl(1), ctrl(5)], [("x", "u64")], [x])
    waits = cycles(body, [ctrl(2), ctrl_ldg, ctrl(1, wait=(1,)), ctrl(5)], [("x", "u64")], [x])
    assert waits - free >= load_config("h200").l2.hit_latency_cycles


def test_two_loads_on_one_barrier_release_it_with_the_later():
    body = ["LDC.64 R2, c[0x0][0x210]", "LDG.E R4, desc[UR4][R2.64]", "LDG.E R6, desc[UR4][R2.64+0x1000]",
            "FADD R5, R4, R6", "EXIT"]
    x = np.ones(2048, np.float32)
    one = cycles(body, [ctrl(2), ctrl(1, wbar=1), ctrl(1, wbar=2), ctrl(1, wait=(1,)), ctrl(5)], [("x", "u64")], [x])
    both = cycles(body, [ctrl(2), ctrl(1, wbar=1), ctrl(1, wbar=1), ctrl(1, wait=(1,)), ctrl(5)], [("x", "u64")], [x])
    waits_both = cycles(body, [ctrl(2), ctrl(1, wbar=1), ctrl(1, wbar=2), ctrl(1, wait=(1, 2)), ctrl(5)],
                        [("x", "u64")], [x])
    assert both == waits_both and both > one


def test_a_loads_read_barrier_is_free_once_it_issues():
    """LDG [R2.64] with read barrier 0 and write barrier 1: the IMAD.MOV that overwrites R2 waits on barrier 0,
    the guard of the address registers, which the load has read when it issues - not on its data (a wait
    on barrier 1 takes the load's whole latency)."""
    body = ["LDC.64 R2, c[0x0][0x210]", "LDG.E R4, desc[UR4][R2.64]", "IMAD.MOV.U32 R2, RZ, RZ, 0x20",
            "FADD R5, R4, R4", "EXIT"]
    x = np.ones(32, np.float32)
    ldg = ctrl(1, wbar=1, rbar=0)
    free = cycles(body, [ctrl(2), ldg, ctrl(1), ctrl(1), ctrl(5)], [("x", "u64")], [x])
    on_read = cycles(body, [ctrl(2), ldg, ctrl(1, wait=(0,)), ctrl(1), ctrl(5)], [("x", "u64")], [x])
    on_data = cycles(body, [ctrl(2), ldg, ctrl(1, wait=(1,)), ctrl(1), ctrl(5)], [("x", "u64")], [x])
    assert on_read == free
    assert on_data - free >= load_config("h200").l2.hit_latency_cycles


def test_imad_and_iadd3_issue_to_separate_pipes():
    """sm_90's IMAD issues to the FMA pipe at half its 32 lanes, IADD3 to the ALU (16 lanes): each takes its pipe
    2 cycles a warp, so 20 IMADs issue 2 cycles apart, while IMAD and IADD3 alternating issue a cycle apart
    (19 gaps of one cycle fewer)."""
    alone = ["IMAD R1, R2, R3, R4"] * 20 + ["EXIT"]
    mixed = ["IMAD R1, R2, R3, R4", "IADD3 R5, R6, R7, RZ"] * 10 + ["EXIT"]
    controls = [ctrl(1)] * 20 + [ctrl(5)]
    assert cycles(alone, controls) - cycles(mixed, controls) == 19 * (2 - 1)


def test_s2r_and_ldc_take_the_lsu_and_adu_ports():
    """S2R issues through the LSU, LDC through the ADU (gpusim's ldst and branch units), IMAD through the FMA pipe
    (fp32) and IADD3 through the ALU (int): docs/isa.md, "The issue ports"."""
    from gpusim.config.vocab import PORT
    from gpusim.timing.decode import decode

    prog = program(["S2R R0, SR_TID.X", "LDC R1, c[0x0][0x0]", "IMAD R2, R0, R1, RZ", "IADD3 R3, R2, 0x1, RZ",
                    "EXIT"], [], controls=[ctrl(1, wbar=0), ctrl(1, wbar=1), ctrl(4, wait=(0, 1)), ctrl(4),
                                           ctrl(5)])
    ports = [ti.port for ti in decode(prog, load_config("h200"))]
    assert ports[:4] == [PORT["ldst"], PORT["branch"], PORT["fp32"], PORT["int"]]
