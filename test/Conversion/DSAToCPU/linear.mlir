// The CHECK run below is the unpaired layout (pair-columns=0; the PAIR run further down is the default paired one),
// all three without the phase kernel (phase-min-rows=0; it has its own test, phase-kernel.mlir).
// dsa.linear -> x widened to f32 once (an elementwise generic), then emitGroupedDots' blocked product: an
// scf.forall over panels of w rows (folded away when one panel holds all of w), and inside, when x has at least 8
// rows (widen-min-rows) and a run-time check (x's and the panel's magnitudes, folded in one pass over x and in the
// widening loop) shows every product exact in f32, the panel's bf16 w rows widened to f32 once and blocks of 4
// tokens x 4 outputs reading them with vector.fma (the fused and unfused sums have the same bits); otherwise, from
// 2 tokens, bands of 4 tokens (clamped to the last row) x 4 strided outputs reading the bf16 rows, each load widened,
// with mulf then addf (no contraction): the one unfused copy. Either way ONE scf.for over k = 0, 8, .. carrying 16
// vector<8xf32> accumulators, one per (token, output), each updated as acc + x[m, k:k+8] * w[n, k:k+8]
// (element-wise: the kernels' dotF32 lanes, no reduction across lanes); then a scalar tail loop over the last
// K % 8 columns (one f32 sum per pair, from 0.0), each pair's lanes combined as
// ((a0+a4)+(a1+a5))+((a2+a6)+(a3+a7)) + tail, then bf16 RNE (bf16 linear) or nothing (f32), inserted at (m, n).
// Leftover outputs of a block of tokens: 4 x 1 blocks; leftover tokens of a widened panel (M % 4): 1 x 4 blocks of
// adjacent outputs over the same panel; decode (one token): 1 x 4 blocks over strided outputs n, n + q, n + 2q,
// n + 3q (q = outputs / 4) of the bf16 w, then 1 x 1.
// RUN: dsa-opt %s --dsa-to-cpu="pair-columns=0 phase-min-rows=0" --canonicalize --cse | FileCheck %s
// With 16 vector registers (AVX2: --dsa-cpu-pipeline sets it from cpu=) the blocks are 3 tokens x 3 outputs.
// RUN: dsa-opt %s --dsa-to-cpu="vector-registers=16 phase-min-rows=0" --canonicalize --cse | FileCheck %s --check-prefix=V16
// V16-LABEL: func.func @linear_tail
// V16: scf.for %{{.*}} = %c0 to %{{.*}} step %c3 iter_args(%{{.*}}) -> (tensor<?x5xbf16>) {
// V16: %{{.*}}:9 = scf.for %{{.*}} = %c0 to %c24 step %c8 iter_args(
// V16-NOT: :16 = scf.for
// V16-LABEL: func.func @linear_rank3
// The default with 32 registers (pair-columns): the widened panel holds pairs of w rows, [ceil(5/2), 2 x 29] (the odd
// padding row zero-filled), row r's chunk k at (r / 2, 2k + 8 (r % 2)), its tail element k at (r / 2, k + 24 + 5 (r % 2));
// a block is 4 tokens x pairs, one vector<16xf32> accumulator per (token, pair): x's 8 lanes twice (vector.shuffle)
// times the pair's 16 lanes. N = 5: no full block of 4 pairs; pairs (0, 1) and (2, 3) one at a time, then output 4
// as pair 2 (its padding half dropped). Each half's lanes are combined as in the unpaired block.
// RUN: dsa-opt %s --dsa-to-cpu=phase-min-rows=0 --canonicalize --cse | FileCheck %s --check-prefix=PAIR
// PAIR-LABEL: func.func @linear_tail
// PAIR: %[[PE:[a-z0-9_]+]] = tensor.empty() : tensor<3x58xf32>
// PAIR: %[[PZ:[a-z0-9_]+]] = linalg.fill ins(%{{.*}} : f32) outs(%[[PE]] : tensor<3x58xf32>)
// PAIR: %[[WF:[a-z0-9_]+]]:5 = scf.for %[[R:[a-z0-9_]+]] = %c0 to %c5 step %c1
// PAIR: %[[P:[a-z0-9_]+]] = arith.divsi %[[R]], %c2 : index
// PAIR: %[[H:[a-z0-9_]+]] = arith.remsi %[[R]], %c2 : index
// PAIR: scf.for %[[K:[a-z0-9_]+]] = %c0 to %c24 step %c8
// PAIR-DAG: %[[H8:[a-z0-9_]+]] = arith.muli %[[H]], %c8 : index
// PAIR-DAG: %[[K2:[a-z0-9_]+]] = arith.addi %[[K]], %[[K]] : index
// PAIR: %[[AT:[a-z0-9_]+]] = arith.addi %[[K2]], %[[H8]] : index
// PAIR: vector.transfer_write %{{.*}}, %{{.*}}[%[[P]], %[[AT]]] {in_bounds = [true]} : vector<8xf32>, tensor<?x58xf32>
// PAIR: scf.for %[[KT:[a-z0-9_]+]] = %c24 to %c29 step %c1
// PAIR-DAG: %[[H5:[a-z0-9_]+]] = arith.muli %[[H]], %c5 : index
// PAIR-DAG: %[[KT24:[a-z0-9_]+]] = arith.addi %[[KT]], %c24 : index
// PAIR: %[[ATT:[a-z0-9_]+]] = arith.addi %[[KT24]], %[[H5]] : index
// PAIR: tensor.insert %{{.*}} into %{{.*}}[%[[P]], %[[ATT]]] : tensor<?x58xf32>
// PAIR: arith.andi %{{.*}}, %{{.*}} : i1
// PAIR: %[[EXACT:[a-z0-9_]+]] = arith.andi %{{.*}}, %{{.*}} : i1
// PAIR: scf.if %[[EXACT]] -> (tensor<?x?xbf16>) {
// PAIR: scf.for %[[M0:[a-z0-9_]+]] = %c0 to %{{.*}} step %c4
// PAIR: scf.for %[[C:[a-z0-9_]+]] = %c0 to %c4 step %c2
// PAIR: %[[PR:[a-z0-9_]+]] = arith.divsi %[[C]], %c2 : index
// PAIR: %[[ACC:[a-z0-9_]+]]:4 = scf.for %[[KK:[a-z0-9_]+]] = %c0 to %c24 step %c8 iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
// PAIR: %[[XV:[a-z0-9_]+]] = vector.transfer_read %{{.*}}[%[[M0]], %[[KK]]], %{{.*}} {in_bounds = [true]} : tensor<?x29xf32>, vector<8xf32>
// PAIR: %[[XX:[a-z0-9_]+]] = vector.shuffle %[[XV]], %[[XV]] [0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7] : vector<8xf32>, vector<8xf32>
// PAIR: %[[KK2:[a-z0-9_]+]] = arith.addi %[[KK]], %[[KK]] : index
// PAIR: %[[WV:[a-z0-9_]+]] = vector.transfer_read %[[WF]]#0[%[[PR]], %[[KK2]]], %{{.*}} {in_bounds = [true]} : tensor<?x58xf32>, vector<16xf32>
// PAIR: vector.fma %[[XX]], %[[WV]], %{{.*}} : vector<16xf32>
// PAIR-COUNT-3: vector.fma %{{.*}}, %[[WV]], %{{.*}} : vector<16xf32>
// The tails: output 2p + h's element k at (p, k + 24 + 5h).
// PAIR: scf.for %[[KT2:[a-z0-9_]+]] = %c24 to %c29 step %c1
// PAIR: %[[T0:[a-z0-9_]+]] = arith.addi %[[KT2]], %c24 : index
// PAIR: tensor.extract %[[WF]]#0[%[[PR]], %[[T0]]] : tensor<?x58xf32>
// PAIR: %[[T1:[a-z0-9_]+]] = arith.addi %[[KT2]], %c29 : index
// PAIR: tensor.extract %[[WF]]#0[%[[PR]], %[[T1]]] : tensor<?x58xf32>
// Output 2p + 1 of token m0: lanes 8 .. 15 of the first accumulator.
// PAIR: vector.extract %[[ACC]]#0[0] : f32 from vector<16xf32>
// PAIR: vector.extract %[[ACC]]#0[8] : f32 from vector<16xf32>
// PAIR: vector.extract %[[ACC]]#0[15] : f32 from vector<16xf32>
// The unfused copy (fewer than 8 tokens, or a product not exact) is the few-rows bands on the bf16 rows: 4 tokens x 4
// strided outputs (blockCols / 2), 16 accumulators of 8 lanes, mulf + addf.
// PAIR: } else {
// PAIR: scf.if %{{.*}} -> (tensor<?x?xbf16>) {
// PAIR: scf.for %{{.*}} = %c0 to %{{.*}} step %c4 iter_args(%{{.*}}) -> (tensor<?x5xbf16>) {
// PAIR: %{{.*}}:16 = scf.for %{{.*}} = %c0 to %c24 step %c8 iter_args({{.*}}) -> (vector<8xf32>,
// PAIR-NOT: vector.fma
// PAIR: arith.mulf %{{.*}}, %{{.*}} : vector<8xf32>
// PAIR: arith.addf %{{.*}}, %{{.*}} : vector<8xf32>
// PAIR-LABEL: func.func @linear_rank3

