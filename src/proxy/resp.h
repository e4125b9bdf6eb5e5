// RESP, the Redis wire protocol, as the proxy speaks it: a parser for the
// commands clients send and a writer for the replies.
//
//   ParsedCommand c = ParseCommand(buffer, limits);
//   switch (c.status) {
//     case ParseStatus::kIncomplete: read more, append, call again
//     case ParseStatus::kError:      reply "-" + c.error, close the connection
//     case ParseStatus::kOk:         run c.args (unless empty), drop c.consumed
//   }                                bytes from the front, parse the next one
//
// Requests come in two shapes, chosen by the first byte as redis does: '*'
// starts a RESP array of bulk strings ("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n");
// anything else is an inline command line ("GET k\r\n" or "GET k\n") split
// like redis's sdssplitargs: on spaces and tabs, with "double quotes" (escapes
// \n \r \t \b \a \\ \" \xHH; any other \c is c) and 'single quotes' (escape
// \'), a closing quote followed by a blank or the end of the line. Unlike
// redis, a NUL byte in the line is an ordinary byte (redis stops the line at
// it and then waits for a '\n' it never sees), and "too big inline request"
// depends on the line's length alone, not on whether its '\n' came in the
// same read.
//
// The parser is stateless: on kIncomplete nothing is remembered and the
// caller calls again with more bytes appended. Re-parsing costs O(elements
// parsed), not O(bytes): bulk payloads are skipped by their length, and a
// header line is scanned over at most max_inline_bytes. Nothing is allocated
// in proportion to a length until the bytes it announces are there.
//
// Errors are the replies redis gives (processMultibulkBuffer and
// processInlineBuffer in its networking.c), without the leading '-'. Where
// this parser is stricter than redis 7, `ParsedCommand::error` says so. A
// kError is final (appending bytes gives the same error), and every prefix
// of a command shorter than its `consumed` parses kIncomplete (the unit tests
// and the fuzz target, src/proxy/fuzz/resp_fuzz.cc, check both).
//
// Views: ParsedCommand::args view `input` (or, for inline arguments that
// quoting changed, ParsedCommand::storage). They stay valid while the caller
// leaves those bytes of its buffer alone and the ParsedCommand (or a copy)
// lives.
//
// Thread-safety: ParseCommand is a plain function; a Writer belongs to one
// thread. Depends on the C++ standard library only, so the fuzz target builds
// with one compiler command (see the Makefile's fuzz-test).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rampart::proxy::resp {

struct Limits {
  // Largest bulk string in a request array; a longer one is "invalid bulk
  // length". Default: 512 MiB, like redis's proto-max-bulk-len.
  size_t max_bulk_bytes = 512u << 20;
  // Most elements in a request array ("*N"); more is "invalid multibulk
  // length". Default: 1 Mi.
  size_t max_array_elements = 1u << 20;
  // Longest inline command line (without its "\r\n" / "\n"), and longest
  // "*N" / "$N" header line, before "too big inline request" / "too big
  // mbulk count string" / "too big bulk count string". Default: 64 KiB, like
  // redis's PROTO_INLINE_MAX_SIZE.
  size_t max_inline_bytes = 64u << 10;
};

enum class ParseStatus { kOk, kIncomplete, kError };

struct ParsedCommand {
  ParseStatus status = ParseStatus::kIncomplete;
  // kOk: how many bytes at the front of `input` this command took.
  size_t consumed = 0;
  // kOk: the command's arguments. EMPTY for an empty or blank inline line,
  // "*0\r\n" or "*-N\r\n": redis ignores those (no reply).
  std::vector<std::string_view> args;
  // kError: the message for the client without the leading '-', worded as
  // redis 7 words it:
  //   ERR Protocol error: invalid multibulk length   "*x", "*-0", "*01", > limit
  //   ERR Protocol error: invalid bulk length        "$x", "$-1", > limit
  //   ERR Protocol error: expected '$', got 'x'      an array element not '$'
  //   ERR Protocol error: unbalanced quotes in request
  //   ERR Protocol error: too big inline request
  //   ERR Protocol error: too big mbulk count string
  //   ERR Protocol error: too big bulk count string
  // and where this parser is stricter than redis (which takes any two bytes
  // there and so can desynchronize):
  //   ERR Protocol error: expected CRLF after bulk string
  //   a "*N" / "$N" line whose '\r' is not followed by '\n' gets the invalid
  //   (multi)bulk length message.
  std::string error;
  // Inline arguments whose bytes are not in `input` as they are (escapes, or
  // quotes in the middle of an argument) are unescaped here; args view it.
  // Null for every other command. Shared so that copies stay valid.
  std::shared_ptr<const std::string> storage;
};

// Parses the FIRST command at the front of `input` (see the top of the file).
// Never reads outside `input`.
ParsedCommand ParseCommand(std::string_view input, const Limits& limits);

// Appends replies to a string. RESP2 until SetProtocol(3) (after HELLO 3).
class Writer {
 public:
  // `out` must outlive the Writer; replies are appended to it.
  explicit Writer(std::string* out);

  // REQUIRES: version is 2 or 3 (anything else is taken as 2).
  void SetProtocol(int version);
  int protocol() const { return protocol_; }

  void Simple(std::string_view s);       // "+OK\r\n"; CR/LF in s become spaces
  // An array of simple strings, one per line: a HELP subcommand's reply.
  void SimpleLines(std::span<const std::string_view> lines);
  // "-ERR ...\r\n": `message` has its prefix (ERR, WRONGTYPE, NOAUTH ...);
  // CR/LF in it become spaces.
  void Error(std::string_view message);
  void Integer(int64_t v);                // ":5\r\n"
  void Bulk(std::string_view s);          // "$3\r\nabc\r\n", binary safe
  void Null();                            // RESP2 "$-1\r\n", RESP3 "_\r\n"
  void NullArray();                       // RESP2 "*-1\r\n", RESP3 "_\r\n"
  void Array(size_t n);                   // "*n\r\n"; n elements follow
  void Map(size_t pairs);                 // RESP3 "%n\r\n", RESP2 "*2n\r\n"
  void Push(size_t n);                    // RESP3 ">n\r\n" (out of band), RESP2 "*n\r\n"
  // RESP3 ",1.5\r\n", RESP2 the bulk string "1.5". Shortest text that reads
  // back as d (std::to_chars); "inf", "-inf", "nan".
  void Double(double d);
  // A double already formatted (GEOPOS's coordinates in Redis's human long
  // double form): RESP3 ",text\r\n", RESP2 the bulk string.
  void DoubleText(std::string_view text);

  std::string* out() { return out_; }

 private:
  void Header(char type, std::string_view digits);
  void Header(char type, uint64_t n);
  void Line(char type, std::string_view s);  // type, s with CR/LF -> ' ', CRLF

  std::string* out_;
  int protocol_ = 2;
};

}  // namespace rampart::proxy::resp
