"""What SASS's integer, floating-point and conversion instructions compute (the closures; numerics in
`sass_semantics.py`)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpusim.functional import sass_semantics as sem
from gpusim.functional.lanes import _count
from gpusim.functional.sass_operands import (
    CMPS,
    F32,
    F64,
    M32,
    ROUNDS,
    U32,
    U64,
    SassOperands,
    Unsupported,
    _mod,
    _width,
)


class SassArith(SassOperands):
    """Integer, float and conversion opcodes."""

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
