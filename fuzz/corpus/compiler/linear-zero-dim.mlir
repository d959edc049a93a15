// Issue 12 class 4: a dsa.linear with a static zero dimension (the CPU lowering once emitted invalid IR for it).
func.func @linear_zero(%x: tensor<0x4xbf16>, %w: tensor<3x4xbf16>) -> tensor<0x3xbf16> {
  %y = dsa.linear %x, %w : (tensor<0x4xbf16>, tensor<3x4xbf16>) -> tensor<0x3xbf16>
  return %y : tensor<0x3xbf16>
}
