// Exits with the status given on its command line (gpusim exec passes it through), after one kernel.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void touch(int *x) { x[threadIdx.x] = threadIdx.x; }

int main(int argc, char **argv) {
    int *d = nullptr;
    cudaMalloc(&d, 32 * sizeof(int));
    touch<<<1, 32>>>(d);
    cudaDeviceSynchronize();
    fprintf(stderr, "to stderr\n");
    printf("to stdout\n");
    return argc > 1 ? atoi(argv[1]) : 0;
}
