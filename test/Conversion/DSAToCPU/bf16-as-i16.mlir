// dsa-cpu-bf16-as-i16 (last pass of --dsa-cpu-pipeline): after dsa-cpu-check-bf16 only bit moves hold bf16 values,
// and they become i16 (constants and globals keep their bits), so LLVM gets no bfloat: x86 code generation would
// otherwise turn a bf16 phi (a value carried across blocks) into an extension to f32 and __truncsfbf2 /
// vcvtneps2bf16 back (the CONTROL lines: signalling NaNs quieted, and with AVX512_BF16 bf16 denormals flushed).
// RUN: dsa-opt %s --dsa-cpu-bf16-as-i16 | FileCheck %s --implicit-check-not="bf16"
// RUN: dsa-opt %s --dsa-cpu-bf16-as-i16 | mlir-translate --mlir-to-llvmir | llc -O2 -mcpu=sapphirerapids \
// RUN:   | FileCheck %s --check-prefix=ASM --implicit-check-not="vcvtneps2bf16" --implicit-check-not="__truncsfbf2"
// RUN: dsa-opt %s --dsa-cpu-bf16-as-i16 | mlir-translate --mlir-to-llvmir | llc -O2 -mcpu=x86-64 \
// RUN:   | FileCheck %s --check-prefix=ASM --implicit-check-not="vcvtneps2bf16" --implicit-check-not="__truncsfbf2"
// RUN: mlir-translate --mlir-to-llvmir %s | llc -O2 -mcpu=sapphirerapids | FileCheck %s --check-prefix=CONTROL-BF16
// RUN: mlir-translate --mlir-to-llvmir %s | llc -O2 -mcpu=x86-64 | FileCheck %s --check-prefix=CONTROL-BASE
// The check runs first (check-bf16.mlir's second RUN line): a conversion is still an error.

// CHECK-DAG: llvm.mlir.global private constant @table(dense<[1, -16448]> : tensor<2xi16>) {addr_space = 0 : i32} : !llvm.array<2 x i16>
// CHECK-DAG: llvm.func @helper(%{{.*}}: i16) -> i16
// CHECK-LABEL: llvm.func @moves(
// CHECK: %[[A:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i16
// CHECK: llvm.mlir.constant(1 : i16) : i16
// CHECK: llvm.select %{{.*}}, %{{.*}}, %{{.*}} : i1, i16
// CHECK: llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i16
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> vector<8xi16>
// CHECK: llvm.call @helper(%{{.*}}) : (i16) -> i16
// CHECK: llvm.cond_br %{{.*}}, ^bb1(%{{.*}} : i16), ^bb1(%{{.*}} : i16)
// CHECK: ^bb1(%[[R:.*]]: i16):
// CHECK: llvm.store %[[R]], %{{.*}} : i16, !llvm.ptr
// CHECK-LABEL: llvm.func @bits(
// CHECK-SAME: %[[X:.*]]: i16
// CHECK-NEXT: llvm.return %[[X]] : i16

// ASM-LABEL: moves:
// CONTROL-BF16: vcvtneps2bf16
// CONTROL-BASE: __truncsfbf2

llvm.mlir.global private constant @table(dense<[9.183550e-41, -1.500000e+00]> : tensor<2xbf16>) : !llvm.array<2 x bf16>
llvm.func @helper(%a: bf16) -> bf16 {
  llvm.return %a : bf16
}
llvm.func @moves(%p: !llvm.ptr, %q: !llvm.ptr, %o: !llvm.ptr, %c: i1, %i: i16) {
  %0 = llvm.load %p : !llvm.ptr -> bf16
  %1 = llvm.bitcast %i : i16 to bf16
  %2 = llvm.mlir.constant(9.183550e-41 : bf16) : bf16
  %3 = llvm.select %c, %0, %1 : i1, bf16
  %k = llvm.mlir.constant(3 : i64) : i64
  %g = llvm.getelementptr %q[%k] : (!llvm.ptr, i64) -> !llvm.ptr, bf16
  %v = llvm.load %g : !llvm.ptr -> vector<8xbf16>
  %e = llvm.extractelement %v[%k : i64] : vector<8xbf16>
  llvm.store %v, %q : vector<8xbf16>, !llvm.ptr
  %4 = llvm.call @helper(%3) : (bf16) -> bf16
  llvm.cond_br %c, ^join(%4 : bf16), ^join(%e : bf16)
^join(%r: bf16):
  llvm.store %r, %o : bf16, !llvm.ptr
  llvm.store %2, %p : bf16, !llvm.ptr
  llvm.return
}
llvm.func @bits(%x: i16) -> i16 {
  %b = llvm.bitcast %x : i16 to bf16
  %y = llvm.bitcast %b : bf16 to i16
  llvm.return %y : i16
}

