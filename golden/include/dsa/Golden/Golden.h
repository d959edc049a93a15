//===- Golden.h - golden file reader, weight filler, comparator (MLIR-free) ---===//
//
// Umbrella header of the golden harness core (library DSAGolden, namespace dsa::golden):
//   GoldenFile.h  reads a golden in the format of shared/spec/tiny-model-harness.md;
//   Filler.h      regenerates weights from the filler rule (ck-checked), the probe and the input ids;
//   Compare.h     compares captures with the tolerance rule of attention-semantics.md section 12.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_GOLDEN_GOLDEN_H
#define DSA_GOLDEN_GOLDEN_H

#include "dsa/Golden/Compare.h"
#include "dsa/Golden/Filler.h"
#include "dsa/Golden/GoldenFile.h"

#endif // DSA_GOLDEN_GOLDEN_H
