//===- CPUTarget.cpp - target CPU resolution, dsa-cpu-set-target, bf16 expansion and check ----------------===//
//
// See compiler/include/dsa/Conversion/CPUTarget.h. The bf16 expansion is core/lib/Numerics' numerics::f32ToBf16Bits written in
// arith ops (core/include/dsa/Numerics/BF16.h: the one statement of the rule); upstream's arith-expand include-bf16
// rounds the same way but turns every NaN into the positive 0x7FC0, where the interpreter keeps the sign and the top
// payload bits.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/Conversion/CPUTarget.h"
#include "dsa/Conversion/DSAToCPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Pass/PassRegistry.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/X86TargetParser.h"

#include <algorithm>

namespace mlir::dsa {

#define GEN_PASS_DEF_DSACPUSETTARGET
#define GEN_PASS_DEF_DSACPUEXPANDBF16
#define GEN_PASS_DEF_DSACPUCHECKBF16
#define GEN_PASS_DEF_DSACPUBF16ASI16
#include "dsa/Conversion/DSAToCPU/Passes.h.inc"

//===----------------------------------------------------------------------------------------------------------===//
// Target CPU
//===----------------------------------------------------------------------------------------------------------===//

std::vector<std::string> CPUTarget::enabledFeatures() const {
  std::vector<std::string> names;
  for (const std::string &f : features)
    if (f.size() > 1 && f[0] == '+')
      names.push_back(f.substr(1));
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

std::string CPUTarget::featureString() const {
  std::string s;
  for (const std::string &f : features)
    s += (s.empty() ? "" : ",") + f;
  return s;
}

FailureOr<CPUTarget> resolveCPUTarget(llvm::StringRef cpu, std::string &error) {
  CPUTarget target;
  if (cpu.empty() || cpu == kHostCPU) {
    target.host = true;
    target.cpu = llvm::sys::getHostCPUName().str();
    // Every feature LLVM detects, on or off: the CPU name alone would also enable what the model has and this
    // machine (a virtual one, say) does not.
    llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
    std::vector<std::string> names;
    for (const auto &f : host)
      names.push_back(f.first().str());
    std::sort(names.begin(), names.end());
    for (const std::string &n : names)
      target.features.push_back((host[n] ? "+" : "-") + n);
    return target;
  }
  if (llvm::X86::parseArchX86(cpu, /*Only64Bit=*/true) == llvm::X86::CK_None) {
    error = "unknown CPU '" + cpu.str() +
            "': expected 'host' or an LLVM x86-64 CPU name (x86-64, x86-64-v2, x86-64-v3, x86-64-v4, "
            "skylake-avx512, sapphirerapids, znver4, ...; `llc -mcpu=help` lists them)";
    return failure();
  }
  target.cpu = cpu.str();
  llvm::SmallVector<llvm::StringRef> own;
  llvm::X86::getFeaturesForCPU(cpu, own);
  llvm::StringMap<bool> all;
  for (llvm::StringRef f : own) {
    all[f] = true;
    llvm::X86::updateImpliedFeatures(f, true, all); // e.g. avx2 -> avx -> sse4.2 -> ...
  }
  std::vector<std::string> names;
  for (const auto &f : all)
    if (f.second)
      names.push_back(f.first().str());
  std::sort(names.begin(), names.end());
  for (const std::string &n : names)
    target.features.push_back("+" + n);
  return target;
}

namespace {

/// dsa-cpu-set-target (Passes.td).
struct SetTargetPass : impl::DSACPUSetTargetBase<SetTargetPass> {
  using DSACPUSetTargetBase::DSACPUSetTargetBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::string error;
    FailureOr<CPUTarget> target = resolveCPUTarget(cpu, error);
    if (failed(target)) {
      mlir::emitError(module.getLoc()) << "dsa-cpu-set-target: " << error;
      return signalPassFailure();
    }
    MLIRContext *ctx = module.getContext();
    llvm::SmallVector<llvm::StringRef> features(target->features.begin(), target->features.end());
    auto featuresAttr = LLVM::TargetFeaturesAttr::get(ctx, features);
    auto cpuAttr = StringAttr::get(ctx, target->cpu);
    module.walk([&](LLVM::LLVMFuncOp f) {
      if (f.isExternal())
        return;
      f.setTargetCpuAttr(cpuAttr);
      f.setTargetFeaturesAttr(featuresAttr);
    });
  }
};

//===----------------------------------------------------------------------------------------------------------===//
// bf16 expansion
//===----------------------------------------------------------------------------------------------------------===//

/// `like` with element type `elem` (scalars: `elem`).
Type withElement(Type like, Type elem) {
  if (auto shaped = dyn_cast<ShapedType>(like))
    return shaped.clone(elem);
  return elem;
}

/// An integer constant of type `type` (a scalar or a splat of a shaped type).
Value intConstant(ImplicitLocOpBuilder &b, Type type, int64_t v) {
  Type elem = getElementTypeOrSelf(type);
  TypedAttr scalar = b.getIntegerAttr(elem, v);
  if (auto shaped = dyn_cast<ShapedType>(type))
    return arith::ConstantOp::create(b, DenseElementsAttr::get(shaped, scalar));
  return arith::ConstantOp::create(b, scalar);
}

/// numerics::f32ToBf16Bits on the f32 bits of `x`:
///   NaN (|u| > 0x7F800000): (u >> 16) | 0x0040 (quiet, sign and top payload kept);
///   otherwise (u + 0x7FFF + ((u >> 16) & 1)) >> 16 (round to nearest even; the carry into the exponent rounds the
///   largest finite values to inf and the largest denormals to the smallest normal).
Value expandTruncF(ImplicitLocOpBuilder &b, Value x, Type resultType) {
  Type i32 = withElement(x.getType(), b.getI32Type());
  Type i16 = withElement(x.getType(), b.getI16Type());
  Value u = arith::BitcastOp::create(b, i32, x);
  Value magnitude = arith::AndIOp::create(b, u, intConstant(b, i32, 0x7FFFFFFF));
  Value isNan = arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, magnitude, intConstant(b, i32, 0x7F800000));
  Value high = arith::ShRUIOp::create(b, u, intConstant(b, i32, 16));
  Value quietNan = arith::OrIOp::create(b, high, intConstant(b, i32, 0x0040));
  Value lowestKept = arith::AndIOp::create(b, high, intConstant(b, i32, 1));
  Value bias = arith::AddIOp::create(b, lowestKept, intConstant(b, i32, 0x7FFF));
  Value rounded = arith::ShRUIOp::create(b, arith::AddIOp::create(b, u, bias), intConstant(b, i32, 16));
  Value bits32 = arith::SelectOp::create(b, isNan, quietNan, rounded);
  Value bits16 = arith::TruncIOp::create(b, i16, bits32);
  return arith::BitcastOp::create(b, resultType, bits16);
}

/// numerics::bf16BitsToF32: the 16 bits shifted into the top of an f32 (exact; a signalling NaN stays one).
Value expandExtF(ImplicitLocOpBuilder &b, Value x, Type resultType) {
  Type i32 = withElement(x.getType(), b.getI32Type());
  Type i16 = withElement(x.getType(), b.getI16Type());
  Value bits16 = arith::BitcastOp::create(b, i16, x);
  Value bits32 = arith::ShLIOp::create(b, arith::ExtUIOp::create(b, i32, bits16), intConstant(b, i32, 16));
  return arith::BitcastOp::create(b, resultType, bits32);
}

/// dsa-cpu-expand-bf16 (Passes.td).
struct ExpandBf16Pass : impl::DSACPUExpandBf16Base<ExpandBf16Pass> {
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<arith::TruncFOp, arith::ExtFOp>(op))
        ops.push_back(op);
    });
    bool ok = true;
    for (Operation *op : ops) {
      Type from = getElementTypeOrSelf(op->getOperand(0).getType());
      Type to = getElementTypeOrSelf(op->getResult(0).getType());
      ImplicitLocOpBuilder b(op->getLoc(), op);
      Value replacement;
      if (auto trunc = dyn_cast<arith::TruncFOp>(op)) {
        if (!to.isBF16())
          continue;
        if (!from.isF32()) {
          op->emitOpError() << "dsa-cpu-expand-bf16: only f32 -> bf16 truncation is expanded (got " << from
                            << " -> bf16)";
          ok = false;
          continue;
        }
        if (auto mode = trunc.getRoundingmodeAttr(); mode && mode.getValue() != arith::RoundingMode::to_nearest_even) {
          op->emitOpError() << "dsa-cpu-expand-bf16: only round-to-nearest-even bf16 truncation is expanded";
          ok = false;
          continue;
        }
        replacement = expandTruncF(b, trunc.getIn(), trunc.getType());
      } else {
        auto ext = cast<arith::ExtFOp>(op);
        if (!from.isBF16())
          continue;
        if (!to.isF32()) {
          op->emitOpError() << "dsa-cpu-expand-bf16: only bf16 -> f32 extension is expanded (got bf16 -> " << to
                            << ")";
          ok = false;
          continue;
        }
        replacement = expandExtF(b, ext.getIn(), ext.getType());
      }
      op->getResult(0).replaceAllUsesWith(replacement);
      op->erase();
    }
    if (!ok)
      signalPassFailure();
  }
};

