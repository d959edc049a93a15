// Three kernels (one with workgroup memory) and a device function that is not one.
gpu.module @dsa_kernels {
  gpu.func @dsa_a(%x: memref<?xbf16>, %n: index, %eps: f32) kernel { gpu.return }
  gpu.func @dsa_b(%x: memref<?xf32>, %y: memref<?xi32>, %n: i64)
      workgroup(%sh: memref<4xf32, #gpu.address_space<workgroup>>) kernel { gpu.return }
  gpu.func @helper(%v: f32) -> f32 { gpu.return %v : f32 }
  gpu.func @dsa_c(%x: memref<?xi64>) kernel { gpu.return }
}
