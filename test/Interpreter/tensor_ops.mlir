// The tensor ops the compressed-layer decomposition uses, on the interpreter: tensor.empty (zero-filled),
// extract_slice / insert_slice (static or dynamic offsets, sizes, strides; rank-reducing / -extending; row-major),
// concat (any dim, zero-sized inputs), pad (a padding value from a constant or from the enclosing function).
// RUN: dsa-run %s --entry=main | FileCheck %s
// RUN: dsa-run %s --entry=more | FileCheck %s --check-prefix=MORE
// RUN: not dsa-run %s --entry=slice_oob 2>&1 | FileCheck %s --check-prefix=OOB
// RUN: not dsa-run %s --entry=slice_stride_oob 2>&1 | FileCheck %s --check-prefix=STRIDE
// RUN: not dsa-run %s --entry=insert_oob 2>&1 | FileCheck %s --check-prefix=INSERT
// RUN: not dsa-run %s --entry=insert_source 2>&1 | FileCheck %s --check-prefix=SOURCE
// RUN: not dsa-run %s --entry=concat_mismatch 2>&1 | FileCheck %s --check-prefix=CONCAT
// RUN: not dsa-run %s --entry=empty_negative 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: not dsa-run %s --entry=pad_negative 2>&1 | FileCheck %s --check-prefix=PAD

// tensor.empty: zeros, with the dynamic size from an operand.
// CHECK:      result 0: tensor<2x3xf32> = [0, 0, 0, 0, 0, 0]
// CHECK-NEXT: result 1: tensor<2xi32> = [0, 0]
// x = [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]] (4x3):
//   rows 1..2 (offsets [1, 0], sizes [2, 3]):                        [3, 4, 5, 6, 7, 8]
//   every other row and column (sizes [2, 2], strides [2, 2]):      x[0,0], x[0,2], x[2,0], x[2,2] = [0, 2, 6, 8]
//   compress_kv[0 .. end//r) with end = 5, r = 2 (sizes [5 floordiv 2 = 2, 3], dynamic): rows 0, 1
//   row 2 with the unit dimension dropped (tensor<3xf32>):             [6, 7, 8]
//   zero rows at offset 2:                                           []
//   zero rows of a source with zero rows (compress_kv[0 .. 0) before any group): []
//   column 1 from a dynamic offset [%c1, %c1] and sizes [3, 1]: x[1,1], x[2,1], x[3,1] = [4, 7, 10]
// CHECK-NEXT: result 2: tensor<2x3xf32> = [3, 4, 5, 6, 7, 8]
// CHECK-NEXT: result 3: tensor<2x2xf32> = [0, 2, 6, 8]
// CHECK-NEXT: result 4: tensor<2x3xf32> = [0, 1, 2, 3, 4, 5]
// CHECK-NEXT: result 5: tensor<3xf32> = [6, 7, 8]
// CHECK-NEXT: result 6: tensor<0x3xf32> = []
// CHECK-NEXT: result 7: tensor<0x3xf32> = []
// CHECK-NEXT: result 8: tensor<3x1xf32> = [4, 7, 10]
func.func @main() -> (tensor<?x3xf32>, tensor<2xi32>, tensor<2x3xf32>, tensor<2x2xf32>, tensor<?x3xf32>,
                      tensor<3xf32>, tensor<0x3xf32>, tensor<?x3xf32>, tensor<?x1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %e = tensor.empty(%c2) : tensor<?x3xf32>
  %ei = tensor.empty() : tensor<2xi32>
  %x = arith.constant dense<[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0], [9.0, 10.0, 11.0]]> : tensor<4x3xf32>
  %rows = tensor.extract_slice %x[1, 0] [2, 3] [1, 1] : tensor<4x3xf32> to tensor<2x3xf32>
  %strided = tensor.extract_slice %x[0, 0] [2, 2] [2, 2] : tensor<4x3xf32> to tensor<2x2xf32>
  %end = arith.constant 5 : index
  %n = arith.floordivsi %end, %c2 : index
  %prefix = tensor.extract_slice %x[0, 0] [%n, 3] [1, 1] : tensor<4x3xf32> to tensor<?x3xf32>
  %row2 = tensor.extract_slice %x[2, 0] [1, 3] [1, 1] : tensor<4x3xf32> to tensor<3xf32>
  %none = tensor.extract_slice %x[2, 0] [0, 3] [1, 1] : tensor<4x3xf32> to tensor<0x3xf32>
  %nothing0 = tensor.empty() : tensor<0x3xf32>
  %nothing = tensor.cast %nothing0 : tensor<0x3xf32> to tensor<?x3xf32>
  %zero_rows = arith.floordivsi %c1, %c2 : index
  %none2 = tensor.extract_slice %nothing[0, 0] [%zero_rows, 3] [1, 1] : tensor<?x3xf32> to tensor<?x3xf32>
  %col = tensor.extract_slice %x[%c1, %c1] [%c3, 1] [%c1, 1] : tensor<4x3xf32> to tensor<?x1xf32>
  return %e, %ei, %rows, %strided, %prefix, %row2, %none, %none2, %col
      : tensor<?x3xf32>, tensor<2xi32>, tensor<2x3xf32>, tensor<2x2xf32>, tensor<?x3xf32>, tensor<3xf32>,
        tensor<0x3xf32>, tensor<?x3xf32>, tensor<?x1xf32>
}

