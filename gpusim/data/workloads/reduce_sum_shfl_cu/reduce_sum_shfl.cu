// partial[blockIdx.x] = sum of the block's blockDim.x elements of x (past n: 0), any block size up to 1024
// and any warp size (warpSize: PTX's WARP_SZ, the config's sm.warp_size) - port of reduce_sum_shfl:
// 1. each warp sums with __shfl_down_sync at offsets 32, 16, ..., 1 (a warp has at most 64 lanes), a lane
//    adding only where the source lane exists (the warp is warpSize wide, narrower if it is the block's
//    last, partial one); 2. lane 0 of each warp writes warpsum[warp];
// 3. after the barrier, warp 0 gathers warpsum[lane], warpsum[lane + warpSize], ... and sums again.
#define FULL 0xffffffffu

__device__ float warp_sum(float v, unsigned lane, unsigned width)
{
#pragma unroll
    for (unsigned o = 32; o > 0; o >>= 1) {
        float t = __shfl_down_sync(FULL, v, o);
        if (lane + o < width)
            v += t;
    }
    return v;
}

__global__ void reduce_sum_shfl(const float* x, float* partial, unsigned n)
{
    __shared__ float warpsum[256];  // one per warp: a block has at most 256 warps
    unsigned tid = threadIdx.x, lane = tid % warpSize, warp = tid / warpSize;
    unsigned i = blockIdx.x * blockDim.x + tid;
    unsigned width = min((unsigned)warpSize, blockDim.x - warp * warpSize);  // this warp's lanes
    float v = warp_sum(i < n ? x[i] : 0.0f, lane, width);
    if (lane == 0)
        warpsum[warp] = v;
    __syncthreads();
    if (warp != 0)
        return;
    unsigned nwarps = (blockDim.x + warpSize - 1) / warpSize;
    v = 0.0f;
    for (unsigned j = lane; j < nwarps; j += warpSize)
        v += warpsum[j];
    v = warp_sum(v, lane, width);
    if (lane == 0)
        partial[blockIdx.x] = v;
}
