"""What SASS's warp-level, memory and tensor-core instructions compute (the closures)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpusim.functional import atomics, tensor
from gpusim.functional.lanes import _count, _lane_at, _positions, _select
from gpusim.functional.sass_operands import F32, F64, U32, U64, SassOperands, Unsupported, _mod, _width


class SassMemory(SassOperands):
    """Shuffles and votes, loads, stores, atomics, asynchronous copies, ldmatrix, mma."""

    # ---- warp-level --------------------------------------------------------------------------------------------
    def _s_shfl(self, ins, b):
        d, s = self._ops(ins)
        st, WS, lane_ids = b.stack, b.ws, b.lane_ids
        mode = ins.mods[0]
        src = self._reg(b, s[0])
        rk, rc = self._bits(s[1], b, ins), self._bits(s[2], b, ins)
        w, wp = self._w32(d[1], b), self._wp(d[0], b)
        A_all = src.reshape(b.W, WS) if src is not None else None

        def body(G, lanes):
            A = A_all[G] if A_all is not None else np.zeros((G.size, WS), U32)
            idx = (G[:, None] * WS + lane_ids).ravel()
            k = np.broadcast_to(np.asarray(rk(idx)).astype(np.int64), idx.shape).reshape(G.size, WS)
            c = np.broadcast_to(np.asarray(rc(idx)).astype(np.int64), idx.shape).reshape(G.size, WS)
            seg, clamp = (c >> 8) & 0x1F, c & 0x1F
            max_lane = (lane_ids & seg) | (clamp & ~seg)
            srcl = {"UP": lane_ids - k, "DOWN": lane_ids + k, "BFLY": lane_ids ^ k,
                    "IDX": (lane_ids & seg) | (k & ~seg)}[mode]
            inside = (srcl >= max_lane) if mode == "UP" else (srcl <= max_lane)
            inside &= (srcl >= 0) & (srcl < WS)
            srcc = np.clip(srcl, 0, WS - 1)
            rows = np.arange(G.size)[:, None]
            valid = inside & st.active[G][rows, srcc]
            out = np.where(valid, A[rows, srcc], A).ravel()
            w(lanes, _select(out, G, lanes, WS))
            wp(lanes, _select(inside.ravel(), G, lanes, WS))
        return body

    def _s_vote(self, ins, b):
        d, s = self._ops(ins)
        WS = b.ws
        mode = ins.mods[0]
        p = self._pred(s[0], b)
        w = self._w32(d[0], b)
        wq = self._wp(d[1], b)
        weights = np.where(np.arange(WS) < 32, U64(1) << np.arange(WS, dtype=U64), U64(0))
        uniform = ins.opcode == "VOTEU"

        def body(G, lanes):
            on = np.zeros((G.size, WS), dtype=bool)
            local = _positions(G, lanes, WS)
            on.ravel()[local] = True
            full = (G[:, None] * WS + b.lane_ids).ravel()
            pv = np.broadcast_to(np.asarray(p(full), bool), full.shape).reshape(G.size, WS)
            ballot = ((pv & on) * weights).sum(1, dtype=U64).astype(U32)
            anyv, allv = (pv & on).any(1), (pv | ~on).all(1)
            q = {"ANY": anyv, "ALL": allv, "EQ": allv | ~anyv}[mode]
            where = full if uniform else lanes
            rows = np.repeat(np.arange(G.size), WS) if uniform else np.repeat(np.arange(G.size), WS)[local]
            w(where, ballot[rows])
            wq(where, q[rows])
        return body

    _s_voteu = _s_vote

    # ---- memory --------------------------------------------------------------------------------------------------
    def _address(self, op, b, ins, wide: bool) -> Callable:
        """lanes -> the byte addresses (int64) of a [R(.64) + UR + offset] operand."""
        base = self._reg(b, type(op)("R", op.index)) if op.index >= 0 else None
        hi = self._reg(b, type(op)("R", op.index + 1)) if base is not None and op.wide == 2 else None
        ub = self._reg(b, type(op)("UR", op.ureg)) if op.ureg >= 0 else None
        off, scale = np.int64(op.value), np.int64(op.scale)

        def addr(lanes):
            n = _count(lanes, b)
            a = np.full(n, off, dtype=np.int64)
            if base is not None:
                r = base[lanes].astype(np.int64)
                if hi is not None:
                    r = r | (hi[lanes].astype(np.int64) << 32)
                a = a + r * scale
            if ub is not None:
                a = a + ub[lanes].astype(np.int64)
            return a
        return addr

    def _access(self, ins, b, space: str):
        """(address function, bytes -> element offsets function) for a memory instruction's [..] operand."""
        mem_op = next((o for o in ins.operands if o.kind == "mem"), None)
        if mem_op is None:
            raise Unsupported("a memory instruction without its [address]")
        addr = self._address(mem_op, b, ins, space == "global")
        return mem_op, addr

    def _space(self, ins) -> str:
        return {"global": "global", "shared": "shared", "local": "local"}[ins.space]

    def _offsets(self, b, ins, lanes, a, width, space):
        if space == "global":
            return self._global_offsets(b, ins, lanes, a, width), self.memory.buffer
        if space == "shared":
            return self._shared_offsets(b, ins, lanes, a, width), b.smem
        return self._local_offsets(b, ins, lanes, a, width), b.local

    def _local_offsets(self, b, ins, lanes, a, width):
        size = self.local_bytes
        if not hasattr(b, "local"):
            b.local = np.zeros(b.W * b.ws * max(size, 16), np.uint8)
        bad = (a < 0) | (a > size - width) | (a % width != 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            self.fault(b, ins, _lane_at(lanes, i), f"bad {width}-byte local access (the frame has {size} bytes)",
                       int(a[i]))
        lane = np.arange(b.W * b.ws)[lanes] if not isinstance(lanes, slice) else np.arange(a.size)
        return lane * max(size, 16) + a

    def _load_words(self, buf, off, width, signed):
        """(n,) byte offsets -> list of uint32 words (sub-word loads extended)."""
        if width >= 4:
            if buf.size % 4 == 0:
                v32 = buf.view(U32)
                i = off >> 2
                return [v32[i + k] for k in range(width // 4)]
            raw = buf[off[:, None] + np.arange(width)]
            return [raw[:, 4 * k:4 * k + 4].copy().view(U32).ravel() for k in range(width // 4)]
        raw = buf[off[:, None] + np.arange(width)].copy()
        dt = {1: (np.uint8, np.int8), 2: (np.uint16, np.int16)}[width][signed]
        v = raw.view(dt).ravel()
        return [v.astype(np.int32).view(U32) if signed else v.astype(U32)]

    def _store_words(self, buf, off, width, words):
        if width >= 4 and buf.size % 4 == 0:
            v32 = buf.view(U32)
            i = off >> 2
            for k, w in enumerate(words):
                v32[i + k] = w
            return
        data = np.stack([np.broadcast_to(np.asarray(w, U32), off.shape) for w in words], -1).view(np.uint8)
        buf[off[:, None] + np.arange(width)] = data.reshape(off.size, -1)[:, :width]

    def _s_ldg(self, ins, b):
        return self._load(ins, b)

    _s_lds = _s_ldl = _s_ld = _s_ldg

    def _s_stg(self, ins, b):
        return self._store(ins, b)

    _s_sts = _s_stl = _s_st = _s_stg

    def _load(self, ins, b):
        space = self._space(ins)
        width = _width(ins.mods)
        signed = bool(set(ins.mods) & {"S8", "S16"})
        d, s = self._ops(ins)
        _, addr = self._access(ins, b, space)
        ws = self._wn(d[0], b, max(1, width // 4))
        rec, stats = b.rec, self.stats

        def body(G, lanes):
            a = addr(lanes)
            if rec is not None and space != "local":
                rec.memory(a)
            off, buf = self._offsets(b, ins, lanes, a, width, space)
            for w, v in zip(ws, self._load_words(buf, off, width, signed), strict=True):
                w(lanes, v)
            if space != "local":
                stats.count_bytes(space, read=off.size * width)
        return body

    def _store(self, ins, b):
        space = self._space(ins)
        width = _width(ins.mods)
        data_op = ins.operands[-1]
        _, addr = self._access(ins, b, space)
        n = max(1, width // 4)
        regs = [self._bits(type(data_op)(data_op.kind, data_op.index + k if data_op.index != 255 else 255), b, ins)
                for k in range(n)] if data_op.kind in ("R", "UR") else [self._bits(data_op, b, ins)]
        rec, stats = b.rec, self.stats
        mask = U32((1 << (8 * width)) - 1) if width < 4 else None

        def body(G, lanes):
            a = addr(lanes)
            if rec is not None and space != "local":
                rec.memory(a)
            off, buf = self._offsets(b, ins, lanes, a, width, space)
            words = [np.asarray(r(lanes), U32) for r in regs]
            if mask is not None:
                words = [words[0] & mask]
            if space == "global":
                self.memory.before_write(off, width)
            self._store_words(buf, off, width, words)
            if space != "local":
                stats.count_bytes(space, written=off.size * width)
        return body

    def _atomic(self, ins, b):
        space = self._space(ins)
        m = set(ins.mods)
        op = _mod(ins.mods, ("ADD", "MIN", "MAX", "INC", "DEC", "AND", "OR", "XOR", "EXCH", "CAS"), None)
        d, s = self._ops(ins)
        popc = "POPC" in m
        if op is None:
            raise Unsupported("atomic operation")
        if m & {"64", "U64", "S64", "F64"}:
            dt = {"S64": np.int64, "F64": F64}.get(_mod(ins.mods, ("S64", "F64"), "U64"), U64)
        else:
            dt = {"S32": np.int32, "F32": F32}.get(_mod(ins.mods, ("S32", "F32"), "U32"), U32)
        width = np.dtype(dt).itemsize
        _, addr = self._access(ins, b, space)
        vals = [o for o in s if o.kind != "mem"]
        if popc and op != "INC":
            raise Unsupported("POPC with an operation other than INC")
        rd = None
        if d and not (d[-1].kind == "R" and d[-1].index == 255):
            if popc:
                raise Unsupported("ATOMS.POPC.INC with a result")
            rd = self._w64(d[-1], b) if width == 8 else self._w32(d[-1], b)
        rv = [self._u64(o, b, ins) if width == 8 else self._bits(o, b, ins) for o in vals]
        aop = op.lower()
        rec, stats = b.rec, self.stats

        def body(G, lanes):
            a = addr(lanes)
            if rec is not None:
                rec.memory(a)
            off, buf = self._offsets(b, ins, lanes, a, width, space)
            n = off.size
            view = buf.view(dt)
            raw = U64 if width == 8 else U32
            if popc:  # POPC.INC: each lane adds one (the hardware adds the popcount of the lanes sharing an address)
                v = np.ones(n, dt)
            else:
                v = np.broadcast_to(np.asarray(rv[0](lanes)).astype(raw).view(dt), (n,))
            c = None
            if aop == "cas":  # (compare value, new value)
                c = np.broadcast_to(np.asarray(rv[1](lanes)).astype(raw).view(dt), (n,))
            if space == "global":
                self.memory.before_write(off, width)
            old = atomics.apply(view, off // width, "add" if popc else aop, v, c, old=rd is not None)
            if rd is not None:
                rd(lanes, np.asarray(old).view(U64 if width == 8 else U32))
            stats.atomics += n
        return body

    _s_atoms = _s_atomg = _s_atom = _s_red = _s_redg = _atomic

    def _s_ldgsts(self, ins, b):
        """cp.async as the PTX executor models it: read at issue, visible in shared memory at the wait."""
        mems = [o for o in ins.operands if o.kind == "mem"]
        if len(mems) != 2:
            raise Unsupported("LDGSTS operands")
        size = _width(ins.mods)
        dst_addr, src_addr = self._address(mems[0], b, ins, False), self._address(mems[1], b, ins, True)
        rec, stats = b.rec, self.stats
        span = np.arange(size)

        def body(G, lanes):
            src = src_addr(lanes)
            dst = dst_addr(lanes)
            if rec is not None:
                rec.memory(src)
            goff = self._global_offsets(b, ins, lanes, src, size)
            soff = self._shared_offsets(b, ins, lanes, dst, size)
            data = self.memory.buffer[goff[:, None] + span]
            lane_ids = np.arange(b.W * b.ws)[lanes] if not isinstance(lanes, slice) else np.arange(src.size)
            warp = lane_ids // b.ws
            b.cp_pending.append((warp, b.cp_groups[warp], soff[:, None] + span, data))
            stats.count_bytes("global", read=src.size * size)
            stats.count_bytes("shared", written=src.size * size)
        return body

    def _s_ldgdepbar(self, ins, b):
        def body(G, lanes):
            b.cp_groups[G] += 1
        return body

    def _s_depbar(self, ins, b):
        ops = ins.operands
        if "LE" not in ins.mods or len(ops) != 2 or ops[0].kind != "SB" or ops[1].kind != "imm":
            raise Unsupported("DEPBAR other than DEPBAR.LE SBk, N")
        keep = int(ops[1].value)

        def body(G, lanes):
            limit = np.full(b.W, -1, np.int64)
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

    # ---- tensor cores ------------------------------------------------------------------------------------------
    def _s_ldsm(self, ins, b):
        m = set(ins.mods)
        count = 4 if "4" in m else 2 if "2" in m else 1
        trans = "MT88" in m
        d, s = self._ops(ins)
        addr = self._address(s[0], b, ins, False)
        d_regs = [self._reg(b, type(d[0])("R", d[0].index + k)) for k in range(count)]
        size, rows = b.smem_size, 8 * count
        rec, stats = b.rec, self.stats

        def body(G, lanes):
            idx = self._whole_warps(ins, b, G, lanes)
            a = addr(idx.ravel()).reshape(idx.shape)
            used = a[:, :rows]
            bad = (used < 0) | (used > size - 16) | (used % 16 != 0)
            if bad.any():
                i = np.argwhere(bad)[0]
                self.fault(b, ins, int(idx[i[0], i[1]]), f"bad 16-byte LDSM row (the block has {size} bytes of shared "
                           "memory)", int(used[tuple(i)]))
            if rec is not None:
                rec.memory(np.where(b.lane_ids < rows, a, -1).ravel())
            start = (used + b.lane_smem[idx[:, :rows]])[..., None] + np.arange(16)
            out = tensor.ldmatrix(b.smem[start].view(np.uint16), count, trans)
            for k, r in enumerate(d_regs):
                r[idx] = out[..., k]
            stats.count_bytes("shared", read=G.size * rows * 16)
        return body

    def _s_hmma(self, ins, b):
        m = ins.mods
        shape = {"16816": "m16n8k16", "1688": "m16n8k8"}.get(m[0] if m else "", None)
        if shape is None or "F32" not in m:
            raise Unsupported("HMMA shape or accumulator")
        at = "bf16" if "BF16" in m else "tf32" if "TF32" in m else "f16"
        return self._mma_body(ins, b, shape, at, np.dtype(F32), 4 if shape == "m16n8k16" else 2, 2 if shape ==
                              "m16n8k16" else 1)

    def _s_imma(self, ins, b):
        m = ins.mods
        if not m or m[0] != "16832":
            raise Unsupported("IMMA shape")
        at = "u8" if "U8" in m else "s8"
        return self._mma_body(ins, b, "m16n8k32", at, np.dtype(np.int32), 4, 2)

    def _mma_body(self, ins, b, shape, at, acc, na, nb):
        d, s = self._ops(ins)
        a_regs = [self._reg(b, type(s[0])("R", s[0].index + k)).view(U32) for k in range(na)]
        b_regs = [self._reg(b, type(s[1])("R", s[1].index + k)).view(U32) for k in range(nb)]
        c0 = self._reg(b, s[2])
        c_regs = ([self._reg(b, type(s[2])("R", s[2].index + k)).view(acc) for k in range(4)] if c0 is not None
                  else None)
        d_regs = [self._reg(b, type(d[0])("R", d[0].index + k)).view(acc) for k in range(4)]
        sat = "SAT" in ins.mods

        def body(G, lanes):
            idx = self._whole_warps(ins, b, G, lanes)
            c = (np.stack([r[idx] for r in c_regs], -1) if c_regs is not None
                 else np.zeros((*idx.shape, 4), acc))
            out = tensor.mma(shape, at, at, np.stack([r[idx] for r in a_regs], -1),
                             np.stack([r[idx] for r in b_regs], -1), c, sat)
            for k, r in enumerate(d_regs):
                r[idx] = out[..., k]
        return body
