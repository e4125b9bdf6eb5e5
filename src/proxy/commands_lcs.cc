// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]: the longest
// common subsequence of two strings, by the textbook dynamic programme over
// a table of (|a|+1) × (|b|+1) lengths, as Redis 7.0 computes it — so ties
// resolve the same way and the replies (the string, its length, or the
// matched ranges from the end backwards) are Redis's.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "proxy/commands_internal.h"

namespace rampart::proxy::internal {
namespace {

// The table's bound: Redis's is proto-max-bulk-len (512 MiB); a proxy worker
// serving many clients keeps it smaller (docs/proxy.md).
constexpr uint64_t kMaxTableBytes = uint64_t{64} << 20;

struct LcsOptions {
  bool len = false;
  bool idx = false;
  bool with_match_len = false;
  int64_t min_match_len = 0;
};

Result<LcsOptions> ParseLcsOptions(Args args) {
  LcsOptions o;
  for (size_t i = 3; i < args.size(); ++i) {
    if (EqualsNoCase(args[i], "idx")) {
      o.idx = true;
    } else if (EqualsNoCase(args[i], "len")) {
      o.len = true;
    } else if (EqualsNoCase(args[i], "withmatchlen")) {
      o.with_match_len = true;
    } else if (EqualsNoCase(args[i], "minmatchlen") && i + 1 < args.size()) {
      RAMPART_ASSIGN_OR_RETURN(o.min_match_len, ParseInt64(args[++i]));
      if (o.min_match_len < 0) o.min_match_len = 0;
    } else {
      return InvalidArgument("ERR syntax error");
    }
  }
  if (o.len && o.idx) {
    return InvalidArgument("ERR If you want both the length and indexes, please just use IDX.");
  }
  return o;
}

// A string key's bytes ("" when absent); another type is Redis's LCS error.
Result<std::string_view> StringOf(DataView& data, std::string_view key) {
  auto v = data.Find(key);
  if (!v.ok()) return v.status();
  if (!v->has_value()) return std::string_view();
  if ((*v)->type != ValueType::kString) {
    return InvalidArgument("ERR The specified keys must contain string values");
  }
  return (*v)->payload;
}

// One matched range: [a_first, a_last] of a against [b_first, b_last] of b.
struct Match {
  uint32_t a_first, a_last, b_first, b_last;
  uint32_t length() const { return a_last - a_first + 1; }
};

void ReplyMatch(const Match& m, bool with_len, resp::Writer& out) {
  out.Array(with_len ? 3 : 2);
  out.Array(2);
  out.Integer(m.a_first);
  out.Integer(m.a_last);
  out.Array(2);
  out.Integer(m.b_first);
  out.Integer(m.b_last);
  if (with_len) out.Integer(m.length());
}

}  // namespace

void Lcs(Args args, DataView& data, resp::Writer& out) {
  auto a_found = StringOf(data, args[1]);
  auto b_found = StringOf(data, args[2]);
  if (ReplyIfError(a_found.status(), out) || ReplyIfError(b_found.status(), out)) return;
  auto o = ParseLcsOptions(args);
  if (ReplyIfError(o.status(), out)) return;
  const std::string_view a = *a_found, b = *b_found;
  const uint64_t cells = (a.size() + 1) * (b.size() + 1);
  if (cells * sizeof(uint32_t) > kMaxTableBytes) {
    return out.Error(StrCat("ERR rampart: LCS of a ", a.size(), "-byte and a ", b.size(),
                            "-byte string needs more than 64 MiB of transient memory"));
  }
  const size_t width = b.size() + 1;
  std::vector<uint32_t> table(cells, 0);  // table[i * width + j]: LCS length of a[0, i), b[0, j)
  auto at = [&](size_t i, size_t j) -> uint32_t& { return table[i * width + j]; };
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      at(i, j) = a[i - 1] == b[j - 1] ? at(i - 1, j - 1) + 1 : std::max(at(i - 1, j), at(i, j - 1));
    }
  }
  const uint32_t length = at(a.size(), b.size());
  if (o->len) return out.Integer(length);

  // Walk back from the end: the common string, and the contiguous ranges.
  std::string common(length, '\0');
  std::vector<Match> matches;
  std::optional<Match> current;
  auto emit = [&] {
    if (current.has_value() && (o->min_match_len == 0 || current->length() >= o->min_match_len)) {
      matches.push_back(*current);
    }
    current.reset();
  };
  size_t i = a.size(), j = b.size(), k = length;
  while (i > 0 && j > 0) {
    bool close = false;
    if (a[i - 1] == b[j - 1]) {
      common[--k] = a[i - 1];
      const auto ai = static_cast<uint32_t>(i - 1), bj = static_cast<uint32_t>(j - 1);
      if (!current.has_value()) {
        current = Match{ai, ai, bj, bj};
      } else {  // a match right after a match: the range goes on backwards
        current->a_first = ai;
        current->b_first = bj;
      }
      close = current->a_first == 0 || current->b_first == 0;
      --i;
      --j;
    } else {
      if (at(i - 1, j) > at(i, j - 1)) {
        --i;
      } else {
        --j;
      }
      close = current.has_value();
    }
    if (close) emit();
  }
  if (!o->idx) return out.Bulk(common);
  out.Map(2);
  out.Bulk("matches");
  out.Array(matches.size());
  for (const Match& m : matches) ReplyMatch(m, o->with_match_len, out);
  out.Bulk("len");
  out.Integer(length);
}

}  // namespace rampart::proxy::internal
