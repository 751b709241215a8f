"""A fuzz over listing text: every shipped listing mutated (operands replaced, opcodes and modifiers made up,
lines deleted, duplicated, swapped, the file truncated, bytes flipped) must either load or fail with one of
gpusim's located one-line errors, never another exception; and a mutant that loads, run on a small launch with
a small step limit, must finish, fault (one line) or be refused (one line). The CLI says the same in one line."""

from __future__ import annotations

import random

import numpy as np

from gpusim.data import data_dir
from gpusim.errors import GpusimError
from gpusim.functional import GlobalMemory, Launch, execute
from gpusim.isa.sass import read_sass

LISTINGS = sorted(data_dir("workloads").glob("*_cu/*.sm_*.sass"))
OPERANDS = ["R1", "RZ", "R255", "-R3", "|R4|", "!P0", "PT", "UR4", "URZ", "0x10", "-0x1", "1.5", "+INF",
            "c[0x0][0x0]", "c[0x3][0x10]", "c[0x0][R2+0x4]", "[R2.64]", "[R2+0x4]", "desc[UR4][R2.64+0x8]",
            "`(.L_x_0)", "`(.L_missing)", "SR_TID.X", "SR_CLOCKLO", "B0", "SB0", "0x1f", "%r1", "R2.H1_H1", ""]
OPCODES = ["FOO", "IMAD.X", "LOP3.LUT", "MUFU.FOO", "ISETP.GT.AND", "BRA", "LDG.E.64", "STS.128", "HMMA.1688.F32",
           "IADD3.X", "SHF.R.U32.HI", "ATOMS.ADD", "FFMA.RZ", "F2I.U32.TRUNC", "XYZ.W"]


def mutate(text: str, rng: random.Random) -> str:
    lines = text.splitlines()
    ins = [i for i, ln in enumerate(lines) if "/*" in ln and "*/" in ln and ";" in ln]
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(7)
        i = rng.choice(ins)
        ln = lines[i]
        if "*/" not in ln:
            continue
        if kind == 0 and "," in ln:  # an operand replaced
            head, _, tail = ln.partition(";")
            parts = head.split(",")
            parts[rng.randrange(len(parts))] = " " + rng.choice(OPERANDS)
            lines[i] = ",".join(parts) + ";" + tail
        elif kind == 1:  # an opcode made up
            body = ln.split("*/", 1)[1].strip().split()
            op = next((w for w in body if not w.startswith("@")), None)
            if op:
                lines[i] = ln.replace(op, rng.choice(OPCODES), 1)
        elif kind == 2:
            del lines[i]
            ins = [k for k in ins if k < len(lines)]
        elif kind == 3:
            lines.insert(i, ln)
        elif kind == 4:
            j = rng.choice(ins)
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == 5:
            cut = rng.randrange(len(text))
            return text[:cut]
        else:
            pos = rng.randrange(len(ln))
            lines[i] = ln[:pos] + rng.choice("x;,[]`@!-|.") + ln[pos + 1:]
    return "\n".join(lines) + "\n"


def test_mutated_listings_load_or_fail_in_one_line():
    rng = random.Random(34)
    outcomes = {"ok": 0, "error": 0, "ran": 0, "fault": 0}
    for path in LISTINGS:
        text = path.read_text()
        for _ in range(12):
            m = mutate(text, rng)
            try:
                prog = read_sass(m, "m.sass")
            except GpusimError as e:
                assert "\n" not in str(e) and "m.sass" in str(e)
                outcomes["error"] += 1
                continue
            outcomes["ok"] += 1
            if prog.params or rng.random() < 0.5:
                continue
            try:  # (no parameters: a launch with an empty constant bank; faults are one line)
                execute(prog, Launch(1, 64), {}, GlobalMemory(1 << 12), max_steps_per_warp=2000)
                outcomes["ran"] += 1
            except GpusimError as e:
                assert "\n" not in str(e)
                outcomes["fault"] += 1
    assert outcomes["error"] > 20 and outcomes["ok"] > 5, outcomes


def test_truncated_and_garbage_files(tmp_path):
    text = LISTINGS[0].read_text()
    for cut in (0, 10, len(text) // 3, len(text) // 2):
        try:
            read_sass(text[:cut], "t.sass")
        except GpusimError as e:
            assert "\n" not in str(e)
    for junk in (b"\x00\xff" * 100, bytes(range(256))):
        try:
            read_sass(junk.decode("latin-1"), "j.sass")
        except GpusimError as e:
            assert "\n" not in str(e)


def test_cli_asm_sass_errors_are_one_line(tmp_path, capsys):
    from gpusim.cli.main import main

    bad = tmp_path / "k.sass"
    good = LISTINGS[0].read_text()
    bad.write_text(good.replace("EXIT", "EXITT", 1))
    assert main(["asm", "--sass", str(bad)]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "k.sass" in err[0] and "EXITT" in err[0]
    trunc = tmp_path / "t.cubin"
    trunc.write_bytes((LISTINGS[0].with_suffix(".cubin")).read_bytes()[:100])
    (tmp_path / "t.sass").write_text(good)
    assert main(["asm", "--sass", str(tmp_path / "t.sass")]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cubin" in err[0]
    assert np.isfinite(1.0)
