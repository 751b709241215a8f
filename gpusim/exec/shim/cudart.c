/* gpusim's CUDA runtime: a libcudart.so.13 that forwards every runtime call to a gpusim process.

   `gpusim exec ./app` builds this file once with the system C compiler (gpusim/exec/shim.py) and runs the
   application with it first on the library path (and preloaded), so an application built with
   `nvcc -cudart shared` calls these functions instead of NVIDIA's runtime. Each call becomes one request on
   the socket gpusim passed in GPUSIM_EXEC_FD (a header, 64-bit words, a byte blob) and one reply (a
   cudaError_t, words, a blob): gpusim/exec/protocol.py is the other side, and tests/exec/test_protocol.py
   checks that the operation numbers below agree with it.

   Device memory is a memfd that gpusim created (GPUSIM_EXEC_MEMFD): mapped here at the device addresses
   (GPUSIM_EXEC_BASE) with no access, except where gpusim maps managed and pinned-host allocations (the
   host touches those directly), and once more, readable and writable, at an address of its own: the
   window this library copies through. So a copy is a memmove here after gpusim has checked it and put it
   on the simulated timeline; a host dereference of a cudaMalloc pointer faults, as it does on a GPU.

   What gpusim does not implement is exported all the same (the list at the end, every name NVIDIA's
   libcudart.so.13 exports): such a call prints one line naming it and returns cudaErrorNotSupported. */

#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define API __attribute__((visibility("default")))

typedef int cudaError_t;
typedef struct { unsigned int x, y, z; } dim3;
typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
typedef void *cudaKernel_t;
typedef void (*cudaStreamCallback_t)(cudaStream_t, cudaError_t, void *);
typedef void (*cudaHostFn_t)(void *);

enum {
    cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2, cudaErrorInitializationError = 3,
    cudaErrorInvalidSymbol = 13, cudaErrorInvalidDevicePointer = 17, cudaErrorMissingConfiguration = 52,
    cudaErrorNotSupported = 801, cudaErrorUnknown = 999,
};
enum { H2H = 0, H2D = 1, D2H = 2, D2D = 3, DEFAULT_KIND = 4 };

/* ---- the protocol (gpusim/exec/protocol.py: OPS) ----------------------------------------------------- */
enum op {
    OP_HELLO = 1, OP_FATBIN = 2, OP_FATBIN_END = 3, OP_FUNCTION = 4, OP_VAR = 5, OP_PARAMS = 6, OP_LAUNCH = 7,
    OP_MALLOC = 8, OP_FREE = 9, OP_MEMCPY = 10, OP_MEMCPY2D = 11, OP_MEMSET = 12, OP_MEMSET2D = 13,
    OP_SYMBOL = 14, OP_DEVICE_SYNC = 15, OP_STREAM_CREATE = 16, OP_STREAM_DESTROY = 17, OP_STREAM_SYNC = 18,
    OP_STREAM_QUERY = 19, OP_STREAM_WAIT_EVENT = 20, OP_EVENT_CREATE = 21, OP_EVENT_DESTROY = 22,
    OP_EVENT_RECORD = 23, OP_EVENT_SYNC = 24, OP_EVENT_QUERY = 25, OP_EVENT_ELAPSED = 26, OP_PROPERTIES = 27,
    OP_ATTRIBUTE = 28, OP_MEM_INFO = 29, OP_FUNC_ATTRIBUTES = 30, OP_FUNC_SET_ATTRIBUTE = 31, OP_OCCUPANCY = 32,
    OP_POINTER = 33, OP_HOST_REGISTER = 34, OP_HOST_UNREGISTER = 35, OP_LIMIT = 36, OP_DEVICE_RESET = 37,
    OP_UNSUPPORTED = 38, OP_HOST_FUNC = 39, OP_SET_DEVICE = 40, OP_STREAM_INFO = 41, OP_FUNC_NAME = 42,
    OP_CHECK = 43, OP_HOST_POINTER = 44,
};

struct req_header { uint32_t op, nwords; uint64_t blen; };
struct rep_header { int32_t status; uint32_t nwords; uint64_t blen; };

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_state;          /* 0: not yet connected; 1: connected; -1: cannot connect (said once) */
static int g_fd = -1;
static uint64_t g_base, g_size;
static char *g_window;       /* the memfd, readable and writable: device address a is g_window + (a - g_base) */
static cudaError_t g_sticky; /* an error that every later call returns (a kernel fault) */
static __thread cudaError_t t_last;

static void say(const char *fmt, ...) {
    char line[600];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
    line[n++] = '\n';
    ssize_t unused = write(2, line, (size_t)n);
    (void)unused;
}