// insert_slice into zeros (3x3): [[1, 2], [3, 4]] at [1, 1]; a row [7, 8, 9] into row %c0 (rank-extending, sizes
// [1, 3]); [5, 6] at column 0 with stride 2 in a row of 4 -> positions 0 and 2.
// MORE:      probe insert: tensor<3x3xf32> = [0, 0, 0, 0, 1, 2, 0, 3, 4]
// MORE-NEXT: probe insert_row: tensor<3x3xf32> = [7, 8, 9, 0, 1, 2, 0, 3, 4]
// MORE-NEXT: probe insert_strided: tensor<1x4xi32> = [5, 0, 6, 0]
// concat dim 0: window rows (2) ++ zero rows ++ compressed rows (1); concat dim 1 of i32 index tensors (window idx
// ++ compressed idx): [[1], [2]] ++ [[3, 4], [5, 6]] = [[1, 3, 4], [2, 5, 6]].
// MORE-NEXT: probe concat0: tensor<3x2xbf16> = [1, 2, 3, 4, 5, 6]
// MORE-NEXT: probe concat1: tensor<2x3xi32> = [1, 3, 4, 2, 5, 6]
// MORE-NEXT: probe concat_empty: tensor<0x2xbf16> = []
// pad [[1, 2], [3, 4]] with low [1, 0], high [0, 1]: a -inf row above, a -inf column right (the value captured from
// the function); then low [0, 0], high [%c1, 0] with 0 from a constant inside the region.
// MORE-NEXT: probe pad: tensor<3x3xbf16> = [-inf, -inf, -inf, 1, 2, -inf, 3, 4, -inf]
// MORE-NEXT: probe pad_dynamic: tensor<3x2xi32> = [1, 2, 3, 4, 0, 0]
func.func @more() -> () {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zeros = arith.constant dense<0.0> : tensor<3x3xf32>
  %block = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %i = tensor.insert_slice %block into %zeros[1, 1] [2, 2] [1, 1] : tensor<2x2xf32> into tensor<3x3xf32>
  dsa.probe "insert" %i : tensor<3x3xf32>
  %row = arith.constant dense<[7.0, 8.0, 9.0]> : tensor<3xf32>
  %ir = tensor.insert_slice %row into %i[%c0, 0] [1, 3] [1, 1] : tensor<3xf32> into tensor<3x3xf32>
  dsa.probe "insert_row" %ir : tensor<3x3xf32>
  %z4 = arith.constant dense<0> : tensor<1x4xi32>
  %two = arith.constant dense<[[5, 6]]> : tensor<1x2xi32>
  %is = tensor.insert_slice %two into %z4[0, 0] [1, 2] [1, 2] : tensor<1x2xi32> into tensor<1x4xi32>
  dsa.probe "insert_strided" %is : tensor<1x4xi32>

  %win = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xbf16>
  %empty = tensor.empty() : tensor<0x2xbf16>
  %cmp = arith.constant dense<[[5.0, 6.0]]> : tensor<1x2xbf16>
  %rows = tensor.concat dim(0) %win, %empty, %cmp : (tensor<2x2xbf16>, tensor<0x2xbf16>, tensor<1x2xbf16>) -> tensor<3x2xbf16>
  dsa.probe "concat0" %rows : tensor<3x2xbf16>
  %wi = arith.constant dense<[[1], [2]]> : tensor<2x1xi32>
  %ci = arith.constant dense<[[3, 4], [5, 6]]> : tensor<2x2xi32>
  %idx = tensor.concat dim(1) %wi, %ci : (tensor<2x1xi32>, tensor<2x2xi32>) -> tensor<2x3xi32>
  dsa.probe "concat1" %idx : tensor<2x3xi32>
  %ee = tensor.concat dim(0) %empty, %empty : (tensor<0x2xbf16>, tensor<0x2xbf16>) -> tensor<0x2xbf16>
  dsa.probe "concat_empty" %ee : tensor<0x2xbf16>

  %ninf = arith.constant 0xFF80 : bf16
  %p = tensor.pad %win low[1, 0] high[0, 1] {
  ^bb0(%a: index, %b: index):
    tensor.yield %ninf : bf16
  } : tensor<2x2xbf16> to tensor<3x3xbf16>
  dsa.probe "pad" %p : tensor<3x3xbf16>
  %ints = arith.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>
  %pd = tensor.pad %ints low[0, 0] high[%c1, 0] {
  ^bb0(%a: index, %b: index):
    %zero = arith.constant 0 : i32
    tensor.yield %zero : i32
  } : tensor<2x2xi32> to tensor<?x2xi32>
  dsa.probe "pad_dynamic" %pd : tensor<?x2xi32>
  return
}

