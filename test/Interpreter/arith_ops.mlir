// The arith ops the compressed-layer decomposition uses, on the interpreter: extf / truncf (bf16 <-> f32, truncf
// rounds to nearest, ties to even), cmpi (every predicate), select (scalar or elementwise i1 condition), and the
// signed integer ops divsi / floordivsi / ceildivsi / remsi / maxsi / minsi and the bitwise andi / ori / xori.
// RUN: dsa-run %s --entry=floats | FileCheck %s --check-prefix=FLOAT
// RUN: dsa-run %s --entry=compare | FileCheck %s --check-prefix=CMP
// RUN: dsa-run %s --entry=select | FileCheck %s --check-prefix=SEL
// RUN: dsa-run %s --entry=integer | FileCheck %s --check-prefix=INT
// RUN: not dsa-run %s --entry=divsi_zero 2>&1 | FileCheck %s --check-prefix=DIV0
// RUN: not dsa-run %s --entry=floordiv_zero 2>&1 | FileCheck %s --check-prefix=FLOOR0
// RUN: not dsa-run %s --entry=ceildiv_overflow 2>&1 | FileCheck %s --check-prefix=OVERFLOW
// RUN: not dsa-run %s --entry=remsi_zero_tensor 2>&1 | FileCheck %s --check-prefix=REM0
// RUN: not dsa-run %s --entry=select_shape 2>&1 | FileCheck %s --check-prefix=SELSHAPE
// RUN: not dsa-run %s --entry=truncf_mode 2>&1 | FileCheck %s --check-prefix=MODE

// extf bf16 -> f32 is exact: bf16(0.1) = 0.10009765625 stays.
// FLOAT:      result 0: f32 = [0.100097656]
// truncf f32 -> bf16 (7 mantissa bits): 1 + 2^-8 is halfway between 1 and 1 + 2^-7 -> even 1; 1 + 3*2^-8 is halfway
// between 1 + 2^-7 (odd) and 1 + 2^-6 (even) -> 1.015625; 1 + 3*2^-9 = 1.005859375 is above the midpoint 1 + 2^-8
// -> 1.0078125; -3 exact; +inf stays.
// FLOAT-NEXT: result 1: bf16 = [1]
// FLOAT-NEXT: result 2: tensor<5xbf16> = [1, 1.015625, 1.0078125, -3, inf]
// extf of a bf16 tensor, then truncf back: the same values.
// FLOAT-NEXT: result 3: tensor<2xf32> = [0.5, -2.25]
// FLOAT-NEXT: result 4: tensor<2xbf16> = [0.5, -2.25]
func.func @floats() -> (f32, bf16, tensor<5xbf16>, tensor<2xf32>, tensor<2xbf16>) {
  %b = arith.constant 0.1 : bf16
  %e = arith.extf %b : bf16 to f32
  %f = arith.constant 1.00390625 : f32
  %t = arith.truncf %f : f32 to bf16
  %v = arith.constant dense<[1.00390625, 1.01171875, 1.005859375, -3.0, 0x7F800000]> : tensor<5xf32>
  %vt = arith.truncf %v : tensor<5xf32> to tensor<5xbf16>
  %w = arith.constant dense<[0.5, -2.25]> : tensor<2xbf16>
  %we = arith.extf %w : tensor<2xbf16> to tensor<2xf32>
  %wt = arith.truncf %we : tensor<2xf32> to tensor<2xbf16>
  return %e, %t, %vt, %we, %wt : f32, bf16, tensor<5xbf16>, tensor<2xf32>, tensor<2xbf16>
}