static int write_all(const void *p, size_t n) {
    const char *c = p;
    while (n) {
        ssize_t k = write(g_fd, c, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        c += k; n -= (size_t)k;
    }
    return 0;
}

static int read_all(void *p, size_t n) {
    char *c = p;
    while (n) {
        ssize_t k = read(g_fd, c, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        c += k; n -= (size_t)k;
    }
    return 0;
}

static int exchange(uint32_t op, const uint64_t *w, uint32_t nw, const void *blob, uint64_t blen,
                    uint64_t *out, uint32_t nout, void *rblob, uint64_t rcap, uint64_t *rlen, int32_t *status);

static int connect_locked(void) {
    if (g_state) return g_state > 0;
    const char *fd = getenv("GPUSIM_EXEC_FD"), *mfd = getenv("GPUSIM_EXEC_MEMFD");
    const char *base = getenv("GPUSIM_EXEC_BASE"), *size = getenv("GPUSIM_EXEC_SIZE");
    g_state = -1;
    if (!fd || !mfd || !base || !size) {
        say("gpusim: this libcudart.so.13 is gpusim's CUDA runtime: run the program with `gpusim exec -- PROGRAM`");
        return 0;
    }
    g_fd = atoi(fd);
    int memfd = atoi(mfd);
    g_base = strtoull(base, NULL, 0);
    g_size = strtoull(size, NULL, 0);
    void *at = mmap((void *)(uintptr_t)g_base, g_size, PROT_NONE, MAP_SHARED | MAP_FIXED_NOREPLACE | MAP_NORESERVE,
                    memfd, 0);
    if (at == MAP_FAILED || (uint64_t)(uintptr_t)at != g_base) {
        say("gpusim: cannot map device memory at 0x%llx in this process (%s)", (unsigned long long)g_base,
            strerror(errno));
        return 0;
    }
    g_window = mmap(NULL, g_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, memfd, 0);
    if (g_window == MAP_FAILED) {
        say("gpusim: cannot map the device memory window (%s)", strerror(errno));
        return 0;
    }
    uint64_t pid = (uint64_t)getpid();
    int32_t st = 0;
    g_state = 1;
    if (exchange(OP_HELLO, &pid, 1, NULL, 0, NULL, 0, NULL, 0, NULL, &st) != 0 || st != 0) {
        g_state = -1;
        return 0;
    }
    return 1;
}

/* One request and its reply; the caller holds g_lock. Returns -1 when the connection is gone. */
static int exchange(uint32_t op, const uint64_t *w, uint32_t nw, const void *blob, uint64_t blen,
                    uint64_t *out, uint32_t nout, void *rblob, uint64_t rcap, uint64_t *rlen, int32_t *status) {
    struct req_header h = {op, nw, blen};
    struct rep_header r;
    if (write_all(&h, sizeof h) || (nw && write_all(w, 8 * (size_t)nw)) || (blen && write_all(blob, blen)) ||
        read_all(&r, sizeof r)) goto lost;
    for (uint32_t i = 0; i < r.nwords; i++) {
        uint64_t v;
        if (read_all(&v, 8)) goto lost;
        if (i < nout) out[i] = v;
    }
    for (uint64_t i = 0; i < r.blen;) {
        char sink[4096];
        uint64_t k = r.blen - i;
        char *dst = sink;
        if (i < rcap) { dst = (char *)rblob + i; if (k > rcap - i) k = rcap - i; }
        else if (k > sizeof sink) k = sizeof sink;
        if (read_all(dst, k)) goto lost;
        i += k;
    }
    if (rlen) *rlen = r.blen < rcap ? r.blen : rcap;
    *status = r.status;
    return 0;
lost:
    if (g_state > 0) say("gpusim: lost the connection to gpusim; CUDA calls fail from here on");
    g_state = -1;
    return -1;
}

static int is_sticky(cudaError_t e) {
    return e == 700 || e == 702 || e == 710 || e == 714 || e == 715 || e == 716 || e == 717 || e == 718 ||
           e == 719;
}

static cudaError_t ret(cudaError_t e) {
    if (e != cudaSuccess) {
        t_last = e;
        if (is_sticky(e)) g_sticky = e;
    }
    return e;
}

/* A call: words and a blob out, words and a blob back. */
static cudaError_t rpc(uint32_t op, const uint64_t *w, uint32_t nw, const void *blob, uint64_t blen,
                       uint64_t *out, uint32_t nout, void *rblob, uint64_t rcap, uint64_t *rlen) {
    int32_t st = cudaErrorInitializationError;
    pthread_mutex_lock(&g_lock);
    if (connect_locked()) {
        if (exchange(op, w, nw, blob, blen, out, nout, rblob, rcap, rlen, &st) != 0) st = cudaErrorUnknown;
    }
    pthread_mutex_unlock(&g_lock);
    return st;
}

#define W(...) ((const uint64_t[]){__VA_ARGS__}), (uint32_t)(sizeof((uint64_t[]){__VA_ARGS__}) / 8)
#define U(p) ((uint64_t)(uintptr_t)(p))

static cudaError_t call0(uint32_t op) { return ret(rpc(op, NULL, 0, NULL, 0, NULL, 0, NULL, 0, NULL)); }

/* Where this process touches the bytes at address a: device memory through the window, host memory as is. */
static char *view(uint64_t a) {
    if (a >= g_base && a - g_base < g_size) return g_window + (a - g_base);
    return (char *)(uintptr_t)a;
}

/* gpusim tells which ranges of the device mapping the host may touch (managed and pinned memory). */
static void apply_protections(const uint64_t *w, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) {
        uint64_t lo = w[3 * i], hi = w[3 * i + 1], rw = w[3 * i + 2];
        mprotect((void *)(uintptr_t)lo, hi - lo, rw ? PROT_READ | PROT_WRITE : PROT_NONE);
    }
}

/* ---- errors ------------------------------------------------------------------------------------------- */
static const struct { int code; const char *name, *text; } ERRORS[] = {
    {0, "cudaSuccess", "no error"},
    {1, "cudaErrorInvalidValue", "invalid argument"},
    {2, "cudaErrorMemoryAllocation", "out of memory"},
    {3, "cudaErrorInitializationError", "initialization error"},
    {9, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
    {12, "cudaErrorInvalidPitchValue", "invalid pitch argument"},
    {13, "cudaErrorInvalidSymbol", "invalid device symbol"},
    {16, "cudaErrorInvalidHostPointer", "invalid host pointer"},
    {17, "cudaErrorInvalidDevicePointer", "invalid device pointer"},
    {21, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
    {31, "cudaErrorNotYetImplemented", "feature not yet implemented"},
    {35, "cudaErrorInsufficientDriver", "CUDA driver version is insufficient for CUDA runtime version"},
    {52, "cudaErrorMissingConfiguration", "__global__ function call is not configured"},
    {98, "cudaErrorInvalidDeviceFunction", "invalid device function"},
    {100, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {101, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {200, "cudaErrorInvalidKernelImage", "device kernel image is invalid"},
    {209, "cudaErrorNoKernelImageForDevice", "no kernel image is available for execution on the device"},
    {218, "cudaErrorInvalidPtx", "a PTX JIT compilation failed"},
    {217, "cudaErrorPeerAccessUnsupported", "peer access is not supported between these two devices"},
    {400, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {500, "cudaErrorSymbolNotFound", "named symbol not found"},
    {600, "cudaErrorNotReady", "device not ready"},
    {700, "cudaErrorIllegalAddress", "an illegal memory access was encountered"},
    {701, "cudaErrorLaunchOutOfResources", "too many resources requested for launch"},
    {702, "cudaErrorLaunchTimeout", "the launch timed out and was terminated"},
    {710, "cudaErrorAssert", "device-side assert triggered"},
    {712, "cudaErrorHostMemoryAlreadyRegistered", "part or all of the requested memory range is already mapped"},
    {713, "cudaErrorHostMemoryNotRegistered", "pointer does not correspond to a registered memory region"},
    {715, "cudaErrorIllegalInstruction", "an illegal instruction was encountered"},
    {716, "cudaErrorMisalignedAddress", "misaligned address"},
    {717, "cudaErrorInvalidAddressSpace", "operation not supported on global/shared address space"},
    {718, "cudaErrorInvalidPc", "invalid program counter"},
    {719, "cudaErrorLaunchFailure", "unspecified launch failure"},
    {720, "cudaErrorCooperativeLaunchTooLarge", "too many blocks in cooperative launch"},
    {801, "cudaErrorNotSupported", "operation not supported"},
    {999, "cudaErrorUnknown", "unknown error"},
};

API const char *cudaGetErrorString(cudaError_t e) {
    for (size_t i = 0; i < sizeof ERRORS / sizeof *ERRORS; i++)
        if (ERRORS[i].code == e) return ERRORS[i].text;
    return "unrecognized error code";
}

API const char *cudaGetErrorName(cudaError_t e) {
    for (size_t i = 0; i < sizeof ERRORS / sizeof *ERRORS; i++)
        if (ERRORS[i].code == e) return ERRORS[i].name;
    return "cudaErrorUnknown";
}

API cudaError_t cudaGetLastError(void) {
    cudaError_t e = t_last;
    t_last = g_sticky;
    return e;
}

API cudaError_t cudaPeekAtLastError(void) { return t_last; }

/* ---- what gpusim does not implement ------------------------------------------------------------------- */
static cudaError_t unsupported(const char *name) {
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static const char *said[64];
    static int nsaid;
    int first = 1;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nsaid; i++) if (said[i] == name) first = 0;
    if (first && nsaid < 64) said[nsaid++] = name;
    pthread_mutex_unlock(&lock);
    if (first) {
        say("gpusim: %s is not supported by gpusim exec (it returns cudaErrorNotSupported)", name);
        rpc(OP_UNSUPPORTED, NULL, 0, name, strlen(name), NULL, 0, NULL, 0, NULL);
    }
    return ret(cudaErrorNotSupported);
}

/* ---- device ------------------------------------------------------------------------------------------- */
API cudaError_t cudaGetDeviceCount(int *n) {
    uint64_t o[1] = {0};
    cudaError_t e = rpc(OP_CHECK, NULL, 0, NULL, 0, o, 1, NULL, 0, NULL);
    if (n) *n = e == cudaSuccess ? 1 : 0;
    return ret(e == cudaSuccess ? cudaSuccess : 100);
}
API cudaError_t cudaGetDevice(int *d) { if (!d) return ret(cudaErrorInvalidValue); *d = 0; return cudaSuccess; }
API cudaError_t cudaSetDevice(int d) { return ret(rpc(OP_SET_DEVICE, W((uint64_t)(int64_t)d), NULL, 0, NULL, 0, NULL, 0, NULL)); }
API cudaError_t cudaInitDevice(int d, unsigned a, unsigned b) { (void)a; (void)b; return cudaSetDevice(d); }
API cudaError_t cudaSetDeviceFlags(unsigned flags) { (void)flags; return call0(OP_CHECK); }
API cudaError_t cudaGetDeviceFlags(unsigned *flags) { if (flags) *flags = 0; return call0(OP_CHECK); }
API cudaError_t cudaSetValidDevices(int *devs, int n) { (void)devs; (void)n; return call0(OP_CHECK); }
API cudaError_t cudaChooseDevice(int *d, const void *prop) { (void)prop; if (d) *d = 0; return call0(OP_CHECK); }
API cudaError_t cudaDeviceSynchronize(void) { return call0(OP_DEVICE_SYNC); }
API cudaError_t cudaThreadSynchronize(void) { return call0(OP_DEVICE_SYNC); }
API cudaError_t cudaDeviceReset(void) {
    cudaError_t e = rpc(OP_DEVICE_RESET, NULL, 0, NULL, 0, NULL, 0, NULL, 0, NULL);
    g_sticky = cudaSuccess;
    t_last = cudaSuccess;
    return ret(e);
}
API cudaError_t cudaThreadExit(void) { return cudaDeviceReset(); }

API cudaError_t cudaGetDeviceProperties(void *prop, int dev) {
    if (!prop) return ret(cudaErrorInvalidValue);
    return ret(rpc(OP_PROPERTIES, W((uint64_t)(int64_t)dev), NULL, 0, NULL, 0, prop, 1008, NULL));
}
API cudaError_t cudaGetDeviceProperties_v2(void *prop, int dev) { return cudaGetDeviceProperties(prop, dev); }

API cudaError_t cudaDeviceGetAttribute(int *value, int attr, int dev) {
    uint64_t o[1] = {0};
    if (!value) return ret(cudaErrorInvalidValue);
    cudaError_t e = rpc(OP_ATTRIBUTE, W((uint64_t)(int64_t)attr, (uint64_t)(int64_t)dev), NULL, 0, o, 1, NULL, 0, NULL);
    if (e == cudaSuccess) *value = (int)(int64_t)o[0];
    return ret(e);
}

static cudaError_t limit(int which, uint64_t set, size_t value, size_t *out) {
    uint64_t o[1] = {0};
    cudaError_t e = rpc(OP_LIMIT, W((uint64_t)which, set, value), NULL, 0, o, 1, NULL, 0, NULL);
    if (e == cudaSuccess && out) *out = o[0];
    return ret(e);
}
API cudaError_t cudaDeviceGetLimit(size_t *v, int which) { if (!v) return ret(cudaErrorInvalidValue); return limit(which, 0, 0, v); }
API cudaError_t cudaDeviceSetLimit(int which, size_t v) { return limit(which, 1, v, NULL); }
API cudaError_t cudaThreadGetLimit(size_t *v, int which) { return cudaDeviceGetLimit(v, which); }
API cudaError_t cudaThreadSetLimit(int which, size_t v) { return cudaDeviceSetLimit(which, v); }
API cudaError_t cudaDeviceGetCacheConfig(int *c) { if (c) *c = 0; return call0(OP_CHECK); }
API cudaError_t cudaDeviceSetCacheConfig(int c) { (void)c; return call0(OP_CHECK); }
API cudaError_t cudaThreadGetCacheConfig(int *c) { return cudaDeviceGetCacheConfig(c); }
API cudaError_t cudaThreadSetCacheConfig(int c) { return cudaDeviceSetCacheConfig(c); }
API cudaError_t cudaDeviceGetSharedMemConfig(int *c) { if (c) *c = 1; return call0(OP_CHECK); }
API cudaError_t cudaDeviceSetSharedMemConfig(int c) { (void)c; return call0(OP_CHECK); }
API cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest) {
    if (least) *least = 0;
    if (greatest) *greatest = -5;
    return call0(OP_CHECK);
}
API cudaError_t cudaDeviceGetPCIBusId(char *id, int len, int dev) {
    if (!id || len <= 0 || dev != 0) return ret(dev != 0 ? 101 : cudaErrorInvalidValue);
    snprintf(id, (size_t)len, "0000:00:00.0");
    return call0(OP_CHECK);
}
API cudaError_t cudaDeviceGetByPCIBusId(int *dev, const char *id) { (void)id; if (dev) *dev = 0; return call0(OP_CHECK); }
API cudaError_t cudaDeviceCanAccessPeer(int *can, int dev, int peer) {
    (void)dev; (void)peer;
    if (can) *can = 0;
    return call0(OP_CHECK);
}
API cudaError_t cudaDriverGetVersion(int *v) { if (v) *v = 13000; return cudaSuccess; }
API cudaError_t cudaRuntimeGetVersion(int *v) { if (v) *v = 13000; return cudaSuccess; }
API cudaError_t cudaMemGetInfo(size_t *free_, size_t *total) {
    uint64_t o[2] = {0, 0};
    cudaError_t e = rpc(OP_MEM_INFO, NULL, 0, NULL, 0, o, 2, NULL, 0, NULL);
    if (free_) *free_ = o[0];
    if (total) *total = o[1];
    return ret(e);
}
API cudaError_t cudaProfilerStart(void) { return cudaSuccess; }
API cudaError_t cudaProfilerStop(void) { return cudaSuccess; }

/* ---- memory ------------------------------------------------------------------------------------------- */
enum { KIND_DEVICE = 0, KIND_MANAGED = 1, KIND_PINNED = 2 };

static cudaError_t alloc(void **p, size_t size, uint64_t kind, uint64_t flags) {
    uint64_t o[1 + 1 + 3 * 8] = {0};
    if (!p) return ret(cudaErrorInvalidValue);
    cudaError_t e = rpc(OP_MALLOC, W(size, kind, flags), NULL, 0, o, 26, NULL, 0, NULL);
    if (e == cudaSuccess) {
        apply_protections(o + 2, o[1] < 8 ? o[1] : 8);
        *p = (void *)(uintptr_t)o[0];
    }
    return ret(e);
}

static cudaError_t release(const void *p, uint64_t kind) {
    uint64_t o[1 + 3 * 8] = {0};
    cudaError_t e = rpc(OP_FREE, W(U(p), kind), NULL, 0, o, 25, NULL, 0, NULL);
    if (e == cudaSuccess) apply_protections(o + 1, o[0] < 8 ? o[0] : 8);
    return ret(e);
}

API cudaError_t cudaMalloc(void **p, size_t size) { return alloc(p, size, KIND_DEVICE, 0); }
API cudaError_t cudaMallocManaged(void **p, size_t size, unsigned flags) { return alloc(p, size, KIND_MANAGED, flags); }
API cudaError_t cudaMallocHost(void **p, size_t size) { return alloc(p, size, KIND_PINNED, 0); }
API cudaError_t cudaHostAlloc(void **p, size_t size, unsigned flags) { return alloc(p, size, KIND_PINNED, flags); }
API cudaError_t cudaMallocAsync(void **p, size_t size, cudaStream_t s) { (void)s; return alloc(p, size, KIND_DEVICE, 0); }
API cudaError_t cudaMallocPitch(void **p, size_t *pitch, size_t width, size_t height) {
    if (!pitch) return ret(cudaErrorInvalidValue);
    size_t w = (width + 511) / 512 * 512;
    cudaError_t e = alloc(p, w * height, KIND_DEVICE, 0);
    if (e == cudaSuccess) *pitch = w;
    return e;
}
API cudaError_t cudaFree(void *p) { return release(p, KIND_DEVICE); }
API cudaError_t cudaFreeAsync(void *p, cudaStream_t s) { (void)s; return release(p, KIND_DEVICE); }
API cudaError_t cudaFreeHost(void *p) { return release(p, KIND_PINNED); }

API cudaError_t cudaHostRegister(void *p, size_t size, unsigned flags) {
    return ret(rpc(OP_HOST_REGISTER, W(U(p), size, flags), NULL, 0, NULL, 0, NULL, 0, NULL));
}
API cudaError_t cudaHostUnregister(void *p) { return ret(rpc(OP_HOST_UNREGISTER, W(U(p)), NULL, 0, NULL, 0, NULL, 0, NULL)); }
API cudaError_t cudaHostGetDevicePointer(void **dev, void *host, unsigned flags) {
    uint64_t o[2] = {0, 0};
    (void)flags;
    if (!dev) return ret(cudaErrorInvalidValue);
    cudaError_t e = rpc(OP_HOST_POINTER, W(U(host)), NULL, 0, o, 2, NULL, 0, NULL);
    if (e == cudaSuccess) *dev = (void *)(uintptr_t)o[0];
    return ret(e);
}
API cudaError_t cudaHostGetFlags(unsigned *flags, void *host) {
    uint64_t o[2] = {0, 0};
    cudaError_t e = rpc(OP_HOST_POINTER, W(U(host)), NULL, 0, o, 2, NULL, 0, NULL);
    if (e == cudaSuccess && flags) *flags = (unsigned)o[1];
    return ret(e);
}
API cudaError_t cudaPointerGetAttributes(void *attr, const void *p) {
    uint64_t o[4] = {0, 0, 0, 0};
    if (!attr) return ret(cudaErrorInvalidValue);
    cudaError_t e = rpc(OP_POINTER, W(U(p)), NULL, 0, o, 4, NULL, 0, NULL);
    if (e == cudaSuccess) {
        struct { int type, device; void *dptr, *hptr; long reserved[8]; } a;
        memset(&a, 0, sizeof a);
        a.type = (int)o[0]; a.device = (int)(int64_t)o[1];
        a.dptr = (void *)(uintptr_t)o[2]; a.hptr = (void *)(uintptr_t)o[3];
        memcpy(attr, &a, sizeof a);
    }
    return ret(e);
}

static cudaError_t copy(void *dst, const void *src, size_t n, int kind, cudaStream_t s, uint64_t async) {
    cudaError_t e = ret(rpc(OP_MEMCPY, W(U(dst), U(src), n, (uint64_t)kind, U(s), async), NULL, 0, NULL, 0, NULL, 0, NULL));
    if (e == cudaSuccess && n) memmove(view(U(dst)), view(U(src)), n);
    return e;
}

API cudaError_t cudaMemcpy(void *d, const void *s, size_t n, int kind) { return copy(d, s, n, kind, NULL, 0); }
API cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, int kind, cudaStream_t st) { return copy(d, s, n, kind, st, 1); }
API cudaError_t cudaMemcpy_ptds(void *d, const void *s, size_t n, int kind) { return copy(d, s, n, kind, (cudaStream_t)2, 0); }
API cudaError_t cudaMemcpyAsync_ptsz(void *d, const void *s, size_t n, int kind, cudaStream_t st) {
    return copy(d, s, n, kind, st ? st : (cudaStream_t)2, 1);
}
API cudaError_t cudaMemcpyPeer(void *d, int dd, const void *s, int sd, size_t n) {
    if (dd != 0 || sd != 0) return ret(101);
    return copy(d, s, n, D2D, NULL, 0);
}
API cudaError_t cudaMemcpyPeerAsync(void *d, int dd, const void *s, int sd, size_t n, cudaStream_t st) {
    if (dd != 0 || sd != 0) return ret(101);
    return copy(d, s, n, D2D, st, 1);
}

static cudaError_t copy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                          int kind, cudaStream_t s, uint64_t async) {
    cudaError_t e = ret(rpc(OP_MEMCPY2D, W(U(dst), dpitch, U(src), spitch, width, height, (uint64_t)kind, U(s), async),
                            NULL, 0, NULL, 0, NULL, 0, NULL));
    if (e == cudaSuccess)
        for (size_t r = 0; r < height && width; r++)
            memmove(view(U(dst) + r * dpitch), view(U(src) + r * spitch), width);
    return e;
}
API cudaError_t cudaMemcpy2D(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, int kind) {
    return copy2d(d, dp, s, sp, w, h, kind, NULL, 0);
}
API cudaError_t cudaMemcpy2DAsync(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, int kind,
                                  cudaStream_t st) {
    return copy2d(d, dp, s, sp, w, h, kind, st, 1);
}

static cudaError_t fill(void *dst, int value, size_t n, cudaStream_t s, uint64_t async) {
    cudaError_t e = ret(rpc(OP_MEMSET, W(U(dst), (uint64_t)(value & 0xff), n, U(s), async), NULL, 0, NULL, 0, NULL, 0, NULL));
    if (e == cudaSuccess && n) memset(view(U(dst)), value, n);
    return e;
}
API cudaError_t cudaMemset(void *d, int v, size_t n) { return fill(d, v, n, NULL, 0); }
API cudaError_t cudaMemsetAsync(void *d, int v, size_t n, cudaStream_t s) { return fill(d, v, n, s, 1); }
API cudaError_t cudaMemset_ptds(void *d, int v, size_t n) { return fill(d, v, n, (cudaStream_t)2, 0); }
API cudaError_t cudaMemsetAsync_ptsz(void *d, int v, size_t n, cudaStream_t s) { return fill(d, v, n, s ? s : (cudaStream_t)2, 1); }

static cudaError_t fill2d(void *dst, size_t pitch, int value, size_t width, size_t height, cudaStream_t s, uint64_t async) {
    cudaError_t e = ret(rpc(OP_MEMSET2D, W(U(dst), pitch, (uint64_t)(value & 0xff), width, height, U(s), async), NULL, 0,
                            NULL, 0, NULL, 0, NULL));
    if (e == cudaSuccess)
        for (size_t r = 0; r < height && width; r++) memset(view(U(dst) + r * pitch), value, width);
    return e;
}
API cudaError_t cudaMemset2D(void *d, size_t p, int v, size_t w, size_t h) { return fill2d(d, p, v, w, h, NULL, 0); }
API cudaError_t cudaMemset2DAsync(void *d, size_t p, int v, size_t w, size_t h, cudaStream_t s) {
    return fill2d(d, p, v, w, h, s, 1);
}

API cudaError_t cudaMemPrefetchAsync(const void *p, size_t n, int dev, cudaStream_t s) {
    (void)p; (void)n; (void)dev; (void)s;
    return call0(OP_CHECK);
}
API cudaError_t cudaMemAdvise(const void *p, size_t n, int advice, int dev) {
    (void)p; (void)n; (void)advice; (void)dev;
    return call0(OP_CHECK);
}
API cudaError_t cudaStreamAttachMemAsync(cudaStream_t s, void *p, size_t n, unsigned flags) {
    (void)s; (void)p; (void)n; (void)flags;
    return call0(OP_CHECK);
}

/* ---- symbols (__device__ and __constant__ variables) ------------------------------------------------ */
static cudaError_t symbol(const void *sym, uint64_t *addr, uint64_t *size) {
    uint64_t o[2] = {0, 0};
    cudaError_t e = rpc(OP_SYMBOL, W(U(sym)), NULL, 0, o, 2, NULL, 0, NULL);
    *addr = o[0];
    *size = o[1];
    return e;
}

static cudaError_t symbol_copy(const void *sym, void *other, size_t n, size_t offset, int kind, int to_symbol,
                               cudaStream_t s, uint64_t async) {
    uint64_t a, size;
    cudaError_t e = symbol(sym, &a, &size);
    if (e != cudaSuccess) return ret(e);
    if (offset > size || n > size - offset) return ret(cudaErrorInvalidValue);
    if (to_symbol) {
        if (kind != H2D && kind != D2D && kind != DEFAULT_KIND) return ret(21);
        return copy((void *)(uintptr_t)(a + offset), other, n, kind, s, async);
    }
    if (kind != D2H && kind != D2D && kind != DEFAULT_KIND) return ret(21);
    return copy(other, (const void *)(uintptr_t)(a + offset), n, kind, s, async);
}
API cudaError_t cudaMemcpyToSymbol(const void *sym, const void *src, size_t n, size_t off, int kind) {
    return symbol_copy(sym, (void *)src, n, off, kind, 1, NULL, 0);
}
API cudaError_t cudaMemcpyFromSymbol(void *dst, const void *sym, size_t n, size_t off, int kind) {
    return symbol_copy(sym, dst, n, off, kind, 0, NULL, 0);
}
API cudaError_t cudaMemcpyToSymbolAsync(const void *sym, const void *src, size_t n, size_t off, int kind, cudaStream_t s) {
    return symbol_copy(sym, (void *)src, n, off, kind, 1, s, 1);
}
API cudaError_t cudaMemcpyFromSymbolAsync(void *dst, const void *sym, size_t n, size_t off, int kind, cudaStream_t s) {
    return symbol_copy(sym, dst, n, off, kind, 0, s, 1);
}
API cudaError_t cudaGetSymbolAddress(void **dev, const void *sym) {
    uint64_t a, size;
    if (!dev) return ret(cudaErrorInvalidValue);
    cudaError_t e = symbol(sym, &a, &size);
    if (e == cudaSuccess) *dev = (void *)(uintptr_t)a;
    return ret(e);
}
API cudaError_t cudaGetSymbolSize(size_t *n, const void *sym) {
    uint64_t a, size;
    if (!n) return ret(cudaErrorInvalidValue);
    cudaError_t e = symbol(sym, &a, &size);
    if (e == cudaSuccess) *n = size;
    return ret(e);
}

/* ---- streams and events ------------------------------------------------------------------------------- */
static cudaError_t new_handle(uint32_t op, void **h, uint64_t flags, uint64_t prio) {
    uint64_t o[1] = {0};
    if (!h) return ret(cudaErrorInvalidValue);
    cudaError_t e = rpc(op, W(flags, prio), NULL, 0, o, 1, NULL, 0, NULL);
    if (e == cudaSuccess) *h = (void *)(uintptr_t)o[0];
    return ret(e);
}
static cudaError_t on(uint32_t op, const void *h) { return ret(rpc(op, W(U(h)), NULL, 0, NULL, 0, NULL, 0, NULL)); }

API cudaError_t cudaStreamCreate(cudaStream_t *s) { return new_handle(OP_STREAM_CREATE, (void **)s, 0, 0); }
API cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned f) { return new_handle(OP_STREAM_CREATE, (void **)s, f, 0); }
API cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s, unsigned f, int p) {
    return new_handle(OP_STREAM_CREATE, (void **)s, f, (uint64_t)(int64_t)p);
}
API cudaError_t cudaStreamDestroy(cudaStream_t s) { return on(OP_STREAM_DESTROY, s); }
API cudaError_t cudaStreamSynchronize(cudaStream_t s) { return on(OP_STREAM_SYNC, s); }
API cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t s) { return on(OP_STREAM_SYNC, s ? s : (cudaStream_t)2); }
API cudaError_t cudaStreamQuery(cudaStream_t s) { return on(OP_STREAM_QUERY, s); }
API cudaError_t cudaStreamQuery_ptsz(cudaStream_t s) { return on(OP_STREAM_QUERY, s ? s : (cudaStream_t)2); }
API cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t ev, unsigned flags) {
    return ret(rpc(OP_STREAM_WAIT_EVENT, W(U(s), U(ev), flags), NULL, 0, NULL, 0, NULL, 0, NULL));
}
API cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t s, cudaEvent_t ev, unsigned flags) {
    return cudaStreamWaitEvent(s ? s : (cudaStream_t)2, ev, flags);
}
static cudaError_t stream_info(cudaStream_t s, uint64_t *o) {
    return ret(rpc(OP_STREAM_INFO, W(U(s)), NULL, 0, o, 2, NULL, 0, NULL));
}
API cudaError_t cudaStreamGetFlags(cudaStream_t s, unsigned *f) {
    uint64_t o[2] = {0, 0};
    cudaError_t e = stream_info(s, o);
    if (f) *f = (unsigned)o[0];
    return e;
}
API cudaError_t cudaStreamGetPriority(cudaStream_t s, int *p) {
    uint64_t o[2] = {0, 0};
    cudaError_t e = stream_info(s, o);
    if (p) *p = (int)(int64_t)o[1];
    return e;
}
API cudaError_t cudaStreamGetDevice(cudaStream_t s, int *d) {
    uint64_t o[2] = {0, 0};
    if (d) *d = 0;
    return stream_info(s, o);
}

