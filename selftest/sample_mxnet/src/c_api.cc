// C API of the sample libmxnet: features from compile macros, commit stamp, GPU count, kernel.
#include <cstdlib>
#include <cstring>
#include <string>
#include <dlpack/dlpack.h>
#include <dmlc/base.h>
#include <nnvm/graph.h>
#include "mxnet/c_api.h"

#if MXNET_USE_ONEDNN
extern "C" int dnnl_sample_version();
#endif
extern "C" int intgemm_sample_width();

static thread_local std::string last_error;
void mxnet_sample_set_error(const char *msg) { last_error = msg; }
const char *MXGetLastError() { return last_error.c_str(); }

static const LibFeature kFeatures[] = {
    {"CUDA", MXNET_USE_CUDA != 0},     {"CUDNN", MXNET_USE_CUDNN != 0},
    {"NCCL", MXNET_USE_NCCL != 0},     {"OPENMP", MXNET_USE_OPENMP != 0},
    {"ONEDNN", MXNET_USE_ONEDNN != 0}, {"OPENCV", MXNET_USE_OPENCV != 0},
};

int MXLibInfoFeatures(const LibFeature **features, size_t *size) {
  // Touch the 3rdparty pieces so the library really depends on each of them.
  (void)dmlc::kSampleDmlc;
  (void)nnvm::SampleGraphSize();
  (void)DLPACK_VERSION;
  (void)intgemm_sample_width();
#if MXNET_USE_ONEDNN
  (void)dnnl_sample_version();
#endif
  *features = kFeatures;
  *size = sizeof(kFeatures) / sizeof(kFeatures[0]);
  return 0;
}

int MXGetCommitHash(const char **out) {
  *out = MXNET_COMMIT_HASH;
  return 0;
}

int MXGetGPUCount(int *out) {
  *out = mxnet_sample_gpu_count();
  return 0;
}

int MXSampleRunKernel() {
  char err[512] = {0};
  if (mxnet_sample_run_kernel(err, sizeof(err)) != 0) {
    mxnet_sample_set_error(err);
    return -1;
  }
  return 0;
}

void MXSampleFree(void *p) { std::free(p); }
