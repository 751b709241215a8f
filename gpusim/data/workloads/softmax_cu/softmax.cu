// Row-wise softmax of a rows x cols float32 matrix, one block per row (port of softmax, 32-lane warps):
//   m = max_j x[j];  e[j] = 2 ** ((x[j] - m) * log2(e));  s = sum_j e[j];  y[j] = e[j] * (1 / s)
// Each reduction: a block-stride loop, __shfl_down_sync within each warp, lane 0 of each warp writes
// shared memory, a barrier, then every thread combines the warps' values in warp order.
#define FULL 0xffffffffu

__global__ void softmax(const float* x, float* y, unsigned cols)
{
    __shared__ float warp_max[32];
    __shared__ float warp_sum[32];
    unsigned t = threadIdx.x, nt = blockDim.x, lane = t % 32, warp = t / 32;
    unsigned nwarps = (nt + 31) / 32;
    unsigned width = min(32u, nt - warp * 32);
    const float* xrow = x + blockIdx.x * cols;
    float* yrow = y + blockIdx.x * cols;

    float m = -INFINITY;
    for (unsigned j = t; j < cols; j += nt)
        m = fmaxf(m, xrow[j]);
    for (unsigned o = 16; o > 0; o >>= 1)
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
    for (unsigned o = 16; o > 0; o >>= 1) {
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
