// Sizes from the IR that no machine can hold are a diagnostic at the op (exit status 1), checked before anything is
// allocated, never an out-of-memory abort: tensor.empty, tensor.pad (including a padded size that overflows int64),
// dsa.positions, dsa.window_indices. DSA_MAX_TENSOR_BYTES sets the limit (default: the machine's memory).
// RUN: not dsa-run %s --entry=empty 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: not dsa-run %s --entry=empty_count_overflows 2>&1 | FileCheck %s --check-prefix=EMPTY-OVERFLOW
// RUN: not dsa-run %s --entry=pad 2>&1 | FileCheck %s --check-prefix=PAD
// RUN: not dsa-run %s --entry=pad_overflows 2>&1 | FileCheck %s --check-prefix=PAD-OVERFLOW
// RUN: not dsa-run %s --entry=positions 2>&1 | FileCheck %s --check-prefix=POS
// RUN: not dsa-run %s --entry=window_indices 2>&1 | FileCheck %s --check-prefix=WIN
// RUN: env DSA_MAX_TENSOR_BYTES=1000 not dsa-run %s --entry=small_limit 2>&1 | FileCheck %s --check-prefix=LIMIT
// RUN: env DSA_MAX_TENSOR_BYTES=4096 dsa-run %s --entry=small_limit 2>&1 | FileCheck %s --check-prefix=LIMIT-OK

// EMPTY: huge-sizes.mlir:[[@LINE+4]]:8: error: dsa interpreter: 'tensor.empty' tensor shape [1099511627776, 1048576] (f32) needs 4611686018427387904 bytes, more than the limit of
// EMPTY-SAME: bytes (DSA_MAX_TENSOR_BYTES)
func.func @empty() -> tensor<?x1048576xf32> {
  %n = arith.constant 1099511627776 : index
  %e = tensor.empty(%n) : tensor<?x1048576xf32>
  return %e : tensor<?x1048576xf32>
}

// EMPTY-OVERFLOW: huge-sizes.mlir:[[@LINE+3]]:8: error: dsa interpreter: 'tensor.empty' tensor shape [4611686018427387904, 4]: the element count overflows int64
func.func @empty_count_overflows() -> tensor<?x4xi64> {
  %n = arith.constant 4611686018427387904 : index
  %e = tensor.empty(%n) : tensor<?x4xi64>
  return %e : tensor<?x4xi64>
}

// PAD: huge-sizes.mlir:[[@LINE+5]]:8: error: dsa interpreter: 'tensor.pad' tensor shape [2, 1000000000002] (bf16) needs 8000000000016 bytes, more than the limit of
func.func @pad() -> tensor<2x?xbf16> {
  %x = arith.constant dense<1.0> : tensor<2x2xbf16>
  %z = arith.constant 0.0 : bf16
  %h = arith.constant 1000000000000 : index
  %p = tensor.pad %x low[0, 0] high[0, %h] {
  ^bb0(%i: index, %j: index):
    tensor.yield %z : bf16
  } : tensor<2x2xbf16> to tensor<2x?xbf16>
  return %p : tensor<2x?xbf16>
}

// PAD-OVERFLOW: huge-sizes.mlir:[[@LINE+5]]:8: error: dsa interpreter: 'tensor.pad' dimension 1: low 0 + size 2 + high 9223372036854775807 overflows int64
func.func @pad_overflows() -> tensor<2x?xbf16> {
  %x = arith.constant dense<1.0> : tensor<2x2xbf16>
  %z = arith.constant 0.0 : bf16
  %h = arith.constant 9223372036854775807 : index
  %p = tensor.pad %x low[0, 0] high[0, %h] {
  ^bb0(%i: index, %j: index):
    tensor.yield %z : bf16
  } : tensor<2x2xbf16> to tensor<2x?xbf16>
  return %p : tensor<2x?xbf16>
}

// POS: huge-sizes.mlir:[[@LINE+4]]:8: error: dsa interpreter: 'dsa.positions' failed: positions: tensor shape [1099511627776] (i64) needs 8796093022208 bytes, more than the limit of
func.func @positions() -> tensor<?xi64> {
  %sp = arith.constant 0 : i64
  %n = arith.constant 1099511627776 : index
  %p = dsa.positions %sp, %n : (i64, index) -> tensor<?xi64>
  return %p : tensor<?xi64>
}

// WIN: huge-sizes.mlir:[[@LINE+4]]:8: error: dsa interpreter: 'dsa.window_indices' failed: window_indices: tensor shape [1099511627776, 1099511627776]: the element count overflows int64
func.func @window_indices() -> tensor<?x?xi32> {
  %sp = arith.constant 0 : i64
  %n = arith.constant 1099511627776 : index
  %w = dsa.window_indices %sp, %n {window_size = 1099511627776 : i64} : (i64, index) -> tensor<?x?xi32>
  return %w : tensor<?x?xi32>
}

// 16 x 32 f32 = 2048 bytes: refused under a limit of 1000 bytes, fine under 4096.
// LIMIT: error: dsa interpreter: 'tensor.empty' tensor shape [16, 32] (f32) needs 2048 bytes, more than the limit of 1000 bytes (DSA_MAX_TENSOR_BYTES)
// LIMIT-OK: result 0: tensor<16x32xf32> = [0, 0,
func.func @small_limit() -> tensor<?x32xf32> {
  %n = arith.constant 16 : index
  %e = tensor.empty(%n) : tensor<?x32xf32>
  return %e : tensor<?x32xf32>
}
