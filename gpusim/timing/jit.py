"""How the timing model's hot code is compiled: Numba's `njit`, cached on disk, no fastmath (the
engine's floating-point cycle counts must match the plain-Python run bit for bit). With
NUMBA_DISABLE_JIT=1 the same functions run as ordinary Python, for a debugger or coverage."""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from pathlib import Path

import numba
import numba.core.event
import numpy as np


def _engine_cache_dir() -> str:
    """Where Numba caches the engine's machine code: a folder named by a hash of the engine's whole
    source (every file of gpusim/timing and the vocabulary) and Numba's version. Numba checks only a
    cached function's own file for changes, and the engine's functions are compiled together, so an
    edit to one unit's file must start a fresh cache."""
    here = Path(__file__).resolve().parent
    h = hashlib.sha256(numba.__version__.encode())
    for p in sorted([*here.rglob("*.py"), here.parent / "config" / "vocab.py"]):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "gpusim", f"numba-{h.hexdigest()[:16]}")


if not os.environ.get("NUMBA_CACHE_DIR"):  # (a folder the user chose is used as it is)
    numba.config.CACHE_DIR = _engine_cache_dir()

# every function compiled through `njit`: what a first run compiles, one at a time
ENGINE_FUNCTIONS: list = []


def _listed(decorator):
    def compile_later(fn):
        dispatcher = decorator(fn)
        ENGINE_FUNCTIONS.append(dispatcher)
        return dispatcher

    return compile_later


# error_model="numpy": integer division and modulo by zero are not checked (no exception path in every
# `line % nsets`); every divisor in the model is a configured size, validated non-zero on load.
# Every function with several callers is compiled once, on its own, small ones included: none is inlined
# into its callers by Numba (inline="always", which the issue path's small functions had until 2026-12-06,
# re-typed and re-lowered each copy of them in every caller: `run_sm` alone took 6 of a first run's 7.8
# minutes of compile). LLVM inlines what is small when it optimizes a caller's module, and the functions of
# INLINE below whatever their size.
njit = _listed(numba.njit(cache=True, nogil=True, error_model="numpy"))

# A function with a single caller on the issue path (`run_sm` in `run`, `_step` in `run_sm`, `issue` in
# `_step`, ...), compiled as part of its caller: Numba splices its code into the caller's before typing, so
# it is typed and lowered once, as before, but is not a separately compiled function of its own. Each such
# function is optimized and turned into machine code again with everything below it, inside every caller's
# module: the chain run -> run_sm -> _step -> issue -> _issue_other -> global_access compiled the L1/L2/DRAM
# code six times over (the loop's compile took 29.1-29.4 CPU s; 23.8-26.1 with the chain spliced, 2026-12-07).
# Not for a function with many callers: each call site would get a copy to type and lower.
njit_inline = numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")

# The functions of the issue path, once per warp instruction or per sub-partition cycle, which LLVM is told
# to inline into their callers (alwaysinline): its own cost model left most of them as calls, each passing
# its arguments, a return-value pointer and an exception pointer through memory and checking a status on
# return (6-12 % of the engine's time on reduce_sum, docs/bench.md, 2026-12-06). Marked in the LLVM module
# that links them, after Numba has typed and lowered each once: the compile stays one lowering per
# function (a first compile about 0.4 CPU s longer), unlike Numba's inline="always". Not listed: what runs
# once per global access or per block (l1/l2/dram, launch, retire), whose copies would lengthen the
# compile for no measured gain.
INLINE = frozenset(f"gpusim.timing.{name}" for name in (
    "subpartition.begin_cycle", "subpartition.take", "subpartition.still_open", "subpartition.end_cycle",
    "subpartition.earliest_wake", "subpartition.wait_until", "subpartition._push_wake", "subpartition.dispatch",
    "subpartition.occupy", "subpartition.log", "subpartition.log_pick", "subpartition.account",
    "policies.scheduler.pick", "policies.scheduler_gto.pick", "policies.eligible.eligible",
    "policies.eligible.oldest", "warp.deps_ready", "warp.write_regs", "stream.advance", "stream.check_hunger",
    "sm.next_instr"))


