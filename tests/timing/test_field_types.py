"""The engine's view of a field is typed from a memo of array types (`jit._field_type`): a machine has
hundreds of arrays and is re-wrapped at every refill that moves one, and Numba's `typeof` of each cost
several percent of a run. The memo must give the type `typeof` gives, for every array it may be asked."""

import numpy as np
import pytest

from gpusim.timing import jit

pytestmark = pytest.mark.skipif(not jit.JIT, reason="plain Python reads the NamedTuples directly")


def _arrays():
    base = np.arange(24, dtype=np.int64).reshape(4, 6)
    ro = np.zeros(8, np.int32)
    ro.flags.writeable = False
    raw = np.zeros(8 * 8 + 1, np.uint8)
    return [np.zeros(8, np.int64), np.zeros(8, np.int32), np.zeros(8, np.bool_), np.zeros(8, np.float64), base,
            np.asfortranarray(base), base[:, ::2], base[::2], base[:, 1], ro,
            raw[1:].view(np.int64),  # (unaligned)
            np.zeros((3, 3), np.bool_), np.zeros(0, np.int64), np.zeros((1, 1), np.int64)]


def test_memo_gives_typeof_for_each_array_in_any_order():
    arrays = _arrays()
    for order in (arrays, arrays[::-1]):
        jit._ARRAY_FIELDS.clear()
        for a in order:
            assert jit._field_type(a) == jit._type_of_field(a), (a.dtype, a.shape, a.flags)


def test_arrays_that_differ_only_in_layout_get_different_types():
    jit._ARRAY_FIELDS.clear()
    c = np.zeros((4, 6), np.int64)
    kinds = {jit._field_type(c), jit._field_type(np.asfortranarray(c)), jit._field_type(c[:, ::2])}
    assert len(kinds) == 3
    assert jit._field_type(np.zeros(8, np.int64)) != jit._field_type(np.zeros(8, np.int64)[::2])


def test_a_view_rewrapped_with_its_memo_has_the_type_of_a_fresh_one():
    """gpu.py re-wraps the machine with the memo of views after the feeder replaced the stream pool: only
    the pool is converted again, and the view's type is the one the loop was compiled for."""
    import numba

    from gpusim.timing import _warm_up_kernel

    gpu, prog, launch, streams, cfg = _warm_up_kernel()
    M, stage, _ = gpu.build(prog, launch)
    M, Ms, E, events, feeder, views = gpu.begin(M, stage, streams, compile_engine=False)
    moved = M._replace(streams=M.streams._replace(pc=np.zeros(16, np.int32)))
    again = jit.to_struct(moved, views)
    assert again is not Ms
    assert numba.typeof(again) == numba.typeof(Ms) == jit.engine_type(M) == jit.engine_type(moved)
    assert views[id(M.W)][1] is Ms._units.W  # (the warps' view kept, not rebuilt)
