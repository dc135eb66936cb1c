#ifndef MXNET_C_API_H_
#define MXNET_C_API_H_
#include "mxnet/base.h"
struct LibFeature { const char *name; bool enabled; };
MXNET_DLL const char *MXGetLastError();
MXNET_DLL int MXLibInfoFeatures(const struct LibFeature **features, size_t *size);
MXNET_DLL int MXGetCommitHash(const char **out);
MXNET_DLL int MXGetGPUCount(int *out);
MXNET_DLL int MXSampleRunKernel();
MXNET_DLL int MXSampleImdecode(const unsigned char *buf, size_t len, int flag, int to_rgb,
                               unsigned char **out, int *h, int *w, int *c);
MXNET_DLL int MXSampleImresize(const unsigned char *src, int h, int w, int c, int new_w, int new_h,
                               int interp, unsigned char **out);
MXNET_DLL void MXSampleFree(void *p);
/* internal: set by the sources, read by MXGetLastError */
void mxnet_sample_set_error(const char *msg);
int mxnet_sample_gpu_count();
int mxnet_sample_run_kernel(char *err, size_t errlen);
#endif
