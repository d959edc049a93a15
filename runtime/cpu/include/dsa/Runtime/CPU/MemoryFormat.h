//===- MemoryFormat.h - the element and struct layout of the compiled code's calling convention (MLIR-free) -===//
//
// One definition of how values are laid out in memory by code lowered through MLIR's LLVM calling convention, used
// by the CPU runtime (Values.cpp: host buffers, packed calls) and the GPU step runtime (runtime/cuda
// GpuStepLibrary.cpp: device buffers, packed calls):
//   - element formats: bf16 as its 16-bit pattern, f32 as IEEE binary32, i1 as one byte (0/1), i32 as 4 bytes,
//     i64 and index as 8 bytes (little-endian host order);
//   - a packed call's result struct: a ranked memref descriptor is (allocated ptr, aligned ptr, offset, sizes[rank],
//     strides[rank]), 8 bytes each, 8-byte aligned; a scalar has its element size and alignment.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_RUNTIME_CPU_MEMORYFORMAT_H
#define DSA_RUNTIME_CPU_MEMORYFORMAT_H

#include "dsa/Interpreter/Tensor.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dsa::cpu {

struct ValueKind;

/// Bytes of one element of `type` in memory (bf16 2, f32/i32 4, i1 1, i64/index 8).
int64_t elementBytes(interp::ElementType type);
/// "[2, ?, 64]" (-1 = dynamic) for messages.
std::string shapeString(const std::vector<int64_t> &shape);
/// Writes element `i` of `t` (flat, row-major) to `dst` in the memory format of its element type (bf16: rounded
/// to nearest even from the Tensor's f32 value).
void storeElement(const interp::Tensor &t, int64_t i, uint8_t *dst);
/// Reads one element of `type` at `src` into element `i` of `t` (floats for bf16/f32, ints for the rest).
void loadElement(interp::ElementType type, const uint8_t *src, interp::Tensor &t, int64_t i);
/// `offset` rounded up to a multiple of `align` (a power of two).
size_t alignUp(size_t offset, size_t align);
/// Size and alignment of a value of `kind` as a field of a packed call's result struct.
std::pair<size_t, size_t> fieldLayout(const ValueKind &kind);

} // namespace dsa::cpu

#endif // DSA_RUNTIME_CPU_MEMORYFORMAT_H
