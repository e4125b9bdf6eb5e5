// COPY, RENAME, RENAMENX, DUMP, RESTORE, OBJECT and MEMORY, and the sweeper's
// internal commands.
// A string (or a whole-value hash / sorted set) is one stored value and is
// copied as it is; a paged collection's page keys carry its user key
// (docs/collections.md), so a copy or a rename writes the collection anew
// under the destination: every element is read and the trees are rebuilt on
// new pages. RENAME of a large collection therefore costs its size, where
// Redis's is O(1) (docs/proxy.md, "Where rampart differs from Redis 7.0").
#include <algorithm>
#include <limits>

#include "proxy/chunked_string.h"
#include "proxy/collection.h"
#include "proxy/commands_internal.h"
#include "proxy/internal_keys.h"
#include "proxy/notify.h"
#include "proxy/redis_dump.h"

namespace rampart::proxy::internal {
namespace {

size_t TreesOf(ValueType type) { return type == ValueType::kPagedZset ? 2 : 1; }

bool IsPaged(ValueType type) {
  return type == ValueType::kPagedHash || type == ValueType::kPagedSet ||
         type == ValueType::kPagedZset || type == ValueType::kList;
}

// Every entry of a tree, in order.
Result<std::vector<TreeEntry>> AllEntries(PageTree& tree) {
  RAMPART_RETURN_IF_ERROR(tree.Prefetch(0, tree.size()));
  std::vector<TreeEntry> entries;
  entries.reserve(tree.size());
  RAMPART_RETURN_IF_ERROR(tree.ForEach(0, false, [&](uint64_t, const TreeEntryRef& e) {
    entries.push_back({std::string(e.key), std::string(e.value)});
    return true;
  }));
  return entries;
}

// Writes the live value of `source` at `destination` (whatever it holds);
// false when source holds nothing. With `move`, source is deleted too (its
// pages with it).
Result<bool> CopyValue(DataView& data, std::string_view source, std::string_view destination, bool move) {
  RAMPART_ASSIGN_OR_RETURN(auto found, data.Find(source));
  if (!found.has_value()) return false;
  if (!IsPaged(found->type)) {  // a chunked string's chunks carry its key too: Put splits it anew
    data.Put(destination, EncodeStored(found->type, found->expire_at_ms, found->payload));
    if (move) data.Delete(source);
    return true;
  }
  RAMPART_ASSIGN_OR_RETURN(Collection from, Collection::Open(data, source, found->type));
  Collection to = Collection::Create(data, destination, found->type);
  for (size_t t = 0; t < TreesOf(found->type); ++t) {
    RAMPART_ASSIGN_OR_RETURN(std::vector<TreeEntry> entries, AllEntries(from.tree(t)));
    to.Rebuild(t, std::move(entries));
    if (move) RAMPART_RETURN_IF_ERROR(from.tree(t).EraseRange(0, from.tree(t).size()));
  }
  to.set_expire_at_ms(from.expire_at_ms());
  if (move) RAMPART_RETURN_IF_ERROR(from.Save());  // empty: deletes the key
  RAMPART_RETURN_IF_ERROR(to.Save());
  return true;
}

// Redis replaces a destination that `existed` by deleting it and adding the
// new value (dbDelete, dbAdd), so it sends "new" even then, where
// DataView::Put sends it only over a key without a live value. REQUIRES: the
// new value was just written at `key`.
void NotifyReplaced(DataView& data, std::string_view key, bool existed) {
  if (existed) data.Notify(notify::kNew, "new", key);
}

// OBJECT ENCODING's answer, as Redis 7.0 names its encodings.
Result<std::string> EncodingOf(DataView& data, std::string_view key, const StoredValue& v) {
  if (v.type == ValueType::kString) {
    if (v.payload.size() <= 20 && ParseInt64(v.payload).ok()) return std::string("int");
    return std::string(v.payload.size() <= 44 ? "embstr" : "raw");
  }
  if (v.type == ValueType::kChunkedString) return std::string("raw");
  if (v.type == ValueType::kList) return std::string("quicklist");
  if (v.type == ValueType::kHash || v.type == ValueType::kZset) return std::string("listpack");
  RAMPART_ASSIGN_OR_RETURN(Collection c, Collection::Open(data, key, v.type));
  const bool small = c.tree().root().leaf();
  if (v.type == ValueType::kPagedHash) return std::string(small ? "listpack" : "hashtable");
  if (v.type == ValueType::kPagedZset) return std::string(small ? "listpack" : "skiplist");
  bool integers = small;
  for (const TreeEntryRef& e : c.tree().root().entries) integers = integers && ParseInt64(e.key).ok();
  return std::string(integers ? "intset" : "hashtable");
}

}  // namespace

// COPY source destination [DB db] [REPLACE]: "copy_to" on the destination.
// Redis reads the source first, as a read command does ("keymiss").
void Copy(Args args, DataView& data, resp::Writer& out) {
  bool replace = false;
  for (size_t n = 3; n < args.size(); ++n) {
    if (EqualsNoCase(args[n], "replace")) {
      replace = true;
    } else if (EqualsNoCase(args[n], "db") && n + 1 < args.size()) {
      auto db = ParseInt64(args[++n]);
      if (ReplyIfError(db.status(), out)) return;
      if (*db != 0) return out.Error("ERR DB index is out of range");
    } else {
      return out.Error("ERR syntax error");
    }
  }
  if (args[1] == args[2]) return out.Error("ERR source and destination objects are the same");
  if (!HoldsValue(data, args[1])) {
    NotifyKeyMiss(data, args[1]);
    return out.Integer(0);
  }
  const bool existed = HoldsValue(data, args[2]);
  if (!replace && existed) return out.Integer(0);
  auto copied = CopyValue(data, args[1], args[2], /*move=*/false);
  if (ReplyIfError(copied.status(), out)) return;
  if (*copied) {
    NotifyReplaced(data, args[2], existed);
    data.Notify(notify::kGeneric, "copy_to", args[2]);
  }
  out.Integer(*copied ? 1 : 0);
}

// RENAME / RENAMENX source destination: "rename_from" on the source, then
// "rename_to" on the destination; nothing when they are the same key.
void Rename(Args args, DataView& data, resp::Writer& out) {
  const bool nx = EqualsNoCase(args[0], "renamenx");
  auto source = data.Find(args[1]);
  if (ReplyIfError(source.status(), out)) return;
  if (!source->has_value()) return out.Error("ERR no such key");
  if (args[1] == args[2]) return nx ? out.Integer(0) : out.Simple("OK");
  const bool existed = HoldsValue(data, args[2]);
  if (nx && existed) return out.Integer(0);
  auto moved = CopyValue(data, args[1], args[2], /*move=*/true);
  if (ReplyIfError(moved.status(), out)) return;
  NotifyReplaced(data, args[2], existed);
  data.Notify(notify::kGeneric, "rename_from", args[1]);
  data.Notify(notify::kGeneric, "rename_to", args[2]);
  if (nx) return out.Integer(1);
  out.Simple("OK");
}

// ---- DUMP and RESTORE (Redis's payload: redis_dump.h) ------------------------

namespace {

// The paged collection type a hash, set or list is stored as.
ValueType CollectionTypeOf(DumpedValue::Type type) {
  using T = DumpedValue::Type;
  return type == T::kHash ? ValueType::kPagedHash : type == T::kSet ? ValueType::kPagedSet : ValueType::kList;
}

// The live value at `key` as DUMP carries it; nullopt when absent.
Result<std::optional<DumpedValue>> DumpedValueAt(DataView& data, std::string_view key) {
  using T = DumpedValue::Type;
  RAMPART_ASSIGN_OR_RETURN(auto found, data.Find(key));  // a long string joined
  if (!found.has_value()) return std::optional<DumpedValue>();
  const ValueType type = RedisTypeOf(found->type);
  DumpedValue v;
  if (type == ValueType::kString) {
    v.string = std::string(found->payload);
    return std::optional<DumpedValue>(std::move(v));
  }
  if (type == ValueType::kPagedZset) {
    RAMPART_ASSIGN_OR_RETURN(Zset z, Zset::Open(data, key));
    RAMPART_ASSIGN_OR_RETURN(v.scored, z.ScoreOrderRange({0, z.size()}, /*reverse=*/false));
    v.type = T::kZset;
    return std::optional<DumpedValue>(std::move(v));
  }
  RAMPART_ASSIGN_OR_RETURN(Collection c, Collection::Open(data, key, type));
  RAMPART_ASSIGN_OR_RETURN(std::vector<TreeEntry> entries, AllEntries(c.tree()));
  v.type = type == ValueType::kPagedHash ? T::kHash : type == ValueType::kList ? T::kList : T::kSet;
  for (TreeEntry& e : entries) {  // hash: field, value; list: element as value; set: member as key
    if (v.type == T::kHash) {
      v.fields.emplace_back(std::move(e.key), std::move(e.value));
    } else {
      v.elements.push_back(std::move(v.type == T::kList ? e.value : e.key));
    }
  }
  return std::optional<DumpedValue>(std::move(v));
}

// Writes `v` at `key` with the expiry `expire_at_ms` (0: none), replacing
// whatever the key holds.
Status StoreDumpedValue(DataView& data, std::string_view key, DumpedValue v, uint64_t expire_at_ms) {
  using T = DumpedValue::Type;
  std::vector<TreeEntry> entries;
  switch (v.type) {
    case T::kString:
      data.Put(key, EncodeString(v.string, expire_at_ms));  // in chunks when long
      return Status::Ok();
    case T::kZset: {
      Zset z = Zset::Create(data, key);
      z.Fill(std::move(v.scored));
      z.collection().set_expire_at_ms(expire_at_ms);
      return z.Save();
    }
    case T::kHash:
      for (auto& [field, value] : v.fields) entries.push_back({std::move(field), std::move(value)});
      break;
    case T::kSet:
      for (std::string& member : v.elements) entries.push_back({std::move(member), ""});
      break;
    case T::kList:
      for (std::string& element : v.elements) entries.push_back({"", std::move(element)});
      break;
  }
  if (v.type != T::kList) {  // keyed trees are built in key order
    std::sort(entries.begin(), entries.end(), [](const TreeEntry& a, const TreeEntry& b) { return a.key < b.key; });
  }
  Collection c = Collection::Create(data, key, CollectionTypeOf(v.type));
  c.Rebuild(0, std::move(entries));
  c.set_expire_at_ms(expire_at_ms);
  return c.Save();
}

struct RestoreOptions {
  bool replace = false;
  bool absolute_ttl = false;
};

// RESTORE's options after the payload, checked as Redis 7.0's restoreCommand
// does. IDLETIME and FREQ are checked and have no effect (no access times).
Result<RestoreOptions> ParseRestoreOptions(Args args) {
  RestoreOptions o;
  bool idletime = false, freq = false;
  for (size_t n = 4; n < args.size(); ++n) {
    const bool has_value = n + 1 < args.size();
    if (EqualsNoCase(args[n], "replace")) {
      o.replace = true;
    } else if (EqualsNoCase(args[n], "absttl")) {
      o.absolute_ttl = true;
    } else if (EqualsNoCase(args[n], "idletime") && has_value && !freq) {
      RAMPART_ASSIGN_OR_RETURN(int64_t idle, ParseInt64(args[++n]));
      if (idle < 0) return InvalidArgument("ERR Invalid IDLETIME value, must be >= 0");
      idletime = true;
    } else if (EqualsNoCase(args[n], "freq") && has_value && !idletime) {
      RAMPART_ASSIGN_OR_RETURN(int64_t f, ParseInt64(args[++n]));
      if (f < 0 || f > 255) return InvalidArgument("ERR Invalid FREQ value, must be >= 0 and <= 255");
      freq = true;
    } else {
      return InvalidArgument("ERR syntax error");
    }
  }
  return o;
}

}  // namespace

// DUMP key: the value in Redis's serialization, or nil.
void Dump(Args args, DataView& data, resp::Writer& out) {
  auto v = DumpedValueAt(data, args[1]);
  if (ReplyIfError(v.status(), out)) return;
  if (!v->has_value()) return out.Null();
  out.Bulk(EncodeDumpPayload(**v));
}

// RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]:
// "restore"; a value restored already expired only deletes the old one
// ("del", when there was one).
void Restore(Args args, DataView& data, resp::Writer& out) {
  auto options = ParseRestoreOptions(args);
  if (ReplyIfError(options.status(), out)) return;
  const bool existed = HoldsValue(data, args[1]);
  if (!options->replace && existed) {
    return out.Error("BUSYKEY Target key name already exists.");
  }
  auto ttl = ParseInt64(args[2]);
  if (ReplyIfError(ttl.status(), out)) return;
  if (*ttl < 0) return out.Error("ERR Invalid TTL value, must be >= 0");
  auto value = DecodeDumpPayload(args[3]);
  if (ReplyIfError(value.status(), out)) return;
  const uint64_t now = data.now_ms();
  constexpr auto kMaxMs = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  // A relative TTL past int64 wraps negative in Redis (ttl += mstime()),
  // which then finds the key already expired: so here too.
  const bool wraps = !options->absolute_ttl && static_cast<uint64_t>(*ttl) > kMaxMs - now;
  const uint64_t expire_at = *ttl == 0 ? 0 : options->absolute_ttl ? *ttl : wraps ? 1 : now + *ttl;
  if (expire_at != 0 && expire_at <= now) {  // restored already expired: only the old value goes
    if (options->replace) data.Delete(args[1]);
    if (existed) data.Notify(notify::kGeneric, "del", args[1]);
    return out.Simple("OK");
  }
  if (ReplyIfError(StoreDumpedValue(data, args[1], std::move(*value), expire_at), out)) return;
  NotifyReplaced(data, args[1], existed);
  data.Notify(notify::kGeneric, "restore", args[1]);
  out.Simple("OK");
}

std::vector<std::string_view> ObjectKeys(Args args) {
  if (args.size() < 3) return {};
  return {args[2]};
}

// OBJECT ENCODING | REFCOUNT | IDLETIME | FREQ key, OBJECT HELP
void Object(Args args, DataView& data, resp::Writer& out) {
  const std::string_view sub = args[1];
  if (EqualsNoCase(sub, "help") && args.size() == 2) {
    static constexpr std::string_view kHelp[] = {
        "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", "ENCODING <key>", "FREQ <key>",
        "IDLETIME <key>", "REFCOUNT <key>"};
    return out.SimpleLines(kHelp);
  }
  const bool known = EqualsNoCase(sub, "encoding") || EqualsNoCase(sub, "refcount") ||
                     EqualsNoCase(sub, "idletime") || EqualsNoCase(sub, "freq");
  static const CommandSpec& kObject = *FindCommand("object");
  if (!known) return out.Error(SubcommandError(kObject, sub));
  if (std::string arity = CheckArity(kObject, args); !arity.empty()) return out.Error(arity);
  auto v = data.FindStored(args[2]);  // a long string's header tells enough
  if (ReplyIfError(v.status(), out)) return;
  if (!v->has_value()) return out.Null();
  if (EqualsNoCase(sub, "refcount")) return out.Integer(1);
  if (EqualsNoCase(sub, "idletime")) return out.Integer(0);
  if (EqualsNoCase(sub, "freq")) {
    return out.Error("ERR An LFU maxmemory policy is not selected, access frequency not tracked. "
                     "Please note that when switching between policies at runtime LRU and LFU data "
                     "will take some time to adjust.");
  }
  auto encoding = EncodingOf(data, args[2], **v);
  if (ReplyIfError(encoding.status(), out)) return;
  out.Bulk(*encoding);
}

std::vector<std::string_view> MemoryKeys(Args args) {
  if (args.size() < 3 || !EqualsNoCase(args[1], "usage")) return {};
  return {args[2]};
}

// MEMORY USAGE key [SAMPLES count]: the bytes stored at the key — the key,
// the value's header and payload; for a paged collection its header, not its
// pages (docs/proxy.md). MEMORY HELP. Other subcommands are not served.
void Memory(Args args, DataView& data, resp::Writer& out) {
  const std::string_view sub = args[1];
  if (EqualsNoCase(sub, "help") && args.size() == 2) {
    static constexpr std::string_view kHelp[] = {"MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                                                  "USAGE <key> [SAMPLES <count>]"};
    return out.SimpleLines(kHelp);
  }
  static const CommandSpec& kMemory = *FindCommand("memory");
  if (!EqualsNoCase(sub, "usage")) return out.Error(SubcommandError(kMemory, sub));
  if (std::string arity = CheckArity(kMemory, args); !arity.empty()) return out.Error(arity);
  if (args.size() != 3 && (args.size() != 5 || !EqualsNoCase(args[3], "samples"))) {
    return out.Error("ERR syntax error");
  }
  if (args.size() == 5) {
    auto samples = ParseInt64(args[4]);
    if (ReplyIfError(samples.status(), out)) return;
    if (*samples < 0) return out.Error("ERR syntax error");
  }
  auto v = data.FindStored(args[2]);
  if (ReplyIfError(v.status(), out)) return;
  if (!v->has_value()) return out.Null();
  uint64_t bytes = (*v)->payload.size();
  if ((*v)->type == ValueType::kChunkedString) {  // its chunks, each at a page key
    auto header = DecodeChunkedHeader(**v);
    if (ReplyIfError(header.status(), out)) return;
    bytes += header->length + ChunkCount(*header) * (kPageKeyOverhead + args[2].size());
  }
  out.Integer(static_cast<int64_t>(args[2].size() + kStoredHeaderBytes + bytes));
}

// ---- The sweeper's commands (worker_keyspace.cc) -----------------------------

// rampart-expire key: deletes the key if it has expired (it may have been
// written again since the sweeper saw it).
void DeleteIfExpired(Args args, DataView& data, resp::Writer& out) {
  auto raw = data.Raw(args[1]);
  if (!raw.ok() || !raw->has_value()) return out.Integer(0);
  auto v = DecodeStored(**raw);
  if (!v.ok() || !Expired(*v, data.now_ms())) return out.Integer(0);
  data.Delete(args[1]);
  out.Integer(1);
}

// Only the header is read: the pages are deleted unread (a stale long
// string's chunks are megabytes each).
std::vector<std::string_view> SweepPagesKeys(Args args) {
  if (args.size() < 4) return {};
  return {args[1]};
}

// rampart-sweep-pages user_key collection_id page_key...: deletes the pages
// when the collection (or chunked string) they belong to is no longer at
// user_key (deleted, overwritten, expired, or another one since).
void DeleteStalePages(Args args, DataView& data, resp::Writer& out) {
  auto header = data.Raw(args[1]);
  if (!header.ok()) return out.Integer(0);
  bool live = false;
  if (header->has_value()) {
    auto v = DecodeStored(**header);
    uint64_t id = 0;  // of the collection or chunked string there
    if (auto chunked = ChunkedHeaderOf(**header); chunked.has_value()) {
      id = chunked->id;
    } else if (auto ids = ReadCollectionIds(**header); ids.ok()) {
      id = ids->id;
    }
    live = v.ok() && !Expired(*v, data.now_ms()) && id != 0 && std::to_string(id) == args[2];
  }
  if (live) return out.Integer(0);
  for (size_t n = 3; n < args.size(); ++n) {
    if (IsInternalKey(args[n])) data.Delete(args[n]);
  }
  out.Integer(static_cast<int64_t>(args.size() - 3));
}

}  // namespace rampart::proxy::internal
