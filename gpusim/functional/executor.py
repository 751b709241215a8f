"""Functional executor: runs a kernel lane by lane with real values.

Blocks run in batches; within a batch, every warp has its own pc and SIMT stack, and all warps
standing at the lowest pc step together as one numpy operation over their active lanes (so a
uniform kernel runs each instruction once per batch, not once per warp). Warps are independent
except at `bar.sync`, shared memory and atomics, so any interleaving that respects barriers is a
valid execution; this one keeps warps converged, which is also what makes it fast."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from gpusim.errors import DeadlockError, KernelFault, LaunchError
from gpusim.functional import atomics, tensor
from gpusim.functional.launch import Launch, require_units
from gpusim.functional.memory import GlobalMemory, host_available_bytes
from gpusim.functional.semantics import alu
from gpusim.functional.simt_stack import SimtStack
from gpusim.functional.stats import ExecStats
from gpusim.functional.stream import BatchRecorder, BlockStream, StreamChunk
from gpusim.isa.opcodes import MMA_DIMS
from gpusim.isa.program import SPECIAL_REGISTERS, Instruction, Operand, Program
from gpusim.isa.types import TYPES

WARP = 32  # the warp size when no config is given; else the config's sm.warp_size
RUN, WAIT, DONE = 0, 1, 2
# The runaway-loop guard: a warp that issues more instructions than this faults. 2^17 is 3.5x the
# longest warp of any shipped workload at its default and test sizes (ffma_peak, gemm_tiled: ~37,000),
# and with the probe below a loop that never ends is stopped within ~10 s in either mode, whatever the
# grid (docs/robustness.md). A count, not a time: the same kernel always stops at the same place.
DEFAULT_MAX_STEPS_PER_WARP = 1 << 17
DEFAULT_BATCH_LANES = 1 << 16
# The runaway-loop probe (Executor.probe_runaway): a batch that passes this many steps has one of its
# blocks run on alone, on copies, to its end or the step limit. A batch of 2,048 warps stepping
# together reaches the limit slowly (over half a minute when its loop touches memory), and in timing
# mode far more slowly: the timing model simulates each of their instructions first, and one SM that
# runs alone (no global access to wait on) pulls its blocks' batches far ahead of the other warps,
# whose streams wait in memory (minutes and gigabytes for a large grid). One block alone reaches the
# limit in seconds.
PROBE_AT_STEPS = 1 << 10
DEFAULT_CHUNK = 1 << 15  # warp instructions per chunk when the timing model pulls streams


@dataclass
class ExecResult:
    """What a functional launch produced: statistics (memory holds the values)."""

    program: Program
    launch: Launch
    stats: ExecStats


def _param_bytes(program: Program, params: dict) -> bytes:
    names = {p.name for p in program.params}
    for key in params:
        if key not in names:
            raise LaunchError(f"unknown kernel parameter '{key}'; {program.name} takes "
                              + (", ".join(p.name for p in program.params) or "none"), field=key)
    size = max((p.offset + TYPES[p.type].bytes for p in program.params), default=0)
    buf = bytearray(-(-size // 8) * 8)
    for p in program.params:
        if p.name not in params:
            raise LaunchError(f"missing value for .param .{p.type} {p.name}", field=p.name)
        t = TYPES[p.type]
        v = params[p.name]
        try:
            if t.is_float:
                arr = np.asarray(float(v), dtype=t.dtype)
            else:
                iv = int(v)
                if iv != v:
                    raise ValueError
                if not -(1 << (t.bits - 1)) <= iv < (1 << t.bits):
                    raise LaunchError(f"{iv} does not fit .{p.type}", field=p.name)
                arr = np.asarray(iv & ((1 << t.bits) - 1), dtype=np.uint64).astype(np.dtype(f"u{t.bytes}"))
        except (TypeError, ValueError):
            raise LaunchError(f"expected a .{p.type} value, got {v!r}", field=p.name) from None
        buf[p.offset: p.offset + t.bytes] = arr.tobytes()
    return bytes(buf)


class _Batch:
    """The state of a batch of thread blocks executing together: `nblocks` blocks from position
    `first_block` of the launch order (of `ex.block_ids` when the executor runs chosen blocks)."""

    def __init__(self, ex: Executor, first_block: int, nblocks: int):
        self.ex, prog, launch = ex, ex.program, ex.launch
        self.first_block, self.nblocks = first_block, nblocks
        T = launch.threads_per_block
        WS = self.ws = ex.warp_size
        self.lane_ids = np.arange(WS)
        self.wpb = -(-T // WS)
        W = self.W = nblocks * self.wpb
        L = W * WS
        lane = np.arange(L, dtype=np.int64)
        warp = lane // WS
        self.lane_block = warp // self.wpb  # block index within the batch
        tlin = (warp % self.wpb) * WS + (lane % WS)
        self.exists = (tlin < T).reshape(W, WS)
        self.full_lanes = int(self.exists.sum())
        self.all_exist = self.full_lanes == L
        self.live = self.exists.copy()
        self.stack = SimtStack(W, self.exists)
        self.state = np.zeros(W, dtype=np.int8)
        self.bar_pc = np.full(W, -1, dtype=np.int64)
        self.full = self.all_exist  # every warp runs all its lanes
        # registers, then special registers, as one list of lane arrays
        self.R: list[np.ndarray] = [np.zeros(L, dtype=TYPES[r.type].dtype) for r in prog.registers]
        bx, by, _ = launch.block
        gx, gy, _ = launch.grid
        if ex.block_ids is None:
            gid = first_block + self.lane_block
        else:
            gid = ex.block_ids[first_block: first_block + nblocks][self.lane_block]
        specials = {
            "%tid.x": tlin % bx, "%tid.y": (tlin // bx) % by, "%tid.z": tlin // (bx * by),
            "%ctaid.x": gid % gx, "%ctaid.y": (gid // gx) % gy, "%ctaid.z": gid // (gx * gy),
            "%laneid": lane % WS, "%warpid": warp % self.wpb,
        }
        for name in SPECIAL_REGISTERS:
            if name in ex.used_specials:
                if name in specials:
                    arr = specials[name].astype(np.uint32)
                elif name.startswith("%ntid"):
                    arr = np.full(L, launch.block["xyz".index(name[-1])], dtype=np.uint32)
                elif name.startswith("%nctaid"):
                    arr = np.full(L, launch.grid["xyz".index(name[-1])], dtype=np.uint32)
                elif name == "%nwarpid":
                    arr = np.full(L, self.wpb, dtype=np.uint32)
                else:  # WARP_SZ
                    arr = np.full(L, WS, dtype=np.uint32)
                self.R.append(arr)
            else:
                self.R.append(None)
        self.smem_size = prog.shared_bytes
        self.smem_stride = -(-max(self.smem_size, 8) // 8) * 8
        self.smem = np.zeros(nblocks * self.smem_stride, dtype=np.uint8)
        self.lane_smem = self.lane_block * self.smem_stride  # each lane's block's offset in `smem`
        # cp.async: copies issued and not yet waited for, as (warp, group, shared byte indices, bytes) per
        # lane; a warp's copies join its group number `cp_groups[w]` (the groups it has committed so far)
        self.cp_pending: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self.cp_groups = np.zeros(W, dtype=np.int64)
        self.rec = BatchRecorder(W, WS) if ex.record else None
        if ex.loop_cap is not None:  # iterations of each loop's current instance, per warp
            self.loop_count = np.zeros((W, len(ex.loop_headers)), dtype=np.int64)

    def block_copy(self, k: int, ex: Executor) -> _Batch:
        """Block k of this batch alone, as a batch of its own run by `ex`, in the state it has here
        (registers, SIMT stacks, barrier and exit state, shared memory), copied."""
        one = _Batch(ex, self.first_block + k, 1)
        w = slice(k * self.wpb, (k + 1) * self.wpb)
        lanes = slice(k * self.wpb * self.ws, (k + 1) * self.wpb * self.ws)
        for mine, here in zip(one.R, self.R, strict=True):
            if here is not None:
                mine[:] = here[lanes]
        one.live[:], one.state[:], one.bar_pc[:] = self.live[w], self.state[w], self.bar_pc[w]
        s, t = one.stack, self.stack
        s.pc, s.active, s.rpc, s.depth = t.pc[w].copy(), t.active[w].copy(), t.rpc[w].copy(), t.depth[w].copy()
        s.below_pc, s.below_mask, s.below_rpc = t.below_pc[w].copy(), t.below_mask[w].copy(), t.below_rpc[w].copy()
        one.smem[:] = self.smem[k * self.smem_stride: (k + 1) * self.smem_stride]
        one.full = False  # (the general path; _steps sets it again where the warps reconverge)
        return one

    # lane -> (block, thread) for error messages
    def where(self, lane: int) -> tuple[tuple, tuple]:
        launch = self.ex.launch
        w, l = divmod(int(lane), self.ws)
        gid = self.first_block + w // self.wpb
        if self.ex.block_ids is not None:
            gid = int(self.ex.block_ids[gid])
        t = (w % self.wpb) * self.ws + l
        bx, by, _ = launch.block
        gx, gy, _ = launch.grid
        return (gid % gx, (gid // gx) % gy, gid // (gx * gy)), (t % bx, (t // bx) % by, t // (bx * by))


class BatchSource:
    """A batch of blocks that executes when asked: `advance()` runs it a chunk further and returns
    the instructions its warps issued meanwhile (a StreamChunk), or None once it has finished."""

    def __init__(self, b: _Batch, steps: Iterator[tuple]):
        self.first_block, self.nblocks, self.wpb = b.first_block, b.nblocks, b.wpb
        self._b = b
        self._steps = steps
        self.finished = False

    def advance(self) -> StreamChunk | None:
        if self.finished:
            return None
        with np.errstate(all="ignore"):
            try:
                G, steps = next(self._steps)
                if steps >= self._b.ex.probe_after:
                    self._b.ex.probe_runaway(self._b, G, steps)
            except StopIteration:
                self.finished = True
        b = self._b
        return b.rec.flush(b.W, b.state == DONE, grouped=False)  # (the timing model's feeder reads it)


class Executor:
    """Runs one launch of a program over global memory.

    Options for sampled simulation (values are then not those of the kernel; never verify them):
    `block_limit` N executes only the first N blocks of the grid in launch order, `block_ids` only the
    blocks with these linear ids, in this order (either way `%nctaid` stays the whole grid's, and the
    stats count only the blocks executed). `loop_cap` C makes every loop of every warp stop after C
    iterations: a backward branch (target <= pc) that the warp has already taken C times in the
    loop's current instance falls through for all its lanes, so the warp leaves the loop and runs
    the code after it (an instance restarts when an enclosing loop's backward branch is taken). A
    dict {loop header pc: C} caps those loops only (a loop's header is its backward branch's target).
    Every warp of a block sees the same cap, so a loop with a barrier inside, which all warps iterate
    alike, stays matched. `loop_trips` then holds, per loop header pc, the most backward branches any
    warp took in one instance (a cap of 2**62, or {}, counts them without capping), and
    `block_warp_instructions` the warp instructions of each block executed, in execution order."""

    def __init__(self, program: Program, launch: Launch, params: dict, memory: GlobalMemory, *,
                 cfg=None, max_steps_per_warp: int | None = None, record: bool = False,
                 batch_lanes: int | None = None, block_limit: int | None = None,
                 block_ids=None, loop_cap: int | dict[int, int] | None = None):
        require_units(program, cfg)  # (first: a kernel for another kind of GPU is refused for what it needs most)
        launch.validate(cfg, program.shared_bytes)
        self.program, self.launch, self.memory, self.cfg = program, launch, memory, cfg
        self.warp_size = int(cfg.sm.warp_size) if cfg is not None else WARP
        self.params = _param_bytes(program, params)
        self.max_steps = max_steps_per_warp or DEFAULT_MAX_STEPS_PER_WARP
        self.record = record
        self.block_ids = None
        self.num_blocks = launch.num_blocks  # blocks this executor runs
        if block_limit is not None and block_ids is not None:
            raise LaunchError("give block_limit or block_ids, not both", field="blocks")
        if block_limit is not None:
            if int(block_limit) < 1:
                raise LaunchError(f"block_limit is {block_limit}; must be at least 1", field="blocks")
            self.num_blocks = min(int(block_limit), launch.num_blocks)
        elif block_ids is not None:
            ids = np.asarray(block_ids, dtype=np.int64).reshape(-1)
            if ids.size == 0 or ids.min() < 0 or ids.max() >= launch.num_blocks:
                raise LaunchError(f"block_ids must be non-empty and within 0..{launch.num_blocks - 1}",
                                  field="blocks")
            self.block_ids, self.num_blocks = ids, int(ids.size)
        self.loop_cap = None
        if loop_cap is not None:
            back = [i for i in program.instructions if i.opcode == "bra" and i.target <= i.pc]
            self.loop_headers = sorted({i.target for i in back})
            self.loop_trips = dict.fromkeys(self.loop_headers, 0)
            caps = loop_cap if isinstance(loop_cap, dict) else dict.fromkeys(self.loop_headers, loop_cap)
            unknown = sorted(set(caps) - set(self.loop_headers))
            if unknown:
                raise LaunchError(f"loop_cap: pc {unknown[0]} is not a loop header (headers: "
                                  f"{', '.join(map(str, self.loop_headers)) or 'none'})", field="loop_cap")
            if any(int(c) < 0 for c in caps.values()):
                raise LaunchError(f"loop_cap {min(caps.values())}: must be at least 0", field="loop_cap")
            self.loop_cap = {h: int(caps.get(h, 1 << 62)) for h in self.loop_headers}
            self.block_warp_instructions = np.zeros(self.num_blocks, dtype=np.int64)  # in execution order
        self.stats = ExecStats(warp_size=self.warp_size)
        self.stats.blocks = self.num_blocks
        self.stats.warps = self.num_blocks * launch.warps_per_block(self.warp_size)
        self.stats.threads = self.num_blocks * launch.threads_per_block
        self.used_specials = {o.name for i in program.instructions for o in i.srcs if o.kind == "special"}
        lanes_per_block = launch.warps_per_block(self.warp_size) * self.warp_size
        self.blocks_per_batch = max(1, (batch_lanes or DEFAULT_BATCH_LANES) // lanes_per_block)
        self.nregs = len(program.registers)
        self.probe_after = PROBE_AT_STEPS  # a batch past this many steps is probed (probe_runaway)

    # ---- driver -----------------------------------------------------------------------------
    def run(self) -> ExecStats:
        for _ in self.batches():
            pass
        return self.stats

    def batches(self) -> Iterator[_Batch]:
        """Run the launch batch by batch, yielding each finished batch (its recorder holds the
        per-warp instruction streams when recording)."""
        with np.errstate(all="ignore"):
            total = self.num_blocks
            for first in range(0, total, self.blocks_per_batch):
                b = _Batch(self, first, min(self.blocks_per_batch, total - first))
                self._run_batch(b)
                yield b

    def stream_batches(self, chunk: int = DEFAULT_CHUNK) -> Iterator[BatchSource]:
        """The launch as a sequence of batches that execute on demand, about `chunk` warp instructions
        at a time
        (recording): the timing model pulls instructions as its warps need them, so only a window of
        each warp's stream is ever held. Batches are opened in order; several may be open at once."""
        total = self.num_blocks
        for first in range(0, total, self.blocks_per_batch):
            b = _Batch(self, first, min(self.blocks_per_batch, total - first))
            yield BatchSource(b, self._steps(b, chunk))

    def block_streams(self) -> Iterator[BlockStream]:
        """Run the launch (recording) and yield each block's stream; `self.stats` is complete once
        the iterator is exhausted."""
        for b in self.batches():
            yield from b.rec.blocks(self.program, b.first_block, b.nblocks, b.wpb)

    def _run_batch(self, b: _Batch) -> None:
        for G, steps in self._steps(b, DEFAULT_CHUNK):
            if steps >= self.probe_after:
                self.probe_runaway(b, G, steps)

    def _steps(self, b: _Batch, chunk: int) -> Iterator[None]:
        """Execute the batch to its end, pausing (yielding) after about every `chunk` warp instructions
        when chunk > 0."""
        prog = self.program
        ops = [self._decode(ins, b) for ins in prog.instructions]
        st = b.stack
        pcs_buf = np.empty(b.W, dtype=np.int64)
        big = np.int64(1 << 40)
        steps = since = 0
        stats = self.stats
        by_unit = stats.by_unit
        global_access = [(i.opcode in ("ld", "st", "atom", "red") and i.space == "global")
                         or (i.opcode == "cp" and bool(set(i.quals) & {"ca", "cg"})) for i in prog.instructions]
        per_block = None  # loop-cap mode: warp instructions of each block of this batch
        if self.loop_cap is not None:
            per_block = self.block_warp_instructions[b.first_block: b.first_block + b.nblocks]
            wpb = b.wpb
        while True:
            runnable = b.state == RUN
            np.copyto(pcs_buf, st.pc)
            pcs_buf[~runnable] = big
            p = int(pcs_buf.min())
            if p == big:
                if (b.state == DONE).all():
                    return
                self._deadlock(b)
            G = np.flatnonzero(pcs_buf == p)
            ins = prog.instructions[p]
            if b.full and G.size == b.W:
                lanes = slice(None)
                nlanes = b.full_lanes
                mask = st.active
                if b.rec is not None:
                    b.rec.positions = None
            else:
                mask = st.active[G]
                lanes = (G[:, None] * b.ws + b.lane_ids)[mask]
                nlanes = lanes.size
                if b.rec is not None:
                    b.rec.positions = np.flatnonzero(mask)
            stats.warp_instructions += G.size
            stats.thread_instructions += nlanes
            by_unit[ins.unit] += G.size
            if global_access[p]:
                stats.global_requests += G.size
            if per_block is not None:
                per_block += np.bincount(G // wpb, minlength=per_block.size)
            if b.rec is not None:
                b.rec.step(p, G, mask)
            ops[p](G, lanes)
            steps += 1
            if steps > self.max_steps:
                self._runaway(b, ins)
            if chunk:
                since += G.size
                if since >= chunk:
                    since = 0
                    yield G, steps
            reconv = st.pc[G] == st.rpc[G]
            if reconv.any():
                ws = G[reconv]
                b.state[ws[~st.pop(ws)]] = DONE
                b.full = b.all_exist and not st.depth.any() and bool(st.active.all())

    # ---- errors -----------------------------------------------------------------------------
    def fault(self, b: _Batch, ins: Instruction, lane: int, msg: str, address: int | None = None,
              cls=KernelFault):
        block, thread = b.where(lane)
        raise cls(msg, kernel=self.program.name, pc=ins.pc, line=ins.line, source=ins.text,
                  block=block, thread=thread, address=address, file=self.program.source)

    def _runaway(self, b: _Batch, ins: Instruction):
        w = int(np.flatnonzero(b.state == RUN)[0]) if (b.state == RUN).any() else 0
        lane = w * b.ws + int(np.argmax(b.stack.active[w]))
        self.fault(b, ins, lane, _runaway_reason(self.max_steps))

    def probe_runaway(self, b: _Batch, G: np.ndarray, steps: int) -> None:
        """The runaway-loop probe. Batch `b` has taken `steps` steps (the last one by warps G) and, at
        this pace, would need minutes to reach the step limit if it loops forever (all its warps step
        together; in timing mode the timing model simulates every instruction of them first). So the
        block of its first running warp is run on alone, from its present state, on copies of that
        state and of global memory, without recording: if it passes the limit, the step-limit fault
        is raised now, naming that warp (steps counted as the batch counts them: the batch's so far,
        then the block's); if it ends, the batch goes on and another probe waits until a batch runs
        twice as long. Other faults are left for the batch to meet. No probe under loop_cap (loops are
        cut short) or when copying global memory would take more than a quarter of the free host
        memory. A block that waits for another block (a cross-block spin, racy in any case) may loop
        in the probe and not in the launch, as it may in functional mode's batches."""
        self.probe_after = self.max_steps + 1  # (unless the probe ends below: no other)
        running = np.flatnonzero(b.state != DONE)
        free = host_available_bytes()
        if (self.loop_cap is not None or steps >= self.max_steps or not running.size
                or (free is not None and self.memory.buffer.nbytes > free // 4)):
            return
        probe = copy.copy(self)
        probe.memory = copy.copy(self.memory)
        probe.memory._buf = self.memory.buffer.copy()
        probe.stats = ExecStats(warp_size=self.warp_size)
        probe.record = False
        probe.max_steps = self.max_steps - steps
        run = np.flatnonzero(b.state == RUN)
        k = int((run if run.size else running)[0]) // b.wpb
        one = b.block_copy(k, probe)
        st = one.stack
        g = G[(G >= k * b.wpb) & (G < (k + 1) * b.wpb)] - k * b.wpb
        reconv = st.pc[g] == st.rpc[g]  # what _steps does after the step it paused on
        if reconv.any():
            ws = g[reconv]
            one.state[ws[~st.pop(ws)]] = DONE
        try:
            with np.errstate(all="ignore"):
                more = sum(1 for _ in probe._steps(one, 1))  # (chunk 1: it pauses after every step)
        except KernelFault as exc:
            if exc.reason == _runaway_reason(probe.max_steps):
                raise KernelFault(_runaway_reason(self.max_steps), exc.kernel, exc.pc, exc.line, exc.source,
                                  exc.block, exc.thread, exc.address, exc.file) from None
            return
        self.probe_after = 2 * (steps + more)

    def _deadlock(self, b: _Batch):
        """No warp of the batch can run, yet some wait at a barrier: name the block and why."""
        prog = self.program
        waiting = np.flatnonzero(b.state == WAIT)
        w = int(waiting[0])
        blk = w // b.wpb
        ws = slice(blk * b.wpb, (blk + 1) * b.wpb)
        pcs = sorted(set(int(x) for x in b.bar_pc[ws][b.state[ws] == WAIT]))
        ins = prog.instructions[pcs[0]]
        arrived = int(b.live[ws][b.state[ws] == WAIT].sum())
        exited = int((b.exists[ws] & ~b.live[ws]).sum())
        total = int(b.exists[ws].sum())
        if len(pcs) > 1:
            lines = ", ".join(str(prog.instructions[p].line) for p in pcs)
            msg = f"deadlock: warps of the block wait at different barriers (lines {lines})"
        else:
            msg = (f"deadlock: barrier reached by {arrived} of {total} threads of the block; "
                   f"{exited} exited without reaching it")
        self.fault(b, ins, w * b.ws + int(np.argmax(b.exists[w])), msg, cls=DeadlockError)

    # ---- decoding: one closure per instruction, per batch --------------------------------------
    def _reader(self, op: Operand, b: _Batch) -> Callable:
        """lanes -> operand values in the operand's type."""
        t = TYPES[op.type] if op.type else None
        if op.kind in ("imm", "sym"):
            v = op.value
            if t.is_int:
                v = int(v) & ((1 << t.bits) - 1)
                v = np.array(v, dtype=np.uint64).astype(np.dtype(f"u{t.bytes}")).view(t.dtype)[()]
            else:
                v = t.dtype.type(v)
            return lambda lanes: v
        if op.kind == "special":
            arr = b.R[self.nregs + SPECIAL_REGISTERS.index(op.name)]
        else:
            arr = b.R[op.reg]
        if t.kind == "pred":
            if op.negate:
                return lambda lanes: ~arr[lanes]
            return lambda lanes: arr[lanes]
        if arr.dtype == t.dtype:
            return lambda lanes: arr[lanes]
        if arr.dtype.itemsize == t.dtype.itemsize:
            view = arr.view(t.dtype)
            return lambda lanes: view[lanes]
        dt = t.dtype
        return lambda lanes: arr[lanes].astype(dt)

    def _writer(self, op: Operand, b: _Batch, value_dtype: np.dtype) -> Callable:
        arr = b.R[op.reg]
        if arr.dtype != value_dtype and arr.dtype.itemsize == value_dtype.itemsize and arr.dtype.kind != "b":
            arr = arr.view(value_dtype)

        def write(lanes, value):
            arr[lanes] = value

        return write

    def _guarded(self, ins: Instruction, b: _Batch, body: Callable) -> Callable:
        """Wrap an instruction body so that lanes whose guard predicate is false sit it out."""
        if ins.guard < 0:
            return body
        pred = b.R[ins.guard]
        neg = ins.guard_negate
        stats = self.stats

        def run(G, lanes):
            if isinstance(lanes, slice):
                on = np.flatnonzero(pred != neg)
            else:
                on = lanes[pred[lanes] != neg]
            stats.predicated_off += (b.full_lanes if isinstance(lanes, slice) else lanes.size) - on.size
            if b.rec is not None and b.rec.positions is not None:
                b.rec.positions = b.rec.positions[pred[lanes] != neg]
            elif b.rec is not None:
                b.rec.positions = on
            body(G, on)

        return run

    def _decode(self, ins: Instruction, b: _Batch) -> Callable:
        op = ins.opcode
        if op == "bra":
            return self._branch(ins, b)
        if op == "exit":
            return self._exit(ins, b)
        if op == "bar":
            return self._barrier(ins, b)
        if op in ("ld", "st", "atom", "red"):
            body = self._memory(ins, b)
        elif op == "shfl":
            body = self._shfl(ins, b)
        elif op == "mma":
            body = self._mma(ins, b)
        elif op == "ldmatrix":
            body = self._ldmatrix(ins, b)
        elif op == "cp":
            body = self._cp_async(ins, b)
        elif op == "mov" and len(ins.dsts) + len(ins.srcs) == 3:
            body = self._mov_halves(ins, b)
        elif op == "vote":
            body = self._vote(ins, b)
        elif op in ("membar", "fence"):  # memory here is sequentially consistent: nothing to order
            def body(G, lanes):
                pass
        else:
            f = alu(ins)
            readers = [self._reader(s, b) for s in ins.srcs]
            d = ins.dsts[0]
            dtype = TYPES[d.type].dtype
            write = self._writer(d, b, dtype)
            if len(readers) == 1:
                r0 = readers[0]

                def body(G, lanes):
                    write(lanes, f(r0(lanes)))
            elif len(readers) == 2:
                r0, r1 = readers

                def body(G, lanes):
                    write(lanes, f(r0(lanes), r1(lanes)))
            else:
                def body(G, lanes):
                    write(lanes, f(*(r(lanes) for r in readers)))
        st = b.stack
        nxt = ins.pc + 1
        guarded = self._guarded(ins, b, body)

        def run(G, lanes):
            guarded(G, lanes)
            st.pc[G] = nxt

        return run

    # ---- control --------------------------------------------------------------------------------
    def _branch(self, ins: Instruction, b: _Batch) -> Callable:
        st, target, nxt = b.stack, ins.target, ins.pc + 1
        if self.loop_cap is not None and target <= ins.pc:
            return self._capped_branch(ins, b)
        if ins.guard < 0 or target == nxt:
            def run(G, lanes):
                st.pc[G] = target if ins.guard < 0 else nxt
            return run
        pred = b.R[ins.guard].reshape(b.W, b.ws)
        neg = ins.guard_negate
        reconv = ins.reconv

        def run(G, lanes):
            act = st.active[G]
            taken = act & (pred[G] != neg)
            n_taken = taken.sum(1)
            self._resolve(b, G, taken, n_taken, n_taken == act.sum(1), target, nxt, reconv)

        return run

    def _resolve(self, b: _Batch, G, taken, n_taken, all_taken, target: int, nxt: int, reconv: int) -> None:
        """A guarded branch's outcome for warps G: warps whose active lanes all take it jump, warps
        where none does fall through, and the rest diverge (the taken lanes wait on the SIMT stack)."""
        st = b.stack
        st.pc[G] = np.where(all_taken, target, nxt)
        split = (n_taken > 0) & ~all_taken
        if split.any():
            st.diverge(G[split], taken[split], nxt, target, reconv)
            self.stats.divergent_branches += int(split.sum())
            b.full = False
        self.stats.branches += G.size

    def _capped_branch(self, ins: Instruction, b: _Batch) -> Callable:
        """A loop's backward branch under `loop_cap`: a warp whose current instance of the loop has
        taken it `loop_cap` times falls through, all its lanes; taking it restarts the loops inside."""
        st, target, nxt, cap = b.stack, ins.target, ins.pc + 1, self.loop_cap[ins.target]
        count, headers = b.loop_count, self.loop_headers
        k = headers.index(target)
        inner = np.array([j for j, h in enumerate(headers) if target < h <= ins.pc], dtype=np.int64)
        trips = self.loop_trips

        def took(g):
            if g.size:
                count[g, k] += 1
                if inner.size:
                    count[np.ix_(g, inner)] = 0
                trips[target] = max(trips[target], int(count[g, k].max()))

        if ins.guard < 0:
            def run(G, lanes):
                go = count[G, k] < cap
                st.pc[G] = np.where(go, target, nxt)
                took(G[go])
            return run
        pred = b.R[ins.guard].reshape(b.W, b.ws)
        neg = ins.guard_negate
        reconv = ins.reconv

        def run(G, lanes):
            act = st.active[G]
            taken = act & (pred[G] != neg)
            capped = count[G, k] >= cap
            taken[capped] = False
            n_taken = taken.sum(1)
            self._resolve(b, G, taken, n_taken, (n_taken == act.sum(1)) & ~capped, target, nxt, reconv)
            took(G[n_taken > 0])

        return run

    def _exit(self, ins: Instruction, b: _Batch) -> Callable:
        st = b.stack
        pred = b.R[ins.guard].reshape(b.W, b.ws) if ins.guard >= 0 else None
        neg, nxt = ins.guard_negate, ins.pc + 1

        def run(G, lanes):
            act = st.active[G]
            leaving = act if pred is None else act & (pred[G] != neg)
            b.live[G] &= ~leaving
            st.active[G] = act & ~leaving
            if pred is not None:
                st.pc[G] = nxt
            emptied = ~st.active[G].any(1)
            b.state[G[emptied & ~st.diverged[G]]] = DONE  # a warp that was not diverged is finished
            below = leaving.any(1) & st.diverged[G]
            if below.any():
                st.remove_lanes_below(G[below], leaving[below])
                ws = G[below & emptied]
                b.state[ws[~st.pop(ws)]] = DONE
            b.full = False

        return run

    def _barrier(self, ins: Instruction, b: _Batch) -> Callable:
        st, nxt, wpb = b.stack, ins.pc + 1, b.wpb
        stats = self.stats

        def run(G, lanes):
            act = st.active[G]
            if ins.guard >= 0:  # lanes whose guard is false do not arrive
                act = act & (b.R[ins.guard].reshape(b.W, b.ws)[G] != ins.guard_negate)
            partial = (act != b.live[G]).any(1)
            if partial.any():
                i = int(np.argmax(partial))
                w = int(G[i])
                arrived, live = int(act[i].sum()), int(b.live[w].sum())
                why = "a guard false on some lanes" if ins.guard >= 0 else "divergent code"
                lane = int(np.argmax(act[i])) if arrived else int(np.argmax(b.live[w]))
                self.fault(b, ins, w * b.ws + lane,
                           f"deadlock: bar.sync reached by {arrived} of {live} threads of a warp (barrier in "
                           f"{why})", cls=DeadlockError)
            b.state[G] = WAIT
            b.bar_pc[G] = ins.pc
            stats.barriers += G.size
            # blocks whose warps have all arrived (or finished) go on past the barrier together
            blocks = G // wpb  # G is sorted, so a block's warps are adjacent
            blocks = blocks[np.r_[True, blocks[1:] != blocks[:-1]]]
            blocks = blocks[(b.state.reshape(b.nblocks, wpb)[blocks] != RUN).all(1)]
            if blocks.size:
                ws = blocks[:, None] * wpb + np.arange(wpb)  # [blocks, wpb] warp indices
                waiting = b.state[ws] == WAIT
                # a block with a warp at another barrier, or with exited threads, is left for _deadlock
                # to diagnose once nothing can run
                stuck = ((b.bar_pc[ws] != ins.pc) & waiting).any(1)
                stuck |= (b.exists[ws] & ~b.live[ws]).reshape(blocks.size, -1).any(1)
                go = ws[~stuck][waiting[~stuck]]
                b.state[go] = RUN
                b.stack.pc[go] = nxt

        return run

    # ---- warp-level -----------------------------------------------------------------------------
    def _shfl(self, ins: Instruction, b: _Batch) -> Callable:
        """Shuffles span the warp: its sm.warp_size lanes (a source lane past the last one, or inactive,
        gives the lane's own value)."""
        st, WS, lane_ids = b.stack, b.ws, b.lane_ids
        mode = next(q for q in ins.quals if q in ("up", "down", "bfly", "idx"))
        src_reader = self._reader(ins.srcs[1], b)
        dt = TYPES[ins.dsts[0].type].dtype
        a_arr = b.R[ins.srcs[0].reg]
        a_arr = a_arr.view(dt).reshape(b.W, WS) if ins.srcs[0].kind == "reg" else None
        a_read = self._reader(ins.srcs[0], b)
        write = self._writer(ins.dsts[0], b, dt)
        write_p = self._writer(ins.dsts[1], b, np.dtype(bool)) if len(ins.dsts) > 1 else None
        c_reader = self._reader(ins.srcs[2], b) if len(ins.srcs) > 2 else None

        def body(G, lanes):
            if a_arr is not None:
                A = a_arr[G]
            else:
                A = np.broadcast_to(a_read(slice(None)), (b.W * WS,)).reshape(b.W, WS)[G]
            idx = (G[:, None] * WS + lane_ids).ravel()
            k = np.asarray(src_reader(idx)).astype(np.int64)
            k = np.broadcast_to(k, idx.shape).reshape(G.size, WS)
            if c_reader is None:
                src = {"up": lane_ids - k, "down": lane_ids + k, "bfly": lane_ids ^ k, "idx": k}[mode]
                inside = (src >= 0) & (src < WS)
            else:  # PTX shfl.sync: the clamp c bounds the source lane within a segment of the warp
                c = np.broadcast_to(np.asarray(c_reader(idx)).astype(np.int64), idx.shape).reshape(G.size, WS)
                seg, clamp = (c >> 8) & 0x1F, c & 0x1F
                max_lane = (lane_ids & seg) | (clamp & ~seg)
                if WS > 32:  # c = 0x1f, one segment of 32 lanes, means the whole warp of a wider one
                    max_lane = np.where((seg == 0) & (clamp == 31), WS - 1, max_lane)
                src = {"up": lane_ids - k, "down": lane_ids + k, "bfly": lane_ids ^ k,
                       "idx": (lane_ids & seg) | (k & ~seg)}[mode]
                inside = (src >= max_lane) if mode == "up" else (src <= max_lane)
                inside &= (src >= 0) & (src < WS)
            srcc = np.clip(src, 0, WS - 1)
            rows = np.arange(G.size)[:, None]
            valid = inside & st.active[G][rows, srcc]
            out = np.where(valid, A[rows, srcc], A).ravel()
            write(lanes, _select(out, G, lanes, WS))
            if write_p is not None:
                write_p(lanes, _select(inside.ravel(), G, lanes, WS))

        return body

    def _vote(self, ins: Instruction, b: _Batch) -> Callable:
        """any/all over the warp's active lanes; ballot: bit i for lane i (a .b32 mask holds lanes 0..31
        of a wider warp, a .b64 one all 64)."""
        WS = b.ws
        mode = next(q for q in ins.quals if q in ("any", "all", "ballot", "uni"))
        src = ins.srcs[0]
        parr = b.R[src.reg].reshape(b.W, WS)
        d = ins.dsts[0]
        dtype = TYPES[d.type].dtype
        write = self._writer(d, b, dtype)
        bits = np.arange(WS, dtype=np.uint64)
        weights = np.where(bits < 8 * dtype.itemsize, np.uint64(1) << bits, np.uint64(0))

        def body(G, lanes):
            on = np.zeros((G.size, WS), dtype=bool)
            local = _positions(G, lanes, WS)
            on.ravel()[local] = True
            p = parr[G] != src.negate
            if mode == "any":
                res = (p & on).any(1)
            elif mode == "all":
                res = (p | ~on).all(1)
            elif mode == "uni":  # every active lane has the same p
                res = (p | ~on).all(1) | (~p | ~on).all(1)
            else:
                res = ((p & on) * weights).sum(1, dtype=np.uint64).astype(dtype)
            write(lanes, np.repeat(res, WS)[local])

        return body

    def _mov_halves(self, ins: Instruction, b: _Batch) -> Callable:
        """`mov.b32 d, {lo, hi}` / `mov.b32 {lo, hi}, a` (and .b64 with 32-bit halves): the lower-indexed
        half in the low bits."""
        bits = TYPES[ins.types[0]].bits
        whole, half = np.dtype(f"u{bits // 8}"), np.dtype(f"u{bits // 16}")
        shift, mask = whole.type(bits // 2), whole.type((1 << (bits // 2)) - 1)
        if len(ins.srcs) == 2:
            lo, hi = (b.R[o.reg].view(half) for o in ins.srcs)
            d = b.R[ins.dsts[0].reg].view(whole)

            def body(G, lanes):
                d[lanes] = lo[lanes].astype(whole) | (hi[lanes].astype(whole) << shift)
        else:
            a = b.R[ins.srcs[0].reg].view(whole)
            lo, hi = (b.R[o.reg].view(half) for o in ins.dsts)

            def body(G, lanes):
                v = a[lanes]
                lo[lanes], hi[lanes] = (v & mask).astype(half), (v >> shift).astype(half)

        return body

    # ---- tensor cores ---------------------------------------------------------------------------
    def _whole_warps(self, ins: Instruction, b: _Batch, G: np.ndarray, lanes) -> np.ndarray:
        """(len(G), 32) lane indices of warps G, which must execute the instruction on every lane
        (`.sync.aligned`: the whole warp, converged)."""
        if b.ws != tensor.LANES:
            self.fault(b, ins, int(G[0]) * b.ws, f"{ins.opcode} needs 32-lane warps (sm.warp_size is {b.ws})")
        if not isinstance(lanes, slice) and lanes.size != G.size * b.ws:
            on = np.zeros(G.size * b.ws, bool)
            on[_positions(G, lanes, b.ws)] = True
            i = int(np.flatnonzero(~on)[0])
            self.fault(b, ins, int(G[i // b.ws]) * b.ws + i % b.ws,
                       f"{ins.opcode}.sync.aligned executed by a partial warp (every lane must execute it)")
        return G[:, None] * b.ws + b.lane_ids

    def _mma(self, ins: Instruction, b: _Batch) -> Callable:
        shape = next(q for q in ins.quals if q in MMA_DIMS)
        at, bt = ins.types[1], ins.types[2]
        acc = np.dtype(np.int32) if ins.types[0] == "s32" else np.dtype(np.float32)
        a_regs = [b.R[o.reg].view(np.uint32) for o in ins.srcs[:4]]
        b_regs = [b.R[o.reg].view(np.uint32) for o in ins.srcs[4:6]]
        c_regs = [b.R[o.reg].view(acc) for o in ins.srcs[6:]]
        d_regs = [b.R[o.reg].view(acc) for o in ins.dsts]
        sat = "satfinite" in ins.quals

        def body(G, lanes):
            idx = self._whole_warps(ins, b, G, lanes)
            d = tensor.mma(shape, at, bt, np.stack([r[idx] for r in a_regs], -1),
                           np.stack([r[idx] for r in b_regs], -1), np.stack([r[idx] for r in c_regs], -1), sat)
            for k, r in enumerate(d_regs):
                r[idx] = d[..., k]

        return body

    def _ldmatrix(self, ins: Instruction, b: _Batch) -> Callable:
        """Lanes 8i..8i+7 address the rows of matrix i (16 bytes each); the other lanes' addresses are
        not read (nor recorded: the timing model sees the rows actually loaded)."""
        count = len(ins.dsts)
        trans = "trans" in ins.quals
        addr_op = ins.srcs[0]
        base = b.R[addr_op.reg] if addr_op.reg >= 0 else None
        offset = np.int64(addr_op.value)
        d_regs = [b.R[o.reg].view(np.uint32) for o in ins.dsts]
        size, rows = b.smem_size, 8 * count
        stats, rec = self.stats, b.rec

        def body(G, lanes):
            idx = self._whole_warps(ins, b, G, lanes)
            a = (base[idx].astype(np.int64) if base is not None else np.zeros(idx.shape, np.int64)) + offset
            used = a[:, :rows]
            bad = (used < 0) | (used > size - 16) | (used % 16 != 0)
            if bad.any():
                i = np.argwhere(bad)[0]
                v = int(used[tuple(i)])
                what = "misaligned" if 0 <= v <= size - 16 else "out-of-bounds"
                self.fault(b, ins, int(idx[i[0], i[1]]), f"{what} 16-byte ldmatrix row (the block has {size} bytes "
                           "of shared memory)", v)
            if rec is not None:
                rec.memory(np.where(b.lane_ids < rows, a, -1).ravel())
            start = (used + b.lane_smem[idx[:, :rows]])[..., None] + np.arange(16)
            row_bytes = b.smem[start]  # (warps, rows, 16) bytes
            out = tensor.ldmatrix(row_bytes.view(np.uint16), count, trans)
            for k, r in enumerate(d_regs):
                r[idx] = out[..., k]
            stats.count_bytes("shared", read=G.size * rows * 16)

        return body

    # ---- asynchronous copies ---------------------------------------------------------------------
    def _cp_async(self, ins: Instruction, b: _Batch) -> Callable:
        """cp.async: the source bytes are read when the copy issues and land in shared memory when a
        wait_group (or wait_all) of the issuing warp covers their group; until then the destination
        holds its old bytes. Only the global source addresses are recorded (the LD/ST path's request)."""
        kind = ins.quals[1]
        if kind == "commit_group":
            def body(G, lanes):
                b.cp_groups[G] += 1
            return body
        if kind in ("wait_group", "wait_all"):
            keep = int(ins.srcs[0].value) if kind == "wait_group" else 0

            def body(G, lanes):
                if kind == "wait_all":
                    b.cp_groups[G] += 1
                limit = np.full(b.W, -1, np.int64)  # per warp: groups below this one are complete
                limit[G] = b.cp_groups[G] - keep
                rest = []
                for warp, group, dst, data in b.cp_pending:
                    done = group < limit[warp]
                    if done.any():
                        b.smem[dst[done]] = data[done]
                    if not done.all():
                        rest.append((warp[~done], group[~done], dst[~done], data[~done]))
                b.cp_pending = rest
            return body
        size = int(ins.srcs[1].value)
        dst_op, src_op = ins.dsts[0], ins.srcs[0]
        mem, rec = self.memory, b.rec
        stats = self.stats
        dbase = b.R[dst_op.reg] if dst_op.reg >= 0 else None
        sbase = b.R[src_op.reg]
        doff, soff = np.int64(dst_op.value), np.int64(src_op.value)
        ssize = b.smem_size
        span = np.arange(size)
        # src-size (PTX's optional 4th operand): only that many bytes are read, the rest of the copy is zeros;
        # a lane that reads none (src-size 0, a masked-off load) touches no global memory
        src_size = self._reader(ins.srcs[2], b) if len(ins.srcs) > 2 else None

        def body(G, lanes):
            n = _count(lanes, b)
            src = sbase[lanes].astype(np.int64) + soff
            dst = (dbase[lanes].astype(np.int64) if dbase is not None else np.zeros(n, np.int64)) + doff
            reads = np.ones(n, bool)
            if src_size is not None:
                nread = np.broadcast_to(np.asarray(src_size(lanes), np.int64), (n,))
                if (nread > size).any():
                    i = int(np.flatnonzero(nread > size)[0])
                    self.fault(b, ins, _lane_at(lanes, i), f"cp.async src-size above its {size}-byte copy",
                               int(nread[i]))
                reads = nread > 0
            if rec is not None:
                rec.memory(np.where(reads, src, -1) if src_size is not None else src)
            for what, a, ok in (("global", src[reads], None), ("shared", dst, ssize)):
                bad = a % size != 0
                if ok is not None:
                    bad |= (a < 0) | (a > ok - size)
                elif mem.offsets(a, size) is None:
                    bad |= ~mem.valid(a, size)
                if bad.any():
                    i = int(np.flatnonzero(bad)[0])
                    why = "misaligned" if a[i] % size else "out-of-bounds"
                    lane = int(np.flatnonzero(reads)[i]) if what == "global" else i
                    self.fault(b, ins, _lane_at(lanes, lane), f"{why} {size}-byte cp.async {what} address", int(a[i]))
            if src_size is None:
                data = mem.buffer[mem.offsets(src, size)[:, None] + span]
            else:
                data = np.zeros((n, size), mem.buffer.dtype)
                if reads.any():
                    data[reads] = mem.buffer[mem.offsets(src[reads], size)[:, None] + span]
                data[span[None, :] >= nread[:, None]] = 0
            lane_ids = np.arange(b.W * b.ws)[lanes] if not isinstance(lanes, slice) else np.arange(n)
            warp = lane_ids // b.ws
            smem_at = dst + b.lane_smem[lanes]
            b.cp_pending.append((warp, b.cp_groups[warp], smem_at[:, None] + span, data))
            stats.count_bytes("global", read=n * size if src_size is None else int(np.minimum(nread, size).sum()))
            stats.count_bytes("shared", written=n * size)

        return body

    # ---- memory -----------------------------------------------------------------------------------
    def _memory(self, ins: Instruction, b: _Batch) -> Callable:
        op, space = ins.opcode, ins.space
        t = TYPES[ins.types[0]]
        vec = ins.vector  # .v2/.v4: consecutive elements, one access of vec * t.bytes per lane
        width = t.bytes * vec
        addr_op = ins.srcs[0] if op in ("ld", "atom") else ins.dsts[0]
        stats = self.stats
        if space == "param":
            vals = np.frombuffer(self.params, dtype=t.dtype, count=vec, offset=addr_op.value)
            writes = [(self._writer(d, b, t.dtype), vals[k]) for k, d in enumerate(ins.dsts)]

            def body(G, lanes):
                for write, v in writes:
                    write(lanes, v)
            return body
        base = b.R[addr_op.reg] if addr_op.reg >= 0 else None
        offset = np.int64(addr_op.value)
        rec = b.rec
        pow2 = width & (width - 1) == 0
        shift = t.bytes.bit_length() - 1  # byte offset -> index of the (first) element

        def lane_addresses(lanes) -> np.ndarray:
            """Per-lane byte addresses of the executing lanes (recorded for the timing model)."""
            a = base[lanes].astype(np.int64) + offset if base is not None else np.full(_count(lanes, b), offset)
            if rec is not None:
                rec.memory(a)
            return a

        if space == "global":
            mem = self.memory
            buf = mem.buffer
            view = buf.view(t.dtype) if buf.size % t.bytes == 0 else None

            def addresses(lanes):
                a = lane_addresses(lanes)
                if width > 1:
                    mis = (a & (width - 1)) if pow2 else a % width
                    if mis.any():
                        bad = int(np.flatnonzero(mis)[0])
                        self.fault(b, ins, _lane_at(lanes, bad), f"misaligned {width}-byte global access",
                                   int(a[bad]))
                off = mem.offsets(a, width)
                if off is None:
                    bad = int(np.flatnonzero(~mem.valid(a, width))[0])
                    self.fault(b, ins, _lane_at(lanes, bad), f"out-of-bounds {width}-byte global access "
                               "(outside every allocation)", int(a[bad]))
                return off >> shift
        else:
            view = b.smem.view(t.dtype)
            size = b.smem_size

            def addresses(lanes):
                a = lane_addresses(lanes)
                # (as unsigned, a negative address is huge: one comparison checks both ends)
                if size >= width:
                    bad = a.view(np.uint64) > np.uint64(size - width)
                else:
                    bad = np.ones(a.shape, dtype=bool)
                if width > 1:
                    bad |= ((a & (width - 1)) if pow2 else a % width) != 0
                if bad.any():
                    i = int(np.flatnonzero(bad)[0])
                    what = "misaligned" if 0 <= a[i] and a[i] + width <= size else "out-of-bounds"
                    self.fault(b, ins, _lane_at(lanes, i), f"{what} {width}-byte shared access (the block has "
                               f"{size} bytes of shared memory)", int(a[i]))
                a = a + b.lane_smem[lanes]  # (the block's region of the batch's shared memory)
                return a >> shift

        if op == "ld" and vec > 1:
            writes = [self._writer(d, b, t.dtype) for d in ins.dsts]

            def body(G, lanes):
                idx = addresses(lanes)
                for k, write in enumerate(writes):
                    write(lanes, view[idx + k])
                stats.count_bytes(space, read=idx.size * width)
            return body
        if op == "ld":
            write = self._writer(ins.dsts[0], b, t.dtype)

            def body(G, lanes):
                idx = addresses(lanes)
                write(lanes, view[idx])
                stats.count_bytes(space, read=idx.size * width)
            return body
        if op == "st" and vec > 1:
            values = [self._reader(s, b) for s in ins.srcs]

            def body(G, lanes):
                idx = addresses(lanes)
                for k, value in enumerate(values):
                    view[idx + k] = value(lanes)
                stats.count_bytes(space, written=idx.size * width)
            return body
        value = self._reader(ins.srcs[0] if op in ("st", "red") else ins.srcs[1], b)
        if op == "st":
            def body(G, lanes):
                idx = addresses(lanes)
                view[idx] = value(lanes)
                stats.count_bytes(space, written=idx.size * width)
            return body
        aop = next(q for q in ins.quals if q in atomics.OPS)
        extra = self._reader(ins.srcs[2], b) if aop == "cas" else None
        write = self._writer(ins.dsts[0], b, t.dtype) if op == "atom" else None
        aview = view.view(t.dtype)

        def body(G, lanes):
            idx = addresses(lanes)
            n = idx.size
            vals = np.broadcast_to(np.asarray(value(lanes), dtype=t.dtype), (n,))
            c = np.broadcast_to(np.asarray(extra(lanes), dtype=t.dtype), (n,)) if extra else None
            old = atomics.apply(aview, idx, aop, vals, c)
            if write is not None:
                write(lanes, old)
            stats.atomics += n
        return body


def _runaway_reason(limit: int) -> str:
    return (f"step limit exceeded: a warp issued more than {limit:,} instructions (max_steps_per_warp, the "
            "runaway-loop guard: a loop that never ends?); if the kernel is meant to run longer, raise it: gpusim "
            "run --max-steps N, or max_steps_per_warp=N")


def _count(lanes, b: _Batch) -> int:
    return b.W * b.ws if isinstance(lanes, slice) else lanes.size


def _lane_at(lanes, i: int) -> int:
    return i if isinstance(lanes, slice) else int(lanes[i])


def _positions(G: np.ndarray, lanes, ws: int) -> np.ndarray:
    """Positions of `lanes` within the [len(G), ws] block of the warps in G (ws: the warp size)."""
    if isinstance(lanes, slice):
        return np.arange(G.size * ws)
    row = np.searchsorted(G, lanes // ws)
    return row * ws + lanes % ws


def _select(out: np.ndarray, G: np.ndarray, lanes, ws: int) -> np.ndarray:
    return out if isinstance(lanes, slice) else out[_positions(G, lanes, ws)]


def execute(program: Program, launch: Launch, params: dict, memory: GlobalMemory, *, cfg=None,
            max_steps_per_warp: int | None = None, batch_lanes: int | None = None) -> ExecResult:
    """Run `program` over `launch` with `params` (device addresses for pointers, numbers for scalars)
    against `memory`, which it updates. Returns the execution statistics."""
    ex = Executor(program, launch, params, memory, cfg=cfg, max_steps_per_warp=max_steps_per_warp,
                  batch_lanes=batch_lanes)
    return ExecResult(program, launch, ex.run())


def block_streams(program: Program, launch: Launch, params: dict, memory: GlobalMemory, *, cfg=None,
                  max_steps_per_warp: int | None = None, batch_lanes: int | None = None
                  ) -> Iterator[BlockStream]:
    """Execute and yield, block by block, the stream of warp instructions each warp issued (pc,
    active mask, per-lane addresses of memory instructions): the timing model's input. Only one
    batch of blocks is held in memory at a time."""
    ex = Executor(program, launch, params, memory, cfg=cfg, max_steps_per_warp=max_steps_per_warp,
                  record=True, batch_lanes=batch_lanes)
    yield from ex.block_streams()


__all__ = ["ExecResult", "Executor", "block_streams", "execute"]
