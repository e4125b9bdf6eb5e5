#include "proxy/resp.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

namespace rampart::proxy::resp {
namespace {

constexpr std::string_view kInvalidMultibulk = "ERR Protocol error: invalid multibulk length";
constexpr std::string_view kInvalidBulk = "ERR Protocol error: invalid bulk length";
constexpr std::string_view kUnbalancedQuotes = "ERR Protocol error: unbalanced quotes in request";
constexpr std::string_view kTooBigInline = "ERR Protocol error: too big inline request";
constexpr std::string_view kTooBigMbulkCount = "ERR Protocol error: too big mbulk count string";
constexpr std::string_view kTooBigBulkCount = "ERR Protocol error: too big bulk count string";
constexpr std::string_view kMissingCrlf = "ERR Protocol error: expected CRLF after bulk string";

// The smallest complete array element, "$0\r\n\r\n": bounds how many elements
// the bytes at hand can hold, so args.reserve() never trusts a header.
constexpr size_t kMinElementBytes = 6;

ParsedCommand Incomplete() { return ParsedCommand{}; }

ParsedCommand Error(std::string_view message) {
  ParsedCommand r;
  r.status = ParseStatus::kError;
  r.error = message;
  return r;
}

// redis's string2ll: optional '-', no '+', no leading zeros ("0" alone is
// fine, "-0" is not), at most 20 characters, no overflow.
bool ParseLength(std::string_view s, int64_t* value) {
  if (s.empty() || s.size() >= 21) return false;
  if (s == "0") {
    *value = 0;
    return true;
  }
  size_t i = 0;
  bool negative = s[0] == '-';
  if (negative && ++i == s.size()) return false;
  if (s[i] < '1' || s[i] > '9') return false;
  uint64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    unsigned digit = s[i] - '0';
    if (v > (std::numeric_limits<uint64_t>::max() - digit) / 10) return false;
    v = v * 10 + digit;
  }
  constexpr uint64_t kMax = std::numeric_limits<int64_t>::max();
  if (negative) {
    if (v > kMax + 1) return false;
    *value = v == kMax + 1 ? std::numeric_limits<int64_t>::min() : -static_cast<int64_t>(v);
  } else {
    if (v > kMax) return false;
    *value = static_cast<int64_t>(v);
  }
  return true;
}

// A "*N\r\n" or "$N\r\n" header line starting at in[pos] (the type byte).
// On kOk, *number is N and *next the offset after its '\n'.
ParseStatus ParseHeader(std::string_view in, size_t pos, size_t max_line, int64_t* number,
                        size_t* next, std::string_view too_big, std::string_view invalid,
                        ParsedCommand* error) {
  size_t digits = pos + 1;
  size_t avail = in.size() - digits;
  size_t window = avail > max_line ? max_line + 1 : avail;
  const void* cr = std::memchr(in.data() + digits, '\r', window);
  if (cr == nullptr) {
    if (window > max_line) {
      *error = Error(too_big);
      return ParseStatus::kError;
    }
    return ParseStatus::kIncomplete;
  }
  size_t cr_pos = static_cast<const char*>(cr) - in.data();
  if (cr_pos + 1 >= in.size()) return ParseStatus::kIncomplete;
  if (in[cr_pos + 1] != '\n' || !ParseLength(in.substr(digits, cr_pos - digits), number)) {
    *error = Error(invalid);
    return ParseStatus::kError;
  }
  *next = cr_pos + 2;
  return ParseStatus::kOk;
}

ParsedCommand ParseMultibulk(std::string_view in, const Limits& limits) {
  ParsedCommand r;
  int64_t count = 0;
  size_t pos = 0;
  switch (ParseHeader(in, 0, limits.max_inline_bytes, &count, &pos, kTooBigMbulkCount,
                      kInvalidMultibulk, &r)) {
    case ParseStatus::kOk: break;
    case ParseStatus::kIncomplete: return Incomplete();
    case ParseStatus::kError: return r;
  }
  if (count > 0 && static_cast<uint64_t>(count) > limits.max_array_elements) {
    return Error(kInvalidMultibulk);
  }
  // count <= 0 ("*0", "*-1", and as redis, any "*-N"): an empty command.
  if (count > 0) {
    r.args.reserve(std::min<uint64_t>(count, (in.size() - pos) / kMinElementBytes + 1));
  }
  for (int64_t i = 0; i < count; ++i) {
    if (pos >= in.size()) return Incomplete();
    if (in[pos] != '$') {
      std::string message = "ERR Protocol error: expected '$', got ' '";
      message[message.size() - 2] = in[pos];
      return Error(message);
    }
    int64_t len = 0;
    switch (ParseHeader(in, pos, limits.max_inline_bytes, &len, &pos, kTooBigBulkCount,
                        kInvalidBulk, &r)) {
      case ParseStatus::kOk: break;
      case ParseStatus::kIncomplete: return Incomplete();
      case ParseStatus::kError: return r;
    }
    if (len < 0 || static_cast<uint64_t>(len) > limits.max_bulk_bytes) return Error(kInvalidBulk);
    // The payload is skipped by its length; its terminator is checked as soon
    // as each byte of it is there, so a bad one fails before the rest arrives.
    size_t n = static_cast<size_t>(len);
    size_t avail = in.size() - pos;
    if (avail > n && in[pos + n] != '\r') return Error(kMissingCrlf);
    if (avail > n + 1 && in[pos + n + 1] != '\n') return Error(kMissingCrlf);
    if (avail < n + 2) return Incomplete();
    r.args.push_back(in.substr(pos, n));
    pos += n + 2;
  }
  r.status = ParseStatus::kOk;
  r.consumed = pos;
  return r;
}

// isspace() in the C locale, which sdssplitargs skips between arguments.
bool IsBlank(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

bool IsHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

int HexValue(char c) {
  if (c <= '9') return c - '0';
  return (c | 0x20) - 'a' + 10;
}

// One inline argument as it is unescaped. While every byte comes from the
// next position of the line it stays a view of the line; the first byte that
// does not (an escape, or a quote in the middle) copies it into `buf`.
class ArgBuilder {
 public:
  static constexpr size_t kNotInLine = std::string_view::npos;

  ArgBuilder(std::string_view line, std::string* buf) : line_(line), buf_(buf) {}

  // Appends c, which is line[src] (or not in the line: kNotInLine).
  void Add(char c, size_t src) {
    if (in_line_) {
      if (src != kNotInLine && (len_ == 0 || src == start_ + len_)) {
        if (len_ == 0) start_ = src;
        ++len_;
        return;
      }
      in_line_ = false;
      buf_offset_ = buf_->size();
      buf_->append(line_.data() + start_, len_);
    }
    buf_->push_back(c);
    ++len_;
  }

  bool in_line() const { return in_line_; }
  std::string_view view() const { return line_.substr(start_, len_); }
  size_t buf_offset() const { return buf_offset_; }
  size_t size() const { return len_; }

 private:
  std::string_view line_;
  std::string* buf_;
  bool in_line_ = true;
  size_t start_ = 0;
  size_t len_ = 0;
  size_t buf_offset_ = 0;
};

// sdssplitargs, except that a NUL byte is an ordinary byte (redis stops the
// line there). `line` has no '\n' and no trailing '\r'.
bool SplitInline(std::string_view line, ParsedCommand* r) {
  std::string buf;
  struct Unescaped {
    size_t arg, offset, size;
  };
  std::vector<Unescaped> unescaped;
  const size_t n = line.size();
  size_t p = 0;
  for (;;) {
    while (p < n && IsBlank(line[p])) ++p;
    if (p >= n) break;
    ArgBuilder arg(line, &buf);
    bool in_double = false, in_single = false, done = false;
    while (!done) {
      if (in_double) {
        if (p + 3 < n && line[p] == '\\' && line[p + 1] == 'x' && IsHex(line[p + 2]) &&
            IsHex(line[p + 3])) {
          arg.Add(static_cast<char>(HexValue(line[p + 2]) * 16 + HexValue(line[p + 3])),
                  ArgBuilder::kNotInLine);
          p += 3;
        } else if (p + 1 < n && line[p] == '\\') {
          ++p;
          char c = line[p];
          switch (c) {
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case 't': c = '\t'; break;
            case 'b': c = '\b'; break;
            case 'a': c = '\a'; break;
            default: break;
          }
          arg.Add(c, c == line[p] ? p : ArgBuilder::kNotInLine);
        } else if (p >= n) {
          return false;  // unterminated
        } else if (line[p] == '"') {
          if (p + 1 < n && !IsBlank(line[p + 1])) return false;
          done = true;
        } else {
          arg.Add(line[p], p);
        }
      } else if (in_single) {
        if (p + 1 < n && line[p] == '\\' && line[p + 1] == '\'') {
          ++p;
          arg.Add('\'', p);
        } else if (p >= n) {
          return false;
        } else if (line[p] == '\'') {
          if (p + 1 < n && !IsBlank(line[p + 1])) return false;
          done = true;
        } else {
          arg.Add(line[p], p);
        }
      } else if (p >= n) {
        done = true;
      } else {
        switch (line[p]) {
          case ' ':
          case '\r':
          case '\t': done = true; break;  // (sdssplitargs' '\n' ends the line here)
          case '"': in_double = true; break;
          case '\'': in_single = true; break;
          default: arg.Add(line[p], p); break;
        }
      }
      if (p < n) ++p;
    }
    if (!arg.in_line()) unescaped.push_back({r->args.size(), arg.buf_offset(), arg.size()});
    r->args.push_back(arg.view());
  }
  if (!unescaped.empty()) {
    auto storage = std::make_shared<const std::string>(std::move(buf));
    for (const Unescaped& u : unescaped) {
      r->args[u.arg] = std::string_view(storage->data() + u.offset, u.size);
    }
    r->storage = std::move(storage);
  }
  return true;
}

ParsedCommand ParseInline(std::string_view in, const Limits& limits) {
  // A line of at most max_inline_bytes has its '\n' within max + 2 bytes
  // (an optional '\r' before it), so the scan is bounded.
  size_t max = limits.max_inline_bytes;
  size_t window = in.size() - std::min(in.size(), max) > 2 ? max + 2 : in.size();  // no overflow
  const void* nl = std::memchr(in.data(), '\n', window);
  if (nl == nullptr) {
    // Too big as soon as the line's length without a final '\r' (which a
    // '\n' may still follow) is over the limit: the same verdict before and
    // after the '\n' arrives.
    size_t len = window - (window > 0 && in[window - 1] == '\r' ? 1 : 0);
    return len > limits.max_inline_bytes ? Error(kTooBigInline) : Incomplete();
  }
  size_t nl_pos = static_cast<const char*>(nl) - in.data();
  std::string_view line = in.substr(0, nl_pos);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.size() > limits.max_inline_bytes) return Error(kTooBigInline);
  ParsedCommand r;
  if (!SplitInline(line, &r)) return Error(kUnbalancedQuotes);
  r.status = ParseStatus::kOk;
  r.consumed = nl_pos + 1;
  return r;
}

}  // namespace

