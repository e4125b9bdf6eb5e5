// The data commands' Apply and NeedsRead functions, private to the command
// table (commands.cc). Strings in commands_strings.cc (BITOP and BITFIELD in
// commands_bitops.cc, HyperLogLogs in commands_hll.cc), keys (DEL, EXPIRE,
// TTL, ...) in commands_keys.cc, COPY/RENAME/OBJECT/MEMORY in
// commands_copy.cc, hashes in commands_hashes.cc, sets in commands_sets.cc,
// lists in commands_lists.cc, sorted sets in commands_zsets.cc,
// commands_zranges.cc and commands_zsetops.cc, the blocking and multi-key
// pops in commands_blocking.cc, SORT in commands_sort.cc, GEO in
// commands_geo.cc.
#pragma once

#include <cctype>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <functional>

#include "proxy/commands.h"
#include "proxy/collection_scan.h"
#include "proxy/page_tree.h"
#include "proxy/zset.h"

namespace rampart::proxy::internal {

// Replies the error of a failed lookup or parse (its message is the Redis
// error text) and returns true when `s` is not OK.
bool ReplyIfError(const Status& s, resp::Writer& out);

// The outcome of reads that do not depend on each other: each is tried even
// after another missed a page, so that every missing page is asked for in
// the same read round.
class Gather {
 public:
  // Takes one read's status; true when it succeeded.
  bool Add(const Status& s) {
    if (s.ok()) return true;
    Status& slot = s.code() == StatusCode::kUnavailable ? missing_ : error_;
    if (slot.ok()) slot = s;
    return false;
  }
  // The first error other than kUnavailable; else kUnavailable when a page
  // was missing; else OK.
  Status status() const { return error_.ok() ? missing_ : error_; }

