#include "proxy/resp.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace rampart::proxy::resp {
namespace {

using namespace std::string_literals;
using Args = std::vector<std::string>;

Args Strings(const ParsedCommand& c) { return Args(c.args.begin(), c.args.end()); }

// The arguments of the one complete command `in` (which must be all of it).
Args ParseAll(std::string_view in, const Limits& limits = Limits()) {
  ParsedCommand c = ParseCommand(in, limits);
  EXPECT_EQ(c.status, ParseStatus::kOk) << testing::PrintToString(in) << ": " << c.error;
  EXPECT_EQ(c.consumed, in.size()) << testing::PrintToString(in);
  return Strings(c);
}

// The error message for `in`; "kOk" or "kIncomplete" if it is not an error.
std::string ErrorOf(std::string_view in, const Limits& limits = Limits()) {
  ParsedCommand c = ParseCommand(in, limits);
  if (c.status == ParseStatus::kOk) return "kOk";
  if (c.status == ParseStatus::kIncomplete) return "kIncomplete";
  return c.error;
}

bool Incomplete(std::string_view in, const Limits& limits = Limits()) {
  return ParseCommand(in, limits).status == ParseStatus::kIncomplete;
}

// Every command parsed from the front of `in`, one after another by
// `consumed`, up to the first one that is not kOk (whose status is *last).
std::vector<Args> ParseStream(std::string_view in, ParseStatus* last,
                              const Limits& limits = Limits()) {
  std::vector<Args> out;
  for (;;) {
    ParsedCommand c = ParseCommand(in, limits);
    *last = c.status;
    if (c.status != ParseStatus::kOk) return out;
    EXPECT_GT(c.consumed, 0u);
    out.push_back(Strings(c));
    in.remove_prefix(c.consumed);
  }
}

TEST(RespParseTest, ArrayOfBulkStrings) {
  EXPECT_EQ(ParseAll("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"), (Args{"GET", "k"}));
  EXPECT_EQ(ParseAll("*1\r\n$4\r\nPING\r\n"), (Args{"PING"}));
  EXPECT_EQ(ParseAll("*3\r\n$3\r\nSET\r\n$0\r\n\r\n$2\r\nv1\r\n"), (Args{"SET", "", "v1"}));
}

TEST(RespParseTest, ArgsViewTheInput) {
  std::string in = "*2\r\n$3\r\nGET\r\n$1\r\nk\r\nGET  key\r\n";
  ParsedCommand c = ParseCommand(in, Limits());
  ASSERT_EQ(c.status, ParseStatus::kOk);
  EXPECT_EQ(c.args[0].data(), in.data() + 8);
  EXPECT_EQ(c.args[1].data(), in.data() + 17);
  EXPECT_EQ(c.storage, nullptr);
  ParsedCommand d = ParseCommand(std::string_view(in).substr(c.consumed), Limits());
  ASSERT_EQ(d.status, ParseStatus::kOk);
  EXPECT_EQ(d.args[1].data(), in.data() + c.consumed + 5);
  EXPECT_EQ(d.storage, nullptr);
}

TEST(RespParseTest, BinarySafeBulk) {
  std::string payload = "a\0b\r\nc$3\r\n*1\r\n"s;
  std::string in = "*2\r\n$3\r\nSET\r\n$" + std::to_string(payload.size()) + "\r\n" + payload + "\r\n";
  EXPECT_EQ(ParseAll(in), (Args{"SET", payload}));
  std::string all_bytes;
  for (int b = 0; b < 256; ++b) all_bytes.push_back(static_cast<char>(b));
  EXPECT_EQ(ParseAll("*1\r\n$256\r\n" + all_bytes + "\r\n"), (Args{all_bytes}));
}

TEST(RespParseTest, InlineCommands) {
  EXPECT_EQ(ParseAll("GET k\r\n"), (Args{"GET", "k"}));
  EXPECT_EQ(ParseAll("GET k\n"), (Args{"GET", "k"}));
  EXPECT_EQ(ParseAll("  SET\tk  v \t\r\n"), (Args{"SET", "k", "v"}));
  EXPECT_EQ(ParseAll("PING\r\n"), (Args{"PING"}));
  // Only '*' starts an array; anything else, '$' too, is an inline line.
  EXPECT_EQ(ParseAll("$3\r\n"), (Args{"$3"}));
  EXPECT_EQ(ParseAll(":1 +OK\n"), (Args{":1", "+OK"}));
  // A lone '\r' splits like a space; \v and \f are skipped between arguments
  // but belong to an unquoted argument (as in redis).
  EXPECT_EQ(ParseAll("ECHO a\rb\r\n"), (Args{"ECHO", "a", "b"}));
  EXPECT_EQ(ParseAll("ECHO\va\r\n"), (Args{"ECHO\va"}));
  EXPECT_EQ(ParseAll("\vECHO \fa\r\n"), (Args{"ECHO", "a"}));
  // NUL is an ordinary byte here (redis would stall on it).
  EXPECT_EQ(ParseAll("SET k a\0b\r\n"s), (Args{"SET", "k", "a\0b"s}));
  EXPECT_EQ(ParseAll("\xff\xfe k\n"), (Args{"\xff\xfe", "k"}));
}

TEST(RespParseTest, EmptyCommandsHaveNoArgs) {
  for (std::string_view in : {"\r\n", "\n", "   \r\n", " \t \n", "*0\r\n", "*-1\r\n", "*-5\r\n",
                              "*-9223372036854775808\r\n"}) {
    ParsedCommand c = ParseCommand(in, Limits());
    EXPECT_EQ(c.status, ParseStatus::kOk) << testing::PrintToString(in);
    EXPECT_EQ(c.consumed, in.size()) << testing::PrintToString(in);
    EXPECT_TRUE(c.args.empty()) << testing::PrintToString(in);
  }
}

TEST(RespParseTest, InlineQuoting) {
  // Each case checked against redis-server 7.0 (ECHO's reply) where redis
  // takes it; NUL bytes are the one departure.
  struct Case {
    std::string in;
    Args args;
  } cases[] = {
      {R"(ECHO "a\x41b\n")", {"ECHO", "aAb\n"}},
      {R"(ECHO "hello world")", {"ECHO", "hello world"}},
      {R"(ECHO "\r\n\t\b\a\\\"")", {"ECHO", "\r\n\t\b\a\\\""}},
      {R"(ECHO "\q\xZZ\x4")", {"ECHO", "qxZZx4"}},
      {R"(ECHO "\x00\xfF\X41")", {"ECHO", "\0\xff"s + "X41"}},
      {R"(ECHO 'a\'b')", {"ECHO", "a'b"}},
      {R"(ECHO 'a\nb"c')", {"ECHO", "a\\nb\"c"}},
      {R"(ECHO a"b c")", {"ECHO", "ab c"}},
      {R"(ECHO x'y z')", {"ECHO", "xy z"}},
      {R"(ECHO "" '')", {"ECHO", "", ""}},
      {"ECHO \"a\"\vb", {"ECHO", "a", "b"}},
      {"ECHO \"a\"\tb", {"ECHO", "a", "b"}},
      {"ECHO \"a b\"", {"ECHO", "a b"}},
      {"\"SET\" 'k' \"v\"", {"SET", "k", "v"}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ParseAll(c.in + "\r\n"), c.args) << c.in;
    EXPECT_EQ(ParseAll(c.in + "\n"), c.args) << c.in;
  }
}

