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
// kT[c, d, l] = keys[32c + l, d] (32c + l < width), 0 past width: an scf.forall over the chunks; per 8 positions
// (rows clamped to 0 past width, then replaced by zeros) and 8 of d, 8 rows read and transposed by three stages of
// vector.shuffle (transposeRows, the phase kernel's: pairs of rows, pairs of pairs, halves), each column written
// as 8 positions of kT.
// CHECK: %[[KT:.*]] = scf.forall (%[[KC:.*]]) in (%{{.*}}) shared_outs(%[[KTS:.*]] = %{{.*}}) -> (tensor<?x32x32xbf16>) {
// CHECK: %[[KBLK:.*]] = tensor.extract_slice %[[KTS]][%[[KC]], 0, 0] [1, 32, 32] [1, 1, 1] : tensor<?x32x32xbf16> to tensor<1x32x32xbf16>
// CHECK: scf.for %[[KL:.*]] = %c0 to %c32 step %c8 iter_args(%{{.*}} = %[[KBLK]]) -> (tensor<1x32x32xbf16>) {
// CHECK: %[[KC32:.*]] = arith.muli %[[KC]], %c32 : index
// CHECK: %[[KP:.*]] = arith.addi %[[KC32]], %[[KL]] : index
// CHECK: %[[KIN:.*]] = arith.cmpi slt, %[[KP]], %[[WIDTH:.*]] : index
// CHECK: %[[KROW:.*]] = arith.select %[[KIN]], %[[KP]], %c0 : index
// CHECK: scf.for %[[KD:.*]] = %c0 to %c32 step %c8 iter_args(%[[KACC:.*]] = %{{.*}}) -> (tensor<1x32x32xbf16>) {
// CHECK: %[[R0:.*]] = vector.transfer_read %arg2[%[[KROW]], %[[KD]]], %{{.*}} {in_bounds = [true]} : tensor<?x32xbf16>, vector<8xbf16>
// CHECK: %[[Z0:.*]] = arith.select %[[KIN]], %[[R0]], %{{.*}} : vector<8xbf16>
// CHECK: %[[Z1:.*]] = arith.select
// CHECK-COUNT-6: vector.transfer_read
// CHECK: %[[E0:.*]] = vector.shuffle %[[Z0]], %[[Z1]] [0, 8, 1, 9, 4, 12, 5, 13] : vector<8xbf16>, vector<8xbf16>
// CHECK: vector.shuffle %[[Z0]], %[[Z1]] [2, 10, 3, 11, 6, 14, 7, 15]
// CHECK: %[[E2:.*]] = vector.shuffle %{{.*}}, %{{.*}} [0, 8, 1, 9, 4, 12, 5, 13]
// CHECK: %[[P0:.*]] = vector.shuffle %[[E0]], %[[E2]] [0, 1, 8, 9, 4, 5, 12, 13]
// CHECK: %[[P1:.*]] = vector.shuffle %[[E0]], %[[E2]] [2, 3, 10, 11, 6, 7, 14, 15]
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 1, 8, 9, 4, 5, 12, 13]
// CHECK: %[[P4:.*]] = vector.shuffle %{{.*}}, %{{.*}} [0, 1, 8, 9, 4, 5, 12, 13]
// CHECK: %[[P5:.*]] = vector.shuffle %{{.*}}, %{{.*}} [2, 3, 10, 11, 6, 7, 14, 15]
// CHECK: %[[COL0:.*]] = vector.shuffle %[[P0]], %[[P4]] [0, 1, 2, 3, 8, 9, 10, 11] : vector<8xbf16>, vector<8xbf16>
// CHECK: %[[COL1:.*]] = vector.shuffle %[[P1]], %[[P5]] [0, 1, 2, 3, 8, 9, 10, 11]
// CHECK: vector.transfer_write %[[COL0]], %[[KACC]][%c0, %[[KD]], %[[KL]]] {in_bounds = [true]} : vector<8xbf16>, tensor<1x32x32xbf16>
// CHECK-NEXT: %[[D1:.*]] = arith.addi %[[KD]], %c1 : index
// CHECK-NEXT: vector.transfer_write %[[COL1]], %{{.*}}[%c0, %[[D1]], %[[KL]]]
// CHECK-COUNT-6: vector.transfer_write
// CHECK: tensor.parallel_insert_slice %{{.*}} into %[[KTS]][%[[KC]], 0, 0] [1, 32, 32] [1, 1, 1]
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

