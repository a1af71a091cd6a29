#include "json_value.hpp"

#include <cstdio>
#include <cstdlib>

#include "doppio/util/error.hpp"

namespace doppio {

const JsonValue* JsonValue::Find(const std::string& key) const {
  for (const auto& member : object) {
    if (member.first == key) return &member.second;
  }
  return nullptr;
}

namespace {

class Parser {
 public:
  Parser(const std::string& text, const std::string& source) : text_(text), source_(source) {}

  JsonValue Document() {
    JsonValue value = Value(0);
    Space();
    if (at_ != text_.size()) Fail("unexpected text after the JSON value");
    return value;
  }

 private:
  [[noreturn]] void Fail(const std::string& what) const {
    int line = 1, column = 1;
    for (std::size_t i = 0; i < at_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    DOPPIO_FAIL() << source_ << ":" << line << ":" << column << ": " << what;
  }

  void Space() {
    while (at_ < text_.size() &&
           (text_[at_] == ' ' || text_[at_] == '\n' || text_[at_] == '\t' || text_[at_] == '\r')) {
      ++at_;
    }
  }

  bool Take(char c) {
    Space();
    if (at_ < text_.size() && text_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }

  void Expect(char c) {
    if (!Take(c)) Fail(std::string("expected '") + c + "'");
  }

  bool Word(const char* word) {
    const std::string w(word);
    if (text_.compare(at_, w.size(), w) != 0) return false;
    at_ += w.size();
    return true;
  }

  JsonValue Value(int depth) {
    // Deep nesting is not what these files hold; refuse it instead of exhausting the stack.
    if (depth > 64) Fail("nested more than 64 levels");
    Space();
    if (at_ >= text_.size()) Fail("unexpected end of the file");
    JsonValue value;
    const char c = text_[at_];
    if (c == '{') {
      ++at_;
      value.kind = JsonValue::Kind::kObject;
      if (Take('}')) return value;
      do {
        Space();
        if (at_ >= text_.size() || text_[at_] != '"') Fail("expected a member name");
        std::string key = String();
        Expect(':');
        value.object.emplace_back(std::move(key), Value(depth + 1));
      } while (Take(','));
      Expect('}');
    } else if (c == '[') {
      ++at_;
      value.kind = JsonValue::Kind::kArray;
      if (Take(']')) return value;
      do {
        value.array.push_back(Value(depth + 1));
      } while (Take(','));
      Expect(']');
    } else if (c == '"') {
      value.kind = JsonValue::Kind::kString;
      value.string = String();
    } else if (Word("true")) {
      value.kind = JsonValue::Kind::kBool;
      value.boolean = true;
    } else if (Word("false")) {
      value.kind = JsonValue::Kind::kBool;
    } else if (Word("null")) {
      value.kind = JsonValue::Kind::kNull;
    } else {
      value.kind = JsonValue::Kind::kNumber;
      const char* begin = text_.c_str() + at_;
      char* end = nullptr;
      value.number = std::strtod(begin, &end);
      if (end == begin) Fail("expected a value");
      at_ += static_cast<std::size_t>(end - begin);
    }
    return value;
  }

  // A string literal at at_ (on its opening quote). \u escapes other than ASCII are kept as
  // '?': names in these files are ASCII.
  std::string String() {
    ++at_;
    std::string out;
    while (true) {
      if (at_ >= text_.size()) Fail("unterminated string");
      const char c = text_[at_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_ >= text_.size()) Fail("unterminated string");
      const char e = text_[at_++];
      switch (e) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'u': {
          if (at_ + 4 > text_.size()) Fail("bad \\u escape");
          const long code = std::strtol(text_.substr(at_, 4).c_str(), nullptr, 16);
          out += code < 128 ? static_cast<char>(code) : '?';
          at_ += 4;
          break;
        }
        default:
          out += e;
      }
    }
  }

  const std::string& text_;
  const std::string& source_;
  std::size_t at_ = 0;
};

}  // namespace

JsonValue ParseJson(const std::string& text, const std::string& source) {
  return Parser(text, source).Document();
}

std::string JsonQuote(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace doppio
