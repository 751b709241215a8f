// gpusim validation microbenchmarks for a real CUDA GPU (written for the NVIDIA H200, sm_90).
//
// Build:  nvcc -O3 -arch=sm_90 -o microbench microbench.cu
// Run:    ./microbench [--quick] > microbench.jsonl
//
// Output: JSON lines, one object per measurement group ({"section": ..., ...}), flushed as each
// group finishes, so that a crash or a time-out keeps what was measured before it. Every CUDA call
// is checked; an error ends the program with a {"section": "error", ...} line.
//
// Method (docs/validation.md):
//   * latencies: one thread, a dependent chain, clock64() around the chain (SM cycles), a warm
//     pass first; the SM clock during the chain is read off %globaltimer (ns) beside clock64;
//   * pointer chase: a random cyclic permutation of 128-byte lines (or a fixed 128-byte stride) in
//     footprints of 8 KiB .. 1 GiB, with ld.global.ca (L1 and L2) and ld.global.cg (L2 only);
//     every load is also timed on its own, so the near/far L2 split shows as a bimodal histogram;
//   * throughputs: many warps, independent chains, clock64() per block (ops/clk/SM), events (GB/s);
//   * bandwidths and launch overheads: cudaEvent timing, median of repeats after warm-up.
#include <cuda_runtime.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>
#include <chrono>

#include "common.cuh"

static bool g_quick = false;
static int g_sms = 0;


static double pct(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  size_t i = (size_t)std::min<double>(v.size() - 1, std::max(0.0, p / 100.0 * (v.size() - 1) + 0.5));
  return v[i];
}

__device__ __forceinline__ unsigned long long gtimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// ------------------------------------------------------------------------------------------------
// 1. properties
// ------------------------------------------------------------------------------------------------
static void properties() {
  int dev = 0;
  CK(cudaSetDevice(dev));
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, dev));
  auto attr = [&](cudaDeviceAttr a) { int v = 0; cudaDeviceGetAttribute(&v, a, dev); return v; };
  int drv = 0, rt = 0;
  CK(cudaDriverGetVersion(&drv));
  CK(cudaRuntimeGetVersion(&rt));
  g_sms = p.multiProcessorCount;

  printf("{\"section\": \"properties\", \"name\": \"%s\", \"cc\": \"%d.%d\", \"sm_count\": %d, "
         "\"clock_rate_khz\": %d, \"memory_clock_rate_khz\": %d, \"memory_bus_width_bits\": %d, "
         "\"l2_cache_bytes\": %d, \"persisting_l2_max_bytes\": %d, \"total_global_mem_bytes\": %zu, "
         "\"shared_mem_per_sm_bytes\": %zu, \"shared_mem_per_block_bytes\": %zu, "
         "\"shared_mem_per_block_optin_bytes\": %zu, \"reserved_shared_mem_per_block_bytes\": %zu, "
         "\"regs_per_sm\": %d, \"regs_per_block\": %d, \"max_threads_per_sm\": %d, "
         "\"max_threads_per_block\": %d, \"max_blocks_per_sm\": %d, \"warp_size\": %d, "
         "\"async_engine_count\": %d, \"concurrent_kernels\": %d, \"ecc\": %d, "
         "\"pci_bus_id\": %d, \"cuda_driver_version\": %d, \"cuda_runtime_version\": %d, "
         "\"max_grid\": [%d, %d, %d], \"max_block\": [%d, %d, %d], "
         "\"global_l1_cache_supported\": %d, \"local_l1_cache_supported\": %d}\n",
         p.name, p.major, p.minor, p.multiProcessorCount, attr(cudaDevAttrClockRate),
         attr(cudaDevAttrMemoryClockRate), attr(cudaDevAttrGlobalMemoryBusWidth), p.l2CacheSize,
         p.persistingL2CacheMaxSize, p.totalGlobalMem, p.sharedMemPerMultiprocessor,
         p.sharedMemPerBlock, p.sharedMemPerBlockOptin, p.reservedSharedMemPerBlock,
         p.regsPerMultiprocessor, p.regsPerBlock, p.maxThreadsPerMultiProcessor,
         p.maxThreadsPerBlock, p.maxBlocksPerMultiProcessor, p.warpSize, p.asyncEngineCount,
         p.concurrentKernels, p.ECCEnabled, p.pciBusID, drv, rt, p.maxGridSize[0],
         p.maxGridSize[1], p.maxGridSize[2], p.maxThreadsDim[0], p.maxThreadsDim[1],
         p.maxThreadsDim[2],
         p.globalL1CacheSupported, p.localL1CacheSupported);
  fflush(stdout);
}

// ------------------------------------------------------------------------------------------------
// 2. pointer chase
// ------------------------------------------------------------------------------------------------
// next[perm[i] * LINE] = base + perm[i+1] * LINE (a single cycle through every line of the footprint)
__global__ void chase_init(unsigned long long* a, const unsigned* perm, size_t nlines, unsigned line_words) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i >= nlines) return;
  size_t j = (i + 1 == nlines) ? 0 : i + 1;
  a[(size_t)perm[i] * line_words] = (unsigned long long)(a + (size_t)perm[j] * line_words);
}

