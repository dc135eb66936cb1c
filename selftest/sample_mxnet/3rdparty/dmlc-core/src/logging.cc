#include <dmlc/base.h>
namespace dmlc { const int kSampleDmlc = 1; }
