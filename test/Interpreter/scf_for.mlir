// scf.for on the interpreter: index (or integer) bounds, any number of iter_args (tensors and scalars), the body run
// once per iteration in a fresh scope that sees the enclosing values, scf.yield giving the next iter values, results
// the final ones (zero trips: the inits); nested loops; tensor.extract / tensor.insert (one element as a scalar, one
// element replaced by a scalar). Around them the
// batched-decode pattern: rank-reducing extract_slice / insert_slice at the induction variable, collapse_shape and
// expand_shape of [B, 1, dim], tensor.empty with a dynamic batch.
// RUN: dsa-run %s --entry=main | FileCheck %s
// RUN: dsa-run %s --entry=loops | FileCheck %s --check-prefix=LOOPS
// RUN: dsa-run %s --entry=carry | FileCheck %s --check-prefix=CARRY
// RUN: dsa-run %s --entry=batched | FileCheck %s --check-prefix=BATCH
// RUN: not dsa-run %s --entry=step_zero 2>&1 | FileCheck %s --check-prefix=STEP0
// RUN: not dsa-run %s --entry=step_negative 2>&1 | FileCheck %s --check-prefix=STEPNEG
// RUN: not dsa-run %s --entry=extract_oob_in_loop 2>&1 | FileCheck %s --check-prefix=OOB
// RUN: not dsa-run %s --entry=extract_oob 2>&1 | FileCheck %s --check-prefix=OOB2
// RUN: not dsa-run %s --entry=insert_oob 2>&1 | FileCheck %s --check-prefix=INSERT

// @prefix_sums of x = [3, 1, 4, 1, 5] (a dynamic trip count: tensor.dim x = 5): a running total carried as an i64
// scalar (tensor.extract x[i] added each trip) and written at the induction variable by tensor.insert gives the
// prefix sums x[0] + ... + x[i]; x[n - 1 - i] moved by extract_slice / insert_slice at dynamic offsets gives x
// reversed; the trip count is carried as an index scalar.
// CHECK:      result 0: tensor<5xi64> = [3, 4, 8, 9, 14]
// CHECK-NEXT: result 1: tensor<5xi64> = [5, 1, 4, 1, 3]
// CHECK-NEXT: result 2: i64 = [14]
// CHECK-NEXT: result 3: index = [5]
// tensor.extract of the i64 argument of @element: x[2] = 4; of a 2-D f32 constant at [1, 0]: 2.5.
// CHECK-NEXT: result 4: i64 = [4]
// CHECK-NEXT: result 5: f32 = [2.5]
func.func @main() -> (tensor<5xi64>, tensor<5xi64>, i64, index, i64, f32) {
  %x5 = arith.constant dense<[3, 1, 4, 1, 5]> : tensor<5xi64>
  %x = tensor.cast %x5 : tensor<5xi64> to tensor<?xi64>
  %sums, %rev, %total, %trips = func.call @prefix_sums(%x)
      : (tensor<?xi64>) -> (tensor<?xi64>, tensor<?xi64>, i64, index)
  %sums5 = tensor.cast %sums : tensor<?xi64> to tensor<5xi64>
  %rev5 = tensor.cast %rev : tensor<?xi64> to tensor<5xi64>
  %c2 = arith.constant 2 : index
  %e = func.call @element(%x, %c2) : (tensor<?xi64>, index) -> i64
  %m = arith.constant dense<[[1.0, -1.0], [2.5, 0.5]]> : tensor<2x2xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = tensor.extract %m[%c1, %c0] : tensor<2x2xf32>
  return %sums5, %rev5, %total, %trips, %e, %f : tensor<5xi64>, tensor<5xi64>, i64, index, i64, f32
}

