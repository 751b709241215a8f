"""Atomic read-modify-write (gpusim.functional.atomics) against a lane-by-lane loop in plain Python, and the
page journal that lets the runaway-loop probe write the launch's global memory and put it back."""

import numpy as np
import pytest

from gpusim.functional import atomics
from gpusim.functional.memory import PageJournal


def _one_by_one(view, idx, op, b, c):
    """Lane after lane, in lane order, each on the previous one's result (Python ints and floats, wrapped or
    rounded to the view's type after each lane)."""
    old = np.empty(idx.size, view.dtype)
    for i, k in enumerate(idx.tolist()):
        v = view[k]
        old[i] = v
        if op == "add":
            r = v + b[i] if view.dtype.kind == "f" else int(v) + int(b[i])
        elif op in ("min", "max"):
            if view.dtype.kind == "f" and (np.isnan(v) or np.isnan(b[i])):
                r = b[i] if np.isnan(v) else v
            else:
                r = min(v, b[i]) if op == "min" else max(v, b[i])
        elif op == "exch":
            r = b[i]
        elif op == "cas":
            r = c[i] if v == b[i] else v
        elif op == "inc":
            r = 0 if int(v) >= int(b[i]) else int(v) + 1
        elif op == "dec":
            r = int(b[i]) if int(v) == 0 or int(v) > int(b[i]) else int(v) - 1
        else:
            r = {"and": int.__and__, "or": int.__or__, "xor": int.__xor__}[op](int(v), int(b[i]))
        view[k] = np.array(r).astype(view.dtype) if view.dtype.kind == "f" else np.array(
            int(r) % (1 << 8 * view.itemsize), np.uint64).astype(view.dtype.str.replace("i", "u")).view(view.dtype)
    return old


@pytest.mark.parametrize("dtype", ["u4", "i4", "u8", "i8", "f4", "f8"])
@pytest.mark.parametrize("op", atomics.OPS)
def test_atomics_match_lanes_applied_one_after_another(dtype, op):
    dt = np.dtype(dtype)
    if dt.kind == "f" and op in ("and", "or", "xor", "inc", "dec"):
        pytest.skip("integer operations")
    rng = np.random.default_rng(sum(map(ord, dtype + op)))
    for spread, n in ((8, 300), (600, 300), (70_000, 500), (1, 40)):  # many repeats, few, a wide range, one address
        idx = rng.integers(0, spread, n).astype(np.int64)
        if dt.kind == "f":
            start, b = rng.normal(size=spread).astype(dt), rng.normal(size=n).astype(dt)
            b[::11] = np.nan
        else:
            info = np.iinfo(dt)
            start = rng.integers(info.min, info.max, spread, dtype=dt, endpoint=True)
            b = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True) if op not in ("inc", "dec") else \
                rng.integers(0, 20, n).astype(dt)
            start[:4] = [0, 1, 19, 20][:spread]
        c = rng.normal(size=n).astype(dt) if op == "cas" else None
        if op == "cas":
            b[::3] = start[idx[::3]]  # (some compares hold, at least for a first lane)
        for operand in (b, np.broadcast_to(b[:1], b.shape)):  # each lane's own, one for all (an immediate)
            want_view = start.copy()
            want = _one_by_one(want_view, idx, op, operand, c)
            got_view = start.copy()
            got = atomics.apply(got_view, idx, op, operand, c)
            assert got.tobytes() == want.tobytes() and got_view.tobytes() == want_view.tobytes()
            red_view = start.copy()  # a reduction: no old values, the same memory
            atomics.apply(red_view, idx, op, operand, c, old=False)
            assert red_view.tobytes() == want_view.tobytes()


def test_a_journal_puts_back_the_pages_written_and_only_keeps_those():
    rng = np.random.default_rng(3)
    buf = rng.integers(0, 256, 5 * PageJournal.PAGE + 48, dtype=np.uint8)  # (a partial last page)
    before = buf.copy()
    j = PageJournal(buf)
    for offsets, width in ((np.array([0, 8, 4096 * 3 + 8]), 8), (np.array([buf.size - 16]), 16),
                           (np.array([4094]), 4), (np.array([8, 16]), 8)):
        j.save(offsets, width)
        for o in offsets.tolist():
            buf[o: o + width] = rng.integers(0, 256, width, dtype=np.uint8)
    assert sorted(np.flatnonzero(j.saved).tolist()) == [0, 1, 3, 5]  # (4094 + 4 bytes: pages 0 and 1)
    assert not np.array_equal(buf, before)
    j.restore()
    assert np.array_equal(buf, before) and not j.saved.any()


# every thread loops 6,000 times (18,000 steps; the batch pauses after 16,384, a chunk of 32,768 warp
# instructions of two warps), then adds to two global counters and stores its loop count plus its old value:
# past 1,024 steps the block is probed (run ahead alone to its end), and its atomics and stores must not
# reach the launch's memory
LONG_THEN_ADD = """
.kernel long_then_add
.param .u64 counter
.param .u64 out
.reg .u32 %r<4>
.reg .u64 %rd<4>
.reg .pred %p
    mov.u32 %r0, 0
L:
    add.u32 %r0, %r0, 1
    setp.lt.u32 %p, %r0, 6000
    @%p bra L
    ld.param.u64 %rd0, [counter]
    atom.global.add.u32 %r1, [%rd0], 1
    red.global.add.u32 [%rd0+4], 2
    mov.u32 %r2, %tid.x
    mul.wide.u32 %rd1, %r2, 4
    ld.param.u64 %rd2, [out]
    add.u64 %rd2, %rd2, %rd1
    add.u32 %r3, %r0, %r1
    st.global.u32 [%rd2], %r3
    exit
"""


@pytest.mark.parametrize("probe_at", [1 << 10, 1 << 40])
def test_a_probed_block_writes_global_memory_and_the_launch_never_sees_it(monkeypatch, probe_at):
    from gpusim.functional import executor, warps

    from .kernels import run

    probes = []
    real = executor.Executor.probe_runaway
    monkeypatch.setattr(executor.Executor, "probe_runaway", lambda self, *a: probes.append(a[-1]) or real(self, *a))
    monkeypatch.setattr(warps, "PROBE_AT_STEPS", probe_at)  # where the executor reads it
    out, _ = run(LONG_THEN_ADD, 1, 64, {"counter": np.zeros(2, np.uint32), "out": np.zeros(64, np.uint32)})
    assert bool(probes) == (probe_at == 1 << 10)
    assert out["counter"].tolist() == [64, 128]  # each thread's atomic once: the probe's were put back
    assert sorted(out["out"].tolist()) == list(range(6000, 6064))  # the old values 0..63, each once