template <int CG>
__device__ __forceinline__ unsigned long long ldchase(unsigned long long p) {
  unsigned long long v;
  if (CG)
    asm volatile("ld.global.cg.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  else
    asm volatile("ld.global.ca.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

// One thread, per-load timing: `warm` untimed steps, then the clock is read around each of `steps`
// loads. ptxas drops the dependent add, so a clock read does not wait for its own load; the wait
// lands in the next interval instead (the next load needs the address). The intervals therefore
// still sample one load latency each, off by one, for L2 and DRAM; for L1 hits (~32 cycles) they
// do not (seen on the H200: 3 cycles). Use chase_total for means, this for the distribution.
template <int CG>
__global__ void chase(const unsigned long long* start, long long warm, int steps,
                      unsigned* per_load, long long* out) {
  unsigned long long p = (unsigned long long)start;
  for (long long i = 0; i < warm; i++) p = ldchase<CG>(p);
  __shared__ unsigned lat[4096];
  for (int i = 0; i < steps && i < 4096; i++) {
    long long a = clock64();
    p = ldchase<CG>(p);
    unsigned long long q;
    asm volatile("add.u64 %0, %1, 0;" : "=l"(q) : "l"(p));  // waits for the load
    long long b = clock64();
    lat[i] = (unsigned)(b - a);
    p = q;
  }
  for (int i = 0; i < steps && i < 4096; i++) per_load[i] = lat[i];
  out[2] = (long long)p;
}

// One thread, total time of `steps` dependent loads after `warm` untimed ones.
template <int CG>
__global__ void chase_total(const unsigned long long* start, long long warm, int steps, long long* out) {
  unsigned long long p = (unsigned long long)start;
  for (long long i = 0; i < warm; i++) p = ldchase<CG>(p);
  unsigned long long g0 = gtimer();
  long long t0 = clock64();
#pragma unroll 4
  for (int i = 0; i < steps; i++) p = ldchase<CG>(p);
  unsigned long long q;
  asm volatile("add.u64 %0, %1, 0;" : "=l"(q) : "l"(p));
  long long t1;
  asm volatile("{ .reg .u64 z; and.b64 z, %1, 0; mov.u64 %0, %%clock64; add.u64 %0, %0, z; }"
               : "=l"(t1) : "l"(q));
  unsigned long long g1 = gtimer();
  out[0] = t1 - t0;
  out[1] = (long long)(g1 - g0);
  out[2] = (long long)q;
}

static void pointer_chase() {
  const unsigned LINE = 128;  // bytes between chased elements
  std::vector<size_t> fps_kib = {8,    16,   24,   32,    48,    64,    96,    128,   160,
                                 192,  224,  256,  384,   512,   1024,  2048,  4096,  8192,
                                 12288, 16384, 20480, 24576, 26624, 28672, 30720, 32768, 34816, 36864, 38912, 40960, 49152,
                                 57344, 65536, 98304, 131072, 262144, 524288, 1048576};
  if (g_quick) fps_kib = {8, 64, 512, 4096, 32768, 131072};
  size_t maxbytes = fps_kib.back() * 1024;
  unsigned long long* a;
  unsigned* dperm;
  long long* dout;
  unsigned* dlat;
  CK(cudaMalloc(&a, maxbytes));
  CK(cudaMalloc(&dperm, maxbytes / LINE * sizeof(unsigned)));
  CK(cudaMalloc(&dout, 4 * sizeof(long long)));
  CK(cudaMalloc(&dlat, 4096 * sizeof(unsigned)));
  std::mt19937_64 rng(12345);
  const int steps = 4096;
  for (int variant = 0; variant < 2; variant++) {  // 0: random lines, 1: fixed stride
    for (size_t kib : fps_kib) {
      size_t bytes = kib * 1024, nlines = bytes / LINE;
      std::vector<unsigned> perm(nlines);
      std::iota(perm.begin(), perm.end(), 0u);
      if (variant == 0) std::shuffle(perm.begin() + 1, perm.end(), rng);
      // fixed stride variant only needs a few footprints
      if (variant == 1 && !(kib == 8 || kib == 64 || kib == 192 || kib == 256 || kib == 1024 ||
                            kib == 16384 || kib == 28672 || kib == 32768 || kib == 36864 ||
                            kib == 40960 || kib == 65536 || kib == 262144 ||
                            kib == 1048576))
        continue;
      CK(cudaMemcpy(dperm, perm.data(), nlines * sizeof(unsigned), cudaMemcpyHostToDevice));
      chase_init<<<(unsigned)((nlines + 255) / 256), 256>>>(a, dperm, nlines, LINE / 8);
      CKL();
      CK(cudaDeviceSynchronize());
      // warm pass: the whole cycle once where that is cheap (<= 128 MiB), else `steps` loads
      long long warm = bytes <= (128u << 20) ? (long long)std::max<size_t>(nlines, steps) : steps;
      for (int cg = 0; cg < 2; cg++) {
        long long h[3];
        std::vector<unsigned> lat(steps);
        // above 128 MiB there is no full warm pass: each of the four kernels starts at its own
        // point of the cycle, so that none of them finds lines an earlier one brought into L2
        bool big = bytes > (128u << 20);
        const unsigned long long* s_tot = a + (size_t)perm[big ? (cg * 2 + 0) * 2 * steps : 0] * (LINE / 8);
        const unsigned long long* s_per = a + (size_t)perm[big ? (cg * 2 + 1) * 2 * steps : 0] * (LINE / 8);
        if (cg) {
          chase_total<1><<<1, 1>>>(s_tot, warm, steps, dout);
        } else {
          chase_total<0><<<1, 1>>>(s_tot, warm, steps, dout);
        }
        CKL();
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(h, dout, sizeof(h), cudaMemcpyDeviceToHost));
        double cyc = (double)h[0] / steps;
        double mhz = h[1] > 0 ? (double)h[0] / (double)h[1] * 1000.0 : 0;
        // per-load pass (a fresh warm-up of the same length)
        if (cg)
          chase<1><<<1, 1>>>(s_per, warm, steps, dlat, dout);
        else
          chase<0><<<1, 1>>>(s_per, warm, steps, dlat, dout);
        CKL();
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(lat.data(), dlat, steps * sizeof(unsigned), cudaMemcpyDeviceToHost));
        std::vector<double> l(lat.begin(), lat.end());
        // coarse histogram of per-load times: 16-cycle bins up to 1200 cycles
        std::vector<int> hist(76, 0);
        for (double x : l) hist[std::min<int>(75, (int)(x / 16))]++;
        std::string hs;
        for (size_t i = 0; i < hist.size(); i++) {
          if (!hist[i]) continue;
          char buf[32];
          snprintf(buf, sizeof buf, "%s\"%d\": %d", hs.empty() ? "" : ", ", (int)i * 16, hist[i]);
          hs += buf;
        }
        printf("{\"section\": \"pointer_chase\", \"pattern\": \"%s\", \"load\": \"%s\", "
               "\"footprint_bytes\": %zu, \"stride_bytes\": %u, \"steps\": %d, \"warm_steps\": %lld, "
               "\"cycles_per_load\": %.2f, \"ns_per_load\": %.2f, \"sm_mhz_during\": %.0f, "
               "\"per_load_cycles\": {\"p5\": %.0f, \"p25\": %.0f, \"p50\": %.0f, \"p75\": %.0f, "
               "\"p95\": %.0f, \"mean\": %.1f}, \"per_load_hist16\": {%s}}\n",
               variant ? "stride" : "random", cg ? "cg" : "ca", bytes, LINE, steps, warm, cyc,
               (double)h[1] / steps, mhz, pct(l, 5), pct(l, 25), pct(l, 50), pct(l, 75), pct(l, 95),
               std::accumulate(l.begin(), l.end(), 0.0) / l.size(), hs.c_str());
        fflush(stdout);
      }
    }
  }
  CK(cudaFree(a));
  CK(cudaFree(dperm));
  CK(cudaFree(dout));
  CK(cudaFree(dlat));
}

// ------------------------------------------------------------------------------------------------
// 3. per-opcode dependent-chain latency and independent-chain throughput
// ------------------------------------------------------------------------------------------------
// One chain step: struct op_NAME { T; f(x, y) } around one inline-PTX string, for float ("f"),
// unsigned ("r") and double ("d") registers.
#define DEFOP(NAME, TYPE, REG, ASM)                                                       \
  struct op_##NAME {                                                                      \
    typedef TYPE T;                                                                       \
    static const char* name() { return #NAME; }                                           \
    static const char* ptx() { return ASM; }                                              \
    __device__ __forceinline__ static T f(T x, T y) {                                     \
      T r;                                                                                \
      asm volatile(ASM : "=" REG(r) : REG(x), REG(y));                                    \
      return r;                                                                           \
    }                                                                                     \
  };
#define FOP(NAME, ASM) DEFOP(NAME, float, "f", ASM)
#define IOP(NAME, ASM) DEFOP(NAME, unsigned, "r", ASM)
#define DOP(NAME, ASM) DEFOP(NAME, double, "d", ASM)

FOP(ffma, "fma.rn.f32 %0, %1, %2, %2;")
FOP(fadd, "add.f32 %0, %1, %2;")
FOP(fmul, "mul.f32 %0, %1, %2;")
FOP(fmax, "max.f32 %0, %1, %2;")
FOP(fsetp_selp, "{ .reg .pred q; setp.lt.f32 q, %1, %2; selp.f32 %0, %1, %2, q; }")
FOP(sin_approx, "sin.approx.f32 %0, %1;")
FOP(cos_approx, "cos.approx.f32 %0, %1;")
FOP(sin_approx_ftz, "sin.approx.ftz.f32 %0, %1;")
FOP(rsqrt_approx, "rsqrt.approx.f32 %0, %1;")
FOP(rsqrt_approx_ftz, "rsqrt.approx.ftz.f32 %0, %1;")
FOP(rcp_approx, "rcp.approx.f32 %0, %1;")
// rcp(rcp(x)) folds to x in ptxas: the chain adds y first (FADD + MUFU.RCP; subtract fadd)
FOP(fadd_rcp_approx_ftz, "{ .reg .f32 t; add.f32 t, %1, %2; rcp.approx.ftz.f32 %0, t; }")
FOP(ex2_approx, "ex2.approx.f32 %0, %1;")
FOP(ex2_approx_ftz, "ex2.approx.ftz.f32 %0, %1;")
FOP(lg2_approx, "lg2.approx.f32 %0, %1;")
FOP(lg2_approx_ftz, "lg2.approx.ftz.f32 %0, %1;")
FOP(sqrt_approx, "sqrt.approx.f32 %0, %1;")
FOP(sqrt_approx_ftz, "sqrt.approx.ftz.f32 %0, %1;")
FOP(tanh_approx, "tanh.approx.f32 %0, %1;")
FOP(sqrt_rn, "sqrt.rn.f32 %0, %1;")
FOP(div_rn, "div.rn.f32 %0, %2, %1;")
FOP(cvt_f32_f16_roundtrip, "{ .reg .b16 h; cvt.rn.f16.f32 h, %1; cvt.f32.f16 %0, h; }")
IOP(imad, "mad.lo.u32 %0, %1, %2, %2;")
IOP(imul, "mul.lo.u32 %0, %1, %2;")
IOP(iadd, "add.u32 %0, %1, %2;")
IOP(iadd3, "{ .reg .u32 t; add.u32 t, %1, %2; add.u32 %0, t, %2; }")  // counted as one op: see note
IOP(shl, "shl.b32 %0, %1, %2;")
IOP(shr, "shr.u32 %0, %1, %2;")
// consecutive logic ops fold into one LOP3 (x ^ y ^ y = x), consecutive adds into one IADD3: the
// chain alternates LOP3 and IADD3 (counted as 2 ops: LOP3 = 2 x cycles_per_op - IADD3)
IOP(xor_add, "{ .reg .u32 t; xor.b32 t, %1, %2; add.u32 %0, t, %2; }")
IOP(imnmx, "min.u32 %0, %1, %2;")
IOP(popc, "popc.b32 %0, %1;")
IOP(brev, "brev.b32 %0, %1;")
IOP(clz, "clz.b32 %0, %1;")
// shfl.bfly twice by 1 is the identity (ptxas folds it); shfl.up is not
IOP(shfl_up, "shfl.sync.up.b32 %0, %1, 1, 0, -1;")
IOP(hfma2, "fma.rn.f16x2 %0, %1, %2, %2;")
IOP(prmt, "prmt.b32 %0, %1, %2, 0x3210;")
DOP(dfma, "fma.rn.f64 %0, %1, %2, %2;")
DOP(dadd, "add.f64 %0, %1, %2;")
DOP(dmul, "mul.f64 %0, %1, %2;")

template <class Op>
__global__ void lat_kernel(typename Op::T* io, long long* out, int iters) {
  typedef typename Op::T T;
  T x = io[0], y = io[1];
  unsigned long long g0 = gtimer();
  long long t0 = clock64();
#pragma unroll 1
  for (int i = 0; i < iters; i++) {
#pragma unroll
    for (int j = 0; j < 64; j++) x = Op::f(x, y);
  }
  long long t1 = clock64();
  unsigned long long g1 = gtimer();
  io[2] = x;
  out[0] = t1 - t0;
  out[1] = (long long)(g1 - g0);
}

// Throughput: 8 independent chains per thread, one block per SM of `threads` threads; the block's
// time is read with clock64() after a barrier at each end by thread 0.
template <class Op>
__global__ void thr_kernel(typename Op::T* io, long long* out, int iters) {
  typedef typename Op::T T;
  T y = io[1];
  T x0 = io[0], x1 = x0 + (T)1, x2 = x0 + (T)2, x3 = x0 + (T)3, x4 = x0 + (T)4, x5 = x0 + (T)5,
    x6 = x0 + (T)6, x7 = x0 + (T)7;
  __syncthreads();
  long long t0 = clock64();
#pragma unroll 1
  for (int i = 0; i < iters; i++) {
#pragma unroll
    for (int j = 0; j < 16; j++) {
      x0 = Op::f(x0, y); x1 = Op::f(x1, y); x2 = Op::f(x2, y); x3 = Op::f(x3, y);
      x4 = Op::f(x4, y); x5 = Op::f(x5, y); x6 = Op::f(x6, y); x7 = Op::f(x7, y);
    }
  }
  __syncthreads();
  long long t1 = clock64();
  T s = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
  if (s == (T)12345) io[3] = s;  // keep the chains alive
  if (threadIdx.x == 0) out[blockIdx.x] = t1 - t0;
}

template <class Op>
static void run_lat(typename Op::T x0, typename Op::T y, int ops_per_call = 1) {
  typedef typename Op::T T;
  T* io;
  long long* out;
  CK(cudaMalloc(&io, 4 * sizeof(T)));
  CK(cudaMalloc(&out, 2 * sizeof(long long)));
  T h[4] = {x0, y, 0, 0};
  CK(cudaMemcpy(io, h, sizeof h, cudaMemcpyHostToDevice));
  int iters = g_quick ? 64 : 512;
  lat_kernel<Op><<<1, 1>>>(io, out, 8);  // warm (module load, i-cache)
  CKL();
  std::vector<double> c;
  double mhz = 0;
  for (int r = 0; r < 5; r++) {
    lat_kernel<Op><<<1, 1>>>(io, out, iters);
    CKL();
    long long o[2];
    CK(cudaMemcpy(o, out, sizeof o, cudaMemcpyDeviceToHost));
    c.push_back((double)o[0] / (64.0 * iters * ops_per_call));
    if (o[1] > 0) mhz = (double)o[0] / o[1] * 1000.0;
  }
  printf("{\"section\": \"op_latency\", \"op\": \"%s\", \"ptx\": \"%s\", \"ptx_ops_counted\": %d, "
         "\"cycles_per_op\": %.3f, \"min\": %.3f, \"max\": %.3f, \"chain_length\": %d, \"repeats\": 5, "
         "\"sm_mhz_during\": %.0f}\n",
         Op::name(), Op::ptx(), ops_per_call, median(c), *std::min_element(c.begin(), c.end()),
         *std::max_element(c.begin(), c.end()), 64 * iters, mhz);
  fflush(stdout);
  CK(cudaFree(io));
  CK(cudaFree(out));
}

template <class Op>
static void run_thr(typename Op::T x0, typename Op::T y) {
  typedef typename Op::T T;
  T* io;
  long long* out;
  int blocks = g_sms;
  CK(cudaMalloc(&io, 4 * sizeof(T)));
  CK(cudaMalloc(&out, blocks * sizeof(long long)));
  T h[4] = {x0, y, 0, 0};
  CK(cudaMemcpy(io, h, sizeof h, cudaMemcpyHostToDevice));
  int iters = g_quick ? 16 : 256;
  for (int threads : {256, 1024}) {
    thr_kernel<Op><<<blocks, threads>>>(io, out, 4);
    CKL();
    std::vector<double> rate;
    auto ms = time_events([&](int) { thr_kernel<Op><<<blocks, threads>>>(io, out, iters); }, 1, 5);
    std::vector<long long> o(blocks);
    CK(cudaMemcpy(o.data(), out, blocks * sizeof(long long), cudaMemcpyDeviceToHost));
    std::vector<double> per_sm;
    double ops = (double)threads * 8 * 16 * iters;
    for (long long v : o) per_sm.push_back(ops / v);
    double total_ops = ops * blocks;
    printf("{\"section\": \"op_throughput\", \"op\": \"%s\", \"ptx\": \"%s\", \"threads_per_block\": %d, "
           "\"blocks\": %d, \"ilp\": 8, \"ops_per_clk_per_sm\": %.2f, \"ops_per_clk_per_sm_min\": %.2f, "
           "\"ops_per_clk_per_sm_max\": %.2f, \"gops_per_s_events\": %.1f, \"ms_median\": %.4f}\n",
           Op::name(), Op::ptx(), threads, blocks, median(per_sm),
           *std::min_element(per_sm.begin(), per_sm.end()),
           *std::max_element(per_sm.begin(), per_sm.end()), total_ops / (median(ms) * 1e6),
           median(ms));
    fflush(stdout);
  }
  CK(cudaFree(io));
  CK(cudaFree(out));
}

static void op_latencies() {
  run_lat<op_ffma>(1.0f, 0.999f);
  run_lat<op_fadd>(1.0f, 1e-7f);
  run_lat<op_fmul>(1.0f, 0.9999f);
  run_lat<op_fmax>(1.0f, 0.5f);
  run_lat<op_fsetp_selp>(1.0f, 0.5f);
  run_lat<op_sin_approx>(1.0f, 0.f);
  run_lat<op_cos_approx>(1.0f, 0.f);
  run_lat<op_sin_approx_ftz>(1.0f, 0.f);
  run_lat<op_rsqrt_approx>(2.0f, 0.f);
  run_lat<op_rsqrt_approx_ftz>(2.0f, 0.f);
  run_lat<op_rcp_approx>(3.0f, 0.f);
  run_lat<op_fadd_rcp_approx_ftz>(3.0f, 0.5f);
  run_lat<op_ex2_approx>(-1.0f, 0.f);
  run_lat<op_ex2_approx_ftz>(-1.0f, 0.f);
  run_lat<op_lg2_approx>(8.0f, 0.f);
  run_lat<op_lg2_approx_ftz>(8.0f, 0.f);
  run_lat<op_sqrt_approx>(7.0f, 0.f);
  run_lat<op_sqrt_approx_ftz>(7.0f, 0.f);
  run_lat<op_tanh_approx>(0.5f, 0.f);
  run_lat<op_sqrt_rn>(7.0f, 0.f);
  run_lat<op_div_rn>(3.0f, 2.0f);
  run_lat<op_cvt_f32_f16_roundtrip>(1.5f, 0.f);
  run_lat<op_imad>(3u, 7u);
  run_lat<op_imul>(3u, 7u);
  run_lat<op_iadd>(3u, 7u);
  run_lat<op_iadd3>(3u, 7u, 2);
  run_lat<op_shl>(3u, 1u);
  run_lat<op_shr>(0x80000000u, 1u);
  run_lat<op_xor_add>(3u, 7u, 2);
  run_lat<op_imnmx>(3u, 7u);
  run_lat<op_popc>(3u, 7u);
  run_lat<op_brev>(3u, 7u);
  run_lat<op_clz>(3u, 7u);
  run_lat<op_shfl_up>(3u, 7u);
  run_lat<op_hfma2>(0x3c003c00u, 0x3bff3bffu);
  run_lat<op_prmt>(3u, 7u);
  run_lat<op_dfma>(1.0, 0.999);
  run_lat<op_dadd>(1.0, 1e-9);
  run_lat<op_dmul>(1.0, 0.9999);

  run_thr<op_ffma>(1.0f, 0.999f);
  run_thr<op_fadd>(1.0f, 1e-7f);
  run_thr<op_imad>(3u, 7u);
  run_thr<op_iadd>(3u, 7u);
  run_thr<op_xor_add>(3u, 7u);
  run_thr<op_shl>(3u, 1u);
  run_thr<op_dfma>(1.0, 0.999);
  run_thr<op_hfma2>(0x3c003c00u, 0x3bff3bffu);
  run_thr<op_ex2_approx_ftz>(-1.0f, 0.f);
  run_thr<op_sin_approx>(1.0f, 0.f);
  run_thr<op_rsqrt_approx_ftz>(2.0f, 0.f);
  run_thr<op_fadd_rcp_approx_ftz>(3.0f, 0.5f);
  run_thr<op_lg2_approx_ftz>(8.0f, 0.f);
  run_thr<op_popc>(3u, 7u);
}

// ------------------------------------------------------------------------------------------------
// 4. shared memory
// ------------------------------------------------------------------------------------------------
// latency: one thread chases s[i] = next index
__global__ void smem_lat(int iters, long long* out, unsigned* sink) {
  __shared__ unsigned s[4096];
  for (int i = threadIdx.x; i < 4096; i += blockDim.x) s[i] = (i * 4 + 4 * 33) % (4096 * 4);  // byte addr
  __syncthreads();
  if (threadIdx.x) return;
  unsigned base = (unsigned)__cvta_generic_to_shared(s);
  unsigned a = 0;
  long long t0 = clock64();
#pragma unroll 1
  for (int i = 0; i < iters; i++) {
#pragma unroll
    for (int j = 0; j < 32; j++) {
      unsigned v;
      asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(base + a));
      a = v;
    }
  }
  long long t1 = clock64();
  out[0] = t1 - t0;
  sink[0] = a;
}

