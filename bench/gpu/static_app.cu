/* static_app.cu: an nvcc program linked with the default static runtime
 * (no cuda* symbol exported, so only the shim's driver layer sees it).
 * Planted cause: `sync` synchronises after every launch; `nosync` is the
 * control. Built a second time with --default-stream per-thread by
 * gpu-check.sh to exercise the _ptsz paths. Prints result and elapsed. */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <cuda_runtime.h>

__global__ void axpy(float *y, const float *x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i] * 0.5f;
}

static void check(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "static_app: %s: %s\n", what, cudaGetErrorString(e));
        exit(1);
    }
}

int main(int argc, char **argv)
{
    int every = argc > 1 && strcmp(argv[1], "sync") == 0;
    const int n = 1 << 20, iters = 20000;
    float *x, *y, *h;

    check(cudaMalloc(&x, n * sizeof(float)), "cudaMalloc");
    check(cudaMalloc(&y, n * sizeof(float)), "cudaMalloc");
    check(cudaMallocHost(&h, n * sizeof(float)), "cudaMallocHost");
    for (int i = 0; i < n; i++)
        h[i] = 1.0f;
    check(cudaMemcpy(x, h, n * sizeof(float), cudaMemcpyHostToDevice), "memcpy");
    check(cudaMemset(y, 0, n * sizeof(float)), "memset");
    auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < iters; k++) {
        axpy<<<(n + 255) / 256, 256>>>(y, x, 0.001f, n);
        if (every)
            check(cudaStreamSynchronize(0), "sync");
    }
    check(cudaDeviceSynchronize(), "sync");
    double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    check(cudaMemcpy(h, y, n * sizeof(float), cudaMemcpyDeviceToHost), "memcpy");
    double s = 0;
    for (int i = 0; i < n; i++)
        s += h[i];
    printf("result: %.6e\nelapsed: %.3f\n", s, el);
    return 0;
}
