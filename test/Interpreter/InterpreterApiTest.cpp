//===- InterpreterApiTest.cpp - interpretFunction / conversion API tests ------===//
//
// Expected values are written by hand; diagnostics are captured and matched by their text.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Interpreter/Interpreter.h"

#include "dsa/Dialect/DSA/IR/DSADialect.h"
#include "dsa/Dialect/DSA/IR/DSAOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace mlir;
namespace interp = ::dsa::interp;

namespace {

class InterpreterApiTest : public ::testing::Test {
protected:
  InterpreterApiTest() {
    DialectRegistry registry;
    registry.insert<mlir::dsa::DSADialect, func::FuncDialect, arith::ArithDialect, scf::SCFDialect,
                    tensor::TensorDialect>();
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    context.printOpOnDiagnostic(false);
    handler = std::make_unique<ScopedDiagnosticHandler>(&context, [this](Diagnostic &diag) {
      diagnostics.push_back(diag.str());
      return success();
    });
  }

  func::FuncOp parse(const char *source, const char *name) {
    module = parseSourceString<ModuleOp>(source, &context);
    if (!module)
      return nullptr;
    return module->lookupSymbol<func::FuncOp>(name);
  }

  std::string allDiagnostics() const {
    std::string text;
    for (const std::string &d : diagnostics)
      text += d + "\n";
    return text;
  }

  MLIRContext context;
  std::unique_ptr<ScopedDiagnosticHandler> handler;
  std::vector<std::string> diagnostics;
  OwningOpRef<ModuleOp> module;
};

const char *kScaleModule = R"mlir(
func.func @f(%x: tensor<?x2xbf16>, %n: i64) -> (tensor<?x2xbf16>, i64) {
  dsa.probe "f.x" %x : tensor<?x2xbf16>
  %w = arith.constant dense<[[2.0, 0.0], [0.0, 0.5]]> : tensor<2x2xbf16>
  %y = dsa.linear %x, %w : (tensor<?x2xbf16>, tensor<2x2xbf16>) -> tensor<?x2xbf16>
  %one = arith.constant 1 : i64
  %m = arith.addi %n, %one : i64
  return %y, %m : tensor<?x2xbf16>, i64
}
func.func private @external(%x: i64) -> i64
)mlir";

TEST_F(InterpreterApiTest, RunsWithArgumentsAndLogsProbes) {
  func::FuncOp fn = parse(kScaleModule, "f");
  ASSERT_TRUE(fn) << allDiagnostics();
  // x = [[1, 2], [3, -4], [0.25, 8]] (3 rows for the dynamic dim); y = [2*x0, 0.5*x1] per row.
  ::dsa::Tensor x = ::dsa::Tensor::fromFloats(::dsa::ElementType::BF16, {3, 2}, {1, 2, 3, -4, 0.25f, 8});
  interp::ProbeLog probes;
  FailureOr<std::vector<::dsa::Tensor>> results =
      interp::interpretFunction(fn, {x, ::dsa::Tensor::scalarI64(41)}, &probes);
  ASSERT_TRUE(succeeded(results)) << allDiagnostics();
  ASSERT_EQ(results->size(), 2u);
  const ::dsa::Tensor &y = (*results)[0];
  EXPECT_EQ(y.elementType(), ::dsa::ElementType::BF16);
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(y.floatVector(), (std::vector<float>{2, 1, 6, -2, 0.5f, 4}));
  EXPECT_EQ((*results)[1].elementType(), ::dsa::ElementType::I64);
  EXPECT_EQ((*results)[1].rank(), 0);
  EXPECT_EQ((*results)[1].scalarInt(), 42);
  ASSERT_EQ(probes.size(), 1u);
  EXPECT_EQ(probes[0].name, "f.x");
  EXPECT_EQ(probes[0].value.floatVector(), x.floatVector());

  // A null probe log is allowed.
  EXPECT_TRUE(succeeded(interp::interpretFunction(fn, {x, ::dsa::Tensor::scalarI64(0)}, nullptr)));
  EXPECT_TRUE(diagnostics.empty()) << allDiagnostics();
}

