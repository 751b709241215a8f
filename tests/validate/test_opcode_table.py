"""The config's per-opcode table (`opcodes:`): `rsqrt` and `sin` chains differ as configured, with cycle
counts derived by hand, and the table is validated like every other field."""

from __future__ import annotations

import numpy as np
import pytest

from gpusim.config import load_config
from gpusim.errors import ConfigError
from gpusim.timing.decode import code_arrays, decode
from tests.timing.helpers import time_kernel

N = 32
LATENCY = {"opcodes.rsqrt.latency_cycles": 40, "opcodes.sin.latency_cycles": 18}
TABLE = {**LATENCY, "opcodes.sin.lanes_per_subpartition": 1}


def _chain(op: str, n: int, dependent: bool) -> str:
    if dependent:  # each op reads the previous one's result
        body = [f"    {op}.approx.f32 %a0, %a0;"] * n
    else:  # all read %x; 8 rotating destinations (no WAW stall: the 8th issue back is long done)
        body = [f"    {op}.approx.f32 %a{i % 8}, %x;" for i in range(n)]
    return "\n".join([".kernel chain", ".param .u64 out", ".reg .f32 %a<8>, %x", ".reg .u64 %b",
                      "    mov.f32 %x, 0.5;", "    mov.f32 %a0, 0.5;", *body,
                      "    ld.param.u64 %b, [out];", "    st.global.f32 [%b], %a0;", "    exit;"])


def _cycles(op: str, n: int, dependent: bool, overrides: dict) -> int:
    out = np.zeros(32, dtype=np.float32)
    return time_kernel(_chain(op, n, dependent), "a100", arrays={"out": out}, overrides=overrides).cycles


def test_rsqrt_and_sin_chains_take_their_own_latency():
    # One warp on one SM. A dependent chain issues each op when its predecessor's result lands, so N more
    # ops cost exactly N x that opcode's latency; the prologue and the final store cancel in the
    # difference. a100's SFU latency is 20; the table makes rsqrt 40 and sin 18:
    #   rsqrt: 32 x 40 = 1280 cycles; sin: 32 x 18 = 576 cycles (and 32 x 20 = 640 for both without it).
    def delta(op, overrides):
        return _cycles(op, 2 * N, True, overrides) - _cycles(op, N, True, overrides)

    assert delta("rsqrt", LATENCY) == N * 40
    assert delta("sin", LATENCY) == N * 18
    assert delta("rsqrt", {}) == delta("sin", {}) == N * 20
    # With sin also at 1 lane its port is busy 32 cycles a warp, longer than its 18-cycle latency: the
    # dependent chain then waits for the port, 32 x 32 = 1024 cycles.
    assert delta("sin", TABLE) == N * 32


def test_an_opcode_throughput_holds_the_port_its_own_interval():
    # Independent ops issue at the port's interval ceil(32 / lanes): a100's SFU has 4 lanes (8 cycles a
    # warp); the table gives sin 1 lane (32 cycles), rsqrt keeps the unit's 4. N more ops: N x interval.
    def delta(op):
        return _cycles(op, 2 * N, False, TABLE) - _cycles(op, N, False, TABLE)

    assert delta("rsqrt") == N * 8
    assert delta("sin") == N * 32


def test_decode_reads_the_table_into_the_per_pc_arrays():
    from gpusim import assemble
    prog = assemble(_chain("sin", 2, True) .replace("    mov.f32 %x, 0.5;\n", ""), "t.sasm")
    plain = code_arrays(decode(prog, load_config("a100")))
    table = code_arrays(decode(prog, load_config("a100", overrides=TABLE)))
    sin_pcs = [i.pc for i in prog.instructions if i.opcode == "sin"]
    assert list(plain.latency[sin_pcs]) == [20, 20] and list(plain.interval[sin_pcs]) == [8, 8]
    assert list(table.latency[sin_pcs]) == [18, 18] and list(table.interval[sin_pcs]) == [32, 32]
    others = [i.pc for i in prog.instructions if i.opcode != "sin"]
    assert list(plain.latency[others]) == list(table.latency[others])


def test_the_shipped_h200_table():
    cfg = load_config("h200")
    assert cfg.opcode_timing("rsqrt", "sfu") == (39, 4)  # [MEAS] the IEEE rsqrt.approx.f32
    assert cfg.opcode_timing("sin", "sfu") == (23, 4)
    assert cfg.opcode_timing("ex2", "sfu") == (17, 4)  # not listed: the unit's
    assert cfg.opcode_timing("popc", "int") == (17, 4)


@pytest.mark.parametrize("text, message", [
    ("  rsqrtt: {latency_cycles: 40}", ":3: opcodes.rsqrtt: unknown opcode (did you mean 'rsqrt'?)"),
    ("  rsqrt: {latency: 40}", ":3: opcodes.rsqrt.latency: unknown key"),
    ("  rsqrt: {latency_cycles: 2.5}", ":3: opcodes.rsqrt.latency_cycles: expected an integer, got float 2.5"),
    ("  rsqrt: {latency_cycles: -1}", ":3: opcodes.rsqrt.latency_cycles: -1 cycles is below the minimum 0"),
    ("  rsqrt: {lanes_per_subpartition: 64}",
     ":3: opcodes.rsqrt.lanes_per_subpartition: 64 lanes is wider than a warp (32)"),
    ("  rsqrt: 40", ":3: opcodes.rsqrt: expected a mapping of fields, got int 40"),
])
def test_the_table_is_validated_with_file_line_and_field(tmp_path, text, message):
    p = tmp_path / "bad.yaml"
    p.write_text(f"extends: a100\nopcodes:\n{text}\n")
    with pytest.raises(ConfigError) as e:
        load_config(p)
    assert str(e.value) == f"{p}{message}"


def test_an_override_adds_an_entry_and_a_bad_one_names_it():
    assert load_config("gtx980", overrides={"opcodes.lg2.latency_cycles": 36}).opcode_timing("lg2", "sfu") == (36, 8)
    with pytest.raises(ConfigError, match=r"^<overrides>: opcodes.sine: unknown opcode \(did you mean 'sin'\?\)"):
        load_config("a100", overrides={"opcodes.sine.latency_cycles": 36})


def test_an_empty_table_changes_no_hash():
    assert load_config("a100", overrides={"opcodes": {}}).hash() == load_config("a100").hash()