 private:
  Status error_, missing_;
};

// Whether `a` equals `lower` ignoring the case of `a` (option names).
// REQUIRES: `lower` is lower case.
inline bool EqualsNoCase(std::string_view a, std::string_view lower) {
  if (a.size() != lower.size()) return false;
  for (size_t n = 0; n < a.size(); ++n) {
    if (std::tolower(static_cast<unsigned char>(a[n])) != lower[n]) return false;
  }
  return true;
}

// INCRBYFLOAT's numbers (HINCRBYFLOAT's too). ParseLongDouble is Redis's
// string2ld: strtold over the whole string — no leading space, shorter than
// 5 KiB, not NaN, no overflow to +-inf or underflow to 0 ("inf" itself and hex
// are taken) — else InvalidArgument("ERR value is not a valid float").
// FormatLongDouble is Redis's ld2string in LD_STR_HUMAN mode: "%.17Lf" with
// the fraction's trailing zeros (and a bare '.') removed, "-0" as "0"
// ("10.5", "5000", "0.30000000000000001"). REQUIRES: v is finite.
Result<long double> ParseLongDouble(std::string_view s);
std::string FormatLongDouble(long double v);

// The table's (lower-case) name of the command args[0] names, for error
// texts such as "ERR invalid expire time in 'setex' command".
// REQUIRES: args[0] names a command of the table (true inside Apply).
inline std::string_view CommandName(Args args) { return FindCommand(args[0])->name; }

// Keyspace notifications the command files share (notify.h; the rest are
// their own DataView::Notify calls). NotifyKeyMiss: "keymiss" for a key a
// write command looks up as Redis's read commands do (SET ... GET, GETDEL,
// BITOP's sources, ...; the worker notes a read command's). NotifyStored:
// what a command that replaces `key` with its result sends (the *STORE
// forms, BITOP, SORT ... STORE): `event` of class `cls` when it stored
// something, else "del" when the key held a value the empty result deleted.
// REQUIRES: `event` is a string literal.
void NotifyKeyMiss(DataView& data, std::string_view key);
void NotifyStored(DataView& data, uint32_t cls, std::string_view event, std::string_view key, bool stored,
                  bool existed);
// Whether `key` holds a live value (a damaged one counts; a long string's
// chunks are not read): what NotifyStored's `existed` asks, looked up before
// the store replaces it.
bool HoldsValue(const DataView& data, std::string_view key);

#define RAMPART_PROXY_APPLY(name) void name(Args args, DataView& data, resp::Writer& out)
RAMPART_PROXY_APPLY(Get);
RAMPART_PROXY_APPLY(Set);
RAMPART_PROXY_APPLY(MGet);
RAMPART_PROXY_APPLY(MSet);
RAMPART_PROXY_APPLY(Del);     // DEL, UNLINK
RAMPART_PROXY_APPLY(Exists);  // EXISTS, TOUCH
RAMPART_PROXY_APPLY(IncrBy);  // INCR, INCRBY, DECR, DECRBY by args[0]
RAMPART_PROXY_APPLY(GetSet);
RAMPART_PROXY_APPLY(StrLen);
RAMPART_PROXY_APPLY(SetNx);
RAMPART_PROXY_APPLY(SetEx);   // SETEX, PSETEX
RAMPART_PROXY_APPLY(MSetNx);
RAMPART_PROXY_APPLY(GetEx);
RAMPART_PROXY_APPLY(GetDel);
RAMPART_PROXY_APPLY(Append);
RAMPART_PROXY_APPLY(GetRange);  // GETRANGE, SUBSTR
RAMPART_PROXY_APPLY(SetRange);
RAMPART_PROXY_APPLY(IncrByFloat);
RAMPART_PROXY_APPLY(SetBit);
RAMPART_PROXY_APPLY(GetBit);
RAMPART_PROXY_APPLY(BitCount);
RAMPART_PROXY_APPLY(BitPos);
RAMPART_PROXY_APPLY(BitOp);     // commands_bitops.cc
RAMPART_PROXY_APPLY(BitField);  // BITFIELD, BITFIELD_RO
RAMPART_PROXY_APPLY(PfAdd);     // commands_hll.cc
RAMPART_PROXY_APPLY(PfCount);
RAMPART_PROXY_APPLY(PfMerge);
RAMPART_PROXY_APPLY(Lcs);     // commands_lcs.cc
RAMPART_PROXY_APPLY(Ttl);     // TTL, PTTL, EXPIRETIME, PEXPIRETIME
RAMPART_PROXY_APPLY(Expire);  // EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT
RAMPART_PROXY_APPLY(Persist);
RAMPART_PROXY_APPLY(Type);
RAMPART_PROXY_APPLY(Ping);    // PING, ECHO (touch no data; also queued inside MULTI)
RAMPART_PROXY_APPLY(BLPop);   // commands_blocking.cc
RAMPART_PROXY_APPLY(BRPop);
RAMPART_PROXY_APPLY(BLMove);
RAMPART_PROXY_APPLY(BRPopLPush);
RAMPART_PROXY_APPLY(LMPop);
RAMPART_PROXY_APPLY(BLMPop);
RAMPART_PROXY_APPLY(ZMPop);
RAMPART_PROXY_APPLY(BZMPop);
RAMPART_PROXY_APPLY(BZPopMin);
RAMPART_PROXY_APPLY(BZPopMax);
std::vector<std::string_view> MultiPopKeys(Args args);          // [L|Z]MPOP numkeys key...
std::vector<std::string_view> BlockingMultiPopKeys(Args args);  // B[L|Z]MPOP timeout numkeys key...
RAMPART_PROXY_APPLY(Watch);
RAMPART_PROXY_APPLY(Copy);    // commands_copy.cc
RAMPART_PROXY_APPLY(Rename);  // RENAME, RENAMENX
RAMPART_PROXY_APPLY(Dump);
RAMPART_PROXY_APPLY(Restore);
RAMPART_PROXY_APPLY(Object);
std::vector<std::string_view> ObjectKeys(Args args);
RAMPART_PROXY_APPLY(Memory);  // MEMORY USAGE, MEMORY HELP
std::vector<std::string_view> MemoryKeys(Args args);
// The sweeper's internal commands (not in the command table).
RAMPART_PROXY_APPLY(DeleteIfExpired);
RAMPART_PROXY_APPLY(DeleteStalePages);
std::vector<std::string_view> SweepPagesKeys(Args args);  // the user key: the pages are deleted unread
RAMPART_PROXY_APPLY(GeoAdd);  // commands_geo.cc
RAMPART_PROXY_APPLY(GeoPos);
RAMPART_PROXY_APPLY(GeoHash);
RAMPART_PROXY_APPLY(GeoDist);
RAMPART_PROXY_APPLY(GeoRadius);          // GEORADIUS, GEORADIUS_RO
RAMPART_PROXY_APPLY(GeoRadiusByMember);  // GEORADIUSBYMEMBER, GEORADIUSBYMEMBER_RO
RAMPART_PROXY_APPLY(GeoSearch);
RAMPART_PROXY_APPLY(GeoSearchStore);
std::vector<std::string_view> GeoRadiusKeys(Args args);  // the source, STORE's and STOREDIST's
RAMPART_PROXY_APPLY(HSet);    // HSET, HMSET
RAMPART_PROXY_APPLY(HGet);
RAMPART_PROXY_APPLY(HMGet);
RAMPART_PROXY_APPLY(HGetAll);
RAMPART_PROXY_APPLY(HDel);
RAMPART_PROXY_APPLY(HLen);
RAMPART_PROXY_APPLY(HExists);
RAMPART_PROXY_APPLY(HSetNx);
RAMPART_PROXY_APPLY(HStrLen);
RAMPART_PROXY_APPLY(HIncrBy);
RAMPART_PROXY_APPLY(HIncrByFloat);
RAMPART_PROXY_APPLY(HKeys);
RAMPART_PROXY_APPLY(HVals);
RAMPART_PROXY_APPLY(HRandField);
RAMPART_PROXY_APPLY(HScan);
// Sorted sets: commands_zsets.cc, commands_zranges.cc, commands_zsetops.cc.
RAMPART_PROXY_APPLY(ZAdd);
RAMPART_PROXY_APPLY(ZIncrBy);
RAMPART_PROXY_APPLY(ZRem);
RAMPART_PROXY_APPLY(ZScore);
RAMPART_PROXY_APPLY(ZMScore);
RAMPART_PROXY_APPLY(ZCard);
RAMPART_PROXY_APPLY(ZRank);  // ZRANK, ZREVRANK
RAMPART_PROXY_APPLY(ZPop);   // ZPOPMIN, ZPOPMAX
RAMPART_PROXY_APPLY(ZRandMember);
RAMPART_PROXY_APPLY(ZScan);
RAMPART_PROXY_APPLY(ZRange);
RAMPART_PROXY_APPLY(ZRangeByScore);
RAMPART_PROXY_APPLY(ZRevRangeByScore);
RAMPART_PROXY_APPLY(ZRangeByLex);
RAMPART_PROXY_APPLY(ZRevRangeByLex);
RAMPART_PROXY_APPLY(ZRevRange);
RAMPART_PROXY_APPLY(ZRangeStore);
RAMPART_PROXY_APPLY(ZCount);
RAMPART_PROXY_APPLY(ZLexCount);
RAMPART_PROXY_APPLY(ZRemRangeByScore);
RAMPART_PROXY_APPLY(ZRemRangeByRank);
RAMPART_PROXY_APPLY(ZRemRangeByLex);
RAMPART_PROXY_APPLY(ZUnionStore);
RAMPART_PROXY_APPLY(ZInterStore);
RAMPART_PROXY_APPLY(ZDiffStore);
RAMPART_PROXY_APPLY(ZUnion);
RAMPART_PROXY_APPLY(ZInter);
RAMPART_PROXY_APPLY(ZDiff);
RAMPART_PROXY_APPLY(ZInterCard);
// Sets: commands_sets.cc.
RAMPART_PROXY_APPLY(SAdd);
RAMPART_PROXY_APPLY(SRem);
RAMPART_PROXY_APPLY(SCard);
RAMPART_PROXY_APPLY(SMembers);
RAMPART_PROXY_APPLY(SIsMember);
RAMPART_PROXY_APPLY(SMIsMember);
RAMPART_PROXY_APPLY(SPop);
RAMPART_PROXY_APPLY(SRandMember);
RAMPART_PROXY_APPLY(SMove);
RAMPART_PROXY_APPLY(SScan);
RAMPART_PROXY_APPLY(SCombine);       // SINTER, SUNION, SDIFF by args[0]
RAMPART_PROXY_APPLY(SCombineStore);  // SINTERSTORE, SUNIONSTORE, SDIFFSTORE by args[0]
RAMPART_PROXY_APPLY(SInterCard);
// Lists: commands_lists.cc.
RAMPART_PROXY_APPLY(ListPush);  // LPUSH, RPUSH, LPUSHX, RPUSHX
RAMPART_PROXY_APPLY(ListPop);   // LPOP, RPOP
RAMPART_PROXY_APPLY(LLen);
RAMPART_PROXY_APPLY(LRange);
RAMPART_PROXY_APPLY(LIndex);
RAMPART_PROXY_APPLY(LSet);
RAMPART_PROXY_APPLY(LInsert);
RAMPART_PROXY_APPLY(LRem);
RAMPART_PROXY_APPLY(LTrim);
RAMPART_PROXY_APPLY(LPos);
RAMPART_PROXY_APPLY(LMove);
RAMPART_PROXY_APPLY(RPopLPush);
// SORT and SORT_RO: commands_sort.cc.
RAMPART_PROXY_APPLY(Sort);
RAMPART_PROXY_APPLY(SortRo);
std::vector<std::string_view> SortKeys(Args args);  // the key, and STORE's destination
#undef RAMPART_PROXY_APPLY

bool SetNeedsRead(Args args);

// The keys of ZUNIONSTORE-like commands (dst numkeys key...) and of
// ZUNION-like ones (numkeys key...): CommandSpec::keys_of.
std::vector<std::string_view> StoreAlgebraKeys(Args args);
std::vector<std::string_view> ReplyAlgebraKeys(Args args);
// The keys of `numkeys key...` with numkeys at args[at] (none when it is not
// a positive integer; at most the arguments there are).
std::vector<std::string_view> NumKeysKeys(Args args, size_t at);
// EVAL script numkeys key ... (EVALSHA, EVAL_RO, EVALSHA_RO).
inline std::vector<std::string_view> EvalKeys(Args args) { return NumKeysKeys(args, 2); }

// HSCAN / SSCAN / ZSCAN key cursor [MATCH pattern] [COUNT count]: opens the
// collection with `open` (a Result<Collection-like>; its tree(s) through
// `tree`) and replies [next cursor, entries], each entry written as
// `per_entry` items by `entry`. Errors in Redis's order: the cursor, the
// key's type, then the options (a missing key answers an empty scan).
template <typename Open, typename TreeOf>
void ScanCollection(Args args, resp::Writer& out, Open open, TreeOf tree, size_t per_entry,
                    const std::function<void(const TreeEntry&, resp::Writer&)>& entry) {
  auto cursor = ParseScanCursor(args[2]);
  if (ReplyIfError(cursor.status(), out)) return;
  auto c = open();
  if (ReplyIfError(c.status(), out)) return;
  if (!c->exists()) {
    out.Array(2);
    out.Bulk("0");
    return out.Array(0);
  }
  auto options = ParseScanOptions(args.subspan(3));
  if (ReplyIfError(options.status(), out)) return;
  auto page = ScanTree(tree(*c), *cursor, options->count, options->match);
  if (ReplyIfError(page.status(), out)) return;
  out.Array(2);
  out.Bulk(std::to_string(page->cursor));
  out.Array(page->entries.size() * per_entry);
  for (const TreeEntry& e : page->entries) entry(e, out);
}

// The count of HRANDFIELD / SRANDMEMBER / ZRANDMEMBER: an integer whose
// magnitude is at most kMaxRandomCount (a larger negative count would build
// a reply of that many elements).
inline constexpr int64_t kMaxRandomCount = int64_t{1} << 24;
Result<int64_t> ParseRandomCount(std::string_view s);

// ---- Lists' cores, shared with the blocking pops (commands_lists.cc) ----
// Each opens its lists itself and Saves them into `data`; errors as Redis
// text (WRONGTYPE, ...) or kUnavailable for a page not read yet (the worker
// runs the command again, as for any Apply function).

enum class ListEnd { kLeft, kRight };  // the head, the tail
// LEFT / RIGHT in any case; else "ERR syntax error".
Result<ListEnd> ParseListEnd(std::string_view word);
// Pops up to `count` elements at `end` of the list at `key` (LPOP / RPOP key
// count), deleting the key when it empties, and returns them in pop order
// (from the tail: the last element first). nullopt, nothing changed, when the
// key holds no list; an empty vector for count 0. Records "lpop"/"rpop" once
// when it popped, then "del" when the list emptied.
Result<std::optional<std::vector<std::string>>> PopElements(DataView& data, std::string_view key,
                                                            ListEnd end, uint64_t count);
// LMOVE: pops the element at `from` of source's list and pushes it at `to` of
// destination's (created when absent; the same list when the keys are equal:
// a rotation), deleting source when it empties; returns the element. nullopt,
// nothing changed, when source holds no list — whatever destination holds.
// WRONGTYPE, nothing changed, when either holds another type. Records
// "lpush"/"rpush" on destination, then "lpop"/"rpop" (and "del" when it
// emptied) on source, as Redis's LMOVE.
Result<std::optional<std::string>> MoveElement(DataView& data, std::string_view source,
                                               std::string_view destination, ListEnd from, ListEnd to);

// ZPOPMIN / ZPOPMAX's core (commands_zsets.cc), shared with the multi-key
// and blocking pops: pops up to `count` members at the low end of the sorted
// set at `key` (max: the high end, highest first), deleting the key when it
// empties. nullopt, nothing changed, when the key is absent; WRONGTYPE for
// another type. Records "zpopmin"/"zpopmax" once when it popped, then "del"
// when the set emptied.
Result<std::optional<Zset::Scored>> PopScored(DataView& data, std::string_view key, bool max,
                                              uint64_t count);

}  // namespace rampart::proxy::internal
