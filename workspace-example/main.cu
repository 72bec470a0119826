// Host driver: allocates buffers and launches every example kernel with
// statically known launch dimensions.
#include <cuda_runtime.h>
#include "common.cuh"

void run_all(int n, int width, int height, cudaStream_t stream) {
    float *a, *b, *m;
    int* idx;
    unsigned int* hist;
    unsigned char* bytes;
    Particle* parts;
    float4 *v_in, *v_out;
    cudaMalloc(&a, n * sizeof(float));
    cudaMalloc(&b, n * sizeof(float));
    cudaMalloc(&m, n * sizeof(float));
    cudaMalloc(&idx, n * sizeof(int));
    cudaMalloc(&hist, HIST_BINS * sizeof(unsigned int));
    cudaMalloc(&bytes, n);
    cudaMalloc(&parts, n * sizeof(Particle));
    cudaMalloc(&v_in, n * sizeof(float4));
    cudaMalloc(&v_out, n * sizeof(float4));

    // Transposes: 32x8 threads per 32x32 tile.
    dim3 tgrid(width / TILE_DIM, height / TILE_DIM);
    dim3 tblock(TILE_DIM, BLOCK_ROWS);
    transpose_naive<<<tgrid, tblock>>>(a, b, width, height);
    transpose_tiled<<<tgrid, tblock>>>(a, b, width, height);
    transpose_padded<<<tgrid, tblock, 0, stream>>>(a, b, width, height);

    int blocks = (n + BLOCK_SIZE - 1) / BLOCK_SIZE;
    for (int k = 0; k < n - 1; k++) {
        update_rows<<<blocks, BLOCK_SIZE>>>(a, m, n, k);
        update_cols<<<blocks, BLOCK_SIZE>>>(a, m, n, k);
    }

    strided_copy<<<blocks, BLOCK_SIZE>>>(a, b, 4, n);
    stride_two<<<blocks, BLOCK_SIZE>>>(a, b, n / 2);
    aos_read<<<blocks, BLOCK_SIZE>>>(a, parts, n);
    vector_load<<<blocks, BLOCK_SIZE>>>(v_out, v_in, n);
    shifted_read<<<blocks, BLOCK_SIZE>>>(a, b, n);
    gather<<<blocks, BLOCK_SIZE>>>(a, b, idx, n);

    reduce_interleaved<256><<<blocks, 256, 256 * sizeof(float)>>>(a, b, n);
    reduce_sequential<<<blocks, BLOCK_SIZE>>>(a, b, n);

    void* hargs[] = {&bytes, &hist, &n};
    cudaLaunchKernel((const void*)histogram256, dim3(blocks), dim3(HIST_BINS), hargs, 0, stream);

    row_means<<<blocks, BLOCK_SIZE>>>(m, a, n);

    partial_barrier<<<1, BLOCK_SIZE>>>(a, 100);
    early_exit<<<blocks, BLOCK_SIZE>>>(a, n);
    neighbour_race<<<blocks, BLOCK_SIZE>>>(a, b);
    neighbour_synced<<<blocks, BLOCK_SIZE>>>(a, b);
    producer_consumer<<<blocks, 128>>>(a, b);
    producer_consumer_bad<<<blocks, 128>>>(a, b);

    cudaStreamSynchronize(stream);
    cudaFree(a);
    cudaFree(b);
    cudaFree(m);
    cudaFree(idx);
    cudaFree(hist);
    cudaFree(bytes);
    cudaFree(parts);
    cudaFree(v_in);
    cudaFree(v_out);
}
