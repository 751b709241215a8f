/* Declarations CUDA 13 removed from its headers that older benchmark suites still call (Rodinia's and
   PolyBench/GPU's cudaThreadSynchronize). Build such a program unmodified with
     nvcc -cudart shared -include "$(gpusim exec --include-dir)/gpusim_cuda_compat.h" ...
   (docs/exec.md). Each is the call CUDA documented as its replacement, inline, so the program links against
   any libcudart.so.13 (NVIDIA's too) and runs on a GPU as under gpusim. gpusim's runtime also exports the
   old names, for binaries built by older toolkits. */
#ifndef GPUSIM_CUDA_COMPAT_H
#define GPUSIM_CUDA_COMPAT_H
#include <cuda_runtime_api.h>
static inline cudaError_t cudaThreadSynchronize(void) { return cudaDeviceSynchronize(); }
static inline cudaError_t cudaThreadExit(void) { return cudaDeviceReset(); }
static inline cudaError_t cudaThreadGetLimit(size_t *value, enum cudaLimit limit) {
    return cudaDeviceGetLimit(value, limit);
}
static inline cudaError_t cudaThreadSetLimit(enum cudaLimit limit, size_t value) {
    return cudaDeviceSetLimit(limit, value);
}
static inline cudaError_t cudaThreadGetCacheConfig(enum cudaFuncCache *config) {
    return cudaDeviceGetCacheConfig(config);
}
static inline cudaError_t cudaThreadSetCacheConfig(enum cudaFuncCache config) {
    return cudaDeviceSetCacheConfig(config);
}
#endif
