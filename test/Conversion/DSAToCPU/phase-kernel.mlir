// The phase kernel of dsa.linear / dsa.grouped_output (docs/cpu-backend.md "Phase kernel"), here with 16 vector
// registers (6 tokens x 2 x 8 outputs): K = 29 is 3 k-steps per phase (K8 = 3) and a tail of 5, N = 20 two column
// tiles of 16. From 64 rows of x (arith.cmpi sge, counted at run time) x is packed phase-major into [1, bands, 29, 6]
// (blocks of 4 rows by a 4 x 8 transpose; an scf.forall over bands, each band's [29, 6] tile zeroed first, by vectors of 6, only when it runs past the rows), the panel's w
// into [2, 29, 16] (its second tile, which has 4 columns, zeroed first by vectors, the first not; blocks of 8 w rows by an 8 x 8 transpose), and the product is an outer-product tile: per
// k-step 2 vectors of w, 6 broadcasts of x, 12 vector.fma into 12 accumulators; the kernel runs on a panel only when
// a pass over the panel's w (and one over x) shows every product exact, otherwise the panel takes the blocks (which
// have the unfused loop). The 8 phase sums of each output are stored, then combined as dotF32 combines
// its lanes, ((p0 + p4) + (p1 + p5)) + ((p2 + p6) + (p3 + p7)), the tail (mulf + addf, from 0) added last, and
// rounded to bf16 8 outputs at a time.
// RUN: dsa-opt %s --dsa-to-cpu=vector-registers=16 --canonicalize --cse | FileCheck %s
// phase-min-rows=0: no phase kernel (no broadcast of x, no threshold).
// RUN: dsa-opt %s --dsa-to-cpu="vector-registers=16 phase-min-rows=0" --canonicalize --cse | FileCheck %s --check-prefix=OFF
// With 32 registers the tile is 12 tokens x 2 x 16 outputs.
// RUN: dsa-opt %s --dsa-to-cpu=vector-registers=32 --canonicalize --cse | FileCheck %s --check-prefix=V32

