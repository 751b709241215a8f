// A program that calls a runtime function gpusim exec does not implement (texture objects): the call returns
// cudaErrorNotSupported with one line on stderr, and the program's own output goes on.
#include <cstdio>
#include <cuda_runtime.h>

int main() {
    printf("before\n");
    cudaTextureObject_t tex = 0;
    cudaResourceDesc res = {};
    cudaTextureDesc desc = {};
    cudaError_t e = cudaCreateTextureObject(&tex, &res, &desc, nullptr);
    printf("cudaCreateTextureObject: %s\n", cudaGetErrorName(e));
    float *d = nullptr;
    e = cudaMalloc(&d, 64);
    printf("after: cudaMalloc %s\n", cudaGetErrorName(e));
    return 0;
}