ParsedCommand ParseCommand(std::string_view input, const Limits& limits) {
  if (input.empty()) return Incomplete();
  if (input[0] == '*') return ParseMultibulk(input, limits);
  return ParseInline(input, limits);
}

Writer::Writer(std::string* out) : out_(out) {}

void Writer::SetProtocol(int version) { protocol_ = version == 3 ? 3 : 2; }

void Writer::Header(char type, std::string_view digits) {
  out_->push_back(type);
  out_->append(digits);
  out_->append("\r\n", 2);
}

void Writer::Header(char type, uint64_t n) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), n);
  Header(type, std::string_view(buf, end - buf));
}

void Writer::Line(char type, std::string_view s) {
  out_->push_back(type);
  size_t start = out_->size();
  out_->append(s);
  std::replace_if(out_->begin() + start, out_->end(), [](char c) { return c == '\r' || c == '\n'; },
                  ' ');
  out_->append("\r\n", 2);
}

void Writer::Simple(std::string_view s) { Line('+', s); }

void Writer::SimpleLines(std::span<const std::string_view> lines) {
  Array(lines.size());
  for (std::string_view line : lines) Simple(line);
}

void Writer::Error(std::string_view message) { Line('-', message); }

void Writer::Integer(int64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  Header(':', std::string_view(buf, end - buf));
}

