// C = A @ B for square n x n float32 matrices through 16x16 shared-memory tiles; partial tiles are
// zero-padded (port of matmul_tiled; block 16 x 16, grid ceil(n/16) x ceil(n/16)).
#define TILE 16

__global__ void matmul_tiled(const float* A, const float* B, float* C, unsigned n)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    unsigned tx = threadIdx.x, ty = threadIdx.y;
    unsigned row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (unsigned t = 0; t < n; t += TILE) {
        As[ty][tx] = (row < n && t + tx < n) ? A[row * n + t + tx] : 0.0f;
        Bs[ty][tx] = (t + ty < n && col < n) ? B[(t + ty) * n + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k)
            acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < n && col < n)
        C[row * n + col] = acc;
}
