// CPU build: no GPUs, and running the kernel says why.
#include <cstdio>
#include "mxnet/c_api.h"
int mxnet_sample_gpu_count() { return 0; }
int mxnet_sample_run_kernel(char *err, size_t errlen) {
  std::snprintf(err, errlen, "MXNet was built without CUDA (USE_CUDA=OFF): no GPU kernel to run");
  return 1;
}
