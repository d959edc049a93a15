//===- Interpreter.h - the reference interpreter for dsa IR -------------------===//
//
// Executes a func.func of the dsa dialect (plus the upstream ops the decomposition and the tests use) on
// dsa::Tensor values, in the style of StableHLO's reference interpreter: a scope maps each SSA value to a
// Tensor, and each op is evaluated by reading its operands and attributes and calling the ONE pure evaluator of
// that op in dsa/Kernels/Kernels.h or CompressKernels.h. The math lives only there; this layer moves values,
// evaluates the upstream ops (data movement, integer index math, bf16 <-> f32 casts via dsa::numerics) and
// reports errors.
//
// Supported ops:
//   dsa:    linear, rms_norm, positions, apply_rope, act_quant_fp8, ring_update, window_kv, window_indices,
//           sparse_attn, grouped_output, probe (dsa.attention must be decomposed first: dsa-decompose-attention);
//           the compressed-attention primitives compress_pool (3 results), fp4_quant_e8m0, fp4_quant_e4m3,
//           cache_write, indexer_scores, compress_visibility, select_candidate_blocks, apply_candidates,
//           indexer_topk, each calling its evaluator in dsa/Kernels/CompressKernels.h (#dsa.tie_order<torch_cpu>
//           -> numerics::TopkTieOrder::TorchCpu).
//   func:   func (single-block body), return, call (callee looked up in the nearest symbol table; at most 64
//           nested calls).
//   scf:    for (bounds and step integer scalars of the induction variable's type, index / i64 / i32, compared
//           signed, or unsigned with `unsigned`; the step must be positive at run time, else an error naming the
//           op; the trip count is computed up front, so the induction variable never steps past the upper bound;
//           any number of iter_args, tensors or scalars; the body runs once per iteration in a fresh scope that
//           sees the enclosing values and loses its own at the iteration's end; scf.yield gives the next iter
//           values, the results are the last ones, the inits after zero trips; at most 64 loop bodies nested at
//           once, over the whole call stack). scf.yield is the loop body's terminator, not an op of its own.
//   arith:  constant (scalar int/index/float, dense tensors incl. splat), index_cast, addi, subi, muli (wrapping);
//           divsi, floordivsi, ceildivsi, remsi, maxsi, minsi, andi, ori, xori, cmpi (every predicate; unsigned
//           predicates read the bits at the type's width), elementwise on equal shapes, scalars included;
//           select (i1 scalar condition: picks a whole value, whose runtime shapes may differ; or an i1 tensor
//           condition of the operands' shape, elementwise); extf / truncf between bf16 and f32 (scalars or
//           tensors; truncf rounds to nearest, ties to even, as numerics::roundBf16; other rounding modes are
//           rejected).
//   tensor: extract (one element as a scalar of the element type: tensor<?xi64> -> i64) and insert (one element
//           replaced by a scalar), each index bounds-checked (an error names the index and the dimension);
//           dim, cast, reshape, expand_shape, collapse_shape (row-major: the data is unchanged); empty (the
//           interpreter fills it with zeros); extract_slice / insert_slice (static or dynamic offsets, sizes and
//           strides, rank-reducing / -extending, row-major; every index is bounds-checked); concat (any dim,
//           zero-sized inputs allowed); pad (static or dynamic low/high >= 0; the padding value an arith.constant
//           in the region or a value of the enclosing function).
//
// Integer semantics: values are two's complement at the type's width (index is 64-bit, i1 true is -1 when read
// as signed). Division by zero and the one overflowing quotient (the minimum value divided by -1) are errors, not
// undefined behaviour; remsi by -1 is 0.
//
// Values: tensors of bf16/f32/i1/i32/i64/index map to Tensor with ElementType BF16/F32/I1/I32/I64/Index; scalar
// SSA values (i1, i32, i64, index, bf16, f32) are rank-0 Tensors of that element type. After each op the
// interpreter checks every result against the op's declared result type (element type, rank, static dims).
//
// Errors (never a crash, never an exception): an MLIR error diagnostic at the location of the offending op (or of
// the function, for bad arguments), then failure. Messages start with "dsa interpreter: ". An op the interpreter
// does not know gives "dsa interpreter: unsupported op 'x.y'"; a kernel's dsa::Error becomes
// "dsa interpreter: 'dsa.op' failed: <kernel message>".
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_INTERPRETER_INTERPRETER_H
#define DSA_INTERPRETER_INTERPRETER_H