// K = 29: three 8-lane steps and a tail of 5; N = 5: one 4 x 4 block and a 4 x 1 leftover per block of tokens.
// CHECK-LABEL: func.func @linear_tail
// CHECK-SAME: (%[[X:[a-z0-9_]+]]: tensor<?x29xbf16>, %[[W:[a-z0-9_]+]]: tensor<5x29xbf16>)
// CHECK-DAG: %[[ZERO8:[a-z0-9_]+]] = arith.constant dense<0.000000e+00> : vector<8xf32>
// CHECK-DAG: %[[ZERO:[a-z0-9_]+]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[INF:[a-z0-9_]+]] = arith.constant 0x7F800000 : f32
// CHECK-DAG: %[[TINY:[a-z0-9_]+]] = arith.constant 1.17549435E-38 : f32
// CHECK: %[[XF:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[X]] : tensor<?x29xbf16>) outs(%{{.*}} : tensor<?x29xf32>)
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: %[[OUT:[a-z0-9_]+]] = tensor.empty(%{{.*}}) : tensor<?x5xbf16>
// x's magnitudes, once per product (for the fused k-loop's check below): the largest |x|, the smallest nonzero |x|
// (0 counted as +inf) and the OR of the f32 values' low 16 bits (0: every value is a bf16 one). |x| as the bits
// with the sign cleared, compared as signed integers (their order is the values', NaN above +inf).
// CHECK: scf.for {{.*}} -> (vector<8xi32>, vector<8xi32>, vector<8xi32>, i32, i32, i32) {
// CHECK: %[[XB:[a-z0-9_]+]] = arith.bitcast %{{.*}} : vector<8xf32> to vector<8xi32>
// CHECK: %[[XA:[a-z0-9_]+]] = arith.andi %[[XB]], %{{.*}} : vector<8xi32>
// CHECK: arith.maxsi %{{.*}}, %[[XA]] : vector<8xi32>
// CHECK: arith.minsi
// CHECK: arith.andi %[[XB]], %{{.*}} : vector<8xi32>
// CHECK: %[[XMAXB:[a-z0-9_]+]] = arith.maxsi %{{.*}}, %{{.*}}#3 : i32
// CHECK: %[[XMINB:[a-z0-9_]+]] = arith.minsi %{{.*}}, %{{.*}}#4 : i32
// CHECK: %[[XMAX:[a-z0-9_]+]] = arith.bitcast %[[XMAXB]] : i32 to f32
// CHECK: %[[XMIN:[a-z0-9_]+]] = arith.bitcast %[[XMINB]] : i32 to f32
// CHECK: %[[XBF16:[a-z0-9_]+]] = arith.cmpi eq, %{{.*}}, %c0_i32 : i32
// CHECK: %[[SLICE:[a-z0-9_]+]] = tensor.extract_slice %[[OUT]][0, 0] [%{{.*}}, 5] [1, 1]
// From 8 tokens (widen-min-rows) and a block of 4: the panel's w rows widened to f32 first (8 lanes, then the
// K % 8 tail); the scf.if yields the bands' result and whether they ran (every product exact).
// CHECK: %[[BAND:[a-z0-9_]+]] = arith.cmpi sgt, %[[MFULL:[a-z0-9_]+]], %c0 : index
// CHECK: %[[GE8:[a-z0-9_]+]] = arith.cmpi sge, %[[M:[a-z0-9_]+]], %c8 : index
// CHECK: %[[ANY:[a-z0-9_]+]] = arith.andi %[[BAND]], %[[GE8]] : i1
// CHECK: %[[WIDE:[a-z0-9_]+]]:2 = scf.if %[[ANY]] -> (tensor<?x?xbf16>, i1) {
// The widening loop also folds w's magnitudes.
// CHECK: %[[WF:[a-z0-9_]+]]:5 = scf.for %[[R:[a-z0-9_]+]] = %c0 to %c5 step %c1 iter_args({{.*}}) -> (tensor<?x29xf32>, vector<8xi32>, vector<8xi32>, i32, i32) {
// CHECK: vector.transfer_read %[[W]][%[[R]], %{{.*}}], %{{.*}} {in_bounds = [true]} : tensor<5x29xbf16>, vector<8xbf16>
// CHECK: %[[WL:[a-z0-9_]+]] = arith.extf %{{.*}} : vector<8xbf16> to vector<8xf32>
// CHECK: vector.transfer_write %{{.*}}, %{{.*}}[%[[R]], %{{.*}}] {in_bounds = [true]} : vector<8xf32>, tensor<?x29xf32>
// CHECK: arith.bitcast %[[WL]] : vector<8xf32> to vector<8xi32>
// CHECK: scf.for %{{.*}} = %c24 to %c29 step %c1
// CHECK: tensor.extract %[[W]][%[[R]], %{{.*}}] : tensor<5x29xbf16>
// CHECK: tensor.insert %{{.*}} into %{{.*}}[%[[R]], %{{.*}}] : tensor<?x29xf32>
// Every product exact in f32 (max|x| max|w| finite, min|x| min|w| >= 2^-126, x bf16 values): the blocks with
// vector.fma (the same bits: docs/cpu-backend.md); else nothing here, the unfused bands below run.
// CHECK: %[[WMAXB:[a-z0-9_]+]] = arith.maxsi %{{.*}}, %[[WF]]#3 : i32
// CHECK: %[[WMINB:[a-z0-9_]+]] = arith.minsi %{{.*}}, %[[WF]]#4 : i32
// CHECK: %[[WMAX:[a-z0-9_]+]] = arith.bitcast %[[WMAXB]] : i32 to f32
// CHECK: %[[WMIN:[a-z0-9_]+]] = arith.bitcast %[[WMINB]] : i32 to f32
// CHECK: %[[PMAX:[a-z0-9_]+]] = arith.mulf %[[XMAX]], %[[WMAX]] : f32
// CHECK: %[[NOOVF:[a-z0-9_]+]] = arith.cmpf olt, %[[PMAX]], %[[INF]] : f32
// CHECK: %[[PMIN:[a-z0-9_]+]] = arith.mulf %[[XMIN]], %[[WMIN]] : f32
// CHECK: %[[NOUNF:[a-z0-9_]+]] = arith.cmpf oge, %[[PMIN]], %[[TINY]] : f32
// CHECK: %[[BOTH:[a-z0-9_]+]] = arith.andi %[[NOOVF]], %[[NOUNF]] : i1
// CHECK: %[[EXACT:[a-z0-9_]+]] = arith.andi %[[XBF16]], %[[BOTH]] : i1
// CHECK: %[[FUSED:[a-z0-9_]+]] = scf.if %[[EXACT]] -> (tensor<?x?xbf16>) {
// CHECK: scf.for %{{.*}} = %c0 to %[[MFULL]] step %c4 iter_args(%{{.*}} = %[[SLICE]]) -> (tensor<?x5xbf16>) {
// CHECK: %{{.*}}:16 = scf.for %{{.*}} = %c0 to %c24 step %c8 iter_args(
// CHECK: vector.transfer_read %[[WF]]#0[%c0, %{{.*}}]
// CHECK-COUNT-16: vector.fma %{{.*}}, %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK-NOT: arith.mulf
// CHECK: scf.yield
// The leftover token rows (M % 4) over the same widened panel (no second pass over w in memory): 1 x 4 blocks of
// adjacent outputs, then n = 4.
// CHECK: scf.for %[[ML:[a-z0-9_]+]] = %[[MFULL]] to %[[M]] step %c1 iter_args(%{{.*}} = %{{.*}}) -> (tensor<?x5xbf16>) {
// CHECK: vector.transfer_read %[[XF]][%[[ML]], %{{.*}}]
// CHECK-NEXT: vector.transfer_read %[[WF]]#0[%c0, %{{.*}}]
// CHECK-NEXT: vector.transfer_read %[[WF]]#0[%c1, %{{.*}}]
// CHECK: vector.transfer_read %[[WF]]#0[%c4, %{{.*}}]
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[SLICE_CAST:[a-z0-9_]+]] : tensor<?x?xbf16>
// CHECK: scf.yield %[[FUSED]], %[[EXACT]] : tensor<?x?xbf16>, i1
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[SLICE_CAST]], %false : tensor<?x?xbf16>, i1
// From 2 tokens, unless the fused widened panel did them all (fewer than 8 tokens, or some product not exact):
// bands of 4 tokens over the bf16 rows of w, the one unfused copy of the blocks.
// CHECK: %[[NOTWIDE:[a-z0-9_]+]] = arith.xori %[[WIDE]]#1, %true : i1
// CHECK: %[[GE2:[a-z0-9_]+]] = arith.cmpi sge, %[[M]], %c2 : index
// CHECK: %[[FEW:[a-z0-9_]+]] = arith.andi %[[GE2]], %[[NOTWIDE]] : i1
// The decode loop at the end starts at M after either (the widened panel's bands do its leftover rows, the few-rows
// bands every row), else at MFULL (0: one token).
// CHECK: %[[FROM0:[a-z0-9_]+]] = arith.select %[[WIDE]]#1, %[[M]], %[[MFULL]] : index
// CHECK: %[[FROM:[a-z0-9_]+]] = arith.select %[[FEW]], %[[M]], %[[FROM0]] : index
// The few-rows bands: 4 tokens m0 .. m0 + 3, each past M - 1 clamped to it (the same bits written again), times
// strided blocks of 4 outputs (q = 1 here), the bf16 w rows widened as they are loaded, acc + x * w unfused.
// CHECK: %[[LAST:[a-z0-9_]+]] = arith.subi %[[M]], %c1 : index
// CHECK: %[[FILLED:[a-z0-9_]+]] = scf.if %[[FEW]] -> (tensor<?x?xbf16>) {
// CHECK: %[[BANDS:[a-z0-9_]+]] = scf.for %[[M0:[a-z0-9_]+]] = %c0 to %[[M]] step %c4 iter_args(%[[Y:[a-z0-9_]+]] = %[[SLICE]]) -> (tensor<?x5xbf16>) {
// CHECK: %[[M1A:[a-z0-9_]+]] = arith.addi %[[M0]], %c1 : index
// CHECK: %[[M1:[a-z0-9_]+]] = arith.minsi %[[M1A]], %[[LAST]] : index
// CHECK-COUNT-2: arith.minsi %{{.*}}, %[[LAST]] : index
// CHECK: %[[ACC:[a-z0-9_]+]]:16 = scf.for %[[K:[a-z0-9_]+]] = %c0 to %c24 step %c8 iter_args(%[[A00:[a-z0-9_]+]] = %[[ZERO8]], %[[A01:[a-z0-9_]+]] = %[[ZERO8]], {{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// CHECK-DAG: %[[XV0:[a-z0-9_]+]] = vector.transfer_read %[[XF]][%[[M0]], %[[K]]], %[[ZERO]] {in_bounds = [true]} : tensor<?x29xf32>, vector<8xf32>
// CHECK-DAG: %[[XV1:[a-z0-9_]+]] = vector.transfer_read %[[XF]][%[[M1]], %[[K]]], %[[ZERO]] {in_bounds = [true]} : tensor<?x29xf32>, vector<8xf32>
// CHECK-DAG: %[[WB0:[a-z0-9_]+]] = vector.transfer_read %[[W]][%c0, %[[K]]], %{{.*}} {in_bounds = [true]} : tensor<5x29xbf16>, vector<8xbf16>
// CHECK-DAG: %[[WV0:[a-z0-9_]+]] = arith.extf %[[WB0]] : vector<8xbf16> to vector<8xf32>
// CHECK-DAG: %[[WB1:[a-z0-9_]+]] = vector.transfer_read %[[W]][%c1, %[[K]]], %{{.*}} {in_bounds = [true]} : tensor<5x29xbf16>, vector<8xbf16>
// CHECK-DAG: %[[WV1:[a-z0-9_]+]] = arith.extf %[[WB1]] : vector<8xbf16> to vector<8xf32>
// CHECK-NOT: vector.fma
// CHECK: %[[P00:[a-z0-9_]+]] = arith.mulf %[[XV0]], %[[WV0]] : vector<8xf32>
// CHECK: %[[S00:[a-z0-9_]+]] = arith.addf %[[A00]], %[[P00]] : vector<8xf32>
// CHECK: %[[P01:[a-z0-9_]+]] = arith.mulf %[[XV0]], %[[WV1]] : vector<8xf32>
// CHECK: %[[S01:[a-z0-9_]+]] = arith.addf %[[A01]], %[[P01]] : vector<8xf32>
// CHECK: scf.yield %[[S00]], %[[S01]], {{.*}} : vector<8xf32>,
// CHECK: %[[TAIL:[a-z0-9_]+]]:16 = scf.for %[[KT:[a-z0-9_]+]] = %c24 to %c29 step %c1 iter_args(%[[T00:[a-z0-9_]+]] = %[[ZERO]], {{.*}}) -> (f32,
// CHECK-DAG: %[[XS:[a-z0-9_]+]] = tensor.extract %[[XF]][%[[M0]], %[[KT]]] : tensor<?x29xf32>
// CHECK-DAG: %[[WSB:[a-z0-9_]+]] = tensor.extract %[[W]][%c0, %[[KT]]] : tensor<5x29xbf16>
// CHECK-DAG: %[[WS:[a-z0-9_]+]] = arith.extf %[[WSB]] : bf16 to f32
// CHECK: %[[PT:[a-z0-9_]+]] = arith.mulf %[[XS]], %[[WS]] : f32
// CHECK: arith.addf %[[T00]], %[[PT]] : f32
// The lanes of (m0, n0): ((a0+a4)+(a1+a5))+((a2+a6)+(a3+a7)) + tail, bf16, inserted at (m0, 0).
// CHECK-DAG: %[[L0:[a-z0-9_]+]] = vector.extract %[[ACC]]#0[0] : f32 from vector<8xf32>
// CHECK-DAG: %[[L1:[a-z0-9_]+]] = vector.extract %[[ACC]]#0[1] : f32 from vector<8xf32>
// CHECK-DAG: %[[L2:[a-z0-9_]+]] = vector.extract %[[ACC]]#0[2] : f32 from vector<8xf32>
// CHECK-DAG: %[[L3:[a-z0-9_]+]] = vector.extract %[[ACC]]#0[3] : f32 from vector<8xf32>
// CHECK-DAG: %[[L4:[a-z0-9_]+]] = vector.extract %[[ACC]]#0[4] : f32 from vector<8xf32>
// CHECK-DAG: %[[L5:[a-z0-9_]+]] = vector.extract %[[ACC]]#0[5] : f32 from vector<8xf32>
// CHECK-DAG: %[[L6:[a-z0-9_]+]] = vector.extract %[[ACC]]#0[6] : f32 from vector<8xf32>
// CHECK-DAG: %[[L7:[a-z0-9_]+]] = vector.extract %[[ACC]]#0[7] : f32 from vector<8xf32>
// CHECK-DAG: %[[S37:[a-z0-9_]+]] = arith.addf %[[L3]], %[[L7]]
// CHECK-DAG: %[[S26:[a-z0-9_]+]] = arith.addf %[[L2]], %[[L6]]
// CHECK-DAG: %[[HI:[a-z0-9_]+]] = arith.addf %[[S26]], %[[S37]]
// CHECK-DAG: %[[S15:[a-z0-9_]+]] = arith.addf %[[L1]], %[[L5]]
// CHECK-DAG: %[[S04:[a-z0-9_]+]] = arith.addf %[[L0]], %[[L4]]
// CHECK-DAG: %[[LO:[a-z0-9_]+]] = arith.addf %[[S04]], %[[S15]]
// CHECK: %[[SUM:[a-z0-9_]+]] = arith.addf %[[LO]], %[[HI]]
// CHECK: %[[DOT:[a-z0-9_]+]] = arith.addf %[[SUM]], %[[TAIL]]#0
// CHECK: %[[RB:[a-z0-9_]+]] = arith.truncf %[[DOT]] : f32 to bf16
// CHECK: tensor.insert %[[RB]] into %[[Y]][%[[M0]], %c0] : tensor<?x5xbf16>
// The leftover output (n = 4) of the band: 4 x 1 on the bf16 row.
// CHECK: scf.for %{{.*}} = %c0 to %c24 step %c8 iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// CHECK: vector.transfer_read %[[W]][%c4, %{{.*}}]
// CHECK: scf.yield %{{.*}} : tensor<?x5xbf16>
// Otherwise the widened panel's result (or the untouched slice: one token).
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[WIDE]]#0 : tensor<?x?xbf16>
// Decode rows (one token): 1 x 4 blocks of strided outputs (q = 1 here: n = 0, 1, 2, 3),
// then n = 4 alone, reading the bf16 rows of w.
// CHECK: %[[ROWS:[a-z0-9_]+]] = scf.for %[[MD:[a-z0-9_]+]] = %[[FROM]] to %{{.*}} step %c1 iter_args(%{{.*}} = %[[FILLED]]) -> (tensor<?x?xbf16>) {
// CHECK: scf.for %{{.*}} = %c0 to %c24 step %c8 iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// CHECK: vector.transfer_read %[[XF]][%[[MD]], %{{.*}}]
// CHECK: scf.for %{{.*}} = %c0 to %c24 step %c8 iter_args({{.*}}) -> (vector<8xf32>) {
// CHECK: return
// CHECK-NOT: dsa.
func.func @linear_tail(%x: tensor<?x29xbf16>, %w: tensor<5x29xbf16>) -> tensor<?x5xbf16> {
  %y = dsa.linear %x, %w : (tensor<?x29xbf16>, tensor<5x29xbf16>) -> tensor<?x5xbf16>
  return %y : tensor<?x5xbf16>
}

