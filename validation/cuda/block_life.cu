// How a block ends on the GPU: three probes for what gpusim's timing model has to assume today
// (issue 34, docs/isa.md "SASS": the SASS run of reduce_sum_shfl_cu is 23 % slow at 2^26, the tree
// reduction with the same load and the same final store within 1 %). One JSON line per figure.
//
//   * shfl_latency: one warp, a dependent chain of shfl.down (and of shfl.down + add, the reduction's
//     step), clock64() around it: SM cycles per step. gpusim takes shared memory's 23 cycles.
//   * block_gap: one block an SM at a time (a dynamic shared-memory request over half the SM's), each
//     block's warp 0 records %smid, clock64() when it starts and when its last instruction before the
//     final store issues; on each SM the next block's start minus this one's end is the time from a
//     block's last store to the next block's first instruction: the store's acknowledgement (if a
//     block waits for it) plus the launch of the next block. With a spin of S cycles after the store
//     (S past any acknowledgement), the gap less S is the launch alone.
//   * block_overlap: 256-thread blocks, 8 an SM by the thread limit; after a barrier warps 1-7 exit
//     and warp 0 runs a tail of L dependent FFMAs. If an SM frees a warp's slot when the warp exits,
//     more than 8 blocks overlap on an SM while their warps 0 run their tails; if it frees a block's
//     resources when its last warp exits, at most 8 do. Reported: the most blocks seen overlapping on
//     any SM, the mean block life, and the kernel time.
//
// Build: nvcc -O3 -arch=sm_90 -o block_life validation/cuda/block_life.cu   (no argument: all probes)
#include "common.cuh"

#define FULL 0xffffffffu

__device__ __forceinline__ unsigned smid() {
  unsigned r;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
  return r;
}

// -- shfl_latency ---------------------------------------------------------------------------------

template <int ADD>
__global__ void shfl_chain(float* io, long long* out, int iters) {
  float v = io[threadIdx.x];
  for (int w = 0; w < 2; w++) {  // pass 0 warms the instruction cache
    long long t0 = clock64();
    for (int k = 0; k < iters; k++) {
#pragma unroll
      for (int j = 0; j < 32; j++) {
        float t = __shfl_down_sync(FULL, v, 1);
        v = ADD ? v + t : t;
      }
    }
    long long t1 = clock64();
    if (threadIdx.x == 0) out[w] = t1 - t0;
  }
  io[threadIdx.x] = v;
}

static void shfl_latency() {
  float* io;
  long long* out;
  CK(cudaMalloc(&io, 32 * sizeof(float)));
  CK(cudaMalloc(&out, 2 * sizeof(long long)));
  CK(cudaMemset(io, 0, 32 * sizeof(float)));
  const int iters = 64;
  for (int add = 0; add < 2; add++) {
    std::vector<double> per;
    for (int r = 0; r < 5; r++) {
      if (add) shfl_chain<1><<<1, 32>>>(io, out, iters);
      else shfl_chain<0><<<1, 32>>>(io, out, iters);
      CKL();
      long long c[2];
      CK(cudaMemcpy(c, out, sizeof c, cudaMemcpyDeviceToHost));
      per.push_back(double(c[1]) / (iters * 32));
    }
    printf("{\"section\": \"shfl_latency\", \"chain\": \"%s\", \"cycles_per_step\": %.2f, \"steps\": %d, "
           "\"method\": \"one warp, clock64 around a dependent chain, median of 5\"}\n",
           add ? "shfl.down + add.f32" : "shfl.down", median(per), iters * 32);
    fflush(stdout);
  }
  CK(cudaFree(io));
  CK(cudaFree(out));
}

// -- block_gap and block_overlap ------------------------------------------------------------------

// rec[3 b] = smid, start, end of block b (warp 0's clock64 when it starts and before its final store).
// The shape of reduce_sum_shfl: each warp sums its 32 loaded values with shuffles, lane 0 writes the
// warp's sum to shared memory, a barrier, warps 1-7 exit, warp 0 sums the 8 (after `tail` FFMAs) and
// lane 0 stores the block's sum.
__global__ void life(const float* x, float* y, long long* rec, int tail, int spin) {
  __shared__ float ws[8];
  long long t0 = clock64();
  unsigned tid = threadIdx.x, b = blockIdx.x, lane = tid % 32;
  float v = x[b * blockDim.x + tid];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(FULL, v, o);
  if (lane == 0) ws[tid / 32] = v;
  __syncthreads();
  if (tid >= 32) return;
  v = lane < 8 ? ws[lane] : 0.0f;
  for (int k = 0; k < tail; k++) v = fmaf(v, 1.0001f, 0.5f);
  for (int o = 4; o > 0; o >>= 1) v += __shfl_down_sync(FULL, v, o);
  long long t1 = clock64();
  if (tid == 0) {
    rec[3 * b] = smid();
    rec[3 * b + 1] = t0;
    rec[3 * b + 2] = t1;
    y[b] = v;
  }
  if (spin)
    while (clock64() - t1 < spin) {
    }
}

struct Block { long long sm, t0, t1; };

static double pct(std::vector<double> v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p / 100.0 * v.size()))];
}

