// dst (cols x rows) = transpose of src (rows x cols) through a 32x32 shared tile padded to 33 columns,
// coalesced reads and writes (port of transpose_shared; block 32 x by, by divides 32).
__global__ void transpose_shared(const float* src, float* dst, unsigned rows, unsigned cols)
{
    __shared__ float tile[32][33];
    unsigned x = blockIdx.x * 32 + threadIdx.x;
    for (unsigned j = threadIdx.y; j < 32; j += blockDim.y) {
        unsigned y = blockIdx.y * 32 + j;
        if (x < cols && y < rows)
            tile[j][threadIdx.x] = src[y * cols + x];
    }
    __syncthreads();
    unsigned ox = blockIdx.y * 32 + threadIdx.x;  // a column of dst: a row of src
    for (unsigned j = threadIdx.y; j < 32; j += blockDim.y) {
        unsigned oy = blockIdx.x * 32 + j;
        if (ox < rows && oy < cols)
            dst[oy * rows + ox] = tile[threadIdx.x][j];
    }
}
