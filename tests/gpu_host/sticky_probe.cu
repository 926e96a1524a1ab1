// sticky_probe.cu — does a sticky CUDA error on device 1 reach device 0 of the same process? (On
// the GPU host, CUDA 13.0, it does: every later call on device 0 returns it, from any thread, and
// cudaDeviceReset of device 1, then of every device, brings none back: "busy or unavailable"
// until the process ends.) Why a server of several GPUs isolates a stuck kernel but not an
// illegal address: docs/deployment.md. Built and run by gpu_multi.sh.
#include <cstdio>
#include <thread>
#include <cuda_runtime.h>
__global__ void bad(int *p) { p[threadIdx.x] = 1; }
__global__ void good(int *p) { p[threadIdx.x] = threadIdx.x; }
#define S(x) cudaGetErrorString(x)
int main()
{
    int n = 0, *d0 = nullptr, *d1 = nullptr;
    cudaStream_t s0, s1;
    cudaGetDeviceCount(&n);
    printf("devices %d\n", n);
    cudaSetDevice(0); cudaMalloc(&d0, 4096); cudaStreamCreate(&s0);
    cudaSetDevice(1); cudaMalloc(&d1, 4096); cudaStreamCreate(&s1);
    bad<<<1, 32, 0, s1>>>((int *)0x10);
    printf("dev1 after bad: sync %s\n", S(cudaStreamSynchronize(s1)));
    std::thread t([&] {
        cudaError_t e = cudaSetDevice(0);
        printf("other thread: setdevice(0) %s\n", S(e));
        good<<<1, 32, 0, s0>>>(d0);
        printf("other thread: dev0 launch %s, sync %s\n", S(cudaGetLastError()), S(cudaStreamSynchronize(s0)));
        cudaEvent_t ev;
        printf("other thread: dev0 eventcreate %s\n", S(cudaEventCreate(&ev)));
        printf("other thread: dev0 eventrecord %s\n", S(cudaEventRecord(ev, s0)));
        int *x; printf("other thread: dev0 malloc %s\n", S(cudaMalloc(&x, 1 << 20)));
    });
    t.join();
    cudaSetDevice(0);
    good<<<1, 32, 0, s0>>>(d0);
    printf("same thread: dev0 launch %s, sync %s\n", S(cudaGetLastError()), S(cudaStreamSynchronize(s0)));
    cudaSetDevice(1);
    printf("dev1 reset %s\n", S(cudaDeviceReset()));
    int *y; cudaError_t e1 = cudaMalloc(&y, 4096);
    good<<<1, 32>>>(y);
    printf("dev1 after reset: malloc %s launch %s sync %s\n", S(e1), S(cudaGetLastError()), S(cudaDeviceSynchronize()));
    cudaSetDevice(0);
    good<<<1, 32, 0, s0>>>(d0);
    printf("dev0 after dev1 reset: launch %s sync %s\n", S(cudaGetLastError()), S(cudaStreamSynchronize(s0)));
    // every device reset: does the process get its GPUs back without a restart?
    printf("dev0 reset %s\n", S(cudaDeviceReset()));
    for (int d = 0; d < n; d++) {
        int *z = nullptr;
        cudaSetDevice(d);
        cudaError_t em = cudaMalloc(&z, 4096);
        good<<<1, 32>>>(z);
        printf("dev%d after every reset: malloc %s launch %s sync %s\n", d, S(em), S(cudaGetLastError()),
               S(cudaDeviceSynchronize()));
    }
    return 0;
}
