//===- GpuStepLibrary.h - AOT-compiled dsa GPU steps: description, loader, device-resident sequences (MLIR-free) ===//
//
// A GPU step library is what dsa::gpu::emitGPUStepLibrary (compiler/lib/Backend/GPU, MLIR side; `dsa-compile
// --target=gpu`) writes for a module:
//   <base>.so    the host code of --dsa-gpu-pipeline (format=bin: a cubin, or isa: PTX, embedded; its constructor
//                loads it with mgpuModuleLoad[JIT]) compiled for generic x86-64, with the packed entry `_mlir_<name>`
//                of every function (runtime/cpu Values.h convention) and the hook pointer `dsa_cpu_fail_hook` that
//                its failed run-time checks (dsa_cpu_fail(code), the codes of dsa/ABI/RuntimeErrors.h) call;
//                with no hook set they abort. Its undefined symbols are MLIR's GPU runtime entry points (mgpu*,
//                MgpuRuntime.h) and libc's abort: the loading executable provides the former (link
//                DSAGpuStepRuntime).
//                It exports only `_mlir_<name>`, `dsa_cpu_fail_hook` and `dsa_step_library_signature` (its compiled-in
//                signature with the GPU fields, dsa/ABI/StepLibrary.h).
//   <base>.json  the step description: the CPU step library's (runtime/host StepDescription.h: library and its
//                SHA-256, abi_version, target_cpu, functions with args/results/probes/state) with
//                "format": "dsa-gpu-step-library",
//                "backend": "cuda", "chip": "sm_90" and "binary_format": "bin" | "isa" | "fatbin".
//
// Calling convention: a function's tensor arguments and results are DEVICE buffers (identity layout, row-major;
// bf16 as 16-bit patterns, i1 one byte, index 8 bytes); scalars travel by value. Arguments are never written by the
// compiled code; results are new device buffers the caller owns (GpuTensor), or, when the code returns an argument
// unchanged, that argument's buffer (shared).
//
// Errors (dsa::Result, never an abort): the description's bad field; no driver / no device (MgpuRuntime::open's
// message, e.g. "CUDA driver not available: dlopen(libcuda.so.1) failed: ..."); a device the kernels were not
// compiled for; a library that does not load (the dynamic loader's message, e.g. an undefined mgpu* symbol) or whose
// kernels do not load (the driver's JIT log); a missing `_mlir_<name>`; an argument of the wrong element type, rank
// or static size (named: "argument #2 ..."); a failed mgpu* call or run-time check during a run ("run-time check
// failed: <message of the code>", as the CPU step libraries report it; the call's device memory is freed, the
// sequence state unchanged).
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_RUNTIME_CUDA_GPUSTEPLIBRARY_H
#define DSA_RUNTIME_CUDA_GPUSTEPLIBRARY_H

#include "dsa/Core/Tensor.h"
#include "dsa/Runtime/Host/Sequence.h"
#include "dsa/Runtime/Host/StepDescription.h"
#include "dsa/Runtime/Cuda/MgpuRuntime.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dsa::cuda {

inline constexpr const char *kGpuStepLibraryFormat = "dsa-gpu-step-library";

struct GpuStepLibraryDescription {
  /// library, target_cpu (always a generic x86-64 here), functions: as for a CPU step library.
  runtime::StepLibraryDescription base;
  std::string backend = "cuda";
  std::string chip = "sm_90";       ///< the SM the kernels were compiled for
  std::string binaryFormat = "bin"; ///< bin (cubin), isa (PTX, JIT-compiled by the driver), fatbin
};

/// The description as JSON (the CPU description's fields and version, plus the GPU fields above).
std::string describeGpuStepLibrary(const GpuStepLibraryDescription &description);
/// Parses a description; errors name the field ("chip: expected \"sm_<major><minor>\" ..."); unknown and duplicate
/// keys are errors as in a CPU step description (runtime/host StepDescription.h).
Result<GpuStepLibraryDescription> parseGpuStepLibrary(const std::string &jsonText);
/// The GPU fields the library's compiled signature records besides the CPU ones (backend, chip, binary_format).
runtime::TargetFields gpuTargetFields(const GpuStepLibraryDescription &description);
/// "sm_90" -> {9, 0}; an error naming the text otherwise.
Result<std::pair<int, int>> parseChip(const std::string &chip);

/// A tensor in device memory (see the calling convention above). Copyable: copies share the buffer.
class GpuTensor {
public:
  GpuTensor() = default;
  /// Uploads `t` (bf16 values rounded to bf16). Errors: allocation/copy failures.
  static Result<GpuTensor> upload(MgpuRuntime &runtime, const dsa::Tensor &t);
  /// Wraps an existing allocation holding a [shape] tensor of `type`.
  GpuTensor(dsa::ElementType type, std::vector<int64_t> shape, std::shared_ptr<DeviceAllocation> allocation)
      : type_(type), shape_(std::move(shape)), allocation_(std::move(allocation)) {}
  /// Copies the tensor back into a Tensor (synchronous).
  Result<dsa::Tensor> download() const;

