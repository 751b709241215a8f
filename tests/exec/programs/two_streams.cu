// Two streams, each: a pinned host-to-device copy, a kernel, a device-to-host copy. gpusim exec's timeline
// test (tests/exec/test_programs.py) derives the program's time by hand from the config and the kernels'
// simulated cycles, and compares it with what gpusim reports and with cudaEventElapsedTime here.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void work(float *x, int n, int reps) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    for (int r = 0; r < reps; r++) v = v * 0.5f + 1.0f;  // exact in float: FMA or not, host and device agree
    x[i] = v;
}

int main() {
    const int n = 1 << 16;  // 256 KiB a stream
    const size_t bytes = n * sizeof(float);
    float *h[2], *d[2];
    cudaStream_t s[2];
    for (int k = 0; k < 2; k++) {
        cudaMallocHost(&h[k], bytes);
        cudaMalloc(&d[k], bytes);
        cudaStreamCreate(&s[k]);
        for (int i = 0; i < n; i++) h[k][i] = (float)(i % 100);
    }
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    cudaEventRecord(start, 0);
    for (int k = 0; k < 2; k++) {
        cudaMemcpyAsync(d[k], h[k], bytes, cudaMemcpyHostToDevice, s[k]);
        work<<<n / 256, 256, 0, s[k]>>>(d[k], n, 8 * (k + 1));
        cudaMemcpyAsync(h[k], d[k], bytes, cudaMemcpyDeviceToHost, s[k]);
    }
    cudaEventRecord(stop, 0);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    int bad = 0;
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < n; i++) {
            float v = (float)(i % 100);
            for (int r = 0; r < 8 * (k + 1); r++) v = v * 0.5f + 1.0f;  // exact in float: FMA or not, host and device agree
            bad += h[k][i] != v;
        }
    printf("elapsed_ms %.9g\n%d mismatches\n", ms, bad);
    return bad != 0;
}