// bank conflicts: every lane chases its own address (s[a] = a) at lane*stride words; one warp gives
// the latency of a conflicted access, `warps` warps its throughput (cycles per warp access).
__global__ void smem_conflict(int stride, int iters, long long* out, unsigned* sink) {
  __shared__ unsigned s[32 * 33 + 32 * 32];
  for (int i = threadIdx.x; i < 32 * 33 + 32 * 32; i += blockDim.x) s[i] = i * 4;
  __syncthreads();
  unsigned base = (unsigned)__cvta_generic_to_shared(s);
  unsigned lane = threadIdx.x & 31;
  unsigned a = ((lane * stride) % 1024) * 4;
  __syncthreads();
  long long t0 = clock64();
#pragma unroll 1
  for (int i = 0; i < iters; i++) {
#pragma unroll
    for (int j = 0; j < 32; j++) {
      unsigned v;
      asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(base + a));
      a = v;
    }
  }
  __syncthreads();
  long long t1 = clock64();
  if (threadIdx.x == 0) out[blockIdx.x] = t1 - t0;
  if (a == 0xffffffff) sink[0] = a;
}

// bandwidth: all threads, independent 16-byte (or 4-byte) loads, conflict-free
template <int VEC>
__global__ void smem_bw(int iters, long long* out, float* sink) {
  __shared__ float4 s[2048];
  for (int i = threadIdx.x; i < 2048; i += blockDim.x) s[i] = make_float4(i, i + 1, i + 2, i + 3);
  __syncthreads();
  float acc = 0;
  const float* sf = (const float*)s;
  unsigned t = threadIdx.x;
  long long t0 = clock64();
#pragma unroll 1
  for (int i = 0; i < iters; i++) {
#pragma unroll
    for (int j = 0; j < 8; j++) {
      if (VEC == 4) {
        float4 v = s[(t + j * 128 + i) & 2047];
        acc += v.x + v.y + v.z + v.w;
      } else {
        acc += sf[(t + j * 128 + i) & 8191];
      }
    }
  }
  __syncthreads();
  long long t1 = clock64();
  if (threadIdx.x == 0) out[blockIdx.x] = t1 - t0;
  if (acc == 1234.5f) sink[0] = acc;
}

