"""Per-warp instruction streams: complete, consistent with the counters, produced block by block."""

import numpy as np

from gpusim import GlobalMemory, Launch, assemble, block_streams, execute

COPY = """
.kernel copy
.param .u64 src
.param .u64 dst
.param .u32 n
.reg .u32 %i, %n, %v
.reg .u64 %rd<4>
.reg .pred %p
    mov.u32 %i, %ctaid.x
    mad.lo.u32 %i, %i, %ntid.x, %tid.x
    ld.param.u32 %n, [n]
    setp.ge.u32 %p, %i, %n
    @%p exit
    ld.param.u64 %rd0, [src]
    mul.wide.u32 %rd1, %i, 4
    add.u64 %rd2, %rd0, %rd1
    ld.global.u32 %v, [%rd2]
    ld.param.u64 %rd0, [dst]
    add.u64 %rd3, %rd0, %rd1
    st.global.u32 [%rd3], %v
    exit
"""


def setup(n):
    mem = GlobalMemory()
    src = mem.alloc_array(np.arange(n, dtype=np.uint32))
    dst = mem.alloc_array(np.zeros(n, dtype=np.uint32))
    return mem, {"src": src, "dst": dst, "n": n}


def test_streams_match_counters_and_addresses():
    prog = assemble(COPY)
    n = 1000
    mem, params = setup(n)
    launch = Launch.make(-(-n // 128), 128)
    stats = execute(prog, launch, params, mem).stats
    mem2, params2 = setup(n)
    blocks = list(block_streams(prog, launch, params2, mem2))
    assert [b.block for b in blocks] == list(range(8))
    warps = [w for b in blocks for w in b.warps]
    assert sum(len(w) for w in warps) == stats.warp_instructions
    lanes = sum(int(np.bitwise_count(w.masks).sum()) for w in warps)
    assert lanes == stats.thread_instructions
    # the load of warp 2 of block 1 reads 32 consecutive words starting at element 1*128 + 2*32
    w = blocks[1].warps[2]
    k = int(np.flatnonzero(w.pcs == 8)[0])
    np.testing.assert_array_equal(w.addresses[k], params2["src"] + 4 * (192 + np.arange(32)))
    # the last warp (threads 992..1023) has 8 live lanes after the exit
    last = blocks[-1].warps[-1]
    assert last.masks[-1] == 0xFF


def test_streams_are_produced_on_demand():
    prog = assemble(COPY)
    n = 64 * 1024
    mem, params = setup(n)
    gen = block_streams(prog, Launch.make(n // 256, 256), params, mem, batch_lanes=1024)
    first = next(gen)
    assert first.block == 0
    out = mem.read(params["dst"], np.uint32, n)
    assert out[:256].tolist() == list(range(256))  # the first batch ran
    assert not out[-256:].any()  # the last blocks have not run yet


def test_recorders_taking_turns_with_the_buffers_each_flush_exactly_their_own_steps():
    """Recorders write a chunk into buffers they take turns to use: one recording while another still holds
    unflushed steps, chunks recorded one after another (the feeder's order), steps with some lanes off and
    steps that outgrow the buffers, addresses given as an array or (every lane on) written in place: every
    chunk flushed is exactly its own steps in issue order (warps, pcs, masks as bits of the active lanes,
    access rows with -1 for lanes off, the entries that have them)."""
    from gpusim.functional.stream import BatchRecorder

    rng = np.random.default_rng(2)
    W, ws = 64, 32

    def record(rec, nsteps):
        want = []
        for _ in range(nsteps):
            G = np.sort(rng.choice(W, int(rng.integers(1, W + 1)), replace=False)).astype(np.int64)
            every = rng.random() < 0.3  # (every lane executes: the addresses may be written in place)
            active = np.ones((G.size, ws), bool) if every else rng.random((G.size, ws)) < 0.8
            pc = int(rng.integers(0, 50))
            rec.positions = None if every else np.flatnonzero(active.ravel())
            rec.step(pc, G, active)
            rows = None
            if rng.random() < 0.5:
                addr = rng.integers(0, 1 << 30, int(active.sum()))
                if not every:
                    assert rec.memory_into(addr.size) is None
                    rec.memory(addr)
                elif rng.random() < 0.5:
                    rec.memory_into(addr.size)[:] = addr
                else:
                    rec.memory(addr)
                rows = np.full((G.size, ws), -1, np.int64)
                rows[active] = addr
            want.append((pc, G, active, rows))
        return want

    def check(chunk, want):
        assert chunk.G.tolist() == [int(w) for _, G, _, _ in want for w in G]
        assert chunk.pcs.tolist() == [pc for pc, G, _, _ in want for _ in G]
        bits = [sum(1 << j for j in range(ws) if a[j]) for _, _, act, _ in want for a in act]
        assert chunk.masks.tolist() == bits
        starts = np.cumsum([0] + [G.size for _, G, _, _ in want])
        entries = [i for k, (_, _, _, r) in enumerate(want) if r is not None for i in range(starts[k], starts[k + 1])]
        rows = [r for _, _, _, r in want if r is not None]
        assert (chunk.entries.tolist() if chunk.entries is not None else []) == entries
        got = chunk.rows.tolist() if chunk.rows is not None else []
        assert got == (np.concatenate(rows).tolist() if rows else [])

    a, b = BatchRecorder(W, ws), BatchRecorder(W, ws)
    done = np.zeros(W, bool)
    want_a = record(a, 30)
    want_b = record(b, 200)  # (while a holds its steps; past the buffers' first size)
    chunk_a = a.flush_steps(W, done)
    check(chunk_a, want_a)
    check(b.flush_steps(W, done), want_b)
    for rec in (b, a, b, b, a):  # one after another, each flushed before the next records
        want = record(rec, int(rng.integers(1, 120)))
        check(rec.flush_steps(W, done), want)
