// The CPU backend's in-place caches in --dsa-cpu-pipeline (dsa-cpu-drop-in-place-results, Pipeline.cpp): for a
// function marked dsa.cpu_in_place = array<i64: writable arguments> (what compiler/lib/Backend/CPU's lowerForCPU sets),
// the results that bufferization made an argument's buffer are not returned and are recorded per result in the
// module attribute dsa.cpu_in_place, the written writable arguments in dsa.cpu_written. An unmarked function keeps
// its results (the updated cache comes back as a copy).
// RUN: dsa-opt %s --dsa-cpu-pipeline | FileCheck %s --implicit-check-not="llvm.fptrunc" \
// RUN:   --implicit-check-not="llvm.fpext" --implicit-check-not="__truncsfbf2" \
// RUN:   --implicit-check-not="bf16"
// RUN: dsa-opt %s --dsa-cpu-pipeline="parallel=true" | FileCheck %s --implicit-check-not="llvm.fptrunc" \
// RUN:   --implicit-check-not="llvm.fpext" --implicit-check-not="__truncsfbf2" \
// RUN:   --implicit-check-not="bf16"

// CHECK: module attributes {dsa.cpu_in_place = {step = array<i64: 0, 2, 0, -1>}, dsa.cpu_written = {step = array<i64: 0>}}
// CHECK: llvm.func @step(
// CHECK-SAME: -> i64
// CHECK: llvm.func @unmarked(
// CHECK-SAME: -> !llvm.struct<(struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, i64)>
func.func @step(%cache: tensor<8x4xf32> {bufferization.writable = true}, %rows: tensor<1x4xf32> {bufferization.writable = false},
                %slot: tensor<?x4xf32> {bufferization.writable = false}, %i: index, %ok: i1, %n: i64)
    -> (tensor<8x4xf32>, tensor<?x4xf32>, tensor<8x4xf32>, i64) attributes {dsa.cpu_in_place = array<i64: 0>} {
  %new = scf.if %ok -> tensor<8x4xf32> {
    %w = tensor.insert_slice %rows into %cache[%i, 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<8x4xf32>
    scf.yield %w : tensor<8x4xf32>
  } else {
    scf.yield %cache : tensor<8x4xf32>
  }
  return %new, %slot, %new, %n : tensor<8x4xf32>, tensor<?x4xf32>, tensor<8x4xf32>, i64
}

func.func @unmarked(%cache: tensor<8x4xf32> {bufferization.writable = false}, %rows: tensor<1x4xf32> {bufferization.writable = false},
                    %slot: tensor<?x4xf32> {bufferization.writable = false}, %i: index, %ok: i1, %n: i64)
    -> (tensor<8x4xf32>, tensor<?x4xf32>, tensor<8x4xf32>, i64) {
  %new = scf.if %ok -> tensor<8x4xf32> {
    %w = tensor.insert_slice %rows into %cache[%i, 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<8x4xf32>
    scf.yield %w : tensor<8x4xf32>
  } else {
    scf.yield %cache : tensor<8x4xf32>
  }
  return %new, %slot, %new, %n : tensor<8x4xf32>, tensor<?x4xf32>, tensor<8x4xf32>, i64
}
