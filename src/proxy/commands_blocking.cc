// The blocking list commands BLPOP, BRPOP and BLMOVE. Each runs like its
// non-blocking twin when a list has something; when none has, it asks the
// worker to park the session (DataView::Block; worker_block.cc), which runs
// it again after a write to one of its keys or answers a null at the
// timeout. Inside MULTI (the view may not block) it answers the null at
// once, as Redis does.
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

}  // namespace rampart::proxy::internal
