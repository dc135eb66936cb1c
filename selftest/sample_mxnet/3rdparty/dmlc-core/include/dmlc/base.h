#ifndef DMLC_BASE_H_
#define DMLC_BASE_H_
namespace dmlc { extern const int kSampleDmlc; }
#endif
