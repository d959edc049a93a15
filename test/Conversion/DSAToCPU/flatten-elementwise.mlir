// dsa-cpu-flatten-elementwise (Pipeline.cpp): element-wise linalg ops over whole identity-layout buffers of rank >= 2
// (fills, linalg.map, element-wise linalg.generic) become one linalg.generic over collapse_shape views; ops on
// strided subviews, with a reduction, a non-identity map or linalg.index stay as they are.
// RUN: dsa-opt %s --dsa-cpu-flatten-elementwise --split-input-file | FileCheck %s
// With parallel=true the flat op is an OpenMP loop over one index (the rank-3 fill of a padded batched slot was a
// collapse(3) loop nest, whose translation recovers the three indices with divisions per element).
// RUN: dsa-opt %s --dsa-cpu-flatten-elementwise --split-input-file --convert-linalg-to-parallel-loops \
// RUN:   --convert-scf-to-openmp | FileCheck %s --check-prefix=OMP

// CHECK-LABEL: func.func @fill(
// CHECK-SAME:    %[[A:.+]]: memref<?x?x128xbf16>
// CHECK:         %[[F:.+]] = memref.collapse_shape %[[A]] {{\[}}[0, 1, 2]] : memref<?x?x128xbf16> into memref<?xbf16>
// CHECK-NEXT:    linalg.generic {indexing_maps = [#[[SCALAR:.+]], #[[ID:.+]]], iterator_types = ["parallel"]}
// CHECK-SAME:      ins(%{{.+}} : bf16) outs(%[[F]] : memref<?xbf16>)
// CHECK-NEXT:    ^bb0(%[[IN:.+]]: bf16, %{{.+}}: bf16):
// CHECK-NEXT:      linalg.yield %[[IN]] : bf16
// CHECK-NOT:     linalg.fill
// OMP-LABEL: func.func @fill(
// OMP:         omp.parallel
// OMP:         omp.loop_nest (%[[I:[a-z0-9_]+]]) : index = (%{{[a-z0-9_]+}}) to (%{{[a-z0-9_]+}}) step (%{{[a-z0-9_]+}}) {
// OMP:         memref.store %{{.+}}, %{{.+}}[%[[I]]] : memref<?xbf16>
func.func @fill(%a: memref<?x?x128xbf16>) {
  %z = arith.constant 0.0 : bf16
  linalg.fill ins(%z : bf16) outs(%a : memref<?x?x128xbf16>)
  return
}

// -----

// linalg.map (a pad's generated fill, as bufferization writes it) and an element-wise generic of two inputs.
// CHECK-LABEL: func.func @map_and_generic(
// CHECK-SAME:    %[[A:[a-z0-9]+]]: memref<4x8xf32>, %[[B:[a-z0-9]+]]: memref<4x8xf32>, %[[C:[a-z0-9]+]]: memref<4x8xf32>
// CHECK:         %[[FC:.+]] = memref.collapse_shape %[[C]] {{\[}}[0, 1]] : memref<4x8xf32> into memref<32xf32>
// CHECK-NEXT:    linalg.generic {{.+}} outs(%[[FC]] : memref<32xf32>)
// CHECK:         %[[FA:.+]] = memref.collapse_shape %[[A]] {{\[}}[0, 1]]
// CHECK-NEXT:    %[[FB:.+]] = memref.collapse_shape %[[B]] {{\[}}[0, 1]]
// CHECK-NEXT:    %[[FC2:.+]] = memref.collapse_shape %[[C]] {{\[}}[0, 1]]
// CHECK-NEXT:    linalg.generic {{.+}} iterator_types = ["parallel"]} ins(%[[FA]], %[[FB]] : memref<32xf32>, memref<32xf32>) outs(%[[FC2]] : memref<32xf32>)
// CHECK-NEXT:    ^bb0(%[[X:.+]]: f32, %[[Y:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT:      %[[S:.+]] = arith.addf %[[X]], %[[Y]] : f32
// CHECK-NEXT:      linalg.yield %[[S]] : f32
// OMP-LABEL: func.func @map_and_generic(
// OMP-NOT:     collapse(
// OMP:         return
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @map_and_generic(%a: memref<4x8xf32>, %b: memref<4x8xf32>, %c: memref<4x8xf32>) {
  %one = arith.constant 1.0 : f32
  linalg.map outs(%c : memref<4x8xf32>)
    (%init: f32) {
      linalg.yield %one : f32
    }
  linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : memref<4x8xf32>, memref<4x8xf32>) outs(%c : memref<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Left as they are: a fill of a strided subview (not one block), a transpose (non-identity map), a row sum (a
// reduction), a generic reading linalg.index, and rank 1.
// CHECK-LABEL: func.func @kept(
// CHECK-NOT:     memref.collapse_shape
// CHECK:         linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : memref<4x4xf32, strided<[8, 1]>>)
// CHECK:         linalg.generic {indexing_maps = [#{{.+}}, #{{.+}}], iterator_types = ["parallel", "parallel"]}
// CHECK:         linalg.generic {indexing_maps = [#{{.+}}, #{{.+}}], iterator_types = ["parallel", "reduction"]}
// CHECK:         linalg.index 1
// CHECK:         linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : memref<8xf32>)
// CHECK-NOT:     memref.collapse_shape
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>
#rows = affine_map<(d0, d1) -> (d0)>
func.func @kept(%a: memref<4x8xf32>, %b: memref<8x4xf32>, %r: memref<4xf32>, %c: memref<4x8xf32>, %v: memref<8xf32>) {
  %z = arith.constant 0.0 : f32
  %s = memref.subview %a[0, 0] [4, 4] [1, 1] : memref<4x8xf32> to memref<4x4xf32, strided<[8, 1]>>
  linalg.fill ins(%z : f32) outs(%s : memref<4x4xf32, strided<[8, 1]>>)
  linalg.generic {indexing_maps = [#id2, #t], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<4x8xf32>) outs(%b : memref<8x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  }
  linalg.generic {indexing_maps = [#id2, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%a : memref<4x8xf32>) outs(%r : memref<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %sum = arith.addf %x, %o : f32
    linalg.yield %sum : f32
  }
  linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]} outs(%c : memref<4x8xf32>) {
  ^bb0(%o: f32):
    %j = linalg.index 1 : index
    %i = arith.index_cast %j : index to i32
    %f = arith.sitofp %i : i32 to f32
    linalg.yield %f : f32
  }
  linalg.fill ins(%z : f32) outs(%v : memref<8xf32>)
  return
}
