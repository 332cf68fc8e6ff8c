// Internal: a cursor over the text of a file, for the line-oriented formats (Matrix Market, edge
// lists, adjacency lists, LINQS, OGB csv). It tracks the line number so every error names
// "<file>:<line>: ...", and parses numbers with std::from_chars (no locale, no allocation), which
// is what keeps the text readers above 100 MB/s on one core.
//
// Usage:
//   TextScanner s(text, path);
//   while (!s.at_end()) {
//     if (s.skip_blank_or_comment("#%")) continue;        // whole line consumed
//     const int64_t u = s.read_int64("source id");
//     const int64_t v = s.read_int64("target id");
//     s.expect_end_of_line();                               // or s.skip_rest_of_line()
//   }
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "edgeattn/core/error.hpp"

namespace edgeattn::data {

class TextScanner {
 public:
  /// A leading UTF-8 byte-order mark (Windows editors write one) is skipped: it would otherwise
  /// become part of the first token ("\ufeff35" as the first paper id of a LINQS file).
  TextScanner(std::string_view text, std::string file) : text_(text), file_(std::move(file)) {
    if (text_.starts_with("\xEF\xBB\xBF")) pos_ = 3;
  }

  bool at_end() const { return pos_ >= text_.size(); }
  /// 1-based number of the line the cursor is on.
  int64_t line() const { return line_; }
  const std::string& file() const { return file_; }
  size_t offset() const { return pos_; }

