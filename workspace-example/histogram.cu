// 256-bin histogram with per-block shared bins merged into global memory.
#include "common.cuh"

__global__ void histogram256(const unsigned char* data, unsigned int* hist, int n) {
    __shared__ unsigned int bins[HIST_BINS];
    bins[threadIdx.x] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        atomicAdd(&bins[data[i]], 1);
    }
    __syncthreads();
    atomicAdd(&hist[threadIdx.x], bins[threadIdx.x]);
}
