// Row-per-thread versus column-per-thread elimination step (Gaussian
// elimination's "Fan2" shape). Both launched with 256 threads per block.
#include "common.cuh"

// Each thread owns a row: across a warp, consecutive threads are n floats
// apart, so every access touches its own sector.
__global__ void update_rows(float* a, const float* m, int n, int k) {
    int row = global_tid() + k + 1;
    if (row >= n) return;
    for (int j = k; j < n; j++) {
        a[IDX(row, j, n)] -= m[row] * a[IDX(k, j, n)];
    }
}

// Each thread owns a column: consecutive threads touch consecutive floats.
__global__ void update_cols(float* a, const float* m, int n, int k) {
    int col = blockIdx.x * blockDim.x + threadIdx.x + k;
    if (col >= n) return;
    for (int i = k + 1; i < n; i++) {
        a[i * n + col] -= m[i] * a[k * n + col];
    }
}
