// Double-precision PTX as nvcc writes it at -O3 (the default): one kernel a family, each lane writing its
// results for inputs x[i], y[i], z[i] at out[k * n + i]. tests/isa/test_ptx_f64.py checks every lane against
// numpy float64 (exact rationals where numpy has no such rounding). f64_ops.ptx beside it is nvcc 13.0's
// output (`nvcc -ptx -arch=sm_80 -lineinfo`), checked in for machines without nvcc.
#include <cuda_fp16.h>

#define OUT(k) out[(k) * n + i]

// add/sub/mul/fma/div/rcp/sqrt with every rounding mode, rsqrt, min/max, copysign, abs, neg
extern "C" __global__ void f64_arith(const double* x, const double* y, const double* z, double* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double a = x[i], b = y[i], c = z[i];
  OUT(0) = a + b;
  OUT(1) = a - b;
  OUT(2) = a * b;
  OUT(3) = __fma_rn(a, b, c);
  OUT(4) = a / b;
  OUT(5) = sqrt(a);
  OUT(6) = 1.0 / a;
  OUT(7) = fmin(a, b);
  OUT(8) = fmax(a, b);
  OUT(9) = copysign(a, b);
  OUT(10) = fabs(a);
  OUT(11) = -a;
  OUT(12) = __dadd_rn(a, b);
  OUT(13) = __dadd_rz(a, b);
  OUT(14) = __dadd_ru(a, b);
  OUT(15) = __dadd_rd(a, b);
  OUT(16) = __dsub_rn(a, b);
  OUT(17) = __dsub_rz(a, b);
  OUT(18) = __dsub_ru(a, b);
  OUT(19) = __dsub_rd(a, b);
  OUT(20) = __dmul_rn(a, b);
  OUT(21) = __dmul_rz(a, b);
  OUT(22) = __dmul_ru(a, b);
  OUT(23) = __dmul_rd(a, b);
  OUT(24) = __fma_rz(a, b, c);
  OUT(25) = __fma_ru(a, b, c);
  OUT(26) = __fma_rd(a, b, c);
  OUT(27) = __ddiv_rn(a, b);
  OUT(28) = __ddiv_rz(a, b);
  OUT(29) = __ddiv_ru(a, b);
  OUT(30) = __ddiv_rd(a, b);
  OUT(31) = __drcp_rn(a);
  OUT(32) = __drcp_rz(a);
  OUT(33) = __drcp_ru(a);
  OUT(34) = __drcp_rd(a);
  OUT(35) = __dsqrt_rn(a);
  OUT(36) = __dsqrt_rz(a);
  OUT(37) = __dsqrt_ru(a);
  OUT(38) = __dsqrt_rd(a);
  OUT(39) = rsqrt(a);  // rsqrt.approx.f64
  double r, s;
  asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(r) : "d"(a));  // what libdevice's log, atan, tanh... start from
  asm("rsqrt.approx.ftz.f64 %0, %1;" : "=d"(s) : "d"(a));  // ... and hypot, asin, acos
  OUT(40) = r;
  OUT(41) = s;
}