// cmpi -1 vs 2 (i64): signed -1 < 2; unsigned -1 is 2^64 - 1 > 2.
// CMP:      result 0: i1 = [0]
// CMP-NEXT: result 1: i1 = [1]
// CMP-NEXT: result 2: i1 = [1]
// CMP-NEXT: result 3: i1 = [1]
// CMP-NEXT: result 4: i1 = [0]
// CMP-NEXT: result 5: i1 = [0]
// CMP-NEXT: result 6: i1 = [0]
// CMP-NEXT: result 7: i1 = [0]
// CMP-NEXT: result 8: i1 = [1]
// CMP-NEXT: result 9: i1 = [1]
// Equal index values: eq, sle, uge hold; i32 -1 ult 2 does not (2^32 - 1 unsigned); i1 `true slt false` holds
// (true is -1 signed).
// CMP-NEXT: result 10: i1 = [1]
// CMP-NEXT: result 11: i1 = [1]
// CMP-NEXT: result 12: i1 = [1]
// CMP-NEXT: result 13: i1 = [0]
// CMP-NEXT: result 14: i1 = [1]
func.func @compare() -> (i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i1) {
  %a = arith.constant -1 : i64
  %b = arith.constant 2 : i64
  %eq = arith.cmpi eq, %a, %b : i64
  %ne = arith.cmpi ne, %a, %b : i64
  %slt = arith.cmpi slt, %a, %b : i64
  %sle = arith.cmpi sle, %a, %b : i64
  %sgt = arith.cmpi sgt, %a, %b : i64
  %sge = arith.cmpi sge, %a, %b : i64
  %ult = arith.cmpi ult, %a, %b : i64
  %ule = arith.cmpi ule, %a, %b : i64
  %ugt = arith.cmpi ugt, %a, %b : i64
  %uge = arith.cmpi uge, %a, %b : i64
  %i = arith.constant 7 : index
  %j = arith.constant 7 : index
  %ieq = arith.cmpi eq, %i, %j : index
  %isle = arith.cmpi sle, %i, %j : index
  %iuge = arith.cmpi uge, %i, %j : index
  %m1 = arith.constant -1 : i32
  %two = arith.constant 2 : i32
  %ult32 = arith.cmpi ult, %m1, %two : i32
  %true = arith.constant true
  %false = arith.constant false
  %bslt = arith.cmpi slt, %true, %false : i1
  return %eq, %ne, %slt, %sle, %sgt, %sge, %ult, %ule, %ugt, %uge, %ieq, %isle, %iuge, %ult32, %bslt
      : i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i1
}

// The shared-slot quirk of docs/design-compressed.md: %g = rows of the latent, publish the own cache only when
// g > 0. g = 0 keeps the slot (3 rows of 5); g = 2 picks the own cache (2 rows of 1): the runtime shapes differ.
// SEL:      result 0: tensor<3x2xbf16> = [5, 5, 5, 5, 5, 5]
// SEL-NEXT: result 1: tensor<2x2xbf16> = [1, 1, 1, 1]
// Scalar operands; an elementwise i1 tensor condition.
// SEL-NEXT: result 2: i64 = [-4]
// SEL-NEXT: result 3: tensor<2x2xi32> = [1, 20, 30, 4]
func.func @select() -> (tensor<?x2xbf16>, tensor<?x2xbf16>, i64, tensor<2x2xi32>) {
  %c0 = arith.constant 0 : index
  %slot3 = arith.constant dense<5.0> : tensor<3x2xbf16>
  %slot = tensor.cast %slot3 : tensor<3x2xbf16> to tensor<?x2xbf16>
  %own2 = arith.constant dense<1.0> : tensor<2x2xbf16>
  %own = tensor.cast %own2 : tensor<2x2xbf16> to tensor<?x2xbf16>
  %none = tensor.empty() : tensor<0x4xf32>
  %two = tensor.empty() : tensor<2x4xf32>
  %g0 = tensor.dim %none, %c0 : tensor<0x4xf32>
  %g2 = tensor.dim %two, %c0 : tensor<2x4xf32>
  %has0 = arith.cmpi sgt, %g0, %c0 : index
  %has2 = arith.cmpi sgt, %g2, %c0 : index
  %s0 = arith.select %has0, %own, %slot : tensor<?x2xbf16>
  %s2 = arith.select %has2, %own, %slot : tensor<?x2xbf16>
  %x = arith.constant 3 : i64
  %y = arith.constant -4 : i64
  %false = arith.constant false
  %sc = arith.select %false, %x, %y : i64
  %cond = arith.constant dense<[[true, false], [false, true]]> : tensor<2x2xi1>
  %a = arith.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>
  %b = arith.constant dense<[[10, 20], [30, 40]]> : tensor<2x2xi32>
  %e = arith.select %cond, %a, %b : tensor<2x2xi1>, tensor<2x2xi32>
  return %s0, %s2, %sc, %e : tensor<?x2xbf16>, tensor<?x2xbf16>, i64, tensor<2x2xi32>
}