def _mangled(qualified: str) -> str:
    """The prefix of the symbol Numba gives a function (Itanium-style nested name; an ABI tag follows)."""
    return "_ZN" + "".join(f"{len(part)}{part}" for part in qualified.split(".")) + "B"


def _mark_inline(prefixes):
    from numba.core import codegen

    optimize = getattr(codegen.CPUCodeLibrary, "_optimize_final_module", None)
    if optimize is None:  # (a Numba without this step: LLVM's own choice stands)
        return

    def optimize_final_module(self):
        for fn in self._final_module.functions:
            if not fn.is_declaration and fn.name.startswith(prefixes):
                fn.add_function_attribute("alwaysinline")
        optimize(self)

    codegen.CPUCodeLibrary._optimize_final_module = optimize_final_module


if not numba.config.DISABLE_JIT:
    _mark_inline(tuple(_mangled(q) for q in INLINE))

# The cycle the model never reaches: "no event" for a unit or warp. Cycles are 64-bit integers, so no
# kernel is cut short by the representation (2^62 cycles is about a century at 1.4 GHz).
NEVER = 1 << 62


def loop_functions(entry) -> set[int]:
    """The ids of the ENGINE_FUNCTIONS compiled function `entry` calls, directly or through others, itself
    included: what a first run compiles for the engine's loop (the feeder's and the address stage's
    functions are compiled by a second process)."""
    return called_by(entry) & {id(d) for d in ENGINE_FUNCTIONS}


def called_by(entry) -> set[int]:
    """The ids of the compiled functions `entry` calls, directly or through others, itself included, found
    in their code: the global names, module attributes and closure variables each reads (a name that is also
    another module's function counts that one too: an estimate from above)."""
    from numba.core.registry import CPUDispatcher

    seen: set[int] = set()
    todo = [entry]
    while todo:
        d = todo.pop()
        if id(d) in seen or not hasattr(d, "py_func"):
            continue
        seen.add(id(d))
        fn = d.py_func
        code = fn.__code__
        found = [fn.__globals__.get(n) for n in code.co_names]
        found += [c.cell_contents for c in fn.__closure__ or ()]
        for v in list(found):
            if isinstance(v, type(os)):  # a module: the attributes the code reads
                found += [getattr(v, n, None) for n in code.co_names]
        todo += [v for v in found if isinstance(v, CPUDispatcher)]
    return seen


class CompileProgress(numba.core.event.Listener):
    """While the engine compiles (the first run after installing): a progress bar of the engine's
    functions compiled so far out of those the loop `last` calls (`loop_functions`), naming the one being
    compiled (gpusim.progress: on a terminal, after its delay), from Numba's "numba:compile" events; when
    `last` (the dispatcher compiled last: the engine's loop) is done, the bar closes and one line on
    `stream` says how long it took. Installed by `watch_compile`; it removes itself."""

    def __init__(self, last, stream) -> None:
        from gpusim import progress

        self.last, self.stream, self.t0 = last, stream, time.perf_counter()
        self.mine = loop_functions(last)
        self.done: set[int] = set()
        self.closing = contextlib.ExitStack()
        self.bar = self.closing.enter_context(progress.bar(total=len(self.mine), desc="compiling the timing engine",
                                                           unit="function", stream=stream))

    def on_start(self, event) -> None:
        self.bar.set_postfix_str(event.data["dispatcher"].py_func.__qualname__)

    def on_end(self, event) -> None:
        d = event.data["dispatcher"]
        if id(d) in self.mine and id(d) not in self.done:
            self.done.add(id(d))
            self.bar.update(1)
        if d is self.last:
            numba.core.event.unregister("numba:compile", self)
            self.closing.close()
            n = len(self.done)
            print(f"gpusim: timing engine compiled in {time.perf_counter() - self.t0:.0f} s ({n} function"
                  f"{'' if n == 1 else 's'}), cached in {numba.config.CACHE_DIR}", file=self.stream, flush=True)