// conversions from and to double with every rounding mode, and reinterpretations of its bits
extern "C" __global__ void f64_convert(const double* x, const long long* l, const unsigned long long* u,
                                       float* of, int* oi, unsigned* ou, long long* ol, unsigned long long* oul,
                                       double* od, unsigned short* oh, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double a = x[i];
  of[0 * n + i] = (float)a;
  of[1 * n + i] = __double2float_rz(a);
  of[2 * n + i] = __double2float_ru(a);
  of[3 * n + i] = __double2float_rd(a);
  oi[0 * n + i] = __double2int_rn(a);
  oi[1 * n + i] = __double2int_rz(a);
  oi[2 * n + i] = __double2int_ru(a);
  oi[3 * n + i] = __double2int_rd(a);
  oi[4 * n + i] = __double2hiint(a);
  oi[5 * n + i] = __double2loint(a);
  ou[0 * n + i] = __double2uint_rn(a);
  ou[1 * n + i] = __double2uint_rz(a);
  ou[2 * n + i] = __double2uint_ru(a);
  ou[3 * n + i] = __double2uint_rd(a);
  ol[0 * n + i] = __double2ll_rn(a);
  ol[1 * n + i] = __double2ll_rz(a);
  ol[2 * n + i] = __double2ll_ru(a);
  ol[3 * n + i] = __double2ll_rd(a);
  ol[4 * n + i] = __double_as_longlong(a);
  oul[0 * n + i] = __double2ull_rn(a);
  oul[1 * n + i] = __double2ull_rz(a);
  oul[2 * n + i] = __double2ull_ru(a);
  oul[3 * n + i] = __double2ull_rd(a);
  long long li = l[i];
  unsigned long long ui = u[i];
  od[0 * n + i] = __ll2double_rn(li);
  od[1 * n + i] = __ll2double_rz(li);
  od[2 * n + i] = __ll2double_ru(li);
  od[3 * n + i] = __ll2double_rd(li);
  od[4 * n + i] = __ull2double_rn(ui);
  od[5 * n + i] = __ull2double_rz(ui);
  od[6 * n + i] = __ull2double_ru(ui);
  od[7 * n + i] = __ull2double_rd(ui);
  od[8 * n + i] = (double)(int)li;
  od[9 * n + i] = (double)(unsigned)ui;
  od[10 * n + i] = (double)(float)a;  // cvt.rn.f32.f64 then cvt.f64.f32
  od[11 * n + i] = floor(a);
  od[12 * n + i] = ceil(a);
  od[13 * n + i] = trunc(a);
  od[14 * n + i] = rint(a);
  od[15 * n + i] = __hiloint2double(__double2loint(a), __double2hiint(a));  // the words swapped
  od[16 * n + i] = __longlong_as_double(li);
  oh[i] = __half_as_ushort(__double2half(a));
}

// classification: isnan / isinf / isfinite / signbit as nvcc writes them (setp), and testp
#define TESTP(op, k) \
  asm("{ .reg .pred p; testp." #op ".f64 p, %1; selp.u32 %0, 1, 0, p; }" : "=r"(t) : "d"(a)); out[(k) * n + i] = t;
extern "C" __global__ void f64_classify(const double* x, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double a = x[i];
  int t;
  out[0 * n + i] = isnan(a);
  out[1 * n + i] = isinf(a);
  out[2 * n + i] = isfinite(a);
  out[3 * n + i] = signbit(a);
  TESTP(finite, 4)
  TESTP(infinite, 5)
  TESTP(number, 6)
  TESTP(notanumber, 7)
  TESTP(normal, 8)
  TESTP(subnormal, 9)
}

// warp shuffles of doubles (two shfl.sync.b32 of the halves) and atomicAdd of doubles (atom.add.f64)
extern "C" __global__ void f64_warp(const double* x, double* out, double* sums, double* old, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double a = x[i];
  int lane = threadIdx.x % 32;
  OUT(0) = __shfl_down_sync(0xffffffff, a, 1);
  OUT(1) = __shfl_xor_sync(0xffffffff, a, 5);
  OUT(2) = __shfl_sync(0xffffffff, a, (lane * 7) % 32);
  OUT(3) = __shfl_up_sync(0xffffffff, a, 3);
  old[i] = atomicAdd(&sums[i % 4], a);
}

// libdevice's double functions (those nvcc inlines whole, without calls): built from fma.rn.f64, the
// rcp/rsqrt approximations, ex2/lg2.approx.ftz.f32 and bit manipulation
extern "C" __global__ void f64_libm(const double* x, const double* y, double* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double a = x[i], b = y[i];
  OUT(0) = exp(a);
  OUT(1) = log(b);
  OUT(2) = exp2(a);
  OUT(3) = log2(b);
  OUT(4) = log10(b);
  OUT(5) = expm1(a);
  OUT(6) = log1p(b);
  OUT(7) = cbrt(a);
  OUT(8) = rcbrt(a);
  OUT(9) = tanh(a);
  OUT(10) = erf(a);
  OUT(11) = atan(a);
  OUT(12) = atan2(a, b);
  OUT(13) = hypot(a, b);
  OUT(14) = cosh(a);
  OUT(15) = sinh(a);
  OUT(16) = asin(a / (1.0 + fabs(a)));
  OUT(17) = acos(a / (1.0 + fabs(a)));
}
