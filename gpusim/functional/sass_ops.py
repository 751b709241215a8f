"""What SASS instructions compute: each instruction of a batch turned into a closure over the batch's
registers and memory, for the warp scheduler (`warps.WarpScheduler`) to run, as `ptx_ops.PtxOps` does for
PTX. Registers are one uint32 numpy array per register over the batch's lanes (R0..Rn, UR0..UR62 — a
uniform register holds its warp's one value in every lane), predicates bool arrays; a 64-bit operand is
a register pair (Rn low, Rn+1 high). The numeric rules are in `sass_semantics`.

Control flow runs on the scheduler's SIMT stack: a divergent `BRA` reconverges at its immediate
post-dominator, which is where ptxas puts the BSYNC of the convergence barrier (BSSY) bracketing it, so
BSSY/BSYNC/WARPSYNC need no state of their own; CALL jumps, RET jumps to the address its register holds.
Constant bank 0 holds the launch's block and grid sizes (c[0x0][0x0..0x14]), the local stack's top
(c[0x0][0x28]) and the parameters (from the cubin's parameter offset). Every form outside what is
implemented is refused when the kernel is decoded (a KernelFault naming the instruction), never run with
a wrong value."""

from __future__ import annotations

import struct
from collections.abc import Callable

import numpy as np

from gpusim.functional import atomics, tensor
from gpusim.functional import sass_semantics as sem
from gpusim.functional.warps import _Batch, _count, _lane_at, _positions, _select
from gpusim.isa.sass.layout import n_sources

U32, U64, F32, F64 = np.uint32, np.uint64, np.float32, np.float64
M32 = np.uint64(0xFFFFFFFF)
# S2R's special registers that are one of the executor's precomputed lane arrays
SR_SPECIAL = {"SR_TID.X": "%tid.x", "SR_TID.Y": "%tid.y", "SR_TID.Z": "%tid.z", "SR_CTAID.X": "%ctaid.x",
              "SR_CTAID.Y": "%ctaid.y", "SR_CTAID.Z": "%ctaid.z", "SR_LANEID": "%laneid"}
SR_ZERO = frozenset({"SR_CgaCtaId", "SRZ", "SR_SWINHI"})  # 0 for a block outside any cluster
SR_LANEMASK = ("SR_LTMASK", "SR_LEMASK", "SR_GTMASK", "SR_GEMASK", "SR_EQMASK")
NOOPS = frozenset({"NOP", "YIELD", "NANOSLEEP", "BSSY", "BSYNC", "WARPSYNC", "MEMBAR", "ERRBAR", "CCTL"})
MEM_BYTES = {"U8": 1, "S8": 1, "U16": 2, "S16": 2, "64": 8, "128": 16}
CMPS = ("EQ", "NE", "LT", "LE", "GT", "GE", "EQU", "NEU", "LTU", "LEU", "GTU", "GEU", "NUM", "NAN", "F", "T")
ROUNDS = ("RN", "RZ", "RM", "RP")


class Unsupported(Exception):
    """A form of an instruction the executor does not implement (reported as a located fault)."""


def _mod(mods, choices, default):
    return next((m for m in mods if m in choices), default)


def _width(mods) -> int:
    return next((MEM_BYTES[m] for m in mods if m in MEM_BYTES), 4)