static void shared_memory() {
  long long* out;
  unsigned* sink;
  float* fsink;
  CK(cudaMalloc(&out, 1024 * sizeof(long long)));
  CK(cudaMalloc(&sink, 16));
  CK(cudaMalloc(&fsink, 16));
  int iters = g_quick ? 64 : 1024;
  {
    smem_lat<<<1, 32>>>(8, out, sink);
    CKL();
    std::vector<double> c;
    for (int r = 0; r < 5; r++) {
      smem_lat<<<1, 32>>>(iters, out, sink);
      CKL();
      long long o;
      CK(cudaMemcpy(&o, out, sizeof o, cudaMemcpyDeviceToHost));
      c.push_back((double)o / (32.0 * iters));
    }
    printf("{\"section\": \"shared_latency\", \"cycles_per_load\": %.2f, \"method\": \"one thread, dependent ld.shared.u32 chain\"}\n",
           median(c));
    fflush(stdout);
  }
  for (int stride : {0, 1, 2, 3, 4, 8, 16, 17, 32, 33}) {
    for (int warps : {1, 32}) {
      smem_conflict<<<1, 32 * warps>>>(stride, 8, out, sink);
      CKL();
      std::vector<double> c;
      for (int r = 0; r < 5; r++) {
        smem_conflict<<<1, 32 * warps>>>(stride, iters / 4, out, sink);
        CKL();
        long long o;
        CK(cudaMemcpy(&o, out, sizeof o, cudaMemcpyDeviceToHost));
        c.push_back((double)o / (32.0 * (iters / 4) * warps));
      }
      printf("{\"section\": \"shared_bank_conflict\", \"stride_words\": %d, \"warps\": %d, "
             "\"cycles_per_warp_access\": %.2f, \"view\": \"%s\"}\n",
             stride, warps, median(c), warps == 1 ? "latency (dependent chain, one warp)" : "throughput (32 warps, one SM)");
      fflush(stdout);
    }
  }
  for (int vec : {1, 4}) {
    int threads = 1024, blocks = g_sms;
    auto launch = [&]() {
      if (vec == 4) smem_bw<4><<<blocks, threads>>>(iters, out, fsink);
      else smem_bw<1><<<blocks, threads>>>(iters, out, fsink);
    };
    launch();
    CKL();
    CK(cudaDeviceSynchronize());
    launch();
    CKL();
    std::vector<long long> o(blocks);
    CK(cudaMemcpy(o.data(), out, blocks * sizeof(long long), cudaMemcpyDeviceToHost));
    std::vector<double> bpc;
    for (long long v : o) bpc.push_back((double)threads * iters * 8 * 4 * vec / v);
    printf("{\"section\": \"shared_bandwidth\", \"bytes_per_load\": %d, \"bytes_per_clk_per_sm\": %.1f, "
           "\"min\": %.1f, \"max\": %.1f}\n",
           4 * vec, median(bpc), *std::min_element(bpc.begin(), bpc.end()),
           *std::max_element(bpc.begin(), bpc.end()));
    fflush(stdout);
  }
  CK(cudaFree(out));
  CK(cudaFree(sink));
  CK(cudaFree(fsink));
}