// entry_keys (the index_k quirk per token; ratio 4): checked to hold width rows (74) when a row reads it (start_pos >
// 0 and s > 1 or (start_pos + 1) % 4 != 0: a prefill enters with an empty slot); a one-token step transposes one of
// its keys (an scf.if of two transposes: entry when start_pos > 0 and (start_pos + 1) % 4 != 0), so a decode step
// costs what it did without entry_keys, and no arith.select of the two key tensors joins their buffers for
// bufferization (test/Conversion/DSAToCPU/batched-in-place-caches.mlir); a chunk (start_pos > 0, s > 1) also transposes entry_keys (scf.if) and each row t
// of the forall reads the entry transpose when (start_pos + t + 1) % 4 != 0.
// CHECK-LABEL: func.func @entry
// CHECK-SAME: %[[K:[a-z0-9]+]]: tensor<?x32xbf16>, %[[SP:[a-z0-9]+]]: i64, %[[E:[a-z0-9]+]]: tensor<16x32xbf16>)
// CHECK: func.call @dsa_cpu_fail(%c21_i32)
// CHECK: %[[SHORT:.*]] = arith.cmpi sgt, %{{.*}}, %c16_i64 : i64
// CHECK: %[[NEXT:.*]] = arith.addi %[[SP]], %c1_i64 : i64
// CHECK: %[[REM:.*]] = arith.remsi %[[NEXT]], %c4_i64 : i64
// CHECK: %[[OPEN:.*]] = arith.cmpi ne, %[[REM]], %c0_i64 : i64
// CHECK: %[[MANY:.*]] = arith.cmpi sgt, %[[S:.*]], %c1_i64 : i64
// CHECK: %[[ANY:.*]] = arith.ori %[[MANY]], %[[OPEN]] : i1
// CHECK: %[[POSITIVE:.*]] = arith.cmpi sgt, %[[SP]], %c0_i64 : i64
// CHECK: %[[READS:.*]] = arith.andi %[[POSITIVE]], %[[ANY]] : i1
// CHECK: arith.andi %[[SHORT]], %[[READS]] : i1
// CHECK: func.call @dsa_cpu_fail(%c74_i32)
// CHECK: %[[ONE:.*]] = arith.cmpi eq, %[[S]], %c1_i64 : i64
// CHECK: %[[CHUNK:.*]] = arith.andi %[[POSITIVE]], %[[MANY]] : i1
// CHECK: %[[DEC:.*]] = arith.andi %[[POSITIVE]], %[[ONE]] : i1
// CHECK: %[[DECENTRY:.*]] = arith.andi %[[DEC]], %[[OPEN]] : i1
// CHECK: %[[KT:.*]] = scf.if %[[DECENTRY]] -> (tensor<?x32x32xbf16>) {
// CHECK: scf.forall {{.*}} -> (tensor<?x32x32xbf16>)
// CHECK: vector.transfer_read %[[E]]
// CHECK: } else {
// CHECK: scf.forall {{.*}} -> (tensor<?x32x32xbf16>)
// CHECK: vector.transfer_read %[[K]]
// CHECK: }
// CHECK: %[[KTE:.*]] = scf.if %[[CHUNK]] -> (tensor<?x32x32xbf16>) {
// CHECK: scf.forall {{.*}} -> (tensor<?x32x32xbf16>)
// CHECK: vector.transfer_read %[[E]]
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[KT]] : tensor<?x32x32xbf16>
// CHECK: scf.forall (%[[T:[a-z0-9]+]], %{{.*}}) in
// CHECK: %[[TI:.*]] = arith.index_cast %[[T]] : index to i64
// CHECK: %[[PT:.*]] = arith.addi %[[SP]], %[[TI]] : i64
// CHECK: %[[PT1:.*]] = arith.addi %[[PT]], %c1_i64 : i64
// CHECK: %[[RT:.*]] = arith.remsi %[[PT1]], %c4_i64 : i64
// CHECK: %[[OT:.*]] = arith.cmpi ne, %[[RT]], %c0_i64 : i64
// CHECK: %[[ROWENTRY:.*]] = arith.andi %[[CHUNK]], %[[OT]] : i1
// CHECK: %[[ROWKT:.*]] = arith.select %[[ROWENTRY]], %[[KTE]], %[[KT]] : tensor<?x32x32xbf16>
// CHECK: vector.transfer_read %[[ROWKT]]
func.func @entry(%iq: tensor<?x2x32xbf16>, %w: tensor<?x2xbf16>, %k: tensor<?x32xbf16>, %sp: i64,
                 %e: tensor<16x32xbf16>) -> tensor<?x?xbf16> {
  %y = dsa.indexer_scores %iq, %w, %k, %sp entry_keys %e {ratio = 4 : i64, weight_scale = 1.250000e-01 : f32}
      : (tensor<?x2x32xbf16>, tensor<?x2xbf16>, tensor<?x32xbf16>, i64, tensor<16x32xbf16>) -> tensor<?x?xbf16>
  return %y : tensor<?x?xbf16>
}

// At ratio 1 every token closes a group: entry_keys is never read (no check, no remainder), one transpose of keys.
// CHECK-LABEL: func.func @entry_ratio1
// CHECK-NOT: dsa_cpu_fail(%c74_i32)
// CHECK-NOT: arith.remsi
// CHECK-NOT: tensor.extract %arg4
// CHECK: return
func.func @entry_ratio1(%iq: tensor<?x2x32xbf16>, %w: tensor<?x2xbf16>, %k: tensor<?x32xbf16>, %sp: i64,
                        %e: tensor<16x32xbf16>) -> tensor<?x?xbf16> {
  %y = dsa.indexer_scores %iq, %w, %k, %sp entry_keys %e {ratio = 1 : i64, weight_scale = 1.250000e-01 : f32}
      : (tensor<?x2x32xbf16>, tensor<?x2xbf16>, tensor<?x32xbf16>, i64, tensor<16x32xbf16>) -> tensor<?x?xbf16>
  return %y : tensor<?x?xbf16>
}

// A head dim that is not a multiple of 8 (20): kT is the element-wise generic (one extract and select per element).
// CHECK-LABEL: func.func @scores_ihd20
// CHECK-NOT: vector.shuffle
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<?x20x32xbf16>)
// CHECK: tensor.extract %arg2[%{{.*}}, %{{.*}}] : tensor<?x20xbf16>
// CHECK-NOT: vector.shuffle
// CHECK: return
func.func @scores_ihd20(%iq: tensor<?x3x20xbf16>, %w: tensor<?x3xbf16>, %k: tensor<?x20xbf16>, %sp: i64) -> tensor<?x?xbf16> {
  %y = dsa.indexer_scores %iq, %w, %k, %sp {ratio = 2 : i64, weight_scale = 1.250000e-01 : f32}
      : (tensor<?x3x20xbf16>, tensor<?x3xbf16>, tensor<?x20xbf16>, i64) -> tensor<?x?xbf16>
  return %y : tensor<?x?xbf16>
}