TEST(RespParseTest, QuotedArgsViewInputOrStorage) {
  std::string in = R"(SET "k" "a\nb" 'c d' x"y")" "\r\n";
  ParsedCommand c = ParseCommand(in, Limits());
  ASSERT_EQ(c.status, ParseStatus::kOk);
  EXPECT_EQ(Strings(c), (Args{"SET", "k", "a\nb", "c d", "xy"}));
  // Unchanged bytes are views of the input; the rest view `storage`.
  EXPECT_EQ(c.args[1].data(), in.data() + 5);
  EXPECT_EQ(c.args[3].data(), in.data() + 16);
  ASSERT_NE(c.storage, nullptr);
  for (int i : {2, 4}) {
    EXPECT_GE(c.args[i].data(), c.storage->data());
    EXPECT_LE(c.args[i].data() + c.args[i].size(), c.storage->data() + c.storage->size());
  }
  // Copies and moves keep the views valid.
  ParsedCommand copy = c;
  ParsedCommand moved = std::move(c);
  c = ParsedCommand();
  EXPECT_EQ(Strings(copy), (Args{"SET", "k", "a\nb", "c d", "xy"}));
  EXPECT_EQ(Strings(moved), (Args{"SET", "k", "a\nb", "c d", "xy"}));
}

TEST(RespParseTest, PipelinedCommandsOneAfterAnother) {
  std::string payload = "x\r\ny\0z"s;
  std::string in = "*2\r\n$3\r\nGET\r\n$1\r\na\r\n"
                   "PING\r\n"
                   "\r\n"
                   "*0\r\n"
                   "*3\r\n$3\r\nSET\r\n$1\r\nb\r\n$6\r\n" + payload + "\r\n"
                   "SET c \"q\\x41\"\n"
                   "*-1\r\n"
                   "*1\r\n$4\r\nQUIT\r\n";
  const std::vector<Args> want = {{"GET", "a"}, {"PING"}, {}, {}, {"SET", "b", payload},
                                  {"SET", "c", "qA"}, {}, {"QUIT"}};
  ParseStatus last;
  EXPECT_EQ(ParseStream(in, &last), want);
  EXPECT_EQ(last, ParseStatus::kIncomplete);

  // However the bytes arrive, the parser sees kIncomplete until a command is
  // whole and then the same command: feed the buffer in two pieces split at
  // every point, and byte by byte.
  for (size_t split = 0; split <= in.size(); ++split) {
    std::string buffer = in.substr(0, split);
    std::vector<Args> got = ParseStream(buffer, &last);
    ASSERT_EQ(last, ParseStatus::kIncomplete) << split;
    ASSERT_LE(got.size(), want.size());
    EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin())) << split;
  }
  std::vector<Args> got;
  std::string buffer;
  for (char byte : in) {
    buffer.push_back(byte);
    ParsedCommand c = ParseCommand(buffer, Limits());
    ASSERT_NE(c.status, ParseStatus::kError) << c.error;
    if (c.status == ParseStatus::kOk) {
      EXPECT_EQ(c.consumed, buffer.size());  // whole at the last byte, not before
      got.push_back(Strings(c));
      buffer.erase(0, c.consumed);
    }
  }
  EXPECT_EQ(got, want);
  EXPECT_TRUE(buffer.empty());
}

