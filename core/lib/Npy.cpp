//===- Npy.cpp - NumPy .npy files <-> Tensor -------------------------------------===//
#include "dsa/Core/Npy.h"

#include "dsa/Numerics/BF16.h"

#include <cstdint>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <vector>

namespace dsa {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
/// numpy.lib.format.ARRAY_ALIGN: the data starts at a multiple of it.
constexpr size_t kAlign = 64;

const char *kSupported = "supported: '<V2' (bf16: numpy.save of an ml_dtypes.bfloat16 array), '<f4', '<i4', '<i8', "
                         "'|b1'";

struct DType {
  ElementType type;
  size_t itemSize;
};

std::optional<DType> dtypeOfDescr(const std::string &descr) {
  if (descr == "<V2" || descr == "|V2")
    return DType{ElementType::BF16, 2};
  if (descr == "<f4")
    return DType{ElementType::F32, 4};
  if (descr == "<i4")
    return DType{ElementType::I32, 4};
  if (descr == "<i8")
    return DType{ElementType::I64, 8};
  if (descr == "|b1")
    return DType{ElementType::I1, 1};
  return std::nullopt;
}

/// A value of the header dict: a string, a bool or a tuple of non-negative integers.
struct HeaderValue {
  enum Kind { String, Bool, Tuple } kind = String;
  std::string text;
  bool flag = false;
  std::vector<int64_t> ints;
};

/// A parser of the header's Python dict literal (the subset numpy writes: quoted keys, string / True / False /
/// tuple-of-int values, an optional trailing comma).
class HeaderParser {
public:
  HeaderParser(std::string_view text, std::string prefix) : text_(text), prefix_(std::move(prefix)) {}

  Status parse(std::vector<std::pair<std::string, HeaderValue>> &entries) {
    skipSpace();
    if (!consume('{'))
      return fail("expected '{' at the start of the header dict");
    while (true) {
      skipSpace();
      if (consume('}'))
        break;
      std::string key;
      if (Status s = parseString(key, "a quoted key"); !s)
        return s;
      skipSpace();
      if (!consume(':'))
        return fail("expected ':' after key '" + key + "'");
      skipSpace();
      HeaderValue value;
      if (Status s = parseValue(key, value); !s)
        return s;
      entries.emplace_back(key, std::move(value));
      skipSpace();
      if (consume(','))
        continue;
      skipSpace();
      if (consume('}'))
        break;
      return fail("expected ',' or '}' after the value of '" + key + "'");
    }
    // numpy pads with spaces and ends with '\n'.
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\r' || text_[pos_] == '\0'))
      ++pos_;
    if (pos_ != text_.size())
      return fail("unexpected text after the header dict at offset " + std::to_string(pos_));
    return Status::success();
  }

private:
  Status fail(const std::string &what) const { return makeError(prefix_ + ".npy header: " + what); }

  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\r'))
      ++pos_;
  }
  bool consume(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool consumeWord(std::string_view word) {
    if (text_.substr(pos_, word.size()) == word) {
      pos_ += word.size();
      return true;
    }
    return false;
  }

  Status parseString(std::string &out, const char *what) {
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"'))
      return fail(std::string("expected ") + what + " at offset " + std::to_string(pos_));
    const char quote = text_[pos_++];
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\')
        return fail("escape sequences in strings are not supported (offset " + std::to_string(pos_) + ")");
      out += text_[pos_++];
    }
    if (!consume(quote))
      return fail("unterminated string starting '" + out.substr(0, 20) + "'");
    return Status::success();
  }

