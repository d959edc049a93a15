// A static zero feature dimension: dsa.linear with no output column (N = 0) is an empty result and computes nothing;
// with no input column (K = 0) every output is the empty sum, 0. Both lower to verifying LLVM dialect (serial and
// OpenMP); N = 0 used to build an scf.forall over zero-row panels that failed verification. With no row (a static
// M = 0) the result is empty too: dsa-to-cpu used to slice row 0 of the 0-row output ("offset 0 is out-of-bounds"),
// which only the canonicalizer after it removed (found by the compiler fuzz target's verifier after each pass).
// RUN: dsa-opt %s --dsa-to-cpu --canonicalize | FileCheck %s
// RUN: dsa-opt --verify-each %s --dsa-to-cpu -o /dev/null
// RUN: dsa-opt --verify-each --dsa-cpu-pipeline %s -o /dev/null
// RUN: dsa-opt --verify-each --dsa-cpu-pipeline="parallel=true" %s -o /dev/null

// CHECK-LABEL: func.func @no_outputs
// CHECK-NOT: scf.forall
// CHECK: return
func.func @no_outputs(%x: tensor<?x8xbf16>, %w: tensor<0x8xbf16>) -> tensor<?x0xbf16> {
  %y = dsa.linear %x, %w : (tensor<?x8xbf16>, tensor<0x8xbf16>) -> tensor<?x0xbf16>
  return %y : tensor<?x0xbf16>
}

// CHECK-LABEL: func.func @no_rows
// CHECK-NOT: scf.forall
// CHECK-NOT: tensor.extract_slice
// CHECK: return
func.func @no_rows(%x: tensor<0x4xbf16>, %w: tensor<3x4xbf16>) -> tensor<0x3xbf16> {
  %y = dsa.linear %x, %w : (tensor<0x4xbf16>, tensor<3x4xbf16>) -> tensor<0x3xbf16>
  return %y : tensor<0x3xbf16>
}

// CHECK-LABEL: func.func @no_inputs
// The blocked product over its one panel: every dot is the empty sum 0.0, which canonicalization folds to a bf16 0.
// CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : bf16
// CHECK: scf.for
// CHECK: tensor.insert %[[ZERO]]
// CHECK-NOT: arith.truncf
func.func @no_inputs(%x: tensor<?x0xbf16>, %w: tensor<8x0xbf16>) -> tensor<?x8xbf16> {
  %y = dsa.linear %x, %w : (tensor<?x0xbf16>, tensor<8x0xbf16>) -> tensor<?x8xbf16>
  return %y : tensor<?x8xbf16>
}