// ------------------------------------------------------------------------------------------------
// 5. DRAM stream bandwidth (BabelStream-like) and L2 bandwidth
// ------------------------------------------------------------------------------------------------
__global__ void k_copy(const float4* __restrict__ a, float4* __restrict__ c, size_t n4) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x)
    c[i] = a[i];
}
__global__ void k_triad(float4* __restrict__ a, const float4* __restrict__ b, const float4* __restrict__ c,
                        float s, size_t n4) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x) {
    float4 x = b[i], y = c[i];
    a[i] = make_float4(x.x + s * y.x, x.y + s * y.y, x.z + s * y.z, x.w + s * y.w);
  }
}
__global__ void k_read(const float4* __restrict__ a, float* out, size_t n4) {
  float acc = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x) {
    float4 v = a[i];
    acc += v.x + v.y + v.z + v.w;
  }
  if (acc == 1234.5f) out[0] = acc;
}
__global__ void k_write(float4* __restrict__ a, size_t n4, float v) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x)
    a[i] = make_float4(v, v, v, v);
}
__global__ void k_fill(float* a, size_t n, float v) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    a[i] = v + (float)(i & 1023) * 1e-3f;
}
// L2: each thread re-reads float4s of an L2-sized footprint with ld.global.cg (L1 bypassed)
__global__ void k_l2read(const float4* __restrict__ a, size_t n4, int passes, float* out) {
  float acc = 0;
  size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x, nt = (size_t)gridDim.x * blockDim.x;
  for (int p = 0; p < passes; p++) {
    for (size_t i = tid; i < n4; i += nt) {
      float4 v = __ldcg(a + i);
      acc += v.x + v.y + v.z + v.w;
    }
  }
  if (acc == 1234.5f) out[0] = acc;
}

