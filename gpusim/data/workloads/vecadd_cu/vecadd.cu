// c[i] = a[i] + b[i] for i < n: one thread per element (CUDA C port of the vecadd workload).
__global__ void vecadd(const float* a, const float* b, float* c, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}
