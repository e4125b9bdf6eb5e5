#include "proxy/page_tree.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace rampart::proxy {
namespace {

// ---- Varints (LEB128, 7 bits a byte, low bits first) ----------------------

size_t VarintBytes(uint64_t v) { return (static_cast<size_t>(std::bit_width(v | 1)) + 6) / 7; }

// Writes at `p`, which has room (EncodedBytes sized the buffer); returns the
// end. No capacity checks: EncodeNode is most of what a write to a paged
// collection costs (a group of 30 LPUSHes encodes a 2 KiB page 30 times).
char* PutVarint(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

char* PutString(char* p, std::string_view s) {
  p = PutVarint(p, s.size());
  if (!s.empty()) std::memcpy(p, s.data(), s.size());
  return p + s.size();
}

Status Malformed(std::string_view what) { return Corruption("collection page: ", what); }

Result<uint64_t> GetVarint(std::string_view* in) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (in->empty()) return Malformed("truncated number");
    const auto byte = static_cast<uint8_t>(in->front());
    in->remove_prefix(1);
    v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return v;
  }
  return Malformed("number longer than 64 bits");
}

// A length-prefixed string, viewing `in` (the node views it too: decoding
// was most of what a command on a page cost while it built a string each).
Result<std::string_view> GetString(std::string_view* in) {
  RAMPART_ASSIGN_OR_RETURN(uint64_t len, GetVarint(in));
  if (len > in->size()) return Malformed("truncated string");
  const std::string_view s = in->substr(0, len);
  in->remove_prefix(len);
  return s;
}

Status SkipString(std::string_view* in) {
  RAMPART_ASSIGN_OR_RETURN(uint64_t len, GetVarint(in));
  if (len > in->size()) return Malformed("truncated string");
  in->remove_prefix(len);
  return Status::Ok();
}

size_t StringBytes(std::string_view s) { return VarintBytes(s.size()) + s.size(); }
size_t EntryBytes(const TreeEntryRef& e) { return StringBytes(e.key) + StringBytes(e.value); }
size_t ChildBytes(const TreeChild& c) {
  return VarintBytes(c.page) + VarintBytes(c.count) + StringBytes(c.separator);
}

size_t ItemBytes(const TreeNode& node, size_t i) {
  return node.leaf() ? EntryBytes(node.entries[i]) : ChildBytes(node.children[i]);
}
size_t ItemCount(const TreeNode& node) {
  return node.leaf() ? node.entries.size() : node.children.size();
}

// The shortest prefix of `right` that is greater than `left` (a view of
// `right`). REQUIRES: left < right.
std::string_view Separator(std::string_view left, std::string_view right) {
  for (size_t n = 1; n < right.size(); ++n) {
    if (right.substr(0, n) > left) return right.substr(0, n);
  }
  return right;
}

// Calls fn(view) for every view of `node`'s items.
template <typename Fn>
void ForEachView(TreeNode& node, Fn fn) {
  for (TreeEntryRef& e : node.entries) {
    fn(e.key);
    fn(e.value);
  }
  for (TreeChild& c : node.children) fn(c.separator);
}

// What a part costs beyond its bytes (its std::string), counted in
// NodeBytes::size so that many tiny writes count as what they hold.
constexpr size_t kPartOverhead = sizeof(std::string);

// Inserts (key, value), copied into the leaf's bytes, as its entry `at`.
void InsertOwned(TreeNode& leaf, size_t at, std::string_view key, std::string_view value) {
  const std::string_view k = leaf.Own(key);
  const std::string_view v = leaf.Own(value);
  leaf.entries.insert(leaf.entries.begin() + static_cast<ptrdiff_t>(at), TreeEntryRef{k, v});
}

}  // namespace

std::string_view TreeNode::Own(std::string_view s) {
  if (s.empty()) return {};
  if (bytes == nullptr) bytes = std::make_unique<NodeBytes>();
  bytes->size += s.size() + kPartOverhead;
  return bytes->parts.emplace_back(s);
}

void TreeNode::OwnAll() {
  size_t total = 0;
  ForEachView(*this, [&](std::string_view v) { total += v.size(); });
  auto fresh = std::make_unique<NodeBytes>();
  std::string& all = fresh->parts.emplace_back();
  all.reserve(total);  // the appends below never move it
  ForEachView(*this, [&](std::string_view& v) {
    const size_t at = all.size();
    all.append(v);
    v = std::string_view(all).substr(at, v.size());
  });
  fresh->size = total + kPartOverhead;
  bytes = std::move(fresh);
}