// Reading rows 3..4 of a 4-row tensor (the size is dynamic, so only the interpreter can see it).
// OOB: tensor_ops.mlir:[[@LINE+4]]:8: error: dsa interpreter: 'tensor.extract_slice' slice [offsets [3, 0], sizes [2, 3], strides [1, 1]] is out of bounds of the source (operand #0) tensor<4x3xf32>: dimension 0: offset 3 + (size 2 - 1) * stride 1 reaches index 4, out of bounds for size 4
func.func @slice_oob() -> tensor<?x3xf32> {
  %x = arith.constant dense<1.0> : tensor<4x3xf32>
  %c2 = arith.constant 2 : index
  %s = tensor.extract_slice %x[3, 0] [%c2, 3] [1, 1] : tensor<4x3xf32> to tensor<?x3xf32>
  return %s : tensor<?x3xf32>
}

// STRIDE: tensor_ops.mlir:[[@LINE+4]]:8: error: dsa interpreter: 'tensor.extract_slice' {{.*}}dimension 1: offset 1 + (size 2 - 1) * stride 2 reaches index 3, out of bounds for size 3
func.func @slice_stride_oob() -> tensor<2x?xf32> {
  %x = arith.constant dense<1.0> : tensor<4x3xf32>
  %c2 = arith.constant 2 : index
  %s = tensor.extract_slice %x[0, 1] [2, %c2] [1, 2] : tensor<4x3xf32> to tensor<2x?xf32>
  return %s : tensor<2x?xf32>
}

// INSERT: tensor_ops.mlir:[[@LINE+5]]:8: error: dsa interpreter: 'tensor.insert_slice' slice [offsets [2, 0], sizes [2, 2], strides [1, 1]] is out of bounds of the dest (operand #1) tensor<3x2xf32>: dimension 0: offset 2 + (size 2 - 1) * stride 1 reaches index 3, out of bounds for size 3
func.func @insert_oob() -> tensor<3x2xf32> {
  %dest = arith.constant dense<0.0> : tensor<3x2xf32>
  %src = arith.constant dense<1.0> : tensor<2x2xf32>
  %c2 = arith.constant 2 : index
  %r = tensor.insert_slice %src into %dest[%c2, 0] [2, 2] [1, 1] : tensor<2x2xf32> into tensor<3x2xf32>
  return %r : tensor<3x2xf32>
}

// A dynamic source whose runtime rows differ from the slice's size.
// SOURCE: tensor_ops.mlir:[[@LINE+6]]:8: error: dsa interpreter: 'tensor.insert_slice' source (operand #0) tensor<1x2xf32> does not have the slice's shape [2, 2] (sizes [2, 2])
func.func @insert_source() -> tensor<3x2xf32> {
  %dest = arith.constant dense<0.0> : tensor<3x2xf32>
  %src1 = arith.constant dense<1.0> : tensor<1x2xf32>
  %src = tensor.cast %src1 : tensor<1x2xf32> to tensor<?x2xf32>
  %c2 = arith.constant 2 : index
  %r = tensor.insert_slice %src into %dest[0, 0] [%c2, 2] [1, 1] : tensor<?x2xf32> into tensor<3x2xf32>
  return %r : tensor<3x2xf32>
}

// CONCAT: tensor_ops.mlir:[[@LINE+5]]:8: error: dsa interpreter: 'tensor.concat' operand #1 tensor<1x3xbf16> differs from operand #0 tensor<2x2xbf16> in dimension 1 (only dim 0 may differ)
func.func @concat_mismatch() -> tensor<?x?xbf16> {
  %a = arith.constant dense<1.0> : tensor<2x2xbf16>
  %b3 = arith.constant dense<1.0> : tensor<1x3xbf16>
  %b = tensor.cast %b3 : tensor<1x3xbf16> to tensor<1x?xbf16>
  %r = tensor.concat dim(0) %a, %b : (tensor<2x2xbf16>, tensor<1x?xbf16>) -> tensor<?x?xbf16>
  return %r : tensor<?x?xbf16>
}

// EMPTY: tensor_ops.mlir:[[@LINE+3]]:8: error: dsa interpreter: 'tensor.empty' dynamic size (operand #0) is negative: -1
func.func @empty_negative() -> tensor<?xf32> {
  %m1 = arith.constant -1 : index
  %e = tensor.empty(%m1) : tensor<?xf32>
  return %e : tensor<?xf32>
}

// PAD: tensor_ops.mlir:[[@LINE+5]]:8: error: dsa interpreter: 'tensor.pad' dimension 0: negative padding (low -2, high 0)
func.func @pad_negative() -> tensor<?xf32> {
  %x = arith.constant dense<1.0> : tensor<3xf32>
  %m2 = arith.constant -2 : index
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[%m2] high[0] {
  ^bb0(%i: index):
    tensor.yield %zero : f32
  } : tensor<3xf32> to tensor<?xf32>
  return %p : tensor<?xf32>
}
