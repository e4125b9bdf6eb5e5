// DataView: the keys one command (or one MULTI block) works on — what its read
// round returned, overlaid with the writes it makes, so the commands of a
// block see each other's effects and the block's writes leave as one
// transaction. Values are in the stored format of value_codec.h; expired
// values read as absent.
//
// Keys a command finds it needs only while it runs — the pages of a paged
// collection (collection.h), the chunks of a long string (chunked_string.h)
// — are asked for with Raw() (chunks: Find): a key the read round
// did not return is remembered in missing() and answered kUnavailable; the
// worker then reads the declared keys and every missing key again, in one
// read transaction, and runs the commands again on a fresh view. So what a
// command finally sees is one snapshot.
//
// Thread-safety: belongs to one job of one worker.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "proxy/chunked_string.h"
#include "proxy/page_tree.h"
#include "proxy/value_codec.h"

namespace rampart::proxy {

inline constexpr std::string_view kWrongType =
    "WRONGTYPE Operation against a key holding the wrong kind of value";

class DataView {
 public:
  // `seed` seeds Random(): the same seed gives the same numbers, so a command
  // run again after a read of missing keys makes the same choices.
  explicit DataView(uint64_t now_ms, uint64_t seed = 0) : now_ms_(now_ms), random_(seed) {}

  // What the read round returned for key (nullopt: absent).
  void Seed(std::string_view key, std::optional<std::string> stored);

  // The key's live value, nullopt when absent or expired. Corruption when the
  // stored bytes are not in the proxy's format. A chunked string comes
  // joined, as a kString: a chunk the view does not hold is added to
  // missing() and gives Unavailable, as Raw(). The payload views bytes the
  // view keeps until the key is written again. REQUIRES: key was seeded or
  // written (a command reads only the keys it declared).
  Result<std::optional<StoredValue>> Find(std::string_view key) const;
  // Find, and InvalidArgument(kWrongType) when the key holds another type
  // (a chunked string's chunks are not asked for then).
  Result<std::optional<StoredValue>> FindTyped(std::string_view key, ValueType type) const;
  // Find without joining: a chunked string is its header (kChunkedString).
  // For commands that need only the type, the expiry or the length.
  Result<std::optional<StoredValue>> FindStored(std::string_view key) const;

  // Writes the key. A string ('s') whose stored form is longer than
  // set_max_value_bytes() goes in chunks (chunked_string.h): under the id of
  // the chunked string the view holds at the key, writing only the chunks
  // whose bytes the view does not hold already, or under a new id. Whatever
  // the write, the chunks of a chunked string the view held at the key are
  // deleted — except for a header of the same id (EXPIRE of a long string).
  // A chunked string the view does not know (a blind SET over one) leaves
  // its chunks to the sweeper, as an overwritten collection does.
  void Put(std::string_view key, std::string stored);
  void Delete(std::string_view key);

  // The header of the live long string at `key`; nullopt when the key holds
  // anything else or nothing; Corruption when the header is damaged. The
  // commands on a part of a string then touch only that part's chunks.
  Result<std::optional<ChunkedHeader>> FindChunked(std::string_view key) const;
  // A part of the live chunked string `h` at `key` (FindStored's header):
  // bytes [from, from + n), reading only the chunks they cross (one the view
  // lacks is added to missing(): Unavailable). REQUIRES: from + n <= h.length.
  Result<std::string> ChunkRange(std::string_view key, const ChunkedHeader& h, uint64_t from,
                                 uint64_t n) const;
  // Writes `bytes` at `offset` into the live chunked string `h` at `key`
  // (SETRANGE, SETBIT, APPEND at h.length), zero bytes between its end and
  // `offset`: reads only the chunks the write crosses — from the one holding
  // min(offset, h.length) on — (Unavailable while the view lacks one),
  // rewrites those whose bytes change, adds chunks past the end, and
  // rewrites the header; the other chunks are neither read nor written.
  // REQUIRES: bytes is not empty.
  Status WriteChunks(std::string_view key, const ChunkedHeader& h, uint64_t offset,
                     std::string_view bytes);