// clock rate seen by a kernel that runs for a while (clock64 against %globaltimer)
__global__ void k_clock(long long* out, int spin) {
  unsigned long long g0 = gtimer();
  long long t0 = clock64();
  while (clock64() - t0 < spin) {}
  long long t1 = clock64();
  unsigned long long g1 = gtimer();
  out[0] = t1 - t0;
  out[1] = (long long)(g1 - g0);
}
static double sm_clock_mhz() {
  long long* d;
  CK(cudaMalloc(&d, 16));
  k_clock<<<1, 1>>>(d, 20000000);
  CKL();
  long long h[2];
  CK(cudaMemcpy(h, d, 16, cudaMemcpyDeviceToHost));
  CK(cudaFree(d));
  return h[1] > 0 ? (double)h[0] / h[1] * 1000.0 : 0;
}

static void bandwidth() {
  size_t n = g_quick ? (64u << 20) : (256u << 20);  // floats per array: 1 GiB each
  size_t n4 = n / 4, bytes = n * sizeof(float);
  float *a, *b, *c, *sink;
  CK(cudaMalloc(&a, bytes));
  CK(cudaMalloc(&b, bytes));
  CK(cudaMalloc(&c, bytes));
  CK(cudaMalloc(&sink, 16));
  k_fill<<<1024, 256>>>(a, n, 1.f);
  k_fill<<<1024, 256>>>(b, n, 2.f);
  k_fill<<<1024, 256>>>(c, n, 3.f);
  CKL();
  CK(cudaDeviceSynchronize());
  double mhz0 = sm_clock_mhz();
  int blocks = g_sms * 8, threads = 256;
  int reps = g_quick ? 5 : 20;
  struct R { const char* name; double bytes; std::vector<double> ms; };
  std::vector<R> rs;
  rs.push_back({"copy", 2.0 * bytes, time_events([&](int) { k_copy<<<blocks, threads>>>((float4*)a, (float4*)c, n4); }, 3, reps)});
  rs.push_back({"triad", 3.0 * bytes, time_events([&](int) { k_triad<<<blocks, threads>>>((float4*)a, (float4*)b, (float4*)c, 0.4f, n4); }, 3, reps)});
  rs.push_back({"read", 1.0 * bytes, time_events([&](int) { k_read<<<blocks, threads>>>((float4*)a, sink, n4); }, 3, reps)});
  rs.push_back({"write", 1.0 * bytes, time_events([&](int) { k_write<<<blocks, threads>>>((float4*)c, n4, 1.f); }, 3, reps)});
  rs.push_back({"memcpy_d2d", 2.0 * bytes, time_events([&](int) { CK(cudaMemcpyAsync(c, a, bytes, cudaMemcpyDeviceToDevice)); }, 3, reps)});
  for (auto& r : rs) {
    double m = median(r.ms);
    printf("{\"section\": \"dram_bandwidth\", \"kernel\": \"%s\", \"array_bytes\": %zu, \"bytes_moved\": %.0f, "
           "\"ms_median\": %.4f, \"ms_min\": %.4f, \"gb_per_s\": %.1f, \"gb_per_s_best\": %.1f, \"repeats\": %d, "
           "\"grid\": %d, \"block\": %d}\n",
           r.name, bytes, r.bytes, m, *std::min_element(r.ms.begin(), r.ms.end()), r.bytes / (m * 1e6),
           r.bytes / (*std::min_element(r.ms.begin(), r.ms.end()) * 1e6), reps, blocks, threads);
    fflush(stdout);
  }
  // L2 bandwidth sweep
  double mhz = sm_clock_mhz();
  std::vector<size_t> fps_mib = {2, 4, 8, 16, 24, 32, 40, 48, 64, 128};
  for (size_t mib : fps_mib) {
    size_t fb = mib << 20, f4 = fb / 16;
    int passes = (int)std::max<size_t>(2, (size_t)(2048u << 20) / fb);  // ~2 GiB read per launch
    if (g_quick) passes = 2;
    int gblocks = g_sms * 4, gthreads = 512;
    auto ms = time_events([&](int) { k_l2read<<<gblocks, gthreads>>>((float4*)a, f4, passes, sink); }, 2, g_quick ? 3 : 10);
    double m = median(ms), bytes_read = (double)fb * passes;
    double gbs = bytes_read / (m * 1e6);
    printf("{\"section\": \"l2_bandwidth\", \"footprint_bytes\": %zu, \"passes\": %d, \"ms_median\": %.4f, "
           "\"gb_per_s\": %.1f, \"bytes_per_clk\": %.1f, \"sm_mhz_assumed\": %.0f, \"grid\": %d, \"block\": %d, "
           "\"load\": \"ld.global.cg.v4.f32\"}\n",
           fb, passes, m, gbs, gbs * 1e9 / (mhz * 1e6), mhz, gblocks, gthreads);
    fflush(stdout);
  }
  printf("{\"section\": \"clock_during_bandwidth\", \"sm_mhz_before_stream\": %.0f, \"sm_mhz_before_l2\": %.0f, \"sm_mhz_after\": %.0f}\n",
         mhz0, mhz, sm_clock_mhz());
  fflush(stdout);
  CK(cudaFree(a));
  CK(cudaFree(b));
  CK(cudaFree(c));
  CK(cudaFree(sink));
}

