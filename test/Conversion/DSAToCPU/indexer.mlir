// The indexer's masks and top-k: compress_visibility, apply_candidates, select_candidate_blocks, indexer_topk.
// compress_len[t] = (start_pos + t + 1) floordiv r: (t + 1) floordiv r in prefill, (start_pos + 1) floordiv r in
// decode, token t's decode value in a chunk (s > 1 tokens at start_pos > 0). The top-k SET is never
// computed in IR: it is one call of the runtime's dsa_cpu_topk_set (declared private with llvm.emit_c_interface,
// memref descriptors by pointer) on an f32 buffer of the values, filling an i64 [rows, k] buffer (ascending per
// row) that comes back as a tensor (to_tensor restrict writable); a non-zero return is code 35.
// RUN: dsa-opt %s --dsa-to-cpu --canonicalize --cse | FileCheck %s

// CHECK: func.func private @dsa_cpu_fail(i32)
// CHECK: func.func private @dsa_cpu_topk_set(memref<?x?xf32>, i64, memref<?x?xi64>) -> i32 attributes {llvm.emit_c_interface}

// The step checks in the kernels' order (22 start_pos < 0, 23 s == 0), then start_pos + s overflowing int64 (70:
// start_pos > INT64_MAX - s, a valid step only), then the width check (25, only for a valid step whose end fits);
// the mask itself is elementwise (nothing to guard).
// CHECK-LABEL: func.func @vis
// CHECK-DAG: %[[NEGINF:.*]] = arith.constant 0xFF80 : bf16
// CHECK: func.call @dsa_cpu_fail(%c22_i32)
// CHECK: func.call @dsa_cpu_fail(%c23_i32)
// CHECK-NOT: func.call @dsa_cpu_fail(%c24_i32)
// CHECK: arith.subi %c9223372036854775807_i64, %{{.*}} : i64
// CHECK: func.call @dsa_cpu_fail(%c70_i32)
// CHECK: arith.floordivsi %{{.*}}, %c2_i64 : i64
// CHECK: func.call @dsa_cpu_fail(%c25_i32)
// CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<?x?xbf16>)
// CHECK: %[[POS:.*]] = arith.addi %arg1, %{{.*}} : i64
// CHECK: %[[T1:.*]] = arith.addi %[[POS]], %c1_i64 : i64
// CHECK: %[[LEN:.*]] = arith.floordivsi %[[T1]], %c2_i64 : i64
// CHECK: %[[VISIBLE:.*]] = arith.cmpi slt, %{{.*}}, %[[LEN]] : i64
// CHECK: arith.select %[[VISIBLE]], %{{.*}}, %[[NEGINF]] : bf16
func.func @vis(%s: tensor<?x?xbf16>, %sp: i64) -> tensor<?x?xbf16> {
  %y = dsa.compress_visibility %s, %sp {ratio = 2 : i64} : (tensor<?x?xbf16>, i64) -> tensor<?x?xbf16>
  return %y : tensor<?x?xbf16>
}

// apply_candidates: -inf where the mask is false, after the shape check (30).
// CHECK-LABEL: func.func @apply
// CHECK: func.call @dsa_cpu_fail(%c30_i32)
// CHECK: scf.if %{{.*}} -> (tensor<?x?xbf16>) {
// CHECK: ^bb0(%[[X:.*]]: bf16, %[[M:.*]]: i1, %{{.*}}: bf16):
// CHECK-NEXT: arith.select %[[M]], %[[X]], %{{.*}} : bf16
// CHECK: } else {
// CHECK-NEXT: scf.yield %arg0
func.func @apply(%s: tensor<?x?xbf16>, %m: tensor<?x?xi1>) -> tensor<?x?xbf16> {
  %y = dsa.apply_candidates %s, %m : (tensor<?x?xbf16>, tensor<?x?xi1>) -> tensor<?x?xbf16>
  return %y : tensor<?x?xbf16>
}

