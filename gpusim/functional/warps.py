"""The scheduling of warps, common to every ISA the functional executor runs: blocks in batches, each warp
with its pc and SIMT stack, the warps standing at the lowest pc stepping together as one numpy operation over
their active lanes (so a uniform kernel runs each instruction once per batch, not once per warp); control flow
(branches and their divergence, exit, bar.sync), faults, the runaway-loop guard and deadlock diagnosis, and
the operand readers/writers over the registers (one numpy array per register, over the batch's lanes).
Warps are independent except at barriers, shared memory and atomics, so any interleaving that respects
barriers is a valid execution; this one keeps warps converged, which is also what makes it fast.

What each instruction computes is the ISA's: `ptx_ops.PtxOps` (gpusim's PTX-shaped ISA: .sasm and nvcc's
PTX) and `sass_ops.SassOps` (the machine code ptxas makes) turn instructions into the closures this
scheduler runs."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator

import numpy as np

from gpusim.errors import DeadlockError, KernelFault, LaunchError
from gpusim.functional.batch_shape import BatchShape, batch_shape
from gpusim.functional.lanes import _aligned, _count_true, _gather, _guard_lanes, _in_window, _lane_at
from gpusim.functional.launch import Launch, _param_bytes, require_units
from gpusim.functional.memory import GlobalMemory
from gpusim.functional.runaway import StateWatch, trapped_pcs
from gpusim.functional.simt_stack import SimtStack
from gpusim.functional.stats import ExecStats
from gpusim.functional.stream import BatchRecorder, BlockStream, StepChunk, StreamChunk
from gpusim.isa.program import SPECIAL_REGISTERS, Instruction, Operand, Program
from gpusim.isa.types import TYPES

WARP = 32  # the warp size when no config is given; else the config's sm.warp_size
RUN, WAIT, DONE = 0, 1, 2
# The runaway-loop guard (docs/robustness.md). With max_steps_per_warp given, a warp that issues more
# instructions than that faults: a count, not a time, so the same kernel always stops at the same place.
# Without it, a kernel is stopped on evidence that it never ends (gpusim.functional.runaway: a warp in a
# loop with no way out, or a block back in a state it was in), found by the probe below within seconds,
# whatever the grid; this count then only bounds what no evidence settles (a loop whose state keeps
# changing and whose exit is never taken): 2^32, far beyond any real kernel's warp (a correlation
# matrix's 256 x 256 loop: tens of millions).
DEFAULT_MAX_STEPS_PER_WARP = 1 << 32
DEFAULT_BATCH_LANES = 1 << 16
# The runaway-loop probe (WarpScheduler.probe_runaway): a batch that passes this many steps has one of its
# blocks run on alone, on copies, to its end or the step limit. A batch of 2,048 warps stepping
# together reaches the limit slowly (over half a minute when its loop touches memory), and in timing
# mode far more slowly: the timing model simulates each of their instructions first, and one SM that
# runs alone (no global access to wait on) pulls its blocks' batches far ahead of the other warps,
# whose streams wait in memory (minutes and gigabytes for a large grid). One block alone reaches the
# limit in seconds.
PROBE_AT_STEPS = 1 << 10
DEFAULT_CHUNK = 1 << 15  # warp instructions per chunk when the timing model pulls streams
FULL = slice(None)  # the lanes of a step that every lane of every warp of the batch executes


class _Batch:
    """The state of a batch of thread blocks executing together: `nblocks` blocks from position
    `first_block` of the launch order (of `ex.block_ids` when the executor runs chosen blocks)."""

    def __init__(self, ex: WarpScheduler, first_block: int, nblocks: int):
        self.ex, prog, launch = ex, ex.program, ex.launch
        self.first_block, self.nblocks = first_block, nblocks
        WS = self.ws = ex.warp_size
        self.lane_ids = np.arange(WS)
        self.wpb = launch.warps_per_block(WS)
        W = self.W = nblocks * self.wpb
        L = W * WS
        shape = ex.batch_shape(nblocks)
        self.lane_block, self.exists, self.lane_smem = shape.lane_block, shape.exists, shape.lane_smem
        self.full_lanes = shape.full_lanes
        self.all_exist = self.full_lanes == L
        self.live = self.exists.copy()
        self.stack = SimtStack(W, self.exists)
        self.state = np.zeros(W, dtype=np.int8)
        self.bar_pc = np.full(W, -1, dtype=np.int64)
        self.full = self.all_exist  # every warp runs all its lanes
        # registers, then special registers, as one list of lane arrays
        self.R: list[np.ndarray] = [np.zeros(L, dtype=TYPES[r.type].dtype) for r in prog.registers]
        gx, gy, _ = launch.grid
        if ex.block_ids is None:
            gid = first_block + self.lane_block
        else:
            gid = ex.block_ids[first_block: first_block + nblocks][self.lane_block]
        for name in SPECIAL_REGISTERS:
            if name not in ex.used_specials:
                self.R.append(None)
            elif name == "%ctaid.x":
                self.R.append((gid % gx).astype(np.uint32))
            elif name == "%ctaid.y":
                self.R.append(((gid // gx) % gy).astype(np.uint32))
            elif name == "%ctaid.z":
                self.R.append((gid // (gx * gy)).astype(np.uint32))
            else:  # the same in every batch of as many blocks (read-only, shared)
                self.R.append(shape.specials[name])
        self.smem_size = ex.shared_window
        self.smem_stride = shape.smem_stride
        self.smem = np.zeros(nblocks * self.smem_stride, dtype=np.uint8)
        # cp.async: copies issued and not yet waited for, as (warp, group, shared byte indices, bytes) per
        # lane; a warp's copies join its group number `cp_groups[w]` (the groups it has committed so far)
        self.cp_pending: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self.cp_groups = np.zeros(W, dtype=np.int64)
        self.rec = BatchRecorder(W, WS) if ex.record else None
        self.scratch = np.empty(L, dtype=np.int64)  # a memory instruction's element indices (ptx_ops._memory)
        # the lanes a guard keeps in a step of every lane, by (predicate register, negated): kept until an
        # instruction writes that register (WarpScheduler._guarded, _steps)
        self.guard_lanes: dict[tuple[int, bool], list] = {}
        # [lanes, mask]: the lanes of the running step's guard as indices and as a mask over every lane, set
        # where the guard keeps enough lanes that a writer scatters by the mask (WarpScheduler._writer)
        self.lane_mask: list = [None, None]
        self.moved_to = -1  # the pc a control step of every lane moved every warp to (-1: none; _steps)
        if ex.loop_cap is not None:  # iterations of each loop's current instance, per warp
            self.loop_count = np.zeros((W, len(ex.loop_headers)), dtype=np.int64)

    def block_copy(self, k: int, ex: WarpScheduler) -> _Batch:
        """Block k of this batch alone, as a batch of its own run by `ex`, in the state it has here
        (registers, SIMT stacks, barrier and exit state, shared memory), copied."""
        one = _Batch(ex, self.first_block + k, 1)
        w = slice(k * self.wpb, (k + 1) * self.wpb)
        lanes = slice(k * self.wpb * self.ws, (k + 1) * self.wpb * self.ws)
        for mine, here in zip(one.R, self.R, strict=True):
            if here is not None and mine.flags.writeable:  # (a shared special: the same in both already)
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
        self._run_chunk()
        b = self._b
        return b.rec.flush(b.W, b.state == DONE, grouped=False)

    def advance_steps(self) -> StepChunk | None:
        """`advance`, the chunk in issue order (a StepChunk: what the timing model's feeder reads)."""
        if self.finished:
            return None
        self._run_chunk()
        b = self._b
        return b.rec.flush_steps(b.W, b.state == DONE)

    def _run_chunk(self) -> None:
        with np.errstate(all="ignore"):
            try:
                G, steps = next(self._steps)
                if steps >= self._b.ex.probe_after:
                    self._b.ex.probe_runaway(self._b, G, steps)
            except StopIteration:
                self.finished = True


class WarpScheduler:
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
        self.by_evidence = not max_steps_per_warp  # (no limit given: stop on evidence, gpusim.functional.runaway)
        self._trapped: np.ndarray | None = None
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
        self.isa = getattr(program, "isa", "ptx")
        self.used_specials = {o.name for i in program.instructions for o in i.srcs if o.kind == "special"}
        # the bytes of a block's shared window its addresses range over (SASS: the reserved area included)
        self.shared_window = getattr(program, "shared_window", program.shared_bytes)
        if self.isa == "sass":
            self._init_sass()
        lanes_per_block = launch.warps_per_block(self.warp_size) * self.warp_size
        self.blocks_per_batch = max(1, (batch_lanes or DEFAULT_BATCH_LANES) // lanes_per_block)
        self.nregs = len(program.registers)
        self._shapes: dict[int, BatchShape] = {}  # batch_shape(nblocks), made once
        self._alus: dict[int, Callable] = {}  # by pc: what an ALU instruction computes (the same in every batch)
        self.probe_after = PROBE_AT_STEPS  # a batch past this many steps is probed (probe_runaway)

    def batch_shape(self, nblocks: int) -> BatchShape:
        """The BatchShape of a batch of `nblocks` blocks (made the first time, then shared)."""
        shape = self._shapes.get(nblocks)
        if shape is None:
            shape = self._shapes[nblocks] = batch_shape(self.launch, self.warp_size, nblocks, self.used_specials,
                                                        self.shared_window)
        return shape

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
        global_access = [self._global_access(i) for i in prog.instructions]
        ninstr = len(prog.instructions)
        per_block = None  # loop-cap mode: warp instructions of each block of this batch
        if self.loop_cap is not None:
            per_block = self.block_warp_instructions[b.first_block: b.first_block + b.nblocks]
            wpb = b.wpb
        # An instruction that only moves its warps on (`straight`: each decoded closure says so), run by every
        # lane of every warp, leaves them all at the next pc, running every lane (`ahead`): the next step is
        # known without a look at the warps' pcs and states, and none of them reconverges there (a warp whose
        # stack holds only its bottom entry never does); so does a branch taken by all of them or by none, or a
        # barrier they all reach (`moved_to`)
        straight = [getattr(op, "straight", False) for op in ops]
        guards = {i.guard for i in prog.instructions if i.guard >= 0}
        # (a SASS instruction may write predicates its operands do not list: every one forgets the guards' lanes)
        forgets = [self.isa == "sass" or not guards.isdisjoint(i.regs_written()) for i in prog.instructions]
        known = b.guard_lanes
        ahead = -1
        while True:
            if ahead >= 0:
                p = ahead  # (G: every warp, as in the step before)
            else:
                runnable = b.state == RUN
                np.copyto(pcs_buf, st.pc)
                pcs_buf[~runnable] = big
                p = int(pcs_buf.min())
                if p == big:
                    if (b.state == DONE).all():
                        return
                    self._deadlock(b)
                G = np.flatnonzero(pcs_buf == p)
            if p >= ninstr:  # (a listing whose last instruction falls through)
                self.fault(b, prog.instructions[-1], int(G[0]) * b.ws, "ran past the kernel's last instruction")
            ins = prog.instructions[p]
            if b.full and G.size == b.W:
                lanes = FULL
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
                b.rec.step(p, G, mask, lanes is FULL)
            ops[p](G, lanes)
            if forgets[p] and known:
                known.clear()
            steps += 1
            if steps > self.max_steps:
                self._runaway(b, ins)
            ahead = p + 1 if lanes is FULL and straight[p] else -1
            if b.moved_to >= 0:  # (a branch or barrier that moved every warp, all lanes, to one pc)
                ahead, b.moved_to = b.moved_to, -1
            if chunk:
                since += G.size
                if since >= chunk:
                    since = 0
                    ahead = -1  # (a pause: look again after it)
                    yield G, steps
            if ahead >= 0:
                continue
            reconv = st.pc == st.rpc if G.size == b.W else st.pc[G] == st.rpc[G]  # (G: every warp, in order)
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
        state and of global memory (below), without recording: if it passes the limit, the step-limit fault
        is raised now, naming that warp (steps counted as the batch counts them: the batch's so far,
        then the block's); if it ends, the batch goes on and another probe waits until a batch runs
        twice as long. Other faults are left for the batch to meet. No probe under loop_cap (loops are
        cut short). Global memory's copy is copy-on-write: pages kept before the probe's first write there,
        put back when it ends (memory.PageJournal). A block that waits for another block (a cross-block
        spin, racy in any case) may loop in the probe and not in the launch, as in functional mode's batches.

        At default limits (no max_steps_per_warp given) the probe looks for evidence instead of a count
        (gpusim.functional.runaway): first a running warp of the batch in a loop with no way out, then,
        for a quarter of the batch's steps so far, the block run alone coming back to a state it was in;
        either is a fault naming the warp, pc and line. Without evidence the batch goes on."""
        self.probe_after = self.max_steps + 1  # (unless the probe ends below: no other)
        if self.loop_cap is not None or steps >= self.max_steps or (b.state == DONE).all():
            return
        if self.by_evidence:
            self._fault_if_trapped(b, steps)
            self.probe_after = 2 * steps  # (looked at again when the batch has run twice as long)
        probe = copy.copy(self)
        probe.memory = self.memory.journaled()
        try:
            self._probe(b, G, steps, probe)
        finally:
            probe.memory.journal.restore()

    def _probe(self, b: _Batch, G: np.ndarray, steps: int, probe: WarpScheduler) -> None:  # (probe_runaway's run)
        probe.stats = ExecStats(warp_size=self.warp_size)
        probe.record = False
        probe.max_steps = self.max_steps - steps
        run = np.flatnonzero(b.state == RUN)
        k = int((run if run.size else np.flatnonzero(b.state != DONE))[0]) // b.wpb
        one = b.block_copy(k, probe)
        st = one.stack
        g = G[(G >= k * b.wpb) & (G < (k + 1) * b.wpb)] - k * b.wpb
        reconv = st.pc[g] == st.rpc[g]  # what _steps does after the step it paused on
        if reconv.any():
            ws = g[reconv]
            one.state[ws[~st.pop(ws)]] = DONE
        # at default limits the probe looks for a repeated state for a quarter of the batch's steps so far (a
        # kernel of long warps pays about a third more for its probes); with a limit, it runs to it or the end
        watch = StateWatch(one, probe.memory) if self.by_evidence else None
        budget = max(steps // 4, PROBE_AT_STEPS) if self.by_evidence else probe.max_steps + 1
        more, repeats = 0, False
        try:
            with np.errstate(all="ignore"):
                for _ in probe._steps(one, 1):  # (chunk 1: it pauses after every step)
                    more += 1
                    if watch is not None and watch.step():
                        repeats = True
                        break
                    if more >= budget:
                        return  # (no evidence yet: looked at again when the batch has run twice as long)
        except KernelFault as exc:
            if exc.reason == _runaway_reason(probe.max_steps):
                raise KernelFault(_runaway_reason(self.max_steps), exc.kernel, exc.pc, exc.line, exc.source,
                                  exc.block, exc.thread, exc.address, exc.file) from None
            return
        if repeats:
            live = np.flatnonzero((one.state == RUN) & one.stack.active.any(1))
            w = int(live[0]) if live.size else int(np.flatnonzero(one.state != DONE)[0])
            lane = (k * b.wpb + w) * b.ws + int(np.argmax(one.stack.active[w]))
            self.fault(b, self.program.instructions[int(one.stack.pc[w])], lane,
                       f"runaway loop: the block came back to the state it was in {watch.period:,} instructions "
                       f"earlier (every warp's pc, SIMT stack, registers and predicates, shared and global memory) "
                       f"and so repeats them forever; stopped after {steps + more:,} instructions (gpusim stops a "
                       "kernel at default limits on evidence that it never ends; --max-steps N sets a fixed limit "
                       "instead)")
        self.probe_after = 2 * (steps + more)

    def _fault_if_trapped(self, b: _Batch, steps: int) -> None:
        """Evidence that the launch never ends: a running warp whose active lanes stand at a pc from which no
        path leads out of the kernel (gpusim.functional.runaway.trapped_pcs). Faults naming it."""
        if self._trapped is None:
            self._trapped = trapped_pcs(self.program)
        st = b.stack
        pcs = np.clip(st.pc, 0, len(self._trapped) - 1)
        caught = np.flatnonzero((b.state == RUN) & self._trapped[pcs] & st.active.any(1))
        if caught.size:
            w = int(caught[0])
            pc = int(st.pc[w])
            self.fault(b, self.program.instructions[pc], w * b.ws + int(np.argmax(st.active[w])),
                       f"runaway loop: a warp is in a loop it can never leave (no path from pc {pc} leads to an "
                       f"exit); stopped after {steps:,} instructions (gpusim stops a kernel at default limits on "
                       "evidence that it never ends; --max-steps N sets a fixed limit instead)")

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

    # ---- memory addresses ---------------------------------------------------------------------------
    def _global_access(self, ins) -> bool:
        """Does the instruction access global memory (Nsight's requests)?"""
        if self.isa == "sass":
            return ins.space == "global"
        return ((ins.opcode in ("ld", "st", "atom", "red") and ins.space == "global")
                or (ins.opcode == "cp" and bool(set(ins.quals) & {"ca", "cg"})))

    def _global_offsets(self, b: _Batch, ins, lanes, a: np.ndarray, width: int) -> np.ndarray:
        """Byte offsets in global memory's buffer of the executing lanes' `width`-byte accesses at addresses `a`,
        each checked for alignment and against the allocations (a fault names the first bad lane)."""
        mem = self.memory
        if width > 1 and not _aligned(a, width):
            mis = (a & (width - 1)) if width & (width - 1) == 0 else a % width
            if mis.any():
                bad = int(np.flatnonzero(mis)[0])
                self.fault(b, ins, _lane_at(lanes, bad), f"misaligned {width}-byte global access", int(a[bad]))
        off = mem.offsets(a, width)
        if off is None:
            bad = int(np.flatnonzero(~mem.valid(a, width))[0])
            self.fault(b, ins, _lane_at(lanes, bad), f"out-of-bounds {width}-byte global access "
                       "(outside every allocation)", int(a[bad]))
        return off

    def _shared_offsets(self, b: _Batch, ins, lanes, a: np.ndarray, width: int, out: np.ndarray | None = None
                        ) -> np.ndarray:
        """Byte offsets in the batch's shared memory of the executing lanes' `width`-byte accesses at addresses
        `a` of their block's shared window, each checked for alignment and bounds; in `out` when given (int64,
        as many as `a`)."""
        size = b.smem_size
        if size >= width and _in_window(a, size, width):
            smem_at = b.lane_smem[lanes] if lanes.__class__ is slice else b.lane_smem.take(lanes)
            return np.add(a, smem_at, out=out)
        if size >= width:
            bad = a.view(np.uint64) > np.uint64(size - width)
        else:
            bad = np.ones(a.shape, dtype=bool)
        if width > 1:
            bad |= ((a & (width - 1)) if width & (width - 1) == 0 else a % width) != 0
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            what = "misaligned" if 0 <= a[i] and a[i] + width <= size else "out-of-bounds"
            self.fault(b, ins, _lane_at(lanes, i), f"{what} {width}-byte shared access (the block has "
                       f"{size} bytes of shared memory)", int(a[i]))
        return np.add(a, b.lane_smem[lanes], out=out)  # (the block's region of the batch's shared memory)

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
            get = _gather(arr)
            if op.negate:
                return lambda lanes: ~get(lanes)
            return get
        if arr.dtype == t.dtype:
            return _gather(arr)
        if arr.dtype.itemsize == t.dtype.itemsize:
            return _gather(arr.view(t.dtype))
        get, dt = _gather(arr), t.dtype
        return lambda lanes: get(lanes).astype(dt)

    def _writer(self, op: Operand, b: _Batch, value_dtype: np.dtype) -> Callable:
        arr = b.R[op.reg]
        if arr.dtype != value_dtype and arr.dtype.itemsize == value_dtype.itemsize and arr.dtype.kind != "b":
            arr = arr.view(value_dtype)

        mask = b.lane_mask

        def write(lanes, value):
            if lanes is mask[0]:  # (a guard's many lanes: by its mask, a cheaper scatter than by their indices)
                arr[mask[1]] = value
            else:
                arr[lanes] = value

        def write_where(keep, value):  # every lane's value given, kept where `keep` holds
            np.copyto(arr, value, casting="unsafe", where=keep)

        write.where = write_where
        write.full = arr if arr.dtype == value_dtype else None  # (every lane's values may go straight into it)
        return write

    def _guarded(self, ins: Instruction, b: _Batch, body: Callable) -> Callable:
        """Wrap an instruction body so that lanes whose guard predicate is false sit it out."""
        if ins.guard < 0:
            return body
        pred = b.R[ins.guard]
        neg = ins.guard_negate
        stats = self.stats
        known, key, mask = b.guard_lanes, (ins.guard, neg), b.lane_mask
        every_lane = getattr(body, "every_lane", None)

        def run(G, lanes):
            if isinstance(lanes, slice):
                hit = known.get(key)
                if hit is None:  # (kept until an instruction writes the predicate: WarpScheduler._steps)
                    hit = known[key] = _guard_lanes(pred, neg)
                keep, on, n = hit
                if keep is None:  # every lane's guard holds: all lanes, as they are
                    body(G, lanes)
                    return
                if every_lane is not None and 8 * n >= pred.size:  # (many lanes kept: no gather and scatter)
                    stats.predicated_off += b.full_lanes - n
                    every_lane(keep)
                    return
                if on is None:
                    on = hit[1] = np.flatnonzero(keep)
                    on.flags.writeable = False
                if 8 * n >= pred.size:
                    mask[0], mask[1] = on, keep
            else:
                keep = pred[lanes] != neg
                if keep.all():
                    body(G, lanes)
                    return
                on = lanes[keep]
            stats.predicated_off += (b.full_lanes if isinstance(lanes, slice) else lanes.size) - on.size
            if b.rec is not None and b.rec.positions is not None:
                b.rec.positions = b.rec.positions[keep]
            elif b.rec is not None:
                b.rec.positions = on
            body(G, on)

        return run

    # ---- control --------------------------------------------------------------------------------
    def _branch(self, ins: Instruction, b: _Batch) -> Callable:
        st, target, nxt = b.stack, ins.target, ins.pc + 1
        if self.loop_cap is not None and target <= ins.pc:
            return self._capped_branch(ins, b)
        if ins.guard < 0 or target == nxt:
            to = target if ins.guard < 0 else nxt

            def run(G, lanes):
                st.pc[G] = to
                if lanes.__class__ is slice:
                    b.moved_to = to
            return run
        flat = b.R[ins.guard]
        pred = flat.reshape(b.W, b.ws)
        neg = ins.guard_negate
        reconv = ins.reconv
        stats = self.stats

        def run(G, lanes):
            if isinstance(lanes, slice):  # every lane of every warp: taken by all of them or by none, at once
                n = _count_true(flat, neg)
                if n == 0 or n == flat.size:
                    st.pc[G] = b.moved_to = target if n else nxt
                    stats.branches += G.size
                    return
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
            if b.full:  # (every lane still runs where none left)
                b.full = not leaving.any()

        return run

    def _barrier(self, ins: Instruction, b: _Batch) -> Callable:
        st, nxt, wpb = b.stack, ins.pc + 1, b.wpb
        stats = self.stats

        guard = b.R[ins.guard] if ins.guard >= 0 else None

        def run(G, lanes):
            if isinstance(lanes, slice) and (guard is None or _count_true(guard, ins.guard_negate) == guard.size):
                # every lane of every warp arrives (and every thread of each block runs): all go on at once
                b.bar_pc[G] = ins.pc
                stats.barriers += G.size
                st.pc[G] = b.moved_to = nxt
                return
            act = st.active[G]
            if guard is not None:  # lanes whose guard is false do not arrive
                act = act & (guard.reshape(b.W, b.ws)[G] != ins.guard_negate)
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


def _runaway_reason(limit: int) -> str:
    return (f"step limit exceeded: a warp issued more than {limit:,} instructions (max_steps_per_warp, the "
            "runaway-loop guard: a loop that never ends?); if the kernel is meant to run longer, raise it: gpusim "
            "run --max-steps N, or max_steps_per_warp=N")
