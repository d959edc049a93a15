//===- Npy.h - NumPy .npy files <-> Tensor (MLIR-free) -------------------------===//
//
// Reads and writes the NumPy array file format (numpy.lib.format: the magic "\x93NUMPY", a major/minor version, a
// little-endian header length, a Python dict literal {'descr': ..., 'fortran_order': ..., 'shape': (...)} padded with
// spaces and ended by '\n', then the raw elements), so that a user's numpy arrays go into dsa tools and back
// (`dsa-run --input=@x.npy --output=DIR`). MLIR-free: the runtime, a C API or Python can use it.
//
// Element types (descr <-> Tensor ElementType):
//   '<V2' or '|V2'  <-> BF16: two bytes per element, the bf16 bit pattern, little-endian. This is what
//                       `numpy.save` writes for an `ml_dtypes.bfloat16` array: numpy cannot store the type's name,
//                       so the file says "2-byte void" and `numpy.load` returns a '|V2' array; the bf16 array is
//                       `numpy.load(path).view(ml_dtypes.bfloat16)`. Written as '<V2', byte for byte numpy's file.
//   '<f4'           <-> F32
//   '<i4'           <-> I32
//   '<i8'           <-> I64 (an Index tensor is written as '<i8'; reading gives I64: the caller converts)
//   '|b1'           <-> I1: one byte per element, 0 or 1
// Nothing else (f64, f16, unsigned, big-endian '>', structured dtypes, object arrays) is read: the error names the
// descr and lists these. Arrays must be C order (fortran_order False). Versions 1.0, 2.0 and 3.0 are read (3.0 is 2.0
// with a UTF-8 header); written: 1.0, or 2.0 when the header does not fit 1.0's 16-bit length, as numpy does. The
// header is laid out as numpy 2's `numpy.save` lays it out (room for the first dimension to grow, spaces up to a
// multiple of 64 bytes): a file written here is byte-identical to numpy's for the same array (test/Core/NpyTest.cpp).
//
// Errors (dsa::Result, never an abort): every message starts with the source name given (a file path) and names the
// field: a bad magic string, an unsupported version, a header length past the end of the file, a header that is not
// a dict of exactly those three keys (a missing, duplicate or unknown key; a value of the wrong kind), an unsupported
// descr, fortran_order True, a negative or overflowing dimension, a data size that is not product(shape) * itemsize
// (truncated data, or bytes after it), an i1 byte that is neither 0 nor 1, a tensor above Tensor::tensorByteLimit();
// an unreadable or unwritable file.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_CORE_NPY_H
#define DSA_CORE_NPY_H

#include "dsa/Core/Tensor.h"
#include "dsa/Support/Result.h"

#include <string>
#include <string_view>

namespace dsa {

/// The Tensor held by the .npy file contents `bytes`; `source` names them in errors (e.g. the file's path).
Result<Tensor> parseNpy(std::string_view bytes, const std::string &source);
/// parseNpy of the file at `path` (errors name the path).
Result<Tensor> readNpyFile(const std::string &path);

/// The .npy file contents of `tensor` (see the table above for the descr of each element type). Errors: a
/// placeholder Tensor (no storage for its shape).
Result<std::string> encodeNpy(const Tensor &tensor);
/// encodeNpy written to `path` (created or truncated). Errors: those of encodeNpy, an unwritable path.
Status writeNpyFile(const Tensor &tensor, const std::string &path);

/// The descr a Tensor of `type` is written with ("<V2", "<f4", "|b1", "<i4", "<i8").
const char *npyDescr(ElementType type);

} // namespace dsa

#endif
