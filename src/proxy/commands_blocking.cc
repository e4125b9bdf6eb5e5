// The blocking pops BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN,
// BZPOPMAX and BZMPOP, and the multi-key pops LMPOP and ZMPOP they share
// their cores with. Each blocking command runs like its non-blocking twin
// when a key has something; when none has, it asks the worker to park the
// session (DataView::Block; worker_block.cc), which runs it again after a
// write to one of its keys or answers a null at the timeout. Inside MULTI
// (the view may not block) it answers the null at once, as Redis does.
//
// The keyspace events are recorded by the cores (PopElements, MoveElement,
// PopScored) when they change something: a served command sends what its
// non-blocking twin sends, as Redis's serveClientBlockedOnList does, and a
// run that parks sends nothing.
#include <cmath>
#include <cstdlib>

#include "proxy/commands_internal.h"

namespace rampart::proxy::internal {
namespace {

// Redis's getTimeoutFromObjectOrReply: seconds as a float, >= 0.
Status CheckTimeout(std::string_view arg) {
  const std::string text(arg);
  char* end = nullptr;
  errno = 0;
  const long double v = std::strtold(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE || std::isnan(v) ||
      std::isinf(v)) {
    return InvalidArgument("ERR timeout is not a float or out of range");
  }
  if (v < 0) return InvalidArgument("ERR timeout is negative");
  return Status::Ok();
}

// Whether a woken command passes over the waited key whose lookup gave `s`
// (DataView::woken): it holds another type now.
bool PassOver(const DataView& data, const Status& s) {
  return data.woken() && !s.ok() && s.message() == kWrongType;
}

// Nothing to pop: park, or (inside MULTI) answer the null now.
void NothingYet(DataView& data, resp::Writer& out, bool array) {
  if (data.may_block()) return data.Block();
  if (array) {
    out.NullArray();
  } else {
    out.Null();
  }
}

// BLPOP / BRPOP key [key ...] timeout
void BlockingPop(Args args, DataView& data, resp::Writer& out, ListEnd end) {
  if (ReplyIfError(CheckTimeout(args.back()), out)) return;
  for (size_t n = 1; n + 1 < args.size(); ++n) {
    auto typed = data.FindTyped(args[n], ValueType::kList);  // WRONGTYPE stops the walk
    if (PassOver(data, typed.status())) continue;
    if (ReplyIfError(typed.status(), out)) return;
    if (!typed->has_value()) continue;
    auto popped = PopElements(data, args[n], end, 1);
    if (ReplyIfError(popped.status(), out)) return;
    if (!popped->has_value() || (*popped)->empty()) continue;
    out.Array(2);
    out.Bulk(args[n]);
    return out.Bulk((**popped)[0]);
  }
  NothingYet(data, out, /*array=*/true);
}

}  // namespace

void BLPop(Args args, DataView& data, resp::Writer& out) { BlockingPop(args, data, out, ListEnd::kLeft); }
void BRPop(Args args, DataView& data, resp::Writer& out) { BlockingPop(args, data, out, ListEnd::kRight); }

namespace {

void BlockingMove(Args args, DataView& data, resp::Writer& out, ListEnd from, ListEnd to,
                  std::string_view timeout) {
  if (ReplyIfError(CheckTimeout(timeout), out)) return;
  if (PassOver(data, data.FindTyped(args[1], ValueType::kList).status())) {
    return NothingYet(data, out, /*array=*/false);
  }
  auto moved = MoveElement(data, args[1], args[2], from, to);
  if (ReplyIfError(moved.status(), out)) return;
  if (!moved->has_value()) return NothingYet(data, out, /*array=*/false);
  out.Bulk(**moved);
}

}  // namespace

// BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout
void BLMove(Args args, DataView& data, resp::Writer& out) {
  auto from = ParseListEnd(args[3]);
  if (ReplyIfError(from.status(), out)) return;
  auto to = ParseListEnd(args[4]);
  if (ReplyIfError(to.status(), out)) return;
  BlockingMove(args, data, out, *from, *to, args[5]);
}

// BRPOPLPUSH source destination timeout (BLMOVE source destination RIGHT LEFT)
void BRPopLPush(Args args, DataView& data, resp::Writer& out) {
  BlockingMove(args, data, out, ListEnd::kRight, ListEnd::kLeft, args[3]);
}

// ---- LMPOP / ZMPOP and their blocking forms ---------------------------------

namespace {

// What [B]LMPOP / [B]ZMPOP ask for: their keys, the end to pop at (LEFT or
// MIN: the head), and how many.
struct MultiPop {
  std::vector<std::string_view> keys;
  bool head = true;
  uint64_t count = 1;
};

// numkeys key... LEFT|RIGHT (MIN|MAX) [COUNT count], numkeys at args[at];
// Redis's errors in its order.
Result<MultiPop> ParseMultiPop(Args args, size_t at, std::string_view head_word,
                               std::string_view tail_word) {
  auto n = ParseInt64(args[at]);
  if (!n.ok() || *n < 1) return InvalidArgument("ERR numkeys should be greater than 0");
  if (static_cast<uint64_t>(*n) > args.size() - at - 2) return InvalidArgument("ERR syntax error");
  MultiPop q;
  for (int64_t k = 0; k < *n; ++k) q.keys.push_back(args[at + 1 + static_cast<size_t>(k)]);
  size_t i = at + 1 + q.keys.size();
  if (EqualsNoCase(args[i], tail_word)) {
    q.head = false;
  } else if (!EqualsNoCase(args[i], head_word)) {
    return InvalidArgument("ERR syntax error");
  }
  bool counted = false;
  for (++i; i < args.size(); ++i) {
    if (counted || !EqualsNoCase(args[i], "count") || i + 1 >= args.size()) {
      return InvalidArgument("ERR syntax error");
    }
    auto c = ParseInt64(args[++i]);
    if (!c.ok() || *c < 1) return InvalidArgument("ERR count should be greater than 0");
    q.count = static_cast<uint64_t>(*c);
    counted = true;
  }
  return q;
}

// Pops with `pop(key)` from the first of q.keys that has something and
// replies [key, [items]], each item written by `write_item`: true when one
// had (or an error was replied), false when none had.
template <typename Pop, typename WriteItem>
bool FirstKeyPop(const MultiPop& q, DataView& data, resp::Writer& out, Pop pop, WriteItem write_item) {
  for (std::string_view key : q.keys) {
    auto popped = pop(key);
    if (PassOver(data, popped.status())) continue;
    if (ReplyIfError(popped.status(), out)) return true;
    if (!popped->has_value() || (*popped)->empty()) continue;
    out.Array(2);
    out.Bulk(key);
    out.Array((*popped)->size());
    for (const auto& item : **popped) write_item(item);
    return true;
  }
  return false;
}

bool ListMultiPop(const MultiPop& q, DataView& data, resp::Writer& out) {
  const ListEnd end = q.head ? ListEnd::kLeft : ListEnd::kRight;
  return FirstKeyPop(
      q, data, out, [&](std::string_view key) { return PopElements(data, key, end, q.count); },
      [&](const std::string& element) { out.Bulk(element); });
}

bool ZsetMultiPop(const MultiPop& q, DataView& data, resp::Writer& out) {
  return FirstKeyPop(
      q, data, out, [&](std::string_view key) { return PopScored(data, key, /*max=*/!q.head, q.count); },
      [&](const std::pair<std::string, double>& item) {
        out.Array(2);
        out.Bulk(item.first);
        ReplyScore(out, item.second);
      });
}

using MultiPopFn = bool (*)(const MultiPop&, DataView&, resp::Writer&);

// LMPOP / ZMPOP numkeys ... (at 1), BLMPOP / BZMPOP timeout numkeys ... (at 2).
void MultiPopCommand(Args args, DataView& data, resp::Writer& out, bool blocking,
                     std::string_view head_word, std::string_view tail_word, MultiPopFn pop) {
  auto q = ParseMultiPop(args, blocking ? 2 : 1, head_word, tail_word);
  if (ReplyIfError(q.status(), out)) return;
  if (blocking && ReplyIfError(CheckTimeout(args[1]), out)) return;  // checked last, as Redis does
  if (pop(*q, data, out)) return;
  if (blocking) return NothingYet(data, out, /*array=*/true);
  out.NullArray();
}

// BZPOPMIN / BZPOPMAX key [key ...] timeout: [key, member, score].
void BlockingZsetPop(Args args, DataView& data, resp::Writer& out, bool max) {
  if (ReplyIfError(CheckTimeout(args.back()), out)) return;
  for (size_t n = 1; n + 1 < args.size(); ++n) {
    auto popped = PopScored(data, args[n], max, 1);  // WRONGTYPE stops the walk
    if (PassOver(data, popped.status())) continue;
    if (ReplyIfError(popped.status(), out)) return;
    if (!popped->has_value() || (*popped)->empty()) continue;
    out.Array(3);
    out.Bulk(args[n]);
    out.Bulk((**popped)[0].first);
    return ReplyScore(out, (**popped)[0].second);
  }
  NothingYet(data, out, /*array=*/true);
}

}  // namespace

void LMPop(Args args, DataView& data, resp::Writer& out) {
  MultiPopCommand(args, data, out, /*blocking=*/false, "left", "right", ListMultiPop);
}
void BLMPop(Args args, DataView& data, resp::Writer& out) {
  MultiPopCommand(args, data, out, /*blocking=*/true, "left", "right", ListMultiPop);
}
void ZMPop(Args args, DataView& data, resp::Writer& out) {
  MultiPopCommand(args, data, out, /*blocking=*/false, "min", "max", ZsetMultiPop);
}
void BZMPop(Args args, DataView& data, resp::Writer& out) {
  MultiPopCommand(args, data, out, /*blocking=*/true, "min", "max", ZsetMultiPop);
}
void BZPopMin(Args args, DataView& data, resp::Writer& out) { BlockingZsetPop(args, data, out, false); }
void BZPopMax(Args args, DataView& data, resp::Writer& out) { BlockingZsetPop(args, data, out, true); }

std::vector<std::string_view> MultiPopKeys(Args args) { return NumKeysKeys(args, 1); }
std::vector<std::string_view> BlockingMultiPopKeys(Args args) { return NumKeysKeys(args, 2); }

}  // namespace rampart::proxy::internal
