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
// Header-only so that core stays free of a JSON dependency: include it only where nlohmann_json is linked.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_SUPPORT_STRICTJSON_H
#define DSA_SUPPORT_STRICTJSON_H

#include "dsa/Support/Result.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <initializer_list>
#include <memory>
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

} // namespace dsa::json

#endif