/* A host function on a stream: gpusim puts it on the timeline; it runs here, now (the work before it on its
   stream has run: gpusim executes in issue order), on the calling thread. */
API cudaError_t cudaStreamAddCallback(cudaStream_t s, cudaStreamCallback_t cb, void *data, unsigned flags) {
    (void)flags;
    cudaError_t e = on(OP_HOST_FUNC, s);
    if (e == cudaSuccess && cb) cb(s, cudaSuccess, data);
    return e;
}
API cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t s, cudaStreamCallback_t cb, void *data, unsigned flags) {
    return cudaStreamAddCallback(s ? s : (cudaStream_t)2, cb, data, flags);
}
API cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void *data) {
    cudaError_t e = on(OP_HOST_FUNC, s);
    if (e == cudaSuccess && fn) fn(data);
    return e;
}
API cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t s, cudaHostFn_t fn, void *data) {
    return cudaLaunchHostFunc(s ? s : (cudaStream_t)2, fn, data);
}

API cudaError_t cudaEventCreate(cudaEvent_t *ev) { return new_handle(OP_EVENT_CREATE, (void **)ev, 0, 0); }
API cudaError_t cudaEventCreateWithFlags(cudaEvent_t *ev, unsigned f) { return new_handle(OP_EVENT_CREATE, (void **)ev, f, 0); }
API cudaError_t cudaEventDestroy(cudaEvent_t ev) { return on(OP_EVENT_DESTROY, ev); }
API cudaError_t cudaEventRecord(cudaEvent_t ev, cudaStream_t s) {
    return ret(rpc(OP_EVENT_RECORD, W(U(ev), U(s)), NULL, 0, NULL, 0, NULL, 0, NULL));
}
API cudaError_t cudaEventRecord_ptsz(cudaEvent_t ev, cudaStream_t s) { return cudaEventRecord(ev, s ? s : (cudaStream_t)2); }
API cudaError_t cudaEventRecordWithFlags(cudaEvent_t ev, cudaStream_t s, unsigned f) { (void)f; return cudaEventRecord(ev, s); }
API cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t ev, cudaStream_t s, unsigned f) {
    (void)f;
    return cudaEventRecord(ev, s ? s : (cudaStream_t)2);
}
API cudaError_t cudaEventSynchronize(cudaEvent_t ev) { return on(OP_EVENT_SYNC, ev); }
API cudaError_t cudaEventQuery(cudaEvent_t ev) { return on(OP_EVENT_QUERY, ev); }
API cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
    uint64_t o[1] = {0};
    if (!ms) return ret(cudaErrorInvalidValue);
    cudaError_t e = rpc(OP_EVENT_ELAPSED, W(U(a), U(b)), NULL, 0, o, 1, NULL, 0, NULL);
    if (e == cudaSuccess) {
        double d;
        memcpy(&d, o, 8);
        *ms = (float)d;
    }
    return ret(e);
}