func.func @prefix_sums(%x: tensor<?xi64>) -> (tensor<?xi64>, tensor<?xi64>, i64, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0 : i64
  %n = tensor.dim %x, %c0 : tensor<?xi64>
  %last = arith.subi %n, %c1 : index
  %sums0 = tensor.empty(%n) : tensor<?xi64>
  %rev0 = tensor.empty(%n) : tensor<?xi64>
  %sums, %rev, %total, %trips = scf.for %i = %c0 to %n step %c1
      iter_args(%s = %sums0, %r = %rev0, %t = %zero, %k = %c0) -> (tensor<?xi64>, tensor<?xi64>, i64, index) {
    %v = tensor.extract %x[%i] : tensor<?xi64>
    %t1 = arith.addi %t, %v : i64
    %s1 = tensor.insert %t1 into %s[%i] : tensor<?xi64>
    %j = arith.subi %last, %i : index
    %xj = tensor.extract_slice %x[%j] [1] [1] : tensor<?xi64> to tensor<1xi64>
    %r1 = tensor.insert_slice %xj into %r[%i] [1] [1] : tensor<1xi64> into tensor<?xi64>
    %k1 = arith.addi %k, %c1 : index
    scf.yield %s1, %r1, %t1, %k1 : tensor<?xi64>, tensor<?xi64>, i64, index
  }
  return %sums, %rev, %total, %trips : tensor<?xi64>, tensor<?xi64>, i64, index
}

func.func @element(%x: tensor<?xi64>, %i: index) -> i64 {
  %v = tensor.extract %x[%i] : tensor<?xi64>
  return %v : i64
}

// A nested loop with a triangular inner bound (j < i + 1, from the outer induction variable): a counter carried
// through both loops counts 1, 2, 3, ... in visit order; each cell [i, j] gets counter + base[i], base[i] read in the
// outer body and used in the inner one. Rows: [101, 0, 0], [202, 203, 0], [304, 305, 306]; the counter ends at 6.
// LOOPS:      result 0: tensor<3x3xi64> = [101, 0, 0, 202, 203, 0, 304, 305, 306]
// LOOPS-NEXT: result 1: i64 = [6]
// Zero trips give the inits: lb == ub, lb > ub (signed), ub from an empty dimension, and an unsigned loop from -1
// (2^64 - 1 unsigned) to 3 that would run 4 times signed.
// LOOPS-NEXT: result 2: i64 = [42]
// LOOPS-NEXT: result 3: tensor<2xi64> = [7, 8]
// LOOPS-NEXT: result 4: i64 = [42]
// LOOPS-NEXT: result 5: i64 = [42]
// LOOPS-NEXT: result 6: i64 = [42]
// The same unsigned loop from 1 to 3: 2 trips (42 + 2).
// LOOPS-NEXT: result 7: i64 = [44]
// An i32 induction variable from -3 to 7 step 3 (a step that does not divide the span): -3 + 0 + 3 + 6 = 6 in 4 trips.
// LOOPS-NEXT: result 8: i32 = [6]
// LOOPS-NEXT: result 9: i32 = [4]
func.func @loops() -> (tensor<3x3xi64>, i64, i64, tensor<2xi64>, i64, i64, i64, i64, i32, i32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %bases = arith.constant dense<[100, 200, 300]> : tensor<3xi64>
  %one = arith.constant 1 : i64
  %zero = arith.constant 0 : i64
  %m0 = arith.constant dense<0> : tensor<3x3xi64>
  %m, %cnt = scf.for %i = %c0 to %c3 step %c1 iter_args(%mi = %m0, %ci = %zero) -> (tensor<3x3xi64>, i64) {
    %base = tensor.extract %bases[%i] : tensor<3xi64>
    %ub = arith.addi %i, %c1 : index
    %mj, %cj = scf.for %j = %c0 to %ub step %c1 iter_args(%mm = %mi, %cc = %ci) -> (tensor<3x3xi64>, i64) {
      %c = arith.addi %cc, %one : i64
      %v = arith.addi %c, %base : i64
      %mm1 = tensor.insert %v into %mm[%i, %j] : tensor<3x3xi64>
      scf.yield %mm1, %c : tensor<3x3xi64>, i64
    }
    scf.yield %mj, %cj : tensor<3x3xi64>, i64
  }

  %init = arith.constant 42 : i64
  %tinit = arith.constant dense<[7, 8]> : tensor<2xi64>
  %c5 = arith.constant 5 : index
  %z0, %z1 = scf.for %i = %c5 to %c5 step %c1 iter_args(%s = %init, %t = %tinit) -> (i64, tensor<2xi64>) {
    %s1 = arith.addi %s, %one : i64
    %t1 = tensor.insert %s1 into %t[%c0] : tensor<2xi64>
    scf.yield %s1, %t1 : i64, tensor<2xi64>
  }
  %c7 = arith.constant 7 : index
  %z2 = scf.for %i = %c7 to %c3 step %c1 iter_args(%s = %init) -> (i64) {
    %s1 = arith.addi %s, %one : i64
    scf.yield %s1 : i64
  }
  %nothing = tensor.empty() : tensor<0x2xf32>
  %n0 = tensor.dim %nothing, %c0 : tensor<0x2xf32>
  %z3 = scf.for %i = %c0 to %n0 step %c1 iter_args(%s = %init) -> (i64) {
    %s1 = arith.addi %s, %one : i64
    scf.yield %s1 : i64
  }
  %cm1 = arith.constant -1 : index
  %z4 = scf.for unsigned %i = %cm1 to %c3 step %c1 iter_args(%s = %init) -> (i64) {
    %s1 = arith.addi %s, %one : i64
    scf.yield %s1 : i64
  }
  %u2 = scf.for unsigned %i = %c1 to %c3 step %c1 iter_args(%s = %init) -> (i64) {
    %s1 = arith.addi %s, %one : i64
    scf.yield %s1 : i64
  }

  %lo = arith.constant -3 : i32
  %hi = arith.constant 7 : i32
  %st = arith.constant 3 : i32
  %z = arith.constant 0 : i32
  %o = arith.constant 1 : i32
  %sum, %trips = scf.for %i = %lo to %hi step %st iter_args(%s = %z, %k = %z) -> (i32, i32) : i32 {
    %s1 = arith.addi %s, %i : i32
    %k1 = arith.addi %k, %o : i32
    scf.yield %s1, %k1 : i32, i32
  }
  return %m, %cnt, %z0, %z1, %z2, %z3, %z4, %u2, %sum, %trips
      : tensor<3x3xi64>, i64, i64, tensor<2xi64>, i64, i64, i64, i64, i32, i32
}

