//===- Interpreter.cpp - function driver, op dispatcher, dsa ops -------------===//
//
// StableHLO-style reference interpreter: a Frame maps SSA values to Tensors; ops of a single-block function body
// run in order (runBlock; an scf.for body runs the same way, once per iteration in a fresh Frame whose parent is the
// enclosing one); each op's operands are looked up, the op is evaluated (dsa ops here, by their kernel in Kernels.h
// or CompressKernels.h; upstream ops in UpstreamOps.cpp: func.call, scf.for, data movement, integer index math,
// bf16 <-> f32 casts), and its results are checked against the op's result types and bound in the frame. See
// Interpreter.h for the supported ops and the error contract, Evaluator.h for how the two files share the evaluator.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "Evaluator.h"

#include <atomic>

using namespace mlir;

namespace dsa::interp {
namespace detail {

//===- Function driver --------------------------------------------------------------------------------------===//

OpResults Evaluator::callFunction(func::FuncOp fn, ArrayRef<Tensor> args) {
  std::string fnName = "function '" + fn.getSymName().str() + "'";
  if (fn.isExternal())
    return fn.emitError() << "dsa interpreter: " << fnName << " has no body";
  Region &body = fn.getBody();
  if (!body.hasOneBlock())
    return fn.emitError() << "dsa interpreter: " << fnName << " has " << body.getBlocks().size()
                          << " blocks; only single-block bodies are supported";
  Block &block = body.front();
  if (args.size() != block.getNumArguments())
    return fn.emitError() << "dsa interpreter: " << fnName << " takes " << block.getNumArguments()
                          << " arguments, got " << args.size();
  if (depth_ >= kMaxCallDepth)
    return fn.emitError() << "dsa interpreter: call depth exceeds " << kMaxCallDepth << " entering " << fnName
                          << " (unbounded recursion?)";

  Frame frame; // no parent: a function body sees only its arguments and its own values
  for (auto [i, arg] : llvm::enumerate(block.getArguments())) {
    Status check = checkTensorMatchesType(args[i], arg.getType(), "argument #" + std::to_string(i));
    if (!check.ok())
      return fn.emitError() << "dsa interpreter: " << fnName << ": " << check.error();
    frame.values[arg] = args[i];
  }

  ++depth_;
  struct DepthGuard {
    unsigned &depth;
    ~DepthGuard() { --depth; }
  } guard{depth_};
  if (block.empty() || !isa<func::ReturnOp>(block.back()))
    return fn.emitError() << "dsa interpreter: " << fnName << " ends without func.return";
  return runBlock(block, frame);
}

OpResults Evaluator::runBlock(Block &block, Frame &frame) {
  struct FrameGuard {
    Frame *&current;
    Frame *saved;
    ~FrameGuard() { current = saved; }
  } guard{frame_, frame_};
  frame_ = &frame;

  for (Operation &op : block) {
    std::vector<Tensor *> in;
    in.reserve(op.getNumOperands());
    for (auto [i, operand] : llvm::enumerate(op.getOperands())) {
      Tensor *value = frame.lookup(operand);
      if (!value)
        return opError(&op) << "operand #" << i << " has no value in the interpreter's scope";
      in.push_back(value);
    }

    if (isa<func::ReturnOp, scf::YieldOp>(op)) {
      // The block's own values die with its frame: move them out (unless the terminator returns one twice);
      // values of an enclosing frame are copied.
      std::vector<Tensor> results;
      for (auto [i, operand] : llvm::enumerate(op.getOperands())) {
        bool own = frame.values.count(operand) && !llvm::is_contained(op.getOperands().drop_front(i + 1), operand);
        results.push_back(own ? std::move(*in[i]) : *in[i]);
      }
      return results;
    }

    OpResults results = evalOp(&op, Operands(in.data(), in.size()));
    if (failed(results))
      return failure();
    if (results->size() != op.getNumResults())
      return opError(&op) << "produced " << results->size() << " results, expected " << op.getNumResults();
    for (auto [i, result] : llvm::enumerate(op.getResults())) {
      Status check = checkTensorMatchesType((*results)[i], result.getType(), "result #" + std::to_string(i));
      if (!check.ok())
        return opError(&op) << check.error();
      frame.values[result] = std::move((*results)[i]);
    }
    if (auto probe = dyn_cast<mlir::dsa::ProbeOp>(op); probe && override_ && *override_) {
      // The replacement goes to the frame that holds the probed value (an enclosing one for a value defined
      // outside a loop body), so every later read of that SSA value sees it.
      Value probed = probe.getValue();
      Tensor *held = frame.lookup(probed);
      Tensor value = *held;
      if ((*override_)(probe.getName().str(), value)) {
        Status check = checkTensorMatchesType(value, probed.getType(), "the override of the probed value");
        if (!check.ok())
          return opError(&op) << check.error();
        *held = std::move(value);
      }
    }
  }
  return opError(block.getParentOp()) << "body ends without a terminator";
}

OpResults Evaluator::evalOp(Operation *op, Operands in) {
  return llvm::TypeSwitch<Operation *, OpResults>(op)
      .Case<func::CallOp, scf::ForOp, arith::ConstantOp, arith::IndexCastOp, arith::CmpIOp, arith::SelectOp,
            arith::ExtFOp, arith::TruncFOp, tensor::DimOp, tensor::CastOp, tensor::ReshapeOp, tensor::ExpandShapeOp,
            tensor::CollapseShapeOp, tensor::EmptyOp, tensor::ExtractOp, tensor::InsertOp, tensor::ExtractSliceOp,
            tensor::InsertSliceOp, tensor::ConcatOp, tensor::PadOp>([&](auto concrete) { return eval(concrete, in); })
      .Case<mlir::dsa::LinearOp, mlir::dsa::RmsNormOp, mlir::dsa::PositionsOp, mlir::dsa::ApplyRopeOp,
            mlir::dsa::ActQuantFp8Op, mlir::dsa::RingUpdateOp, mlir::dsa::WindowKvOp, mlir::dsa::WindowIndicesOp,
            mlir::dsa::SparseAttnOp, mlir::dsa::GroupedOutputOp, mlir::dsa::ProbeOp, mlir::dsa::CompressPoolOp,
            mlir::dsa::Fp4QuantE8M0Op, mlir::dsa::Fp4QuantE4M3Op, mlir::dsa::CacheWriteOp,
            mlir::dsa::IndexerScoresOp, mlir::dsa::CompressVisibilityOp, mlir::dsa::SelectCandidateBlocksOp,
            mlir::dsa::ApplyCandidatesOp, mlir::dsa::IndexerTopkOp>([&](auto concrete) { return eval(concrete, in); })
      .Case<arith::AddIOp>([&](arith::AddIOp add) {
        return evalIntBinary(add, in, [](uint64_t a, uint64_t b) { return a + b; });
      })
      .Case<arith::SubIOp>([&](arith::SubIOp sub) {
        return evalIntBinary(sub, in, [](uint64_t a, uint64_t b) { return a - b; });
      })
      .Case<arith::MulIOp>([&](arith::MulIOp mul) {
        return evalIntBinary(mul, in, [](uint64_t a, uint64_t b) { return a * b; });
      })
      .Case<arith::AndIOp>([&](arith::AndIOp andi) {
        return evalIntBinary(andi, in, [](uint64_t a, uint64_t b) { return a & b; });
      })
      .Case<arith::OrIOp>([&](arith::OrIOp ori) {
        return evalIntBinary(ori, in, [](uint64_t a, uint64_t b) { return a | b; });
      })
      .Case<arith::XOrIOp>([&](arith::XOrIOp xori) {
        return evalIntBinary(xori, in, [](uint64_t a, uint64_t b) { return a ^ b; });
      })
      .Case<arith::MaxSIOp>([&](arith::MaxSIOp max) {
        return evalSignedBinary(max, in, [](int64_t a, int64_t b, int64_t) -> Result<int64_t> {
          return std::max(a, b);
        });
      })
      .Case<arith::MinSIOp>([&](arith::MinSIOp min) {
        return evalSignedBinary(min, in, [](int64_t a, int64_t b, int64_t) -> Result<int64_t> {
          return std::min(a, b);
        });
      })
      .Case<arith::DivSIOp>([&](arith::DivSIOp div) {
        return evalSignedBinary(div, in, [](int64_t a, int64_t b, int64_t minValue) -> Result<int64_t> {
          if (b == 0)
            return makeError("division by zero");
          if (a == minValue && b == -1)
            return makeError("signed division overflow (the minimum value divided by -1)");
          return a / b;
        });
      })
      .Case<arith::FloorDivSIOp>([&](arith::FloorDivSIOp div) {
        return evalSignedBinary(div, in, [](int64_t a, int64_t b, int64_t minValue) -> Result<int64_t> {
          if (b == 0)
            return makeError("division by zero");
          if (a == minValue && b == -1)
            return makeError("signed division overflow (the minimum value divided by -1)");
          int64_t q = a / b;
          return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
        });
      })
      .Case<arith::CeilDivSIOp>([&](arith::CeilDivSIOp div) {
        return evalSignedBinary(div, in, [](int64_t a, int64_t b, int64_t minValue) -> Result<int64_t> {
          if (b == 0)
            return makeError("division by zero");
          if (a == minValue && b == -1)
            return makeError("signed division overflow (the minimum value divided by -1)");
          int64_t q = a / b;
          return (a % b != 0 && ((a < 0) == (b < 0))) ? q + 1 : q;
        });
      })
      .Case<arith::RemSIOp>([&](arith::RemSIOp rem) {
        return evalSignedBinary(rem, in, [](int64_t a, int64_t b, int64_t) -> Result<int64_t> {
          if (b == 0)
            return makeError("division by zero");
          return b == -1 ? 0 : a % b; // b == -1: 0 without the trap of INT64_MIN % -1
        });
      })
      .Case<mlir::dsa::AttentionOp>([&](mlir::dsa::AttentionOp attention) -> OpResults {
        InFlightDiagnostic diag = attention.emitError()
                                  << "dsa interpreter: unsupported op '" << op->getName() << "'";
        diag.attachNote() << "decompose it first, e.g. --pass-pipeline='builtin.module(dsa-decompose-attention)'";
        return diag;
      })
      .Default([&](Operation *other) -> OpResults {
        return other->emitError() << "dsa interpreter: unsupported op '" << other->getName() << "'";
      });
}

OpResults Evaluator::kernel(Operation *op, Result<Tensor> result) {
  if (!result.ok())
    return opError(op) << "failed: " << result.error();
  return single(result.take());
}


//===- dsa --------------------------------------------------------------------------------------------------===//

OpResults Evaluator::eval(mlir::dsa::LinearOp op, Operands in) { return kernel(op, kernels::linear(*in[0], *in[1])); }

OpResults Evaluator::eval(mlir::dsa::RmsNormOp op, Operands in) {
  float eps = static_cast<float>(op.getEpsAttr().getValueAsDouble());
  return kernel(op, kernels::rmsNorm(*in[0], *in[1], eps));
}

OpResults Evaluator::eval(mlir::dsa::PositionsOp op, Operands in) {
  FailureOr<int64_t> start = scalarInt(op, in, 0);
  FailureOr<int64_t> count = scalarInt(op, in, 1);
  if (failed(start) || failed(count))
    return failure();
  return kernel(op, kernels::positions(*start, *count, op.getStrideAttr().getInt()));
}

OpResults Evaluator::eval(mlir::dsa::ApplyRopeOp op, Operands in) {
  mlir::dsa::RopeAttr rope = op.getRope();
  RopeParams params = mlir::dsa::ropeParams(rope);
  return kernel(op, kernels::applyRope(*in[0], *in[1], params, op.getInverse()));
}

OpResults Evaluator::eval(mlir::dsa::ActQuantFp8Op op, Operands in) {
  return kernel(op, kernels::actQuantFp8(*in[0], op.getBlockSizeAttr().getInt()));
}

OpResults Evaluator::eval(mlir::dsa::RingUpdateOp op, Operands in) {
  FailureOr<int64_t> startPos = scalarInt(op, in, 2);
  if (failed(startPos))
    return failure();
  return kernel(op, kernels::ringUpdate(*in[0], *in[1], *startPos));
}

OpResults Evaluator::eval(mlir::dsa::WindowKvOp op, Operands in) {
  FailureOr<int64_t> startPos = scalarInt(op, in, 2);
  if (failed(startPos))
    return failure();
  return kernel(op, kernels::windowKv(*in[0], *in[1], *startPos));
}

OpResults Evaluator::eval(mlir::dsa::WindowIndicesOp op, Operands in) {
  FailureOr<int64_t> startPos = scalarInt(op, in, 0);
  FailureOr<int64_t> count = scalarInt(op, in, 1);
  if (failed(startPos) || failed(count))
    return failure();
  return kernel(op, kernels::windowIndices(*startPos, *count, op.getWindowSizeAttr().getInt()));
}

OpResults Evaluator::eval(mlir::dsa::SparseAttnOp op, Operands in) {
  float scale = static_cast<float>(op.getScaleAttr().getValueAsDouble());
  return kernel(op, kernels::sparseAttn(*in[0], *in[1], *in[2], *in[3], scale));
}

OpResults Evaluator::eval(mlir::dsa::GroupedOutputOp op, Operands in) {
  return kernel(op, kernels::groupedOutput(*in[0], *in[1], op.getGroupsAttr().getInt()));
}

OpResults Evaluator::eval(mlir::dsa::ProbeOp op, Operands in) {
  if (probes_)
    probes_->push_back(ProbeRecord{op.getName().str(), *in[0]});
  return std::vector<Tensor>{};
}

OpResults Evaluator::eval(mlir::dsa::CompressPoolOp op, Operands in) {
  FailureOr<int64_t> startPos = scalarInt(op, in, 4);
  if (failed(startPos))
    return failure();
  Result<kernels::CompressPoolResult> pooled =
      kernels::compressPool(*in[0], *in[1], *in[2], *in[3], *startPos, op.getRatioAttr().getInt());
  if (!pooled.ok())
    return opError(op) << "failed: " << pooled.error();
  std::vector<Tensor> results;
  results.push_back(std::move(pooled->pooled));
  results.push_back(std::move(pooled->kvState));
  results.push_back(std::move(pooled->scoreState));
  return results;
}

OpResults Evaluator::eval(mlir::dsa::Fp4QuantE8M0Op op, Operands in) {
  return kernel(op, kernels::fp4QuantE8M0(*in[0], op.getBlockSizeAttr().getInt()));
}

OpResults Evaluator::eval(mlir::dsa::Fp4QuantE4M3Op op, Operands in) {
  return kernel(op, kernels::fp4QuantE4M3(*in[0], op.getBlockSizeAttr().getInt()));
}

OpResults Evaluator::eval(mlir::dsa::CacheWriteOp op, Operands in) {
  FailureOr<int64_t> startPos = scalarInt(op, in, 2);
  if (failed(startPos))
    return failure();
  return kernel(op, kernels::cacheWrite(*in[0], *in[1], *startPos, op.getRatioAttr().getInt()));
}

OpResults Evaluator::eval(mlir::dsa::IndexerScoresOp op, Operands in) {
  FailureOr<int64_t> startPos = scalarInt(op, in, 3);
  if (failed(startPos))
    return failure();
  // An f32 attribute: the conversion from double is exact.
  float weightScale = static_cast<float>(op.getWeightScaleAttr().getValueAsDouble());
  const Tensor *entryKeys = op.getEntryKeys() ? in[4] : nullptr;
  return kernel(op, kernels::indexerScores(*in[0], *in[1], *in[2], *startPos, op.getRatioAttr().getInt(), weightScale,
                                           entryKeys));
}

OpResults Evaluator::eval(mlir::dsa::CompressVisibilityOp op, Operands in) {
  FailureOr<int64_t> startPos = scalarInt(op, in, 1);
  if (failed(startPos))
    return failure();
  return kernel(op, kernels::compressVisibility(*in[0], *startPos, op.getRatioAttr().getInt()));
}

OpResults Evaluator::eval(mlir::dsa::SelectCandidateBlocksOp op, Operands in) {
  FailureOr<int64_t> startPos = scalarInt(op, in, 1);
  if (failed(startPos))
    return failure();
  FailureOr<numerics::TopkTieOrder> order = tieOrderOf(op, op.getTieOrderAttr().getValue());
  if (failed(order))
    return failure();
  return kernel(op, kernels::selectCandidateBlocks(*in[0], *startPos, op.getRatioAttr().getInt(),
                                          op.getTopkBlocksAttr().getInt(), op.getBlockSizeAttr().getInt(), *order));
}

OpResults Evaluator::eval(mlir::dsa::ApplyCandidatesOp op, Operands in) {
  return kernel(op, kernels::applyCandidates(*in[0], *in[1]));
}

OpResults Evaluator::eval(mlir::dsa::IndexerTopkOp op, Operands in) {
  FailureOr<int64_t> startPos = scalarInt(op, in, 1);
  if (failed(startPos))
    return failure();
  FailureOr<numerics::TopkTieOrder> order = tieOrderOf(op, op.getTieOrderAttr().getValue());
  if (failed(order))
    return failure();
  return kernel(op, kernels::indexerTopk(*in[0], *startPos, op.getRatioAttr().getInt(), op.getIndexTopkAttr().getInt(),
                                op.getWindowSizeAttr().getInt(), *order));
}


} // namespace detail


FailureOr<std::vector<Tensor>> interpretFunction(func::FuncOp fn, ArrayRef<Tensor> args, ProbeLog *probes) {
  detail::Evaluator interpreter(probes);
  return interpreter.callFunction(fn, args);
}

FailureOr<std::vector<Tensor>> interpretFunction(func::FuncOp fn, ArrayRef<Tensor> args, ProbeLog *probes,
                                                 const ProbeOverride &override) {
  detail::Evaluator interpreter(probes, &override);
  return interpreter.callFunction(fn, args);
}

namespace {
std::atomic<int64_t> gLoopIterationLimit{-1};
} // namespace

void setLoopIterationLimit(int64_t iterations) { gLoopIterationLimit.store(iterations < 0 ? -1 : iterations); }
int64_t loopIterationLimit() { return gLoopIterationLimit.load(); }

} // namespace dsa::interp