/* ---- modules, kernels, launches ----------------------------------------------------------------------- */
struct module { void *reserved; uint64_t id; };
struct fatbin_wrapper { int magic, version; const unsigned long long *data; void *filename_or_fatbins; };

API void **__cudaRegisterFatBinary(void *fatCubin) {
    struct module *m = calloc(1, sizeof *m);
    const struct fatbin_wrapper *w = fatCubin;
    const unsigned char *d = w ? (const unsigned char *)w->data : NULL;
    uint64_t len = 0, o[1] = {0};
    if (w && w->magic == 0x466243B1 && d) {
        uint32_t magic;
        uint16_t hsize;
        uint64_t fsize;
        memcpy(&magic, d, 4);
        memcpy(&hsize, d + 6, 2);
        memcpy(&fsize, d + 8, 8);
        if (magic == 0xBA55ED50u) len = hsize + fsize;
    }
    if (rpc(OP_FATBIN, W((uint64_t)(w ? (unsigned)w->magic : 0), (uint64_t)(w ? w->version : 0)), d, len, o, 1, NULL, 0,
            NULL) == cudaSuccess && m)
        m->id = o[0];
    return (void **)m;
}

static uint64_t module_id(void **h) { return h ? ((struct module *)h)->id : 0; }

API void __cudaRegisterFatBinaryEnd(void **h) { rpc(OP_FATBIN_END, W(module_id(h)), NULL, 0, NULL, 0, NULL, 0, NULL); }
API void __cudaUnregisterFatBinary(void **h) { (void)h; }
API char __cudaInitModule(void **h) { (void)h; return 1; }

