// The sample's GPU part: one kernel compiled for every MXNET_CUDA_ARCH entry, a cuBLAS property
// query and a driver API call (so libcublas.so.13 and libcuda.so.1 are real dependencies).
#include <cstdio>
#include <cuda.h>
#include <cuda_runtime.h>
#ifndef MXNET_SAMPLE_NO_CUBLAS  /* gpu/sample_kernel_check.sh builds the kernel without cuBLAS */
#include <cublas_v2.h>
#endif
#include "mxnet/c_api.h"
#if MXNET_USE_CUDNN
#include <cudnn.h>
#endif
#if MXNET_USE_NCCL
#include <nccl.h>
#endif

__global__ void saxpy(int n, float a, const float *x, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

int mxnet_sample_gpu_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // no driver / no device: report 0 GPUs, like MXNet
    return 0;
  }
  return n;
}

extern "C" int MXSampleDriverVersion(int *out) { return cuDriverGetVersion(out) == CUDA_SUCCESS ? 0 : -1; }
#ifndef MXNET_SAMPLE_NO_CUBLAS
extern "C" int MXSampleCublasVersion(int *major, int *minor, int *patch) {
  cublasGetProperty(MAJOR_VERSION, major);
  cublasGetProperty(MINOR_VERSION, minor);
  cublasGetProperty(PATCH_LEVEL, patch);
  return 0;
}
#endif
extern "C" size_t MXSampleCudnnVersion() {
#if MXNET_USE_CUDNN
  return cudnnGetVersion();
#else
  return 0;
#endif
}
extern "C" int MXSampleNcclVersion() {
  int v = 0;
#if MXNET_USE_NCCL
  ncclGetVersion(&v);
#endif
  return v;
}

#define CHECK_CUDA(call)                                                                       \
  do {                                                                                         \
    cudaError_t e_ = (call);                                                                   \
    if (e_ != cudaSuccess) {                                                                   \
      std::snprintf(err, errlen, "%s: %s (%s)", cudaGetErrorName(e_), cudaGetErrorString(e_), \
                    #call);                                                                    \
      return 1;                                                                                \
    }                                                                                          \
  } while (0)

int mxnet_sample_run_kernel(char *err, size_t errlen) {
  const int n = 1 << 16;
  float *x = nullptr, *y = nullptr;
  static float hx[1 << 16], hy[1 << 16];
  for (int i = 0; i < n; ++i) { hx[i] = float(i); hy[i] = 1.0f; }
  CHECK_CUDA(cudaSetDevice(0));
  CHECK_CUDA(cudaMalloc(&x, n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&y, n * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(x, hx, n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(y, hy, n * sizeof(float), cudaMemcpyHostToDevice));
  saxpy<<<(n + 255) / 256, 256>>>(n, 2.0f, x, y);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(hy, y, n * sizeof(float), cudaMemcpyDeviceToHost));
  cudaFree(x);
  cudaFree(y);
  for (int i = 0; i < n; ++i) {
    if (hy[i] != 2.0f * float(i) + 1.0f) {
      std::snprintf(err, errlen, "kernel result wrong at %d: %g != %g", i, hy[i], 2.0f * i + 1.0f);
      return 1;
    }
  }
  return 0;
}