  dsa::ElementType elementType() const { return type_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  int64_t numElements() const;
  /// The device address (0 for an empty tensor).
  DevicePtr ptr() const { return allocation_ ? allocation_->ptr() : 0; }
  const std::shared_ptr<DeviceAllocation> &allocation() const { return allocation_; }

private:
  dsa::ElementType type_ = dsa::ElementType::F32;
  std::vector<int64_t> shape_;
  std::shared_ptr<DeviceAllocation> allocation_;
};

/// One argument or result: a device tensor, or a host Tensor (a scalar: rank 0; a tensor argument given as a host
/// Tensor is uploaded for the one call).
class GpuValue {
public:
  GpuValue(GpuTensor tensor) : isDevice_(true), device_(std::move(tensor)) {}
  GpuValue(dsa::Tensor host) : host_(std::move(host)) {}
  bool isDevice() const { return isDevice_; }
  const GpuTensor *device() const { return isDevice_ ? &device_ : nullptr; }
  const dsa::Tensor *host() const { return isDevice_ ? nullptr : &host_; }
  /// The value as a host Tensor (downloads a device tensor).
  Result<dsa::Tensor> toHost() const;

private:
  bool isDevice_ = false;
  GpuTensor device_;
  dsa::Tensor host_;
};

/// A loaded GPU step library. One runtime, one thread at a time. A library file can be open once per process (its
/// kernel module handle is a global of the .so): opening it again while open is an error.
class GpuStepLibrary {
public:
  /// Reads the description, checks the device against its chip and the library file's SHA-256 against the
  /// description's (before the file is loaded), binds `runtime` and dlopens the library (its constructor loads the
  /// kernels into the runtime's context), compares the signature compiled into it with the description (CPU and GPU
  /// fields: runtime::checkCompiledSignature, gpuTargetFields), sets its run-time check hook, resolves
  /// `_mlir_<name>`. On any error nothing stays loaded (the kernels are unloaded again).
  static Result<std::unique_ptr<GpuStepLibrary>> open(std::shared_ptr<MgpuRuntime> runtime,
                                                      const std::string &descriptionPath);
  ~GpuStepLibrary();
  GpuStepLibrary(const GpuStepLibrary &) = delete;
  GpuStepLibrary &operator=(const GpuStepLibrary &) = delete;

  const GpuStepLibraryDescription &description() const { return description_; }
  const runtime::FunctionSignature *signature(const std::string &name) const;
  MgpuRuntime &runtime() const { return *runtime_; }

  /// Runs `name` on `args`; returns the function's own results (tensors stay on the device; scalars as rank-0 host
  /// Tensors). Probe results (a library compiled with probes as results) are downloaded into `probes` (may be
  /// null). Errors: see the file comment.
  Result<std::vector<GpuValue>> run(const std::string &name, const std::vector<GpuValue> &args,
                                    std::vector<runtime::NamedTensor> *probes = nullptr) const;

  /// Device allocations the compiled code made, did not free and did not return (freed by run(); 0 for correct
  /// code), summed over this library's runs.
  size_t leakedAllocations() const { return leaked_; }

private:
  GpuStepLibrary() = default;
  std::shared_ptr<MgpuRuntime> runtime_;
  GpuStepLibraryDescription description_;
  std::string path_;
  void *handle_ = nullptr;
  std::map<std::string, PackedEntry> entries_;
  mutable size_t leaked_ = 0;
};

/// One sequence's steps through one function with state bindings (FunctionSignature::state: e.g. the window ring):
/// the state stays on the device, each step's state arguments being the previous step's bound results (no copy).
/// Weights passed as GpuTensors are uploaded once by the caller and shared by every step.
class GpuSequence {
public:
  /// `initialArgs`: a full argument list (state arguments: the first step's state, e.g. an uploaded zero ring).
  /// Errors: a count that does not match, an unknown function, a state binding out of range.
  static Result<GpuSequence> create(const GpuStepLibrary &library, const std::string &name,
                                    std::vector<GpuValue> initialArgs);
  /// Runs one step with `stepArgs` replacing arguments by index (a state argument may not be replaced); returns
  /// every result (device tensors). On success the state advances; errors leave it as it was.
  Result<std::vector<GpuValue>> step(const std::vector<std::pair<size_t, GpuValue>> &stepArgs,
                                     std::vector<runtime::NamedTensor> *probes = nullptr);
  /// The current value of state argument `arg`, or null if `arg` is not state.
  const GpuValue *state(size_t arg) const;

private:
  GpuSequence(const GpuStepLibrary &library, const runtime::FunctionSignature &signature, std::vector<GpuValue> args)
      : library_(&library), signature_(&signature), args_(std::move(args)) {}
  const GpuStepLibrary *library_;
  const runtime::FunctionSignature *signature_;
  std::vector<GpuValue> args_;
};

/// A runner for dsa::runtime::Sequence (runtime/cpu StepLibrary.h: step roles, multi-token steps split into decode
/// steps, shared slots between layers) over function `name` of a GPU step library, so that a driver written for CPU
/// step libraries (tools/dsa-golden) runs GPU ones unchanged. Tensor arguments given as Tensors are uploaded for each
/// call; CPUBuffers (the weights) are uploaded once, on first use, and stay on the device while the runner lives;
/// results and probes are downloaded. The CPUBuffers must outlive the runner (a Sequence holds both). The state
/// crosses the host between steps here; GpuSequence keeps it on the device.
runtime::Sequence::Runner makeSequenceRunner(std::shared_ptr<const GpuStepLibrary> library, std::string name);

} // namespace dsa::cuda

#endif