//===----------------------------------------------------------------------------------------------------------===//
// bf16 check
//===----------------------------------------------------------------------------------------------------------===//

bool containsBf16(Type t) {
  if (t.isBF16())
    return true;
  if (auto shaped = dyn_cast<ShapedType>(t))
    return shaped.getElementType().isBF16();
  if (auto array = dyn_cast<LLVM::LLVMArrayType>(t))
    return containsBf16(array.getElementType());
  if (auto st = dyn_cast<LLVM::LLVMStructType>(t))
    return !st.isOpaque() && llvm::any_of(st.getBody(), containsBf16);
  return false;
}

/// Ops that only move bf16 bits (no conversion, no arithmetic).
bool movesBits(Operation *op) {
  return isa<LLVM::LoadOp, LLVM::StoreOp, LLVM::BitcastOp, LLVM::ConstantOp, LLVM::UndefOp, LLVM::PoisonOp,
             LLVM::ZeroOp, LLVM::ExtractElementOp, LLVM::InsertElementOp, LLVM::ShuffleVectorOp, LLVM::SelectOp,
             LLVM::ExtractValueOp, LLVM::InsertValueOp, LLVM::MaskedLoadOp, LLVM::MaskedStoreOp,
             LLVM::masked_gather, LLVM::masked_scatter, LLVM::masked_expandload, LLVM::masked_compressstore,
             LLVM::BrOp, LLVM::CondBrOp, LLVM::SwitchOp, LLVM::ReturnOp>(op);
}

} // namespace