// A loop that carries a dsa op's result itself (not an insert_slice's dest): @carry_ring writes the tokens of kv one
// at a time, token t at position start + t. On ring_update.mlir's prefill (W = 4, kv row t = [t, -t - 0.5], 6 tokens
// from 0, the ring all 9) it gives that test's one-call result: tokens 2..5 in slots 2, 3, 0, 1.
// CARRY: result 0: tensor<4x2xbf16> = [4, -4.5, 5, -5.5, 2, -2.5, 3, -3.5]
func.func @carry() -> tensor<4x2xbf16> {
  %ring = arith.constant dense<9.0> : tensor<4x2xbf16>
  %kv6 = arith.constant dense<[[0.0, -0.5], [1.0, -1.5], [2.0, -2.5], [3.0, -3.5], [4.0, -4.5], [5.0, -5.5]]>
      : tensor<6x2xbf16>
  %kv = tensor.cast %kv6 : tensor<6x2xbf16> to tensor<?x2xbf16>
  %start = arith.constant 0 : i64
  %r = func.call @carry_ring(%ring, %kv, %start) : (tensor<4x2xbf16>, tensor<?x2xbf16>, i64) -> tensor<4x2xbf16>
  return %r : tensor<4x2xbf16>
}

func.func @carry_ring(%ring: tensor<4x2xbf16>, %kv: tensor<?x2xbf16>, %start: i64) -> tensor<4x2xbf16> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %kv, %c0 : tensor<?x2xbf16>
  %r = scf.for %t = %c0 to %n step %c1 iter_args(%ri = %ring) -> (tensor<4x2xbf16>) {
    %k = tensor.extract_slice %kv[%t, 0] [1, 2] [1, 1] : tensor<?x2xbf16> to tensor<1x2xbf16>
    %ti = arith.index_cast %t : index to i64
    %pos = arith.addi %start, %ti : i64
    %r1 = dsa.ring_update %ri, %k, %pos : (tensor<4x2xbf16>, tensor<1x2xbf16>, i64) -> tensor<4x2xbf16>
    scf.yield %r1 : tensor<4x2xbf16>
  }
  return %r : tensor<4x2xbf16>
}

