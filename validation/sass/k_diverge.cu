// k_diverge of validation/cuda/microbench.cu (section 7), its clock reads left out: lanes take (lane % paths)
// as their path; each path is a 16-FFMA dependent chain. sass_divergence.py runs its SASS through gpusim.
__global__ void k_diverge(int paths, int iters, float* sink) {
  float x = threadIdx.x * 1e-3f;
  int lane = threadIdx.x & 31, mine = lane % paths;
  __syncthreads();
#pragma unroll 1
  for (int i = 0; i < iters; i++) {
#pragma unroll 1
    for (int p = 0; p < paths; p++) {
      if (mine == p) {
#pragma unroll
        for (int j = 0; j < 16; j++) asm volatile("fma.rn.f32 %0, %0, 0f3F7FBE77, 0f3A83126F;" : "+f"(x));
      }
    }
  }
  __syncthreads();
  if (x == 1234.5f) sink[0] = x;
}