// CHECK-LABEL: func.func @linear_phase
// CHECK: %[[USE:[a-z0-9_]+]] = arith.cmpi sge, %{{.*}}, %c64 : index
// CHECK: scf.if %[[USE]] -> (tensor<1x?x29x6xf32>)
// CHECK: scf.forall (%[[B:[a-z0-9_]+]]) in (%{{.*}}) shared_outs(%{{.*}}) -> (tensor<1x?x29x6xf32>)
// CHECK: %[[XE:[a-z0-9_]+]] = tensor.empty() : tensor<29x6xf32>
// CHECK: scf.if %{{.*}} -> (tensor<29x6xf32>)
// CHECK-NEXT: scf.for %[[XS:[a-z0-9_]+]] = %c0 to %c29 step %c1 iter_args(%[[XA:[a-z0-9_]+]] = %[[XE]])
// CHECK-NEXT: vector.transfer_write %{{.*}}, %[[XA]][%[[XS]], %c0] {in_bounds = [true]} : vector<6xf32>, tensor<29x6xf32>
// The band's rows in blocks of 4 (rows 0 .. 3 of 6): per k-step 4 rows' 8 lanes, transposed by 16 shuffles,
// written as 8 vectors of 4, one per phase; rows 4 and 5 element by element.
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c4
// CHECK: scf.for %[[XI:[a-z0-9_]+]] = %c0 to %c3 step %c1
// CHECK-COUNT-4: vector.transfer_read {{.*}} : tensor<?x29xf32>, vector<8xf32>
// CHECK-COUNT-16: vector.shuffle
// CHECK: vector.transfer_write %{{.*}}, %{{.*}}[%[[XI]], %{{.*}}] {in_bounds = [true]} : vector<4xf32>, tensor<29x6xf32>
// CHECK-COUNT-7: vector.transfer_write {{.*}} : vector<4xf32>, tensor<29x6xf32>
// CHECK: tensor.insert
// CHECK: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[0, %[[B]], 0, 0] [1, 1, 29, 6] [1, 1, 1, 1]
// CHECK: %[[EXACT:[a-z0-9_]+]] = scf.if %[[USE]] -> (i1)
// CHECK: vector.transfer_read {{.*}} : tensor<20x29xbf16>, vector<8xbf16>
// CHECK: arith.maxsi %{{.*}} : vector<8xi32>
// CHECK: arith.cmpf oge, %{{.*}}, %cst{{.*}} : f32
// CHECK: scf.yield %false : i1
// CHECK: scf.if %[[EXACT]] -> (tensor<?x?xbf16>)
// CHECK: %[[WE:[a-z0-9_]+]] = tensor.empty() : tensor<2x29x16xf32>
// Only the last column tile (1) is zeroed, 16 lanes per slot in a sequential loop (no linalg.fill: with
// parallel=true that became an OpenMP loop nested in the panel's, one scalar store per element).
// CHECK-NOT: linalg.fill
// CHECK: scf.for %[[ZS:[a-z0-9_]+]] = %c0 to %c29 step %c1 iter_args(%[[ZA:[a-z0-9_]+]] = %[[WE]])
// CHECK-NEXT: vector.transfer_write %{{.*}}, %[[ZA]][%c1, %[[ZS]], %c0] {in_bounds = [true]} : vector<16xf32>, tensor<2x29x16xf32>
// w rows 0 .. 15 (two blocks of 8) are packed a block at a time: per k-step the 8 rows' 8 lanes, transposed by 24
// shuffles, written as 8 vectors, one per phase (slots i, 3 + i, ..., 21 + i); rows 16 .. 19 element by element.
// CHECK: scf.for %{{.*}} = %c0 to %c16 step %c8
// CHECK: scf.for %[[I:[a-z0-9_]+]] = %c0 to %c3 step %c1
// CHECK-COUNT-8: vector.transfer_read {{.*}} : tensor<20x29xbf16>, vector<8xbf16>
// CHECK-COUNT-24: vector.shuffle
// CHECK-NOT: tensor.insert
// CHECK: vector.transfer_write %{{.*}}, %{{.*}}[%{{.*}}, %[[I]], %{{.*}}] {in_bounds = [true]} : vector<8xf32>, tensor<2x29x16xf32>
// CHECK-COUNT-7: vector.transfer_write {{.*}} : vector<8xf32>, tensor<2x29x16xf32>
// CHECK: scf.for %[[R:[a-z0-9_]+]] = %c0 to %c20 step %c1
// CHECK: arith.cmpi sge, %[[R]], %c16 : index
// CHECK: scf.for %{{.*}} = %c0 to %c3 step %c1
// CHECK: tensor.insert
// The fused tile: 12 accumulators over the 3 k-steps of a phase.
// CHECK: %{{.*}}:12 = scf.for %{{.*}} = %c0 to %c3 step %c1 iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK-COUNT-2: vector.transfer_read {{.*}} : tensor<?x29x16xf32>, vector<8xf32>
// CHECK: %[[X0:[a-z0-9_]+]] = vector.broadcast %{{.*}} : f32 to vector<8xf32>
// CHECK-NEXT: vector.fma %[[X0]], %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK-NEXT: vector.fma %[[X0]], %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK-COUNT-10: vector.fma
// CHECK: scf.yield
// The tail: 5 columns, unfused, then the lane combination of the first 8 outputs of the first row.
// CHECK: %{{.*}}:12 = scf.for %{{.*}} = %c24 to %c29 step %c1
// CHECK: arith.mulf %{{.*}} : vector<8xf32>
// CHECK-NEXT: arith.addf %{{.*}} : vector<8xf32>
// CHECK: %[[P0:[a-z0-9_]+]] = vector.transfer_read %{{.*}}[%c0, %{{.*}}, %{{.*}}, %c0]
// CHECK-NEXT: %[[P1:[a-z0-9_]+]] = vector.transfer_read %{{.*}}[%c1, %{{.*}}, %{{.*}}, %c0]
// CHECK-NEXT: %[[P2:[a-z0-9_]+]] = vector.transfer_read %{{.*}}[%c2, %{{.*}}, %{{.*}}, %c0]
// CHECK-NEXT: %[[P3:[a-z0-9_]+]] = vector.transfer_read %{{.*}}[%c3, %{{.*}}, %{{.*}}, %c0]
// CHECK-NEXT: %[[P4:[a-z0-9_]+]] = vector.transfer_read %{{.*}}[%c4, %{{.*}}, %{{.*}}, %c0]
// CHECK-NEXT: %[[P5:[a-z0-9_]+]] = vector.transfer_read %{{.*}}[%c5, %{{.*}}, %{{.*}}, %c0]
// CHECK-NEXT: %[[P6:[a-z0-9_]+]] = vector.transfer_read %{{.*}}[%c6, %{{.*}}, %{{.*}}, %c0]
// CHECK-NEXT: %[[P7:[a-z0-9_]+]] = vector.transfer_read %{{.*}}[%c7, %{{.*}}, %{{.*}}, %c0]
// CHECK-DAG: %[[S37:[a-z0-9_]+]] = arith.addf %[[P3]], %[[P7]] : vector<8xf32>
// CHECK-DAG: %[[S26:[a-z0-9_]+]] = arith.addf %[[P2]], %[[P6]] : vector<8xf32>
// CHECK-DAG: %[[R1:[a-z0-9_]+]] = arith.addf %[[S26]], %[[S37]] : vector<8xf32>
// CHECK-DAG: %[[S15:[a-z0-9_]+]] = arith.addf %[[P1]], %[[P5]] : vector<8xf32>
// CHECK-DAG: %[[S04:[a-z0-9_]+]] = arith.addf %[[P0]], %[[P4]] : vector<8xf32>
// CHECK-DAG: %[[R0:[a-z0-9_]+]] = arith.addf %[[S04]], %[[S15]] : vector<8xf32>
// CHECK: %[[S:[a-z0-9_]+]] = arith.addf %[[R0]], %[[R1]] : vector<8xf32>
// CHECK-NEXT: %[[D:[a-z0-9_]+]] = arith.addf %[[S]], %{{.*}}#0 : vector<8xf32>
// CHECK: %[[R:[a-z0-9_]+]] = arith.truncf %[[D]] : vector<8xf32> to vector<8xbf16>
// CHECK-NEXT: vector.transfer_write %[[R]], %{{.*}}[%{{.*}}, %{{.*}}] {in_bounds = [true]} : vector<8xbf16>, tensor<?x32xbf16>
// One copy of the tile: the else branch is the blocks (3 x 3 with 16 registers).
// CHECK: } else {
// CHECK-NOT: vector.broadcast
// CHECK: %{{.*}}:9 = scf.for %{{.*}} = %c0 to %c24 step %c8
// CHECK-NOT: vector.broadcast
// CHECK: return

