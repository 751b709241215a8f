// partial[blockIdx.x] = sum of the block's blockDim.x elements of x (past n: 0). Shared-memory tree
// with a barrier after every step; blockDim.x a power of two, at most 1024 (port of reduce_sum).
__global__ void reduce_sum(const float* x, float* partial, unsigned n)
{
    __shared__ float sdata[1024];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + tid;
    sdata[tid] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        partial[blockIdx.x] = sdata[0];
}