API void __cudaRegisterFunction(void **h, const char *hostFun, char *deviceFun, const char *deviceName, int limit,
                                void *tid, void *bid, void *bDim, void *gDim, int *wSize) {
    (void)deviceName; (void)limit; (void)tid; (void)bid; (void)bDim; (void)gDim; (void)wSize;
    const char *name = deviceFun ? deviceFun : "";
    rpc(OP_FUNCTION, W(module_id(h), U(hostFun)), name, strlen(name), NULL, 0, NULL, 0, NULL);
}

static void register_var(void **h, const void *host, const char *name, size_t size, int constant, int managed,
                         void **host_ptr) {
    uint64_t o[1 + 1 + 3 * 8] = {0};
    const char *n = name ? name : "";
    if (rpc(OP_VAR, W(module_id(h), U(host), size, (uint64_t)constant, (uint64_t)managed), n, strlen(n), o, 26, NULL, 0,
            NULL) == cudaSuccess) {
        apply_protections(o + 2, o[1] < 8 ? o[1] : 8);
        if (host_ptr) *host_ptr = (void *)(uintptr_t)o[0];
    }
}

API void __cudaRegisterVar(void **h, char *hostVar, char *deviceAddress, const char *deviceName, int ext, size_t size,
                           int constant, int global) {
    (void)deviceAddress; (void)ext; (void)global;
    register_var(h, hostVar, deviceName, size, constant, 0, NULL);
}