  Status parseValue(const std::string &key, HeaderValue &value) {
    if (pos_ < text_.size() && (text_[pos_] == '\'' || text_[pos_] == '"')) {
      value.kind = HeaderValue::String;
      return parseString(value.text, "a string");
    }
    if (consumeWord("True")) {
      value.kind = HeaderValue::Bool;
      value.flag = true;
      return Status::success();
    }
    if (consumeWord("False")) {
      value.kind = HeaderValue::Bool;
      value.flag = false;
      return Status::success();
    }
    if (consume('(')) {
      value.kind = HeaderValue::Tuple;
      while (true) {
        skipSpace();
        if (consume(')'))
          return Status::success();
        if (pos_ < text_.size() && text_[pos_] == '-')
          return fail("'" + key + "': negative dimension at offset " + std::to_string(pos_));
        if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9')
          return fail("'" + key + "': expected a non-negative integer at offset " + std::to_string(pos_));
        int64_t n = 0;
        while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
          const int digit = text_[pos_++] - '0';
          if (n > (std::numeric_limits<int64_t>::max() - digit) / 10)
            return fail("'" + key + "': dimension overflows int64");
          n = n * 10 + digit;
        }
        if (pos_ < text_.size() && text_[pos_] == 'L') // Python 2's long suffix (old numpy files)
          ++pos_;
        value.ints.push_back(n);
        skipSpace();
        if (consume(','))
          continue;
        skipSpace();
        if (consume(')'))
          return Status::success();
        return fail("'" + key + "': expected ',' or ')' in the tuple at offset " + std::to_string(pos_));
      }
    }
    if (pos_ < text_.size() && text_[pos_] == '[')
      return fail("'" + key + "': a list (a structured dtype) is not supported; " + kSupported);
    return fail("'" + key + "': expected a string, True, False or a tuple at offset " + std::to_string(pos_));
  }

  std::string_view text_;
  std::string prefix_;
  size_t pos_ = 0;
};

uint32_t readLE(std::string_view bytes, size_t offset, size_t width) {
  uint32_t v = 0;
  for (size_t i = 0; i < width; ++i)
    v |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[offset + i])) << (8 * i);
  return v;
}

template <typename T> T loadLE(const char *p) {
  // The hosts dsa runs on are little-endian (x86-64, aarch64): the bytes are the value.
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1)
    s += ",";
  return s + ")";
}

} // namespace

const char *npyDescr(ElementType type) {
  switch (type) {
  case ElementType::BF16:
    return "<V2";
  case ElementType::F32:
    return "<f4";
  case ElementType::I1:
    return "|b1";
  case ElementType::I32:
    return "<i4";
  case ElementType::I64:
  case ElementType::Index:
    return "<i8";
  }
  return "<f4";
}

