// Synchronisation: correct and incorrect barrier use.
#include "common.cuh"

// Barrier inside a branch whose condition depends on the thread: threads
// with threadIdx.x >= n_active never reach it.
__global__ void partial_barrier(float* data, int n_active) {
    __shared__ float buf[BLOCK_SIZE];
    if (threadIdx.x < n_active) {
        buf[threadIdx.x] = data[threadIdx.x];
        __syncthreads();
        data[threadIdx.x] = buf[n_active - 1 - threadIdx.x];
    }
}

// Thread-dependent early exit before a barrier.
__global__ void early_exit(float* data, int n) {
    __shared__ float buf[BLOCK_SIZE];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    buf[threadIdx.x] = data[i];
    __syncthreads();
    data[i] = buf[(threadIdx.x + 1) % BLOCK_SIZE];
}

// Missing barrier: a thread reads its neighbour's slot in the same barrier
// interval as the neighbour writes it.
__global__ void neighbour_race(float* out, const float* in) {
    __shared__ float s[BLOCK_SIZE + 1];
    int t = threadIdx.x;
    s[t] = in[blockIdx.x * blockDim.x + t];
    out[blockIdx.x * blockDim.x + t] = s[t] + s[t + 1];
}

// The same computation with the barrier in place.
__global__ void neighbour_synced(float* out, const float* in) {
    __shared__ float s[BLOCK_SIZE + 1];
    int t = threadIdx.x;
    s[t] = in[blockIdx.x * blockDim.x + t];
    if (t == 0) s[BLOCK_SIZE] = 0.0f;
    __syncthreads();
    out[blockIdx.x * blockDim.x + t] = s[t] + s[t + 1];
}

// Producer/consumer on named barrier 1 with 128 threads (blockDim 128):
// warps 0-1 produce and arrive, warps 2-3 wait and consume.
__global__ void producer_consumer(float* out, const float* in) {
    __shared__ float stage[64];
    int t = threadIdx.x;
    if (t < 64) {
        stage[t] = in[blockIdx.x * 64 + t] * 2.0f;
        asm volatile("bar.arrive 1, 128;");
    } else {
        asm volatile("bar.sync 1, 128;");
        out[blockIdx.x * 64 + (t - 64)] = stage[t - 64];
    }
}

// Misuse: the producers arrive with a count of 128 but the consumers wait
// with 96, so the barrier's expected thread count disagrees; and the
// consumers read `stage` before waiting.
__global__ void producer_consumer_bad(float* out, const float* in) {
    __shared__ float stage[64];
    int t = threadIdx.x;
    if (t < 64) {
        stage[t] = in[blockIdx.x * 64 + t] * 2.0f;
        asm volatile("bar.arrive 1, 128;");
    } else {
        float early = stage[t - 64];
        asm volatile("bar.sync 1, 96;");
        out[blockIdx.x * 64 + (t - 64)] = early;
    }
}
