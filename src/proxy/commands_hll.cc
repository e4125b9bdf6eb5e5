// PFADD, PFCOUNT, PFMERGE: HyperLogLogs kept as Redis keeps them, in string
// values (hyperloglog.h), so that their counts are redis-server's and their
// values move between the two.
#include <cstdint>
#include <optional>
#include <string>

#include "proxy/commands_internal.h"
#include "proxy/hyperloglog.h"
#include "proxy/notify.h"

namespace rampart::proxy::internal {
namespace {

// The HyperLogLog at `key` and its expiry; nullopt when the key is absent.
// WRONGTYPE for a non-string or a string that is no HLL, INVALIDOBJ for a
// damaged one (Redis's texts).
struct FoundHll {
  HyperLogLog hll;
  uint64_t expire_at_ms = 0;
};
Result<std::optional<FoundHll>> HllAt(DataView& data, std::string_view key) {
  RAMPART_ASSIGN_OR_RETURN(auto v, data.FindTyped(key, ValueType::kString));
  if (!v.has_value()) return std::optional<FoundHll>();
  RAMPART_ASSIGN_OR_RETURN(HyperLogLog h, HyperLogLog::Decode(v->payload));
  return std::optional<FoundHll>(FoundHll{std::move(h), v->expire_at_ms});
}

}  // namespace

// PFADD key [element ...]: 1 when a register changed or the key was created,
// and then "pfadd".
void PfAdd(Args args, DataView& data, resp::Writer& out) {
  auto found = HllAt(data, args[1]);
  if (ReplyIfError(found.status(), out)) return;
  bool changed = !found->has_value();
  HyperLogLog h = changed ? HyperLogLog() : (*found)->hll;
  for (size_t n = 2; n < args.size(); ++n) changed = h.Add(args[n]) || changed;
  if (changed) {
    data.Put(args[1], EncodeString(h.Encode(), found->has_value() ? (*found)->expire_at_ms : 0));
    data.Notify(notify::kString, "pfadd", args[1]);
  }
  out.Integer(changed ? 1 : 0);
}

// PFCOUNT key [key ...]: the cardinality of one, or of the union of several.
void PfCount(Args args, DataView& data, resp::Writer& out) {
  HyperLogLog merged;
  for (size_t n = 1; n < args.size(); ++n) {
    auto found = HllAt(data, args[n]);
    if (ReplyIfError(found.status(), out)) return;
    if (!found->has_value()) continue;
    if (args.size() == 2) return out.Integer(static_cast<int64_t>((*found)->hll.Count()));
    merged.Merge((*found)->hll);
  }
  out.Integer(static_cast<int64_t>(merged.Count()));
}

// PFMERGE destkey [sourcekey ...]: destkey becomes the union of itself and
// the sources (dense when any of them is, as in Redis), keeping its expiry;
// always "pfadd". Redis reads every key named, destkey too, as a read
// command does: "keymiss" for each missing one.
void PfMerge(Args args, DataView& data, resp::Writer& out) {
  HyperLogLog merged;
  uint64_t expire_at_ms = 0;
  bool dense = false;
  for (size_t n = 1; n < args.size(); ++n) {
    auto found = HllAt(data, args[n]);
    if (ReplyIfError(found.status(), out)) return;
    if (!found->has_value()) {
      NotifyKeyMiss(data, args[n]);
      continue;
    }
    if (n == 1) expire_at_ms = (*found)->expire_at_ms;
    dense = dense || (*found)->hll.dense();
    merged.Merge((*found)->hll);
  }
  if (dense) merged.set_dense();
  data.Put(args[1], EncodeString(merged.Encode(), expire_at_ms));
  data.Notify(notify::kString, "pfadd", args[1]);
  out.Simple("OK");
}

}  // namespace rampart::proxy::internal