LogicalResult checkNoBf16Conversions(ModuleOp module) {
  bool ok = true;
  const char *fix = ": the conversion must be expanded before the conversion to LLVM (dsa-cpu-expand-bf16), or "
                    "LLVM turns it into a __truncsfbf2 call (absent from the JIT's process) or vcvtneps2bf16 "
                    "(AVX512_BF16: denormal inputs flushed to zero)";
  module.walk([&](Operation *op) {
    if (!isa<LLVM::LLVMDialect>(op->getDialect()))
      return; // the check is on what reaches LLVM: the module is in the LLVM dialect (other ops fail translation)
    if (auto f = dyn_cast<LLVM::LLVMFuncOp>(op)) {
      if (isBf16ConversionRoutine(f.getName())) {
        op->emitError() << "dsa-cpu-check-bf16: the module declares the bf16 conversion routine " << f.getName()
                        << fix;
        ok = false;
      }
      return;
    }
    if (auto call = dyn_cast<LLVM::CallOp>(op)) {
      std::optional<llvm::StringRef> callee = call.getCallee();
      if (callee && isBf16ConversionRoutine(*callee)) {
        op->emitError() << "dsa-cpu-check-bf16: a call of " << *callee << fix;
        ok = false;
        return;
      }
    }
    bool bf16 = llvm::any_of(op->getOperandTypes(), containsBf16) || llvm::any_of(op->getResultTypes(), containsBf16);
    if (!bf16 || movesBits(op))
      return;
    if (auto call = dyn_cast<LLVM::CallOp>(op)) {
      std::optional<llvm::StringRef> callee = call.getCallee();
      auto target = callee ? module.lookupSymbol<LLVM::LLVMFuncOp>(*callee) : LLVM::LLVMFuncOp();
      if (target && !target.isExternal())
        return; // bf16 values passed to code of this module, which is checked too
    }
    if (isa<LLVM::FPTruncOp>(op))
      op->emitError() << "dsa-cpu-check-bf16: llvm.fptrunc to bf16 reached the LLVM dialect" << fix;
    else if (isa<LLVM::FPExtOp>(op))
      op->emitError() << "dsa-cpu-check-bf16: llvm.fpext from bf16 reached the LLVM dialect" << fix;
    else
      op->emitError() << "dsa-cpu-check-bf16: '" << op->getName()
                      << "' converts or computes on bf16 values in LLVM (which promotes them through f32 and rounds "
                         "back with __truncsfbf2 or vcvtneps2bf16): compute in f32 and round with arith.truncf "
                         "before the conversion to LLVM";
    ok = false;
  });
  return success(ok);
}

