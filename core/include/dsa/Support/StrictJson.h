//===- StrictJson.h - reading JSON files that must say exactly one thing (header-only, nlohmann-json) -----===//
//
// The project's JSON inputs (the golden file, a step description, dsa-golden's golden_layers.json) are read with
// nlohmann-json, which silently keeps the LAST of two equal keys and, when a reader looks keys up one by one,
// ignores keys nobody asked for. Both hide mistakes (a misspelt optional key, a duplicated field whose two values
// disagree). This header is the one place that catches them:
//   parseRejectingDuplicates(text)  parses `text`; an object holding a key twice is the error
//                                   "<path>: duplicate key (an object holds it twice; which value is meant cannot be
//                                   told)", with <path> as `fixture.window_size` or `functions[0].args[2].shape`;
//                                   malformed JSON is "malformed JSON at byte N: <parser message>".
//   checkKnownKeys(object, where, allowed)  an error "<where>.<key>: unknown key (expected one of: a, b, ...)" for
//                                   the first key of `object` (in document order for an
//                                   ordered_json, else in sorted order) that is not in `allowed` (a list of names,
//                                   fixed or built at run time); `where` empty names the top level.
//   FieldReader<Json>(object, path, style)  typed fields of one object (integers, numbers, booleans, strings,
//                                   lists, nested objects), each checked; the first error is kept with its key path
//                                   and later reads return defaults, so a reader reads every field and checks once.
//                                   Its wording (FieldMessages): Detailed (the golden file) says
//                                   "<path>.<key>: missing" or "<path>.<key>: expected an integer, got string";
//                                   Combined (the step description) says "<path>.<key>: missing or not an integer".
// Header-only so that core stays free of a JSON dependency: include it only where nlohmann_json is linked.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_SUPPORT_STRICTJSON_H
#define DSA_SUPPORT_STRICTJSON_H

#include "dsa/Support/Result.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace dsa::json {

/// A parser callback that finds the first key an object of the document holds twice: it tracks the path of the
/// objects and arrays the parser is in and the keys of each open object. `Json`: nlohmann::json or ordered_json.
template <class Json> class DuplicateKeys {
public:
  bool operator()(int /*depth*/, typename Json::parse_event_t event, Json &parsed) {
    using Event = typename Json::parse_event_t;
    switch (event) {
    case Event::object_start:
    case Event::array_start:
      stack_.push_back(Frame{event == Event::object_start, {}, {}, 0});
      break;
    case Event::key:
      if (!stack_.empty() && parsed.is_string()) {
        Frame &top = stack_.back();
        top.key = parsed.template get<std::string>();
        if (!top.keys.insert(top.key).second && first_.empty())
          first_ = path();
      }
      break;
    case Event::value:
      if (!stack_.empty() && !stack_.back().object)
        ++stack_.back().index;
      break;
    case Event::object_end:
    case Event::array_end:
      if (!stack_.empty())
        stack_.pop_back();
      if (!stack_.empty() && !stack_.back().object)
        ++stack_.back().index;
      break;
    }
    return true;
  }
  /// The JSON path of the first duplicate key (e.g. `fixture.window_size`), or empty.
  const std::string &first() const { return first_; }

private:
  struct Frame {
    bool object;
    std::set<std::string> keys;
    std::string key;  // objects: the current key
    size_t index = 0; // arrays: the current element
  };
  std::string path() const {
    std::string p;
    for (const Frame &f : stack_)
      p += f.object ? (p.empty() ? "" : ".") + f.key : "[" + std::to_string(f.index) + "]";
    return p;
  }
  std::vector<Frame> stack_;
  std::string first_;
};

/// Parses `text` as JSON; malformed text and a duplicate key are errors (file comment).
template <class Json = nlohmann::json> Result<Json> parseRejectingDuplicates(const std::string &text) {
  try {
    auto duplicates = std::make_shared<DuplicateKeys<Json>>();
    Json root = Json::parse(text, [duplicates](int depth, typename Json::parse_event_t event, Json &parsed) {
      return (*duplicates)(depth, event, parsed);
    });
    if (!duplicates->first().empty())
      return makeError(duplicates->first() +
                       ": duplicate key (an object holds it twice; which value is meant cannot be told)");
    return root;
  } catch (const typename Json::parse_error &e) {
    return makeError("malformed JSON at byte " + std::to_string(e.byte) + ": " + e.what());
  } catch (const std::exception &e) {
    return makeError(std::string("malformed JSON: ") + e.what());
  }
}

/// An error naming the first key of `object` that `allowed` does not list (file comment); success for a non-object.
template <class Json>
Status checkKnownKeys(const Json &object, const std::string &where, const std::vector<std::string> &allowed) {
  if (!object.is_object())
    return Status::success();
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (std::find(allowed.begin(), allowed.end(), it.key()) != allowed.end())
      continue;
    std::string expected;
    for (const std::string &k : allowed)
      expected += (expected.empty() ? "" : ", ") + k;
    return makeError((where.empty() ? "" : where + ".") + it.key() + ": unknown key (expected one of: " + expected +
                     ")");
  }
  return Status::success();
}
template <class Json>
Status checkKnownKeys(const Json &object, const std::string &where, std::initializer_list<const char *> allowed) {
  return checkKnownKeys(object, where, std::vector<std::string>(allowed.begin(), allowed.end()));
}

