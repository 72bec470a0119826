// Matrix transpose: naive, tiled with an unpadded tile, tiled with padding.
// Launched with blockDim (TILE_DIM, BLOCK_ROWS) = (32, 8).
#include "common.cuh"

__global__ void transpose_naive(real_t* out, const real_t* in, int width, int height) {
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        // Read along a row (coalesced), write down a column (stride height).
        out[x * height + (y + j)] = in[(y + j) * width + x];
    }
}

__global__ void transpose_tiled(real_t* out, const real_t* in, int width, int height) {
    __shared__ real_t tile[TILE_DIM][TILE_DIM];
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];
    }
    __syncthreads();
    x = blockIdx.y * TILE_DIM + threadIdx.x;
    y = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        // Column read of an unpadded 32x32 tile: all 32 lanes hit one bank.
        out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
    }
}

__global__ void transpose_padded(real_t* out, const real_t* in, int width, int height) {
    __shared__ real_t tile[TILE_DIM][TILE_DIM + 1];
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];
    }
    __syncthreads();
    x = blockIdx.y * TILE_DIM + threadIdx.x;
    y = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        // The padding column spreads the column read over all 32 banks.
        out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
    }
}