void TreeNode::CompactIfWasteful() {
  // EncodedBytes (a pass over the items) only once the bytes are large.
  if (bytes != nullptr && bytes->size > 4 * kMaxNodeBytes && bytes->size > 2 * EncodedBytes()) OwnAll();
}

uint64_t TreeNode::Count() const {
  if (leaf()) return entries.size();
  uint64_t n = 0;
  for (const TreeChild& c : children) n += c.count;
  return n;
}

size_t TreeNode::EncodedBytes() const { return EncodedBytesUpTo(SIZE_MAX); }

size_t TreeNode::EncodedBytesUpTo(size_t limit) const {
  size_t total = VarintBytes(height) + VarintBytes(ItemCount(*this));
  for (size_t i = 0; i < ItemCount(*this) && total <= limit; ++i) total += ItemBytes(*this, i);
  return total;
}

void EncodeNode(const TreeNode& node, std::string* out) {
  const size_t start = out->size();
  out->resize(start + node.EncodedBytes());
  char* p = out->data() + start;
  p = PutVarint(p, node.height);
  p = PutVarint(p, ItemCount(node));
  for (const TreeEntryRef& e : node.entries) {
    p = PutString(p, e.key);
    p = PutString(p, e.value);
  }
  for (const TreeChild& c : node.children) {
    p = PutVarint(p, c.page);
    p = PutVarint(p, c.count);
    p = PutString(p, c.separator);
  }
}

namespace {

Result<TreeNode> DecodeViews(std::string_view* in) {
  TreeNode node;
  RAMPART_ASSIGN_OR_RETURN(uint64_t height, GetVarint(in));
  RAMPART_ASSIGN_OR_RETURN(uint64_t n, GetVarint(in));
  if (height > 64) return Malformed("height beyond 64");
  // Every item takes at least 2 bytes (leaf) or 3 (interior).
  if (n > in->size() / 2) return Malformed("more items than bytes");
  node.height = static_cast<uint32_t>(height);
  if (node.leaf()) {
    node.entries.resize(n);
    for (TreeEntryRef& e : node.entries) {
      RAMPART_ASSIGN_OR_RETURN(e.key, GetString(in));
      RAMPART_ASSIGN_OR_RETURN(e.value, GetString(in));
    }
    return node;
  }
  if (n == 0) return Malformed("an interior node without children");
  node.children.resize(n);
  for (TreeChild& c : node.children) {
    RAMPART_ASSIGN_OR_RETURN(c.page, GetVarint(in));
    RAMPART_ASSIGN_OR_RETURN(c.count, GetVarint(in));
    RAMPART_ASSIGN_OR_RETURN(c.separator, GetString(in));
    if (c.count == 0) return Malformed("an empty child");
  }
  return node;
}

}  // namespace

Result<TreeNode> DecodeNode(std::string_view* in) {
  const std::string_view start = *in;
  RAMPART_ASSIGN_OR_RETURN(TreeNode node, DecodeViews(in));
  // The node's own copy of its encoding, its views moved onto it.
  node.bytes = std::make_unique<NodeBytes>();
  const std::string& copy = node.bytes->parts.emplace_back(start.substr(0, start.size() - in->size()));
  node.bytes->size = copy.size() + kPartOverhead;
  ForEachView(node, [&](std::string_view& v) {
    v = v.empty() ? std::string_view() : std::string_view(copy).substr(static_cast<size_t>(v.data() - start.data()), v.size());
  });
  return node;
}

Status SkipNode(std::string_view* in) {
  RAMPART_ASSIGN_OR_RETURN(uint64_t height, GetVarint(in));
  RAMPART_ASSIGN_OR_RETURN(uint64_t n, GetVarint(in));
  if (height > 64) return Malformed("height beyond 64");
  if (n > in->size() / 2) return Malformed("more items than bytes");
  for (uint64_t i = 0; i < n; ++i) {
    if (height == 0) {
      RAMPART_RETURN_IF_ERROR(SkipString(in));  // key
    } else {
      RAMPART_RETURN_IF_ERROR(GetVarint(in).status());  // page
      RAMPART_RETURN_IF_ERROR(GetVarint(in).status());  // count
    }
    RAMPART_RETURN_IF_ERROR(SkipString(in));  // value, or separator
  }
  return Status::Ok();
}