Result<Tensor> parseNpy(std::string_view bytes, const std::string &source) {
  const std::string prefix = source + ": ";
  if (bytes.size() < kMagicSize + 2 || std::memcmp(bytes.data(), kMagic, kMagicSize) != 0)
    return makeError(prefix + "not a .npy file (the magic string \\x93NUMPY is missing; " +
                     std::to_string(bytes.size()) + " bytes)");
  const int major = static_cast<unsigned char>(bytes[6]);
  const int minor = static_cast<unsigned char>(bytes[7]);
  size_t lengthWidth = 0;
  if (major == 1 && minor == 0)
    lengthWidth = 2;
  else if ((major == 2 || major == 3) && minor == 0)
    lengthWidth = 4;
  else
    return makeError(prefix + ".npy version " + std::to_string(major) + "." + std::to_string(minor) +
                     " is not supported (1.0, 2.0, 3.0 are)");
  const size_t headerStart = kMagicSize + 2 + lengthWidth;
  if (bytes.size() < headerStart)
    return makeError(prefix + "truncated: the header length field needs " + std::to_string(headerStart) +
                     " bytes, the file has " + std::to_string(bytes.size()));
  const size_t headerLength = readLE(bytes, kMagicSize + 2, lengthWidth);
  if (headerLength > bytes.size() - headerStart)
    return makeError(prefix + "truncated: the header length field says " + std::to_string(headerLength) +
                     " bytes of header, the file has " + std::to_string(bytes.size() - headerStart) +
                     " after the length field");
  const std::string_view header = bytes.substr(headerStart, headerLength);

  std::vector<std::pair<std::string, HeaderValue>> entries;
  HeaderParser parser(header, prefix);
  if (Status s = parser.parse(entries); !s)
    return makeError(s.error());
  const HeaderValue *descr = nullptr, *fortran = nullptr, *shape = nullptr;
  for (const auto &[key, value] : entries) {
    const HeaderValue **slot = key == "descr" ? &descr : key == "fortran_order" ? &fortran : key == "shape" ? &shape
                                                                                                          : nullptr;
    if (!slot)
      return makeError(prefix + ".npy header: unknown key '" + key + "' (expected 'descr', 'fortran_order', 'shape')");
    if (*slot)
      return makeError(prefix + ".npy header: duplicate key '" + key + "'");
    *slot = &value;
  }
  for (auto [name, slot] : {std::pair{"descr", descr}, {"fortran_order", fortran}, {"shape", shape}})
    if (!slot)
      return makeError(prefix + ".npy header: missing key '" + name + "'");
  if (descr->kind != HeaderValue::String)
    return makeError(prefix + ".npy header: 'descr' must be a string; " + kSupported);
  if (fortran->kind != HeaderValue::Bool)
    return makeError(prefix + ".npy header: 'fortran_order' must be True or False");
  if (shape->kind != HeaderValue::Tuple)
    return makeError(prefix + ".npy header: 'shape' must be a tuple of integers");
  std::optional<DType> dtype = dtypeOfDescr(descr->text);
  if (!dtype) {
    std::string hint;
    if (!descr->text.empty() && descr->text[0] == '>')
      hint = " (big-endian: save the array with .astype('<" + descr->text.substr(1) + "') first)";
    return makeError(prefix + ".npy header: 'descr': unsupported dtype '" + descr->text + "'" + hint + "; " +
                     kSupported);
  }
  if (fortran->flag)
    return makeError(prefix + ".npy header: 'fortran_order' is True; only C-order arrays are read (save "
                              "numpy.ascontiguousarray(a))");

  // The data: exactly product(shape) * itemsize bytes after the header.
  int64_t count = 1;
  for (int64_t d : shape->ints) {
    if (d != 0 && count > std::numeric_limits<int64_t>::max() / d)
      return makeError(prefix + ".npy header: 'shape' " + shapeText(shape->ints) + ": the element count overflows");
    count *= d;
  }
  const size_t dataStart = headerStart + headerLength;
  const size_t available = bytes.size() - dataStart;
  if (count > 0 && static_cast<uint64_t>(count) > std::numeric_limits<uint64_t>::max() / dtype->itemSize)
    return makeError(prefix + ".npy header: 'shape' " + shapeText(shape->ints) + ": the byte size overflows");
  const uint64_t need = static_cast<uint64_t>(count) * dtype->itemSize;
  if (need > available)
    return makeError(prefix + "truncated data: 'shape' " + shapeText(shape->ints) + " of '" + descr->text +
                     "' needs " + std::to_string(need) + " bytes, the file has " + std::to_string(available));
  if (need < available)
    return makeError(prefix + "size mismatch: 'shape' " + shapeText(shape->ints) + " of '" + descr->text +
                     "' is " + std::to_string(need) + " bytes, the file has " + std::to_string(available - need) +
                     " more after them");

  Result<Tensor> made = Tensor::zeros(dtype->type, shape->ints);
  if (!made)
    return makeError(prefix + made.error());
  Tensor tensor = made.take();
  const char *data = bytes.data() + dataStart;
  switch (dtype->type) {
  case ElementType::BF16:
    for (int64_t i = 0; i < count; ++i)
      tensor.floats()[i] = numerics::bf16BitsToF32(loadLE<uint16_t>(data + 2 * i));
    break;
  case ElementType::F32:
    if (count > 0)
      std::memcpy(tensor.floats(), data, static_cast<size_t>(need));
    break;
  case ElementType::I32:
    for (int64_t i = 0; i < count; ++i)
      tensor.ints()[i] = loadLE<int32_t>(data + 4 * i);
    break;
  case ElementType::I64:
  case ElementType::Index:
    if (count > 0)
      std::memcpy(tensor.ints(), data, static_cast<size_t>(need));
    break;
  case ElementType::I1:
    for (int64_t i = 0; i < count; ++i) {
      const unsigned char b = static_cast<unsigned char>(data[i]);
      if (b > 1)
        return makeError(prefix + "'|b1' element " + std::to_string(i) + " is byte " + std::to_string(b) +
                         ", not 0 or 1");
      tensor.ints()[i] = b;
    }
    break;
  }
  return tensor;
}

