// Glob patterns as Redis matches them (MATCH of SCAN / SSCAN / HSCAN /
// ZSCAN, KEYS): the semantics of Redis's stringmatchlen (util.c) with
// nocase off, byte for byte.
//
//   GlobMatch("user:*", "user:42")   → true
//   GlobMatch("h?llo", "hallo")      → true
//   GlobMatch("h[^e]llo", "hello")   → false
//
//   *        any run of bytes, empty too
//   ?        any one byte
//   [abc]    one of the bytes listed; [^abc] one byte not listed
//   [a-z]    a range, bounds in either order ([z-a] is [a-z]); compared as
//            signed chars, as Redis built for x86-64 compares them, so a
//            range with a byte >= 0x80 in it is not what it looks like
//   \x       the byte x itself, outside and inside [...]
// and Redis's quirks: an empty string matches the empty pattern only ("*"
// does not match it: SSCAN treats MATCH "*" as no pattern at all, so this
// rarely shows); a '[' without its ']' runs to the end of the pattern;
// in "[a-]" the range is a..']' (the class goes on after it); a lone '\' at
// the end of the pattern or of a class is a literal '\'.
//
// Binary-safe: patterns and strings are byte strings and may hold NUL bytes
// (set members and hash fields often do), which is why libc's fnmatch —
// NUL-terminated — cannot be used.
//
// Cost: O(|pattern| * |s|) at worst (star backtracking that only ever
// returns to the last '*'), not exponential in the number of stars. As in
// Redis (7.0.15 checked), a pattern needing more than 1000 runs of '*'
// before its end to match never matches.
//
// Thread-safety: a pure function.
#pragma once

#include <string_view>

namespace rampart::proxy {

// Whether the whole of `s` matches `pattern`.
bool GlobMatch(std::string_view pattern, std::string_view s);

}  // namespace rampart::proxy
