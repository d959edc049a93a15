// Bad input gives a diagnostic at the offending op (or a dsa-run message) and exit status 1, never a crash.
// RUN: not dsa-run %s --entry=unsupported 2>&1 | FileCheck %s --check-prefix=UNSUP
// RUN: not dsa-run %s --entry=unsupported 2>/dev/null | FileCheck %s --check-prefix=UNSUP-OUT
// RUN: not dsa-run %s --entry=attention 2>&1 | FileCheck %s --check-prefix=ATTN
// RUN: not dsa-run %s --entry=bad_cast 2>&1 | FileCheck %s --check-prefix=CAST
// RUN: not dsa-run %s --entry=bad_reshape 2>&1 | FileCheck %s --check-prefix=RESHAPE
// RUN: not dsa-run %s --entry=bad_expand 2>&1 | FileCheck %s --check-prefix=EXPAND
// RUN: not dsa-run %s --entry=bad_dim 2>&1 | FileCheck %s --check-prefix=DIM
// RUN: not dsa-run %s --entry=kernel_error 2>&1 | FileCheck %s --check-prefix=KERNEL
// RUN: not dsa-run %s --entry=recursive 2>&1 | FileCheck %s --check-prefix=RECURSE
// RUN: not dsa-run %s --entry=takes_args 2>&1 | FileCheck %s --check-prefix=ARGS
// RUN: not dsa-run %s --entry=missing 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not dsa-run %s 2>&1 | FileCheck %s --check-prefix=NOENTRY
// RUN: not dsa-run %s.does-not-exist --entry=unsupported 2>&1 | FileCheck %s --check-prefix=NOFILE

// An op the interpreter does not know; probes executed before the error are still printed.
// UNSUP-OUT: probe before: tensor<1xi64> = [4]
// UNSUP-OUT-NOT: result
// UNSUP: errors.mlir:[[@LINE+6]]:8: error: dsa interpreter: unsupported op 'arith.shli'
func.func @unsupported() -> i64 {
  %a = arith.constant 3 : i64
  %b = arith.constant dense<4> : tensor<1xi64>
  dsa.probe "before" %b : tensor<1xi64>
  %c = arith.constant 4 : i64
  %m = arith.shli %a, %c : i64
  return %m : i64
}

