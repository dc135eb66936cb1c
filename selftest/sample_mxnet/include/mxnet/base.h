/* Sample MXNet tree: the public header the wheel stages under mxnet/include/mxnet/. */
#ifndef MXNET_BASE_H_
#define MXNET_BASE_H_
#include <stddef.h>
#ifndef MXNET_COMMIT_HASH
#define MXNET_COMMIT_HASH "NotProvided"
#endif
#define MXNET_DLL extern "C" __attribute__((visibility("default")))
#endif