PageTree::PageTree(PageStore* store, TreeNode root) : store_(store), root_(std::move(root)) {}
PageTree::PageTree(PageTree&&) noexcept = default;
PageTree& PageTree::operator=(PageTree&&) noexcept = default;
PageTree::~PageTree() {
  for (auto& [page, node] : pages_) {
    if (!node->dirty) store_->KeepDecoded(page, std::move(node));
  }
}

PageTree PageTree::Build(PageStore* store, std::vector<TreeEntry> entries) {
  PageTree tree(store, TreeNode{});
  TreeNode& root = tree.root_;
  root.dirty = true;
  root.entries.reserve(entries.size());
  for (const TreeEntry& e : entries) root.entries.push_back({root.Own(e.key), root.Own(e.value)});
  while (root.EncodedBytesUpTo(kMaxNodeBytes) > kMaxNodeBytes && ItemCount(root) >= 2) {
    tree.SplitRoot();
  }
  return tree;
}

Result<TreeNode*> PageTree::Child(const TreeNode& parent, size_t index) {
  const TreeChild& child = parent.children[index];
  if (auto it = pages_.find(child.page); it != pages_.end()) return it->second.get();
  std::unique_ptr<TreeNode> node = store_->TakeDecoded(child.page);
  if (node == nullptr) {
    RAMPART_ASSIGN_OR_RETURN(std::string_view bytes, store_->Load(child.page));
    auto decoded = DecodeNode(&bytes);
    if (!decoded.ok()) return decoded.status().WithContext(StrCat("page ", child.page));
    if (!bytes.empty()) return Malformed(StrCat("page ", child.page, " has trailing bytes"));
    node = std::make_unique<TreeNode>(std::move(*decoded));
  }
  if (node->height + 1 != parent.height || node->Count() != child.count) {
    return Malformed(StrCat("page ", child.page, " does not match its parent (height ",
                            node->height, ", ", node->Count(), " entries; expected ",
                            parent.height - 1, ", ", child.count, ")"));
  }
  auto [it, fresh] = pages_.emplace(child.page, std::move(node));
  return it->second.get();
}

Result<PageTree::Path> PageTree::PathToRank(uint64_t rank) {
  Path path;
  TreeNode* node = &root_;
  while (!node->leaf()) {
    size_t i = 0;
    while (i + 1 < node->children.size() && rank >= node->children[i].count) {
      rank -= node->children[i].count;
      ++i;
    }
    path.push_back({node, i});
    RAMPART_ASSIGN_OR_RETURN(node, Child(*node, i));
  }
  path.push_back({node, static_cast<size_t>(std::min<uint64_t>(rank, node->entries.size()))});
  return path;
}

Result<PageTree::Path> PageTree::PathToKey(std::string_view key) {
  Path path;
  TreeNode* node = &root_;
  while (!node->leaf()) {
    // The last child whose separator is <= key (the first child's is unused).
    auto it = std::upper_bound(node->children.begin() + 1, node->children.end(), key,
                               [](std::string_view k, const TreeChild& c) { return k < c.separator; });
    const size_t i = static_cast<size_t>(it - node->children.begin()) - 1;
    path.push_back({node, i});
    RAMPART_ASSIGN_OR_RETURN(node, Child(*node, i));
  }
  auto it = std::lower_bound(node->entries.begin(), node->entries.end(), key,
                             [](const TreeEntryRef& e, std::string_view k) { return e.key < k; });
  path.push_back({node, static_cast<size_t>(it - node->entries.begin())});
  return path;
}

uint64_t PageTree::RankOf(const Path& path) {
  uint64_t rank = path.back().index;
  for (size_t d = 0; d + 1 < path.size(); ++d) {
    for (size_t i = 0; i < path[d].index; ++i) rank += path[d].node->children[i].count;
  }
  return rank;
}

Result<std::optional<std::string>> PageTree::Get(std::string_view key) {
  RAMPART_ASSIGN_OR_RETURN(Path path, PathToKey(key));
  const Step& leaf = path.back();
  if (leaf.index < leaf.node->entries.size() && leaf.node->entries[leaf.index].key == key) {
    return std::optional<std::string>(leaf.node->entries[leaf.index].value);
  }
  return std::optional<std::string>();
}