// select_candidate_blocks: n_blocks = ceil(width / bs), k = min(n_blocks, topk_blocks); the block maxima in f32
// (the first NaN wins, else m < v ? v : m from -inf), the block (compress_len - 1) floordiv bs pinned to +inf when
// compress_len > 0; the top-k set of the block scores; the mask true where the position's block was picked and its
// score is > -inf. A chunk (start_pos > 0 and s > 1) takes an scf.for over its rows instead: row t's first
// compress_len[t] columns (ratio 1 here: start_pos + t + 1) ranked as its decode step ranks them (n_blocks and k
// from that width, one top-k call per row), inserted into a false mask.
// CHECK-LABEL: func.func @cand
// CHECK-DAG: %[[INF:.*]] = arith.constant 0x7F800000 : f32
// CHECK-DAG: %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: func.call @dsa_cpu_fail(%c71_i32)
// CHECK: func.call @dsa_cpu_fail(%c29_i32)
// CHECK: %[[MANY:.*]] = arith.cmpi sgt, %{{.*}}, %c1 : index
// CHECK: %[[LATER:.*]] = arith.cmpi sgt, %arg1, %c0_i64 : i64
// CHECK: %[[CHUNK:.*]] = arith.andi %[[LATER]], %[[MANY]] : i1
// CHECK: scf.if %{{.*}} -> (tensor<?x?xi1>) {
// CHECK: scf.if %[[CHUNK]] -> (tensor<?x?xi1>) {
// CHECK: %[[FALSE:.*]] = linalg.fill ins(%false : i1)
// CHECK: scf.for %[[T:.*]] = %c0 to %{{.*}} step %c1 iter_args(%[[MASK:.*]] = %[[FALSE]]) -> (tensor<?x?xi1>) {
// CHECK: %[[CPOS:.*]] = arith.addi %arg1, %{{.*}} : i64
// CHECK: %[[CLEN:.*]] = arith.addi %[[CPOS]], %c1_i64 : i64
// CHECK: %[[CN:.*]] = arith.index_cast %[[CLEN]] : i64 to index
// CHECK: %[[ROW:.*]] = tensor.extract_slice %arg0[%[[T]], 0] [1, %[[CN]]] [1, 1]
// CHECK: %[[CNB:.*]] = arith.ceildivui %[[CN]], %c2 : index
// CHECK: %[[CK:.*]] = arith.minsi %[[CNB]], %c3 : index
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x?xf32>)
// CHECK: tensor.extract %[[ROW]]
// CHECK: func.call @dsa_cpu_topk_set
// CHECK: %[[RMASK:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<1x?xi1>)
// CHECK: tensor.insert_slice %[[RMASK]] into %[[MASK]][%[[T]], 0] [1, %[[CN]]] [1, 1]
// CHECK: } else {
// CHECK: %[[NB:.*]] = arith.ceildivui %{{.*}}, %c2 : index
// CHECK: %[[K:.*]] = arith.minsi %[[NB]], %c3 : index
// CHECK: %[[BS:.*]] = linalg.generic
// CHECK: scf.for {{.*}} iter_args(%[[MAX:.*]] = %[[NINF]], %[[FOUND:.*]] = %false) -> (f32, i1) {
// CHECK: %[[V:.*]] = arith.extf
// CHECK: %[[NAN:.*]] = arith.cmpf uno, %[[V]], %[[V]] : f32
// CHECK: %[[LT:.*]] = arith.cmpf olt, %[[MAX]], %[[V]] : f32
// CHECK: %[[LARGER:.*]] = arith.select %[[LT]], %[[V]], %[[MAX]] : f32
// CHECK: %[[NEXT:.*]] = arith.select %[[NAN]], %[[V]], %[[LARGER]] : f32
// CHECK: arith.select %[[FOUND]], %[[MAX]], %[[NEXT]] : f32
// (len - 1) floordiv bs with len = start_pos + t + 1 at ratio 1 folds to (start_pos + t) floordiv bs.
// CHECK: %[[POS2:.*]] = arith.addi %arg1, %{{.*}} : i64
// CHECK: %[[LEN:.*]] = arith.addi %[[POS2]], %c1_i64 : i64
// CHECK: %[[PINNED:.*]] = arith.floordivsi %[[POS2]], %c2_i64 : i64
// CHECK: arith.cmpi eq, %{{.*}}, %[[PINNED]] : i64
// CHECK: arith.cmpi sgt, %[[LEN]], %c0_i64 : i64
// CHECK: arith.select %{{.*}}, %[[INF]], %{{.*}} : f32
// CHECK: %[[BUF:.*]] = bufferization.to_buffer %[[BS]] read_only : tensor<?x?xf32> to memref<?x?xf32>
// CHECK: %[[PICKS:.*]] = memref.alloc(%{{.*}}, %[[K]]) : memref<?x?xi64>
// CHECK: %[[RC:.*]] = func.call @dsa_cpu_topk_set(%[[BUF]], %{{.*}}, %[[PICKS]]) : (memref<?x?xf32>, i64, memref<?x?xi64>) -> i32
// CHECK: arith.cmpi ne, %[[RC]], %c0_i32 : i32
// CHECK: func.call @dsa_cpu_fail(%c35_i32)
// CHECK: %[[PT:.*]] = bufferization.to_tensor %[[PICKS]] restrict writable : memref<?x?xi64> to tensor<?x?xi64>
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<?x?xi1>) {
// CHECK: %[[B:.*]] = arith.divui %{{.*}}, %c2 : index
// CHECK: scf.for %{{.*}} = %c0 to %[[K]] step %c1 iter_args(%{{.*}} = %false) -> (i1) {
// CHECK: tensor.extract %[[PT]]
// CHECK: %[[BSV:.*]] = tensor.extract %[[BS]][%{{.*}}, %[[B]]]
// CHECK: arith.cmpf ogt, %[[BSV]], %[[NINF]] : f32
// CHECK: } else {
// CHECK: linalg.fill ins(%false : i1)
func.func @cand(%s: tensor<?x?xbf16>, %sp: i64) -> tensor<?x?xi1> {
  %m = dsa.select_candidate_blocks %s, %sp
      {ratio = 1 : i64, topk_blocks = 3 : i64, block_size = 2 : i64, tie_order = #dsa.tie_order<torch_cpu>}
      : (tensor<?x?xbf16>, i64) -> tensor<?x?xi1>
  return %m : tensor<?x?xi1>
}

// indexer_topk: k = min(width, index_topk); the top-k set of the f32 scores; p -> p + offset (s in prefill,
// window_size in decode) when p < compress_len[t], else -1, as i32. Codes 31-34 for the checks. A chunk ranks row
// t's first compress_len[t] columns with k = min(compress_len[t], index_topk) (one top-k call per row), offset
// window_size + s, into a row of -1.
// CHECK-LABEL: func.func @topk
// CHECK: func.call @dsa_cpu_fail(%c31_i32)
// CHECK: func.call @dsa_cpu_fail(%c72_i32)
// CHECK: func.call @dsa_cpu_fail(%c34_i32)
// CHECK: %[[K2:.*]] = arith.minsi %{{.*}}, %c6 : index
// CHECK: %[[TCHUNK:.*]] = arith.andi
// CHECK: scf.if %{{.*}} -> (tensor<?x?xi32>) {
// CHECK: scf.if %[[TCHUNK]] -> (tensor<?x?xi32>) {
// CHECK: %[[COFF:.*]] = arith.addi %{{.*}}, %c8_i64 : i64
// CHECK: %[[NONE:.*]] = linalg.fill ins(%c-1_i32 : i32)
// CHECK: scf.for %[[TT:.*]] = %c0 to %{{.*}} step %c1 iter_args(%[[IDX:.*]] = %[[NONE]]) -> (tensor<?x?xi32>) {
// CHECK: %[[TPOS:.*]] = arith.addi %arg1, %{{.*}} : i64
// CHECK: %[[TLEN:.*]] = arith.addi %[[TPOS]], %c1_i64 : i64
// CHECK: %[[TN:.*]] = arith.index_cast %[[TLEN]] : i64 to index
// CHECK: tensor.extract_slice %arg0[%[[TT]], 0] [1, %[[TN]]] [1, 1]
// CHECK: %[[TK:.*]] = arith.minsi %[[TN]], %c6 : index
// CHECK: func.call @dsa_cpu_topk_set
// CHECK: %[[TROW:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<1x?xi32>)
// CHECK: arith.addi %{{.*}}, %[[COFF]] : i64
// CHECK: tensor.insert_slice %[[TROW]] into %[[IDX]][%[[TT]], 0] [1, %[[TK]]] [1, 1]
// CHECK: } else {
// CHECK: %[[OFFSET:.*]] = arith.select %{{.*}}, %{{.*}}, %c8_i64 : i64
// CHECK: %[[F:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<?x?xbf16>) outs(%{{.*}} : tensor<?x?xf32>)
// CHECK: arith.extf
// CHECK: %[[BUF2:.*]] = bufferization.to_buffer %[[F]] read_only
// CHECK: %[[PICKS2:.*]] = memref.alloc(%{{.*}}, %[[K2]]) : memref<?x?xi64>
// CHECK: func.call @dsa_cpu_topk_set(%[[BUF2]], %{{.*}}, %[[PICKS2]])
// CHECK: %[[PT2:.*]] = bufferization.to_tensor %[[PICKS2]] restrict writable
// CHECK: linalg.generic {{.*}} ins(%[[PT2]] : tensor<?x?xi64>) outs(%{{.*}} : tensor<?x?xi32>)
// CHECK: ^bb0(%[[P:.*]]: i64, %{{.*}}: i32):
// CHECK: %[[MAPPED:.*]] = arith.addi %[[P]], %[[OFFSET]] : i64
// CHECK: %[[IN:.*]] = arith.cmpi slt, %[[P]], %{{.*}} : i64
// CHECK: %[[R:.*]] = arith.select %[[IN]], %[[MAPPED]], %c-1_i64 : i64
// CHECK: arith.trunci %[[R]] : i64 to i32
func.func @topk(%s: tensor<?x?xbf16>, %sp: i64) -> tensor<?x?xi32> {
  %i = dsa.indexer_topk %s, %sp
      {ratio = 1 : i64, index_topk = 6 : i64, window_size = 8 : i64, tie_order = #dsa.tie_order<torch_cpu>}
      : (tensor<?x?xbf16>, i64) -> tensor<?x?xi32>
  return %i : tensor<?x?xi32>
}
