// y[i] = a * x[i] + y[i] for i < n (CUDA C port of the saxpy workload; nvcc fuses it into fma.rn).
__global__ void saxpy(const float* x, float* y, float a, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}