Result<bool> PageTree::Put(std::string_view key, std::string_view value) {
  RAMPART_ASSIGN_OR_RETURN(Path path, PathToKey(key));
  Step& leaf = path.back();
  auto& entries = leaf.node->entries;
  const bool fresh = leaf.index == entries.size() || entries[leaf.index].key != key;
  if (fresh) {
    InsertOwned(*leaf.node, leaf.index, key, value);
  } else {
    entries[leaf.index].value = leaf.node->Own(value);
  }
  RAMPART_RETURN_IF_ERROR(Rebalance(path));
  return fresh;
}

Result<bool> PageTree::Erase(std::string_view key) {
  RAMPART_ASSIGN_OR_RETURN(Path path, PathToKey(key));
  Step& leaf = path.back();
  auto& entries = leaf.node->entries;
  if (leaf.index == entries.size() || entries[leaf.index].key != key) return false;
  entries.erase(entries.begin() + static_cast<ptrdiff_t>(leaf.index));
  RAMPART_RETURN_IF_ERROR(Rebalance(path));
  return true;
}

Result<uint64_t> PageTree::LowerRank(std::string_view key) {
  RAMPART_ASSIGN_OR_RETURN(Path path, PathToKey(key));
  return RankOf(path);
}

Result<TreeEntry> PageTree::At(uint64_t rank) {
  RAMPART_ASSIGN_OR_RETURN(Path path, PathToRank(rank));
  const Step& leaf = path.back();
  if (leaf.index >= leaf.node->entries.size()) return InvalidArgument("ERR rampart: ", "rank ", rank, " of ", size());
  const TreeEntryRef& e = leaf.node->entries[leaf.index];
  return TreeEntry{std::string(e.key), std::string(e.value)};
}

Status PageTree::InsertAt(uint64_t rank, std::string_view key, std::string_view value) {
  RAMPART_ASSIGN_OR_RETURN(Path path, PathToRank(rank));
  InsertOwned(*path.back().node, path.back().index, key, value);
  return Rebalance(path);
}

Status PageTree::SetValueAt(uint64_t rank, std::string_view value) {
  RAMPART_ASSIGN_OR_RETURN(Path path, PathToRank(rank));
  const Step& leaf = path.back();
  if (leaf.index >= leaf.node->entries.size()) return InvalidArgument("ERR rampart: ", "rank ", rank, " of ", size());
  leaf.node->entries[leaf.index].value = leaf.node->Own(value);
  return Rebalance(path);
}

Status PageTree::EraseRange(uint64_t rank, uint64_t count) {
  if (count == 0) return Status::Ok();
  if (rank + count > size()) return InvalidArgument("ERR rampart: ", "erase of ", count, " from ", rank, " of ", size());
  RAMPART_RETURN_IF_ERROR(Prefetch(rank, rank + count, /*inner_leaves=*/false));
  RAMPART_RETURN_IF_ERROR(EraseIn(root_, rank, count));
  // The nodes at the edges of the range may be small now.
  for (uint64_t edge : {rank, rank - 1}) {
    if (edge >= size()) continue;  // also rank - 1 when rank == 0
    RAMPART_ASSIGN_OR_RETURN(Path path, PathToRank(edge));
    RAMPART_RETURN_IF_ERROR(Rebalance(path));
  }
  return CollapseRoot();
}

Status PageTree::Prefetch(uint64_t from, uint64_t to, bool inner_leaves) {
  struct Placed {
    TreeNode* node;
    uint64_t base;  // rank of its first entry
  };
  std::vector<Placed> level{{&root_, 0}};
  while (!level.empty() && !level.front().node->leaf()) {
    std::vector<Placed> next;
    Status missing = Status::Ok();
    for (const Placed& p : level) {
      uint64_t base = p.base;
      for (size_t i = 0; i < p.node->children.size(); base += p.node->children[i++].count) {
        const uint64_t end = base + p.node->children[i].count;
        if (end <= from || base >= to) continue;
        if (p.node->height == 1 && !inner_leaves && base >= from && end <= to) continue;
        auto child = Child(*p.node, i);
        if (child.ok()) {
          next.push_back({*child, base});
        } else if (child.status().code() == StatusCode::kUnavailable) {
          missing = child.status();  // and ask for the others of the level too
        } else {
          return child.status();
        }
      }
    }
    RAMPART_RETURN_IF_ERROR(missing);
    level = std::move(next);
  }
  return Status::Ok();
}