// Signed division rounds toward zero (divsi), -inf (floordivsi), +inf (ceildivsi); remsi takes the dividend's sign:
//   -7 / 2: divsi -3, floordivsi -4, ceildivsi -3, remsi -1
//    7 / -2: divsi -3, floordivsi -4, ceildivsi -3, remsi 1
//    7 / 2: ceildivsi 4;  -6 / 3: floordivsi -2, ceildivsi -2 (exact: no adjustment)
// INT:      result 0: i64 = [-3]
// INT-NEXT: result 1: i64 = [-4]
// INT-NEXT: result 2: i64 = [-3]
// INT-NEXT: result 3: i64 = [-1]
// INT-NEXT: result 4: i64 = [-3]
// INT-NEXT: result 5: i64 = [-4]
// INT-NEXT: result 6: i64 = [-3]
// INT-NEXT: result 7: i64 = [1]
// INT-NEXT: result 8: index = [4]
// INT-NEXT: result 9: index = [-2]
// INT-NEXT: result 10: index = [-2]
// maxsi / minsi of -7 and 2 (signed): 2, -7; on i32 -2147483648 and 5: 5, -2147483648.
// INT-NEXT: result 11: i64 = [2]
// INT-NEXT: result 12: i64 = [-7]
// INT-NEXT: result 13: i32 = [5]
// INT-NEXT: result 14: i32 = [-2147483648]
// 12 = 0b1100, 10 = 0b1010: and 0b1000 = 8, or 0b1110 = 14, xor 0b0110 = 6; i1: true and false = 0, true xor true = 0,
// true or false = 1.
// INT-NEXT: result 15: i64 = [8]
// INT-NEXT: result 16: i64 = [14]
// INT-NEXT: result 17: i64 = [6]
// INT-NEXT: result 18: i1 = [0]
// INT-NEXT: result 19: i1 = [0]
// INT-NEXT: result 20: i1 = [1]
// Elementwise on a tensor: floordivsi [7, -7, 0] by [2, 2, 5] = [3, -4, 0].
// INT-NEXT: result 21: tensor<3xi64> = [3, -4, 0]
func.func @integer() -> (i64, i64, i64, i64, i64, i64, i64, i64, index, index, index, i64, i64, i32, i32,
                         i64, i64, i64, i1, i1, i1, tensor<3xi64>) {
  %m7 = arith.constant -7 : i64
  %p7 = arith.constant 7 : i64
  %p2 = arith.constant 2 : i64
  %m2 = arith.constant -2 : i64
  %d0 = arith.divsi %m7, %p2 : i64
  %f0 = arith.floordivsi %m7, %p2 : i64
  %c0 = arith.ceildivsi %m7, %p2 : i64
  %r0 = arith.remsi %m7, %p2 : i64
  %d1 = arith.divsi %p7, %m2 : i64
  %f1 = arith.floordivsi %p7, %m2 : i64
  %c1 = arith.ceildivsi %p7, %m2 : i64
  %r1 = arith.remsi %p7, %m2 : i64
  %i7 = arith.constant 7 : index
  %i2 = arith.constant 2 : index
  %im6 = arith.constant -6 : index
  %i3 = arith.constant 3 : index
  %c2 = arith.ceildivsi %i7, %i2 : index
  %f3 = arith.floordivsi %im6, %i3 : index
  %c3 = arith.ceildivsi %im6, %i3 : index
  %max = arith.maxsi %m7, %p2 : i64
  %min = arith.minsi %m7, %p2 : i64
  %imin = arith.constant -2147483648 : i32
  %i5 = arith.constant 5 : i32
  %max32 = arith.maxsi %imin, %i5 : i32
  %min32 = arith.minsi %imin, %i5 : i32
  %x12 = arith.constant 12 : i64
  %x10 = arith.constant 10 : i64
  %and = arith.andi %x12, %x10 : i64
  %or = arith.ori %x12, %x10 : i64
  %xor = arith.xori %x12, %x10 : i64
  %true = arith.constant true
  %false = arith.constant false
  %band = arith.andi %true, %false : i1
  %bxor = arith.xori %true, %true : i1
  %bor = arith.ori %true, %false : i1
  %ta = arith.constant dense<[7, -7, 0]> : tensor<3xi64>
  %tb = arith.constant dense<[2, 2, 5]> : tensor<3xi64>
  %tf = arith.floordivsi %ta, %tb : tensor<3xi64>
  return %d0, %f0, %c0, %r0, %d1, %f1, %c1, %r1, %c2, %f3, %c3, %max, %min, %max32, %min32, %and, %or, %xor,
         %band, %bxor, %bor, %tf
      : i64, i64, i64, i64, i64, i64, i64, i64, index, index, index, i64, i64, i32, i32, i64, i64, i64, i1, i1, i1,
        tensor<3xi64>
}

