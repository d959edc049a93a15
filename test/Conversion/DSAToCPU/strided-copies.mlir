// dsa-cpu-strided-copies-to-linalg (Pipeline.cpp): a memref.copy that finalize-memref-to-llvm would lower to a call
// of the runner-utils `memrefCopy` (absent from the JIT's process and from AOT step libraries) becomes linalg.copy;
// copies it lowers to the llvm.memcpy intrinsic stay: identity layouts, and static shapes that form one contiguous
// row-major block at any offset (a sequence's [C, width] cache slice of a batched [B, C, width] cache). Copies whose
// rows are each contiguous (dynamic row counts, rows apart) become a loop of one constant-size memcpy per row, one
// loop per leading dimension when only the trailing ones form contiguous blocks.
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

// Not one block: a column slice (rows of 4 in rows of 8), and a dynamic row count at an offset. Each row is one
// contiguous block: a loop over the rows, one static memref.copy (a constant-size memcpy) per row.
// CHECK-LABEL: func.func @strided(
// CHECK:         %[[C:.+]] = memref.subview %{{.+}}[0, %{{.+}}] [16, 4] [1, 1]
// CHECK:         scf.for %[[R:.+]] = %{{.+}} to %{{.+}} step
// CHECK-NEXT:      %[[FROM:.+]] = memref.subview %[[C]][%[[R]], 0] [1, 4] [1, 1] : memref<16x4xbf16, strided<[8, 1], offset: ?>> to memref<4xbf16, strided<[1], offset: ?>>
// CHECK-NEXT:      %[[TO:.+]] = memref.subview %{{.+}}[%[[R]], 0] [1, 4] [1, 1] : memref<16x4xbf16> to memref<4xbf16, strided<[1], offset: ?>>
// CHECK-NEXT:      memref.copy %[[FROM]], %[[TO]]
// CHECK:         %[[ROWS:.+]] = memref.subview %{{.+}}[%{{.+}}, 0] [%{{.+}}, 8] [1, 1]
// CHECK:         %[[N:.+]] = memref.dim %[[ROWS]], %{{.+}} : memref<?x8xbf16, strided<[8, 1], offset: ?>>
// CHECK:         scf.for %[[R2:.+]] = %{{.+}} to %[[N]] step
// CHECK-NEXT:      %[[FROM2:.+]] = memref.subview %[[ROWS]][%[[R2]], 0] [1, 8] [1, 1]
// CHECK-NEXT:      %[[TO2:.+]] = memref.subview %{{.+}}[%[[R2]], 0] [1, 8] [1, 1] : memref<?x8xbf16> to memref<8xbf16, strided<[1], offset: ?>>
// CHECK-NEXT:      memref.copy %[[FROM2]], %[[TO2]]
// CHECK-NOT:     linalg.copy
// LLVM-LABEL: llvm.func @strided(
// LLVM:         "llvm.intr.memcpy"
// LLVM:         "llvm.intr.memcpy"
// LLVM:         llvm.return
func.func @strided(%m: memref<16x8xbf16>, %j: index, %tmp: memref<16x4xbf16>, %rows: memref<?x8xbf16>, %n: index) {
  %c = memref.subview %m[0, %j] [16, 4] [1, 1] : memref<16x8xbf16> to memref<16x4xbf16, strided<[8, 1], offset: ?>>
  memref.copy %c, %tmp : memref<16x4xbf16, strided<[8, 1], offset: ?>> to memref<16x4xbf16>
  %r = memref.subview %m[%j, 0] [%n, 8] [1, 1] : memref<16x8xbf16> to memref<?x8xbf16, strided<[8, 1], offset: ?>>
  memref.copy %r, %rows : memref<?x8xbf16, strided<[8, 1], offset: ?>> to memref<?x8xbf16>
  return
}

