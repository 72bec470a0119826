// Device functions are analysed with what their callers pass: which
// arguments depend on the thread, their strides, and for pointers the
// memory they point into and where in it.
#include "common.cuh"

// Called with `row = &m[tid * n]`: each thread walks its own row, so across
// a warp the reads are n floats apart.
__device__ float row_mean(const float* row, int n) {
    float s = 0.0f;
    for (int j = 0; j < n; j++)
        s += row[j];
    return s / n;
}

// Called with `i = tid`: a stride-2 store (8 bytes between lanes).
__device__ void store_even(float* out, int i, float v) {
    out[2 * i] = v;
}

// Called with `t = threadIdx.x` on a shared tile: conflict-free.
__device__ void stage(float* tile, int t, float v) {
    tile[t] = v;
}

// `t` is threadIdx.x in every caller, so this barrier is divergent.
__device__ void sync_some(float* tile, int t, int len) {
    if (t < len) {
        tile[t] += 1.0f;
        __syncthreads();
    }
}

__global__ void row_means(const float* m, float* means, int n) {
    __shared__ float tile[BLOCK_SIZE];
    int tid = blockIdx.x * blockDim.x + threadIdx.x;
    if (tid >= n) return;
    float mu = row_mean(&m[tid * n], n);
    stage(tile, threadIdx.x, mu);
    sync_some(tile, threadIdx.x, 100);
    store_even(means, tid, mu);
}
