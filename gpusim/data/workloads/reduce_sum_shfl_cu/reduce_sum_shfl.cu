// partial[blockIdx.x] = sum of the block's blockDim.x elements of x (past n: 0), any block size up to
// 1024 (port of reduce_sum_shfl, for 32-lane warps): each warp sums with __shfl_down_sync, a lane
// adding only where the source lane exists (the block's last warp may be partial); lane 0 of each warp
// writes warpsum[warp]; after the barrier warp 0 sums the warps' sums the same way.
#define FULL 0xffffffffu

__device__ float warp_sum(float v, unsigned lane, unsigned width)
{
    for (unsigned o = 16; o > 0; o >>= 1) {
        float t = __shfl_down_sync(FULL, v, o);
        if (lane + o < width)
            v += t;
    }
    return v;
}

__global__ void reduce_sum_shfl(const float* x, float* partial, unsigned n)
{
    __shared__ float warpsum[32];
    unsigned tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    unsigned i = blockIdx.x * blockDim.x + tid;
    unsigned width = min(32u, blockDim.x - warp * 32);  // this warp's lanes
    float v = warp_sum(i < n ? x[i] : 0.0f, lane, width);
    if (lane == 0)
        warpsum[warp] = v;
    __syncthreads();
    if (warp != 0)
        return;
    unsigned nwarps = (blockDim.x + 31) / 32;
    v = warp_sum(lane < nwarps ? warpsum[lane] : 0.0f, lane, width);
    if (lane == 0)
        partial[blockIdx.x] = v;
}
