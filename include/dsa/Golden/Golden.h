//===- Golden.h - golden file reader, weight filler, comparator (MLIR-free) ---===//
//
// Reads a golden in the format of shared/spec/tiny-model-harness.md, regenerates weights from the filler rule,
// and compares captures with the tolerance rule of attention-semantics.md section 12.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_GOLDEN_GOLDEN_H
#define DSA_GOLDEN_GOLDEN_H
// TODO(golden): API defined by the golden helper.
#endif
