// RUN: dsa-opt %s --dsa-gpu-host-pipeline | FileCheck %s

// A returned select of two buffers (the index_k slot republication: cond ? the new cache : the argument slot; see
// docs/gpu-backend.md) frees the side it did not choose when the function allocated that side, when it is not the
// returned buffer (upstream ownership-based deallocation: a run-time comparison of the buffers' pointers); an
// argument buffer is never freed (nor cloned: dsa-gpu-share-returned-buffers); a buffer also returned directly is
// never freed.

// CHECK-LABEL: func.func @one_side(
// CHECK-SAME: %[[C:.*]]: i1, %{{.*}}: memref<4x32xbf16>, %[[A:.*]]: memref<4x32xf32>)
// CHECK: %[[Y:.*]] = gpu.alloc () : memref<4x32xf32>
// CHECK: %[[Z:.*]] = arith.select %[[C]], %[[Y]], %[[A]] : memref<4x32xf32>
// CHECK-NEXT: %[[PY:.*]] = memref.extract_aligned_pointer_as_index %[[Y]]
// CHECK-NEXT: %[[PZ:.*]] = memref.extract_aligned_pointer_as_index %[[Z]]
// CHECK-NEXT: %[[NOTY:.*]] = arith.cmpi ne, %[[PY]], %[[PZ]] : index
// CHECK-NEXT: scf.if %[[NOTY]] {
// CHECK-NEXT: gpu.dealloc %[[Y]] : memref<4x32xf32>
// CHECK-NEXT: }
// CHECK-NOT: gpu.dealloc
// CHECK-NOT: gpu.memcpy
// CHECK: return %[[Z]] : memref<4x32xf32>
func.func @one_side(%c: i1, %x: tensor<4x32xbf16>, %a: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %y = arith.extf %x : tensor<4x32xbf16> to tensor<4x32xf32>
  %z = arith.select %c, %y, %a : tensor<4x32xf32>
  return %z : tensor<4x32xf32>
}

// Both sides allocated, returned through a view (memref.cast): exactly the unselected one is freed.
// CHECK-LABEL: func.func @both_sides(
// CHECK-SAME: %[[C:.*]]: i1,
// CHECK: %[[Y:.*]] = gpu.alloc () : memref<4x32xf32>
// CHECK: %[[Y2:.*]] = gpu.alloc () : memref<4x32xf32>
// CHECK: %[[Z:.*]] = arith.select %[[C]], %[[Y]], %[[Y2]] : memref<4x32xf32>
// CHECK-NEXT: %[[V:.*]] = memref.cast %[[Z]] : memref<4x32xf32> to memref<?x32xf32>
// CHECK-NEXT: %[[PY:.*]] = memref.extract_aligned_pointer_as_index %[[Y]]
// CHECK-NEXT: %[[PV:.*]] = memref.extract_aligned_pointer_as_index %[[V]]
// CHECK-NEXT: %[[NOTY:.*]] = arith.cmpi ne, %[[PY]], %[[PV]] : index
// CHECK-NEXT: scf.if %[[NOTY]] {
// CHECK-NEXT: gpu.dealloc %[[Y]] : memref<4x32xf32>
// CHECK-NEXT: }
// CHECK-NEXT: %[[PY2:.*]] = memref.extract_aligned_pointer_as_index %[[Y2]]
// CHECK-NEXT: %[[NOTY2:.*]] = arith.cmpi ne, %[[PY2]], %[[PV]] : index
// CHECK-NEXT: scf.if %[[NOTY2]] {
// CHECK-NEXT: gpu.dealloc %[[Y2]] : memref<4x32xf32>
// CHECK-NEXT: }
// CHECK-NOT: gpu.dealloc
// CHECK: return %[[V]] : memref<?x32xf32>
func.func @both_sides(%c: i1, %x: tensor<4x32xbf16>, %x2: tensor<4x32xbf16>) -> tensor<?x32xf32> {
  %y = arith.extf %x : tensor<4x32xbf16> to tensor<4x32xf32>
  %y2 = arith.extf %x2 : tensor<4x32xbf16> to tensor<4x32xf32>
  %z = arith.select %c, %y, %y2 : tensor<4x32xf32>
  %v = tensor.cast %z : tensor<4x32xf32> to tensor<?x32xf32>
  return %v : tensor<?x32xf32>
}

// The allocated side is also a result of its own (the new cache and the slot): never freed.
// CHECK-LABEL: func.func @also_returned(
// CHECK: %[[Y:.*]] = gpu.alloc () : memref<4x32xf32>
// CHECK: %[[Z:.*]] = arith.select
// CHECK-NOT: gpu.dealloc
// CHECK-NOT: scf.if
// CHECK: return %[[Z]], %[[Y]] :
func.func @also_returned(%c: i1, %x: tensor<4x32xbf16>,
                         %a: tensor<4x32xf32>) -> (tensor<4x32xf32>, tensor<4x32xf32>) {
  %y = arith.extf %x : tensor<4x32xbf16> to tensor<4x32xf32>
  %z = arith.select %c, %y, %a : tensor<4x32xf32>
  return %z, %y : tensor<4x32xf32>, tensor<4x32xf32>
}

