// .const and .local in nvcc's PTX (tests/isa/test_ptx_local_const.py); local_const.ptx beside it is
// nvcc -ptx -arch=sm_80 -lineinfo local_const.cu -o local_const.ptx  (CUDA 13.0)
__constant__ float coef[4] = {0.5f, 0.25f, 2.0f, -1.0f};

// y = coef[0] + x (coef[1] + x (coef[2] + x coef[3])): constant memory at fixed addresses (ld.const [coef+12])
__global__ void poly(const float* x, float* y, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = coef[0] + v * (coef[1] + v * (coef[2] + v * coef[3]));
    }
}

// constant memory indexed at run time (mov.u64 %rd, coef; ld.const [%rd]): not read yet
__global__ void pick(const int* sel, float* y, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = coef[sel[i] & 3];
}

// a stack array indexed at run time: nvcc puts it in .local (__local_depot), written with st.local.v4
// and read back with ld.local at data-dependent offsets; any block shape (2-D blocks in the tests)
__global__ void rotate8(const int* x, int* y, unsigned n)
{
    int buf[8];
    unsigned i = (blockIdx.x * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    for (int k = 0; k < 8; ++k) buf[k] = x[8 * i + k];
    int s = x[8 * i] & 7;
    for (int k = 0; k < 8; ++k) y[8 * i + k] = buf[(s + k) & 7] * (k + 1);
}
