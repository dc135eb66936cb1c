#include <nnvm/graph.h>
namespace nnvm { int SampleGraphSize() { return 3; } }
