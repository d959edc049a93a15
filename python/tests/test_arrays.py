"""numpy <-> dsa tensors through the interpreter: every element type round trips bit for bit (bf16 through
ml_dtypes), and a dtype dsa does not have is an error naming the argument."""
import ml_dtypes
import numpy as np
import pytest

import dsa

IDENTITY = """
func.func @id(%a: tensor<2x3x{t}>) -> tensor<2x3x{t}> {{
  return %a : tensor<2x3x{t}>
}}
"""


@pytest.mark.parametrize("mlir,array", [
    ("bf16", np.array([[1.0, -2.5, 3.140625], [0.0, -0.0, 1e30]], dtype=ml_dtypes.bfloat16)),
    ("f32", np.array([[1.0, -2.5, 3.14159], [0.0, -0.0, 1e-40]], dtype=np.float32)),
    ("i1", np.array([[True, False, True], [False, False, True]])),
    ("i32", np.array([[1, -2, 2**31 - 1], [0, -2**31, 7]], dtype=np.int32)),
    ("i64", np.array([[1, -2, 2**62], [0, -2**63, 7]], dtype=np.int64)),
])
def test_round_trip(mlir, array):
    m = dsa.compiler.parse(IDENTITY.format(t=mlir))
    [out] = dsa.interpreter.run(m, "id", [array])
    assert out.dtype == array.dtype
    assert out.shape == array.shape
    assert out.tobytes() == array.tobytes()


def test_bf16_special_values_keep_their_bits():
    bits = np.array([0x7F80, 0xFF80, 0x0001, 0x8000, 0x3F80, 0x7F7F], dtype=np.uint16)  # inf, -inf, subnormal, ...
    m = dsa.compiler.parse(IDENTITY.format(t="bf16").replace("2x3", "6"))
    [out] = dsa.interpreter.run(m, "id", [bits.view(ml_dtypes.bfloat16)])
    assert np.array_equal(out.view(np.uint16), bits)


def test_unsupported_dtype_names_the_argument():
    m = dsa.compiler.parse(IDENTITY.format(t="f32"))
    with pytest.raises(dsa.Error, match=r"args\[0\]: numpy dtype float64"):
        dsa.interpreter.run(m, "id", [np.zeros((2, 3))])


def test_wrong_shape_is_the_interpreters_error():
    m = dsa.compiler.parse(IDENTITY.format(t="f32"))
    with pytest.raises(dsa.Error, match="argument #0"):
        dsa.interpreter.run(m, "id", [np.zeros((3, 3), np.float32)])


def test_scalars_and_unknown_function():
    m = dsa.compiler.parse("""
func.func @add(%a: i64, %b: index) -> i64 {
  %c = arith.index_cast %b : index to i64
  %s = arith.addi %a, %c : i64
  return %s : i64
}""")
    [s] = dsa.interpreter.run(m, "add", [40, 2])
    assert s.dtype == np.int64 and s.shape == () and int(s) == 42
    with pytest.raises(dsa.Error, match=r"function: the module has no function @nope \(it has: add\)"):
        dsa.interpreter.run(m, "nope", [1, 2])
    with pytest.raises(dsa.Error, match="args: 1 given, @add takes 2"):
        dsa.interpreter.run(m, "add", [1])
