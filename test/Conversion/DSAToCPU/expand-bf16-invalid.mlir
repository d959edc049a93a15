// dsa-cpu-expand-bf16 refuses a bf16 truncation it does not expand (from another type than f32, or with a rounding
// mode other than to-nearest-even) instead of leaving it to LLVM; the pipeline then fails.
// RUN: dsa-opt %s --split-input-file --verify-diagnostics --dsa-cpu-expand-bf16
// RUN: not dsa-opt %s --split-input-file --dsa-cpu-pipeline 2>&1 | FileCheck %s
// CHECK: only f32 -> bf16 truncation is expanded (got 'f64' -> bf16)
// CHECK: only round-to-nearest-even bf16 truncation is expanded

func.func @trunc_f64(%a: f64) -> bf16 {
  // expected-error @+1 {{only f32 -> bf16 truncation is expanded (got 'f64' -> bf16)}}
  %0 = arith.truncf %a : f64 to bf16
  return %0 : bf16
}

// -----

func.func @trunc_toward_zero(%a: f32) -> bf16 {
  // expected-error @+1 {{only round-to-nearest-even bf16 truncation is expanded}}
  %0 = arith.truncf %a toward_zero : f32 to bf16
  return %0 : bf16
}