TEST(RespParseTest, EveryPrefixOfACommandIsIncomplete) {
  for (std::string in : {"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"s, "*1\r\n$0\r\n\r\n"s, "*0\r\n"s,
                         "*-1\r\n"s, "GET k\r\n"s, "GET \"a\\x41\"\n"s, "\r\n"s}) {
    for (size_t n = 0; n < in.size(); ++n) {
      EXPECT_TRUE(Incomplete(in.substr(0, n))) << testing::PrintToString(in) << " cut at " << n;
    }
  }
}

TEST(RespParseTest, ErrorMessages) {
  struct Case {
    std::string in;
    std::string error;
  } cases[] = {
      {"*x\r\n", "ERR Protocol error: invalid multibulk length"},
      {"*\r\n", "ERR Protocol error: invalid multibulk length"},
      {"*-0\r\n", "ERR Protocol error: invalid multibulk length"},
      {"*01\r\n", "ERR Protocol error: invalid multibulk length"},
      {"*+1\r\n", "ERR Protocol error: invalid multibulk length"},
      {"*1 \r\n", "ERR Protocol error: invalid multibulk length"},
      {"*99999999999999999999\r\n", "ERR Protocol error: invalid multibulk length"},
      {"*3000000000\r\n", "ERR Protocol error: invalid multibulk length"},
      {"*1\rx", "ERR Protocol error: invalid multibulk length"},  // stricter than redis
      {"*1\r\n$-1\r\n", "ERR Protocol error: invalid bulk length"},
      {"*1\r\n$x\r\n", "ERR Protocol error: invalid bulk length"},
      {"*1\r\n$\r\n", "ERR Protocol error: invalid bulk length"},
      {"*1\r\n$+4\r\n", "ERR Protocol error: invalid bulk length"},
      {"*1\r\n$04\r\n", "ERR Protocol error: invalid bulk length"},
      {"*1\r\n$-0\r\n", "ERR Protocol error: invalid bulk length"},
      {"*1\r\n$600000000\r\n", "ERR Protocol error: invalid bulk length"},
      {"*1\r\n$4\rx", "ERR Protocol error: invalid bulk length"},  // stricter than redis
      {"*1\r\nx", "ERR Protocol error: expected '$', got 'x'"},
      {"*2\r\n$1\r\na\r\n:1\r\n", "ERR Protocol error: expected '$', got ':'"},
      {"*1\r\n\r\n", "ERR Protocol error: expected '$', got '\r'"},
      {"ECHO \"a\"b\r\n", "ERR Protocol error: unbalanced quotes in request"},
      {"ECHO \"ab\r\n", "ERR Protocol error: unbalanced quotes in request"},
      {"ECHO \"ab\\\"\r\n", "ERR Protocol error: unbalanced quotes in request"},
      {"ECHO \"ab\\\n", "ERR Protocol error: unbalanced quotes in request"},
      {"ECHO 'ab\r\n", "ERR Protocol error: unbalanced quotes in request"},
      {"ECHO 'a'b\r\n", "ERR Protocol error: unbalanced quotes in request"},
      {"ECHO \"a\"\0\r\n"s, "ERR Protocol error: unbalanced quotes in request"},
      {std::string(70000, 'A'), "ERR Protocol error: too big inline request"},
      {"ECHO " + std::string(70000, 'A') + "\r\n", "ERR Protocol error: too big inline request"},
      {"*" + std::string(70000, '1'), "ERR Protocol error: too big mbulk count string"},
      {"*1\r\n$" + std::string(70000, '1'), "ERR Protocol error: too big bulk count string"},
      // Stricter than redis, which takes any two bytes after a payload.
      {"*1\r\n$4\r\nPINGxx", "ERR Protocol error: expected CRLF after bulk string"},
      {"*1\r\n$4\r\nPINGx", "ERR Protocol error: expected CRLF after bulk string"},
      {"*1\r\n$4\r\nPING\rx", "ERR Protocol error: expected CRLF after bulk string"},
      {"*1\r\n$4\r\nPING\n\r", "ERR Protocol error: expected CRLF after bulk string"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ErrorOf(c.in), c.error) << testing::PrintToString(c.in);
    // Final: more bytes give the same error.
    EXPECT_EQ(ErrorOf(c.in + "*1\r\n$4\r\nPING\r\n"), c.error) << testing::PrintToString(c.in);
  }
}