  // The longest value the kv tier takes; 0 (the default): strings are never
  // chunked.
  void set_max_value_bytes(uint64_t n);
  // Whether `key` is a chunk of the chunked string the view holds at its
  // user key (the worker keeps chunks out of its PageCache).
  bool IsChunk(std::string_view key) const;

  // The stored bytes of any key (nullopt: absent), expired or not. A key that
  // was neither seeded nor written is added to missing() and gives
  // Unavailable.
  Result<std::optional<std::string_view>> Raw(std::string_view key);
  // The keys Raw() asked for that the view does not hold, in order.
  const std::vector<std::string>& missing() const { return missing_; }
  // The bytes a missing key's value has, when the view knows (a chunk of a
  // long string: its header says); 0 otherwise.
  uint64_t ExpectedBytes(std::string_view key) const;

  // For a prediction (Worker::Predict): where Raw() looks for a key the view
  // does not hold before calling it missing — a guess at its stored bytes (a
  // worker's page cache), or nullptr. A guessed key is seeded with a copy of
  // the guess and listed in guessed(), in order. REQUIRES: `guess` stays
  // callable while the view is used.
  using GuessFn = std::function<const std::string*(std::string_view key)>;
  void set_guesses(GuessFn guess) { guess_ = std::move(guess); }
  const std::vector<std::string>& guessed() const { return guessed_; }

  // The generation of `key`'s bytes in the view: a new number whenever they
  // change (Seed, Put, Delete, a guess taken); 0 when the view does not hold
  // the key.
  uint64_t generation(std::string_view key) const;

  // Decoded pages and collection roots, kept between the commands of one
  // view — a leader and the read-modify-writes joined to it decode a
  // collection's pages once instead of once each. `name` is the keeper's
  // choice; Take hands a node back once, and only with the generation it was
  // kept with (the caller passes the current generation of the key the node
  // was decoded from, so a node of bytes since replaced is never returned).
  void KeepDecoded(std::string_view name, uint64_t generation, std::unique_ptr<TreeNode> node);
  std::unique_ptr<TreeNode> TakeDecoded(std::string_view name, uint64_t generation);

  // The longest key a command may name beyond its declared ones (SORT's
  // BY/GET patterns): a longer one cannot exist (the worker refuses it as a
  // declared key), so it is not asked for. Unlimited unless set.
  void set_max_key_bytes(size_t n) { max_key_bytes_ = n; }
  size_t max_key_bytes() const { return max_key_bytes_; }

  // A pseudo-random number (SPOP, SRANDMEMBER, new collection ids).
  uint64_t Random();

  // Blocking commands: whether the command may wait (not inside MULTI,
  // where Redis answers at once), and its request to: the worker then parks
  // the session and runs the command again later (worker_block.cc).
  void set_may_block(bool may) { may_block_ = may; }
  bool may_block() const { return may_block_; }
  void Block() { blocked_ = true; }
  bool blocked() const { return blocked_; }
  // The command runs again after a write woke its parked session. Redis
  // serves a blocked client only from a key that holds the type it waits
  // for, so a woken blocking command passes over a waited key of another
  // type (where its first run answered WRONGTYPE).
  void set_woken(bool woken) { woken_ = woken; }
  bool woken() const { return woken_; }

