#ifndef NNVM_GRAPH_H_
#define NNVM_GRAPH_H_
namespace nnvm { int SampleGraphSize(); }
#endif