TEST(RespParseTest, ErrorsReachTheClientAsRedisSendsThem) {
  std::string out;
  Writer w(&out);
  w.Error(ErrorOf("*1\r\n\r\n"));
  EXPECT_EQ(out, "-ERR Protocol error: expected '$', got ' '\r\n");
}

TEST(RespParseTest, IncompleteUntilTheLineOrPayloadIsThere) {
  for (std::string_view in : {"", "*", "*1", "*1\r", "*1\r\n", "*1\r\n$", "*1\r\n$4", "*1\r\n$4\r",
                              "*1\r\n$4\r\n", "*1\r\n$4\r\nPIN", "*1\r\n$4\r\nPING",
                              "*1\r\n$4\r\nPING\r", "*abc", "*1\r\n$abc", "GET", "GET k\r",
                              "ECHO \"unterminated", "*2\r\n$1\r\na\r\n"}) {
    EXPECT_TRUE(Incomplete(in)) << testing::PrintToString(in);
  }
}

TEST(RespParseTest, LimitsAtAndOverTheBound) {
  Limits limits;
  limits.max_bulk_bytes = 8;
  limits.max_array_elements = 3;
  limits.max_inline_bytes = 10;

  EXPECT_EQ(ParseAll("*1\r\n$8\r\n12345678\r\n", limits), (Args{"12345678"}));
  EXPECT_EQ(ErrorOf("*1\r\n$9\r\n", limits), "ERR Protocol error: invalid bulk length");

  EXPECT_EQ(ParseAll("*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n", limits), (Args{"a", "b", "c"}));
  EXPECT_EQ(ErrorOf("*4\r\n", limits), "ERR Protocol error: invalid multibulk length");

  const std::string ten = "SET k 1234";  // 10 bytes
  EXPECT_EQ(ParseAll(ten + "\r\n", limits), (Args{"SET", "k", "1234"}));
  EXPECT_EQ(ParseAll(ten + "\n", limits), (Args{"SET", "k", "1234"}));
  EXPECT_TRUE(Incomplete(ten, limits));
  EXPECT_TRUE(Incomplete(ten + "\r", limits));  // a '\n' may still end it at 10
  EXPECT_EQ(ErrorOf(ten + "5", limits), "ERR Protocol error: too big inline request");
  EXPECT_EQ(ErrorOf(ten + "5\r", limits), "ERR Protocol error: too big inline request");
  EXPECT_EQ(ErrorOf(ten + "5\r\n", limits), "ERR Protocol error: too big inline request");
  EXPECT_EQ(ErrorOf(ten + "\rx", limits), "ERR Protocol error: too big inline request");

  // Header lines: at most max_inline_bytes between the type byte and '\r'.
  limits.max_inline_bytes = 2;
  limits.max_array_elements = 20;
  limits.max_bulk_bytes = 20;
  EXPECT_EQ(ParseAll("*-1\r\n", limits), Args{});
  EXPECT_TRUE(Incomplete("*10", limits));
  EXPECT_EQ(ErrorOf("*100", limits), "ERR Protocol error: too big mbulk count string");
  EXPECT_EQ(ErrorOf("*100\r\n", limits), "ERR Protocol error: too big mbulk count string");
  EXPECT_EQ(ParseAll("*1\r\n$10\r\n0123456789\r\n", limits), (Args{"0123456789"}));
  EXPECT_EQ(ErrorOf("*1\r\n$010", limits), "ERR Protocol error: too big bulk count string");

  // The defaults, exactly at and one over.
  Limits defaults;
  EXPECT_TRUE(Incomplete("*1\r\n$536870912\r\n", defaults));
  EXPECT_EQ(ErrorOf("*1\r\n$536870913\r\n", defaults), "ERR Protocol error: invalid bulk length");
  EXPECT_TRUE(Incomplete("*1048576\r\n", defaults));
  EXPECT_EQ(ErrorOf("*1048577\r\n", defaults), "ERR Protocol error: invalid multibulk length");
  EXPECT_TRUE(Incomplete(std::string(65536, 'A'), defaults));
  EXPECT_EQ(ErrorOf(std::string(65537, 'A'), defaults), "ERR Protocol error: too big inline request");
}