/// How a FieldReader words a field that is absent or of another JSON type (file comment).
enum class FieldMessages {
  /// "<key path>: missing"; "<key path>: expected an integer, got string" (a float is shown with its value:
  /// "got number 1e+12"); lists are "a list". The golden file's wording.
  Detailed,
  /// "<key path>: missing or not an integer" for both; lists are "an array". The step description's wording.
  Combined,
};

/// Reads typed fields of one JSON object (`Json`: nlohmann::json or ordered_json). Key paths are `path.key`
/// (`key` alone when `path` is empty) and `path.key[i]` for list elements. Every error, in both wordings: an
/// integer beyond int64 is "<key path>: integer N does not fit in i64" (unless the caller asks to wrap it); the
/// first error is kept and every later read returns a default (0, false, empty) without looking.
template <class Json> class FieldReader {
public:
  FieldReader(const Json &object, std::string path, FieldMessages messages = FieldMessages::Detailed)
      : object_(object), path_(std::move(path)), messages_(messages) {
    if (!object_.is_object())
      fail(path_, std::string("expected an object, got ") + object_.type_name());
  }

  bool ok() const { return error_.empty(); }
  /// The first error ("<key path>: <what>"), or empty.
  const std::string &error() const { return error_; }
  /// The first error as a Status.
  Status status() const { return ok() ? Status::success() : Status(makeError(error_)); }
  /// Records "<at>: <what>" unless an error is already kept.
  void fail(const std::string &at, const std::string &what) {
    if (error_.empty())
      error_ = at + ": " + what;
  }
  std::string keyPath(const std::string &key) const { return path_.empty() ? key : path_ + "." + key; }
  bool has(const std::string &key) const { return object_.is_object() && object_.contains(key); }

  /// The value of a required key of any type, or nullptr ("<key path>: missing" recorded).
  const Json *field(const std::string &key) { return lookup(key, nullptr); }

  // ---- scalars (`at` names the value in messages) ----
  bool asI64(const Json &j, const std::string &at, int64_t &out, bool wrapUnsigned = false) {
    if (!j.is_number_integer())
      return wrongType(at, "an integer", j, j.is_number_float() ? " " + j.dump() : "");
    if (j.is_number_unsigned()) {
      uint64_t u = j.template get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) && !wrapUnsigned) {
        fail(at, "integer " + std::to_string(u) + " does not fit in i64");
        return false;
      }
      out = static_cast<int64_t>(u);
      return true;
    }
    out = j.template get<int64_t>();
    return true;
  }
  bool asU64(const Json &j, const std::string &at, uint64_t &out) {
    if (!j.is_number_integer() || (!j.is_number_unsigned() && j.template get<int64_t>() < 0))
      return wrongType(at, "a non-negative integer", j, " " + j.dump());
    out = j.template get<uint64_t>();
    return true;
  }
  bool asF64(const Json &j, const std::string &at, double &out) {
    if (!j.is_number())
      return wrongType(at, "a number", j);
    out = j.template get<double>();
    return true;
  }

  /// Required fields.
  int64_t i64(const std::string &key) {
    int64_t v = 0;
    if (const Json *j = lookup(key, "an integer"))
      asI64(*j, keyPath(key), v);
    return v;
  }
  double f64(const std::string &key) {
    double v = 0;
    if (const Json *j = lookup(key, "a number"))
      asF64(*j, keyPath(key), v);
    return v;
  }
  bool boolean(const std::string &key) {
    const Json *j = lookup(key, "a boolean");
    if (!j)
      return false;
    if (!j->is_boolean())
      return wrongType(keyPath(key), "a boolean", *j);
    return j->template get<bool>();
  }
  std::string str(const std::string &key) { return stringField(key, "a string", false); }
  /// A string that is not "".
  std::string nonEmptyStr(const std::string &key) { return stringField(key, "a non-empty string", true); }
  /// An optional string: absent -> empty; present but not a string -> error.
  std::string optionalStr(const std::string &key) {
    if (!ok() || !has(key))
      return {};
    return str(key);
  }
  /// An optional integer: absent -> nullopt; present but not an integer -> error.
  std::optional<int64_t> optionalI64(const std::string &key) {
    if (!ok() || !has(key))
      return std::nullopt;
    return i64(key);
  }
  /// A string or null (null -> nullopt).
  std::optional<std::string> nullableStr(const std::string &key) {
    const Json *j = lookup(key, "a string or null");
    if (!j || j->is_null())
      return std::nullopt;
    if (!j->is_string()) {
      wrongType(keyPath(key), "a string or null", *j);
      return std::nullopt;
    }
    return j->template get<std::string>();
  }
  /// A required nested object, or nullptr (error recorded).
  const Json *object(const std::string &key) {
    const Json *j = lookup(key, "an object");
    if (j && !j->is_object()) {
      wrongType(keyPath(key), "an object", *j);
      return nullptr;
    }
    return j;
  }

  // ---- lists ----
  /// A required list, or nullptr (error recorded).
  const Json *list(const std::string &key) {
    const Json *j = lookup(key, listNoun());
    return j ? listAt(*j, keyPath(key), listNoun()) : nullptr;
  }
  /// The integers of the list `j` (`at` names it).
  std::vector<int64_t> i64s(const Json &j, const std::string &at, bool wrapUnsigned = false) {
    return elements<int64_t>(listAt(j, at, listNoun() + " of integers"), at,
                             [&](const Json &e, const std::string &p, int64_t &v) { asI64(e, p, v, wrapUnsigned); });
  }
  std::vector<int64_t> i64s(const std::string &key, bool wrapUnsigned = false) {
    const Json *j = list(key);
    return j ? i64s(*j, keyPath(key), wrapUnsigned) : std::vector<int64_t>{};
  }
  std::vector<uint64_t> u64s(const std::string &key) {
    return elements<uint64_t>(list(key), keyPath(key),
                              [&](const Json &e, const std::string &p, uint64_t &v) { asU64(e, p, v); });
  }
  /// The numbers of the list `j` (`at` names it).
  std::vector<double> f64s(const Json &j, const std::string &at) {
    return elements<double>(listAt(j, at, listNoun() + " of numbers"), at,
                            [&](const Json &e, const std::string &p, double &v) { asF64(e, p, v); });
  }
  std::vector<std::string> strs(const std::string &key) {
    return elements<std::string>(list(key), keyPath(key), [&](const Json &e, const std::string &p, std::string &v) {
      if (!e.is_string())
        wrongType(p, "a string", e);
      else
        v = e.template get<std::string>();
    });
  }
  /// A list of lists of integers (`at` names `j`).
  std::vector<std::vector<int64_t>> i64Matrix(const Json &j, const std::string &at, bool wrapUnsigned = false) {
    return elements<std::vector<int64_t>>(
        listAt(j, at, listNoun() + " of lists"), at,
        [&](const Json &e, const std::string &p, std::vector<int64_t> &v) { v = i64s(e, p, wrapUnsigned); });
  }

  const Json &object() const { return object_; }
  const std::string &path() const { return path_; }

