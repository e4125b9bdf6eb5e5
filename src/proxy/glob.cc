#include "proxy/glob.h"

#include <cstddef>
#include <utility>

namespace rampart::proxy {
namespace {

// Redis (stringmatchlen_impl) gives up past this recursion depth: one level
// per run of '*' that is not the end of the pattern.
constexpr int kMaxStarRuns = 1000;

constexpr size_t kNone = static_cast<size_t>(-1);

// What one token (anything but '*') did to one byte of the string.
struct Step {
  bool matched;
  size_t next;  // the pattern index after the token
};

// Redis reads range bounds and the byte as `int x = pattern[0]`: char is
// signed on the platforms it is built for (x86-64), so do the same.
int AsRedisInt(char c) { return static_cast<signed char>(c); }

// The class that opens at p[i] == '[' against byte c, exactly as Redis's
// loop over it: "\x" is x; ']' ends the class; a pattern that ends first
// ends the class too; "a-b" (three bytes left at least) is a range, bounds
// swapped when reversed; anything else is itself.
Step MatchClass(std::string_view p, size_t i, char c) {
  ++i;
  const bool negate = i < p.size() && p[i] == '^';
  if (negate) ++i;
  bool match = false;
  while (true) {
    if (i >= p.size()) return {match != negate, p.size()};  // no ']'
    if (p[i] == '\\' && p.size() - i >= 2) {
      ++i;
      match = match || p[i] == c;
    } else if (p[i] == ']') {
      return {match != negate, i + 1};
    } else if (p.size() - i >= 3 && p[i + 1] == '-') {
      int low = AsRedisInt(p[i]), high = AsRedisInt(p[i + 2]);
      if (low > high) std::swap(low, high);
      match = match || (AsRedisInt(c) >= low && AsRedisInt(c) <= high);
      i += 2;
    } else {
      match = match || p[i] == c;
    }
    ++i;
  }
}

// One token at p[i] (not '*') against byte c: '?', a class, "\x" or a
// literal byte ('\' alone at the end of the pattern is literal).
Step MatchToken(std::string_view p, size_t i, char c) {
  switch (p[i]) {
    case '?':
      return {true, i + 1};
    case '[':
      return MatchClass(p, i, c);
    case '\\':
      if (p.size() - i >= 2) ++i;
      [[fallthrough]];
    default:
      return {p[i] == c, i + 1};
  }
}

}  // namespace

// Every token but '*' consumes exactly one byte, so when the part after the
// last '*' fails at some alignment, only moving that '*' on can help: the
// earlier stars never need to be revisited (the argument behind Redis's
// skipLongerMatches), and the whole match is one pass with one backtrack
// point.
bool GlobMatch(std::string_view p, std::string_view s) {
  // In Redis only the empty pattern matches an empty string ("*" does not:
  // its loop never starts). Once a byte was matched, stars left at the end
  // of the pattern do match the empty rest (below).
  if (s.empty()) return p.empty();
  size_t pi = 0, si = 0;
  size_t star_p = kNone, star_s = 0;  // after the last '*' run; where its match ends
  int star_runs = 0;
  while (si < s.size()) {
    if (pi < p.size() && p[pi] == '*') {
      while (pi + 1 < p.size() && p[pi + 1] == '*') ++pi;
      if (pi + 1 == p.size()) return true;  // a trailing '*' takes the rest
      if (++star_runs > kMaxStarRuns) return false;
      star_p = ++pi;
      star_s = si;
      continue;
    }
    if (pi < p.size()) {
      const Step step = MatchToken(p, pi, s[si]);
      if (step.matched) {
        pi = step.next;
        ++si;
        continue;
      }
    }
    if (star_p == kNone) return false;
    pi = star_p;  // the last '*' takes one byte more
    si = ++star_s;
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

}  // namespace rampart::proxy
