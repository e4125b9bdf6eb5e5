// Collection: a Redis hash, set, sorted set or list stored per element — a
// header at the user's key and, once the collection outgrows the header,
// pages of entries at internal keys next to it (internal_keys.h). A change
// to one element rewrites the header and the pages on one path of the
// collection's PageTree(s); a read of one element or a range reads only the
// pages it crosses. All of it is written in the command's write set, so a
// reader sees a change whole or not at all.
//
//   RAMPART_ASSIGN_OR_RETURN(Collection set, Collection::Open(data, key, ValueType::kPagedSet));
//   RAMPART_ASSIGN_OR_RETURN(bool added, set.tree().Put(member, ""));
//   RAMPART_RETURN_IF_ERROR(set.Save());   // header and changed pages into `data`
//
// The trees: a hash has one, by field (value: the field's value); a set one,
// by member (value empty); a list one, by rank (keys empty); a sorted set two
// that always hold the same members: kByMember (value: the score, 8 bytes)
// and kByScore (key: ScoreKey(score, member), value empty).
//
// Stored format (header and pages): docs/collections.md — DO NOT CHANGE.
//
// Thread-safety: belongs to one command of one worker, like its DataView.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "proxy/data_view.h"
#include "proxy/page_tree.h"
#include "proxy/value_codec.h"

namespace rampart::proxy {

// A sorted set's trees.
inline constexpr size_t kByMember = 0;
inline constexpr size_t kByScore = 1;

// The kByScore key of a member: the score as 8 bytes that sort as the
// doubles do (-0 as 0), then the member. REQUIRES: score is not NaN.
std::string ScoreKey(double score, std::string_view member);
// The score and member of a ScoreKey. REQUIRES: key.size() >= 8.
double ScoreOfKey(std::string_view key);
inline std::string_view MemberOfKey(std::string_view key) { return key.substr(8); }
// The kByMember value of a score, and back.
std::string ScoreValue(double score);
double ScoreOfValue(std::string_view value);

class Collection {
 public:
  // The collection at `key` as `data` holds it. Absent or expired: an empty
  // one of `type` (exists() false) that Save() creates if it gets elements.
  // InvalidArgument(kWrongType) when the key holds another type; Corruption
  // when the header is damaged. Whole-value 'h' and 'z' values are read as
  // the hash / sorted set they hold. REQUIRES: `type` is one of kPagedHash,
  // kPagedSet, kPagedZset, kList; `data` outlives the collection.
  static Result<Collection> Open(DataView& data, std::string_view key, ValueType type);
  // A new, empty collection of `type` at `key`, whatever the key holds now
  // (its old pages become garbage for the sweeper): the destination of
  // SINTERSTORE, COPY, ....
  static Collection Create(DataView& data, std::string_view key, ValueType type);

  Collection(Collection&&) noexcept;
  // Not assignable: the old trees give their pages to the old store
  // (~PageTree), which a member-wise assignment would free first.
  Collection& operator=(Collection&&) = delete;
  // Leaves the decoded roots (when they are what the header holds) and pages
  // in the view for the next command of the job on this collection
  // (DataView::KeepDecoded).
  ~Collection();

  bool exists() const { return exists_; }
  ValueType type() const { return type_; }
  uint64_t expire_at_ms() const { return expire_at_ms_; }
  void set_expire_at_ms(uint64_t ms) {
    expire_at_ms_ = ms;
    header_dirty_ = true;
  }
  // The element count (of any tree: a sorted set's two agree).
  uint64_t size() const { return trees_[0].size(); }

  PageTree& tree(size_t which = 0) { return trees_[which]; }

  // Gives the tree `entries` (in their order) on new pages. REQUIRES: the
  // tree is empty (a new collection: its old pages would be left behind).
  void Rebuild(size_t which, std::vector<TreeEntry> entries);

  // Writes the changed pages and, when anything changed, the header into the
  // view (so the header's version changes with every change of the
  // collection: WATCH relies on it); an empty collection deletes its key
  // instead (Redis removes empty collections).
  Status Save();

 private:
  class Pages;
  Collection(DataView& data, std::string_view key, ValueType type);
  // The roots a collection of the header at `generation` kept in the view
  // (~Collection), as this collection's trees; false (nothing taken) when
  // not all are kept.
  bool TakeKeptRoots(uint64_t generation);

  DataView* data_;
  std::string key_;
  ValueType type_;
  bool exists_ = false;
  bool header_dirty_ = false;
  uint64_t expire_at_ms_ = 0;
  // The generation of the header the roots were decoded from or saved into
  // (DataView::generation); 0 when the view holds no such header.
  uint64_t header_generation_ = 0;
  std::unique_ptr<Pages> store_;  // the trees hold a pointer to it
  std::vector<PageTree> trees_;
};

// Redis's choice of random elements (HRANDFIELD, SRANDMEMBER, ZRANDMEMBER):
// count >= 0: min(count, size) distinct ranks (all of them, in order, when
// count >= size); count < 0: -count ranks, repeats allowed. Uses
// data.Random().
std::vector<uint64_t> RandomRanks(DataView& data, uint64_t size, int64_t count);

// Whether stored bytes are a paged collection's header whose (first or
// second) root is an interior node — a collection with pages — and whether a
// page's bytes are an interior node. For PageCache; false for anything else.
bool HasInteriorRoot(std::string_view stored);
bool IsInteriorPage(std::string_view page);

// The id and next page id of a paged collection's header, for tools that
// walk internal keys (the sweeper). Corruption when not a paged header.
struct CollectionIds {
  uint64_t id = 0;
  uint64_t next_page = 0;
};
Result<CollectionIds> ReadCollectionIds(std::string_view stored);

}  // namespace rampart::proxy
