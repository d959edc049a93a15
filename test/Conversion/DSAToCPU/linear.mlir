// dsa.linear -> one parallel linalg.generic over the outputs, dims (n, m) (n outer: a weight row stays in cache for
// every token), whose body is the kernels' dotF32 (Kernels.cpp): one vector<8xf32> accumulator in an scf.for over
// k = 0, 8, .. (acc + x[m, k:k+8] * w[n, k:k+8], element-wise), a scalar tail loop over the last K % 8 columns, the
// lanes combined as ((a0+a4)+(a1+a5))+((a2+a6)+(a3+a7)) + tail, then bf16 RNE (bf16 linear) or nothing (f32).
// RUN: dsa-opt %s --dsa-to-cpu --canonicalize --cse | FileCheck %s

// K = 29: three 8-lane steps and a tail of 5.
// CHECK-LABEL: func.func @linear_tail
// CHECK-SAME: (%[[X:[a-z0-9_]+]]: tensor<?x29xbf16>, %[[W:[a-z0-9_]+]]: tensor<5x29xbf16>)
// CHECK-DAG: %[[ZERO8:[a-z0-9_]+]] = arith.constant dense<0.000000e+00> : vector<8xf32>
// CHECK-DAG: %[[ZERO:[a-z0-9_]+]] = arith.constant 0.000000e+00 : f32
// CHECK: linalg.generic {indexing_maps = [#[[OUTMAP:map[0-9]*]]], iterator_types = ["parallel", "parallel"]} outs(%{{.*}} : tensor<?x5xbf16>)
// CHECK: %[[N:[a-z0-9_]+]] = linalg.index 0 : index
// CHECK: %[[M:[a-z0-9_]+]] = linalg.index 1 : index
// CHECK: %[[ACC:[a-z0-9_]+]] = scf.for %[[K:[a-z0-9_]+]] = %c0 to %c24 step %c8 iter_args(%[[A:[a-z0-9_]+]] = %[[ZERO8]]) -> (vector<8xf32>) {
// CHECK-DAG: %[[WV:[a-z0-9_]+]] = vector.transfer_read %[[W]][%[[N]], %[[K]]], %{{.*}} {in_bounds = [true]} : tensor<5x29xbf16>, vector<8xbf16>
// CHECK-DAG: %[[XV:[a-z0-9_]+]] = vector.transfer_read %[[X]][%[[M]], %[[K]]], %{{.*}} {in_bounds = [true]} : tensor<?x29xbf16>, vector<8xbf16>
// CHECK-DAG: %[[WF:[a-z0-9_]+]] = arith.extf %[[WV]] : vector<8xbf16> to vector<8xf32>
// CHECK-DAG: %[[XF:[a-z0-9_]+]] = arith.extf %[[XV]] : vector<8xbf16> to vector<8xf32>
// CHECK: %[[P:[a-z0-9_]+]] = arith.mulf %[[XF]], %[[WF]] : vector<8xf32>
// CHECK: %[[S:[a-z0-9_]+]] = arith.addf %[[A]], %[[P]] : vector<8xf32>
// CHECK: scf.yield %[[S]] : vector<8xf32>
// CHECK: %[[TAIL:[a-z0-9_]+]] = scf.for %[[KT:[a-z0-9_]+]] = %c24 to %c29 step %c1 iter_args(%[[T:[a-z0-9_]+]] = %[[ZERO]]) -> (f32) {
// CHECK: tensor.extract %[[W]][%[[N]], %[[KT]]]
// CHECK: tensor.extract %[[X]][%[[M]], %[[KT]]]
// CHECK: arith.mulf
// CHECK: arith.addf %[[T]], %{{.*}} : f32
// CHECK-DAG: %[[A0:[a-z0-9_]+]] = vector.extract %[[ACC]][0]
// CHECK-DAG: %[[A1:[a-z0-9_]+]] = vector.extract %[[ACC]][1]
// CHECK-DAG: %[[A2:[a-z0-9_]+]] = vector.extract %[[ACC]][2]
// CHECK-DAG: %[[A3:[a-z0-9_]+]] = vector.extract %[[ACC]][3]
// CHECK-DAG: %[[A4:[a-z0-9_]+]] = vector.extract %[[ACC]][4]
// CHECK-DAG: %[[A5:[a-z0-9_]+]] = vector.extract %[[ACC]][5]
// CHECK-DAG: %[[A6:[a-z0-9_]+]] = vector.extract %[[ACC]][6]
// CHECK-DAG: %[[A7:[a-z0-9_]+]] = vector.extract %[[ACC]][7]
// CHECK-DAG: %[[S37:[a-z0-9_]+]] = arith.addf %[[A3]], %[[A7]]
// CHECK-DAG: %[[S26:[a-z0-9_]+]] = arith.addf %[[A2]], %[[A6]]
// CHECK-DAG: %[[HI:[a-z0-9_]+]] = arith.addf %[[S26]], %[[S37]]
// CHECK-DAG: %[[S15:[a-z0-9_]+]] = arith.addf %[[A1]], %[[A5]]
// CHECK-DAG: %[[S04:[a-z0-9_]+]] = arith.addf %[[A0]], %[[A4]]
// CHECK-DAG: %[[LO:[a-z0-9_]+]] = arith.addf %[[S04]], %[[S15]]
// CHECK: %[[SUM:[a-z0-9_]+]] = arith.addf %[[LO]], %[[HI]]
// CHECK: %[[DOT:[a-z0-9_]+]] = arith.addf %[[SUM]], %[[TAIL]]
// CHECK: %[[R:[a-z0-9_]+]] = arith.truncf %[[DOT]] : f32 to bf16
// CHECK: linalg.yield %[[R]] : bf16
// CHECK-NOT: dsa.
func.func @linear_tail(%x: tensor<?x29xbf16>, %w: tensor<5x29xbf16>) -> tensor<?x5xbf16> {
  %y = dsa.linear %x, %w : (tensor<?x29xbf16>, tensor<5x29xbf16>) -> tensor<?x5xbf16>
  return %y : tensor<?x5xbf16>
}