Status PageTree::PrefetchKeys(const std::vector<std::string_view>& keys) {
  Status missing = Status::Ok();
  for (std::string_view key : keys) {
    auto path = PathToKey(key);
    if (path.ok()) continue;
    if (path.status().code() != StatusCode::kUnavailable) return path.status();
    missing = path.status();  // and go on: the store collects every missing page
  }
  return missing;
}

Status PageTree::PrefetchRanks(const std::vector<uint64_t>& ranks) {
  Status missing = Status::Ok();
  for (uint64_t rank : ranks) {
    Status s = Prefetch(rank, rank + 1);
    if (s.code() == StatusCode::kUnavailable) {
      missing = s;
    } else {
      RAMPART_RETURN_IF_ERROR(s);
    }
  }
  return missing;
}

Status PageTree::EraseIn(TreeNode& node, uint64_t rank, uint64_t count) {
  node.dirty = true;
  if (node.leaf()) {
    const auto first = node.entries.begin() + static_cast<ptrdiff_t>(rank);
    node.entries.erase(first, first + static_cast<ptrdiff_t>(count));
    return Status::Ok();
  }
  std::vector<TreeChild> kept;
  for (size_t i = 0; i < node.children.size(); ++i) {
    TreeChild& c = node.children[i];
    if (count == 0 || rank >= c.count) {
      if (count != 0) rank -= c.count;
      kept.push_back(std::move(c));
      continue;
    }
    const uint64_t take = std::min(count, c.count - rank);
    if (rank == 0 && take == c.count) {
      RAMPART_RETURN_IF_ERROR(DropSubtree(c, node.height - 1));
    } else {
      RAMPART_ASSIGN_OR_RETURN(TreeNode * child, Child(node, i));
      RAMPART_RETURN_IF_ERROR(EraseIn(*child, rank, take));
      c.count -= take;
      kept.push_back(std::move(c));
    }
    count -= take;
    rank = 0;
  }
  node.children = std::move(kept);
  if (node.children.empty()) node.height = 0;  // an emptied root becomes an empty leaf
  return Status::Ok();
}

Status PageTree::DropSubtree(const TreeChild& child, uint32_t height) {
  if (height > 0) {
    TreeNode holder;
    holder.height = height + 1;
    holder.children.push_back(child);
    RAMPART_ASSIGN_OR_RETURN(TreeNode * node, Child(holder, 0));
    for (const TreeChild& grandchild : node->children) {
      RAMPART_RETURN_IF_ERROR(DropSubtree(grandchild, height - 1));
    }
  }
  DropPage(child.page);
  return Status::Ok();
}

void PageTree::DropPage(uint64_t page) {
  store_->Drop(page);
  pages_.erase(page);
}

Status PageTree::Rebalance(Path& path) {
  // What the change left unviewed (an overwritten value, an erased entry)
  // goes once it is most of a node's bytes; nothing outside the tree views
  // them now.
  for (Step& step : path) step.node->CompactIfWasteful();
  // The leaf changed; an ancestor only when a count below it did (a new
  // value of an existing entry rewrites the leaf alone).
  path.back().node->dirty = true;
  for (size_t d = path.size() - 1; d > 0; --d) {
    TreeChild& child = path[d - 1].node->children[path[d - 1].index];
    const uint64_t count = path[d].node->Count();
    if (child.count != count) {
      child.count = count;
      path[d - 1].node->dirty = true;
    }
  }
  for (size_t d = path.size() - 1; d > 0; --d) {
    RAMPART_RETURN_IF_ERROR(SplitIfLarge(path, d));
    RAMPART_RETURN_IF_ERROR(MergeIfSmall(path, d));
  }
  while (root_.EncodedBytesUpTo(kMaxNodeBytes) > kMaxNodeBytes && ItemCount(root_) >= 2) SplitRoot();
  return CollapseRoot();
}