def watch_compile(last, stream) -> None:
    """Show the engine's compile as it goes (CompileProgress), until `last` is compiled."""
    numba.core.event.register("numba:compile", CompileProgress(last, stream))


def is_cached(dispatcher) -> bool:
    """Whether Numba's on-disk cache holds machine code for `dispatcher` (for any signature)."""
    try:
        return os.path.exists(dispatcher._cache._cache_file._index_path)
    except AttributeError:  # plain Python (NUMBA_DISABLE_JIT=1), or a Numba without this layout
        return True


# -- units' state as references -------------------------------------------------------------------
# Each unit keeps its state in a NamedTuple of arrays (what Python code reads and the tests build).
# The compiled engine gets the same arrays wrapped in a StructRef per NamedTuple class: a reference,
# so a call passes one pointer rather than the hundreds of arrays a machine holds, and a function's
# type stays small (which keeps Numba's compile time in seconds rather than minutes).

from numba import typeof as _typeof  # noqa: E402
from numba import types as _types  # noqa: E402
from numba.core.extending import intrinsic as _intrinsic  # noqa: E402
from numba.experimental import structref as _structref  # noqa: E402

_TYPES: dict[type, type] = {}


def _prefetch(typingctx, a, i, offset):
    """`prefetch(a, i, offset)`: ask the CPU to bring the cache line at byte `offset` past element `i` of
    `a` (a one-dimensional field, or row i of a larger array) into its caches, without waiting for it
    (LLVM's llvm.prefetch: a hint, never a fault, no effect on any value)."""
    def codegen(context, builder, sig, args):
        from llvmlite import ir

        aty = sig.args[0]
        i8p = ir.IntType(8).as_pointer()
        if isinstance(aty, _types.CPointer):
            base = builder.bitcast(builder.gep(args[0], [args[1]]), i8p)
        else:
            arr = context.make_array(aty)(context, builder, value=args[0])
            stride = builder.extract_value(arr.strides, 0)
            base = builder.gep(builder.bitcast(arr.data, i8p), [builder.mul(args[1], stride)])
        addr = builder.gep(base, [args[2]])
        fn = builder.module.declare_intrinsic("llvm.prefetch", (), ir.FunctionType(
            ir.VoidType(), [i8p, ir.IntType(32), ir.IntType(32), ir.IntType(32)]))
        i32 = ir.IntType(32)
        builder.call(fn, [addr, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()
    if isinstance(a, (_types.CPointer, _types.Array)) and isinstance(i, _types.Integer) and isinstance(
            offset, _types.Integer):
        return _types.none(a, _types.intp, _types.intp), codegen
    return None


JIT = not numba.config.DISABLE_JIT  # compiled (a constant inside compiled code)

if JIT:
    from numba.cpython.unsafe.numbers import trailing_zeros as lowest_bit  # noqa: E402
else:
    def lowest_bit(m):
        """The index of the lowest set bit of `m` (> 0): a bit set's first member."""
        return (int(m) & -int(m)).bit_length() - 1

if not JIT:
    def prefetch(a, i, offset):
        """(plain Python: nothing to prefetch)"""
else:
    prefetch = _intrinsic(_prefetch)


def _preprocess_fields(self, fields):
    return tuple((name, _types.unliteral(typ)) for name, typ in fields)


def struct_type(cls: type) -> type:
    """Register a StructRef type (and its Python proxy) with the fields of NamedTuple class `cls`.
    Called at import by each unit's module, so the on-disk cache finds the types by name."""
    sr_type = _TYPES.get(cls)
    if sr_type is None:
        if not cls.__module__.startswith("gpusim."):
            # (the cached constructor's index names every type it was built for: a type that is not
            # registered when gpusim is imported would make the index unreadable for every later run)
            raise TypeError(f"{cls.__qualname__}: only gpusim's own units have engine views")
        g = globals()
        tname, pname = f"{cls.__name__}Type", f"{cls.__name__}Ref"
        sr_type = type(tname, (_types.StructRef,), {"preprocess_fields": _preprocess_fields,
                                                    "__module__": __name__, "__qualname__": tname})
        _structref.register(sr_type)
        proxy = type(pname, (_structref.StructRefProxy,), {"__module__": __name__, "__qualname__": pname})
        _structref.define_boxing(sr_type, proxy)
        g[tname], g[pname] = sr_type, proxy
        _TYPES[cls] = sr_type
    return sr_type


# -- a unit's state seen from inside another's ------------------------------------------------------
# The machine holds its units, and a cache its tag arrays, as borrowed references: a bare pointer to
# the unit's fields, not a counted reference. Reading `M.W` on the issue path then costs a load rather
# than an atomic increment and decrement of a reference count (which took about a quarter of the
# engine's time). The Python side keeps the units alive (`to_struct` attaches them to their owner).

from numba.core import cgutils as _cgutils  # noqa: E402
from numba.core import imputils as _imputils  # noqa: E402
from numba.core.extending import register_model as _register_model  # noqa: E402
from numba.core.typing.templates import AttributeTemplate as _AttributeTemplate  # noqa: E402
from numba.core.typing.templates import infer_getattr as _infer_getattr  # noqa: E402
from numba.extending import models as _models  # noqa: E402


class Borrowed(_types.Type):
    """A unit's StructRef seen through a bare pointer to its fields (no reference count)."""

    def __init__(self, struct):
        self.struct = struct
        super().__init__(name=f"Borrowed[{struct}]")


@_register_model(Borrowed)
class _BorrowedModel(_models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        data = dmm.lookup(fe_type.struct.get_data_type()).get_value_type()
        super().__init__(dmm, fe_type, data.as_pointer())


@_infer_getattr
class _BorrowedAttribute(_AttributeTemplate):
    key = Borrowed

    def generic_resolve(self, typ, attr):
        return typ.struct.field_dict.get(attr)


def _fields(context, builder, typ, ptr):
    return _cgutils.create_struct_proxy(typ.struct.get_data_type())(context, builder, ref=ptr)


@_imputils.lower_getattr_generic(Borrowed)
def _borrowed_getattr(context, builder, typ, val, attr):
    ret = getattr(_fields(context, builder, typ, val), attr)
    return _imputils.impl_ret_borrowed(context, builder, typ.struct.field_dict[attr], ret)


@_imputils.lower_setattr_generic(Borrowed)
def _borrowed_setattr(context, builder, sig, args, attr):
    typ, val_type = sig.args
    data = _fields(context, builder, typ, args[0])
    field_type = typ.struct.field_dict[attr]
    val = context.cast(builder, args[1], val_type, field_type)
    old = getattr(data, attr)
    context.nrt.incref(builder, field_type, val)
    context.nrt.decref(builder, field_type, old)
    setattr(data, attr, val)


class HeldArray(_types.Array):
    """A unit's multi-dimensional array as the engine sees it: indexed like any array, but without a
    reference count (the unit's NamedTuple owns it), so reading `P.queued[g, p]` on every cycle costs
    no call into Numba's runtime."""

    def __init__(self, dtype, ndim, layout):
        super().__init__(dtype, ndim, layout, name=f"held array({dtype}, {ndim}d, {layout})")


@_register_model(HeldArray)
class _HeldArrayModel(_models.StructModel):
    def __init__(self, dmm, fe_type):
        ndim = fe_type.ndim
        members = [("meminfo", _types.voidptr),  # (an array's layout; the handle is not counted)
                   ("parent", _types.pyobject), ("nitems", _types.intp), ("itemsize", _types.intp),
                   ("data", _types.CPointer(fe_type.dtype)), ("shape", _types.UniTuple(_types.intp, ndim)),
                   ("strides", _types.UniTuple(_types.intp, ndim))]
        super().__init__(dmm, fe_type, members)


# Indexing a HeldArray by integers: the element's address from the indices and the strides, without
# Numba's wrap-around of negative indices (every index the engine uses is a slot, a unit or a count, never
# negative; a slice or an array index goes the ordinary way). The issue path indexes two-dimensional
# state (`P.queued[g, p]`, `W.sb_ready[w, r]`) several times per instruction.

import operator as _operator  # noqa: E402

from numba.np import arrayobj as _arrayobj  # noqa: E402


def _integer_index(aty, ity):
    """The index types as a tuple if `ity` indexes one element of `aty` by integers, else None."""
    tys = tuple(ity) if isinstance(ity, _types.BaseTuple) else (ity,)
    if len(tys) == aty.ndim and all(isinstance(t, _types.Integer) for t in tys):
        return tys
    return None


def _element(context, builder, aty, ary, tys, idx):
    """A pointer to element `idx` (integers of types `tys`, not negative) of HeldArray `ary`."""
    from llvmlite import ir

    arr = context.make_array(aty)(context, builder, value=ary)
    idxs = _cgutils.unpack_tuple(builder, idx, len(tys)) if isinstance(idx.type, ir.BaseStructType) or isinstance(
        idx.type, ir.ArrayType) else [idx]
    strides = _cgutils.unpack_tuple(builder, arr.strides, aty.ndim)
    intp = context.get_value_type(_types.intp)
    offset = ir.Constant(intp, 0)
    for k, (ty, ix) in enumerate(zip(tys, idxs, strict=True)):
        if k == aty.ndim - 1 and aty.layout == "C":
            stride = ir.Constant(intp, context.get_abi_sizeof(context.get_data_type(aty.dtype)))
        else:
            stride = strides[k]
        offset = builder.add(offset, builder.mul(context.cast(builder, ix, ty, _types.intp), stride))
    i8p = ir.IntType(8).as_pointer()
    return builder.bitcast(builder.gep(builder.bitcast(arr.data, i8p), [offset]), arr.data.type)


@_imputils.lower_builtin(_operator.getitem, HeldArray, _types.Integer)
@_imputils.lower_builtin(_operator.getitem, HeldArray, _types.BaseTuple)
def _held_getitem(context, builder, sig, args):
    aty, ity = sig.args
    tys = _integer_index(aty, ity)
    if tys is None:
        if isinstance(ity, _types.BaseTuple):
            return _arrayobj.getitem_array_tuple(context, builder, sig, args)
        return _arrayobj.getitem_arraynd_intp(context, builder, sig, args)
    ptr = _element(context, builder, aty, args[0], tys, args[1])
    return _imputils.impl_ret_borrowed(context, builder, sig.return_type,
                                       _arrayobj.load_item(context, builder, aty, ptr))


@_imputils.lower_builtin(_operator.setitem, HeldArray, _types.Any, _types.Any)
def _held_setitem(context, builder, sig, args):
    aty, ity, vty = sig.args
    tys = _integer_index(aty, ity)
    if tys is None or not isinstance(vty, (_types.Number, _types.Boolean)):
        return _arrayobj.setitem_array(context, builder, sig, args)
    ptr = _element(context, builder, aty, args[0], tys, args[1])
    _arrayobj.store_item(context, builder, aty, context.cast(builder, args[2], vty, aty.dtype), ptr)
    return context.get_dummy_value()


@_intrinsic
def _fill(typingctx, ref, values):
    """Store the fields of the NamedTuple `values` into the StructRef `ref` (same names, same order).
    A one-dimensional array is stored as a bare pointer to its first element (`_field_type`), a
    larger one as a HeldArray (its reference-count handle null), a unit inside this one as a Borrowed
    pointer to its fields: the NamedTuples the caller keeps hold them alive, and the engine's reads of
    a unit's state cost no reference counting."""
    def codegen(context, builder, sig, args):
        from llvmlite import ir

        ref_ty, tup_ty = sig.args
        data = _structref._Utils(context, builder, ref_ty).get_data_struct(args[0])
        for i, name in enumerate(tup_ty.fields):
            ty = tup_ty.types[i]
            val = builder.extract_value(args[1], i)
            if isinstance(ref_ty.field_dict[name], Borrowed):  # a unit inside this one
                val = _structref._Utils(context, builder, ty).get_data_pointer(val)
            elif isinstance(ty, _types.Array):
                arr = context.make_array(ty)(context, builder, value=val)
                if isinstance(ref_ty.field_dict[name], _types.CPointer):
                    val = arr.data
                else:
                    arr.meminfo = ir.Constant(arr.meminfo.type, None)
                    val = arr._getvalue()
            else:
                context.nrt.incref(builder, ty, val)
            setattr(data, name, val)
        return context.get_dummy_value()
    return _types.void(ref, values), codegen


def _field_type(value):
    """How the engine sees a field: a contiguous one-dimensional array as a pointer to its elements
    (indexing it is all the engine does), another array as a HeldArray, anything else as itself."""
    if type(value) is np.ndarray:  # (a machine has hundreds, re-wrapped at every refill that moves one)
        f = value.flags  # what Numba's type of an array depends on, besides its dtype and rank
        key = (value.dtype, value.ndim, f.c_contiguous, f.f_contiguous, f.writeable, f.aligned)
        ty = _ARRAY_FIELDS.get(key)
        if ty is None:
            ty = _ARRAY_FIELDS[key] = _type_of_field(value)
        return ty
    return _type_of_field(value)


_ARRAY_FIELDS: dict = {}


def _type_of_field(value):
    ty = _types.unliteral(_typeof(value))
    if isinstance(ty, _types.Array) and ty.ndim == 1 and ty.layout == "C" and ty.dtype != _types.boolean:
        return _types.CPointer(ty.dtype)
    if isinstance(ty, _types.Array):
        return HeldArray(ty.dtype, ty.ndim, ty.layout)
    return ty


@numba.njit(cache=True)
def _make(tp, values):
    ref = _structref.new(tp)
    _fill(ref, values)
    return ref


def engine_type(state, memo: dict | None = None):
    """The Numba type of `to_struct(state)`, worked out from the NamedTuples without building a view (so
    without compiling the constructors `_make`): what `to_struct` builds its view as, and what the engine's
    loop is compiled for before the first machine is wrapped. A unit inside this one is a Borrowed view
    (its type taken from `memo`, to_struct's, where it was converted before)."""
    cls = type(state)
    fields = []
    for name, v in zip(cls._fields, state, strict=True):
        if type(v) in _TYPES:
            hit = memo.get(id(v)) if memo is not None else None
            fields.append((name, Borrowed(hit[2] if hit is not None and hit[0] is v else engine_type(v, memo))))
        else:
            fields.append((name, _field_type(v)))
    return struct_type(cls)(fields)


def to_struct(state, memo: dict | None = None):
    """The engine's view of a unit's NamedTuple state (nested NamedTuples converted too); the arrays
    are shared, so the engine's writes are seen through the NamedTuple. The caller must keep `state`
    alive while the engine uses the result (the result does not own the arrays). With `memo` (a dict
    the caller keeps), a unit converted before and not replaced since keeps its view: re-wrapping a
    machine after the feeder replaced its stream pool converts only the pool."""
    if numba.config.DISABLE_JIT:
        return state  # plain Python reads the NamedTuple's arrays directly
    if memo is not None:
        hit = memo.get(id(state))
        if hit is not None and hit[0] is state:
            return hit[1]
    cls = type(state)
    values = cls(*(to_struct(v, memo) if type(v) in _TYPES else v for v in state))
    ty = engine_type(state, memo)
    ref = _make(ty, values)
    ref._units = values  # the units it borrows live as long as it does
    if memo is not None:
        memo[id(state)] = (state, ref, ty)
    return ref


@njit
def sort_prefix(a, n):
    """Sort a[:n] in place (insertion sort: linear on the nearly sorted per-lane addresses of a warp,
    and no allocation, unlike np.sort)."""
    for i in range(1, n):
        x = a[i]
        j = i - 1
        while j >= 0 and a[j] > x:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = x