// K = 64 (no tail: the kernel still adds its +0.0 tail sum); rank 3 x is collapsed to rows and expanded back.
// CHECK-LABEL: func.func @linear_rank3
// CHECK-DAG: %[[ZERO:[a-z0-9_]+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[XR:[a-z0-9_]+]] = tensor.collapse_shape %{{.*}} {{\[}}[0, 1], [2]] : tensor<2x3x64xbf16> into tensor<6x64xbf16>
// CHECK: linalg.generic
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c8
// CHECK: vector.transfer_read %[[XR]]
// CHECK-NOT: scf.for
// CHECK: arith.addf %{{.*}}, %[[ZERO]] : f32
// CHECK: arith.truncf
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0, 1], [2]] output_shape [2, 3, 24] : tensor<6x24xbf16> into tensor<2x3x24xbf16>
func.func @linear_rank3(%x: tensor<2x3x64xbf16>, %w: tensor<24x64xbf16>) -> tensor<2x3x24xbf16> {
  %y = dsa.linear %x, %w : (tensor<2x3x64xbf16>, tensor<24x64xbf16>) -> tensor<2x3x24xbf16>
  return %y : tensor<2x3x24xbf16>
}

// f32 linear (the ratio >= 2 compressor): no extf, no rounding.
// CHECK-LABEL: func.func @linear_f32
// CHECK: vector.transfer_read {{.*}} : tensor<7x16xf32>, vector<8xf32>
// CHECK-NOT: arith.extf
// CHECK-NOT: arith.truncf
// CHECK: return %{{.*}} : tensor<?x7xf32>
func.func @linear_f32(%x: tensor<?x16xf32>, %w: tensor<7x16xf32>) -> tensor<?x7xf32> {
  %y = dsa.linear %x, %w : (tensor<?x16xf32>, tensor<7x16xf32>) -> tensor<?x7xf32>
  return %y : tensor<?x7xf32>
}
