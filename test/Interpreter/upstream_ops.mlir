// The upstream ops the interpreter supports besides the dsa ops: arith.constant (scalars, dense and splat
// tensors), arith.index_cast / addi / subi / muli, tensor.dim / cast / reshape / expand_shape / collapse_shape
// (row-major: data unchanged, dynamic output sizes from the runtime values), func.call.
// RUN: dsa-run %s --entry=main | FileCheck %s

// Scalar constants: f32 0.1 prints as f32(0.1) = 0.100000001; bf16 0.1 rounds to 0.10009765625 (
// 0.1 = 1.6*2^-4, mantissa 1.1001100|11.. rounds up to 1.1001101 = 1.6015625 -> 0.10009765625).
// CHECK:      result 0: f32 = [0.100000001]
// CHECK-NEXT: result 1: bf16 = [0.100097656]
// CHECK-NEXT: result 2: i1 = [1]
// index_cast index -> i32 truncates: 2^32 + 5 -> 5; i32 -> index sign-extends: -7 -> -7.
// CHECK-NEXT: result 3: i32 = [5]
// CHECK-NEXT: result 4: index = [-7]
// addi wraps at the type's width: 2147483647 + 1 (i32) = -2147483648; muli/subi on index: 6*7 - 50 = -8.
// CHECK-NEXT: result 5: i32 = [-2147483648]
// CHECK-NEXT: result 6: index = [-8]
// Splat and i64 dense constants.
// CHECK-NEXT: result 7: tensor<2x3xf32> = [-1.5, -1.5, -1.5, -1.5, -1.5, -1.5]
// CHECK-NEXT: result 8: tensor<3xi64> = [-9000000000, 0, 9000000000]
// tensor.dim of a [2, 3] value: dim 1 = 3.
// CHECK-NEXT: result 9: index = [3]
// x = [[0, 1, 2], [3, 4, 5]]: tensor.reshape to [3, 2] by a shape tensor; expand_shape to [?, 3, 1] with the dynamic
// size 2 from tensor.dim; collapse_shape back to [6]; each keeps the row-major data 0..5.
// CHECK-NEXT: result 10: tensor<3x2xf32> = [0, 1, 2, 3, 4, 5]
// CHECK-NEXT: result 11: tensor<2x3x1xf32> = [0, 1, 2, 3, 4, 5]
// CHECK-NEXT: result 12: tensor<6xf32> = [0, 1, 2, 3, 4, 5]
func.func @main() -> (f32, bf16, i1, i32, index, i32, index, tensor<2x3xf32>, tensor<3xi64>, index,
                      tensor<?x?xf32>, tensor<?x3x1xf32>, tensor<?xf32>) {
  %f = arith.constant 0.1 : f32
  %b = arith.constant 0.1 : bf16
  %t = arith.constant true

  %big = arith.constant 4294967301 : index
  %trunc = arith.index_cast %big : index to i32
  %m7 = arith.constant -7 : i32
  %ext = arith.index_cast %m7 : i32 to index

  %imax = arith.constant 2147483647 : i32
  %one = arith.constant 1 : i32
  %wrap = arith.addi %imax, %one : i32
  %c6 = arith.constant 6 : index
  %c7 = arith.constant 7 : index
  %c50 = arith.constant 50 : index
  %p = arith.muli %c6, %c7 : index
  %d = arith.subi %p, %c50 : index

  %splat = arith.constant dense<-1.5> : tensor<2x3xf32>
  %wide = arith.constant dense<[-9000000000, 0, 9000000000]> : tensor<3xi64>

  %x = arith.constant dense<[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]> : tensor<2x3xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %dim1 = tensor.dim %x, %c1 : tensor<2x3xf32>
  %shape = arith.constant dense<[3, 2]> : tensor<2xi64>
  %r = tensor.reshape %x(%shape) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  %xd = tensor.cast %x : tensor<2x3xf32> to tensor<?x3xf32>
  %rows = tensor.dim %xd, %c0 : tensor<?x3xf32>
  %e = tensor.expand_shape %xd [[0], [1, 2]] output_shape [%rows, 3, 1] : tensor<?x3xf32> into tensor<?x3x1xf32>
  %flat = tensor.collapse_shape %e [[0, 1, 2]] : tensor<?x3x1xf32> into tensor<?xf32>
  return %f, %b, %t, %trunc, %ext, %wrap, %d, %splat, %wide, %dim1, %r, %e, %flat
      : f32, bf16, i1, i32, index, i32, index, tensor<2x3xf32>, tensor<3xi64>, index,
        tensor<?x?xf32>, tensor<?x3x1xf32>, tensor<?xf32>
}
