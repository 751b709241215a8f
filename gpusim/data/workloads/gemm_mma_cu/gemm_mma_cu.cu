// C = A @ Bt.T on the tensor cores, written in CUDA C with inline PTX (mma.sync, ldmatrix, cp.async): the
// design of gemm_mma.sasm (gemm_mma/generate.py), so the two can be compared instruction for instruction.
// A 128-thread block computes a 128 x 128 tile of C, its 4 warps 2 x 2, 64 x 64 each; A and Bt (n x n f16,
// row-major) reach shared memory by 16-byte cp.async in tiles of 128 rows x 64 bytes, `stages` (1..4) of
// them in flight, each 16-byte chunk c of row r stored at chunk c ^ ((r >> 1) & 3) so that ldmatrix.x4 reads
// without bank conflicts; per 64-byte tile two k-steps of 8 ldmatrix.x4 and 32 mma.m16n8k16 a warp.
// n a multiple of 128; grid (n/128, n/128), block 128.
#include <cuda_fp16.h>

#define STAGES_MAX 4
#define ROWS 128          // rows of A (and of Bt) a stage
#define KB 64             // bytes of each row a stage: 32 f16
#define TILE (ROWS * KB)  // bytes of one stage of A (or Bt)

__device__ __forceinline__ unsigned smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void cp_async16(unsigned dst, const void* src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}

__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N> __device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__device__ __forceinline__ void ldsm_x4(unsigned addr, unsigned (&r)[4])
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

__device__ __forceinline__ void mma16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

extern "C" __global__ void __launch_bounds__(128) gemm_mma_cu(const __half* A, const __half* Bt, float* C,
                                                              unsigned n, unsigned stages)
{
    __shared__ __align__(128) unsigned char As[STAGES_MAX * TILE];
    __shared__ __align__(128) unsigned char Bs[STAGES_MAX * TILE];
    const unsigned tx = threadIdx.x, lane = tx & 31, warp = tx >> 5, wm = warp >> 1, wn = warp & 1;
    const unsigned kb = n * 2, ntiles = kb / KB;
    // copies: this thread's rows tx/4 + 32 i (i = 0..3), chunk tx % 4, in A and in Bt
    const unsigned row = tx >> 2, chunk = tx & 3;
    const unsigned st = row * KB + ((chunk ^ ((row >> 1) & 3)) << 4);
    const char* ga = (const char*)A + (size_t)(blockIdx.y * ROWS + row) * kb + chunk * 16;
    const char* gb = (const char*)Bt + (size_t)(blockIdx.x * ROWS + row) * kb + chunk * 16;
    const unsigned as = smem(As), bs = smem(Bs);
    // ldmatrix: A lane l reads row wm*64 + l%16, chunk l/16 (+2 for the second k-step); Bt row
    // wn*64 + l%8 + 8(l/16), chunk (l/8)%2 (+2); both rows' swizzle is (l >> 1) & 3
    const unsigned z = (lane >> 1) & 3;
    const unsigned a_row = as + wm * (64 * KB) + (lane & 15) * KB;
    const unsigned b_row = bs + wn * (64 * KB) + (lane & 7) * KB + (lane >> 4) * (8 * KB);
    const unsigned a_ch[2] = {((lane >> 4) ^ z) << 4, (((lane >> 4) | 2) ^ z) << 4};
    const unsigned b_ch[2] = {(((lane >> 3) & 1) ^ z) << 4, ((((lane >> 3) & 1) | 2) ^ z) << 4};
    float acc[4][8][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j)
#pragma unroll
            for (int r = 0; r < 4; ++r)
                acc[i][j][r] = 0.0f;

    auto issue = [&](unsigned kt, unsigned stage) {  // tile kt's copies into `stage`, one group
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            cp_async16(as + stage * TILE + st + i * 32 * KB, ga + (size_t)i * 32 * kb + kt * KB);
            cp_async16(bs + stage * TILE + st + i * 32 * KB, gb + (size_t)i * 32 * kb + kt * KB);
        }
        cp_commit();
    };
    auto compute = [&](unsigned stage) {
#pragma unroll
        for (int ks = 0; ks < 2; ++ks) {
            unsigned fa[4][4], fb[4][4];
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                ldsm_x4(a_row + stage * TILE + i * 16 * KB + a_ch[ks], fa[i]);
                ldsm_x4(b_row + stage * TILE + i * 16 * KB + b_ch[ks], fb[i]);
            }
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j)
                    mma16816(acc[i][j], fa[i], fb[j / 2][(j % 2) * 2], fb[j / 2][(j % 2) * 2 + 1]);
        }
    };

    for (unsigned s = 0; s + 1 < stages; ++s)  // prologue: tiles 0 .. stages-2
        issue(s, s);
    unsigned cs = 0, ls = stages - 1;  // the stage computed, the stage refilled (a ring of `stages`)
    for (unsigned kt = 0; kt < ntiles; ++kt) {
        if (stages == 1) {  // copy the tile, wait for it, compute, let everyone finish before the next copy
            issue(kt, 0);
            cp_wait<0>();
            __syncthreads();
            compute(0);
            __syncthreads();
            continue;
        }
        if (stages == 2)  // tile kt has landed
            cp_wait<0>();
        else if (stages == 3)
            cp_wait<1>();
        else
            cp_wait<2>();
        __syncthreads();  // everyone has tile kt, and has finished with tile kt - 1, whose stage is refilled
        const unsigned next = kt + stages - 1;
        if (next < ntiles)
            issue(next, ls);
        else
            cp_commit();  // an empty group keeps the count of groups in flight
        compute(cs);
        cs = cs + 1 == stages ? 0 : cs + 1;
        ls = ls + 1 == stages ? 0 : ls + 1;
    }
    // acc[i][j][r] is C[row0 + 16 i + 8 (r / 2)][col0 + 8 j + r % 2]
    const unsigned row0 = blockIdx.y * ROWS + wm * 64 + (lane >> 2), col0 = blockIdx.x * ROWS + wn * 64 + 2 * (lane & 3);
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h)
                *(float2*)&C[(size_t)(row0 + 16 * i + 8 * h) * n + col0 + 8 * j] =
                    make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
}