API void __cudaRegisterManagedVar(void **h, void **hostVarPtrAddress, char *deviceAddress, const char *deviceName,
                                  int ext, size_t size, int constant, int global) {
    (void)deviceAddress; (void)ext; (void)global;
    register_var(h, hostVarPtrAddress, deviceName, size, constant, 1, hostVarPtrAddress);
}

/* <<<grid, block, shared, stream>>>: nvcc pushes the configuration, then calls the kernel's stub, which pops it. */
struct config { dim3 grid, block; size_t shared; void *stream; };
static __thread struct config t_configs[16];
static __thread int t_nconfigs;

API unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared, void *stream) {
    if (t_nconfigs < 16) t_configs[t_nconfigs] = (struct config){grid, block, shared, stream};
    t_nconfigs++;
    return 0;
}

API cudaError_t __cudaPopCallConfiguration(dim3 *grid, dim3 *block, size_t *shared, void *stream) {
    if (t_nconfigs <= 0) return ret(cudaErrorMissingConfiguration);
    t_nconfigs--;
    if (t_nconfigs >= 16) return ret(cudaErrorMissingConfiguration);
    struct config c = t_configs[t_nconfigs];
    *grid = c.grid;
    *block = c.block;
    *shared = c.shared;
    memcpy(stream, &c.stream, sizeof c.stream);
    return cudaSuccess;
}