// Division by zero is a diagnostic at the op, not a crash (the divisor is computed, so nothing folds it away).
// DIV0: arith_ops.mlir:[[@LINE+5]]:8: error: dsa interpreter: 'arith.divsi' division by zero (lhs 7, rhs 0)
func.func @divsi_zero() -> i64 {
  %a = arith.constant 7 : i64
  %b = arith.constant 3 : i64
  %zero = arith.subi %b, %b : i64
  %q = arith.divsi %a, %zero : i64
  return %q : i64
}

// FLOOR0: arith_ops.mlir:[[@LINE+5]]:8: error: dsa interpreter: 'arith.floordivsi' division by zero (lhs 5, rhs 0)
func.func @floordiv_zero() -> index {
  %a = arith.constant 5 : index
  %b = arith.constant 4 : index
  %zero = arith.subi %b, %b : index
  %q = arith.floordivsi %a, %zero : index
  return %q : index
}

// The one overflowing quotient: the minimum value divided by -1.
// OVERFLOW: arith_ops.mlir:[[@LINE+4]]:8: error: dsa interpreter: 'arith.ceildivsi' signed division overflow (the minimum value divided by -1) (lhs -2147483648, rhs -1)
func.func @ceildiv_overflow() -> i32 {
  %a = arith.constant -2147483648 : i32
  %b = arith.constant -1 : i32
  %q = arith.ceildivsi %a, %b : i32
  return %q : i32
}

// REM0: arith_ops.mlir:[[@LINE+4]]:8: error: dsa interpreter: 'arith.remsi' division by zero (lhs 9, rhs 0, element 1)
func.func @remsi_zero_tensor() -> tensor<2xi64> {
  %a = arith.constant dense<[8, 9]> : tensor<2xi64>
  %b = arith.constant dense<[3, 0]> : tensor<2xi64>
  %r = arith.remsi %a, %b : tensor<2xi64>
  return %r : tensor<2xi64>
}

// SELSHAPE: arith_ops.mlir:[[@LINE+6]]:8: error: dsa interpreter: 'arith.select' true value (operand #1) tensor<3xf32> must have the shape of the condition tensor<2xi1>
func.func @select_shape() -> tensor<?xf32> {
  %cond = arith.constant dense<[true, false]> : tensor<2xi1>
  %a = arith.constant dense<1.0> : tensor<3xf32>
  %ad = tensor.cast %a : tensor<3xf32> to tensor<?xf32>
  %cd = tensor.cast %cond : tensor<2xi1> to tensor<?xi1>
  %r = arith.select %cd, %ad, %ad : tensor<?xi1>, tensor<?xf32>
  return %r : tensor<?xf32>
}

// MODE: arith_ops.mlir:[[@LINE+3]]:8: error: dsa interpreter: 'arith.truncf' rounding mode 'toward_zero' is not supported
func.func @truncf_mode() -> bf16 {
  %f = arith.constant 1.5 : f32
  %t = arith.truncf %f toward_zero : f32 to bf16
  return %t : bf16
}
