// The dsa plugin (libDSAPlugin.so, tools/dsa-plugin) in UPSTREAM mlir-opt (Debian's llvm-22 mlir-opt, not dsa-opt):
// it parses and prints dsa IR, runs dsa-decompose-attention and the whole CPU pipeline down to the LLVM dialect, and
// replays a pipeline dumped by dsa-opt, each with output identical to dsa-opt's.
//
// Parse and print (the dialect plugin alone); without it upstream mlir-opt does not know the dialect:
// RUN: %mlir_opt --load-dialect-plugin=%dsa_plugin %s > %t.upstream.mlir
// RUN: dsa-opt %s > %t.dsa.mlir
// RUN: diff %t.upstream.mlir %t.dsa.mlir
// RUN: FileCheck %s --check-prefix=PARSE < %t.upstream.mlir
// RUN: not %mlir_opt %s 2>&1 | FileCheck %s --check-prefix=NOPLUGIN
//
// A whole window-only dsa.attention layer (test/Conversion/DSAToCPU/pipeline.mlir): decomposed, then the CPU
// pipeline to the LLVM dialect (the pass plugin), each diffed with dsa-opt's:
// RUN: %mlir_opt --load-dialect-plugin=%dsa_plugin --load-pass-plugin=%dsa_plugin %S/../Conversion/DSAToCPU/pipeline.mlir \
// RUN:   --pass-pipeline='builtin.module(dsa-decompose-attention)' -o %t.upstream.dec.mlir
// RUN: dsa-opt %S/../Conversion/DSAToCPU/pipeline.mlir --dsa-decompose-attention -o %t.dsa.dec.mlir
// RUN: diff %t.upstream.dec.mlir %t.dsa.dec.mlir
// RUN: FileCheck %s --check-prefix=DECOMPOSED --implicit-check-not=dsa.attention < %t.upstream.dec.mlir
// RUN: %mlir_opt --load-dialect-plugin=%dsa_plugin --load-pass-plugin=%dsa_plugin %S/../Conversion/DSAToCPU/pipeline.mlir \
// RUN:   --pass-pipeline='builtin.module(dsa-cpu-pipeline)' -o %t.upstream.llvm.mlir
// RUN: dsa-opt %S/../Conversion/DSAToCPU/pipeline.mlir --dsa-cpu-pipeline -o %t.dsa.llvm.mlir
// RUN: diff %t.upstream.llvm.mlir %t.dsa.llvm.mlir
// RUN: FileCheck %s --check-prefix=LLVM --implicit-check-not="dsa." --implicit-check-not="func.func" \
// RUN:   --implicit-check-not="tensor." --implicit-check-not="linalg." < %t.upstream.llvm.mlir
//
// dsa-opt's dumped pipeline (every pass by its registered name, with its options) replays in upstream mlir-opt:
// RUN: dsa-opt %S/../Conversion/DSAToCPU/pipeline.mlir --dsa-cpu-pipeline="parallel=true cpu=x86-64-v3" \
// RUN:   --dump-pass-pipeline -o %t.dsa.v3.mlir 2> %t.dump
// RUN: sed -n '/^builtin.module(/,$p' %t.dump | tr '\n' ' ' | sed "s/.*/--pass-pipeline='&'/" > %t.rsp
// RUN: %mlir_opt --load-dialect-plugin=%dsa_plugin --load-pass-plugin=%dsa_plugin \
// RUN:   %S/../Conversion/DSAToCPU/pipeline.mlir @%t.rsp -o %t.upstream.v3.mlir
// RUN: diff %t.upstream.v3.mlir %t.dsa.v3.mlir

// PARSE: func.func @window_layer_step
// PARSE: dsa.rms_norm
// PARSE: dsa.linear
// NOPLUGIN: Dialect `dsa' not found for custom op 'dsa.rms_norm'
// DECOMPOSED: dsa.ring_update
// DECOMPOSED: dsa.sparse_attn
// LLVM: llvm.func

func.func @window_layer_step(%x: tensor<?x64xbf16>, %w: tensor<64xbf16>, %wq: tensor<32x64xbf16>)
    -> tensor<?x32xbf16> {
  %n = dsa.rms_norm %x, %w {eps = 1.0e-06 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  %q = dsa.linear %n, %wq : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  return %q : tensor<?x32xbf16>
}
