// Functions with scalar and index arguments for test/Tools/run-errors.test.
func.func @scalars(%a: i64, %b: index, %c: i32, %d: i1, %e: f32) -> (i64, index, i32, i1, f32) {
  %one = arith.constant 1 : i64
  %a1 = arith.addi %a, %one : i64
  return %a1, %b, %c, %d, %e : i64, index, i32, i1, f32
}
func.func @bf16_scalar(%x: bf16) -> bf16 {
  return %x : bf16
}
func.func @index_tensor(%x: tensor<2xindex>) -> tensor<2xindex> {
  return %x : tensor<2xindex>
}
