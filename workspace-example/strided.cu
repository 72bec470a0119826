// Access patterns of one warp over global memory.
#include "common.cuh"

__global__ void strided_copy(float* out, const float* in, int stride, int n) {
    int tid = blockIdx.x * blockDim.x + threadIdx.x;
    if (tid < n) {
        out[tid * stride] = in[tid];      // symbolic stride: up to 32 sectors
    }
}

__global__ void stride_two(float* out, const float* in, int n) {
    int tid = blockIdx.x * blockDim.x + threadIdx.x;
    if (tid < n) {
        out[tid] = in[2 * tid];           // 8 sectors where 4 would do
    }
}

__global__ void aos_read(float* out, const Particle* p, int n) {
    int tid = blockIdx.x * blockDim.x + threadIdx.x;
    if (tid < n) {
        out[tid] = p[tid].x;              // 16-byte stride for 4-byte reads
    }
}

__global__ void vector_load(float4* out, const float4* in, int n) {
    int tid = blockIdx.x * blockDim.x + threadIdx.x;
    if (tid < n) {
        float4 v = in[tid];               // 16 sectors: the minimum for 512 bytes
        v.x *= 2.0f;
        out[tid] = v;
    }
}

__global__ void shifted_read(float* out, const float* in, int n) {
    int tid = blockIdx.x * blockDim.x + threadIdx.x;
    if (tid + 1 < n) {
        out[tid] = in[tid + 1];           // misaligned by one element only
    }
}

__global__ void gather(float* out, const float* in, const int* idx, int n) {
    int tid = blockIdx.x * blockDim.x + threadIdx.x;
    if (tid < n) {
        out[tid] = in[idx[tid]];          // data-dependent index
    }
}