API cudaError_t __cudaGetKernel(cudaKernel_t *k, const void *fn) {
    if (!k) return ret(cudaErrorInvalidValue);
    *k = (cudaKernel_t)fn;
    return cudaSuccess;
}

/* The sizes of a kernel's parameters, asked of gpusim once per kernel. */
struct params { const void *fn; uint32_t n; uint32_t size[256]; };
static struct params *g_params;
static int g_nparams;
static pthread_mutex_t g_params_lock = PTHREAD_MUTEX_INITIALIZER;

static const struct params *params_of(const void *fn, cudaError_t *err) {
    const struct params *found = NULL;
    pthread_mutex_lock(&g_params_lock);
    for (int i = 0; i < g_nparams; i++) if (g_params[i].fn == fn) found = &g_params[i];
    pthread_mutex_unlock(&g_params_lock);
    if (found) return found;
    uint64_t o[257] = {0};
    *err = rpc(OP_PARAMS, W(U(fn)), NULL, 0, o, 257, NULL, 0, NULL);
    if (*err != cudaSuccess) return NULL;
    pthread_mutex_lock(&g_params_lock);
    struct params *grown = realloc(g_params, (size_t)(g_nparams + 1) * sizeof *g_params);
    if (grown) {
        g_params = grown;
        struct params *p = &g_params[g_nparams++];
        p->fn = fn;
        p->n = o[0] < 256 ? (uint32_t)o[0] : 256;
        for (uint32_t i = 0; i < p->n; i++) p->size[i] = (uint32_t)o[1 + i];
        found = p;
    }
    pthread_mutex_unlock(&g_params_lock);
    if (!found) *err = cudaErrorMemoryAllocation;
    return found;
}

