"""Rewrite the checked-in PTX of kernels.py: `python tests/isa/ptx_fixtures/generate.py` from the repository
root, in an environment with numba-cuda (numba_*.ptx) and/or triton (triton_*.ptx, num_warps 4, sm_80; the
matmul with num_stages 3 and its arguments 16-divisible, as kernels.MATMUL_OPTIONS says)."""

import sys
from pathlib import Path

here = Path(__file__).parent
sys.path.insert(0, str(here))
sys.path.insert(0, str(here.parents[2]))
import kernels  # noqa: E402

for name, (fn, sig) in kernels.NUMBA.items():
    from numba import cuda

    ptx, _ = cuda.compile_ptx(fn.py_func, sig, cc=(8, 0), lineinfo=True)
    (here / f"numba_{name}.ptx").write_text(ptx)
for name, (fn, sig, consts, *more) in kernels.TRITON.items():
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    opts = dict(more[0]) if more else {}
    # as gpusim.kernel_launch.triton_attrs: the `aligned` arguments divisible by 16
    attrs = {(list(sig).index(a),): [["tt.divisibility", 16]] for a in opts.pop("aligned", ())}
    k = triton.compile(ASTSource(fn=fn, signature=sig, constexprs=consts, attrs=attrs),
                       target=GPUTarget("cuda", 80, 32), options={"num_warps": 4, **opts})
    (here / f"triton_{name}.ptx").write_text(k.asm["ptx"])
    print(name, "shared bytes", k.metadata.shared)