// The batched-decode pattern at the shapes of a window ring (W = 8, head_dim 32) over a dynamic batch B: kv
// [B, 1, 32] collapsed to [B, 32]; for each row b, the ring ring[b] (a rank-reducing slice [b, 0, 0] [1, 8, 32] to
// tensor<8x32xbf16>), kv row b, start[b] (tensor.extract of an i64), dsa.ring_update, and the updated ring inserted
// (rank-extending) into a pool from tensor.empty(B). The collapsed kv is expanded back to [B, 1, 32] as result 1.
func.func @batched_decode(%ring: tensor<?x8x32xbf16>, %kv: tensor<?x1x32xbf16>, %start: tensor<?xi64>)
    -> (tensor<?x8x32xbf16>, tensor<?x1x32xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %B = tensor.dim %ring, %c0 : tensor<?x8x32xbf16>
  %rows = tensor.collapse_shape %kv [[0, 1], [2]] : tensor<?x1x32xbf16> into tensor<?x32xbf16>
  %empty = tensor.empty(%B) : tensor<?x8x32xbf16>
  %pool = scf.for %b = %c0 to %B step %c1 iter_args(%p = %empty) -> (tensor<?x8x32xbf16>) {
    %r = tensor.extract_slice %ring[%b, 0, 0] [1, 8, 32] [1, 1, 1] : tensor<?x8x32xbf16> to tensor<8x32xbf16>
    %k = tensor.extract_slice %rows[%b, 0] [1, 32] [1, 1] : tensor<?x32xbf16> to tensor<1x32xbf16>
    %s = tensor.extract %start[%b] : tensor<?xi64>
    %r1 = dsa.ring_update %r, %k, %s : (tensor<8x32xbf16>, tensor<1x32xbf16>, i64) -> tensor<8x32xbf16>
    %p1 = tensor.insert_slice %r1 into %p[%b, 0, 0] [1, 8, 32] [1, 1, 1] : tensor<8x32xbf16> into tensor<?x8x32xbf16>
    scf.yield %p1 : tensor<?x8x32xbf16>
  }
  %back = tensor.expand_shape %rows [[0, 1], [2]] output_shape [%B, 1, 32] : tensor<?x32xbf16> into tensor<?x1x32xbf16>
  return %pool, %back : tensor<?x8x32xbf16>, tensor<?x1x32xbf16>
}

// @batched_decode on B = 2 rings of zeros, kv row 0 all 1, row 1 all 2, start = [5, 11] (slots 5 and 11 % 8 = 3):
// ring 0 slot 5 holds the ones, ring 1 slot 3 the twos, the other slots stay 0; the round trip of kv is kv.
// BATCH:      result 0: tensor<32xbf16> = {{\[(1, ){31}1\]}}
// BATCH-NEXT: result 1: tensor<32xbf16> = {{\[(2, ){31}2\]}}
// BATCH-NEXT: result 2: tensor<32xbf16> = {{\[(0, ){31}0\]}}
// BATCH-NEXT: result 3: tensor<32xbf16> = {{\[(0, ){31}0\]}}
// BATCH-NEXT: result 4: tensor<2x1x32xbf16> = {{\[(1, ){32}(2, ){31}2\]}}
func.func @batched() -> (tensor<32xbf16>, tensor<32xbf16>, tensor<32xbf16>, tensor<32xbf16>, tensor<2x1x32xbf16>) {
  %zeros = arith.constant dense<0.0> : tensor<2x8x32xbf16>
  %ring = tensor.cast %zeros : tensor<2x8x32xbf16> to tensor<?x8x32xbf16>
  %ones = arith.constant dense<1.0> : tensor<1x1x32xbf16>
  %twos = arith.constant dense<2.0> : tensor<1x1x32xbf16>
  %kv = tensor.concat dim(0) %ones, %twos : (tensor<1x1x32xbf16>, tensor<1x1x32xbf16>) -> tensor<?x1x32xbf16>
  %start2 = arith.constant dense<[5, 11]> : tensor<2xi64>
  %start = tensor.cast %start2 : tensor<2xi64> to tensor<?xi64>
  %pool, %back = func.call @batched_decode(%ring, %kv, %start)
      : (tensor<?x8x32xbf16>, tensor<?x1x32xbf16>, tensor<?xi64>) -> (tensor<?x8x32xbf16>, tensor<?x1x32xbf16>)
  %r0s5 = tensor.extract_slice %pool[0, 5, 0] [1, 1, 32] [1, 1, 1] : tensor<?x8x32xbf16> to tensor<32xbf16>
  %r1s3 = tensor.extract_slice %pool[1, 3, 0] [1, 1, 32] [1, 1, 1] : tensor<?x8x32xbf16> to tensor<32xbf16>
  %r0s3 = tensor.extract_slice %pool[0, 3, 0] [1, 1, 32] [1, 1, 1] : tensor<?x8x32xbf16> to tensor<32xbf16>
  %r1s5 = tensor.extract_slice %pool[1, 5, 0] [1, 1, 32] [1, 1, 1] : tensor<?x8x32xbf16> to tensor<32xbf16>
  %back2 = tensor.cast %back : tensor<?x1x32xbf16> to tensor<2x1x32xbf16>
  return %r0s5, %r1s3, %r0s3, %r1s5, %back2
      : tensor<32xbf16>, tensor<32xbf16>, tensor<32xbf16>, tensor<32xbf16>, tensor<2x1x32xbf16>
}

