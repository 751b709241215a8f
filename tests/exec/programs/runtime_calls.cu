// gpusim exec's test of its CUDA runtime: every call gpusim implements, with the error codes a GPU returns.
// Each check prints "ok NAME" or "FAIL NAME (what happened)"; device facts print as "fact NAME VALUE" for
// tests/exec/test_programs.py to compare with the config. The last checks fault a kernel: every call after
// it returns cudaErrorIllegalAddress, as on a GPU. Build: nvcc -cudart shared -arch=sm_80 -o runtime_calls
// runtime_calls.cu (tests/exec/programs/build.sh).
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <cuda_runtime.h>

static int failures = 0;
#define CHECK(name, cond, ...)                                                          \
    do {                                                                                \
        if (cond) printf("ok %s\n", name);                                              \
        else { printf("FAIL %s (", name); printf(__VA_ARGS__); printf(")\n"); failures++; } \
    } while (0)
#define IS(name, call, want)                                                            \
    do {                                                                                \
        cudaError_t e_ = (call);                                                        \
        CHECK(name, e_ == (want), "%s, expected %s", cudaGetErrorName(e_), cudaGetErrorName(want)); \
    } while (0)

__device__ int d_counter;
__device__ float d_table[4] = {1.5f, 2.5f, 3.5f, 4.5f};
__constant__ float c_scale[2];

__global__ void scale(float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * c_scale[0] + c_scale[1] + d_table[i % 4];
    if (i == 0) atomicAdd(&d_counter, 1);
}

__global__ void dyn_shared_sum(const int *in, int *out) {
    extern __shared__ int buf[];
    buf[threadIdx.x] = in[threadIdx.x];
    __syncthreads();
    if (threadIdx.x == 0) {
        int s = 0;
        for (int i = 0; i < blockDim.x; i++) s += buf[i];
        *out = s;
    }
}

__global__ void read_past_end(const float *x, int n, float *out) { *out = x[n]; }  // one element past the end

__global__ void wild_write(int *p) { p[threadIdx.x] = 1; }

static int host_calls = 0;
static void CUDART_CB on_host(void *data) { host_calls += *(int *)data; }
static void CUDART_CB on_callback(cudaStream_t, cudaError_t status, void *data) {
    if (status == cudaSuccess) host_calls += *(int *)data;
}

