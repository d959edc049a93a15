// dsa.sparse_attn (section 10) in the kernel's order: z = dotF32(q, kv[idx]) * scale (-inf for -1, indices
// clamped into [0, n) for the read), m = sink then (m < z ? z : m) over j, den = exp(sink - m) + sum exp(z - m)
// over valid j, p = exp(z - m) / den, o = bf16(sum over valid j of p * kv[idx, d]). Run-time checks: codes 10
// (indices rows != s), 12 (NaN sink), 11 (index outside [-1, n)); n == 0 or a failed row check gives zeros.
// RUN: dsa-opt %s --dsa-to-cpu --canonicalize --cse | FileCheck %s
// RUN: dsa-opt %s --dsa-to-cpu=vector-registers=16 --canonicalize --cse | FileCheck %s --check-prefix=V16

// CHECK-LABEL: func.func @attn
// CHECK-SAME: (%[[Q:[a-z0-9_]+]]: tensor<?x4x32xbf16>, %[[KV:[a-z0-9_]+]]: tensor<?x32xbf16>, %[[IDX:[a-z0-9_]+]]: tensor<?x?xi32>, %[[SINK:[a-z0-9_]+]]: tensor<4xf32>)
// CHECK-DAG: %[[NEGINF:[a-z0-9_]+]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[SCALE:[a-z0-9_]+]] = arith.constant 0.176776692 : f32
// CHECK: func.call @dsa_cpu_fail(%c10_i32)
// CHECK: linalg.generic {{.*}} ins(%[[SINK]] : tensor<4xf32>)
// CHECK: arith.cmpf uno
// CHECK: func.call @dsa_cpu_fail(%c12_i32)
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "reduction"]} ins(%[[IDX]]
// CHECK: func.call @dsa_cpu_fail(%c11_i32)
// CHECK: %[[OUT:[a-z0-9_]+]] = scf.if %{{.*}} -> (tensor<?x4x32xbf16>) {
// kv widened to f32 once (both q.k and p.v read the widened rows) when the step reads at least as many rows
// (s * k) as kv has; else (a decode step over a long cache) the s * k rows the indices name are gathered (bf16)
// and the same code reads them by gathered row number, each load widened.
// CHECK: %[[READS:[a-z0-9_]+]] = arith.muli %{{.*}}, %{{.*}} : index
// CHECK: %[[WIDEN:[a-z0-9_]+]] = arith.cmpi sge, %[[READS]], %{{.*}} : index
// CHECK: scf.if %[[WIDEN]] -> (tensor<?x4x32xbf16>) {
// CHECK: %[[KVF:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[KV]] : tensor<?x32xbf16>) outs(%{{.*}} : tensor<?x32xf32>)
// z[t, h, j]: the dot of q[t, h] with the kv row gathered by index (clamped), times scale; -inf for -1. First one
// pass over q (collapsed to [s * H, hd]) and one over the widened kv give their magnitudes (and kv's low bits):
// where every product is exact in f32 (max|q| max|kv| finite, min|q| min|kv| >= 2^-126 over nonzero elements,
// kv's f32 values bf16), the dots are fused multiply-adds (vector.fma: the same bits), else mulf then addf. Each
// is an scf.forall over (t, block of 4 heads) whose block of q rows is widened to f32 [4, hd] once; blocks of 4
// heads x 4 indices share each loaded row (one vector<8xf32> accumulator per (head, index): dotF32's order),
// leftover indices 4 x 1.
// CHECK: %[[QROWS:[a-z0-9_]+]] = tensor.collapse_shape %[[Q]] {{\[\[}}0, 1], [2]] : tensor<?x4x32xbf16> into tensor<?x32xbf16>
// CHECK: vector.reduction <maxsi>
// CHECK: vector.reduction <minsi>
// CHECK: vector.reduction <or>
// CHECK: %[[KVBF16:[a-z0-9_]+]] = arith.cmpi eq, %{{.*}}, %c0_i32 : i32
// CHECK: %[[MAXP:[a-z0-9_]+]] = arith.mulf
// CHECK: %[[NOOVER:[a-z0-9_]+]] = arith.cmpf olt, %[[MAXP]], %{{.*}} : f32
// CHECK: %[[MINP:[a-z0-9_]+]] = arith.mulf
// CHECK: %[[NOUNDER:[a-z0-9_]+]] = arith.cmpf oge, %[[MINP]], %{{.*}} : f32
// CHECK: %[[BOTH:[a-z0-9_]+]] = arith.andi %[[NOOVER]], %[[NOUNDER]] : i1
// CHECK: %[[EXACT:[a-z0-9_]+]] = arith.andi %[[KVBF16]], %[[BOTH]] : i1
// CHECK: %[[Z:[a-z0-9_]+]] = scf.if %[[EXACT]] -> (tensor<?x4x?xf32>) {
// CHECK: scf.forall (%[[T:[a-z0-9_]+]]) in (%{{.*}}) shared_outs(%[[ZS0:[a-z0-9_]+]] = %{{.*}}) -> (tensor<?x4x?xf32>) {
// CHECK: %[[ZSL:[a-z0-9_]+]] = tensor.extract_slice %[[ZS0]][%[[T]], 0, 0] [1, 4, %{{.*}}] [1, 1, 1]
// CHECK: %[[QF0:[a-z0-9_]+]] = tensor.empty() : tensor<4x32xf32>
// CHECK: scf.for %[[QD:[a-z0-9_]+]] = %c0 to %c32 step %c8 iter_args(%[[QACC:[a-z0-9_]+]] = %[[QF0]]) -> (tensor<4x32xf32>) {
// CHECK-NEXT: %[[QB:[a-z0-9_]+]] = vector.transfer_read %[[Q]][%[[T]], %c0, %[[QD]]], %{{.*}} {in_bounds = [true]} : tensor<?x4x32xbf16>, vector<8xbf16>
// CHECK-NEXT: %[[QW:[a-z0-9_]+]] = arith.extf %[[QB]] : vector<8xbf16> to vector<8xf32>
// CHECK-NEXT: vector.transfer_write %[[QW]], %[[QACC]][%c0, %[[QD]]]
// CHECK: vector.transfer_read %[[Q]][%[[T]], %c2, %{{.*}}]
// CHECK: %[[QF:[a-z0-9_]+]] = scf.for {{.*}} -> (tensor<4x32xf32>) {
// CHECK-NEXT: vector.transfer_read %[[Q]][%[[T]], %c3, %{{.*}}]
// CHECK: scf.for %[[J:[a-z0-9_]+]] = %c0 to %{{.*}} step %c4 iter_args(%{{.*}} = %[[ZSL]]) -> (tensor<1x4x?xf32>) {
// CHECK: %[[I:[a-z0-9_]+]] = tensor.extract %[[IDX]][%[[T]], %[[J]]] : tensor<?x?xi32>
// CHECK: %[[VALID:[a-z0-9_]+]] = arith.cmpi sge, %[[I]], %c0_i32 : i32
// CHECK: %[[LO:[a-z0-9_]+]] = arith.minsi %[[I]], %{{.*}} : i32
// CHECK: %[[CL:[a-z0-9_]+]] = arith.maxsi %[[LO]], %c0_i32 : i32
// CHECK: %[[ROW:[a-z0-9_]+]] = arith.index_cast %[[CL]] : i32 to index
// CHECK: scf.for %[[K:[a-z0-9_]+]] = %c0 to %c32 step %c8 iter_args(%[[ACC0:[a-z0-9_]+]] = {{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// CHECK-NEXT: %[[QV:[a-z0-9_]+]] = vector.transfer_read %[[QF]][%c0, %[[K]]], %{{.*}} {in_bounds = [true]} : tensor<4x32xf32>, vector<8xf32>
// CHECK: %[[KVV:[a-z0-9_]+]] = vector.transfer_read %[[KVF]][%[[ROW]], %[[K]]]
// CHECK: vector.fma %[[QV]], %[[KVV]], %[[ACC0]] : vector<8xf32>
// CHECK: %[[ZV:[a-z0-9_]+]] = arith.mulf %{{.*}}, %[[SCALE]] : f32
// CHECK: %[[ZSEL:[a-z0-9_]+]] = arith.select %[[VALID]], %[[ZV]], %[[NEGINF]] : f32
// CHECK: tensor.insert %[[ZSEL]] into %{{.*}}[%c0, %c0, %[[J]]] : tensor<1x4x?xf32>
// CHECK: scf.forall.in_parallel {
// CHECK: tensor.parallel_insert_slice
// CHECK: } else {
// CHECK: scf.forall
// CHECK-NOT: vector.fma
// CHECK: %[[UQV:[a-z0-9_]+]] = vector.transfer_read %{{.*}}[%c0, %[[UK:[a-z0-9_]+]]], %{{.*}} {in_bounds = [true]} : tensor<4x32xf32>, vector<8xf32>
// CHECK: %[[UKV:[a-z0-9_]+]] = vector.transfer_read %[[KVF]][%{{.*}}, %[[UK]]]
// CHECK-NOT: vector.fma
// CHECK: %[[UP:[a-z0-9_]+]] = arith.mulf %[[UQV]], %[[UKV]] : vector<8xf32>
// CHECK-NEXT: arith.addf %{{.*}}, %[[UP]] : vector<8xf32>
// CHECK: scf.forall.in_parallel {
// CHECK: tensor.parallel_insert_slice
// m: the sink broadcast, then (m < z) ? z : m over j.
// CHECK: %[[SINKB:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[SINK]] : tensor<4xf32>)
// CHECK: %[[M:[a-z0-9_]+]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[Z]] : tensor<?x4x?xf32>) outs(%[[SINKB]] : tensor<?x4xf32>)
// CHECK-NEXT: ^bb0(%[[ZE:[a-z0-9_]+]]: f32, %[[MV:[a-z0-9_]+]]: f32):
// CHECK-NEXT: %[[LT:[a-z0-9_]+]] = arith.cmpf olt, %[[MV]], %[[ZE]] : f32
// CHECK-NEXT: arith.select %[[LT]], %[[ZE]], %[[MV]] : f32
// den: exp(sink - m), then + exp(z - m) for valid j; exp(z - m) computed once for den and p.
// CHECK: %[[DEN0:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[SINK]], %[[M]] :
// CHECK: math.exp
// CHECK: %[[EZ:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[Z]], %[[M]] :
// CHECK: %[[ZM:[a-z0-9_]+]] = arith.subf
// CHECK-NEXT: math.exp %[[ZM]] : f32
// CHECK: %[[DEN:[a-z0-9_]+]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[EZ]], %[[IDX]] : {{.*}} outs(%[[DEN0]] :
// CHECK: ^bb0(%[[EV:[a-z0-9_]+]]: f32, %[[IV:[a-z0-9_]+]]: i32, %[[DV:[a-z0-9_]+]]: f32):
// CHECK: %[[DVALID:[a-z0-9_]+]] = arith.cmpi sge, %[[IV]], %c0_i32 : i32
// CHECK: %[[DSUM:[a-z0-9_]+]] = arith.addf %[[DV]], %[[EV]] : f32
// CHECK: arith.select %[[DVALID]], %[[DSUM]], %[[DV]] : f32
// CHECK: %[[P:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[EZ]], %[[DEN]] :
// CHECK-NEXT: ^bb0(%[[PE:[a-z0-9_]+]]: f32, %[[PD:[a-z0-9_]+]]: f32, %{{.*}}: f32):
// CHECK-NEXT: arith.divf %[[PE]], %[[PD]] : f32
// o: an scf.forall over (t, block of 4 heads) (H = 4: one block, so the forall is over t); one scf.for over j
// carrying 4 heads x hd / 16 = 2 vector<16xf32> sums (32 vector registers, the default: 4 x 4 of 16 at most), each
// acc + broadcast(p) * kv[row, c:c+16] when the index is valid, else acc, the kv vectors loaded once per j for the 4
// heads; rounded to bf16 a vector at a time and written by transfer_write (no f32 o, no scalar rounding pass).
// CHECK: %[[O:[a-z0-9_]+]] = scf.forall (%[[OT:[a-z0-9_]+]]) in (%{{.*}}) shared_outs(%[[OS:[a-z0-9_]+]] = %{{.*}}) -> (tensor<?x4x32xbf16>) {
// CHECK: %[[OROW:[a-z0-9_]+]] = tensor.extract_slice %[[OS]][%[[OT]], 0, 0] [1, 4, 32] [1, 1, 1]
// CHECK: %[[SUMS:[a-z0-9_]+]]:8 = scf.for %[[OJ:[a-z0-9_]+]] = %c0 to %{{.*}} step %c1 iter_args(%[[S0:[a-z0-9_]+]] = %{{.*}}, %[[S1:[a-z0-9_]+]] = %{{.*}}, %[[S2:[a-z0-9_]+]] = %{{.*}}, {{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
// CHECK: %[[OI:[a-z0-9_]+]] = tensor.extract %[[IDX]][%[[OT]], %[[OJ]]] : tensor<?x?xi32>
// CHECK: %[[OVALID:[a-z0-9_]+]] = arith.cmpi sge, %[[OI]], %c0_i32 : i32
// CHECK: %[[KF:[a-z0-9_]+]] = vector.transfer_read %[[KVF]][%{{.*}}, %c0], %{{.*}} {in_bounds = [true]} : tensor<?x32xf32>, vector<16xf32>
// CHECK: %[[KF1:[a-z0-9_]+]] = vector.transfer_read %[[KVF]][%{{.*}}, %c16], %{{.*}} {in_bounds = [true]} : tensor<?x32xf32>, vector<16xf32>
// CHECK: %[[PJ:[a-z0-9_]+]] = tensor.extract %[[P]][%[[OT]], %c0, %[[OJ]]] : tensor<?x4x?xf32>
// CHECK: %[[PV:[a-z0-9_]+]] = vector.broadcast %[[PJ]] : f32 to vector<16xf32>
// CHECK: %[[PK:[a-z0-9_]+]] = arith.mulf %[[PV]], %[[KF]] : vector<16xf32>
// CHECK: %[[ACC:[a-z0-9_]+]] = arith.addf %[[S0]], %[[PK]] : vector<16xf32>
// CHECK: arith.select %[[OVALID]], %[[ACC]], %[[S0]] : vector<16xf32>
// Head 1 reads the same kv vectors.
// CHECK: %[[PJ1:[a-z0-9_]+]] = tensor.extract %[[P]][%[[OT]], %c1, %[[OJ]]] : tensor<?x4x?xf32>
// CHECK: %[[PV1:[a-z0-9_]+]] = vector.broadcast %[[PJ1]] : f32 to vector<16xf32>
// CHECK: arith.mulf %[[PV1]], %[[KF]] : vector<16xf32>
// CHECK: arith.addf %[[S2]], %{{.*}} : vector<16xf32>
// CHECK: scf.yield
// CHECK: %[[R0:[a-z0-9_]+]] = arith.truncf %[[SUMS]]#0 : vector<16xf32> to vector<16xbf16>
// CHECK: vector.transfer_write %[[R0]], %[[OROW]][%c0, %c0, %c0] {in_bounds = [true]} : vector<16xbf16>, tensor<1x4x32xbf16>
// CHECK: tensor.parallel_insert_slice %{{.*}} into %[[OS]][%[[OT]], 0, 0] [1, 4, 32] [1, 1, 1]
// With 16 registers: 4 heads x 2 vector<8xf32> per chunk of 16 columns (two chunks, two loops over j).
// V16-LABEL: func.func @attn
// V16: scf.for %{{.*}} = %c0 to %{{.*}} step %c1 iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// V16: vector.transfer_read %{{.*}}[%{{.*}}, %c0], %{{.*}} {in_bounds = [true]} : tensor<?x32xf32>, vector<8xf32>
// V16: vector.transfer_read %{{.*}}[%{{.*}}, %c8], %{{.*}} {in_bounds = [true]} : tensor<?x32xf32>, vector<8xf32>
// V16: arith.truncf %{{.*}} : vector<8xf32> to vector<8xbf16>
// V16: scf.for %{{.*}} = %c0 to %{{.*}} step %c1 iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// V16: vector.transfer_read %{{.*}}[%{{.*}}, %c16], %{{.*}} {in_bounds = [true]} : tensor<?x32xf32>, vector<8xf32>
// V16: vector.transfer_read %{{.*}}[%{{.*}}, %c24], %{{.*}} {in_bounds = [true]} : tensor<?x32xf32>, vector<8xf32>
// The gathered branch: kvG[t * k + j] = kv[clamp(idx[t, j])] (bf16), idxG[t, j] = t * k + j (-1 where idx < 0);
// no f32 copy of kv; q.k and p.v load kvG's bf16 rows and widen them (arith.extf). kvG is an scf.forall over its
// rows: the index (one division), the clamp once per row, then the row copied 8 columns at a time.
// CHECK: } else {
// CHECK-NOT: ins(%[[KV]] : tensor<?x32xbf16>)
// CHECK: %[[KVG:[a-z0-9_]+]] = scf.forall (%[[GR:[a-z0-9_]+]]) in (%{{.*}}) shared_outs(%[[GS:[a-z0-9_]+]] = %{{.*}}) -> (tensor<?x32xbf16>) {
// CHECK: %[[GT:[a-z0-9_]+]] = arith.divui %[[GR]], %{{.*}} : index
// CHECK: %[[GJ:[a-z0-9_]+]] = arith.remui %[[GR]], %{{.*}} : index
// CHECK: %[[GI:[a-z0-9_]+]] = tensor.extract %[[IDX]][%[[GT]], %[[GJ]]] : tensor<?x?xi32>
// CHECK: arith.minsi %[[GI]]
// CHECK: %[[GROW:[a-z0-9_]+]] = arith.index_cast %{{.*}} : i32 to index
// CHECK: %[[GDST:[a-z0-9_]+]] = tensor.extract_slice %[[GS]][%[[GR]], 0] [1, 32] [1, 1]
// CHECK: scf.for %[[GD:[a-z0-9_]+]] = %c0 to %c32 step %c8 iter_args(%[[GACC:[a-z0-9_]+]] = %[[GDST]]) -> (tensor<1x32xbf16>) {
// CHECK-NOT: divui
// CHECK: %[[GV:[a-z0-9_]+]] = vector.transfer_read %[[KV]][%[[GROW]], %[[GD]]], %{{.*}} {in_bounds = [true]} : tensor<?x32xbf16>, vector<8xbf16>
// CHECK-NEXT: vector.transfer_write %[[GV]], %[[GACC]][%c0, %[[GD]]] {in_bounds = [true]} : vector<8xbf16>, tensor<1x32xbf16>
// CHECK: tensor.parallel_insert_slice %{{.*}} into %[[GS]][%[[GR]], 0] [1, 32] [1, 1]
// CHECK: %[[IDXG:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[IDX]] : tensor<?x?xi32>)
// CHECK: arith.cmpi sge, %{{.*}}, %c0_i32 : i32
// CHECK: arith.select %{{.*}}, %{{.*}}, %c-1_i32 : i32
// CHECK: tensor.extract %[[IDXG]]
// CHECK: vector.transfer_read %[[KVG]][%{{.*}}, %{{.*}}], %{{.*}} {in_bounds = [true]} : tensor<?x32xbf16>, vector<8xbf16>
// CHECK-NEXT: arith.extf %{{.*}} : vector<8xbf16> to vector<8xf32>
// CHECK: } else {
// CHECK: linalg.fill
// CHECK: return %[[OUT]]
func.func @attn(%q: tensor<?x4x32xbf16>, %kv: tensor<?x32xbf16>, %idx: tensor<?x?xi32>, %sink: tensor<4xf32>)
    -> tensor<?x4x32xbf16> {
  %o = dsa.sparse_attn %q, %kv, %idx, %sink {scale = 0.176776692 : f32}
      : (tensor<?x4x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<4xf32>) -> tensor<?x4x32xbf16>
  return %o : tensor<?x4x32xbf16>
}

// kv = tensor.concat(window rows, compressed rows) (as dsa-decompose-attention builds it): the gathered branch reads
// each row from the part holding it (an scf.if on row < rows of the first part, the second part at row - that), and
// the concatenation is built only inside the widened branch.
// CHECK-LABEL: func.func @attn_concat
// CHECK-SAME: (%[[CQ:[a-z0-9_]+]]: tensor<?x4x32xbf16>, %[[WIN:[a-z0-9_]+]]: tensor<?x32xbf16>, %[[CMP:[a-z0-9_]+]]: tensor<?x32xbf16>,
// CHECK-NOT: tensor.concat
// CHECK: scf.if %{{.*}} -> (tensor<?x4x32xbf16>) {
// CHECK: scf.if %{{.*}} -> (tensor<?x4x32xbf16>) {
// CHECK: %[[CAT:[a-z0-9_]+]] = tensor.concat dim(0) %[[WIN]], %[[CMP]]
// CHECK: linalg.generic {{.*}} ins(%[[CAT]] : tensor<?x32xbf16>) outs(%{{.*}} : tensor<?x32xf32>)
// CHECK: } else {
// CHECK-NOT: tensor.concat
// CHECK: scf.forall {{.*}} -> (tensor<?x32xbf16>) {
// CHECK: scf.for
// CHECK: %[[NW:[a-z0-9_]+]] = arith.cmpi slt, %[[ROW:[a-z0-9_]+]], %[[WROWS:[a-z0-9_]+]] : index
// CHECK: scf.if %[[NW]] -> (vector<8xbf16>) {
// CHECK: vector.transfer_read %[[WIN]][%[[ROW]], %{{.*}}]{{.*}} : tensor<?x32xbf16>, vector<8xbf16>
// CHECK: } else {
// CHECK: %[[LOCAL:[a-z0-9_]+]] = arith.subi %[[ROW]], %[[WROWS]] : index
// CHECK: vector.transfer_read %[[CMP]][%[[LOCAL]], %{{.*}}]{{.*}} : tensor<?x32xbf16>, vector<8xbf16>
func.func @attn_concat(%q: tensor<?x4x32xbf16>, %win: tensor<?x32xbf16>, %cmp: tensor<?x32xbf16>,
                       %idx: tensor<?x?xi32>, %sink: tensor<4xf32>) -> tensor<?x4x32xbf16> {
  %kv = tensor.concat dim(0) %win, %cmp : (tensor<?x32xbf16>, tensor<?x32xbf16>) -> tensor<?x32xbf16>
  %o = dsa.sparse_attn %q, %kv, %idx, %sink {scale = 0.176776692 : f32}
      : (tensor<?x4x32xbf16>, tensor<?x32xbf16>, tensor<?x?xi32>, tensor<4xf32>) -> tensor<?x4x32xbf16>
  return %o : tensor<?x4x32xbf16>
}