// ------------------------------------------------------------------------------------------------
// 6. atomics
// ------------------------------------------------------------------------------------------------
__global__ void k_atom_global(unsigned* a, int iters, int mode) {
  size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  unsigned* p = mode == 0 ? a : mode == 1 ? a + tid : a + (threadIdx.x & 31) * 32;  // same, distinct, 32 lines
  for (int i = 0; i < iters; i++) atomicAdd(p, 1u);
}
__global__ void k_atom_global_ret(unsigned* a, int iters, unsigned* sink) {
  size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  unsigned s = 0;
  for (int i = 0; i < iters; i++) s += atomicAdd(a + tid, 1u);
  if (s == 0xdeadbeef) sink[0] = s;
}
__global__ void k_atom_shared(unsigned* out, int iters, int mode, long long* cyc) {
  __shared__ unsigned s[1024];
  for (int i = threadIdx.x; i < 1024; i += blockDim.x) s[i] = 0;
  __syncthreads();
  unsigned* p = mode == 0 ? s : s + threadIdx.x;  // same address, or distinct (conflict-free)
  long long t0 = clock64();
  for (int i = 0; i < iters; i++) atomicAdd(p, 1u);
  __syncthreads();
  long long t1 = clock64();
  if (threadIdx.x == 0) { out[blockIdx.x] = s[0]; cyc[blockIdx.x] = t1 - t0; }
}

static void atomics() {
  int blocks = g_sms * 4, threads = 256;
  size_t nthreads = (size_t)blocks * threads;
  unsigned* a;
  long long* cyc;
  CK(cudaMalloc(&a, (nthreads + 4096) * sizeof(unsigned)));
  CK(cudaMalloc(&cyc, blocks * sizeof(long long)));
  CK(cudaMemset(a, 0, (nthreads + 4096) * sizeof(unsigned)));
  int reps = g_quick ? 3 : 10;
  const char* names[] = {"global_same_address", "global_distinct_addresses", "global_32_addresses_one_per_line"};
  for (int mode = 0; mode < 3; mode++) {
    int iters = mode == 0 ? 16 : 256;
    auto ms = time_events([&](int) { k_atom_global<<<blocks, threads>>>(a, iters, mode); }, 2, reps);
    double ops = (double)nthreads * iters, m = median(ms);
    printf("{\"section\": \"atomics\", \"kind\": \"%s\", \"op\": \"atomicAdd u32 (RED, result unused)\", \"ops\": %.0f, \"ms_median\": %.4f, "
           "\"gops_per_s\": %.3f, \"grid\": %d, \"block\": %d}\n",
           names[mode], ops, m, ops / (m * 1e6), blocks, threads);
    fflush(stdout);
  }
  {
    int iters = 256;
    auto ms = time_events([&](int) { k_atom_global_ret<<<blocks, threads>>>(a, iters, a + nthreads); }, 2, reps);
    double ops = (double)nthreads * iters, m = median(ms);
    printf("{\"section\": \"atomics\", \"kind\": \"global_distinct_addresses_returning\", \"op\": \"atomicAdd u32 (ATOM, result used)\", \"ops\": %.0f, "
           "\"ms_median\": %.4f, \"gops_per_s\": %.3f, \"grid\": %d, \"block\": %d}\n",
           ops, m, ops / (m * 1e6), blocks, threads);
    fflush(stdout);
  }
  for (int mode = 0; mode < 2; mode++) {
    int iters = 1024, sblocks = g_sms, sthreads = 1024;
    auto ms = time_events([&](int) { k_atom_shared<<<sblocks, sthreads>>>(a, iters, mode, cyc); }, 2, reps);
    std::vector<long long> o(sblocks);
    CK(cudaMemcpy(o.data(), cyc, sblocks * sizeof(long long), cudaMemcpyDeviceToHost));
    std::vector<double> per;
    for (long long v : o) per.push_back((double)sthreads * iters / v);
    double ops = (double)sblocks * sthreads * iters, m = median(ms);
    printf("{\"section\": \"atomics\", \"kind\": \"%s\", \"op\": \"atomicAdd u32 on shared\", \"ops\": %.0f, \"ms_median\": %.4f, "
           "\"gops_per_s\": %.3f, \"ops_per_clk_per_sm\": %.3f, \"grid\": %d, \"block\": %d}\n",
           mode == 0 ? "shared_same_address" : "shared_distinct_addresses", ops, m, ops / (m * 1e6),
           median(per), sblocks, sthreads);
    fflush(stdout);
  }
  CK(cudaFree(a));
  CK(cudaFree(cyc));
}

