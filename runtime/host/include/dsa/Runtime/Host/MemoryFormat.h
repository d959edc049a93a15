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
#ifndef DSA_RUNTIME_HOST_MEMORYFORMAT_H
#define DSA_RUNTIME_HOST_MEMORYFORMAT_H

#include "dsa/Core/Tensor.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace dsa::runtime {

struct ValueKind;

/// Bytes of one element of `type` in memory (bf16 2, f32/i32 4, i1 1, i64/index 8).
int64_t elementBytes(dsa::ElementType type);
/// "[2, ?, 64]" (-1 = dynamic) for messages.
std::string shapeString(const std::vector<int64_t> &shape);
/// Writes element `i` of `t` (flat, row-major) to `dst` in the memory format of its element type (bf16: rounded
/// to nearest even from the Tensor's f32 value).
void storeElement(const dsa::Tensor &t, int64_t i, uint8_t *dst);
/// Reads one element of `type` at `src` into element `i` of `t` (floats for bf16/f32, ints for the rest).
void loadElement(dsa::ElementType type, const uint8_t *src, dsa::Tensor &t, int64_t i);
/// `offset` rounded up to a multiple of `align` (a power of two).
size_t alignUp(size_t offset, size_t align);
/// Size and alignment of a value of `kind` as a field of a packed call's result struct.
std::pair<size_t, size_t> fieldLayout(const ValueKind &kind);
/// The element at `src` of a float type (bf16 widened exactly) / of an integer type (i1: 0 or 1, sign-extended).
float loadFloat(dsa::ElementType type, const uint8_t *src);
int64_t loadInt(dsa::ElementType type, const uint8_t *src);
/// Row-major strides and element count of `shape` (static sizes).
std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &shape);
int64_t elementCount(const std::vector<int64_t> &shape);
/// calloc'ed memory for `bytes` (at least 8), freed with the last owner.
std::shared_ptr<void> allocateBytes(int64_t bytes);

} // namespace dsa::runtime

#endif // DSA_RUNTIME_HOST_MEMORYFORMAT_H
