// PageTree: an ordered sequence of (key, value) entries kept as a B+-tree of
// pages, each page one kv key, so that a change to one entry rewrites the
// pages on one root-to-leaf path and a read of one entry or a range reads
// only the pages it crosses. The root lives inline in the collection's
// header (collection.h); the other nodes are pages loaded through a
// PageStore on demand.
//
//   RAMPART_ASSIGN_OR_RETURN(TreeNode root, DecodeNode(&header_rest));
//   PageTree tree(&store, std::move(root));
//   RAMPART_ASSIGN_OR_RETURN(bool added, tree.Put("member", score_bytes));
//   RAMPART_RETURN_IF_ERROR(tree.Flush());         // dirty pages to the store
//   EncodeNode(tree.root(), &new_header);
//
// Two ways to address entries, both over the same tree:
//   - by key (sets, hashes, sorted sets): entries in increasing byte order of
//     key, keys unique; Get / Put / Erase / LowerRank / ForEach from a key;
//   - by rank (lists, and ranks of sorted sets): the n-th entry, 0-based;
//     At / InsertAt / SetValueAt / EraseAt / ForEach from a rank. A list's
//     entries have empty keys and only rank operations are used on them.
// Every interior node keeps each child's entry count, so both kinds cost
// O(depth) pages.
//
// Missing pages: a page the store has not read yet makes the operation fail
// with the store's status (kUnavailable, see DataView); the caller reads the
// page and runs the whole command again. Nothing the failed call changed is
// saved by then (the tree's nodes are discarded with it).
//
// Stored node format: docs/collections.md — DO NOT CHANGE.
//
// Thread-safety: a tree and its store belong to one command of one worker.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace rampart::proxy {

// Nodes split when their encoding grows beyond this many bytes (a node with a
// single entry may be larger), and are merged with a neighbour when they
// shrink below a quarter of it.
inline constexpr size_t kMaxNodeBytes = 2048;

// An entry with its own bytes: what PageTree::Build takes and At returns.
struct TreeEntry {
  std::string key;
  std::string value;
};

// An entry of a leaf as a tree holds it (and ForEach shows it): views of
// the bytes its node owns (TreeNode::Own) — the node's copy of the page it
// was decoded from, or a key or value written into it since — valid while
// the node lives, moves of the node included, and until the tree changes
// (a change compacts the nodes on its path, a merge or split recopies).
// Decoding a page therefore copies it once instead of building a string
// per key and value.
struct TreeEntryRef {
  std::string_view key;
  std::string_view value;
};

struct TreeChild {
  uint64_t page = 0;    // the child's page id
  uint64_t count = 0;   // entries below the child
  // Every key below this child is >= separator, every key below the child
  // before it is < separator. The first child's separator is empty (unused).
  // Views bytes its node owns, as TreeEntryRef's.
  std::string_view separator;
};

// The bytes a node's entries and separators view (TreeNode::Own).
struct NodeBytes {
  std::deque<std::string> parts;  // a deque: its strings never move
  size_t size = 0;                // bytes in parts, and each part's own cost
};

// Move-only: a copy would view the bytes of the node it was copied from.
struct TreeNode {
  // 0: a leaf (entries); h > 0: an interior node whose children have height
  // h - 1 (every leaf of a tree is at the same depth).
  uint32_t height = 0;
  std::vector<TreeEntryRef> entries;  // leaf
  std::vector<TreeChild> children;   // interior
  bool dirty = false;                // changed since loaded
  // What entries and separators view; moves with the node.
  std::unique_ptr<NodeBytes> bytes;

  TreeNode() = default;
  TreeNode(TreeNode&&) noexcept = default;
  TreeNode& operator=(TreeNode&&) noexcept = default;
  TreeNode(const TreeNode&) = delete;
  TreeNode& operator=(const TreeNode&) = delete;

  // A copy of `s` in the node's bytes, for an entry or separator of this
  // node (`s` may view the node's own bytes).
  std::string_view Own(std::string_view s);
  // Copies every byte the node's items view into fresh bytes of its own:
  // after items moved in from another node (a split, a merge).
  void OwnAll();
  // OwnAll when the node's bytes have grown past twice what its items view
  // (values overwritten, entries erased, separators dropped) and past 8 KiB:
  // a node's memory stays within that bound (and what one change adds)
  // however often it changes. Invalidates views of the node's bytes held
  // elsewhere.
  void CompactIfWasteful();

  bool leaf() const { return height == 0; }
  uint64_t Count() const;
  // The size of EncodeNode(*this), in bytes.
  size_t EncodedBytes() const;
  // The same while it is at most `limit`; past it, some size above `limit`
  // (the count stops there: a check against a bound reads less of the node).
  size_t EncodedBytesUpTo(size_t limit) const;
};

// Appends the stored encoding of `node` to `out`.
void EncodeNode(const TreeNode& node, std::string* out);
// Decodes one node from the front of `in` and advances it past the node.
// Corruption when truncated or malformed (counts that do not add up, ...).
// The node owns a copy of its encoding, which its keys, values and
// separators view.
Result<TreeNode> DecodeNode(std::string_view* in);
// Advances `in` past one encoded node without building it (no allocation):
// for callers that only need what follows the node, or its height (the
// node's first byte). Corruption when truncated or malformed.
Status SkipNode(std::string_view* in);

