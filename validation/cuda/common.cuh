// Shared by microbench.cu and kernels.cu: error checking that reports in the programs' JSON-lines
// format, and the median of a sample.
#pragma once
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

// Every CUDA call is checked; an error ends the program with a {"section": "error", ...} line.
#define CK(call)                                                                          \
  do {                                                                                    \
    cudaError_t e_ = (call);                                                              \
    if (e_ != cudaSuccess) {                                                              \
      printf("{\"section\": \"error\", \"where\": \"%s:%d\", \"call\": \"%s\", \"error\": \"%s\"}\n", \
             __FILE__, __LINE__, #call, cudaGetErrorString(e_));                          \
      fflush(stdout);                                                                     \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)
#define CKL() CK(cudaGetLastError())

static inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Times of `reps` event-bracketed launches (ms) after `warm` untimed ones; launch(k) is called with
// k = 0, 1, 2, ... across both, so a caller can rotate buffers with k % copies.
template <class F>
static inline std::vector<double> time_events(F launch, int warm, int reps) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  for (int i = 0; i < warm; i++) launch(i);
  CKL();
  CK(cudaDeviceSynchronize());
  std::vector<double> ms;
  for (int i = 0; i < reps; i++) {
    CK(cudaEventRecord(a));
    launch(warm + i);
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    CKL();
    float t;
    CK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  return ms;
}