namespace {

/// dsa-cpu-bf16-as-i16: bf16 -> i16 in every type and attribute of the module (values, block arguments, function
/// types, GEP element types, constants and globals by their bits), identity bitcasts removed. After
/// checkNoBf16Conversions only ops that move bits hold bf16 values; as i16 they move the same bits, and LLVM has no
/// bf16 value it could convert (x86 code generation turns a bf16 phi, e.g. a value carried across blocks, into an
/// extension to f32 and __truncsfbf2 / vcvtneps2bf16 back, which quiets signalling NaNs, and with AVX512_BF16
/// flushes bf16 denormals).
struct Bf16AsI16Pass : impl::DSACPUBf16AsI16Base<Bf16AsI16Pass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(checkNoBf16Conversions(module)))
      return signalPassFailure();
    Type i16 = IntegerType::get(module.getContext(), 16);
    AttrTypeReplacer replacer;
    replacer.addReplacement([&](Type t) -> std::optional<Type> {
      if (t.isBF16())
        return i16;
      return std::nullopt;
    });
    replacer.addReplacement([&](FloatAttr a) -> std::optional<Attribute> {
      if (a.getType().isBF16())
        return IntegerAttr::get(i16, a.getValue().bitcastToAPInt());
      return std::nullopt;
    });
    replacer.addReplacement([&](DenseElementsAttr a) -> std::optional<Attribute> {
      if (a.getElementType().isBF16())
        return a.bitcast(i16);
      return std::nullopt;
    });
    replacer.recursivelyReplaceElementsIn(module, /*replaceAttrs=*/true, /*replaceLocs=*/false,
                                          /*replaceTypes=*/true);
    module.walk([](LLVM::BitcastOp cast) {
      if (cast.getArg().getType() == cast.getType()) {
        cast.replaceAllUsesWith(cast.getArg());
        cast.erase();
      }
    });
  }
};

/// dsa-cpu-check-bf16 (Passes.td).
struct CheckBf16Pass : impl::DSACPUCheckBf16Base<CheckBf16Pass> {
  void runOnOperation() override {
    if (failed(checkNoBf16Conversions(getOperation())))
      signalPassFailure();
  }
};

} // namespace

} // namespace mlir::dsa