  /// Skips spaces and tabs (not newlines).
  void skip_spaces() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\r')) ++pos_;
  }
  /// Skips any whitespace, newlines included (line count follows).
  void skip_whitespace() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '\n')
        ++line_;
      else if (c != ' ' && c != '\t' && c != '\r')
        break;
      ++pos_;
    }
  }
  /// After optional spaces: true at '\n', end of text, or (if any) a character of `comment`.
  bool at_end_of_line(std::string_view comment = {}) {
    skip_spaces();
    return pos_ >= text_.size() || text_[pos_] == '\n' || comment.find(text_[pos_]) != std::string_view::npos;
  }
  /// If the current line is blank or starts (after spaces) with a character in `comment`, consumes
  /// it with its newline and returns true.
  bool skip_blank_or_comment(std::string_view comment) {
    const size_t save = pos_;
    if (at_end_of_line(comment)) {
      skip_rest_of_line();
      return true;
    }
    pos_ = save;
    return false;
  }
  /// Consumes up to and including the next '\n'.
  void skip_rest_of_line() {
    while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
    if (pos_ < text_.size()) {
      ++pos_;
      ++line_;
    }
  }
  /// The rest of the current line (without '\n' or a trailing '\r'), and moves to the next line.
  std::string_view read_line() {
    const size_t b = pos_;
    while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
    size_t e = pos_;
    if (e > b && text_[e - 1] == '\r') --e;
    if (pos_ < text_.size()) {
      ++pos_;
      ++line_;
    }
    return text_.substr(b, e - b);
  }
  /// Throws unless only spaces remain on the line (or a comment character follows); then moves on.
  void expect_end_of_line(std::string_view what_line = "the line", std::string_view comment = {}) {
    if (!at_end_of_line(comment)) fail("expected the end of ", what_line, ", found '", peek_token(), "'");
    skip_rest_of_line();
  }

  /// A position to come back to (see restore).
  struct Mark {
    size_t pos;
    int64_t line;
  };
  Mark mark() const { return {pos_, line_}; }
  void restore(Mark m) {
    pos_ = m.pos;
    line_ = m.line;
  }

  /// Fast path for the commonest edge-list line: two unsigned decimal numbers of at most 18
  /// digits each, separated by spaces or tabs, then optional spaces, tabs or '\r' and the newline
  /// (or the end of the text). On such a line, stores the numbers, consumes the line with its
  /// newline and returns true; on any other line (comments, signs, more columns, ...) consumes
  /// nothing and returns false, and the caller reads it with the general methods above.
  bool read_uint_pair_line(uint64_t& a, uint64_t& b) {
    const char* p = text_.data() + pos_;
    const char* const e = text_.data() + text_.size();
    if (!scan_uint(p, e, a) || !scan_separator(p, e) || !scan_uint(p, e, b)) return false;
    return finish_line(p, e);
  }

  /// The same fast path for a line "a b value" (a Matrix Market entry): two unsigned numbers as
  /// above, then a decimal value that converts exactly in one IEEE operation - a sign, at most 19
  /// significant digits with an optional '.', and an optional exponent, whose power of ten is
  /// within 10^±22 and whose digits are at most 2^53 (Clinger's fast path, also the first case of
  /// fast_float): `value` is then the correctly rounded double, the same as std::from_chars
  /// gives. With `integer_only` a '.' or an exponent is not taken. Any other line (more digits,
  /// "inf", hexadecimal, ...) consumes nothing and returns false.
  bool read_uint_pair_value_line(uint64_t& a, uint64_t& b, double& value, bool integer_only) {
    const char* p = text_.data() + pos_;
    const char* const e = text_.data() + text_.size();
    if (!scan_uint(p, e, a) || !scan_separator(p, e) || !scan_uint(p, e, b) || !scan_separator(p, e) ||
        !scan_exact_decimal(p, e, integer_only, value))
      return false;
    return finish_line(p, e);
  }

  /// Next token of non-space characters (spaces/tabs separate; does not cross lines).
  std::string_view read_token(std::string_view what) {
    skip_spaces();
    const size_t b = pos_;
    while (pos_ < text_.size() && !is_separator(text_[pos_])) ++pos_;
    if (pos_ == b) fail("expected ", what, ", found ", describe_here(b));
    return text_.substr(b, pos_ - b);
  }
  /// Next field up to `sep` or the end of the line (fields may contain spaces); consumes `sep`.
  std::string_view read_field(char sep, std::string_view what) {
    if (pos_ >= text_.size() || text_[pos_] == '\n') fail("expected ", what, ", found the end of the line");
    const size_t b = pos_;
    while (pos_ < text_.size() && text_[pos_] != sep && text_[pos_] != '\n') ++pos_;
    size_t e = pos_;
    if (e > b && text_[e - 1] == '\r') --e;
    if (pos_ < text_.size() && text_[pos_] == sep) ++pos_;
    return text_.substr(b, e - b);
  }

  int64_t read_int64(std::string_view what) { return read_number<int64_t>(what); }
  double read_double(std::string_view what) { return read_number<double>(what); }
  float read_float(std::string_view what) { return read_number<float>(what); }

  /// Throws ParseError "<file>:<line>: <args...>".
  template <class... Args>
  [[noreturn]] void fail(Args&&... args) const {
    raise<ParseError>(file_, ":", line_, ": ", std::forward<Args>(args)...);
  }

  /// Throws ParseError "<file>:<line>: <args...>" for an earlier line (e.g. one taken whole with
  /// read_line, after which line() has moved on).
  template <class... Args>
  [[noreturn]] void fail_at(int64_t line, Args&&... args) const {
    raise<ParseError>(file_, ":", line, ": ", std::forward<Args>(args)...);
  }

  /// Parses a whole token as a number of type T (used for fields obtained elsewhere).
  template <class T>
  T parse(std::string_view token, std::string_view what) const {
    T value{};
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
    if (ec == std::errc::result_out_of_range) fail(what, " '", token, "' is out of range");
    if (ec != std::errc() || end != token.data() + token.size())
      fail("expected ", what, " (a number), found '", token, "'");
    return value;
  }

 private:
  static bool is_separator(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
  static bool is_digit(char c) { return static_cast<unsigned char>(c - '0') < 10; }

  // The fast paths' pieces: each advances p over what it accepts and says whether it did.
  // An unsigned decimal of 1 to 18 digits (so it cannot overflow).
  static bool scan_uint(const char*& p, const char* e, uint64_t& v) {
    const char* const first = p;
    uint64_t x = 0;
    for (; p < e && is_digit(*p); ++p) x = x * 10 + static_cast<uint64_t>(*p - '0');
    v = x;
    return p > first && p - first <= 18;
  }
  // One or more spaces or tabs.
  static bool scan_separator(const char*& p, const char* e) {
    if (p >= e || (*p != ' ' && *p != '\t')) return false;
    do ++p;
    while (p < e && (*p == ' ' || *p == '\t'));
    return true;
  }
  // Trailing spaces, tabs or '\r', then '\n' or the end: commits the line (pos_, line_).
  bool finish_line(const char* p, const char* e) {
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\r')) ++p;
    if (p < e) {
      if (*p != '\n') return false;
      ++p;
      ++line_;
    }
    pos_ = static_cast<size_t>(p - text_.data());
    return true;
  }
  // See read_uint_pair_value_line.
  static bool scan_exact_decimal(const char*& p, const char* e, bool integer_only, double& v) {
    static constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                        1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                        1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    const char* q = p;
    bool negative = false;
    if (q < e && (*q == '-' || *q == '+')) negative = *q++ == '-';
    uint64_t w = 0;
    int digits = 0, exponent = 0;
    for (; q < e && is_digit(*q); ++q, ++digits) w = w * 10 + static_cast<uint64_t>(*q - '0');
    if (q < e && *q == '.') {
      if (integer_only) return false;
      const char* const fraction = ++q;
      for (; q < e && is_digit(*q) && digits < 20; ++q, ++digits)
        w = w * 10 + static_cast<uint64_t>(*q - '0');
      exponent = -static_cast<int>(q - fraction);
    }
    if (digits == 0 || digits > 19) return false;
    if (q < e && (*q == 'e' || *q == 'E')) {
      if (integer_only) return false;
      ++q;
      bool negative_exponent = false;
      if (q < e && (*q == '-' || *q == '+')) negative_exponent = *q++ == '-';
      const char* const first = q;
      int x = 0;
      for (; q < e && is_digit(*q) && q - first < 3; ++q) x = x * 10 + (*q - '0');
      if (q == first || (q < e && is_digit(*q))) return false;
      exponent += negative_exponent ? -x : x;
    }
    if (w > (uint64_t{1} << 53) || exponent < -22 || exponent > 22) return false;
    double d = static_cast<double>(w);  // exact
    d = exponent < 0 ? d / kPow10[-exponent] : d * kPow10[exponent];
    if (integer_only && w == 0) negative = false;  // "-0" is the integer 0, as read_int64 reads it
    v = negative ? -d : d;
    p = q;
    return true;
  }

  template <class T>
  T read_number(std::string_view what) {
    skip_spaces();
    const char* b = text_.data() + pos_;
    const char* e = text_.data() + text_.size();
    if (b < e && *b == '+') ++b;  // from_chars rejects a leading '+'
    T value{};
    const auto [end, ec] = std::from_chars(b, e, value);
    if (ec == std::errc::result_out_of_range) fail(what, " '", peek_token(), "' is out of range");
    if (ec != std::errc() || (end < e && !is_separator(*end) && *end != ',')) {
      if (pos_ >= text_.size() || text_[pos_] == '\n') fail("expected ", what, ", found the end of the line");
      fail("expected ", what, " (a number), found '", peek_token(), "'");
    }
    pos_ = static_cast<size_t>(end - text_.data());
    if (pos_ < text_.size() && text_[pos_] == ',') ++pos_;  // csv
    return value;
  }
  std::string peek_token() const {
    size_t e = pos_;
    while (e < text_.size() && !is_separator(text_[e]) && e - pos_ < 40) ++e;
    return std::string(text_.substr(pos_, e - pos_));
  }
  std::string describe_here(size_t p) const {
    if (p >= text_.size() || text_[p] == '\n') return "the end of the line";
    // Appending (not "'" + token + "'") avoids a GCC 12 -Wrestrict false positive.
    std::string out(1, '\'');
    out.append(peek_token());
    out.push_back('\'');
    return out;
  }

  std::string_view text_;
  std::string file_;
  size_t pos_ = 0;
  int64_t line_ = 1;
};

/// Rows of comma- or space-separated reals (node or edge attributes), all as long as the first:
/// `values` row-major [rows, cols]. skip_blank: blank lines are skipped; max_rows >= 0: a row
/// beyond it fails with "<file>:<line>: " + too_many (before it is read: the text may be huge).
struct FloatRows {
  std::vector<float> values;
  int64_t rows = 0, cols = 0;
};

inline FloatRows read_float_rows(TextScanner& s, std::string_view what, bool skip_blank,
                                 int64_t max_rows = -1, std::string_view too_many = {}) {
  FloatRows r;
  while (!s.at_end()) {
    if (skip_blank && s.skip_blank_or_comment("")) continue;
    if (max_rows >= 0 && r.rows == max_rows) s.fail(too_many);
    int64_t c = 0;
    do {
      r.values.push_back(s.read_float(what));
      ++c;
    } while (!s.at_end_of_line());
    if (r.rows == 0)
      r.cols = c;
    else if (c != r.cols)
      s.fail("the row has ", c, " values, expected ", r.cols, " (as on line 1)");
    s.skip_rest_of_line();
    ++r.rows;
  }
  return r;
}

}  // namespace edgeattn::data
