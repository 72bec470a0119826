// Shared definitions for the example kernels.
#pragma once

#define BLOCK_SIZE 256
#define TILE_DIM 32
#define BLOCK_ROWS 8
#define HIST_BINS 256

// Row-major 2-D index.
#define IDX(i, j, ld) ((i) * (ld) + (j))

#ifdef USE_DOUBLE
typedef double real_t;
#else
typedef float real_t;
#endif

// 16-byte particle: reading one field per thread strides by 16 bytes.
struct Particle {
    float x, y, z, w;
};

// 20-byte body (float3 is 12 bytes, 4-byte aligned).
struct Body {
    float3 pos;
    float mass;
    int id;
};

__device__ __forceinline__ int global_tid() {
    return blockIdx.x * blockDim.x + threadIdx.x;
}