TEST_F(InterpreterApiTest, ProbeOverrideReplacesTheProbedValue) {
  func::FuncOp fn = parse(kScaleModule, "f");
  ASSERT_TRUE(fn) << allDiagnostics();
  ::dsa::Tensor x = ::dsa::Tensor::fromFloats(::dsa::ElementType::BF16, {1, 2}, {1, 2});
  interp::ProbeLog probes;
  std::vector<std::string> seen;
  // The probe "f.x" is replaced by [[3, 4]]: the linear after it reads the replacement, y = [6, 2].
  interp::ProbeOverride force = [&](const std::string &name, ::dsa::Tensor &value) {
    seen.push_back(name);
    value = ::dsa::Tensor::fromFloats(::dsa::ElementType::BF16, {1, 2}, {3, 4});
    return true;
  };
  FailureOr<std::vector<::dsa::Tensor>> results =
      interp::interpretFunction(fn, {x, ::dsa::Tensor::scalarI64(0)}, &probes, force);
  ASSERT_TRUE(succeeded(results)) << allDiagnostics();
  EXPECT_EQ((*results)[0].floatVector(), (std::vector<float>{6, 2}));
  EXPECT_EQ(seen, (std::vector<std::string>{"f.x"}));
  ASSERT_EQ(probes.size(), 1u);
  EXPECT_EQ(probes[0].value.floatVector(), x.floatVector()); // the log has the computed value
  // Declining (false) changes nothing; an empty override is allowed.
  results = interp::interpretFunction(fn, {x, ::dsa::Tensor::scalarI64(0)}, nullptr,
                                      [](const std::string &, ::dsa::Tensor &) { return false; });
  ASSERT_TRUE(succeeded(results));
  EXPECT_EQ((*results)[0].floatVector(), (std::vector<float>{2, 1}));
  EXPECT_TRUE(succeeded(interp::interpretFunction(fn, {x, ::dsa::Tensor::scalarI64(0)}, nullptr,
                                                  interp::ProbeOverride{})));
  EXPECT_TRUE(diagnostics.empty()) << allDiagnostics();
  // A replacement of another type is an error.
  interp::ProbeOverride wrong = [](const std::string &, ::dsa::Tensor &value) {
    value = ::dsa::Tensor::fromFloats(::dsa::ElementType::F32, {1, 2}, {3, 4});
    return true;
  };
  EXPECT_TRUE(failed(interp::interpretFunction(fn, {x, ::dsa::Tensor::scalarI64(0)}, nullptr, wrong)));
  EXPECT_NE(allDiagnostics().find("the override of the probed value"), std::string::npos) << allDiagnostics();
}

// A loop whose body probes its iter_arg %a and the function's argument %w, then adds %w to %a.
const char *kLoopModule = R"mlir(
func.func @loop(%w: tensor<2xi64>, %n: index) -> (tensor<2xi64>, i64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0 : i64
  %acc0 = arith.constant dense<0> : tensor<2xi64>
  %acc, %last = scf.for %i = %c0 to %n step %c1 iter_args(%a = %acc0, %l = %zero) -> (tensor<2xi64>, i64) {
    dsa.probe "loop.a" %a : tensor<2xi64>
    dsa.probe "loop.w" %w : tensor<2xi64>
    %a1 = arith.addi %a, %w : tensor<2xi64>
    %ii = arith.index_cast %i : index to i64
    scf.yield %a1, %ii : tensor<2xi64>, i64
  }
  return %acc, %last : tensor<2xi64>, i64
}
)mlir";

