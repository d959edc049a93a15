// RUN: dsa-opt %s --dsa-gpu-to-host-emulation | FileCheck %s
// RUN: dsa-opt %s --dsa-gpu-to-host-emulation=instrument-accesses=false | FileCheck %s --check-prefix=NOINST
// RUN: dsa-opt %s --dsa-gpu-to-host-emulation --convert-scf-to-cf --expand-strided-metadata \
// RUN:   --convert-index-to-llvm --finalize-memref-to-llvm --convert-func-to-llvm --convert-arith-to-llvm \
// RUN:   --convert-cf-to-llvm --reconcile-unrealized-casts | FileCheck %s --check-prefix=LLVM

// dsa-gpu-to-host-emulation (docs/gpu-backend.md "Host emulation"): the kernels of a gpu.module become host
// functions calling the emulator's hooks (core/include/dsa/ABI/GpuHostEmulation.h); what the hooks do is tested by
// test/Runtime/Cuda/CudaKernelsOnCpuTest.

// CHECK-NOT: gpu.module
// CHECK-DAG: func.func private @dsa_emu_thread_id(i32) -> i64
// CHECK-DAG: func.func private @dsa_emu_block_id(i32) -> i64
// CHECK-DAG: func.func private @dsa_emu_block_dim(i32) -> i64
// CHECK-DAG: func.func private @dsa_emu_grid_dim(i32) -> i64
// CHECK-DAG: func.func private @dsa_emu_barrier(i32)
// CHECK-DAG: func.func private @dsa_emu_workgroup(i32, i64) -> !llvm.ptr
// CHECK-DAG: func.func private @dsa_emu_access(i64, i64, i32)

// The device helper moves to the host module as it is, its loads reported too.
// CHECK-LABEL: func.func @helper(%{{.*}}: memref<?xf32>, %{{.*}}: index) -> f32
// CHECK: call @dsa_emu_access({{.*}}) : (i64, i64, i32) -> ()
// CHECK-NEXT: memref.load

// The kernel: workgroup attribution 0 (16x8 f32 = 512 bytes, row stride 8) from the emulator, the private one an
// alloca, ids from the hooks (dimension x = 0, y = 1) (global_id expanded upstream: block_id * block_dim + thread_id), two barriers numbered
// 0 and 1, every load and store reported with its byte address (the strided offset times the element size).
// CHECK-LABEL: func.func @k(
// CHECK-SAME: %[[X:.*]]: memref<?xbf16>, %[[Y:.*]]: memref<?xf32>, %[[N:.*]]: index, %[[S:.*]]: f32)
// CHECK-DAG: %[[I0:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[BYTES:.*]] = arith.constant 512 : i64
// CHECK: %[[WP:.*]] = call @dsa_emu_workgroup(%[[I0]], %[[BYTES]]) : (i32, i64) -> !llvm.ptr
// CHECK: llvm.insertvalue %[[WP]], %{{.*}}[0]
// CHECK: llvm.insertvalue %[[WP]], %{{.*}}[1]
// CHECK: %[[WG:.*]] = builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)> to memref<16x8xf32>
// CHECK: %[[PRIV:.*]] = memref.alloca() : memref<4xf32>
// CHECK: %[[DX:.*]] = arith.constant 0 : i32
// CHECK-NEXT: call @dsa_emu_block_id(%[[DX]])
// CHECK: call @dsa_emu_block_dim
// CHECK: call @dsa_emu_thread_id
// CHECK: %[[DY:.*]] = arith.constant 1 : i32
// CHECK-NEXT: call @dsa_emu_thread_id(%[[DY]])
// CHECK: call @dsa_emu_grid_dim
// CHECK: memref.extract_aligned_pointer_as_index %[[X]]
// CHECK: %[[C2:.*]] = arith.constant 2 : index
// CHECK: arith.muli %{{.*}}, %[[C2]] : index
// CHECK: call @dsa_emu_access(%{{.*}}, %{{.*}}, %{{.*}}) : (i64, i64, i32) -> ()
// CHECK-NEXT: memref.load %[[X]]
// CHECK: memref.extract_strided_metadata %[[WG]] : memref<16x8xf32> -> memref<f32>, index, index, index, index, index
// CHECK: call @dsa_emu_access
// CHECK-NEXT: memref.store %{{.*}}, %[[WG]]
// CHECK: %[[B0:.*]] = arith.constant 0 : i32
// CHECK: call @dsa_emu_barrier(%[[B0]])
// The private buffer's accesses are not reported (the work item's own stack).
// CHECK-NOT: dsa_emu_access
// CHECK: memref.store %{{.*}}, %[[PRIV]]
// CHECK: %[[B1:.*]] = arith.constant 1 : i32
// CHECK: call @dsa_emu_barrier(%[[B1]])
// CHECK: call @helper
// CHECK: return

// The packed entry: memref (5 slots), memref (5), index (1), f32 (1) = 12 parameters read through void **.
// CHECK-LABEL: func.func @k_dsa_emu(
// CHECK-SAME: %[[P:.*]]: !llvm.ptr)
// CHECK-COUNT-12: llvm.getelementptr %[[P]][{{[0-9]+}}] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: call @k(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (memref<?xbf16>, memref<?xf32>, index, f32) -> ()
// CHECK: llvm.mlir.global external constant @k_dsa_emu_params(12 : i64) {addr_space = 0 : i32} : i64

// NOINST-NOT: call @dsa_emu_access
// NOINST: call @dsa_emu_barrier
// NOINST-NOT: call @dsa_emu_access
// NOINST: func.func @k_dsa_emu

// LLVM-DAG: llvm.func @k(
// LLVM-DAG: llvm.func @k_dsa_emu(%{{.*}}: !llvm.ptr)
// LLVM-DAG: llvm.func @dsa_emu_barrier(i32)
// LLVM-NOT: unrealized_conversion_cast

gpu.module @kernels {
  func.func @helper(%m: memref<?xf32>, %i: index) -> f32 {
    %v = memref.load %m[%i] : memref<?xf32>
    return %v : f32
  }
  gpu.func @k(%x: memref<?xbf16>, %y: memref<?xf32>, %n: index, %s: f32)
      workgroup(%wg: memref<16x8xf32, #gpu.address_space<workgroup>>)
      private(%priv: memref<4xf32, #gpu.address_space<private>>)
      kernel {
    %c0 = arith.constant 0 : index
    %g = gpu.global_id x
    %t = gpu.thread_id y
    %nb = gpu.grid_dim x
    %v = memref.load %x[%g] : memref<?xbf16>
    %f = arith.extf %v : bf16 to f32
    memref.store %f, %wg[%t, %c0] : memref<16x8xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    memref.store %s, %priv[%c0] : memref<4xf32, #gpu.address_space<private>>
    gpu.barrier
    %h = func.call @helper(%y, %nb) : (memref<?xf32>, index) -> f32
    gpu.return
  }
}