// OFF-LABEL: func.func @linear_phase
// OFF-NOT: arith.cmpi sge, %{{.*}}, %c64
// OFF-NOT: vector.broadcast
// OFF: return

// V32-LABEL: func.func @linear_phase
// V32: scf.if %{{.*}} -> (tensor<1x?x29x12xf32>)
// V32: tensor.empty() : tensor<1x29x32xf32>
// V32: %{{.*}}:24 = scf.for %{{.*}} = %c0 to %c3 step %c1
// V32: vector.broadcast %{{.*}} : f32 to vector<16xf32>
// V32: vector.fma %{{.*}} : vector<16xf32>
func.func @linear_phase(%x: tensor<?x29xbf16>, %w: tensor<20x29xbf16>) -> tensor<?x20xbf16> {
  %y = dsa.linear %x, %w : (tensor<?x29xbf16>, tensor<20x29xbf16>) -> tensor<?x20xbf16>
  return %y : tensor<?x20xbf16>
}

// N = 32: both column tiles full, so wp is not zeroed at all (the packing writes every element).
// CHECK-LABEL: func.func @linear_phase_full_tiles
// CHECK: %[[WF:[a-z0-9_]+]] = tensor.empty() : tensor<2x29x16xf32>
// CHECK-NOT: linalg.fill
// CHECK-NOT: vector.transfer_write %cst{{.*}} : vector<16xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c32 step %c8 iter_args(%{{.*}} = %[[WF]])
func.func @linear_phase_full_tiles(%x: tensor<?x29xbf16>, %w: tensor<32x29xbf16>) -> tensor<?x32xbf16> {
  %y = dsa.linear %x, %w : (tensor<?x29xbf16>, tensor<32x29xbf16>) -> tensor<?x32xbf16>
  return %y : tensor<?x32xbf16>
}

// Panel widths (GemmTiling::phasePanelBytes, phaseMinPanels; the panel's outputs, selected from 64 rows): one phase of a panel is about 128 KiB with 16
// registers and 512 KiB with 32 (AVX-512 cores have at least 1 MiB of L2). wo_b's shape, K = 8192 (4 KiB of f32
// per output per phase): 2 tiles of 16 per panel with 16 registers, 4 tiles of 32 with 32 (with 128 KiB it was one
// tile, every band of x read again from L3 per 32 outputs).
// CHECK-LABEL: func.func @linear_phase_long_k
// CHECK: %[[P:[a-z0-9_]+]] = arith.cmpi sge, %{{.*}}, %c64 : index
// CHECK-NEXT: arith.select %[[P]], %c32, %{{.*}} : index
// V32-LABEL: func.func @linear_phase_long_k
// V32: %[[P:[a-z0-9_]+]] = arith.cmpi sge, %{{.*}}, %c64 : index
// V32-NEXT: arith.select %[[P]], %c128, %{{.*}} : index
func.func @linear_phase_long_k(%x: tensor<?x8192xbf16>, %w: tensor<5120x8192xbf16>) -> tensor<?x5120xbf16> {
  %y = dsa.linear %x, %w : (tensor<?x8192xbf16>, tensor<5120x8192xbf16>) -> tensor<?x5120xbf16>
  return %y : tensor<?x5120xbf16>
}

// wq_a's shape, N = 1280, K = 5120: with 32 registers 512 KiB is 192 outputs, 7 panels; narrowed to 160 (5 tiles)
// so that the product has 8 panels (phaseMinPanels: the units of OpenMP work). 16 registers: 48 outputs, 27 panels.
// CHECK-LABEL: func.func @linear_phase_min_panels
// CHECK: %[[P:[a-z0-9_]+]] = arith.cmpi sge, %{{.*}}, %c64 : index
// CHECK-NEXT: arith.select %[[P]], %c48, %{{.*}} : index
// V32-LABEL: func.func @linear_phase_min_panels
// V32: %[[P:[a-z0-9_]+]] = arith.cmpi sge, %{{.*}}, %c64 : index
// V32-NEXT: arith.select %[[P]], %c160, %{{.*}} : index
func.func @linear_phase_min_panels(%x: tensor<?x5120xbf16>, %w: tensor<1280x5120xbf16>) -> tensor<?x1280xbf16> {
  %y = dsa.linear %x, %w : (tensor<?x5120xbf16>, tensor<1280x5120xbf16>) -> tensor<?x1280xbf16>
  return %y : tensor<?x1280xbf16>
}
