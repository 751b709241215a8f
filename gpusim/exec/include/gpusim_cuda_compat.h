/* Declarations CUDA 13 removed from its headers and older benchmark suites still call (Rodinia's
   cudaThreadSynchronize). gpusim's runtime exports them; build such a program unmodified with
     nvcc -cudart shared -include "$(gpusim exec --include-dir)/gpusim_cuda_compat.h" ...
   (docs/exec.md). */
#ifndef GPUSIM_CUDA_COMPAT_H
#define GPUSIM_CUDA_COMPAT_H
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif
extern __host__ cudaError_t CUDARTAPI cudaThreadSynchronize(void);
extern __host__ cudaError_t CUDARTAPI cudaThreadExit(void);
extern __host__ cudaError_t CUDARTAPI cudaThreadGetLimit(size_t *value, enum cudaLimit limit);
extern __host__ cudaError_t CUDARTAPI cudaThreadSetLimit(enum cudaLimit limit, size_t value);
extern __host__ cudaError_t CUDARTAPI cudaThreadGetCacheConfig(enum cudaFuncCache *config);
extern __host__ cudaError_t CUDARTAPI cudaThreadSetCacheConfig(enum cudaFuncCache config);
#ifdef __cplusplus
}
#endif
#endif
