// Double-precision applications for tests/functional/test_f64_kernels.py: a matrix multiply, a Jacobi
// stencil, PolyBench's correlation (means, standard deviations with sqrt, normalisation by division, the
// correlation matrix) and an FP64 throughput loop. f64_apps.ptx beside it is nvcc 13.0's output
// (`nvcc -ptx -arch=sm_80 -lineinfo`), checked in for machines without nvcc.

// C = alpha A B + beta C, n x n, one thread an element (nvcc contracts the dot product into fma.rn.f64)
extern "C" __global__ void dgemm(int n, double alpha, double beta, const double* A, const double* B, double* C) {
  int i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n || j >= n) return;
  double s = 0.0;
  for (int k = 0; k < n; k++) s += A[i * n + k] * B[k * n + j];
  C[i * n + j] = alpha * s + beta * C[i * n + j];
}

// one step of the 2D Jacobi stencil (PolyBench jacobi-2d): B = 0.2 x (A and its four neighbours)
extern "C" __global__ void jacobi2d(int n, const double* A, double* B) {
  int i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= 1 && i < n - 1 && j >= 1 && j < n - 1)
    B[i * n + j] = 0.2 * (A[i * n + j] + A[i * n + j - 1] + A[i * n + j + 1] + A[(i + 1) * n + j] + A[(i - 1) * n + j]);
}

// PolyBench/GPU correlation (data: n rows of m columns), in four kernels as it has them
#define EPS 0.005
extern "C" __global__ void corr_mean(int m, int n, double float_n, const double* data, double* mean) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= m) return;
  double s = 0.0;
  for (int i = 0; i < n; i++) s += data[i * m + j];
  mean[j] = s / float_n;
}

extern "C" __global__ void corr_std(int m, int n, double float_n, const double* data, const double* mean,
                                    double* stddev) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= m) return;
  double s = 0.0;
  for (int i = 0; i < n; i++) s += (data[i * m + j] - mean[j]) * (data[i * m + j] - mean[j]);
  s = sqrt(s / float_n);
  stddev[j] = s <= EPS ? 1.0 : s;
}

extern "C" __global__ void corr_reduce(int m, int n, double float_n, double* data, const double* mean,
                                       const double* stddev) {
  int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= n || j >= m) return;
  data[i * m + j] = (data[i * m + j] - mean[j]) / (sqrt(float_n) * stddev[j]);
}

extern "C" __global__ void corr_corr(int m, int n, const double* data, double* symmat) {
  int j1 = blockIdx.x * blockDim.x + threadIdx.x;
  if (j1 >= m - 1) return;
  symmat[j1 * m + j1] = 1.0;
  for (int j2 = j1 + 1; j2 < m; j2++) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += data[i * m + j1] * data[i * m + j2];
    symmat[j1 * m + j2] = s;
    symmat[j2 * m + j1] = s;
  }
}

// eight independent chains of fma.rn.f64 a thread: the FP64 unit's throughput, iters x 8 a thread
extern "C" __global__ void dfma_chains(double* out, int iters) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  double a0 = i, a1 = i + 1, a2 = i + 2, a3 = i + 3, a4 = i + 4, a5 = i + 5, a6 = i + 6, a7 = i + 7;
  for (int t = 0; t < iters; t++) {
    a0 = fma(a0, 0.999, 0.001); a1 = fma(a1, 0.999, 0.001); a2 = fma(a2, 0.999, 0.001); a3 = fma(a3, 0.999, 0.001);
    a4 = fma(a4, 0.999, 0.001); a5 = fma(a5, 0.999, 0.001); a6 = fma(a6, 0.999, 0.001); a7 = fma(a7, 0.999, 0.001);
  }
  out[i] = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
}
