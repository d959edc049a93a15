// dsa-cpu-strided-copies-to-linalg (Pipeline.cpp): a memref.copy that finalize-memref-to-llvm would lower to a call
// of the runner-utils `memrefCopy` (absent from the JIT's process and from AOT step libraries) becomes linalg.copy;
// copies it lowers to the llvm.memcpy intrinsic stay: identity layouts, and static shapes that form one contiguous
// row-major block at any offset (a sequence's [C, width] cache slice of a batched [B, C, width] cache).
// RUN: dsa-opt %s --dsa-cpu-strided-copies-to-linalg | FileCheck %s
// Lowered: the contiguous copies are memcpy intrinsics, the rewritten ones loops, no memrefCopy anywhere.
// RUN: dsa-opt %s --dsa-cpu-strided-copies-to-linalg --convert-linalg-to-loops --convert-scf-to-cf \
// RUN:   --finalize-memref-to-llvm --convert-func-to-llvm --convert-arith-to-llvm --convert-cf-to-llvm \
// RUN:   --reconcile-unrealized-casts | FileCheck %s --check-prefix=LLVM --implicit-check-not=memrefCopy

// CHECK-LABEL: func.func @identity(
// CHECK-NEXT:    memref.copy
// LLVM-LABEL: llvm.func @identity(
// LLVM:         "llvm.intr.memcpy"
func.func @identity(%a: memref<?x8xbf16>, %b: memref<?x8xbf16>) {
  memref.copy %a, %b : memref<?x8xbf16> to memref<?x8xbf16>
  return
}

// Sequence %i's rows of a batched cache, out and back: static, contiguous, dynamic offset.
// CHECK-LABEL: func.func @contiguous_slice(
// CHECK-NEXT:    memref.subview
// CHECK-NEXT:    memref.copy
// CHECK-NEXT:    memref.copy
// CHECK-NEXT:    return
// LLVM-LABEL: llvm.func @contiguous_slice(
// LLVM:         "llvm.intr.memcpy"
// LLVM:         "llvm.intr.memcpy"
// LLVM:         llvm.return
func.func @contiguous_slice(%cache: memref<?x16x8xbf16>, %i: index, %tmp: memref<16x8xbf16>) {
  %s = memref.subview %cache[%i, 0, 0] [1, 16, 8] [1, 1, 1]
      : memref<?x16x8xbf16> to memref<16x8xbf16, strided<[8, 1], offset: ?>>
  memref.copy %s, %tmp : memref<16x8xbf16, strided<[8, 1], offset: ?>> to memref<16x8xbf16>
  memref.copy %tmp, %s : memref<16x8xbf16> to memref<16x8xbf16, strided<[8, 1], offset: ?>>
  return
}

// Not one block: a column slice (rows of 4 in rows of 8), and a dynamic row count at an offset.
// CHECK-LABEL: func.func @strided(
// CHECK-NEXT:    memref.subview
// CHECK-NEXT:    linalg.copy ins(%{{.+}} : memref<16x4xbf16, strided<[8, 1], offset: ?>>) outs(%{{.+}} : memref<16x4xbf16>)
// CHECK-NEXT:    memref.subview
// CHECK-NEXT:    linalg.copy ins(%{{.+}} : memref<?x8xbf16, strided<[8, 1], offset: ?>>) outs(%{{.+}} : memref<?x8xbf16>)
// CHECK-NOT:     memref.copy
// LLVM-LABEL: llvm.func @strided(
// LLVM-NOT:     "llvm.intr.memcpy"
// LLVM:         llvm.return
func.func @strided(%m: memref<16x8xbf16>, %j: index, %tmp: memref<16x4xbf16>, %rows: memref<?x8xbf16>, %n: index) {
  %c = memref.subview %m[0, %j] [16, 4] [1, 1] : memref<16x8xbf16> to memref<16x4xbf16, strided<[8, 1], offset: ?>>
  memref.copy %c, %tmp : memref<16x4xbf16, strided<[8, 1], offset: ?>> to memref<16x4xbf16>
  %r = memref.subview %m[%j, 0] [%n, 8] [1, 1] : memref<16x8xbf16> to memref<?x8xbf16, strided<[8, 1], offset: ?>>
  memref.copy %r, %rows : memref<?x8xbf16, strided<[8, 1], offset: ?>> to memref<?x8xbf16>
  return
}