void Writer::Bulk(std::string_view s) {
  Header('$', s.size());
  out_->append(s);
  out_->append("\r\n", 2);
}

void Writer::Null() {
  if (protocol_ == 3) {
    out_->append("_\r\n", 3);
  } else {
    out_->append("$-1\r\n", 5);
  }
}

void Writer::NullArray() {
  if (protocol_ == 3) {
    out_->append("_\r\n", 3);
  } else {
    out_->append("*-1\r\n", 5);
  }
}

void Writer::Array(size_t n) { Header('*', n); }

void Writer::Push(size_t n) { Header(protocol_ == 3 ? '>' : '*', n); }

void Writer::Map(size_t pairs) {
  if (protocol_ == 3) {
    Header('%', pairs);
  } else {
    Header('*', uint64_t{pairs} * 2);
  }
}

void Writer::DoubleText(std::string_view text) {
  if (protocol_ == 3) {
    Header(',', text);
  } else {
    Bulk(text);
  }
}

void Writer::Double(double d) {
  char buf[32];
  std::string_view text;
  if (std::isnan(d)) {
    text = "nan";
  } else if (std::isinf(d)) {
    text = d > 0 ? "inf" : "-inf";
  } else {
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), d);
    text = std::string_view(buf, end - buf);
  }
  DoubleText(text);
}

}  // namespace rampart::proxy::resp
