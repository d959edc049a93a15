// Planted kernels for CudaKernelsOnCpuTest's negative tests of the host emulator (test/Runtime/Cuda/HostEmulator.h):
// each takes (out memref<?xf32>, n index) and is launched directly, not through KernelLibrary.
gpu.module @dsa_emulator_negative {
  // Work item 0 writes 42 to workgroup memory, every item copies it to out[global id]: with the barrier (correct)
  // and without it (a race that item-by-item execution happens to answer right).
  gpu.func @planted_broadcast(%out: memref<?xf32>, %n: index)
      workgroup(%sh: memref<1xf32, #gpu.address_space<workgroup>>) kernel {
    %c0 = arith.constant 0 : index
    %tid = gpu.thread_id x
    %first = arith.cmpi eq, %tid, %c0 : index
    scf.if %first {
      %v = arith.constant 42.0 : f32
      memref.store %v, %sh[%c0] : memref<1xf32, #gpu.address_space<workgroup>>
    }
    gpu.barrier
    %r = memref.load %sh[%c0] : memref<1xf32, #gpu.address_space<workgroup>>
    %i = gpu.global_id x
    %in = arith.cmpi ult, %i, %n : index
    scf.if %in {
      memref.store %r, %out[%i] : memref<?xf32>
    }
    gpu.return
  }
  gpu.func @planted_broadcast_no_barrier(%out: memref<?xf32>, %n: index)
      workgroup(%sh: memref<1xf32, #gpu.address_space<workgroup>>) kernel {
    %c0 = arith.constant 0 : index
    %tid = gpu.thread_id x
    %first = arith.cmpi eq, %tid, %c0 : index
    scf.if %first {
      %v = arith.constant 42.0 : f32
      memref.store %v, %sh[%c0] : memref<1xf32, #gpu.address_space<workgroup>>
    }
    %r = memref.load %sh[%c0] : memref<1xf32, #gpu.address_space<workgroup>>
    %i = gpu.global_id x
    %in = arith.cmpi ult, %i, %n : index
    scf.if %in {
      memref.store %r, %out[%i] : memref<?xf32>
    }
    gpu.return
  }
  // Only the first five work items reach the barrier; the others return.
  gpu.func @planted_barrier_in_branch(%out: memref<?xf32>, %n: index) kernel {
    %c5 = arith.constant 5 : index
    %tid = gpu.thread_id x
    %few = arith.cmpi ult, %tid, %c5 : index
    scf.if %few {
      gpu.barrier
    }
    gpu.return
  }
  // Both branches synchronise, at different barriers.
  gpu.func @planted_two_barriers(%out: memref<?xf32>, %n: index) kernel {
    %c5 = arith.constant 5 : index
    %tid = gpu.thread_id x
    %few = arith.cmpi ult, %tid, %c5 : index
    scf.if %few {
      gpu.barrier
    } else {
      gpu.barrier
    }
    gpu.return
  }
  // Work item 0 of every block writes out[0].
  gpu.func @planted_cross_block(%out: memref<?xf32>, %n: index) kernel {
    %c0 = arith.constant 0 : index
    %tid = gpu.thread_id x
    %bid = gpu.block_id x
    %first = arith.cmpi eq, %tid, %c0 : index
    scf.if %first {
      %b = arith.index_cast %bid : index to i32
      %f = arith.sitofp %b : i32 to f32
      memref.store %f, %out[%c0] : memref<?xf32>
    }
    gpu.return
  }
  // 52000 bytes of workgroup memory: more than a CUDA block's 48 KiB of static shared memory.
  gpu.func @planted_big_workgroup(%out: memref<?xf32>, %n: index)
      workgroup(%sh: memref<13000xf32, #gpu.address_space<workgroup>>) kernel {
    gpu.return
  }
}