namespace {

struct Piece {
  std::unique_ptr<TreeNode> node;
  // Views the cut node's bytes: the parent Owns it.
  std::string_view separator;
};

// Leaves `node` its first items up to three quarters of kMaxNodeBytes (at
// least one) and moves the rest into new nodes of the same height, each as
// full, in order. REQUIRES: at least 2 items.
std::vector<Piece> CutIntoPieces(TreeNode& node) {
  const size_t items = ItemCount(node);
  std::vector<size_t> starts;  // of every piece after the first
  size_t bytes = ItemBytes(node, 0);
  for (size_t i = 1; i < items; ++i) {
    const size_t b = ItemBytes(node, i);
    if (bytes + b > kMaxNodeBytes * 3 / 4) {
      starts.push_back(i);
      bytes = 0;
    }
    bytes += b;
  }
  std::vector<Piece> pieces(starts.size());
  for (size_t k = 0; k < starts.size(); ++k) {
    const size_t from = starts[k];
    pieces[k].separator = node.leaf() ? Separator(node.entries[from - 1].key, node.entries[from].key)
                                      : node.children[from].separator;
  }
  for (size_t k = 0; k < starts.size(); ++k) {
    const auto from = static_cast<ptrdiff_t>(starts[k]);
    const auto to = static_cast<ptrdiff_t>(k + 1 < starts.size() ? starts[k + 1] : items);
    Piece& p = pieces[k];
    p.node = std::make_unique<TreeNode>();
    p.node->height = node.height;
    p.node->dirty = true;
    if (node.leaf()) {
      p.node->entries.assign(std::make_move_iterator(node.entries.begin() + from),
                             std::make_move_iterator(node.entries.begin() + to));
    } else {
      p.node->children.assign(std::make_move_iterator(node.children.begin() + from),
                              std::make_move_iterator(node.children.begin() + to));
    }
    p.node->OwnAll();  // its items viewed the cut node's bytes
  }
  if (!starts.empty()) {
    if (node.leaf()) {
      node.entries.resize(starts[0]);
    } else {
      node.children.resize(starts[0]);
    }
  }
  node.dirty = true;
  return pieces;
}

}  // namespace

Status PageTree::SplitIfLarge(Path& path, size_t depth) {
  TreeNode& node = *path[depth].node;
  if (node.EncodedBytesUpTo(kMaxNodeBytes) <= kMaxNodeBytes || ItemCount(node) < 2) {
    return Status::Ok();
  }
  std::vector<Piece> pieces = CutIntoPieces(node);
  TreeNode& parent = *path[depth - 1].node;
  const size_t index = path[depth - 1].index;
  parent.dirty = true;
  parent.children[index].count = node.Count();
  std::vector<TreeChild> added;
  for (Piece& p : pieces) {
    const uint64_t page = store_->NewPage();
    added.push_back(TreeChild{page, p.node->Count(), parent.Own(p.separator)});
    pages_.emplace(page, std::move(p.node));
  }
  node.OwnAll();  // drops what moved out (the separators viewed it until the parent owned them)
  parent.children.insert(parent.children.begin() + static_cast<ptrdiff_t>(index) + 1,
                         std::make_move_iterator(added.begin()), std::make_move_iterator(added.end()));
  return Status::Ok();
}

void PageTree::SplitRoot() {
  auto first = std::make_unique<TreeNode>(std::move(root_));
  std::vector<Piece> pieces = CutIntoPieces(*first);
  root_ = TreeNode{};
  root_.height = first->height + 1;
  root_.dirty = true;
  const uint64_t first_page = store_->NewPage();
  root_.children.push_back(TreeChild{first_page, first->Count(), ""});
  TreeNode& cut = *first;
  pages_.emplace(first_page, std::move(first));
  for (Piece& p : pieces) {
    const uint64_t page = store_->NewPage();
    root_.children.push_back(TreeChild{page, p.node->Count(), root_.Own(p.separator)});
    pages_.emplace(page, std::move(p.node));
  }
  cut.OwnAll();  // drops what moved out (a Build's root held the whole collection)
}