TEST(RespParseTest, ExtremeLimitsDoNotOverflow) {
  Limits limits;
  limits.max_bulk_bytes = std::numeric_limits<size_t>::max();
  limits.max_array_elements = std::numeric_limits<size_t>::max();
  limits.max_inline_bytes = std::numeric_limits<size_t>::max();
  EXPECT_TRUE(Incomplete("*9223372036854775807\r\n$9223372036854775807\r\nab", limits));
  EXPECT_TRUE(Incomplete("GET k", limits));
  EXPECT_EQ(ParseAll("GET k\r\n", limits), (Args{"GET", "k"}));
  limits.max_inline_bytes = 0;
  EXPECT_EQ(ErrorOf("G", limits), "ERR Protocol error: too big inline request");
  EXPECT_EQ(ParseAll("\r\n", limits), Args{});
  EXPECT_EQ(ErrorOf("*1", limits), "ERR Protocol error: too big mbulk count string");
}

// A bulk payload is skipped by its length, never read, however often the
// command is parsed again: the payload's pages are made unreadable, and the
// parser, called on every prefix, must not fault.
TEST(RespParseTest, ReparsingDoesNotTouchPayloads) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t pages = 64;
  void* mem = mmap(nullptr, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  char* base = static_cast<char*>(mem);
  // The header ends exactly at the end of the first page.
  const size_t payload = (pages - 2) * page;
  std::string header = "*2\r\n$3\r\nSET\r\n$" + std::to_string(payload) + "\r\n";
  char* start = base + page - header.size();
  std::copy(header.begin(), header.end(), start);
  ASSERT_EQ(mprotect(base + page, payload, PROT_NONE), 0);
  for (size_t n = header.size(); n <= header.size() + payload; n += page / 2) {
    EXPECT_TRUE(Incomplete(std::string_view(start, n)));
  }
  ASSERT_EQ(mprotect(base + page, payload, PROT_READ | PROT_WRITE), 0);
  std::fill(base + page, base + page + payload, 'v');
  base[page + payload] = '\r';
  base[page + payload + 1] = '\n';
  ParsedCommand c = ParseCommand(std::string_view(start, header.size() + payload + 2), Limits());
  EXPECT_EQ(c.status, ParseStatus::kOk);
  ASSERT_EQ(c.args.size(), 2u);
  EXPECT_EQ(c.args[1].size(), payload);
  EXPECT_EQ(c.args[1].data(), base + page);
  munmap(mem, pages * page);
}