// A step that is not positive at run time (a constant one the verifier rejects already) is an error, not a hang.
// STEP0: scf_for.mlir:[[@LINE+5]]:8: error: dsa interpreter: 'scf.for' step (operand #2) must be positive, got 0
func.func @step_zero() -> i64 {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %step = arith.subi %c4, %c4 : index
  %r = scf.for %i = %c0 to %c4 step %step iter_args(%s = %c0) -> (index) {
    scf.yield %i : index
  }
  %v = arith.index_cast %r : index to i64
  return %v : i64
}

// STEPNEG: scf_for.mlir:[[@LINE+6]]:8: error: dsa interpreter: 'scf.for' step (operand #2) must be positive, got -2
func.func @step_negative() -> i64 {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %step = arith.subi %c0, %c2 : index
  %r = scf.for %i = %c4 to %c0 step %step iter_args(%s = %c0) -> (index) {
    scf.yield %i : index
  }
  %v = arith.index_cast %r : index to i64
  return %v : i64
}

// Reading x[3] of a 3-element tensor in the 4th trip: the error names the index and the iteration.
// OOB:      scf_for.mlir:[[@LINE+10]]:10: error: dsa interpreter: 'tensor.extract' index [3] is out of bounds of the source (operand #0) tensor<3xi64>: dimension 0: index 3 is not in [0, 3)
// OOB:      scf_for.mlir:[[@LINE+8]]:8: remark: dsa interpreter: in iteration 3 of this loop (induction variable 3)
func.func @extract_oob_in_loop() -> i64 {
  %x3 = arith.constant dense<[1, 2, 3]> : tensor<3xi64>
  %x = tensor.cast %x3 : tensor<3xi64> to tensor<?xi64>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0 : i64
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%s = %zero) -> (i64) {
    %v = tensor.extract %x[%i] : tensor<?xi64>
    %s1 = arith.addi %s, %v : i64
    scf.yield %s1 : i64
  }
  return %r : i64
}

// A negative index (outside a loop): the first bad dimension is named.
// OOB2: scf_for.mlir:[[@LINE+6]]:8: error: dsa interpreter: 'tensor.extract' index [1, -1] is out of bounds of the source (operand #0) tensor<2x2xf32>: dimension 1: index -1 is not in [0, 2)
func.func @extract_oob() -> f32 {
  %m = arith.constant dense<1.0> : tensor<2x2xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cm1 = arith.subi %c0, %c1 : index
  %f = tensor.extract %m[%c1, %cm1] : tensor<2x2xf32>
  return %f : f32
}

// INSERT: scf_for.mlir:[[@LINE+6]]:8: error: dsa interpreter: 'tensor.insert' index [2] is out of bounds of the dest (operand #1) tensor<2xi64>: dimension 0: index 2 is not in [0, 2)
func.func @insert_oob() -> tensor<2xi64> {
  %t = arith.constant dense<[7, 8]> : tensor<2xi64>
  %v = arith.constant 9 : i64
  %c1 = arith.constant 1 : index
  %c2 = arith.addi %c1, %c1 : index
  %r = tensor.insert %v into %t[%c2] : tensor<2xi64>
  return %r : tensor<2xi64>
}