// Two returned selects reach the same buffer (d's true side is an argument): it is live when c or not d, so it is
// freed when it is neither returned buffer.
// CHECK-LABEL: func.func @two_selects(
// CHECK-SAME: %[[C:[^:]*]]: i1, %[[D:[^:]*]]: i1,
// CHECK: %[[Y:.*]] = gpu.alloc () : memref<4x32xf32>
// CHECK: %[[Z:.*]] = arith.select %[[C]], %[[Y]], %{{.*}} : memref<4x32xf32>
// CHECK-NEXT: %[[W:.*]] = arith.select %[[D]], %{{.*}}, %[[Y]] : memref<4x32xf32>
// CHECK-NEXT: %[[PY:.*]] = memref.extract_aligned_pointer_as_index %[[Y]]
// CHECK-NEXT: %[[PZ:.*]] = memref.extract_aligned_pointer_as_index %[[Z]]
// CHECK-NEXT: %[[NOTZ:.*]] = arith.cmpi ne, %[[PY]], %[[PZ]] : index
// CHECK-NEXT: %[[PW:.*]] = memref.extract_aligned_pointer_as_index %[[W]]
// CHECK-NEXT: %[[NOTW:.*]] = arith.cmpi ne, %[[PY]], %[[PW]] : index
// CHECK-NEXT: %[[DEAD:.*]] = arith.andi %[[NOTZ]], %[[NOTW]] : i1
// CHECK-NEXT: scf.if %[[DEAD]] {
// CHECK-NEXT: gpu.dealloc %[[Y]] : memref<4x32xf32>
// CHECK-NEXT: }
// CHECK-NOT: gpu.dealloc
// CHECK: return %[[Z]], %[[W]] :
func.func @two_selects(%c: i1, %d: i1, %x: tensor<4x32xbf16>, %a: tensor<4x32xf32>,
                       %b: tensor<4x32xf32>) -> (tensor<4x32xf32>, tensor<4x32xf32>) {
  %y = arith.extf %x : tensor<4x32xbf16> to tensor<4x32xf32>
  %z = arith.select %c, %y, %a : tensor<4x32xf32>
  %w = arith.select %d, %b, %y : tensor<4x32xf32>
  return %z, %w : tensor<4x32xf32>, tensor<4x32xf32>
}

// A select that is not returned: its allocated side is scratch, freed unconditionally.
// CHECK-LABEL: func.func @not_returned(
// CHECK: %[[Y:.*]] = gpu.alloc () : memref<4x32xf32>
// CHECK: %[[T:.*]] = gpu.alloc () : memref<4x32xbf16>
// CHECK-NOT: scf.if
// CHECK: gpu.dealloc %[[Y]] : memref<4x32xf32>
// CHECK-NOT: gpu.dealloc
// CHECK: return %[[T]] : memref<4x32xbf16>
func.func @not_returned(%c: i1, %x: tensor<4x32xbf16>, %a: tensor<4x32xf32>) -> tensor<4x32xbf16> {
  %y = arith.extf %x : tensor<4x32xbf16> to tensor<4x32xf32>
  %z = arith.select %c, %y, %a : tensor<4x32xf32>
  %t = arith.truncf %z : tensor<4x32xf32> to tensor<4x32xbf16>
  return %t : tensor<4x32xbf16>
}

// window_kv returned: the step's kv (prefill, start_pos == 0) or decode's rows, here (no ring_update of the same
// operands in the function) a new buffer that window_kv writes with dsa_ring_update from the ring argument; each of
// the two allocations is freed when it is not the returned rows.
// CHECK-LABEL: func.func @window_rows(
// CHECK-SAME: %{{.*}}: memref<?x32xf32>, %[[RING:[^:]*]]: memref<8x32xbf16>, %[[SP:[^:]*]]: i64)
// CHECK: %[[KV:.*]] = gpu.alloc (%{{.*}}) : memref<?x32xbf16>
// CHECK: %[[PREFILL:.*]] = arith.cmpi eq, %[[SP]], %c0_i64 : i64
// CHECK: func.call @dsa_cpu_fail(%c6_i32)
// CHECK: %[[DEC:.*]] = gpu.alloc () : memref<8x32xbf16>
// CHECK: memref.collapse_shape %[[RING]]
// CHECK: gpu.launch_func @dsa_kernels::@dsa_ring_update
// CHECK: %[[DECD:.*]] = memref.cast %[[DEC]] : memref<8x32xbf16> to memref<?x32xbf16>
// CHECK-NEXT: %[[ROWS:.*]] = arith.select %[[PREFILL]], %[[KV]], %[[DECD]] : memref<?x32xbf16>
// CHECK-NEXT: %[[PKV:.*]] = memref.extract_aligned_pointer_as_index %[[KV]]
// CHECK-NEXT: %[[PROWS:.*]] = memref.extract_aligned_pointer_as_index %[[ROWS]]
// CHECK-NEXT: %[[NOTKV:.*]] = arith.cmpi ne, %[[PKV]], %[[PROWS]] : index
// CHECK-NEXT: scf.if %[[NOTKV]] {
// CHECK-NEXT: gpu.dealloc %[[KV]] : memref<?x32xbf16>
// CHECK-NEXT: }
// CHECK-NEXT: %[[PDEC:.*]] = memref.extract_aligned_pointer_as_index %[[DEC]]
// CHECK-NEXT: %[[NOTDEC:.*]] = arith.cmpi ne, %[[PDEC]], %[[PROWS]] : index
// CHECK-NEXT: scf.if %[[NOTDEC]] {
// CHECK-NEXT: gpu.dealloc %[[DEC]] : memref<8x32xbf16>
// CHECK-NEXT: }
// CHECK-NOT: gpu.dealloc
// CHECK: return %[[ROWS]] : memref<?x32xbf16>
func.func @window_rows(%x: tensor<?x32xf32>, %ring: tensor<8x32xbf16>, %sp: i64) -> tensor<?x32xbf16> {
  %kv = arith.truncf %x : tensor<?x32xf32> to tensor<?x32xbf16>
  %rows = dsa.window_kv %kv, %ring, %sp : (tensor<?x32xbf16>, tensor<8x32xbf16>, i64) -> tensor<?x32xbf16>
  return %rows : tensor<?x32xbf16>
}