TEST(RespParseTest, HugeCountsAllocateOnlyForTheBytesThere) {
  // A 1M-element header with a few bytes after it: the reserve follows the
  // bytes, not the header.
  std::string in = "*1048576\r\n$1\r\na\r\n$1\r\nb\r\n";
  EXPECT_TRUE(Incomplete(in));
  Limits limits;
  limits.max_array_elements = 3;
  ParsedCommand c = ParseCommand("*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n", limits);
  ASSERT_EQ(c.status, ParseStatus::kOk);
  EXPECT_LE(c.args.capacity(), 3u);
}

TEST(RespParseTest, WriterOutputParsesBack) {
  const std::vector<Args> commands = {{"GET", "k"}, {""}, {"SET", "k", "v\r\n\0x"s},
                                      {std::string(100000, 'z')}};
  std::string wire;
  Writer w(&wire);
  for (const Args& args : commands) {
    w.Array(args.size());
    for (const std::string& a : args) w.Bulk(a);
  }
  ParseStatus last;
  EXPECT_EQ(ParseStream(wire, &last), commands);
  EXPECT_EQ(last, ParseStatus::kIncomplete);
}

// Random bytes, biased towards RESP's own characters: never a crash, never a
// view outside the input, `consumed` within it, and errors final.
TEST(RespParseTest, RandomGarbageNeverCrashes) {
  std::mt19937 rng(20240611);
  const std::string alphabet = "*$\r\n\r\n0123456789-+ \t\"'\\xAfq:";
  Limits small;
  small.max_bulk_bytes = 16;
  small.max_array_elements = 8;
  small.max_inline_bytes = 24;
  int seen[3] = {};
  for (int iter = 0; iter < 30000; ++iter) {
    std::string in(rng() % 80, '\0');
    for (char& ch : in) {
      ch = rng() % 4 == 0 ? static_cast<char>(rng()) : alphabet[rng() % alphabet.size()];
    }
    if (rng() % 2) in.insert(0, "*" + std::to_string(rng() % 5) + "\r\n");
    for (const Limits& limits : {Limits(), small}) {
      ParsedCommand c = ParseCommand(in, limits);
      ++seen[static_cast<int>(c.status)];
      const char* lo = in.data();
      const char* hi = in.data() + in.size();
      switch (c.status) {
        case ParseStatus::kOk:
          ASSERT_GT(c.consumed, 0u);
          ASSERT_LE(c.consumed, in.size());
          for (std::string_view a : c.args) {
            bool in_input = a.empty() || (a.data() >= lo && a.data() + a.size() <= hi);
            bool in_storage = c.storage && a.data() >= c.storage->data() &&
                              a.data() + a.size() <= c.storage->data() + c.storage->size();
            ASSERT_TRUE(in_input || in_storage);
          }
          ASSERT_TRUE(Incomplete(std::string_view(in).substr(0, c.consumed - 1), limits));
          break;
        case ParseStatus::kError:
          ASSERT_FALSE(c.error.empty());
          ASSERT_EQ(ErrorOf(in + "\r\n*1\r\n", limits), c.error) << testing::PrintToString(in);
          break;
        case ParseStatus::kIncomplete:
          break;
      }
    }
  }
  for (int n : seen) EXPECT_GT(n, 3000);  // each outcome well exercised
}

