"""gpusim.launch: numpy arrays in, the kernel's results back in the same arrays (as Numba's
`kernel[grid, block](arrays)`), a SimResult out; wrong arguments are one-line errors naming the parameter."""

import numpy as np
import pytest

import gpusim
from gpusim.data import data_dir

VECADD = data_dir("workloads") / "vecadd_cu" / "vecadd.cu"
REDUCE = data_dir("workloads") / "reduce_sum_cu" / "reduce_sum.ptx"


def test_vecadd_writes_back_into_the_numpy_array():
    rng = np.random.default_rng(1)
    n = 1000
    a, b = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    c = np.zeros(n, dtype=np.float32)
    a0 = a.copy()
    r = gpusim.launch(VECADD, grid=4, block=256, args=[a, b, c, np.uint32(n)], config="a100")
    assert np.array_equal(c, a + b) and np.array_equal(a, a0)
    assert isinstance(r, gpusim.SimResult) and r.cycles > 0
    assert r.run.result.stats.threads == 1024 and r.run.result.stats.blocks == 4


def test_shared_memory_reduction_from_ptx_text_in_functional_mode():
    rng = np.random.default_rng(2)
    x = rng.standard_normal(4096).astype(np.float32)
    partial = np.zeros(16, dtype=np.float32)
    run = gpusim.launch(REDUCE.read_text(), 16, 256, [x, partial, 4096], config="gtx980", mode="functional")
    assert np.allclose(partial, x.reshape(16, 256).astype(np.float64).sum(1), rtol=1e-5, atol=1e-4)
    assert run.result.stats.barriers > 0


def test_sasm_kernels_launch_too():
    x = np.arange(100, dtype=np.float32)
    y = np.ones(100, dtype=np.float32)
    saxpy = data_dir("workloads") / "saxpy" / "saxpy.sasm"
    gpusim.launch(saxpy, 1, 128, [x, y, np.float32(2.0), 100], mode="functional")
    assert np.array_equal(y, 2 * x + 1)


@pytest.mark.parametrize(("args", "message"), [
    ([np.zeros(4, np.float32)] * 3, "launch: args: kernel vecadd takes 4 argument(s) (.u64 _Z6vecaddPKfS0_Pfj_param_0, "
     ".u64 _Z6vecaddPKfS0_Pfj_param_1, .u64 _Z6vecaddPKfS0_Pfj_param_2, .u32 _Z6vecaddPKfS0_Pfj_param_3), got 3"),
    ([np.zeros(4, np.float32)] * 3 + ["4"], "launch: args[3] (.param .u32 _Z6vecaddPKfS0_Pfj_param_3): expected a "
     "numpy array or a number, got str"),
    ([np.zeros(4, np.float32)] * 3 + [np.zeros(1)], "launch: args[3] (.param .u32 _Z6vecaddPKfS0_Pfj_param_3): got an "
     "array for a .u32 parameter; pointers are 64-bit"),
    ([np.zeros(4, np.float32)] * 3 + [1 << 32], "launch: args[3] (.param .u32 _Z6vecaddPKfS0_Pfj_param_3): "
     "4294967296 does not fit .u32"),
    ([np.zeros(4, np.float32)] * 2 + [2.5, 4], "launch: args[2] (.param .u64 _Z6vecaddPKfS0_Pfj_param_2): expected "
     "an integer for .u64, got 2.5"),
    ([np.zeros((4, 4), np.float32)[:, 0]] * 3 + [4], "launch: args[0] (.param .u64 _Z6vecaddPKfS0_Pfj_param_0): the "
     "array is not C-contiguous (pass np.ascontiguousarray(a), which the kernel would write instead of a)"),
])
def test_wrong_arguments_name_the_parameter(args, message):
    with pytest.raises(gpusim.LaunchError) as e:
        gpusim.launch(VECADD, 1, 32, args, mode="functional")
    assert str(e.value) == message


def test_unknown_mode_and_kernel_name():
    with pytest.raises(gpusim.LaunchError, match="unknown mode 'fast'"):
        gpusim.launch(VECADD, 1, 32, [], mode="fast")
    with pytest.raises(gpusim.AssemblyError, match="no kernel is named 'saxpy'"):
        gpusim.launch(VECADD, 1, 32, [], kernel_name="saxpy")