// Where a tree's pages live. Implemented over a DataView by Collection.
class PageStore {
 public:
  virtual ~PageStore() = default;
  // The stored bytes of a page; kUnavailable when not read yet (the store
  // remembers to read it), Corruption when absent although referenced.
  virtual Result<std::string_view> Load(uint64_t page) = 0;
  virtual void Store(uint64_t page, std::string bytes) = 0;
  virtual void Drop(uint64_t page) = 0;
  // A page id never used before in this collection.
  virtual uint64_t NewPage() = 0;
  // A decoded copy of the page kept by an earlier tree (KeepDecoded) whose
  // stored bytes have not changed since, or nullptr (the tree then decodes
  // Load's bytes). The tree owns what it takes.
  virtual std::unique_ptr<TreeNode> TakeDecoded(uint64_t page) {
    (void)page;
    return nullptr;
  }
  // A node the tree is done with whose encoding is the page's stored bytes
  // as this tree last loaded or stored them, for a later tree of the same
  // collection. Default: dropped.
  virtual void KeepDecoded(uint64_t page, std::unique_ptr<TreeNode> node) {
    (void)page;
    (void)node;
  }
};

class PageTree {
 public:
  // REQUIRES: `store` outlives the tree.
  PageTree(PageStore* store, TreeNode root);
  // A tree of `entries`, in their order (keyed trees: increasing keys), on
  // new pages filled to three quarters. REQUIRES: `store` outlives the tree.
  static PageTree Build(PageStore* store, std::vector<TreeEntry> entries);
  PageTree(PageTree&&) noexcept;
  PageTree& operator=(PageTree&&) noexcept;
  // Gives the store its unchanged (or flushed) pages (PageStore::KeepDecoded).
  ~PageTree();

  uint64_t size() const { return root_.Count(); }
  const TreeNode& root() const { return root_; }
  // True when the root or any page changed since the last Flush().
  bool dirty() const;

  // ---- By key ----
  Result<std::optional<std::string>> Get(std::string_view key);
  // Inserts or replaces; true when the key is new.
  Result<bool> Put(std::string_view key, std::string_view value);
  // True when the key was there.
  Result<bool> Erase(std::string_view key);
  // The number of entries with key < `key` (the rank `key` has or would have).
  Result<uint64_t> LowerRank(std::string_view key);

  // ---- By rank ----
  // REQUIRES: rank < size().
  Result<TreeEntry> At(uint64_t rank);
  // REQUIRES: rank <= size(). Keyed trees must keep their order.
  Status InsertAt(uint64_t rank, std::string_view key, std::string_view value);
  // REQUIRES: rank < size().
  Status SetValueAt(uint64_t rank, std::string_view value);
  // Removes `count` entries from `rank` on. REQUIRES: rank + count <= size().
  // Pages wholly inside the range are dropped without being read (their
  // interior nodes are read).
  Status EraseRange(uint64_t rank, uint64_t count);

  // ---- Reading ahead ----
  // Loads every page holding entries of ranks [from, to), asking the store
  // for all the missing pages of a tree level at once: a range costs one
  // read round per level instead of one per page. With inner_leaves false,
  // leaves wholly inside the range are skipped (EraseRange drops them unread).
  Status Prefetch(uint64_t from, uint64_t to, bool inner_leaves = true);
  // Loads the pages on the paths to every key of `keys` the same way: a
  // command about many members (HMGET, SREM, ZADD ...) calls it first.
  Status PrefetchKeys(const std::vector<std::string_view>& keys);
  // The same for the entries at `ranks` (random members, ...).
  Status PrefetchRanks(const std::vector<uint64_t>& ranks);

  // ---- Iteration ----
  // Calls fn(rank, entry) for the entries from `rank` on (reverse: from
  // `rank` down to 0) until fn returns false or the entries end. Pages are
  // loaded as reached: Prefetch the range first when it is known.
  // The entry's views last until the tree changes.
  using Visitor = std::function<bool(uint64_t rank, const TreeEntryRef& entry)>;
  Status ForEach(uint64_t rank, bool reverse, const Visitor& fn);

  // Writes every dirty page to the store (the root stays: the caller encodes
  // it into the header).
  Status Flush();
  // The caller encoded the root into its header: the root is clean again.
  void MarkRootSaved() { root_.dirty = false; }
  // Moves the root out, leaving the tree empty (for a cache, when the tree
  // is done with).
  TreeNode ReleaseRoot() { return std::move(root_); }

  // The nodes loaded (the root included) and the bytes they own
  // (NodeBytes::size): for checks of TreeNode's bound.
  struct Held {
    size_t nodes = 0;
    size_t bytes = 0;
  };
  Held held() const;

 private:
  struct Step {
    TreeNode* node;
    size_t index;  // child index in an interior node, entry index in the leaf
  };
  using Path = std::vector<Step>;

  Result<TreeNode*> Child(const TreeNode& parent, size_t index);
  Result<Path> PathToRank(uint64_t rank);
  Result<Path> PathToKey(std::string_view key);  // to the lower bound
  static uint64_t RankOf(const Path& path);
  // After the leaf of `path` changed: counts along the path, splits and
  // merges.
  Status Rebalance(Path& path);
  Status SplitIfLarge(Path& path, size_t depth);
  Status MergeIfSmall(Path& path, size_t depth);
  void SplitRoot();
  Status CollapseRoot();
  Status EraseIn(TreeNode& node, uint64_t rank, uint64_t count);
  Status DropSubtree(const TreeChild& child, uint32_t height);
  void DropPage(uint64_t page);
  Result<bool> Advance(Path& path, bool forward);

  PageStore* store_;
  TreeNode root_;
  // Loaded pages by id; a page id maps to its node while the tree lives.
  std::map<uint64_t, std::unique_ptr<TreeNode>> pages_;
};

}  // namespace rampart::proxy
