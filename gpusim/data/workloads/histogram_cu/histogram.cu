// 256-bin histogram of n bytes: a private histogram per block in shared memory (shared atomics), then
// the block's non-zero bins added to the global one (port of histogram; grid-stride loop).
__global__ void histogram(const unsigned char* data, unsigned n, unsigned* hist)
{
    __shared__ unsigned bins[256];
    for (unsigned b = threadIdx.x; b < 256; b += blockDim.x)
        bins[b] = 0;
    __syncthreads();
    unsigned stride = gridDim.x * blockDim.x;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        atomicAdd(&bins[data[i]], 1u);
    __syncthreads();
    for (unsigned b = threadIdx.x; b < 256; b += blockDim.x) {
        unsigned c = bins[b];
        if (c != 0)
            atomicAdd(&hist[b], c);
    }
}