static cudaError_t launch(const void *fn, dim3 g, dim3 b, void **args, size_t shared, cudaStream_t s) {
    cudaError_t e = cudaSuccess;
    const struct params *p = params_of(fn, &e);
    if (!p) return ret(e);
    size_t total = 0;
    for (uint32_t i = 0; i < p->n; i++) total += p->size[i];
    char *buf = malloc(total ? total : 1);
    if (!buf) return ret(cudaErrorMemoryAllocation);
    size_t at = 0;
    for (uint32_t i = 0; i < p->n; i++) {
        if (args && args[i]) memcpy(buf + at, args[i], p->size[i]);
        else memset(buf + at, 0, p->size[i]);
        at += p->size[i];
    }
    e = rpc(OP_LAUNCH, W(U(fn), g.x, g.y, g.z, b.x, b.y, b.z, shared, U(s)), buf, total, NULL, 0, NULL, 0, NULL);
    free(buf);
    return ret(e);
}

API cudaError_t __cudaLaunchKernel(cudaKernel_t k, dim3 g, dim3 b, void **args, size_t shared, cudaStream_t s) {
    return launch(k, g, b, args, shared, s);
}
API cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t k, dim3 g, dim3 b, void **args, size_t shared, cudaStream_t s) {
    return launch(k, g, b, args, shared, s ? s : (cudaStream_t)2);
}
API cudaError_t cudaLaunchKernel(const void *fn, dim3 g, dim3 b, void **args, size_t shared, cudaStream_t s) {
    return launch(fn, g, b, args, shared, s);
}
API cudaError_t cudaLaunchKernel_ptsz(const void *fn, dim3 g, dim3 b, void **args, size_t shared, cudaStream_t s) {
    return launch(fn, g, b, args, shared, s ? s : (cudaStream_t)2);
}

API cudaError_t cudaFuncGetAttributes(void *attr, const void *fn) {
    if (!attr) return ret(cudaErrorInvalidValue);
    return ret(rpc(OP_FUNC_ATTRIBUTES, W(U(fn)), NULL, 0, NULL, 0, attr, 144, NULL));
}
API cudaError_t cudaFuncSetAttribute(const void *fn, int attr, int value) {
    return ret(rpc(OP_FUNC_SET_ATTRIBUTE, W(U(fn), (uint64_t)(int64_t)attr, (uint64_t)(int64_t)value), NULL, 0, NULL, 0,
                   NULL, 0, NULL));
}
API cudaError_t cudaFuncSetCacheConfig(const void *fn, int c) { (void)c; return on(OP_PARAMS, fn); }
API cudaError_t cudaFuncSetSharedMemConfig(const void *fn, int c) { (void)c; return on(OP_PARAMS, fn); }
API cudaError_t cudaFuncGetName(const char **name, const void *fn) {
    static __thread char buf[512];
    uint64_t n = 0;
    if (!name) return ret(cudaErrorInvalidValue);
    cudaError_t e = rpc(OP_FUNC_NAME, W(U(fn)), NULL, 0, NULL, 0, buf, sizeof buf - 1, &n);
    buf[n] = 0;
    if (e == cudaSuccess) *name = buf;
    return ret(e);
}

static cudaError_t occupancy(int *blocks, const void *fn, int block, size_t dyn, unsigned flags) {
    uint64_t o[1] = {0};
    if (!blocks) return ret(cudaErrorInvalidValue);
    cudaError_t e = rpc(OP_OCCUPANCY, W(U(fn), (uint64_t)(int64_t)block, dyn, flags), NULL, 0, o, 1, NULL, 0, NULL);
    if (e == cudaSuccess) *blocks = (int)o[0];
    return ret(e);
}
API cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *n, const void *fn, int block, size_t dyn) {
    return occupancy(n, fn, block, dyn, 0);
}
API cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *n, const void *fn, int block, size_t dyn,
                                                                       unsigned flags) {
    return occupancy(n, fn, block, dyn, flags);
}

/* ---- everything else NVIDIA's libcudart.so.13 exports: one line, cudaErrorNotSupported ---------------- */
#define STUB(name) API cudaError_t name(void) { return unsupported(#name); }
#include "unsupported.inc"
