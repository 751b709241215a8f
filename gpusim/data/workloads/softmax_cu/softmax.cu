// Row-wise softmax of a rows x cols float32 matrix, one block per row, any warp size (port of softmax):
//   m = max_j x[j];  e[j] = 2 ** ((x[j] - m) * log2(e));  s = sum_j e[j];  y[j] = e[j] * (1 / s)
// Each reduction: a block-stride loop, __shfl_down_sync within each warp at offsets 32, 16, ..., 1 (a warp
// has at most 64 lanes; a lane adds only where the source lane exists, max may take its own value again), lane 0 of each warp writes shared memory, a
// barrier, then every thread combines the warps' values in warp order (so all get the same value).
#define FULL 0xffffffffu

__global__ void softmax(const float* x, float* y, unsigned cols)
{
    __shared__ float warp_max[256];  // one per warp: a block has at most 256 warps
    __shared__ float warp_sum[256];
    unsigned t = threadIdx.x, nt = blockDim.x, lane = t % warpSize, warp = t / warpSize;
    unsigned nwarps = (nt + warpSize - 1) / warpSize;
    unsigned width = min((unsigned)warpSize, nt - warp * warpSize);
    const float* xrow = x + blockIdx.x * cols;
    float* yrow = y + blockIdx.x * cols;

    float m = -INFINITY;
    for (unsigned j = t; j < cols; j += nt)
        m = fmaxf(m, xrow[j]);
#pragma unroll
    for (unsigned o = 32; o > 0; o >>= 1)
        m = fmaxf(m, __shfl_down_sync(FULL, m, o));
    if (lane == 0)
        warp_max[warp] = m;
    __syncthreads();
    m = warp_max[0];
    for (unsigned w = 1; w < nwarps; ++w)
        m = fmaxf(m, warp_max[w]);

    float s = 0.0f;
    for (unsigned j = t; j < cols; j += nt) {
        float e = exp2f((xrow[j] - m) * 1.44269504f);
        s += e;
        yrow[j] = e;
    }
#pragma unroll
    for (unsigned o = 32; o > 0; o >>= 1) {
        float v = __shfl_down_sync(FULL, s, o);
        if (lane + o < width)
            s += v;
    }
    if (lane == 0)
        warp_sum[warp] = s;
    __syncthreads();
    s = warp_sum[0];
    for (unsigned w = 1; w < nwarps; ++w)
        s += warp_sum[w];

    float r = __frcp_rn(s);
    for (unsigned j = t; j < cols; j += nt)
        yrow[j] *= r;
}