// K = 64 (no tail loop: the kernel still adds its +0.0 tail sum); rank 3 x is collapsed to rows and expanded back.
// CHECK-LABEL: func.func @linear_rank3
// CHECK-DAG: %[[ZERO:[a-z0-9_]+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[XR:[a-z0-9_]+]] = tensor.collapse_shape %{{.*}} {{\[}}[0, 1], [2]] : tensor<2x3x64xbf16> into tensor<6x64xbf16>
// CHECK: %[[XF:[a-z0-9_]+]] = linalg.generic {{.*}} ins(%[[XR]] : tensor<6x64xbf16>)
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c8
// CHECK: vector.transfer_read %[[XF]]
// CHECK-NOT: scf.for %{{.*}} = %c64
// CHECK: arith.addf %{{.*}}, %[[ZERO]] : f32
// CHECK: arith.truncf
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0, 1], [2]] output_shape [2, 3, 24] : tensor<6x24xbf16> into tensor<2x3x24xbf16>
func.func @linear_rank3(%x: tensor<2x3x64xbf16>, %w: tensor<24x64xbf16>) -> tensor<2x3x24xbf16> {
  %y = dsa.linear %x, %w : (tensor<2x3x64xbf16>, tensor<24x64xbf16>) -> tensor<2x3x24xbf16>
  return %y : tensor<2x3x24xbf16>
}