TEST_F(InterpreterApiTest, LoopProbesEachIterationAndOverridesReachLaterIterations) {
  func::FuncOp fn = parse(kLoopModule, "loop");
  ASSERT_TRUE(fn) << allDiagnostics();
  ::dsa::Tensor w = ::dsa::Tensor::fromInts(::dsa::ElementType::I64, {2}, {1, 10});
  // 3 trips: a = [0, 0], [1, 10], [2, 20] at the probes, then [3, 30]; the last induction variable is 2.
  interp::ProbeLog probes;
  FailureOr<std::vector<::dsa::Tensor>> results =
      interp::interpretFunction(fn, {w, ::dsa::Tensor::scalarIndex(3)}, &probes);
  ASSERT_TRUE(succeeded(results)) << allDiagnostics();
  EXPECT_EQ((*results)[0].intVector(), (std::vector<int64_t>{3, 30}));
  EXPECT_EQ((*results)[1].scalarInt(), 2);
  ASSERT_EQ(probes.size(), 6u);
  EXPECT_EQ(probes[0].name, "loop.a");
  EXPECT_EQ(probes[0].value.intVector(), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(probes[2].value.intVector(), (std::vector<int64_t>{1, 10}));
  EXPECT_EQ(probes[4].value.intVector(), (std::vector<int64_t>{2, 20}));
  EXPECT_EQ(probes[5].name, "loop.w");

  // Zero trips: the inits, no probe.
  probes.clear();
  results = interp::interpretFunction(fn, {w, ::dsa::Tensor::scalarIndex(0)}, &probes);
  ASSERT_TRUE(succeeded(results)) << allDiagnostics();
  EXPECT_EQ((*results)[0].intVector(), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ((*results)[1].scalarInt(), 0);
  EXPECT_TRUE(probes.empty());

  // Replacing the iter_arg in iteration 1 by [100, 100]: iteration 1 yields [101, 110], iteration 2 [102, 120].
  int seenA = 0;
  interp::ProbeOverride iterArg = [&](const std::string &name, ::dsa::Tensor &value) {
    if (name != "loop.a" || seenA++ != 1)
      return false;
    value = ::dsa::Tensor::fromInts(::dsa::ElementType::I64, {2}, {100, 100});
    return true;
  };
  results = interp::interpretFunction(fn, {w, ::dsa::Tensor::scalarIndex(3)}, nullptr, iterArg);
  ASSERT_TRUE(succeeded(results)) << allDiagnostics();
  EXPECT_EQ((*results)[0].intVector(), (std::vector<int64_t>{102, 120}));

  // Replacing the function's %w (probed inside the body) in iteration 0 by [5, 5]: the replacement is the function's
  // value from then on, so every iteration adds [5, 5] and the later probes log it.
  int seenW = 0;
  interp::ProbeOverride outer = [&](const std::string &name, ::dsa::Tensor &value) {
    if (name != "loop.w" || seenW++ != 0)
      return false;
    value = ::dsa::Tensor::fromInts(::dsa::ElementType::I64, {2}, {5, 5});
    return true;
  };
  probes.clear();
  results = interp::interpretFunction(fn, {w, ::dsa::Tensor::scalarIndex(3)}, &probes, outer);
  ASSERT_TRUE(succeeded(results)) << allDiagnostics();
  EXPECT_EQ((*results)[0].intVector(), (std::vector<int64_t>{15, 15}));
  ASSERT_EQ(probes.size(), 6u);
  EXPECT_EQ(probes[1].value.intVector(), (std::vector<int64_t>{1, 10})); // logged before the override
  EXPECT_EQ(probes[3].value.intVector(), (std::vector<int64_t>{5, 5}));
  EXPECT_EQ(probes[5].value.intVector(), (std::vector<int64_t>{5, 5}));
  EXPECT_TRUE(diagnostics.empty()) << allDiagnostics();
}

/// A function of `depth` nested one-trip scf.for loops, the innermost adding 1 to the carried i64.
std::string nestedLoops(int depth) {
  std::string text = "func.func @deep(%x: i64) -> i64 {\n  %c0 = arith.constant 0 : index\n"
                     "  %c1 = arith.constant 1 : index\n  %one = arith.constant 1 : i64\n";
  for (int k = 0; k < depth; ++k)
    text += "%r" + std::to_string(k) + " = scf.for %i" + std::to_string(k) + " = %c0 to %c1 step %c1 iter_args(%a" +
            std::to_string(k) + " = " + (k ? "%a" + std::to_string(k - 1) : std::string("%x")) + ") -> (i64) {\n";
  text += "%s = arith.addi %a" + std::to_string(depth - 1) + ", %one : i64\nscf.yield %s : i64\n}\n";
  for (int k = depth - 1; k-- > 0;)
    text += "scf.yield %r" + std::to_string(k + 1) + " : i64\n}\n";
  return text + "return %r0 : i64\n}\n";
}

TEST_F(InterpreterApiTest, LoopNestingIsBounded) {
  // 64 nested loops run (the innermost adds 1 once); a 65th is an error at that loop, not a deeper recursion.
  std::string ok = nestedLoops(64);
  func::FuncOp fn = parse(ok.c_str(), "deep");
  ASSERT_TRUE(fn) << allDiagnostics();
  FailureOr<std::vector<::dsa::Tensor>> results =
      interp::interpretFunction(fn, {::dsa::Tensor::scalarI64(41)}, nullptr);
  ASSERT_TRUE(succeeded(results)) << allDiagnostics();
  EXPECT_EQ((*results)[0].scalarInt(), 42);
  std::string deep = nestedLoops(65);
  fn = parse(deep.c_str(), "deep");
  ASSERT_TRUE(fn) << allDiagnostics();
  EXPECT_TRUE(failed(interp::interpretFunction(fn, {::dsa::Tensor::scalarI64(41)}, nullptr)));
  EXPECT_NE(allDiagnostics().find("dsa interpreter: 'scf.for' loop nesting exceeds 64"), std::string::npos)
      << allDiagnostics();
}

TEST_F(InterpreterApiTest, LoopIterationLimitStopsARunAndIsPerCall) {
  func::FuncOp fn = parse(kLoopModule, "loop");
  ASSERT_TRUE(fn) << allDiagnostics();
  ::dsa::Tensor w = ::dsa::Tensor::fromInts(::dsa::ElementType::I64, {2}, {1, 10});
  EXPECT_EQ(interp::loopIterationLimit(), -1) << "no limit by default";
  interp::setLoopIterationLimit(5);
  // 5 iterations run; each call counts its own.
  for (int call = 0; call < 2; ++call) {
    FailureOr<std::vector<::dsa::Tensor>> ok =
        interp::interpretFunction(fn, {w, ::dsa::Tensor::scalarIndex(5)}, nullptr);
    ASSERT_TRUE(succeeded(ok)) << allDiagnostics();
    EXPECT_EQ((*ok)[0].intVector(), (std::vector<int64_t>{5, 50}));
  }
  // The 6th iteration is an error naming the limit (a huge bound ends at once, not after 2^40 iterations).
  for (int64_t n : {int64_t{6}, int64_t{1} << 40}) {
    EXPECT_TRUE(failed(interp::interpretFunction(fn, {w, ::dsa::Tensor::scalarIndex(n)}, nullptr)));
    EXPECT_NE(allDiagnostics().find("dsa interpreter: 'scf.for' more than 5 scf.for iterations in one run"),
              std::string::npos)
        << allDiagnostics();
  }
  interp::setLoopIterationLimit(-7);
  EXPECT_EQ(interp::loopIterationLimit(), -1);
}

TEST_F(InterpreterApiTest, RejectsWrongArgumentCount) {
  func::FuncOp fn = parse(kScaleModule, "f");
  ASSERT_TRUE(fn) << allDiagnostics();
  ::dsa::Tensor x(::dsa::ElementType::BF16, {1, 2});
  EXPECT_TRUE(failed(interp::interpretFunction(fn, {x}, nullptr)));
  EXPECT_NE(allDiagnostics().find("function 'f' takes 2 arguments, got 1"), std::string::npos) << allDiagnostics();
}

TEST_F(InterpreterApiTest, RejectsWrongElementType) {
  func::FuncOp fn = parse(kScaleModule, "f");
  ASSERT_TRUE(fn) << allDiagnostics();
  ::dsa::Tensor x(::dsa::ElementType::F32, {1, 2});
  EXPECT_TRUE(failed(interp::interpretFunction(fn, {x, ::dsa::Tensor::scalarI64(0)}, nullptr)));
  EXPECT_NE(allDiagnostics().find("argument #0: element type is f32, expected bf16"), std::string::npos)
      << allDiagnostics();
}

TEST_F(InterpreterApiTest, RejectsWrongStaticDimension) {
  func::FuncOp fn = parse(kScaleModule, "f");
  ASSERT_TRUE(fn) << allDiagnostics();
  ::dsa::Tensor x(::dsa::ElementType::BF16, {1, 3});
  EXPECT_TRUE(failed(interp::interpretFunction(fn, {x, ::dsa::Tensor::scalarI64(0)}, nullptr)));
  EXPECT_NE(allDiagnostics().find("argument #0: shape is [1, 3], expected [?, 2]"), std::string::npos)
      << allDiagnostics();
}

TEST_F(InterpreterApiTest, RejectsNonScalarForScalarArgument) {
  func::FuncOp fn = parse(kScaleModule, "f");
  ASSERT_TRUE(fn) << allDiagnostics();
  ::dsa::Tensor x(::dsa::ElementType::BF16, {1, 2});
  ::dsa::Tensor n = ::dsa::Tensor::fromInts(::dsa::ElementType::I64, {1}, {5});
  EXPECT_TRUE(failed(interp::interpretFunction(fn, {x, n}, nullptr)));
  EXPECT_NE(allDiagnostics().find("argument #1: rank is 1, expected 0"), std::string::npos) << allDiagnostics();
  diagnostics.clear();
  // index where i64 is expected
  EXPECT_TRUE(failed(interp::interpretFunction(fn, {x, ::dsa::Tensor::scalarIndex(5)}, nullptr)));
  EXPECT_NE(allDiagnostics().find("argument #1: element type is index, expected i64"), std::string::npos)
      << allDiagnostics();
}

TEST_F(InterpreterApiTest, RejectsExternalFunction) {
  ASSERT_TRUE(parse(kScaleModule, "f"));
  func::FuncOp fn = module->lookupSymbol<func::FuncOp>("external");
  ASSERT_TRUE(fn);
  EXPECT_TRUE(failed(interp::interpretFunction(fn, {::dsa::Tensor::scalarI64(1)}, nullptr)));
  EXPECT_NE(allDiagnostics().find("function 'external' has no body"), std::string::npos) << allDiagnostics();
}

TEST_F(InterpreterApiTest, ElementTypeMapping) {
  Builder b(&context);
  EXPECT_EQ(*interp::elementTypeFromMlir(b.getBF16Type()), ::dsa::ElementType::BF16);
  EXPECT_EQ(*interp::elementTypeFromMlir(b.getF32Type()), ::dsa::ElementType::F32);
  EXPECT_EQ(*interp::elementTypeFromMlir(b.getI1Type()), ::dsa::ElementType::I1);
  EXPECT_EQ(*interp::elementTypeFromMlir(b.getI32Type()), ::dsa::ElementType::I32);
  EXPECT_EQ(*interp::elementTypeFromMlir(b.getI64Type()), ::dsa::ElementType::I64);
  EXPECT_EQ(*interp::elementTypeFromMlir(b.getIndexType()), ::dsa::ElementType::Index);
  ::dsa::Result<::dsa::ElementType> f16 = interp::elementTypeFromMlir(b.getF16Type());
  ASSERT_FALSE(f16.ok());
  EXPECT_NE(f16.error().find("unsupported element type 'f16'"), std::string::npos) << f16.error();
  EXPECT_FALSE(interp::elementTypeFromMlir(b.getIntegerType(8)).ok());
  EXPECT_FALSE(interp::elementTypeFromMlir(IntegerType::get(&context, 32, IntegerType::Unsigned)).ok());
}

TEST_F(InterpreterApiTest, TensorFromAttr) {
  Builder b(&context);
  // bf16 splat of 0.1: the attribute holds bf16(0.1) = 0.10009765625.
  auto splatType = RankedTensorType::get({2, 2}, b.getBF16Type());
  auto splat = DenseElementsAttr::get(splatType, b.getFloatAttr(b.getBF16Type(), 0.1).getValue());
  ::dsa::Result<::dsa::Tensor> t = interp::tensorFromAttr(splat);
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(t->elementType(), ::dsa::ElementType::BF16);
  EXPECT_EQ(t->shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(t->floatVector(), (std::vector<float>(4, 0.10009765625f)));

  // i1: true is stored as 1 (not sign-extended to -1).
  auto boolType = RankedTensorType::get({3}, b.getI1Type());
  auto bools = DenseElementsAttr::get(boolType, ArrayRef<bool>{true, false, true});
  ::dsa::Result<::dsa::Tensor> tb = interp::tensorFromAttr(bools);
  ASSERT_TRUE(tb.ok()) << tb.error();
  EXPECT_EQ(tb->elementType(), ::dsa::ElementType::I1);
  EXPECT_EQ(tb->intVector(), (std::vector<int64_t>{1, 0, 1}));

  // i32 negatives are sign-extended; index keeps 64 bits.
  auto i32s = DenseElementsAttr::get(RankedTensorType::get({2}, b.getI32Type()), ArrayRef<int32_t>{-1, 7});
  ::dsa::Result<::dsa::Tensor> ti = interp::tensorFromAttr(i32s);
  ASSERT_TRUE(ti.ok()) << ti.error();
  EXPECT_EQ(ti->elementType(), ::dsa::ElementType::I32);
  EXPECT_EQ(ti->intVector(), (std::vector<int64_t>{-1, 7}));
  auto indexType = RankedTensorType::get({2}, b.getIndexType());
  auto indices = DenseElementsAttr::get(indexType, ArrayRef<APInt>{APInt(64, 1ull << 40), APInt(64, -3, true)});
  ::dsa::Result<::dsa::Tensor> tx = interp::tensorFromAttr(indices);
  ASSERT_TRUE(tx.ok()) << tx.error();
  EXPECT_EQ(tx->elementType(), ::dsa::ElementType::Index);
  EXPECT_EQ(tx->intVector(), (std::vector<int64_t>{int64_t(1) << 40, -3}));

  // f16 is not an interpreter type.
  auto f16s = DenseElementsAttr::get(RankedTensorType::get({1}, b.getF16Type()),
                                     b.getFloatAttr(b.getF16Type(), 1.0).getValue());
  ::dsa::Result<::dsa::Tensor> th = interp::tensorFromAttr(f16s);
  ASSERT_FALSE(th.ok());
  EXPECT_NE(th.error().find("unsupported element type 'f16'"), std::string::npos) << th.error();
}

TEST_F(InterpreterApiTest, CheckTensorMatchesType) {
  Builder b(&context);
  ::dsa::Tensor t(::dsa::ElementType::F32, {2, 3});
  EXPECT_TRUE(interp::checkTensorMatchesType(t, RankedTensorType::get({2, 3}, b.getF32Type()), "v").ok());
  EXPECT_TRUE(
      interp::checkTensorMatchesType(t, RankedTensorType::get({ShapedType::kDynamic, 3}, b.getF32Type()), "v").ok());
  EXPECT_TRUE(interp::checkTensorMatchesType(t, UnrankedTensorType::get(b.getF32Type()), "v").ok());
  ::dsa::Status rank = interp::checkTensorMatchesType(t, RankedTensorType::get({6}, b.getF32Type()), "v");
  ASSERT_FALSE(rank.ok());
  EXPECT_NE(rank.error().find("v: rank is 2, expected 1"), std::string::npos) << rank.error();
  ::dsa::Status scalar = interp::checkTensorMatchesType(t, b.getF32Type(), "w");
  ASSERT_FALSE(scalar.ok());
  EXPECT_NE(scalar.error().find("w: rank is 2, expected 0"), std::string::npos) << scalar.error();
  EXPECT_TRUE(interp::checkTensorMatchesType(::dsa::Tensor::scalarIndex(3), b.getIndexType(), "s").ok());
}

} // namespace