int main() {
    // ---- device -------------------------------------------------------------------------------------
    int count = 0, dev = -1;
    IS("cudaGetDeviceCount", cudaGetDeviceCount(&count), cudaSuccess);
    CHECK("one device", count == 1, "%d", count);
    IS("cudaSetDevice", cudaSetDevice(0), cudaSuccess);
    IS("cudaSetDevice(1)", cudaSetDevice(1), cudaErrorInvalidDevice);
    IS("cudaGetLastError after a failed call", cudaGetLastError(), cudaErrorInvalidDevice);
    IS("cudaGetLastError resets", cudaGetLastError(), cudaSuccess);
    IS("cudaGetDevice", cudaGetDevice(&dev), cudaSuccess);
    CHECK("device 0", dev == 0, "%d", dev);
    cudaDeviceProp prop;
    IS("cudaGetDeviceProperties", cudaGetDeviceProperties(&prop, 0), cudaSuccess);
    printf("fact name %s\nfact sms %d\nfact cc %d.%d\nfact warp %d\nfact smem_block %zu\nfact global %zu\n",
           prop.name, prop.multiProcessorCount, prop.major, prop.minor, prop.warpSize, prop.sharedMemPerBlock,
           prop.totalGlobalMem);
    printf("fact max_threads %d\nfact l2 %d\nfact regs_sm %d\nfact threads_sm %d\n", prop.maxThreadsPerBlock,
           prop.l2CacheSize, prop.regsPerMultiprocessor, prop.maxThreadsPerMultiProcessor);
    int v = 0;
    IS("cudaDeviceGetAttribute", cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
    CHECK("attribute = property", v == prop.multiProcessorCount, "%d vs %d", v, prop.multiProcessorCount);
    IS("cudaDeviceGetAttribute(clock)", cudaDeviceGetAttribute(&v, cudaDevAttrClockRate, 0), cudaSuccess);
    printf("fact clock_khz %d\n", v);
    int rt = 0, drv = 0;
    IS("cudaRuntimeGetVersion", cudaRuntimeGetVersion(&rt), cudaSuccess);
    IS("cudaDriverGetVersion", cudaDriverGetVersion(&drv), cudaSuccess);
    size_t free_b = 0, total_b = 0, lim = 0;
    IS("cudaMemGetInfo", cudaMemGetInfo(&free_b, &total_b), cudaSuccess);
    CHECK("free <= total", free_b <= total_b && total_b == prop.totalGlobalMem, "%zu %zu", free_b, total_b);
    IS("cudaDeviceSetLimit", cudaDeviceSetLimit(cudaLimitMallocHeapSize, 1 << 24), cudaSuccess);
    IS("cudaDeviceGetLimit", cudaDeviceGetLimit(&lim, cudaLimitMallocHeapSize), cudaSuccess);
    CHECK("limit kept", lim == (1 << 24), "%zu", lim);
    IS("cudaGetErrorString", strcmp(cudaGetErrorString(cudaErrorInvalidValue), "invalid argument") == 0
       ? cudaSuccess : cudaErrorUnknown, cudaSuccess);

    // ---- memory -------------------------------------------------------------------------------------
    const int n = 1000;
    float h[n], back[n];
    for (int i = 0; i < n; i++) h[i] = (float)i;
    float *d = nullptr, *d2 = nullptr;
    IS("cudaMalloc", cudaMalloc(&d, n * sizeof(float)), cudaSuccess);
    IS("cudaMalloc 2", cudaMalloc(&d2, n * sizeof(float)), cudaSuccess);
    CHECK("512-byte aligned", ((size_t)d % 512) == 0 && d2 != d, "%p %p", (void *)d, (void *)d2);
    IS("cudaMemcpy H2D", cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    IS("cudaMemcpy D2D", cudaMemcpy(d2, d, n * sizeof(float), cudaMemcpyDeviceToDevice), cudaSuccess);
    IS("cudaMemcpy D2H", cudaMemcpy(back, d2, n * sizeof(float), cudaMemcpyDefault), cudaSuccess);
    CHECK("copies round trip", memcmp(back, h, sizeof h) == 0, "differ");
    IS("cudaMemcpy past an allocation", cudaMemcpy(back, d, 2 * n * sizeof(float) + 4096, cudaMemcpyDeviceToHost),
       cudaErrorInvalidValue);
    cudaGetLastError();
    IS("cudaMemset", cudaMemset(d2, 0, n * sizeof(float)), cudaSuccess);
    cudaMemcpy(back, d2, sizeof back, cudaMemcpyDeviceToHost);
    CHECK("memset zeroes", back[0] == 0 && back[n - 1] == 0, "%g", back[0]);
    float *pitched = nullptr;
    size_t pitch = 0;
    IS("cudaMallocPitch", cudaMallocPitch((void **)&pitched, &pitch, 10 * sizeof(float), 4), cudaSuccess);
    IS("cudaMemcpy2D", cudaMemcpy2D(pitched, pitch, h, 10 * sizeof(float), 10 * sizeof(float), 4,
                                   cudaMemcpyHostToDevice), cudaSuccess);
    IS("cudaMemset2D", cudaMemset2D(pitched, pitch, 0, 2 * sizeof(float), 4), cudaSuccess);
    float grid2[40];
    IS("cudaMemcpy2D back", cudaMemcpy2D(grid2, 10 * sizeof(float), pitched, pitch, 10 * sizeof(float), 4,
                                        cudaMemcpyDeviceToHost), cudaSuccess);
    CHECK("2D copy", grid2[0] == 0 && grid2[2] == 2 && grid2[13] == 13 && grid2[30] == 0, "%g %g", grid2[2],
          grid2[13]);
    IS("cudaFree", cudaFree(d2), cudaSuccess);
    IS("cudaFree twice", cudaFree(d2), cudaErrorInvalidValue);
    cudaGetLastError();
    IS("cudaFree(nullptr)", cudaFree(nullptr), cudaSuccess);
    cudaFree(pitched);

    float *pinned = nullptr, *mapped = nullptr, *managed = nullptr;
    IS("cudaMallocHost", cudaMallocHost(&pinned, n * sizeof(float)), cudaSuccess);
    pinned[3] = 7.0f;  // the host touches pinned memory directly
    IS("cudaHostAlloc", cudaHostAlloc(&mapped, 256, cudaHostAllocMapped), cudaSuccess);
    void *dptr = nullptr;
    IS("cudaHostGetDevicePointer", cudaHostGetDevicePointer(&dptr, mapped, 0), cudaSuccess);
    CHECK("mapped pointer", dptr == mapped, "%p %p", dptr, (void *)mapped);
    IS("cudaMallocManaged", cudaMallocManaged(&managed, n * sizeof(float)), cudaSuccess);
    for (int i = 0; i < n; i++) managed[i] = 1.0f;
    cudaPointerAttributes pa;
    IS("cudaPointerGetAttributes", cudaPointerGetAttributes(&pa, d), cudaSuccess);
    CHECK("device pointer", pa.type == cudaMemoryTypeDevice && pa.devicePointer == d, "type %d", (int)pa.type);
    IS("cudaPointerGetAttributes managed", cudaPointerGetAttributes(&pa, managed), cudaSuccess);
    CHECK("managed pointer", pa.type == cudaMemoryTypeManaged, "type %d", (int)pa.type);
    static float reg[256];
    IS("cudaHostRegister", cudaHostRegister(reg, sizeof reg, 0), cudaSuccess);
    IS("cudaHostRegister twice", cudaHostRegister(reg, sizeof reg, 0), cudaErrorHostMemoryAlreadyRegistered);
    cudaGetLastError();
    IS("cudaHostUnregister", cudaHostUnregister(reg), cudaSuccess);
    IS("cudaHostUnregister twice", cudaHostUnregister(reg), cudaErrorHostMemoryNotRegistered);
    cudaGetLastError();

    // ---- symbols and a kernel that uses them --------------------------------------------------------
    float scale_h[2] = {2.0f, 1.0f};
    IS("cudaMemcpyToSymbol", cudaMemcpyToSymbol(c_scale, scale_h, sizeof scale_h), cudaSuccess);
    int zero = 0, counter = -1;
    IS("cudaMemcpyToSymbol int", cudaMemcpyToSymbol(d_counter, &zero, sizeof zero), cudaSuccess);
    void *sym = nullptr;
    size_t sym_size = 0;
    IS("cudaGetSymbolAddress", cudaGetSymbolAddress(&sym, d_table), cudaSuccess);
    IS("cudaGetSymbolSize", cudaGetSymbolSize(&sym_size, d_table), cudaSuccess);
    CHECK("symbol size", sym_size == 4 * sizeof(float), "%zu", sym_size);
    scale<<<(n + 127) / 128, 128>>>(d, n);
    IS("launch", cudaGetLastError(), cudaSuccess);
    IS("cudaDeviceSynchronize", cudaDeviceSynchronize(), cudaSuccess);
    IS("cudaMemcpyFromSymbol", cudaMemcpyFromSymbol(&counter, d_counter, sizeof counter), cudaSuccess);
    CHECK("kernel saw the symbols", counter == 1, "%d", counter);
    cudaMemcpy(back, d, sizeof back, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int i = 0; i < n; i++) bad += back[i] != h[i] * 2.0f + 1.0f + (1.5f + (i % 4));
    CHECK("kernel values", bad == 0, "%d wrong", bad);
    scale<<<(n + 127) / 128, 128>>>(managed, n);
    cudaDeviceSynchronize();
    CHECK("managed memory", managed[5] == 1.0f * 2 + 1 + 2.5f, "%g", managed[5]);

    // ---- launches: explicit, dynamic shared memory, bad configurations -----------------------------
    int *din = nullptr, *dout = nullptr, hin[64], sum = 0;
    for (int i = 0; i < 64; i++) hin[i] = i;
    cudaMalloc(&din, sizeof hin);
    cudaMalloc(&dout, sizeof(int));
    cudaMemcpy(din, hin, sizeof hin, cudaMemcpyHostToDevice);
    void *args[] = {&din, &dout};
    IS("cudaLaunchKernel", cudaLaunchKernel((const void *)dyn_shared_sum, dim3(1), dim3(64), args, 64 * sizeof(int),
                                            0), cudaSuccess);
    cudaMemcpy(&sum, dout, sizeof sum, cudaMemcpyDeviceToHost);
    CHECK("dynamic shared memory", sum == 63 * 64 / 2, "%d", sum);
    dyn_shared_sum<<<1, 2048, 0>>>(din, dout);
    IS("block of 2048 threads", cudaGetLastError(), cudaErrorInvalidConfiguration);
    dyn_shared_sum<<<dim3(1, 70000), 32, 0>>>(din, dout);
    IS("grid.y of 70000", cudaPeekAtLastError(), cudaErrorInvalidConfiguration);
    IS("cudaGetLastError after peek", cudaGetLastError(), cudaErrorInvalidConfiguration);
    IS("not sticky", cudaMemcpy(&sum, dout, sizeof sum, cudaMemcpyDeviceToHost), cudaSuccess);
    cudaFuncAttributes fa;
    IS("cudaFuncGetAttributes", cudaFuncGetAttributes(&fa, dyn_shared_sum), cudaSuccess);
    CHECK("function attributes", fa.maxThreadsPerBlock == prop.maxThreadsPerBlock && fa.numRegs > 0, "%d %d",
          fa.maxThreadsPerBlock, fa.numRegs);
    IS("cudaFuncSetAttribute", cudaFuncSetAttribute(dyn_shared_sum, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                    64 * 1024), cudaSuccess);
    int blocks = 0;
    IS("cudaOccupancyMaxActiveBlocksPerMultiprocessor",
       cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, dyn_shared_sum, 256, 0), cudaSuccess);
    printf("fact occupancy_256 %d\n", blocks);
    float *past = nullptr, *pout = nullptr, pv = -1;
    cudaMalloc(&past, 100 * sizeof(float));
    cudaMalloc(&pout, sizeof(float));
    cudaMemset(past, 0, 100 * sizeof(float));
    read_past_end<<<1, 1>>>(past, 100, pout);
    IS("a read just past an allocation does not fault", cudaDeviceSynchronize(), cudaSuccess);
    cudaMemcpy(&pv, pout, sizeof pv, cudaMemcpyDeviceToHost);
    CHECK("it reads the page's bytes", pv == 0.0f, "%g", pv);

    // ---- streams, events, host functions ------------------------------------------------------------
    cudaStream_t s1, s2;
    cudaEvent_t e0, e1, quiet;
    IS("cudaStreamCreate", cudaStreamCreate(&s1), cudaSuccess);
    IS("cudaStreamCreateWithFlags", cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), cudaSuccess);
    unsigned flags = 0;
    IS("cudaStreamGetFlags", cudaStreamGetFlags(s2, &flags), cudaSuccess);
    CHECK("non-blocking", flags == cudaStreamNonBlocking, "%u", flags);
    IS("cudaEventCreate", cudaEventCreate(&e0), cudaSuccess);
    IS("cudaEventCreate 2", cudaEventCreate(&e1), cudaSuccess);
    IS("cudaEventCreateWithFlags", cudaEventCreateWithFlags(&quiet, cudaEventDisableTiming), cudaSuccess);
    IS("cudaEventRecord", cudaEventRecord(e0, s1), cudaSuccess);
    IS("cudaMemcpyAsync", cudaMemcpyAsync(d, pinned, n * sizeof(float), cudaMemcpyHostToDevice, s1), cudaSuccess);
    scale<<<(n + 127) / 128, 128, 0, s1>>>(d, n);
    IS("cudaMemsetAsync", cudaMemsetAsync(dout, 0, sizeof(int), s2), cudaSuccess);
    IS("cudaEventRecord 2", cudaEventRecord(e1, s1), cudaSuccess);
    IS("cudaStreamWaitEvent", cudaStreamWaitEvent(s2, e1, 0), cudaSuccess);
    int one = 1, ten = 10;
    IS("cudaLaunchHostFunc", cudaLaunchHostFunc(s2, on_host, &one), cudaSuccess);
    IS("cudaStreamAddCallback", cudaStreamAddCallback(s1, on_callback, &ten, 0), cudaSuccess);
    IS("cudaStreamSynchronize", cudaStreamSynchronize(s1), cudaSuccess);
    IS("cudaStreamQuery", cudaStreamQuery(s2), cudaSuccess);
    IS("cudaEventSynchronize", cudaEventSynchronize(e1), cudaSuccess);
    IS("cudaEventQuery", cudaEventQuery(e1), cudaSuccess);
    CHECK("host functions ran", host_calls == 11, "%d", host_calls);
    float ms = -1;
    IS("cudaEventElapsedTime", cudaEventElapsedTime(&ms, e0, e1), cudaSuccess);
    CHECK("elapsed time is positive", ms > 0, "%g", ms);
    printf("fact elapsed_ms %.9g\n", ms);
    IS("cudaEventElapsedTime without timing", cudaEventElapsedTime(&ms, e0, quiet), cudaErrorInvalidResourceHandle);
    cudaGetLastError();
    IS("cudaEventDestroy", cudaEventDestroy(quiet), cudaSuccess);
    IS("cudaStreamDestroy", cudaStreamDestroy(s2), cudaSuccess);
    IS("cudaStreamDestroy twice", cudaStreamDestroy(s2), cudaErrorInvalidResourceHandle);
    cudaGetLastError();
    typedef cudaError_t (*sync_fn)(void);
    sync_fn old = (sync_fn)dlsym(RTLD_DEFAULT, "cudaThreadSynchronize");  // removed from CUDA 13's headers
    CHECK("cudaThreadSynchronize exported", old != nullptr, "dlsym");
    if (old) IS("cudaThreadSynchronize", old(), cudaSuccess);
    IS("cudaFreeHost", cudaFreeHost(pinned), cudaSuccess);
    IS("cudaFree(managed)", cudaFree(managed), cudaSuccess);

    // ---- what gpusim does not implement, then a kernel fault ----------------------------------------
    cudaGraph_t graph;
    IS("an unimplemented call", cudaGraphCreate(&graph, 0), cudaErrorNotSupported);
    cudaGetLastError();
    wild_write<<<1, 32>>>((int *)0x10);
    IS("a faulting launch returns success", cudaGetLastError(), cudaSuccess);
    IS("the fault at the next synchronisation", cudaDeviceSynchronize(), cudaErrorIllegalAddress);
    IS("sticky: cudaMalloc", cudaMalloc(&d2, 16), cudaErrorIllegalAddress);
    IS("sticky: cudaGetLastError", cudaGetLastError(), cudaErrorIllegalAddress);
    printf("%d failures\n", failures);
    return failures ? 1 : 0;
}