// A batched slot [B, rows, 128] (both dynamic) copied into the first rows of each sequence's slice of its padded
// copy [B, rows + extra, 128]: only the 128-element rows are contiguous on both sides, so one loop per leading
// dimension and one 256-byte memcpy per row (a linalg.copy here was an element-wise 3-D loop, and with
// parallel=true a collapsed OpenMP loop with an index division per element).
// CHECK-LABEL: func.func @batched_slot(
// CHECK-SAME:    %[[IN:[a-z0-9]+]]: memref<?x?x128xbf16>
// CHECK:         %[[SUB:.+]] = memref.subview
// CHECK:         %[[B:.+]] = memref.dim %[[IN]], %{{.+}} : memref<?x?x128xbf16>
// CHECK:         scf.for %[[S:.+]] = %{{.+}} to %[[B]] step
// CHECK:           %[[ROWS:.+]] = memref.dim %[[IN]], %{{.+}} : memref<?x?x128xbf16>
// CHECK:           scf.for %[[R:.+]] = %{{.+}} to %[[ROWS]] step
// CHECK-NEXT:        %[[FROM:.+]] = memref.subview %[[IN]][%[[S]], %[[R]], 0] [1, 1, 128] [1, 1, 1] : memref<?x?x128xbf16> to memref<128xbf16, strided<[1], offset: ?>>
// CHECK-NEXT:        %[[TO:.+]] = memref.subview %[[SUB]][%[[S]], %[[R]], 0] [1, 1, 128] [1, 1, 1] : memref<?x?x128xbf16, strided<[?, 128, 1]>> to memref<128xbf16, strided<[1], offset: ?>>
// CHECK-NEXT:        memref.copy %[[FROM]], %[[TO]]
// CHECK-NOT:     linalg.copy
// LLVM-LABEL: llvm.func @batched_slot(
// LLVM:         "llvm.intr.memcpy"
// LLVM:         llvm.return
func.func @batched_slot(%in: memref<?x?x128xbf16>, %padded: memref<?x?x128xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = memref.dim %in, %c0 : memref<?x?x128xbf16>
  %rows = memref.dim %in, %c1 : memref<?x?x128xbf16>
  %sub = memref.subview %padded[0, 0, 0] [%b, %rows, 128] [1, 1, 1]
      : memref<?x?x128xbf16> to memref<?x?x128xbf16, strided<[?, 128, 1]>>
  memref.copy %in, %sub : memref<?x?x128xbf16> to memref<?x?x128xbf16, strided<[?, 128, 1]>>
  return
}

// Rows that are not contiguous (a strided inner dimension), a dynamic row width and rank 1 at an offset: linalg.copy.
// CHECK-LABEL: func.func @not_rows(
// CHECK-NEXT:    memref.subview
// CHECK-NEXT:    linalg.copy ins(%{{.+}} : memref<8x4xbf16, strided<[8, 2]>>) outs(%{{.+}} : memref<8x4xbf16>)
// CHECK-NEXT:    linalg.copy ins(%{{.+}} : memref<4x?xbf16, strided<[?, 1], offset: ?>>) outs(%{{.+}} : memref<4x?xbf16>)
// CHECK-NEXT:    linalg.copy ins(%{{.+}} : memref<?xbf16, strided<[1], offset: ?>>) outs(%{{.+}} : memref<?xbf16>)
// CHECK-NOT:     memref.copy
// LLVM-LABEL: llvm.func @not_rows(
// LLVM-NOT:     "llvm.intr.memcpy"
// LLVM:         llvm.return
func.func @not_rows(%m: memref<8x8xbf16>, %t: memref<8x4xbf16>, %w: memref<4x?xbf16, strided<[?, 1], offset: ?>>,
                    %u: memref<4x?xbf16>, %v: memref<?xbf16, strided<[1], offset: ?>>, %z: memref<?xbf16>) {
  %s = memref.subview %m[0, 0] [8, 4] [1, 2] : memref<8x8xbf16> to memref<8x4xbf16, strided<[8, 2]>>
  memref.copy %s, %t : memref<8x4xbf16, strided<[8, 2]>> to memref<8x4xbf16>
  memref.copy %w, %u : memref<4x?xbf16, strided<[?, 1], offset: ?>> to memref<4x?xbf16>
  memref.copy %v, %z : memref<?xbf16, strided<[1], offset: ?>> to memref<?xbf16>
  return
}
