"""`gpusim step --schedule`: the timing model's issue log of one block — which warp each sub-partition's
scheduler picked and the warp state of the others at that cycle. saxpy at n = 1024 on a100: block 0
has 8 warps, two per sub-partition (warps 0 and 4 on sub-partition 0)."""

import pytest

from gpusim.cli import main as cli_main
from gpusim.config import load_config
from gpusim.stats.schedule import picks
from gpusim.stats.simulate import configure, timed_execute
from gpusim.workloads import load_workload


def _run(scheduler=None, log=100_000):
    cfg = configure(load_config("a100"), scheduler, None)
    prep = load_workload("saxpy").prepare({"n": 1024}, seed=0, cfg=cfg)
    te = timed_execute(prep.program, prep.launch, dict(prep.args), prep.memory, cfg=cfg, block_ids=[0],
                       issue_log=log)
    return te, prep.program, cfg


@pytest.fixture(scope="module")
def gto():
    return _run()


def _sp0(te, cfg):
    return [p for p in picks(te.timing.issue_log, cfg.sm.subpartitions) if p.subpartition == 0]


def test_the_log_changes_no_cycle(gto):
    te, _, _ = gto
    off, _, _ = _run(log=0)
    assert off.timing.issue_log is None
    assert te.timing.cycles == off.timing.cycles
    assert te.timing.warp_states == off.timing.warp_states
    # every issue is a pick in the log
    assert len(picks(te.timing.issue_log, 4)) == te.timing.warp_instructions


def test_gto_keeps_the_oldest_warp_while_it_can_issue(gto):
    te, program, cfg = gto
    ps = _sp0(te, cfg)
    assert {(p.block, p.warp) for p in ps} == {(0, 0), (0, 4)}
    # the first pick: the oldest warp; the other is ready and its unit free: not_selected
    first = ps[0]
    assert (first.warp, first.pc) == (0, 0)
    assert first.others == {(0, 4): ("not_selected", 0)}
    # greedy: warp 0 issues again at its next chance while warp 4 waits, not selected
    assert (ps[1].warp, ps[1].pc) == (0, 1) and ps[1].others[(0, 4)][0] == "not_selected"


def test_a_load_consumer_waits_in_long_scoreboard_while_the_other_warp_issues(gto):
    te, program, cfg = gto
    ps = _sp0(te, cfg)
    text = [ins.text.strip() for ins in program.instructions]
    fma = next(pc for pc, t in enumerate(text) if t.startswith("fma"))
    loads = [pc for pc, t in enumerate(text) if t.startswith("ld.global")]
    # while warp 0 waits for its loads (the fma reads both), warp 4 issues, and warp 0's state is
    # long_scoreboard at the fma
    waiting = [p for p in ps if p.warp == 4 and p.others.get((0, 0)) == ("long_scoreboard", fma)]
    assert waiting, "warp 4 never issued while warp 0 waited for a load"
    # the fma issues no earlier than a DRAM round trip after the last load (the L2 is cold)
    last_load = max(p.cycle for p in ps if p.warp == 0 and p.pc in loads)
    fma_at = next(p.cycle for p in ps if p.warp == 0 and p.pc == fma)
    assert fma_at - last_load >= cfg.l2.hit_latency_cycles


def test_lrr_alternates_between_the_ready_warps():
    te, _, cfg = _run("lrr")
    ps = _sp0(te, cfg)
    assert [(p.warp, p.pc) for p in ps[:4]] == [(0, 0), (4, 0), (0, 1), (4, 1)]


def test_the_command_prints_one_line_per_pick(capsys, monkeypatch):
    monkeypatch.setattr(cli_main, "SUBCOMMANDS", ["step"])
    assert cli_main.main(["step", "saxpy", "--set", "n=1024", "--schedule", "--picks", "5"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("saxpy block 0 of 4 alone on SM 0 of a100 (gto scheduler, 4 sub-partitions): "
                               "136 picks in ")
    assert lines[0].endswith("the first 5 shown")
    rows = lines[3:]
    assert len(rows) == 5
    assert rows[0].split()[1:5] == ["0", "w0", "0", "mov.u32"]
    assert "w4 not_selected (0)" in rows[0]