#include "dsa/Core/Tensor.h"
#include "dsa/Support/Result.h"

#include "llvm/ADT/ArrayRef.h"
#include "mlir/Support/LLVM.h"
#include "mlir/Support/LogicalResult.h"

#include <functional>
#include <string>
#include <vector>

namespace mlir {
class DenseElementsAttr;
class Type;
namespace func {
class FuncOp;
} // namespace func
} // namespace mlir

namespace dsa::interp {

/// One value recorded by `dsa.probe`: the probe's name and the tensor as the op's operand holds it.
struct ProbeRecord {
  std::string name;
  Tensor value;
};

/// Every probe of a run, in execution order. A name may occur many times (a function called repeatedly, or
/// probes inside a callee); all occurrences are kept.
using ProbeLog = std::vector<ProbeRecord>;

/// The interpreter's element type of an MLIR element type: bf16 -> BF16, f32 -> F32, i1 -> I1, i32 -> I32,
/// i64 -> I64, index -> Index. Any other type is an error naming it.
Result<ElementType> elementTypeFromMlir(mlir::Type type);

/// A Tensor holding a dense constant (splat or not), with the attribute's shape and element type (see
/// elementTypeFromMlir). Integer values are sign-extended (i1: 0 or 1); bf16/f32 values are exact.
/// Errors: an unsupported element type.
Result<Tensor> tensorFromAttr(mlir::DenseElementsAttr attr);

/// Checks that `value` can be an SSA value of MLIR type `type`: for a ranked tensor type, the same element type,
/// the same rank and equal static dimensions (dynamic dimensions accept any size); for a scalar type
/// (int/index/float), a rank-0 tensor of that element type. The error names `what` (e.g. "argument #2").
Status checkTensorMatchesType(const Tensor &value, mlir::Type type, const std::string &what);

/// Runs `fn` on `args` and returns the operands of its func.return, in order.
/// `args` must match the function's signature one to one (checkTensorMatchesType). `probes` (may be null) receives
/// every dsa.probe executed, including those in functions reached through func.call, appended in order.
/// On failure an error diagnostic has been emitted through fn's MLIRContext.
mlir::FailureOr<std::vector<Tensor>> interpretFunction(mlir::func::FuncOp fn, llvm::ArrayRef<Tensor> args,
                                                       ProbeLog *probes);

/// Called at every dsa.probe after it was recorded, with the probe's name and a copy of the probed value. It may
/// replace the value (returning true); the replacement must match the probed SSA value's type (element type, rank,
/// static dimensions; checked, else an error) and from then on the function reads it wherever it reads that SSA
/// value (the golden replay's --force continues with the golden's value of a capture this way).
using ProbeOverride = std::function<bool(const std::string &name, Tensor &value)>;

/// interpretFunction with `override` (may be empty) applied at every probe.
mlir::FailureOr<std::vector<Tensor>> interpretFunction(mlir::func::FuncOp fn, llvm::ArrayRef<Tensor> args,
                                                       ProbeLog *probes, const ProbeOverride &override);

/// The most scf.for iterations (all loops, nested ones counted per inner iteration) one interpretFunction call
/// runs; beyond it the call fails with an error naming the loop ("more than N scf.for iterations in one run").
/// -1 (the default): no limit. For callers that interpret untrusted IR with a time budget (the fuzz targets set
/// 100000). Process-wide; thread-safe to read while interpreting.
void setLoopIterationLimit(int64_t iterations);
int64_t loopIterationLimit();

} // namespace dsa::interp

#endif // DSA_INTERPRETER_INTERPRETER_H