// The composite op must be decomposed first; the note says how.
// ATTN: error: dsa interpreter: unsupported op 'dsa.attention'
// ATTN: note: decompose it first, e.g. --pass-pipeline='builtin.module(dsa-decompose-attention)'
func.func @attention() -> tensor<1x64xbf16> {
  %x = arith.constant dense<0.0> : tensor<1x64xbf16>
  %start = arith.constant 0 : i64
  %ring = arith.constant dense<0.0> : tensor<8x32xbf16>
  %sink = arith.constant dense<0.0> : tensor<4xf32>
  %wq_a = arith.constant dense<0.0> : tensor<16x64xbf16>
  %q_norm = arith.constant dense<1.0> : tensor<16xbf16>
  %wq_b = arith.constant dense<0.0> : tensor<128x16xbf16>
  %wkv = arith.constant dense<0.0> : tensor<32x64xbf16>
  %kv_norm = arith.constant dense<1.0> : tensor<32xbf16>
  %wo_a = arith.constant dense<0.0> : tensor<32x64xbf16>
  %wo_b = arith.constant dense<0.0> : tensor<64x32xbf16>
  %out, %ring1 = dsa.attention %x, %start, %ring
      weights(%sink, %wq_a, %q_norm, %wq_b, %wkv, %kv_norm, %wo_a, %wo_b)
      {config = #dsa.attn_config<layer_id = 0, dim = 64, n_heads = 4, head_dim = 32, rope_head_dim = 8,
                                 q_lora_rank = 16, o_groups = 2, o_lora_rank = 16, window_size = 8,
                                 compress_ratio = 0, norm_eps = 9.99999968E-21 : f32,
                                 rope = #dsa.rope<rope_dim = 8, theta = 1.000000e+04>>}
      : (tensor<1x64xbf16>, i64, tensor<8x32xbf16>, tensor<4xf32>, tensor<16x64xbf16>, tensor<16xbf16>,
         tensor<128x16xbf16>, tensor<32x64xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>)
      -> (tensor<1x64xbf16>, tensor<8x32xbf16>)
  return %out : tensor<1x64xbf16>
}

// A runtime shape that contradicts a static result type.
// CAST: errors.mlir:[[@LINE+4]]:8: error: dsa interpreter: 'tensor.cast' result #0: shape is [2, 2], expected [3, 2]
func.func @bad_cast() -> tensor<3x2xf32> {
  %x = arith.constant dense<1.0> : tensor<2x2xf32>
  %d = tensor.cast %x : tensor<2x2xf32> to tensor<?x2xf32>
  %s = tensor.cast %d : tensor<?x2xf32> to tensor<3x2xf32>
  return %s : tensor<3x2xf32>
}

// A shape operand whose element count differs from the source's.
// RESHAPE: errors.mlir:[[@LINE+4]]:8: error: dsa interpreter: 'tensor.reshape' shape [3, 3] holds 9 elements, the source {{.*}} has 4
func.func @bad_reshape() -> tensor<?x?xf32> {
  %x = arith.constant dense<1.0> : tensor<2x2xf32>
  %shape = arith.constant dense<[3, 3]> : tensor<2xi64>
  %r = tensor.reshape %x(%shape) : (tensor<2x2xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// A dynamic output_shape size that does not multiply out to the source dimension.
// EXPAND: errors.mlir:[[@LINE+5]]:8: error: dsa interpreter: 'tensor.expand_shape' output shape [5, 2] does not expand source dimension 0
func.func @bad_expand() -> tensor<?x2xf32> {
  %x = arith.constant dense<1.0> : tensor<4xf32>
  %xd = tensor.cast %x : tensor<4xf32> to tensor<?xf32>
  %c5 = arith.constant 5 : index
  %e = tensor.expand_shape %xd [[0, 1]] output_shape [%c5, 2] : tensor<?xf32> into tensor<?x2xf32>
  return %e : tensor<?x2xf32>
}

// DIM: errors.mlir:[[@LINE+4]]:8: error: dsa interpreter: 'tensor.dim' dimension index 2 is out of range
func.func @bad_dim() -> index {
  %x = arith.constant dense<1.0> : tensor<2x2xf32>
  %c2 = arith.constant 2 : index
  %d = tensor.dim %x, %c2 : tensor<2x2xf32>
  return %d : index
}

// A kernel's dsa::Error, inside a callee: the diagnostic points at the op, a remark at the call. (The dynamic
// width hides the bad block size from the verifier; the kernel sees the runtime width.)
// KERNEL: errors.mlir:[[@LINE+3]]:8: error: dsa interpreter: 'dsa.act_quant_fp8' failed: {{.*}}block_size 3
// KERNEL: errors.mlir:[[@LINE+8]]:8: remark: dsa interpreter: called from here
func.func @quant(%x: tensor<2x?xbf16>) -> tensor<2x?xbf16> {
  %q = dsa.act_quant_fp8 %x {block_size = 3 : i64} : (tensor<2x?xbf16>) -> tensor<2x?xbf16>
  return %q : tensor<2x?xbf16>
}
func.func @kernel_error() -> tensor<2x?xbf16> {
  %x = arith.constant dense<1.0> : tensor<2x8xbf16>
  %xd = tensor.cast %x : tensor<2x8xbf16> to tensor<2x?xbf16>
  %q = func.call @quant(%xd) : (tensor<2x?xbf16>) -> tensor<2x?xbf16>
  return %q : tensor<2x?xbf16>
}

// Unbounded recursion is cut off at a fixed call depth; the call trace is kept short.
// RECURSE: error: dsa interpreter: call depth exceeds 64 entering function 'recursive'
// RECURSE-COUNT-4: remark: dsa interpreter: called from here
// RECURSE-NOT: remark
func.func @recursive() -> i64 {
  %r = func.call @recursive() : () -> i64
  return %r : i64
}

// ARGS: errors.mlir:[[@LINE+1]]:1: error: dsa-run: --entry function 'takes_args' takes 1 argument (i64), got 0 --input (one per argument, in order: --input=@FILE.npy or --input=NUMBER)
func.func @takes_args(%x: i64) -> i64 {
  return %x : i64
}

// MISSING: dsa-run: no func.func named 'missing' in the module
// NOENTRY: dsa-run: --entry=NAME is required
// NOFILE: dsa-run: {{.*}}does-not-exist