TEST(RespWriterTest, Resp2) {
  std::string out;
  Writer w(&out);
  EXPECT_EQ(w.protocol(), 2);
  EXPECT_EQ(w.out(), &out);
  w.Simple("OK");
  w.Simple("a\r\nb");
  w.Error("ERR unknown command 'x'");
  w.Error("WRONGTYPE Operation\nagainst a key");
  w.Integer(5);
  w.Integer(-1);
  w.Integer(0);
  w.Integer(std::numeric_limits<int64_t>::min());
  w.Bulk("abc");
  w.Bulk("");
  w.Bulk("a\0\r\n"s);
  w.Null();
  w.NullArray();
  w.Array(0);
  w.Array(2);
  w.Map(3);
  w.Double(1.5);
  w.Double(-std::numeric_limits<double>::infinity());
  EXPECT_EQ(out,
            "+OK\r\n"
            "+a  b\r\n"
            "-ERR unknown command 'x'\r\n"
            "-WRONGTYPE Operation against a key\r\n"
            ":5\r\n"
            ":-1\r\n"
            ":0\r\n"
            ":-9223372036854775808\r\n"
            "$3\r\nabc\r\n"
            "$0\r\n\r\n"
            "$4\r\na\0\r\n\r\n"s
            "$-1\r\n"
            "*-1\r\n"
            "*0\r\n"
            "*2\r\n"
            "*6\r\n"
            "$3\r\n1.5\r\n"
            "$4\r\n-inf\r\n");
}

TEST(RespWriterTest, Resp3) {
  std::string out = "kept";
  Writer w(&out);
  w.SetProtocol(3);
  EXPECT_EQ(w.protocol(), 3);
  w.Null();
  w.NullArray();
  w.Map(2);
  w.Array(1);
  w.Bulk("x");
  w.Simple("OK");
  w.Integer(42);
  EXPECT_EQ(out, "kept_\r\n_\r\n%2\r\n*1\r\n$1\r\nx\r\n+OK\r\n:42\r\n");
  w.SetProtocol(2);
  EXPECT_EQ(w.protocol(), 2);
}

TEST(RespWriterTest, Doubles) {
  auto resp3 = [](double d) {
    std::string out;
    Writer w(&out);
    w.SetProtocol(3);
    w.Double(d);
    return out;
  };
  EXPECT_EQ(resp3(1.5), ",1.5\r\n");
  EXPECT_EQ(resp3(3), ",3\r\n");
  EXPECT_EQ(resp3(0.1), ",0.1\r\n");
  EXPECT_EQ(resp3(-0.0), ",-0\r\n");
  EXPECT_EQ(resp3(1e300), ",1e+300\r\n");
  EXPECT_EQ(resp3(std::numeric_limits<double>::infinity()), ",inf\r\n");
  EXPECT_EQ(resp3(-std::numeric_limits<double>::infinity()), ",-inf\r\n");
  EXPECT_EQ(resp3(std::nan("")), ",nan\r\n");
  EXPECT_EQ(resp3(std::numeric_limits<double>::lowest()), ",-1.7976931348623157e+308\r\n");
  EXPECT_EQ(resp3(5e-324), ",5e-324\r\n");
}

}  // namespace
}  // namespace rampart::proxy::resp