private:
  /// `j` if it is a list, else nullptr with "expected <noun>" recorded.
  const Json *listAt(const Json &j, const std::string &at, const std::string &noun) {
    if (j.is_array())
      return &j;
    wrongType(at, noun, j);
    return nullptr;
  }
  /// read(element, "<at>[i]", value) for each element of `list` (none when it is nullptr) until an error.
  template <class T, class Read> std::vector<T> elements(const Json *list, const std::string &at, Read read) {
    std::vector<T> out;
    if (!list)
      return out;
    out.reserve(list->size());
    for (size_t i = 0; i < list->size() && ok(); ++i) {
      T v{};
      read((*list)[i], at + "[" + std::to_string(i) + "]", v);
      out.push_back(std::move(v));
    }
    return out;
  }
  std::string listNoun() const { return messages_ == FieldMessages::Detailed ? "a list" : "an array"; }
  /// The value of `key`, or nullptr with "missing" (Detailed, or no `noun`) / "missing or not <noun>" recorded.
  const Json *lookup(const std::string &key, const char *noun) { return lookup(key, std::string(noun ? noun : "")); }
  const Json *lookup(const std::string &key, const std::string &noun) {
    if (!ok() || !object_.is_object())
      return nullptr;
    auto it = object_.find(key);
    if (it == object_.end()) {
      fail(keyPath(key), messages_ == FieldMessages::Combined && !noun.empty() ? "missing or not " + noun : "missing");
      return nullptr;
    }
    return &*it;
  }
  /// Records that the value at `at` is not `noun`; returns false.
  bool wrongType(const std::string &at, const std::string &noun, const Json &got, const std::string &detail = "") {
    if (messages_ == FieldMessages::Combined)
      fail(at, "missing or not " + noun);
    else
      fail(at, "expected " + noun + ", got " + got.type_name() + detail);
    return false;
  }
  std::string stringField(const std::string &key, const char *noun, bool nonEmpty) {
    const Json *j = lookup(key, noun);
    if (!j)
      return {};
    if (!j->is_string() || (nonEmpty && j->template get<std::string>().empty())) {
      wrongType(keyPath(key), noun, *j, j->is_string() ? " \"\"" : "");
      return {};
    }
    return j->template get<std::string>();
  }

  const Json &object_;
  std::string path_;
  FieldMessages messages_;
  std::string error_;
};

} // namespace dsa::json

#endif
