// libFuzzer target for the RESP parser and writer (proxy/resp.h). `make
// fuzz-test` builds it with ASan/UBSan and runs it for a bounded time on a
// copy of corpus/; a crash or a failed check below fails make.
//
// Beyond "no crash, no read outside the input", each input is parsed as a
// pipeline, twice (default and small limits, so every limit is reached), and
// each command is checked against the parser's contract:
//   kOk         0 < consumed <= input; args view the input or `storage`; the
//               input cut one byte short of `consumed` is kIncomplete; the
//               args written back by Writer parse to the same args.
//   kError      a "ERR Protocol error: " message; final (more bytes give the
//               same error); Writer::Error sends it as one line.
//   any status  a prefix of the input is kIncomplete, or the same result.
// The Writer gets the input as a simple string (one line out) and its first
// bytes as an integer and a double, which must read back exactly.
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "proxy/resp.h"

namespace {

using rampart::proxy::resp::Limits;
using rampart::proxy::resp::ParseCommand;
using rampart::proxy::resp::ParsedCommand;
using rampart::proxy::resp::ParseStatus;
using rampart::proxy::resp::Writer;

#define FUZZ_CHECK(cond)                                                 \
  do {                                                                   \
    if (!(cond)) {                                                       \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                      \
    }                                                                    \
  } while (0)

bool Within(std::string_view part, const char* begin, size_t size) {
  return part.data() >= begin && part.data() + part.size() <= begin + size;
}

bool SameResult(const ParsedCommand& a, const ParsedCommand& b) {
  if (a.status != b.status) return false;
  if (a.status == ParseStatus::kError) return a.error == b.error;
  return a.consumed == b.consumed && a.args == b.args;
}

void CheckCommand(std::string_view in, const ParsedCommand& c, const Limits& limits) {
  switch (c.status) {
    case ParseStatus::kOk: {
      FUZZ_CHECK(c.consumed > 0 && c.consumed <= in.size());
      for (std::string_view a : c.args) {
        FUZZ_CHECK(a.empty() || Within(a, in.data(), c.consumed) ||
                   (c.storage && Within(a, c.storage->data(), c.storage->size())));
      }
      FUZZ_CHECK(ParseCommand(in.substr(0, c.consumed - 1), limits).status ==
                 ParseStatus::kIncomplete);
      FUZZ_CHECK(SameResult(ParseCommand(in.substr(0, c.consumed), limits), c));
      if (!c.args.empty()) {
        std::string wire;
        Writer w(&wire);
        w.Array(c.args.size());
        for (std::string_view a : c.args) w.Bulk(a);
        Limits roomy;  // inline args may be longer than max_bulk_bytes
        ParsedCommand again = ParseCommand(wire, roomy);
        FUZZ_CHECK(again.status == ParseStatus::kOk && again.consumed == wire.size());
        FUZZ_CHECK(again.args == c.args);
      }
      break;
    }
    case ParseStatus::kError: {
      FUZZ_CHECK(std::string_view(c.error).starts_with("ERR Protocol error: "));
      std::string more(in);
      more += "\r\n*1\r\n$4\r\nPING\r\n";
      FUZZ_CHECK(SameResult(ParseCommand(more, limits), c));
      std::string reply;
      Writer w(&reply);
      w.Error(c.error);
      FUZZ_CHECK(reply.find_first_of("\r\n") == reply.size() - 2);
      break;
    }
    case ParseStatus::kIncomplete:
      FUZZ_CHECK(c.consumed == 0 && c.args.empty());
      break;
  }
  // Monotone in the bytes: a prefix is kIncomplete or already the answer.
  if (!in.empty()) {
    size_t cut = static_cast<unsigned char>(in.back()) * 31 % in.size();
    ParsedCommand early = ParseCommand(in.substr(0, cut), limits);
    FUZZ_CHECK(early.status == ParseStatus::kIncomplete || SameResult(early, c));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  Limits small;
  small.max_bulk_bytes = 16;
  small.max_array_elements = 8;
  small.max_inline_bytes = 32;
  for (const Limits& limits : {Limits(), small}) {
    std::string_view rest = input;
    for (;;) {
      ParsedCommand c = ParseCommand(rest, limits);
      CheckCommand(rest, c, limits);
      if (c.status != ParseStatus::kOk) break;
      rest.remove_prefix(c.consumed);
    }
  }
  // The writer's line replies never carry a CR or LF of their own.
  std::string out;
  Writer w(&out);
  w.SetProtocol(size % 2 ? 3 : 2);
  w.Simple(input);
  FUZZ_CHECK(out.find_first_of("\r\n") == out.size() - 2);
  // Numbers from the input's first bytes: integers exact, doubles the
  // shortest text that reads back as the same value.
  if (size >= sizeof(double)) {
    int64_t i;
    double d;
    std::memcpy(&i, data, sizeof(i));
    std::memcpy(&d, data, sizeof(d));
    out.clear();
    w.Integer(i);
    int64_t i_back = 0;
    FUZZ_CHECK(out.size() > 3 && out[0] == ':' &&
               std::from_chars(out.data() + 1, out.data() + out.size() - 2, i_back).ptr ==
                   out.data() + out.size() - 2 &&
               i_back == i);
    out.clear();
    w.Double(d);
    size_t text_at = w.protocol() == 3 ? 1 : out.find('\n') + 1;
    std::string_view text(out.data() + text_at, out.size() - text_at - 2);
    if (std::isnan(d)) {
      FUZZ_CHECK(text == "nan");
    } else if (std::isinf(d)) {
      FUZZ_CHECK(text == (d > 0 ? "inf" : "-inf"));
    } else {
      double d_back = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), d_back);
      FUZZ_CHECK(ec == std::errc() && end == text.data() + text.size() && d_back == d);
    }
    out.clear();
    w.Null();
    w.NullArray();
    w.Map(i & 0xffff);
    FUZZ_CHECK(out == (w.protocol() == 3 ? "_\r\n_\r\n%" + std::to_string(i & 0xffff) + "\r\n"
                                         : "$-1\r\n*-1\r\n*" + std::to_string((i & 0xffff) * 2) + "\r\n"));
  }
  return 0;
}
