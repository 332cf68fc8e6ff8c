// A minimal JSON object writer for the tool's machine-readable output (one flat object per run).
//
// Example:
//   JsonObject json;
//   json.field("pattern", "window:256").field("nodes", int64_t{16384}).field("forward_ms", 1.25);
//   std::cout << json.str() << "\n";   // {"pattern": "window:256", "nodes": 16384, "forward_ms": 1.25}
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace edgeattn::cli {

/// Appends `text` to `out` as a quoted JSON string (RFC 8259 escaping).
inline void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += ch;  // bytes >= 0x80 pass through: UTF-8 stays UTF-8
        }
    }
  }
  out += '"';
}

/// A flat JSON object built field by field, in insertion order.
class JsonObject {
 public:
  JsonObject& field(std::string_view key, std::string_view value) {
    append_json_string(begin_field(key), value);
    return *this;
  }
  JsonObject& field(std::string_view key, const char* value) { return field(key, std::string_view(value)); }
  JsonObject& field(std::string_view key, const std::string& value) {
    return field(key, std::string_view(value));
  }
  JsonObject& field(std::string_view key, int64_t value) {
    begin_field(key) += std::to_string(value);
    return *this;
  }
  JsonObject& field(std::string_view key, int value) { return field(key, static_cast<int64_t>(value)); }
  JsonObject& field(std::string_view key, bool value) {
    begin_field(key) += value ? "true" : "false";
    return *this;
  }
  /// Non-finite numbers have no JSON spelling; they become null.
  JsonObject& field(std::string_view key, double value) {
    std::string& out = begin_field(key);
    if (!std::isfinite(value)) {
      out += "null";
    } else {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.6g", value);
      out += buf;
    }
    return *this;
  }

  /// A value that is already JSON (an array or a nested object's str()).
  JsonObject& raw_field(std::string_view key, std::string_view json) {
    begin_field(key) += json;
    return *this;
  }

  std::string str() const { return body_.empty() ? "{}" : "{" + body_ + "}"; }

 private:
  std::string& begin_field(std::string_view key) {
    if (!body_.empty()) body_ += ", ";
    append_json_string(body_, key);
    body_ += ": ";
    return body_;
  }
  std::string body_;
};

/// A JSON array of integers: [1, 2, 3].
template <class Range>
std::string json_int_array(const Range& values) {
  std::string out = "[";
  for (const auto v : values) out += (out.size() > 1 ? ", " : "") + std::to_string(static_cast<long long>(v));
  return out + "]";
}

/// A JSON array of reals, each printed with `format` (a printf conversion of one double, say
/// "%.6g"): [1.93481, 1.04012].
inline std::string json_real_array(const std::vector<double>& values, const char* format = "%.6g") {
  std::string out = "[";
  char buf[32];
  for (const double v : values) {
    if (out.size() > 1) out += ", ";
    std::snprintf(buf, sizeof buf, format, v);
    out += buf;
  }
  return out + "]";
}

/// A JSON array of reals with four decimals, e.g. accuracies: [0.8310, 0.8270].
inline std::string json_accuracy_array(const std::vector<double>& values) {
  return json_real_array(values, "%.4f");
}

/// A JSON array of strings.
template <class Range>
std::string json_string_array(const Range& values) {
  std::string out = "[";
  for (const auto& v : values) {
    if (out.size() > 1) out += ", ";
    append_json_string(out, v);
  }
  return out + "]";
}

}  // namespace edgeattn::cli
