"""The Numba and Triton kernels whose PTX is checked in beside this file (numba_*.ptx, triton_*.ptx), the
same kernels the live tests compile where numba-cuda / triton are installed. generate.py rewrites the PTX."""

try:
    from numba import cuda, float32

    @cuda.jit
    def saxpy(a, x, y):
        i = cuda.grid(1)
        if i < x.size:
            y[i] = a * x[i] + y[i]

    @cuda.jit
    def block_sum(x, partial):  # one block's 256 elements summed in shared memory, a tree of halvings
        buf = cuda.shared.array(256, float32)
        t = cuda.threadIdx.x
        i = cuda.grid(1)
        buf[t] = x[i] if i < x.size else float32(0.0)
        cuda.syncthreads()
        s = 128
        while s > 0:
            if t < s:
                buf[t] += buf[t + s]
            cuda.syncthreads()
            s //= 2
        if t == 0:
            partial[cuda.blockIdx.x] = buf[0]

    NUMBA = {"saxpy": (saxpy, "void(float32, float32[:], float32[:])"),
             "block_sum": (block_sum, "void(float32[:], float32[:])")}
except ImportError:
    NUMBA = {}

try:
    import triton
    import triton.language as tl

    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, x + y, mask=mask)

    @triton.jit
    def softmax_kernel(out_ptr, in_ptr, n_cols, BLOCK: tl.constexpr):  # one program a row
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(in_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
        x = x - tl.max(x, axis=0)
        e = tl.exp(x)
        tl.store(out_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)

    @triton.jit
    def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                      BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        """C = A @ B, f16 in, f32 accumulate (tl.dot: mma.sync on sm_80), one BM x BN tile of C a program;
        A, B, C row-major, M, N, K multiples of the tiles."""
        pid_m, pid_n = tl.program_id(0), tl.program_id(1)
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :]
        b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :]
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for _ in range(0, K, BK):
            acc += tl.dot(tl.load(a_ptrs), tl.load(b_ptrs))
            a_ptrs += BK
            b_ptrs += BK * stride_bk
        tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc)

    MATMUL_SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32",
                  "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32", "BM": "constexpr", "BN": "constexpr",
                  "BK": "constexpr"}
    # every argument but the constexprs divisible by 16 (what Triton's launcher finds for 16-aligned arrays
    # and sizes that are multiples of 16): the loads vectorise into 16-byte cp.async copies
    MATMUL_OPTIONS = {"num_stages": 3, "aligned": [a for a, t in MATMUL_SIG.items() if t != "constexpr"]}

    TRITON = {"add": (add_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32",
                                   "BLOCK": "constexpr"}, {"BLOCK": 1024}),
              "softmax": (softmax_kernel, {"out_ptr": "*fp32", "in_ptr": "*fp32", "n_cols": "i32",
                                           "BLOCK": "constexpr"}, {"BLOCK": 256}),
              "matmul": (matmul_kernel, MATMUL_SIG, {"BM": 64, "BN": 64, "BK": 32}, MATMUL_OPTIONS)}
except ImportError:
    TRITON = {}