Status PageTree::MergeIfSmall(Path& path, size_t depth) {
  TreeNode& parent = *path[depth - 1].node;
  const size_t index = path[depth - 1].index;
  if (index >= parent.children.size()) return Status::Ok();
  TreeNode& node = *path[depth].node;
  if (node.Count() == 0) {
    parent.dirty = true;
    DropPage(parent.children[index].page);
    parent.children.erase(parent.children.begin() + static_cast<ptrdiff_t>(index));
    return Status::Ok();
  }
  if (node.EncodedBytesUpTo(kMaxNodeBytes / 4) >= kMaxNodeBytes / 4 || parent.children.size() < 2) {
    return Status::Ok();
  }
  const size_t left = index + 1 < parent.children.size() ? index : index - 1;
  RAMPART_ASSIGN_OR_RETURN(TreeNode * l, Child(parent, left));
  RAMPART_ASSIGN_OR_RETURN(TreeNode * r, Child(parent, left + 1));
  constexpr size_t kMergedMax = kMaxNodeBytes * 3 / 4;
  const size_t left_bytes = l->EncodedBytesUpTo(kMergedMax);
  if (left_bytes > kMergedMax || left_bytes + r->EncodedBytesUpTo(kMergedMax) > kMergedMax) {
    return Status::Ok();
  }
  if (l->leaf()) {
    std::move(r->entries.begin(), r->entries.end(), std::back_inserter(l->entries));
  } else {
    r->children.front().separator = parent.children[left + 1].separator;
    std::move(r->children.begin(), r->children.end(), std::back_inserter(l->children));
  }
  l->OwnAll();  // r's items viewed r's bytes (a separator the parent's), which go now
  l->dirty = parent.dirty = true;
  parent.children[left].count += parent.children[left + 1].count;
  DropPage(parent.children[left + 1].page);
  parent.children.erase(parent.children.begin() + static_cast<ptrdiff_t>(left) + 1);
  return Status::Ok();
}

Status PageTree::CollapseRoot() {
  while (!root_.leaf() && root_.children.size() <= 1) {
    if (root_.children.empty()) {
      root_ = TreeNode{};
      root_.dirty = true;
      break;
    }
    RAMPART_ASSIGN_OR_RETURN(TreeNode * only, Child(root_, 0));
    const uint64_t page = root_.children[0].page;
    TreeNode lifted = std::move(*only);
    DropPage(page);
    root_ = std::move(lifted);
    root_.dirty = true;
  }
  return Status::Ok();
}

Result<bool> PageTree::Advance(Path& path, bool forward) {
  size_t d = path.size() - 1;
  while (d-- > 0) {
    Step& step = path[d];
    if (forward ? step.index + 1 < step.node->children.size() : step.index > 0) break;
    if (d == 0) return false;
  }
  if (path.size() == 1) return false;
  if (forward) {
    ++path[d].index;
  } else {
    --path[d].index;
  }
  for (size_t e = d + 1; e < path.size(); ++e) {
    RAMPART_ASSIGN_OR_RETURN(TreeNode * node, Child(*path[e - 1].node, path[e - 1].index));
    path[e].node = node;
    path[e].index = forward ? 0 : ItemCount(*node) - 1;
  }
  return true;
}

Status PageTree::ForEach(uint64_t rank, bool reverse, const Visitor& fn) {
  if (rank >= size()) return Status::Ok();
  RAMPART_ASSIGN_OR_RETURN(Path path, PathToRank(rank));
  while (true) {
    const Step& leaf = path.back();
    const auto& entries = leaf.node->entries;
    if (reverse) {
      for (size_t i = leaf.index + 1; i-- > 0; --rank) {
        if (!fn(rank, entries[i])) return Status::Ok();
      }
    } else {
      for (size_t i = leaf.index; i < entries.size(); ++i, ++rank) {
        if (!fn(rank, entries[i])) return Status::Ok();
      }
    }
    RAMPART_ASSIGN_OR_RETURN(bool more, Advance(path, !reverse));
    if (!more) return Status::Ok();
  }
}

PageTree::Held PageTree::held() const {
  Held h{1, root_.bytes == nullptr ? 0 : root_.bytes->size};
  for (const auto& [page, node] : pages_) {
    ++h.nodes;
    if (node->bytes != nullptr) h.bytes += node->bytes->size;
  }
  return h;
}

bool PageTree::dirty() const {
  if (root_.dirty) return true;
  for (const auto& [page, node] : pages_) {
    if (node->dirty) return true;
  }
  return false;
}

Status PageTree::Flush() {
  for (auto& [page, node] : pages_) {
    if (!node->dirty) continue;
    std::string bytes;
    EncodeNode(*node, &bytes);
    store_->Store(page, std::move(bytes));
    node->dirty = false;
  }
  return Status::Ok();
}

}  // namespace rampart::proxy
