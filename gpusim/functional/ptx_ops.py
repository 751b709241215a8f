"""What gpusim's PTX-shaped instructions (.sasm and nvcc's PTX) compute: each instruction of a batch turned
into a closure over the batch's registers and memory (decode once, run many), for the warp scheduler
(`warps.WarpScheduler`) to run."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpusim.functional import atomics, kernels, tensor
from gpusim.functional.kernels import load_shared_lanes
from gpusim.functional.lanes import _count, _lane_at, _positions, _select
from gpusim.functional.semantics import alu, every_lane_safe
from gpusim.functional.warps import _Batch
from gpusim.isa.opcodes import MMA_DIMS
from gpusim.isa.program import Instruction
from gpusim.isa.types import TYPES


class PtxOps:
    """The PTX decoder, mixed into the Executor (it uses the scheduler's readers, writers, guards, control
    flow and faults)."""

    def _decode_ptx(self, ins: Instruction, b: _Batch) -> Callable:
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
            f = self._alus.get(ins.pc)
            if f is None:
                f = self._alus[ins.pc] = alu(ins)
            readers = [self._reader(s, b) for s in ins.srcs]
            d = ins.dsts[0]
            dtype = TYPES[d.type].dtype
            write = self._writer(d, b, dtype)
            if ins.guard >= 0 and every_lane_safe(ins):
                full, write_where = slice(None), write.where

                def every_lane(keep):
                    write_where(keep, f(*(r(full) for r in readers)))
            else:
                every_lane = None
            into = getattr(f, "into", None)
            dst = write.full if into is not None and write.full is not None and write.full.dtype == into else None
            if dst is not None and len(readers) == 2:  # (every lane: computed straight into the register)
                r0, r1 = readers

                def body(G, lanes):
                    if lanes.__class__ is slice:
                        f(r0(lanes), r1(lanes), out=dst)
                    else:
                        write(lanes, f(r0(lanes), r1(lanes)))
            elif dst is not None:
                def body(G, lanes):
                    if lanes.__class__ is slice:
                        f(*(r(lanes) for r in readers), out=dst)
                    else:
                        write(lanes, f(*(r(lanes) for r in readers)))
            elif len(readers) == 1:
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
            body.every_lane = every_lane
        st = b.stack
        nxt = ins.pc + 1
        guarded = self._guarded(ins, b, body)

        def run(G, lanes):
            guarded(G, lanes)
            if isinstance(lanes, slice):  # (every warp of the batch)
                st.pc.fill(nxt)
            else:
                st.pc[G] = nxt

        run.straight = True  # (it only moves its warps on: WarpScheduler._steps)
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
            if lanes.__class__ is slice and a_arr is not None and uniform(lanes):
                return
            if a_arr is not None:
                A = a_arr[G]
            else:
                A = np.broadcast_to(a_read(slice(None)), (b.W * WS,)).reshape(b.W, WS)[G]
            idx = (G[:, None] * WS + lane_ids).ravel()
            k = np.broadcast_to(np.asarray(src_reader(idx)).astype(np.int64), idx.shape).reshape(G.size, WS)
            c = None
            if c_reader is not None:
                c = np.broadcast_to(np.asarray(c_reader(idx)).astype(np.int64), idx.shape).reshape(G.size, WS)
            src, inside = _shfl_source(mode, lane_ids, k, c, WS)
            srcc = np.clip(src, 0, WS - 1)
            rows = np.arange(G.size)[:, None]
            valid = inside & st.active[G][rows, srcc]
            out = np.where(valid, A[rows, srcc], A).ravel()
            write(lanes, _select(out, G, lanes, WS))
            if write_p is not None:
                write_p(lanes, _select(inside.ravel(), G, lanes, WS))

        def uniform(lanes) -> bool:
            """Every lane of every warp (all active), the shift and clamp the same on every lane (an immediate,
            or a register that holds one value): the same source lane at each position of every warp, so the
            shuffle is one gather of columns. False where they differ (the general path then)."""
            k, c = (np.asarray(r(lanes)) if r is not None else None for r in (src_reader, c_reader))
            if any(v is not None and v.ndim and not (v == v.flat[0]).all() for v in (k, c)):
                return False
            k, c = (np.int64(v.flat[0]) if v is not None else None for v in (k, c))  # (as the .astype(int64) below)
            src, inside = (np.broadcast_to(v, lane_ids.shape) for v in _shfl_source(mode, lane_ids, k, c, WS))
            write(lanes, np.where(inside, a_arr[:, np.clip(src, 0, WS - 1)], a_arr).ravel())
            if write_p is not None:
                write_p(lanes, np.broadcast_to(inside, a_arr.shape).ravel())
            return True

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
    @staticmethod
    def _address_register(addr_op, b: _Batch) -> tuple:
        """An access at `addr_op`: its address register's lanes (None for an immediate address; a 64-bit
        integer register as int64, its bits as the widening cast reads them), its offset, and where the
        recorder takes a step's addresses when every lane executes (`memory_into`; None: no recorder, or an
        address that is not an integer)."""
        base = b.R[addr_op.reg] if addr_op.reg >= 0 else None
        if base is not None and base.dtype.kind in "iu" and base.dtype.itemsize == 8:
            base = base.view(np.int64)
        into = getattr(b.rec, "memory_into", None) if base is not None and base.dtype.kind in "iu" else None
        return base, np.int64(addr_op.value), into

    @staticmethod
    def _lane_addresses(addr_op, b: _Batch) -> Callable:
        """lanes -> per-lane byte addresses of the executing lanes of an access at `addr_op`, recorded for the
        timing model (when every lane executes, the array returned is the recorder's own row: read, never
        written)."""
        base, offset, into = PtxOps._address_register(addr_op, b)
        rec = b.rec
        wide = base is not None and base.dtype == np.int64

        def lane_addresses(lanes) -> np.ndarray:
            if into is not None and lanes.__class__ is slice:  # every lane: straight into the recorder's rows
                a = into(base.size)
                if a is not None:
                    return np.add(base, offset, out=a, dtype=np.int64)
            if base is None:
                a = np.full(_count(lanes, b), offset)
            elif wide and lanes.__class__ is slice:  # (a fresh array: the register's values plus the offset)
                a = np.add(base, offset)
            else:  # (the register's values widened to int64 in a fresh array, the offset added in place)
                a = (base if lanes.__class__ is slice else base.take(lanes)).astype(np.int64, copy=False)
                np.add(a, offset, out=a)
            if rec is not None:
                rec.memory(a)
            return a

        return lane_addresses

    def _shared_load(self, addr_op, b: _Batch, view: np.ndarray, dst, width: int, shift: int,
                     indices: Callable) -> Callable | None:
        """lanes -> whether a shared load's every lane was done in one compiled pass (kernels.load_shared_lanes:
        the addresses into the recorder's rows, checked, and the elements gathered into the destination
        register), which numpy does in five; None where it never can be (no recorder, an address that is
        not a register, a destination of another type than the loaded one, no Numba loaded). A bad address
        goes to `indices` (lanes, addresses -> element indices), whose checks name the lane."""
        if dst is None or b.smem_size < width or not kernels.numba_loaded():
            return None
        if view.dtype.kind not in "iu" and view.dtype not in (np.float32, np.float64):
            return None  # (f16, bf16, booleans: numpy's passes)
        base, offset, into = self._address_register(addr_op, b)
        if into is None:
            return None
        size, lane_smem = b.smem_size, b.lane_smem

        def fast(lanes) -> bool:
            if lanes.__class__ is not slice:
                return False
            row = into(base.size)
            if row is None:
                return False
            if not load_shared_lanes(base, offset, row, lane_smem, shift, size, width, view, dst):
                np.take(view, indices(lanes, row), out=dst, mode="wrap")
            return True

        return fast

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
        lane_addresses = self._lane_addresses(addr_op, b)
        shift = t.bytes.bit_length() - 1  # byte offset -> index of the (first) element

        # (shared: the element indices go to the batch's scratch array, used by one instruction body at a time: a
        # fresh array this large would cost fresh pages each time)
        if space == "global":
            mem = self.memory
            buf = mem.buffer
            view = buf.view(t.dtype) if buf.size % t.bytes == 0 else None

            def addresses(lanes):
                off = self._global_offsets(b, ins, lanes, lane_addresses(lanes), width)
                return np.right_shift(off, shift, out=off)  # (a fresh array: shifted in place)
        else:
            view = b.smem.view(t.dtype)

            def indices(lanes, a):
                off = self._shared_offsets(b, ins, lanes, a, width, out=b.scratch[:a.size])
                return np.right_shift(off, shift, out=off)

            def addresses(lanes):
                return indices(lanes, lane_addresses(lanes))

        if op == "ld" and vec > 1:
            writes = [self._writer(d, b, t.dtype) for d in ins.dsts]

            def body(G, lanes):
                idx = addresses(lanes)
                for k, write in enumerate(writes):
                    if k:
                        np.add(idx, 1, out=idx)  # (the next element)
                    write(lanes, np.take(view, idx))
                stats.count_bytes(space, read=idx.size * width)
            return body
        if op == "ld":
            write = self._writer(ins.dsts[0], b, t.dtype)
            dst = write.full
            fast = self._shared_load(addr_op, b, view, dst, width, shift, indices) if space == "shared" else None

            def body(G, lanes):
                if fast is not None and fast(lanes):
                    stats.count_bytes(space, read=dst.size * width)
                    return
                idx = addresses(lanes)
                if dst is not None and lanes.__class__ is slice:  # (every lane: gathered straight into the
                    np.take(view, idx, out=dst, mode="wrap")     # register; the indices are checked already)
                else:
                    write(lanes, np.take(view, idx))
                stats.count_bytes(space, read=idx.size * width)
            return body
        gmem = self.memory if space == "global" else None

        def keep(idx):  # (global memory shared with a run that must leave it as it was: the bytes kept first)
            if gmem is not None and gmem.journal is not None:
                gmem.before_write(idx << shift, width)

        if op == "st" and vec > 1:
            values = [self._reader(s, b) for s in ins.srcs]

            def body(G, lanes):
                idx = addresses(lanes)
                keep(idx)
                for k, value in enumerate(values):
                    if k:
                        np.add(idx, 1, out=idx)
                    view[idx] = value(lanes)
                stats.count_bytes(space, written=idx.size * width)
            return body
        value = self._reader(ins.srcs[0] if op in ("st", "red") else ins.srcs[1], b)
        if op == "st":
            def body(G, lanes):
                idx = addresses(lanes)
                keep(idx)
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
            keep(idx)
            old = atomics.apply(aview, idx, aop, vals, c, old=write is not None)
            if write is not None:
                write(lanes, old)
            stats.atomics += n
        return body


def _shfl_source(mode: str, lane_ids: np.ndarray, k, c, WS: int) -> tuple[np.ndarray, np.ndarray]:
    """A shuffle's source lane for each lane (`k`: the shift, lane or mask operand; `c`: PTX shfl.sync's
    clamp, None for none), and whether it lies inside the lane's segment of the warp (else the lane keeps its
    own value). `k` and `c` are per lane ([warps, WS]) or one value for every lane."""
    if c is None:
        src = {"up": lane_ids - k, "down": lane_ids + k, "bfly": lane_ids ^ k, "idx": k}[mode]
        return src, (src >= 0) & (src < WS)
    # the clamp c bounds the source lane within a segment of the warp
    seg, clamp = (c >> 8) & 0x1F, c & 0x1F
    max_lane = (lane_ids & seg) | (clamp & ~seg)
    if WS > 32:  # c = 0x1f, one segment of 32 lanes, means the whole warp of a wider one
        max_lane = np.where((seg == 0) & (clamp == 31), WS - 1, max_lane)
    src = {"up": lane_ids - k, "down": lane_ids + k, "bfly": lane_ids ^ k, "idx": (lane_ids & seg) | (k & ~seg)}[mode]
    inside = (src >= max_lane) if mode == "up" else (src <= max_lane)
    inside &= (src >= 0) & (src < WS)
    return src, inside
