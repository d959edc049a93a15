// dsa.indexer_scores -> the kernel's arithmetic, vectorised ACROSS POSITIONS (lane l = position p0 + l, each lane
// in the kernel's scalar order): w' = bf16(weights * weight_scale) per (t, h); keys transposed once into kT [chunks,
// ihd, 32] bf16 (blocks of 32 positions, each load widened, contiguous per chunk; zeros past width) and iq widened to f32; then an scf.forall over (t, chunk of
// 32 positions), blocks of (2 heads here) x 4 vectors of positions: per d (sequential, from 0.0, not the 8-lane
// dotF32) acc += broadcast(q[t, h, d]) * kT[c, d, l0:l0+8]; per head in ascending order, bf16(dot), relu as
// arith.maxnumf(., 0) (fmax: a NaN dot gives 0), bf16(relu * w'), added to the head sum (from 0.0); the sums
// written to [s, wp] f32, then the bf16 of the sum for p < width. Width = (start_pos + s) floordiv ratio; checks
// start_pos >= 0 (19), weights rows (20), start_pos + s fits int64 (69: start_pos > INT64_MAX - s is an error, the
// width 0), keys rows >= width (21); zeros when one fails.
// RUN: dsa-opt %s --dsa-to-cpu --canonicalize --cse | FileCheck %s

// CHECK-LABEL: func.func @scores
// CHECK-DAG: %[[SCALE:.*]] = arith.constant 1.250000e-01 : f32
// CHECK-DAG: %[[ZERO8:.*]] = arith.constant dense<0.000000e+00> : vector<8xf32>
// CHECK: func.call @dsa_cpu_fail(%c19_i32)
// CHECK: func.call @dsa_cpu_fail(%c20_i32)
// CHECK: arith.subi %c9223372036854775807_i64, %{{.*}} : i64
// CHECK: func.call @dsa_cpu_fail(%c69_i32)
// CHECK: %[[W:.*]] = arith.floordivsi %{{.*}}, %c2_i64 : i64
// CHECK: func.call @dsa_cpu_fail(%c21_i32)
// CHECK: scf.if %{{.*}} -> (tensor<?x?xbf16>) {
// CHECK: %[[WS:.*]] = linalg.generic {{.*}} ins(%arg1 : tensor<?x2xbf16>)
// CHECK: arith.mulf %{{.*}}, %[[SCALE]] : f32
// CHECK-NEXT: arith.truncf
// kT[c, d, l] = keys[32c + l, d] (32c + l < width), 0 past width.
// CHECK: %[[KT:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<?x32x32xbf16>)
// CHECK-DAG: %[[KD:.*]] = linalg.index 1 : index
// CHECK-DAG: %[[KL:.*]] = linalg.index 2 : index
// CHECK-DAG: %[[KC:.*]] = linalg.index 0 : index
// CHECK: %[[KC32:.*]] = arith.muli %[[KC]], %c32 : index
// CHECK: %[[KP:.*]] = arith.addi %[[KC32]], %[[KL]] : index
// CHECK: tensor.extract %arg2[%{{.*}}, %[[KD]]] : tensor<?x32xbf16>
// CHECK: %[[QF:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<?x2x32xbf16>) outs(%{{.*}} : tensor<?x2x32xf32>)
// CHECK: %[[SUMS:.*]] = scf.forall (%[[T:.*]], %[[C:.*]]) in (%{{.*}}, %{{.*}}) shared_outs(%{{.*}}) -> (tensor<?x?xf32>) {
// CHECK: scf.for %[[V0:.*]] = %c0 to %{{.*}} step %c32 iter_args
// CHECK: %[[DOTS:.*]]:8 = scf.for %[[D:.*]] = %c0 to %c32 step %c1 iter_args(%[[A0:[a-z0-9_]+]] = %[[ZERO8]], {{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// CHECK: %[[K0B:.*]] = vector.transfer_read %[[KT]][%[[C]], %[[D]], %{{.*}}], %{{.*}} {in_bounds = [true]} : tensor<?x32x32xbf16>, vector<8xbf16>
// CHECK-NEXT: %[[K0:.*]] = arith.extf %[[K0B]] : vector<8xbf16> to vector<8xf32>
// CHECK: %[[Q0:.*]] = tensor.extract %[[QF]][%[[T]], %c0, %[[D]]] : tensor<?x2x32xf32>
// CHECK: %[[QV:.*]] = vector.broadcast %[[Q0]] : f32 to vector<8xf32>
// CHECK: %[[PROD:.*]] = arith.mulf %[[QV]], %[[K0]] : vector<8xf32>
// CHECK: arith.addf %[[A0]], %[[PROD]] : vector<8xf32>
// Head 0, first vector of positions: bf16(dot), relu, bf16(relu * w'), head sum from 0.
// CHECK: %[[WTH:.*]] = tensor.extract %[[WS]][%[[T]], %c0] : tensor<?x2xf32>
// CHECK: %[[WV:.*]] = vector.broadcast %[[WTH]] : f32 to vector<8xf32>
// CHECK: %[[DB:.*]] = arith.truncf %[[DOTS]]#0 : vector<8xf32> to vector<8xbf16>
// CHECK: %[[DF:.*]] = arith.extf %[[DB]] : vector<8xbf16> to vector<8xf32>
// CHECK: %[[RELU:.*]] = arith.maxnumf %[[DF]], %[[ZERO8]] : vector<8xf32>
// CHECK: %[[TERM:.*]] = arith.mulf %[[RELU]], %[[WV]] : vector<8xf32>
// CHECK: %[[TB:.*]] = arith.truncf %[[TERM]] : vector<8xf32> to vector<8xbf16>
// CHECK: %[[TF:.*]] = arith.extf %[[TB]] : vector<8xbf16> to vector<8xf32>
// CHECK: arith.addf %[[TF]], %[[ZERO8]] : vector<8xf32>
// CHECK: vector.transfer_write
// CHECK: tensor.parallel_insert_slice
// CHECK: %[[SL:.*]] = tensor.extract_slice %[[SUMS]][0, 0] [%{{.*}}, %{{.*}}] [1, 1]
// CHECK: linalg.generic {{.*}} ins(%[[SL]] : tensor<?x?xf32>) outs(%{{.*}} : tensor<?x?xbf16>)
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: } else {
// CHECK: linalg.fill
func.func @scores(%iq: tensor<?x2x32xbf16>, %w: tensor<?x2xbf16>, %k: tensor<?x32xbf16>, %sp: i64) -> tensor<?x?xbf16> {
  %y = dsa.indexer_scores %iq, %w, %k, %sp {ratio = 2 : i64, weight_scale = 1.250000e-01 : f32}
      : (tensor<?x2x32xbf16>, tensor<?x2xbf16>, tensor<?x32xbf16>, i64) -> tensor<?x?xbf16>
  return %y : tensor<?x?xbf16>
}
