"""`verify.compare` looks with np.isclose only where the outputs are not equal: the same verdicts as
np.isclose over the whole buffer (tolerances, NaN equal to NaN, infinities, float32 against float64,
a broadcast expectation), the same first indices and values, whether a buffer is one chunk or many."""

import numpy as np
import pytest

from gpusim.workloads import verify
from gpusim.workloads.verify import compare


@pytest.mark.parametrize("shape", [(50,), (7, 9), (3, 4, 5)])
@pytest.mark.parametrize("exp_dtype", [np.float32, np.float64])
@pytest.mark.parametrize("chunk", [verify.CHUNK, 7, 1])
def test_compare_flags_exactly_what_isclose_over_the_whole_buffer_flags(shape, exp_dtype, chunk, monkeypatch):
    monkeypatch.setattr(verify, "CHUNK", chunk)
    rng = np.random.default_rng(sum(shape))
    for trial in range(20):
        got = rng.standard_normal(shape).astype(np.float32)
        exp = got.astype(exp_dtype)
        k = rng.choice(got.size, 16, replace=False)
        flat = exp.reshape(-1)
        flat[k[:2]] += [1e-9, 1e-3][trial % 2], 1.0  # within the tolerance, or not; far off
        flat[k[2]] = np.nan
        if trial % 2:
            got.reshape(-1)[k[2]] = np.nan  # NaN against NaN: equal
        got.reshape(-1)[k[3]] = np.inf
        flat[k[3]] = np.inf if trial % 4 < 2 else -np.inf
        flat[k[4:]] += 1.0  # more than MAX_SHOWN mismatches, across chunks when chunks are small
        want = ~np.isclose(got, exp, rtol=1e-5, atol=1e-6, equal_nan=True)
        m = compare({"o": got}, {"o": exp}, rtol=1e-5, atol=1e-6)
        assert m["o"]["count"] == int(want.sum()) > 0
        first = np.flatnonzero(want)[:10]
        assert m["o"]["got"] == got.reshape(-1)[first].tolist()
        idx = [int(i) for i in first] if len(shape) == 1 else [tuple(int(c) for c in t) for t in
                                                               zip(*np.unravel_index(first, shape), strict=True)]
        assert m["o"]["first_indices"] == idx


def test_compare_equal_broadcast_and_integer_buffers():
    assert compare({"s": np.ones(4, np.float32)}, {"s": np.float32(1)}, rtol=0, atol=0) == {}
    m = compare({"s": np.array([1, 1, 2], np.float32)}, {"s": np.float32(1)}, rtol=0, atol=0)
    assert m["s"]["count"] == 1 and m["s"]["first_indices"] == [2] and m["s"]["expected"] == [1.0]
    ints = np.arange(30)
    m = compare({"i": ints}, {"i": ints + (ints == 3)}, rtol=1, atol=1)  # integers: exact, whatever the tolerance
    assert m["i"]["count"] == 1 and m["i"]["first_indices"] == [3]