class SassOps:
    """The SASS decoder, mixed into the Executor."""

    # ---- set-up ------------------------------------------------------------------------------------
    def _init_sass(self) -> None:
        prog, launch = self.program, self.launch
        used = set()
        for ins in prog.instructions:
            for o in ins.operands:
                if o.kind == "sr":
                    if o.name in SR_SPECIAL:
                        used.add(SR_SPECIAL[o.name])
                    elif o.name in SR_LANEMASK:
                        used.add("%laneid")
        self.used_specials = used
        size = -(-(prog.param_base + len(self.params)) // 8) * 8
        cb = bytearray(max(size, 0x40))
        struct.pack_into("<6I", cb, 0, *launch.block, *launch.grid)
        struct.pack_into("<I", cb, 0x28, prog.frame_bytes)  # the local stack's top (it grows down)
        cb[prog.param_base: prog.param_base + len(self.params)] = self.params
        self.cbank = np.frombuffer(bytes(cb), dtype=np.uint8)
        self.local_bytes = -(-prog.frame_bytes // 16) * 16

    # ---- operands ------------------------------------------------------------------------------------
    def _reg(self, b: _Batch, op) -> np.ndarray | None:
        """The lane array of an R/UR register operand (None for RZ/URZ)."""
        from gpusim.isa.sass.program import flat_index

        i = flat_index(op, self.program.nregs)
        return None if i < 0 else b.R[i]

    def _bits(self, op, b: _Batch, ins) -> Callable:
        """lanes -> the operand's 32 bits (uint32), no modifier applied."""
        k = op.kind
        if k in ("R", "UR"):
            arr = self._reg(b, op)
            if arr is None:
                return lambda lanes: U32(0)
            return lambda lanes: arr[lanes]
        if k == "imm":
            v = U32(int(op.value) & 0xFFFFFFFF)
            return lambda lanes: v
        if k == "fimm":
            if op.pair:
                v = sem.pack_f16(op.pair[1], op.pair[0])[()]
            else:
                v = np.float32(op.value).view(U32)
            return lambda lanes: v
        if k == "c":
            return self._cbank(op, b, ins, 4)
        if k == "sr":
            return self._special(op, b, ins)
        raise Unsupported(f"operand kind {k}")

    def _cbank(self, op, b: _Batch, ins, width: int) -> Callable:
        if op.bank != 0:
            raise Unsupported(f"constant bank {op.bank} (only bank 0: the launch and its parameters)")
        cb = self.cbank
        off = int(op.value)
        idx = self._reg(b, type(op)("R", op.index)) if op.index >= 0 else None
        uidx = self._reg(b, type(op)("UR", op.ureg)) if op.ureg >= 0 else None
        dt = {1: np.uint8, 2: np.uint16, 4: U32, 8: U64}[width]

        def at(o):
            o = np.asarray(o, dtype=np.int64)
            if (o < 0).any() or (o + width > cb.size).any():
                return np.zeros(o.shape, dtype=dt)  # (outside the bank: zeros, as an unwritten bank reads)
            return cb[o[..., None] + np.arange(width)].view(dt).reshape(o.shape)

        if idx is None and uidx is None:
            v = at(off)[()]
            return lambda lanes: v

        def read(lanes):
            o = np.int64(off)
            if idx is not None:
                o = o + idx[lanes].astype(np.int64)
            if uidx is not None:
                o = o + uidx[lanes].astype(np.int64)
            return at(o)
        return read

    def _special(self, op, b: _Batch, ins) -> Callable:
        name = op.name
        if name in SR_SPECIAL:
            arr = b.R[self.nregs + self._special_index(SR_SPECIAL[name])]
            return lambda lanes: arr[lanes]
        if name in SR_ZERO:
            return lambda lanes: U32(0)
        if name in SR_LANEMASK:
            lane = b.R[self.nregs + self._special_index("%laneid")]
            f = {"SR_LTMASK": lambda n: (U64(1) << n) - U64(1), "SR_LEMASK": lambda n: (U64(2) << n) - U64(1),
                 "SR_GTMASK": lambda n: ~((U64(2) << n) - U64(1)), "SR_GEMASK": lambda n: ~((U64(1) << n) - U64(1)),
                 "SR_EQMASK": lambda n: U64(1) << n}[name]
            return lambda lanes: (f(lane[lanes].astype(U64)) & M32).astype(U32)
        raise Unsupported(f"special register {name}")

    def _special_index(self, name: str) -> int:
        from gpusim.isa.program import SPECIAL_REGISTERS

        return SPECIAL_REGISTERS.index(name)

    def _int(self, op, b, ins) -> Callable:
        """lanes -> a 32-bit integer source with its -x (two's complement) or ~x applied."""
        f = self._bits(op, b, ins)
        if op.neg:
            return lambda lanes: (U32(0) - np.asarray(f(lanes), dtype=U32)).astype(U32)
        if op.inv:
            return lambda lanes: ~np.asarray(f(lanes), dtype=U32)
        if op.abs:
            return lambda lanes: np.abs(np.asarray(f(lanes), dtype=U32).view(np.int32)).view(U32)
        return f

    def _f32(self, op, b, ins, ftz: bool = False) -> Callable:
        """lanes -> an f32 source with |x| and -x applied (.FTZ: subnormals read as zero)."""
        if op.kind == "fimm" and not op.pair:
            v = F32(op.value)
            v = -abs(v) if op.neg and op.abs else abs(v) if op.abs else -v if op.neg else v
            return lambda lanes: v
        f = self._bits(op, b, ins)

        def read(lanes):
            x = np.asarray(f(lanes), dtype=U32).view(F32)
            if ftz:
                x = sem.ftz(x)
            if op.abs:
                x = np.abs(x)
            if op.neg:
                x = -x
            return x
        return read

    def _u64(self, op, b, ins) -> Callable:
        """lanes -> a 64-bit source (a register pair, a 64-bit constant or an immediate)."""
        if op.kind in ("R", "UR"):
            lo = self._reg(b, op)
            if lo is None:
                return lambda lanes: U64(0)
            hi = self._reg(b, type(op)(op.kind, op.index + 1))
            return lambda lanes: lo[lanes].astype(U64) | (hi[lanes].astype(U64) << U64(32))
        if op.kind == "c":
            return self._cbank(op, b, ins, 8)
        if op.kind == "imm":
            v = U64(int(op.value) & 0xFFFFFFFFFFFFFFFF)
            return lambda lanes: v
        if op.kind == "fimm":
            v = np.float64(op.value).view(U64)
            return lambda lanes: v
        raise Unsupported(f"64-bit operand kind {op.kind}")

    def _f64(self, op, b, ins) -> Callable:
        if op.kind == "fimm":
            v = F64(op.value)
            v = abs(v) if op.abs else v
            v = -v if op.neg else v
            return lambda lanes: v
        f = self._u64(op, b, ins)

        def read(lanes):
            x = np.asarray(f(lanes), dtype=U64).view(F64)
            if op.abs:
                x = np.abs(x)
            return -x if op.neg else x
        return read

    def _pred(self, op, b) -> Callable:
        if op.kind not in ("P", "UP"):
            raise Unsupported("a predicate operand expected")
        if op.index == 7:
            v = not op.inv
            return lambda lanes: v
        arr = self._reg(b, op)
        if op.inv:
            return lambda lanes: ~arr[lanes]
        return lambda lanes: arr[lanes]

    def _w32(self, op, b) -> Callable:
        if op.kind not in ("R", "UR"):
            raise Unsupported("a register destination expected")
        arr = self._reg(b, op)
        if arr is None:
            return lambda lanes, v: None

        def write(lanes, v):
            arr[lanes] = v
        return write

    def _wn(self, op, b, n: int) -> list[Callable]:
        """Writers of the n consecutive registers from `op` (RZ: discarded)."""
        if op.kind not in ("R", "UR"):
            raise Unsupported("a register destination expected")
        if self._reg(b, op) is None:
            return [lambda lanes, v: None] * n
        return [self._w32(type(op)(op.kind, op.index + k), b) for k in range(n)]

    def _wp(self, op, b) -> Callable:
        if op.kind not in ("P", "UP"):
            raise Unsupported("a predicate destination expected")
        arr = self._reg(b, op) if op.index != 7 else None
        if arr is None:
            return lambda lanes, v: None

        def write(lanes, v):
            arr[lanes] = v
        return write

    def _w64(self, op, b) -> Callable:
        lo, hi = self._wn(op, b, 2)

        def write(lanes, v):
            v = np.asarray(v, dtype=U64)
            lo(lanes, (v & M32).astype(U32))
            hi(lanes, (v >> U64(32)).astype(U32))
        return write

    # ---- decode ----------------------------------------------------------------------------------------
    def _decode_sass(self, ins, b: _Batch) -> Callable:
        op = ins.opcode
        if ins.guard_false:  # @!PT: never executes
            return self._advance(ins, b, lambda G, lanes: None)
        if op == "BRA":
            return self._branch(ins, b)
        if op == "EXIT":
            return self._exit(ins, b)
        if op == "BAR":
            if set(ins.mods) & {"ARV"}:
                return self._sass_fault(ins, b, "BAR.ARV")
            return self._barrier(ins, b)
        if op == "CALL" and ins.guard >= 0:  # a guarded call is a jump its lanes may or may not take
            return self._branch(ins, b)
        if op in ("CALL", "RET"):
            return self._call(ins, b)
        try:
            if op in NOOPS:
                def body(G, lanes):
                    pass
            else:
                make = getattr(self, f"_s_{op.lower()}", None)
                if make is None:
                    raise Unsupported(op)
                body = self._checked(ins, b, make(ins, b))
        except Unsupported as exc:
            return self._sass_fault(ins, b, str(exc))
        except (ValueError, IndexError, TypeError, KeyError, AttributeError, StopIteration):
            return self._sass_fault(ins, b, "operands of a form it does not take")
        uniform = op.startswith("U") or op in ("S2UR", "R2UR", "VOTEU", "ULDC")
        if uniform and op not in ("R2UR", "VOTEU"):
            inner = body
            ws, lane_ids = b.ws, b.lane_ids

            def body(G, lanes):  # a uniform result is the warp's: every lane of the warp holds it
                inner(G, (G[:, None] * ws + lane_ids).ravel() if not isinstance(lanes, slice) else lanes)
        return self._advance(ins, b, self._guarded(ins, b, body))

    def _checked(self, ins, b, body) -> Callable:
        """`body`, whose operand mix-ups (an operand of the wrong kind in a hand-edited listing) are faults
        naming the instruction rather than Python errors."""
        def run(G, lanes):
            try:
                body(G, lanes)
            except (ValueError, IndexError, TypeError, KeyError, AttributeError, StopIteration, Unsupported) as exc:
                self.fault(b, ins, int(G[0]) * b.ws, f"unsupported SASS: {ins.mnemonic} (operands of a form it "
                           f"does not take: {type(exc).__name__})")
        return run

    def _advance(self, ins, b, guarded) -> Callable:
        st, nxt = b.stack, ins.pc + 1

        def run(G, lanes):
            guarded(G, lanes)
            st.pc[G] = nxt
        return run

    def _sass_fault(self, ins, b, what: str) -> Callable:
        def run(G, lanes):
            self.fault(b, ins, int(G[0]) * b.ws, f"unsupported SASS: {ins.mnemonic} ({what})")
        return run

    def _ops(self, ins):
        n = n_sources(ins.opcode, ins.mods, len(ins.operands))
        return ins.operands[:len(ins.operands) - n], ins.operands[len(ins.operands) - n:]

    # ---- control -----------------------------------------------------------------------------------------
    def _call(self, ins, b: _Batch) -> Callable:
        st = b.stack
        if ins.guard >= 0:
            return self._sass_fault(ins, b, "a guarded call")
        if ins.opcode == "CALL":
            target = ins.target

            def run(G, lanes):
                st.pc[G] = target
            return run
        reg = next((o for o in ins.operands if o.kind == "R"), None)
        if reg is None:
            return self._sass_fault(ins, b, "RET without its address register")
        arr = self._reg(b, reg).reshape(b.W, b.ws)
        addr_to_pc = {i.addr: i.pc for i in self.program.instructions}
        prog = self.program

        def run(G, lanes):
            act = st.active[G]
            first = np.argmax(act, axis=1)
            addrs = arr[G, first]
            if ((arr[G] != addrs[:, None]) & act).any():
                self.fault(b, ins, int(G[0]) * b.ws, "RET: the warp's lanes return to different addresses")
            for a in np.unique(addrs):
                if int(a) not in addr_to_pc:
                    self.fault(b, ins, int(G[0]) * b.ws, f"RET to {int(a):#x}, no instruction of {prog.name}")
            st.pc[G] = np.array([addr_to_pc[int(a)] for a in addrs], dtype=np.int64)
        return run

    # ---- integer ---------------------------------------------------------------------------------------------
    def _s_mov(self, ins, b):
        d, s = self._ops(ins)
        w, r = self._w32(d[0], b), self._int(s[0], b, ins)
        return lambda G, lanes: w(lanes, r(lanes))

    _s_umov = _s_mov

    def _s_s2r(self, ins, b):
        d, s = self._ops(ins)
        w, r = self._w32(d[0], b), self._special(s[0], b, ins)
        return lambda G, lanes: w(lanes, r(lanes))

    _s_s2ur = _s_s2r

    def _s_cs2r(self, ins, b):
        d, s = self._ops(ins)
        if s[0].name != "SRZ":
            raise Unsupported(f"CS2R of {s[0].name}")
        ws = self._wn(d[0], b, 1 if "32" in ins.mods else 2)

        def body(G, lanes):
            for w in ws:
                w(lanes, U32(0))
        return body

    def _s_ldc(self, ins, b):
        d, s = self._ops(ins)
        width = _width(ins.mods)
        r = self._cbank(s[0], b, ins, min(width, 8) if width != 8 else 8)
        if width == 8:
            w = self._w64(d[0], b)
            return lambda G, lanes: w(lanes, r(lanes))
        w = self._w32(d[0], b)
        signed = ins.mods and ins.mods[0] in ("S8", "S16")
        if width < 4:
            dt = np.int8 if width == 1 else np.int16
            return lambda G, lanes: w(lanes, np.asarray(r(lanes)).view(dt).astype(np.int32).view(U32)
                                      if signed else np.asarray(r(lanes)).astype(U32))
        return lambda G, lanes: w(lanes, r(lanes))

    _s_uldc = _s_ldc

    def _s_r2ur(self, ins, b):
        d, s = self._ops(ins)
        src = self._reg(b, s[0])
        dst = self._reg(b, d[0])
        st, ws = b.stack, b.ws

        def body(G, lanes):
            if dst is None:
                return
            first = np.argmax(st.active[G], axis=1)
            vals = (src.reshape(b.W, ws)[G, first] if src is not None else np.zeros(G.size, U32))
            dst.reshape(b.W, ws)[G] = vals[:, None]
        return body

    def _s_imad(self, ins, b):
        d, s = self._ops(ins)
        m = set(ins.mods)
        signed = "U32" not in m
        if "WIDE" in m:
            ra, rb, rc = self._int(s[0], b, ins), self._int(s[1], b, ins), self._u64(s[2], b, ins)
            w = self._w64(d[0], b)

            def body(G, lanes):
                a, bb = np.asarray(ra(lanes), U32), np.asarray(rb(lanes), U32)
                if signed:
                    p = (a.view(np.int32).astype(np.int64) * bb.view(np.int32).astype(np.int64)).view(U64)
                else:
                    p = a.astype(U64) * bb.astype(U64)
                w(lanes, p + np.asarray(rc(lanes), U64))
            return body
        if "HI" in m:
            ra, rb, rc = self._int(s[0], b, ins), self._int(s[1], b, ins), self._u64(s[2], b, ins)
            w = self._w32(d[0], b)

            def body(G, lanes):
                a, bb = np.asarray(ra(lanes), U32), np.asarray(rb(lanes), U32)
                c = np.asarray(rc(lanes), U64)
                if signed:
                    p = (a.view(np.int32).astype(np.int64) * bb.view(np.int32).astype(np.int64)).view(U64)
                else:
                    p = a.astype(U64) * bb.astype(U64)
                carry = ((p & M32) + (c & M32)) >> U64(32)
                w(lanes, (((p >> U64(32)) + (c >> U64(32)) + carry) & M32).astype(U32))
            return body
        ra, rb, rc = (self._int(x, b, ins) for x in s[:3])
        carry = self._pred(s[3], b) if "X" in m and len(s) > 3 else None
        w = self._w32(d[0], b)

        def body(G, lanes):
            v = (np.asarray(ra(lanes), U32).astype(U64) * np.asarray(rb(lanes), U32).astype(U64)
                 + np.asarray(rc(lanes), U32).astype(U64))
            if carry is not None:
                v = v + np.asarray(carry(lanes)).astype(U64)
            w(lanes, (v & M32).astype(U32))
        return body

    _s_uimad = _s_imad

    def _s_iadd3(self, ins, b):
        d, s = self._ops(ins)
        terms = [(self._bits(x, b, ins), x.neg, x.inv) for x in s[:3]]
        cins = [self._pred(x, b) for x in s[3:5]] if "X" in ins.mods else []
        w = self._w32(d[0], b)
        pw = [self._wp(x, b) for x in d[1:]]

        def body(G, lanes):
            t = [sem.int_term(f(lanes), n, i) for f, n, i in terms]
            cin = sum((np.asarray(c(lanes)).astype(U64) for c in cins), U64(0))
            r, c1, c2 = sem.add_terms(t, cin)
            w(lanes, r)
            for p, c in zip(pw, (c1, c2), strict=False):
                p(lanes, c)
        return body

    _s_uiadd3 = _s_iadd3

    def _s_viadd(self, ins, b):
        d, s = self._ops(ins)
        ra, rb = self._int(s[0], b, ins), self._int(s[1], b, ins)
        w = self._w32(d[0], b)
        return lambda G, lanes: w(lanes, (np.asarray(ra(lanes), U32) + np.asarray(rb(lanes), U32)).astype(U32))

    def _s_iabs(self, ins, b):
        d, s = self._ops(ins)
        r, w = self._bits(s[0], b, ins), self._w32(d[0], b)
        return lambda G, lanes: w(lanes, np.abs(np.asarray(r(lanes), U32).view(np.int32)).view(U32))

    def _s_lea(self, ins, b):
        d, s = self._ops(ins)
        m = set(ins.mods)
        hi = "HI" in m
        k = 0
        a_op, b_op = s[0], s[1]
        k = 2
        c_op = None
        if hi and "SX32" not in m:
            c_op, k = s[2], 3
        sh = s[k]
        if sh.kind != "imm":
            raise Unsupported("a register shift amount")
        shift = int(sh.value) & 31
        cin = self._pred(s[k + 1], b) if "X" in m else None
        ra, rb = self._bits(a_op, b, ins), self._bits(b_op, b, ins)
        rc = self._bits(c_op, b, ins) if c_op is not None else None
        w = self._w32(d[0], b)
        pw = self._wp(d[1], b) if len(d) > 1 else None
        a_neg, a_inv = a_op.neg, a_op.inv

        def body(G, lanes):
            a = np.asarray(ra(lanes), U32)
            if a_neg:
                a = (U32(0) - a).astype(U32)
            if a_inv:
                a = ~a
            if hi:
                if rc is not None:
                    top = np.asarray(rc(lanes), U32).astype(U64)
                else:  # .SX32: a sign-extended
                    top = np.where(a.view(np.int32) < 0, M32, U64(0))
                v = (top << U64(32)) | a.astype(U64)
                t = (v >> U64(32 - shift)) & M32 if shift else (v >> U64(32)) & M32
            else:
                t = (a.astype(U64) << U64(shift)) & M32
            cin_v = np.asarray(cin(lanes)).astype(U64) if cin is not None else U64(0)
            r, c1, _ = sem.add_terms([t, sem.int_term(rb(lanes), b_op.neg, b_op.inv)], cin_v)
            w(lanes, r)
            if pw is not None:
                pw(lanes, c1)
        return body

    _s_ulea = _s_lea

    def _s_lop3(self, ins, b):
        d, s = self._ops(ins)
        if s[3].kind != "imm":
            raise Unsupported("LOP3 without an immediate table")
        lut = int(s[3].value) & 0xFF
        pin = s[4]
        if not (pin.kind in ("P", "UP") and pin.index == 7 and pin.inv):
            raise Unsupported("LOP3 with a predicate input other than !PT")
        rs = [self._int(x, b, ins) for x in s[:3]]
        w = self._w32(d[-1], b)
        pw = self._wp(d[0], b) if len(d) > 1 else None

        def body(G, lanes):
            r = sem.lop3(*(f(lanes) for f in rs), lut)
            w(lanes, r)
            if pw is not None:
                pw(lanes, r != 0)
        return body

    _s_ulop3 = _s_lop3

    def _s_plop3(self, ins, b):
        d, s = self._ops(ins)
        luts = [int(x.value) & 0xFF for x in s[3:5]]
        ps = [self._pred(x, b) for x in s[:3]]
        ws = [self._wp(x, b) for x in d]

        def body(G, lanes):
            v = [np.broadcast_to(np.asarray(p(lanes), bool), (_count(lanes, b),)) for p in ps]
            for w, lut in zip(ws, luts, strict=False):
                w(lanes, sem.plop3(*v, lut))
        return body

    _s_uplop3 = _s_plop3

    def _s_shf(self, ins, b):
        d, s = self._ops(ins)
        m = set(ins.mods)
        left, hi = "L" in m, "HI" in m
        signed = bool(m & {"S32", "S64"})
        wide = bool(m & {"U64", "S64"})
        wrap = "W" in m
        ra, rs, rc = (self._bits(x, b, ins) for x in s[:3])
        w = self._w32(d[0], b)

        def body(G, lanes):
            sh = np.asarray(rs(lanes), U32)
            if wrap:
                sh = sh & U32(63 if wide else 31)
            w(lanes, sem.shf(ra(lanes), sh, rc(lanes), left, hi, signed, wide))
        return body

    _s_ushf = _s_shf

    def _s_prmt(self, ins, b):
        d, s = self._ops(ins)
        if ins.mods:
            raise Unsupported("PRMT modes")
        ra, rsel, rb = (self._bits(x, b, ins) for x in s[:3])
        w = self._w32(d[0], b)
        return lambda G, lanes: w(lanes, sem.prmt(ra(lanes), rb(lanes), rsel(lanes)))

    def _s_popc(self, ins, b):
        d, s = self._ops(ins)
        r, w = self._int(s[0], b, ins), self._w32(d[0], b)
        return lambda G, lanes: w(lanes, np.bitwise_count(np.asarray(r(lanes), U32)).astype(U32))

    _s_upopc = _s_popc

    def _s_brev(self, ins, b):
        d, s = self._ops(ins)
        r, w = self._int(s[0], b, ins), self._w32(d[0], b)

        def body(G, lanes):
            x = np.asarray(r(lanes), U32)
            out = np.zeros(x.shape, U32)
            for k in range(32):
                out |= ((x >> U32(k)) & U32(1)) << U32(31 - k)
            w(lanes, out)
        return body

    _s_ubrev = _s_brev

    def _s_flo(self, ins, b):
        d, s = self._ops(ins)
        signed = "U32" not in ins.mods
        sh = "SH" in ins.mods
        r, w = self._int(s[0], b, ins), self._w32(d[0], b)

        def body(G, lanes):
            x = np.asarray(r(lanes), U32)
            if signed:
                x = np.where(x.view(np.int32) < 0, ~x, x)
            pos = np.where(x == 0, -1, np.floor(np.log2(np.maximum(x, 1).astype(F64))).astype(np.int64))
            pos = np.where((x != 0) & (U64(1) << np.maximum(pos, 0).astype(U64) > x.astype(U64)), pos - 1, pos)
            out = np.where(pos < 0, -1, (31 - pos) if sh else pos).astype(np.int64)
            w(lanes, out.astype(np.int32).view(U32))
        return body

    _s_uflo = _s_flo

    def _minmax(self, ins, b, kind):
        d, s = self._ops(ins)
        ra, rb = (self._bits(x, b, ins) if kind != "f" else self._f32(x, b, ins, "FTZ" in ins.mods) for x in s[:2])
        p = self._pred(s[2], b)
        w = self._w32(d[0], b)
        signed = kind == "i" and "U32" not in ins.mods

        def body(G, lanes):
            a, bb = ra(lanes), rb(lanes)
            is_min = np.asarray(p(lanes), bool)
            if kind == "f":
                w(lanes, sem.fminmax(a, bb, is_min).view(U32))
                return
            a, bb = np.asarray(a, U32), np.asarray(bb, U32)
            x, y = (a.view(np.int32), bb.view(np.int32)) if signed else (a, bb)
            w(lanes, np.where(is_min, np.minimum(x, y), np.maximum(x, y)).astype(x.dtype).view(U32))
        return body

    def _s_imnmx(self, ins, b):
        return self._minmax(ins, b, "i")

    _s_vimnmx = _s_imnmx

    def _s_fmnmx(self, ins, b):
        return self._minmax(ins, b, "f")

    def _setp(self, ins, b, kind):
        d, s = self._ops(ins)
        m = ins.mods
        cmp = _mod(m, CMPS, None)
        bop = _mod(m, ("AND", "OR", "XOR"), "AND")
        if cmp is None:
            raise Unsupported("a comparison")
        ex = "EX" in m
        ftz = "FTZ" in m
        if kind == "i":
            ra, rb = self._int(s[0], b, ins), self._int(s[1], b, ins)
            signed = "U32" not in m
        elif kind == "f":
            ra, rb = self._f32(s[0], b, ins, ftz), self._f32(s[1], b, ins, ftz)
        else:
            ra, rb = self._f64(s[0], b, ins), self._f64(s[1], b, ins)
        rc = self._pred(s[2], b)
        rx = self._pred(s[3], b) if ex else None
        wp, wq = self._wp(d[0], b), self._wp(d[1], b)

        def body(G, lanes):
            a, bb = ra(lanes), rb(lanes)
            if kind == "i":
                a, bb = np.asarray(a, U32), np.asarray(bb, U32)
                if signed:
                    a, bb = a.view(np.int32), bb.view(np.int32)
            if ex:  # the high words, chained with the low words' result x
                x = np.asarray(rx(lanes), bool)
                if cmp == "EQ":
                    r = (a == bb) & x
                elif cmp == "NE":
                    r = (a != bb) | x
                else:
                    r = sem.compare(a, bb, cmp[:2] if cmp[:2] in ("LT", "GT") else {"LE": "LT", "GE": "GT"}[cmp])
                    r = r | ((a == bb) & x)
            else:
                r = sem.compare(a, bb, cmp)
            c = np.asarray(rc(lanes), bool)
            n = _count(lanes, b)
            wp(lanes, np.broadcast_to(sem.combine(r, c, bop), (n,)))
            wq(lanes, np.broadcast_to(sem.combine(~np.asarray(r, bool), c, bop), (n,)))
        return body

    def _s_isetp(self, ins, b):
        return self._setp(ins, b, "i")

    _s_uisetp = _s_isetp

    def _s_fsetp(self, ins, b):
        return self._setp(ins, b, "f")

    def _s_dsetp(self, ins, b):
        return self._setp(ins, b, "d")

    def _s_sel(self, ins, b):
        d, s = self._ops(ins)
        ra, rb, p = self._int(s[0], b, ins), self._int(s[1], b, ins), self._pred(s[2], b)
        w = self._w32(d[0], b)
        return lambda G, lanes: w(lanes, np.where(p(lanes), ra(lanes), rb(lanes)).astype(U32))

    _s_usel = _s_sel

    def _s_fsel(self, ins, b):
        d, s = self._ops(ins)
        ra, rb, p = self._f32(s[0], b, ins), self._f32(s[1], b, ins), self._pred(s[2], b)
        w = self._w32(d[0], b)
        return lambda G, lanes: w(lanes, np.where(p(lanes), ra(lanes), rb(lanes)).astype(F32).view(U32))

    def _s_p2r(self, ins, b):
        d, s = self._ops(ins)
        if s[0].kind != "PR" or s[2].kind != "imm" or set(ins.mods) - {"B0"}:
            raise Unsupported("P2R form")
        mask = U32(int(s[2].value) & 0x7F)
        preds = [self._reg(b, type(s[0])("P", k)) for k in range(7)]
        ra, w = self._bits(s[1], b, ins), self._w32(d[0], b)

        def body(G, lanes):
            v = np.zeros(_count(lanes, b), U32)
            for k, p in enumerate(preds):
                if mask >> U32(k) & U32(1):
                    v |= p[lanes].astype(U32) << U32(k)
            w(lanes, (np.asarray(ra(lanes), U32) & ~mask) | v)
        return body

    def _s_r2p(self, ins, b):
        _, s = self._ops(ins)
        if s[0].kind != "PR" or s[2].kind != "imm" or set(ins.mods) - {"B0"}:
            raise Unsupported("R2P form")
        mask = int(s[2].value) & 0x7F
        ra = self._bits(s[1], b, ins)
        preds = [(k, self._reg(b, type(s[0])("P", k))) for k in range(7) if mask >> k & 1]

        def body(G, lanes):
            v = np.asarray(ra(lanes), U32)
            for k, p in preds:
                p[lanes] = (v >> U32(k)) & U32(1) != 0
        return body

    # ---- floating point ---------------------------------------------------------------------------------------
    def _s_fadd(self, ins, b):
        return self._farith(ins, b, 2, sem.fadd)

    def _s_fmul(self, ins, b):
        if set(ins.mods) & {"D2", "D4", "M2", "M4", "M8"}:
            raise Unsupported("FMUL scaling")
        return self._farith(ins, b, 2, sem.fmul)

    def _s_ffma(self, ins, b):
        return self._farith(ins, b, 3, sem.ffma)

    def _farith(self, ins, b, n, f):
        d, s = self._ops(ins)
        ftz, sat = "FTZ" in ins.mods, "SAT" in ins.mods
        mode = _mod(ins.mods, ROUNDS, "RN")
        rs = [self._f32(x, b, ins, ftz) for x in s[:n]]
        w = self._w32(d[0], b)

        def body(G, lanes):
            with np.errstate(all="ignore"):
                r = f(*(g(lanes) for g in rs), mode)
            if ftz:
                r = sem.ftz(r)
            if sat:
                r = np.where(np.isnan(r), F32(0), np.clip(r, F32(0), F32(1))).astype(F32)
            w(lanes, np.asarray(r, F32).view(U32))
        return body

    def _s_mufu(self, ins, b):
        d, s = self._ops(ins)
        func = ins.mods[0] if ins.mods else ""
        w = self._w32(d[0], b)
        if func in ("RCP64H", "RSQ64H"):
            r = self._bits(s[0], b, ins)
            return lambda G, lanes: w(lanes, sem.mufu64h(func, r(lanes)))
        r = self._f32(s[0], b, ins)
        return lambda G, lanes: w(lanes, sem.mufu(func, r(lanes)).view(U32))

    def _darith(self, ins, b, n):
        d, s = self._ops(ins)
        if _mod(ins.mods, ROUNDS, "RN") != "RN":
            raise Unsupported("directed rounding of doubles")
        rs = [self._f64(x, b, ins) for x in s[:n]]
        w = self._w64(d[0], b)
        op = ins.opcode

        def body(G, lanes):
            v = [g(lanes) for g in rs]
            with np.errstate(all="ignore"):
                r = v[0] + v[1] if op == "DADD" else v[0] * v[1] if op == "DMUL" else v[0] * v[1] + v[2]
            w(lanes, np.asarray(r, F64).view(U64))
        return body

    def _s_dadd(self, ins, b):
        return self._darith(ins, b, 2)

    def _s_dmul(self, ins, b):
        return self._darith(ins, b, 2)

    def _s_dfma(self, ins, b):
        return self._darith(ins, b, 3)

    def _half2(self, op, b, ins) -> Callable:
        """lanes -> (low, high) f16 of a half2 source, its .H0_H0/.H1_H1 selector and -x/|x| applied."""
        if op.kind == "fimm" and op.pair:
            hi, lo = np.float16(op.pair[0]), np.float16(op.pair[1])
            return lambda lanes: (lo, hi)
        if op.kind == "fimm":
            v = np.float16(op.value)
            return lambda lanes: (v, v)
        f = self._bits(op, b, ins)
        sel = op.sel

        def read(lanes):
            lo, hi = sem.f16_pair(f(lanes))
            if sel in ("H0_H0", "H0"):
                hi = lo
            elif sel in ("H1_H1", "H1"):
                lo = hi
            elif sel not in ("", "H1_H0"):
                raise ValueError(sel)
            if op.abs:
                lo, hi = np.abs(lo), np.abs(hi)
            if op.neg:
                lo, hi = -lo, -hi
            return lo, hi
        return read

    def _s_hfma2(self, ins, b):
        return self._harith(ins, b, 3)

    def _s_hadd2(self, ins, b):
        return self._harith(ins, b, 2)

    def _s_hmul2(self, ins, b):
        return self._harith(ins, b, 2)

    def _harith(self, ins, b, n):
        d, s = self._ops(ins)
        if set(ins.mods) & {"BF16_V2", "RELU"} or (ins.opcode == "HFMA2" and "F32" in ins.mods):
            raise Unsupported("bf16/relu/f32 forms")
        for x in s[:n]:
            if x.sel not in ("", "H0_H0", "H1_H1", "H0", "H1", "H1_H0"):
                raise Unsupported(f"half selector .{x.sel}")
        rs = [self._half2(x, b, ins) for x in s[:n]]
        w = self._w32(d[0], b)
        op = ins.opcode
        to_f32 = "F32" in ins.mods

        def body(G, lanes):
            v = [g(lanes) for g in rs]
            with np.errstate(all="ignore"):
                out = []
                for k in (0, 1):
                    x = [np.asarray(t[k], np.float16).astype(F32) for t in v]
                    if op == "HFMA2":
                        r = x[0] * x[1] + x[2]
                    elif op == "HADD2":
                        r = x[0] + x[1]
                    else:
                        r = x[0] * x[1]
                    out.append(r)
            if to_f32:  # HADD2.F32: one f32 result (the low lane's)
                w(lanes, np.asarray(out[0], F32).view(U32))
                return
            w(lanes, sem.pack_f16(out[0].astype(np.float16), out[1].astype(np.float16)))
        return body

    # ---- conversions ----------------------------------------------------------------------------------------
    def _s_f2i(self, ins, b):
        d, s = self._ops(ins)
        m = ins.mods
        to = _mod(m, ("U32", "S32", "U64", "S64", "U16", "S16", "U8", "S8"), "S32")
        rnd = _mod(m, ("TRUNC", "FLOOR", "CEIL"), "RN")
        src64 = "F64" in m
        r = self._f64(s[0], b, ins) if src64 else self._f32(s[0], b, ins, "FTZ" in m)
        wide = to in ("U64", "S64")
        w = self._w64(d[0], b) if wide else self._w32(d[0], b)

        def body(G, lanes):
            v = sem.f2i(r(lanes), to, rnd)
            w(lanes, v if wide else (np.asarray(v, U64) & M32).astype(U32))
        return body

    def _s_i2f(self, ins, b):
        d, s = self._ops(ins)
        m = ins.mods
        src = _mod(m, ("U32", "S32", "U64", "S64", "U16", "S16", "U8", "S8"), "S32")
        mode = _mod(m, ROUNDS, "RN")
        to64 = "F64" in m
        if "F16" in m:
            raise Unsupported("I2F to f16")
        r = self._u64(s[0], b, ins) if src in ("U64", "S64") else self._bits(s[0], b, ins)
        w = self._w64(d[0], b) if to64 else self._w32(d[0], b)
        bits = {"U8": 8, "S8": 8, "U16": 16, "S16": 16, "U32": 32, "S32": 32}.get(src, 64)

        def body(G, lanes):
            x = np.asarray(r(lanes))
            if src.startswith("S"):
                v = x.astype(np.int64) if bits == 64 else (x.astype(np.int64) << (64 - bits)) >> (64 - bits)
                v = x.view(np.int64) if bits == 64 else v
            else:
                v = x.astype(U64) & U64((1 << bits) - 1 if bits < 64 else 0xFFFFFFFFFFFFFFFF)
            if to64:
                if mode != "RN":
                    raise ValueError("directed I2F.F64")
                w(lanes, np.asarray(v).astype(F64).view(U64))
            else:
                w(lanes, sem.i2f32(np.asarray(v), mode).view(U32))
        return body

    def _s_i2fp(self, ins, b):
        return self._s_i2f(ins, b)

    def _s_f2f(self, ins, b):
        d, s = self._ops(ins)
        types = [x for x in ins.mods if x in ("F16", "F32", "F64", "BF16")]
        if len(types) != 2:
            raise Unsupported("F2F types")
        to, frm = types
        mode = _mod(ins.mods, ROUNDS, "RN")
        if mode != "RN" or "BF16" in types:
            raise Unsupported("F2F rounding or bf16")
        r = self._f64(s[0], b, ins) if frm == "F64" else self._f32(s[0], b, ins, "FTZ" in ins.mods)
        if frm == "F16":
            r16 = self._half2(s[0], b, ins)
            r = lambda lanes: np.asarray(r16(lanes)[0], np.float16).astype(F32)  # noqa: E731
        w = self._w64(d[0], b) if to == "F64" else self._w32(d[0], b)

        def body(G, lanes):
            x = np.asarray(r(lanes))
            with np.errstate(all="ignore"):
                if to == "F64":
                    w(lanes, x.astype(F64).view(U64))
                elif to == "F32":
                    w(lanes, x.astype(F32).view(U32))
                else:
                    w(lanes, x.astype(F32).astype(np.float16).view(np.uint16).astype(U32))
        return body

    def _s_f2fp(self, ins, b):
        d, s = self._ops(ins)
        m = set(ins.mods)
        if "PACK_AB" not in m or "BF16" in m or "RZ" in m:
            raise Unsupported("F2FP form")
        ra, rb = self._f32(s[0], b, ins), self._f32(s[1], b, ins)
        w = self._w32(d[0], b)
        return lambda G, lanes: w(lanes, sem.pack_f16(np.asarray(rb(lanes), F32).astype(np.float16),
                                                      np.asarray(ra(lanes), F32).astype(np.float16)))

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
            old = atomics.apply(view, off // width, "add" if popc else aop, v, c)
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
