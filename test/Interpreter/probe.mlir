// dsa.probe on the interpreter: every executed probe is logged in execution order, probes inside callees
// included, a repeated name kept each time. A pass pipeline runs before interpretation.
// RUN: dsa-run %s --entry=main | FileCheck %s
// RUN: dsa-run %s --entry=main --pass-pipeline='builtin.module(dsa-strip-probes)' | FileCheck %s --check-prefix=STRIP
// RUN: cat %s | dsa-run - --entry=main | FileCheck %s
// RUN: not dsa-run %s --entry=main --pass-pipeline='builtin.module(no-such-pass)' 2>&1 | FileCheck %s --check-prefix=BADPIPE

// CHECK:      probe main.x: tensor<2xbf16> = [1.5, -2]
// @twice is called twice (with [1.5, -2] then [3, -4]); its probe appears each time, in call order.
// CHECK-NEXT: probe twice.in: tensor<2xbf16> = [1.5, -2]
// CHECK-NEXT: probe twice.in: tensor<2xbf16> = [3, -4]
// integer probes print integers
// CHECK-NEXT: probe main.idx: tensor<2x2xi32> = [0, -1, 7, 2147483647]
// CHECK-NEXT: probe main.mask: tensor<3xi1> = [1, 0, 1]
// @twice(x) = linear(x as [1, 2], [[2, 0], [0, 2]]) = 2x: 2*[1.5, -2] = [3, -4], then 2*[3, -4] = [6, -8].
// CHECK-NEXT: result 0: tensor<1x2xbf16> = [6, -8]
// CHECK-NOT: probe

// STRIP-NOT:  probe
// STRIP:      result 0: tensor<1x2xbf16> = [6, -8]

// BADPIPE: dsa-run: bad --pass-pipeline 'builtin.module(no-such-pass)'

func.func @twice(%x: tensor<2xbf16>) -> tensor<1x2xbf16> {
  dsa.probe "twice.in" %x : tensor<2xbf16>
  %row = tensor.expand_shape %x [[0, 1]] output_shape [1, 2] : tensor<2xbf16> into tensor<1x2xbf16>
  %w = arith.constant dense<[[2.0, 0.0], [0.0, 2.0]]> : tensor<2x2xbf16>
  %y = dsa.linear %row, %w : (tensor<1x2xbf16>, tensor<2x2xbf16>) -> tensor<1x2xbf16>
  return %y : tensor<1x2xbf16>
}

func.func @main() -> tensor<1x2xbf16> {
  %x = arith.constant dense<[1.5, -2.0]> : tensor<2xbf16>
  dsa.probe "main.x" %x : tensor<2xbf16>
  %y1 = func.call @twice(%x) : (tensor<2xbf16>) -> tensor<1x2xbf16>
  %flat = tensor.collapse_shape %y1 [[0, 1]] : tensor<1x2xbf16> into tensor<2xbf16>
  %y2 = func.call @twice(%flat) : (tensor<2xbf16>) -> tensor<1x2xbf16>
  %idx = arith.constant dense<[[0, -1], [7, 2147483647]]> : tensor<2x2xi32>
  dsa.probe "main.idx" %idx : tensor<2x2xi32>
  %mask = arith.constant dense<[true, false, true]> : tensor<3xi1>
  dsa.probe "main.mask" %mask : tensor<3xi1>
  return %y2 : tensor<1x2xbf16>
}
