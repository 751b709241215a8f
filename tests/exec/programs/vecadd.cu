// gpusim exec's smallest test program: a vector add with its own check against the CPU.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void vecadd(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    size_t bytes = n * sizeof(float);
    float *a = (float *)malloc(bytes), *b = (float *)malloc(bytes), *c = (float *)malloc(bytes);
    for (int i = 0; i < n; i++) { a[i] = i * 0.5f; b[i] = 2.0f * i; }
    float *da, *db, *dc;
    cudaMalloc(&da, bytes); cudaMalloc(&db, bytes); cudaMalloc(&dc, bytes);
    cudaMemcpy(da, a, bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(db, b, bytes, cudaMemcpyHostToDevice);
    vecadd<<<(n + 255) / 256, 256>>>(da, db, dc, n);
    cudaError_t e = cudaMemcpy(c, dc, bytes, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int i = 0; i < n; i++) if (c[i] != a[i] + b[i]) bad++;
    printf("vecadd n=%d: %s, %d mismatches\n", n, cudaGetErrorString(e), bad);
    cudaFree(da); cudaFree(db); cudaFree(dc);
    return bad ? 1 : 0;
}