// Launch `life` on `grid` blocks of 256 threads with `smem` bytes of dynamic shared memory; returns the
// records and the kernel's time (ms, events).
static std::vector<Block> run_life(int grid, size_t smem, int tail, int spin, double* ms) {
  float *x, *y;
  long long* rec;
  CK(cudaMalloc(&x, size_t(grid) * 256 * sizeof(float)));
  CK(cudaMalloc(&y, size_t(grid) * sizeof(float)));
  CK(cudaMalloc(&rec, size_t(grid) * 3 * sizeof(long long)));
  CK(cudaMemset(x, 0, size_t(grid) * 256 * sizeof(float)));
  CK(cudaFuncSetAttribute(life, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  auto t = time_events([&](int) { life<<<grid, 256, smem>>>(x, y, rec, tail, spin); }, 2, 5);
  *ms = median(t);
  std::vector<long long> h(size_t(grid) * 3);
  CK(cudaMemcpy(h.data(), rec, h.size() * sizeof(long long), cudaMemcpyDeviceToHost));
  std::vector<Block> out(grid);
  for (int b = 0; b < grid; b++) out[b] = {h[3 * b], h[3 * b + 1], h[3 * b + 2]};
  CK(cudaFree(x));
  CK(cudaFree(y));
  CK(cudaFree(rec));
  return out;
}

static void block_gap(const cudaDeviceProp& p) {
  size_t smem = p.sharedMemPerMultiprocessor / 2 + 1024;  // one block an SM
  if (smem > p.sharedMemPerBlockOptin) smem = p.sharedMemPerBlockOptin;
  int per_sm = 16, grid = p.multiProcessorCount * per_sm;
  for (int spin : {0, 4000}) {
    double ms;
    auto recs = run_life(grid, smem, 0, spin, &ms);
    std::vector<std::vector<Block>> by(p.multiProcessorCount);
    for (auto& r : recs)
      if (r.sm >= 0 && r.sm < p.multiProcessorCount) by[r.sm].push_back(r);
    std::vector<double> gaps, lives;
    int overlapping = 0;
    for (auto& v : by) {
      std::sort(v.begin(), v.end(), [](const Block& a, const Block& b) { return a.t0 < b.t0; });
      for (size_t k = 0; k < v.size(); k++) {
        lives.push_back(double(v[k].t1 - v[k].t0));
        if (k + 1 < v.size()) {
          if (v[k + 1].t0 < v[k].t1) overlapping++;
          gaps.push_back(double(v[k + 1].t0 - v[k].t1 - spin));
        }
      }
    }
    printf("{\"section\": \"block_gap\", \"spin_cycles\": %d, \"dynamic_smem_bytes\": %zu, \"grid\": %d, "
           "\"gap_cycles\": {\"p5\": %.0f, \"p25\": %.0f, \"p50\": %.0f, \"p75\": %.0f, \"p95\": %.0f}, "
           "\"gaps\": %zu, \"overlapping_pairs\": %d, \"block_life_cycles_p50\": %.0f, \"ms\": %.4f, "
           "\"what\": \"next block's first clock64 on the SM minus this block's last before its store, less the spin\"}\n",
           spin, smem, grid, pct(gaps, 5), pct(gaps, 25), pct(gaps, 50), pct(gaps, 75), pct(gaps, 95), gaps.size(),
           overlapping, pct(lives, 50), ms);
    fflush(stdout);
  }
}

static void block_overlap(const cudaDeviceProp& p) {
  int per_sm = p.maxThreadsPerMultiProcessor / 256, grid = p.multiProcessorCount * per_sm * 16;
  for (int tail : {0, 256, 2048}) {
    double ms;
    auto recs = run_life(grid, 0, tail, 0, &ms);
    std::vector<std::vector<std::pair<long long, int>>> ev(p.multiProcessorCount);
    std::vector<double> lives;
    for (auto& r : recs) {
      if (r.sm < 0 || r.sm >= p.multiProcessorCount) continue;
      ev[r.sm].push_back({r.t0, +1});
      ev[r.sm].push_back({r.t1, -1});
      lives.push_back(double(r.t1 - r.t0));
    }
    int most = 0;
    std::vector<double> most_per_sm;
    for (auto& e : ev) {
      std::sort(e.begin(), e.end());  // at a tie an end (-1) sorts before a start
      int now = 0, m = 0;
      for (auto& x : e) m = std::max(m, now += x.second);
      most = std::max(most, m);
      most_per_sm.push_back(m);
    }
    printf("{\"section\": \"block_overlap\", \"tail_ffma\": %d, \"blocks_per_sm_by_threads\": %d, \"grid\": %d, "
           "\"most_overlapping\": %d, \"most_overlapping_p50_over_sms\": %.0f, \"block_life_cycles_p50\": %.0f, "
           "\"ms\": %.4f, \"what\": \"blocks whose [start, last instruction] overlap on one SM: over %d means "
           "warp slots are freed warp by warp\"}\n",
           tail, per_sm, grid, most, pct(most_per_sm, 50), pct(lives, 50), ms, per_sm);
    fflush(stdout);
  }
}

int main() {
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  printf("{\"section\": \"properties\", \"name\": \"%s\", \"cc\": \"%d.%d\", \"sm_count\": %d, "
         "\"shared_mem_per_sm_bytes\": %zu, \"max_threads_per_sm\": %d}\n",
         p.name, p.major, p.minor, p.multiProcessorCount, p.sharedMemPerMultiprocessor, p.maxThreadsPerMultiProcessor);
  fflush(stdout);
  shfl_latency();
  block_gap(p);
  block_overlap(p);
  return 0;
}
