#pragma once

#include <string>
#include <utility>
#include <vector>

namespace doppio {

// A parsed JSON document, for the small files the tools exchange (`doppio time --json`).
struct JsonValue {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<JsonValue> array;
  std::vector<std::pair<std::string, JsonValue>> object;  // in the document's order

  // The member `key` of an object; null when there is none.
  const JsonValue* Find(const std::string& key) const;
};

// Parses `text`; throws Error naming `source` and the line and column of the first fault.
JsonValue ParseJson(const std::string& text, const std::string& source);

// `text` as a JSON string literal, quotes included.
std::string JsonQuote(const std::string& text);

}  // namespace doppio