// f32 linear (the ratio >= 2 compressor): x read as is (no widening generic), no extf, no rounding.
// CHECK-LABEL: func.func @linear_f32
// CHECK-NOT: linalg.generic
// CHECK: vector.transfer_read {{.*}} : tensor<7x16xf32>, vector<8xf32>
// CHECK-NOT: arith.extf
// CHECK-NOT: arith.truncf
// CHECK: return %{{.*}} : tensor<?x7xf32>
func.func @linear_f32(%x: tensor<?x16xf32>, %w: tensor<7x16xf32>) -> tensor<?x7xf32> {
  %y = dsa.linear %x, %w : (tensor<?x16xf32>, tensor<7x16xf32>) -> tensor<?x7xf32>
  return %y : tensor<?x7xf32>
}

// w larger than one panel (256 KiB: 128 rows of 1000 bf16): an scf.forall over the panels (the unit group dimension folded away) whose panel size is
// chosen at run time (128 rows for 4+ tokens, all 300 rows for fewer: decode streams w once), each panel's columns
// an extract_slice of the shared result, written back by tensor.parallel_insert_slice.
// CHECK-LABEL: func.func @linear_panels
// CHECK: %[[FEW:[a-z0-9_]+]] = arith.cmpi slt, %{{.*}}, %c4 : index
// CHECK: %[[PANEL:[a-z0-9_]+]] = arith.select %[[FEW]], %c300, %c128 : index
// CHECK: %[[NP:[a-z0-9_]+]] = arith.ceildivsi %c300, %[[PANEL]] : index
// CHECK: scf.forall (%[[P:[a-z0-9_]+]]) in (%[[NP]]) shared_outs(%[[SH:[a-z0-9_]+]] = %{{.*}}) -> (tensor<?x300xbf16>) {
// CHECK: %[[N0:[a-z0-9_]+]] = arith.muli %[[P]], %[[PANEL]] : index
// CHECK: tensor.extract_slice %[[SH]][0, %{{.*}}] [%{{.*}}, %{{.*}}] [1, 1]
// CHECK: scf.forall.in_parallel {
// CHECK: tensor.parallel_insert_slice %{{.*}} into %[[SH]][0, %{{.*}}] [%{{.*}}, %{{.*}}] [1, 1]
func.func @linear_panels(%x: tensor<?x1000xbf16>, %w: tensor<300x1000xbf16>) -> tensor<?x300xbf16> {
  %y = dsa.linear %x, %w : (tensor<?x1000xbf16>, tensor<300x1000xbf16>) -> tensor<?x300xbf16>
  return %y : tensor<?x300xbf16>
}