  // Keyspace notifications (notify.h): the classes of `notify-keyspace-events`
  // to record (0, the default: none). Put and Delete of a user key the view
  // holds record "expired" (class x) when its value had expired, and Put
  // "new" (class n) when the key held no live value; a key the view does not
  // hold (a blind write) records neither.
  void set_notify_flags(uint32_t flags) { notify_flags_ = flags; }
  uint32_t notify_flags() const { return notify_flags_; }
  // Records event `event` of class `cls` on `key`, as Redis's
  // notifyKeyspaceEvent, when the flags ask for it. The worker publishes a
  // job's events once its write is done (none when it failed). REQUIRES:
  // `event` outlives the view (the commands pass string literals).
  void Notify(uint32_t cls, std::string_view event, std::string_view key);
  // Whether the view holds an expired value at `key` that its commands did
  // not write (one a write's lookup removes first, "expired").
  bool HoldsExpired(std::string_view key) const;
  struct Event {
    std::string_view name;
    std::string key;
  };
  const std::vector<Event>& events() const { return events_; }

  struct Entry {
    std::optional<std::string> stored;  // nullopt: absent (a delete when dirty)
    bool dirty = false;                 // written by the command(s)
    uint64_t generation = 0;            // see generation()
  };
  // Every key seen, by key; the dirty ones are the writes.
  const std::map<std::string, Entry, std::less<>>& entries() const { return entries_; }
  uint64_t now_ms() const { return now_ms_; }

 private:
  uint64_t now_ms_;
  uint64_t random_;
  size_t max_key_bytes_ = SIZE_MAX;
  // Sets the key's bytes (nullopt: absent) under a new generation.
  std::map<std::string, Entry, std::less<>>::iterator Set(std::string_view key,
                                                         std::optional<std::string> stored,
                                                         bool dirty);

  // Chunked strings (chunked_string.h).
  Result<std::optional<StoredValue>> Join(std::string_view key, const StoredValue& header) const;
  // The chunked string's header the view holds at `key`, expired or not.
  std::optional<ChunkedHeader> ChunkedAt(std::string_view key) const;
  void PutChunked(std::string_view key, uint64_t expire_at_ms, std::string_view payload);
  // Deletes the chunks of the chunked string the view holds at `key`, unless
  // its id is `keep`.
  void DropChunks(std::string_view key, uint64_t keep);
  // Deletes chunks `first`.. of the chunked string `h` at `key`.
  void DeleteChunks(std::string_view key, const ChunkedHeader& h, uint64_t first);
  void NoteMissing(std::string_view key, uint64_t expected_bytes = 0) const;
  // The stored bytes of chunks [first, last] of the chunked string `h` at
  // `key` (none when first > last: the header's checks only): Corruption
  // when the header or a chunk is damaged; Unavailable (each chunk the view
  // lacks added to missing()) until all are read.
  Result<std::vector<std::string_view>> ChunkViews(std::string_view key, const ChunkedHeader& h,
                                                   uint64_t first, uint64_t last) const;

  std::map<std::string, Entry, std::less<>> entries_;
  uint64_t next_generation_ = 1;
  uint64_t max_value_bytes_ = 0;
  uint32_t chunk_bytes_ = 0;
  // Joined chunked strings by key, with the generation of the header they
  // were joined from: what Find's results view.
  struct Joined {
    uint64_t generation = 0;
    std::string bytes;
  };
  mutable std::map<std::string, Joined, std::less<>> joined_;
  // A header claiming more chunks is damaged (or more than kMaxStringBytes).
  static constexpr uint64_t kMaxChunks = uint64_t{1} << 20;
  struct Decoded {
    uint64_t generation = 0;
    std::unique_ptr<TreeNode> node;
  };
  std::map<std::string, Decoded, std::less<>> decoded_;
  mutable std::vector<std::string> missing_;  // Find notes chunks it lacks
  mutable std::map<std::string, uint64_t, std::less<>> expected_bytes_;  // of missing chunks
  GuessFn guess_;
  std::vector<std::string> guessed_;
  bool may_block_ = false;
  bool blocked_ = false;
  bool woken_ = false;
  uint32_t notify_flags_ = 0;
  std::vector<Event> events_;
  // Records "expired" and "new" for a write of `key` (see set_notify_flags);
  // `creates`: the write leaves a value.
  void NoteWrite(std::string_view key, bool creates);
};

}  // namespace rampart::proxy