Result<Tensor> readNpyFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return makeError(path + ": cannot open for reading: " + std::strerror(errno));
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad())
    return makeError(path + ": read error");
  return parseNpy(contents.str(), path);
}

Result<std::string> encodeNpy(const Tensor &tensor) {
  const int64_t n = tensor.numElements();
  const size_t stored = tensor.isFloat() ? tensor.floatVector().size() : tensor.intVector().size();
  if (static_cast<uint64_t>(n) != stored)
    return makeError("encodeNpy: the tensor " + tensor.typeString() + " holds " + std::to_string(stored) +
                     " elements, not " + std::to_string(n) + " (a placeholder Tensor?)");
  std::string dict = std::string("{'descr': '") + npyDescr(tensor.elementType()) +
                     "', 'fortran_order': False, 'shape': " + shapeText(tensor.shape()) + ", }";
  // numpy.lib.format._write_array_header: room for the first dimension to grow to 21 digits; then _wrap_header:
  // 1..64 spaces so that magic + version + length + dict + '\n' is a multiple of ARRAY_ALIGN; version 1.0 while
  // the header length fits 16 bits, else 2.0.
  if (tensor.rank() > 0)
    dict.append(21 - std::min<size_t>(21, std::to_string(tensor.dim(0)).size()), ' ');
  size_t lengthWidth = 2;
  size_t padding = kAlign - (kMagicSize + 2 + lengthWidth + dict.size() + 1) % kAlign;
  if (dict.size() + 1 + padding > 0xFFFF) {
    lengthWidth = 4;
    padding = kAlign - (kMagicSize + 2 + lengthWidth + dict.size() + 1) % kAlign;
  }
  dict.append(padding, ' ');
  dict += '\n';
  const size_t headerLength = dict.size();

  std::string out(kMagic, kMagicSize);
  out += static_cast<char>(lengthWidth == 2 ? 1 : 2);
  out += static_cast<char>(0);
  for (size_t i = 0; i < lengthWidth; ++i)
    out += static_cast<char>((headerLength >> (8 * i)) & 0xFF);
  out += dict;

  auto append = [&out](const void *p, size_t size) { out.append(static_cast<const char *>(p), size); };
  switch (tensor.elementType()) {
  case ElementType::BF16:
    for (int64_t i = 0; i < n; ++i) {
      const uint16_t bits = numerics::f32ToBf16Bits(tensor.floats()[i]);
      append(&bits, 2);
    }
    break;
  case ElementType::F32:
    append(tensor.floats(), static_cast<size_t>(n) * 4);
    break;
  case ElementType::I32:
    for (int64_t i = 0; i < n; ++i) {
      const int32_t v = static_cast<int32_t>(tensor.ints()[i]);
      append(&v, 4);
    }
    break;
  case ElementType::I64:
  case ElementType::Index:
    append(tensor.ints(), static_cast<size_t>(n) * 8);
    break;
  case ElementType::I1:
    for (int64_t i = 0; i < n; ++i)
      out += static_cast<char>(tensor.ints()[i] != 0 ? 1 : 0);
    break;
  }
  return out;
}

Status writeNpyFile(const Tensor &tensor, const std::string &path) {
  Result<std::string> bytes = encodeNpy(tensor);
  if (!bytes)
    return makeError(path + ": " + bytes.error());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return makeError(path + ": cannot open for writing: " + std::strerror(errno));
  out.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
  out.close();
  if (!out)
    return makeError(path + ": write error");
  return Status::success();
}

} // namespace dsa