// ------------------------------------------------------------------------------------------------
// 7. divergence: lanes take (lane % paths) as their path; each path is a 64-FFMA dependent chain
// ------------------------------------------------------------------------------------------------
__global__ void k_diverge(int paths, int iters, long long* out, float* sink) {
  float x = threadIdx.x * 1e-3f;
  int lane = threadIdx.x & 31, mine = lane % paths;
  __syncthreads();
  long long t0 = clock64();
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
  long long t1 = clock64();
  if (threadIdx.x == 0) out[blockIdx.x] = t1 - t0;
  if (x == 1234.5f) sink[0] = x;
}

static void divergence() {
  long long* out;
  float* sink;
  CK(cudaMalloc(&out, 64 * sizeof(long long)));
  CK(cudaMalloc(&sink, 16));
  int iters = g_quick ? 16 : 256;
  for (int warps : {1, 32}) {
    for (int paths : {1, 2, 4, 8, 16, 32}) {
      k_diverge<<<1, 32 * warps>>>(paths, 4, out, sink);
      CKL();
      std::vector<double> c;
      for (int r = 0; r < 5; r++) {
        k_diverge<<<1, 32 * warps>>>(paths, iters, out, sink);
        CKL();
        long long o;
        CK(cudaMemcpy(&o, out, sizeof o, cudaMemcpyDeviceToHost));
        c.push_back((double)o / iters);
      }
      printf("{\"section\": \"divergence\", \"paths\": %d, \"warps\": %d, \"ffma_per_path\": 16, "
             "\"cycles_per_iteration\": %.1f, \"cycles_per_path\": %.2f}\n",
             paths, warps, median(c), median(c) / paths);
      fflush(stdout);
    }
  }
  CK(cudaFree(out));
  CK(cudaFree(sink));
}

// ------------------------------------------------------------------------------------------------
// 8. launch overhead
// ------------------------------------------------------------------------------------------------
__global__ void k_empty() {}
__global__ void k_empty_args(const float* a, float* b, int n) { if (n < 0) b[0] = a[0]; }

static void launch_overhead() {
  const int N = g_quick ? 200 : 2000;
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int i = 0; i < 100; i++) k_empty<<<1, 32, 0, s>>>();
  CKL();
  CK(cudaStreamSynchronize(s));
  auto stream_run = [&](int blocks, int threads) {
    std::vector<double> us;
    for (int r = 0; r < 5; r++) {
      CK(cudaEventRecord(e0, s));
      for (int i = 0; i < N; i++) k_empty<<<blocks, threads, 0, s>>>();
      CK(cudaEventRecord(e1, s));
      CK(cudaEventSynchronize(e1));
      CKL();
      float ms;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      us.push_back(ms * 1000.0 / N);
    }
    return median(us);
  };
  double us_1 = stream_run(1, 32), us_big = stream_run(g_sms * 8, 256);
  // host-side cost of one launch call, and of a launch + synchronize round trip
  std::vector<double> call_us, rt_us;
  for (int r = 0; r < 5; r++) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < N; i++) k_empty<<<1, 32, 0, s>>>();
    auto t1 = std::chrono::steady_clock::now();
    CK(cudaStreamSynchronize(s));
    call_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / N);
  }
  for (int r = 0; r < 200; r++) {
    auto t0 = std::chrono::steady_clock::now();
    k_empty<<<1, 32, 0, s>>>();
    CK(cudaStreamSynchronize(s));
    auto t1 = std::chrono::steady_clock::now();
    rt_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  // CUDA graph of N empty kernels
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < N; i++) k_empty<<<1, 32, 0, s>>>();
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  CK(cudaGraphLaunch(ge, s));
  CK(cudaStreamSynchronize(s));
  std::vector<double> gus;
  for (int r = 0; r < 5; r++) {
    CK(cudaEventRecord(e0, s));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    gus.push_back(ms * 1000.0 / N);
  }
  printf("{\"section\": \"launch_overhead\", \"launches\": %d, \"us_per_empty_kernel_back_to_back\": %.3f, "
         "\"us_per_empty_kernel_back_to_back_grid_%dx256\": %.3f, \"us_host_launch_call\": %.3f, "
         "\"us_launch_plus_sync_roundtrip_median\": %.2f, \"us_launch_plus_sync_roundtrip_p10\": %.2f, "
         "\"us_per_kernel_in_cuda_graph\": %.3f}\n",
         N, us_1, g_sms * 8, us_big, median(call_us), median(rt_us), pct(rt_us, 10), median(gus));
  fflush(stdout);
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  CK(cudaStreamDestroy(s));
}

int main(int argc, char** argv) {
  std::vector<std::string> only;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) g_quick = true;
    else only.push_back(argv[i]);
  }
  auto want = [&](const char* s) { return only.empty() || std::find(only.begin(), only.end(), s) != only.end(); };
  auto t0 = std::chrono::steady_clock::now();
  properties();
  auto stamp = [&](const char* s) {
    printf("{\"section\": \"timing\", \"done\": \"%s\", \"seconds\": %.2f, \"sm_mhz_now\": %.0f}\n", s,
           std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), sm_clock_mhz());
    fflush(stdout);
  };
  stamp("properties");
  if (want("ops")) { op_latencies(); stamp("ops"); }
  if (want("shared")) { shared_memory(); stamp("shared"); }
  if (want("divergence")) { divergence(); stamp("divergence"); }
  if (want("launch")) { launch_overhead(); stamp("launch"); }
  if (want("atomics")) { atomics(); stamp("atomics"); }
  if (want("bandwidth")) { bandwidth(); stamp("bandwidth"); }
  if (want("chase")) { pointer_chase(); stamp("chase"); }
  printf("{\"section\": \"end\"}\n");
  return 0;
}
