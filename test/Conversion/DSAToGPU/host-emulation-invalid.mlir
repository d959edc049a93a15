// RUN: dsa-opt %s --split-input-file --dsa-gpu-to-host-emulation --verify-diagnostics

// What dsa-gpu-to-host-emulation cannot emulate is a diagnostic naming the op, never a crash or a kernel that runs
// unchecked.

// expected-error @+1 {{dsa-gpu-to-host-emulation: the module holds no gpu.module}}
module {
  func.func @f() {
    return
  }
}

// -----

gpu.module @kernels {
  gpu.func @shuffle(%out: memref<?xf32>, %v: f32) kernel {
    %c1 = arith.constant 1 : i32
    %c32 = arith.constant 32 : i32
    // expected-error @+1 {{'gpu.shuffle' op dsa-gpu-to-host-emulation: not emulated on the host}}
    %r, %ok = gpu.shuffle xor %v, %c1, %c32 : f32
    gpu.return
  }
}

// -----

gpu.module @kernels {
  gpu.func @atomic(%out: memref<?xf32>, %v: f32) kernel {
    %c0 = arith.constant 0 : index
    // expected-error @+1 {{'memref.atomic_rmw' op dsa-gpu-to-host-emulation: a memory access the emulator cannot check}}
    %r = memref.atomic_rmw addf %v, %out[%c0] : (f32, memref<?xf32>) -> f32
    gpu.return
  }
}

// -----

gpu.module @kernels {
  gpu.func @copy(%a: memref<?xf32>, %b: memref<?xf32>) kernel {
    // expected-error @+1 {{'memref.copy' op dsa-gpu-to-host-emulation: a memory access the emulator cannot check}}
    memref.copy %a, %b : memref<?xf32> to memref<?xf32>
    gpu.return
  }
}

// -----

gpu.module @kernels {
  // expected-error @+1 {{dsa-gpu-to-host-emulation: a kernel parameter of type 'f16' has no packed layout}}
  gpu.func @half(%out: memref<?xf32>, %h: f16) kernel {
    gpu.return
  }
}

// -----

func.func @k() {
  return
}
gpu.module @kernels {
  // expected-error @+1 {{dsa-gpu-to-host-emulation: the symbol 'k' of kernels is already defined in the host module}}
  gpu.func @k(%out: memref<?xf32>) kernel {
    gpu.return
  }
}

// -----

gpu.module @kernels {
  // expected-error @+1 {{dsa-gpu-to-host-emulation: an argument in a gpu address space is not emulated}}
  gpu.func @wg_arg(%out: memref<?xf32, #gpu.address_space<workgroup>>) kernel {
    gpu.return
  }
}
