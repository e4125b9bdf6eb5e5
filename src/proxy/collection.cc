#include "proxy/collection.h"

#include <bit>
#include <limits>
#include <set>
#include <unordered_map>

#include "proxy/internal_keys.h"

namespace rampart::proxy {
namespace {

void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

uint64_t LoadU64(std::string_view in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(in[i])) << (8 * i);
  return v;
}

size_t TreesOf(ValueType type) { return type == ValueType::kPagedZset ? 2 : 1; }

constexpr size_t kIdsBytes = 16;  // collection id, next page id

// Where a collection's decoded root `tree` is kept in its view
// (DataView::KeepDecoded): a name no page key or user key takes.
std::string RootName(std::string_view key, size_t tree) {
  std::string name("\x00\x02", 2);
  name.push_back(static_cast<char>('0' + tree));
  name.append(key);
  return name;
}

}  // namespace

std::string ScoreKey(double score, std::string_view member) {
  uint64_t bits = std::bit_cast<uint64_t>(score == 0 ? 0.0 : score);
  bits = (bits >> 63) != 0 ? ~bits : bits | (uint64_t{1} << 63);
  std::string key;
  key.reserve(8 + member.size());
  for (int shift = 56; shift >= 0; shift -= 8) key.push_back(static_cast<char>(bits >> shift));
  key.append(member);
  return key;
}

double ScoreOfKey(std::string_view key) {
  uint64_t bits = 0;
  for (size_t i = 0; i < 8; ++i) bits = bits << 8 | static_cast<uint8_t>(key[i]);
  bits = (bits >> 63) != 0 ? bits & ~(uint64_t{1} << 63) : ~bits;
  return std::bit_cast<double>(bits);
}

std::string ScoreValue(double score) {
  std::string v;
  PutU64(&v, std::bit_cast<uint64_t>(score));
  return v;
}

double ScoreOfValue(std::string_view value) {
  return value.size() == 8 ? std::bit_cast<double>(LoadU64(value))
                           : std::numeric_limits<double>::quiet_NaN();
}

// The pages of one collection, as keys of the view.
class Collection::Pages : public PageStore {
 public:
  Pages(DataView* data, std::string_view user_key, uint64_t id, uint64_t next_page)
      : data_(data), user_key_(user_key), id_(id), next_page_(next_page) {}

  Result<std::string_view> Load(uint64_t page) override {
    const std::string key = PageKey(id_, page, user_key_);
    RAMPART_ASSIGN_OR_RETURN(auto stored, data_->Raw(key));
    if (!stored.has_value()) {
      return Corruption("ERR rampart: page ", page, " of collection \"", user_key_.substr(0, 64),
                        "\" is missing");
    }
    generations_[page] = data_->generation(key);
    return *stored;
  }
  void Store(uint64_t page, std::string bytes) override {
    const std::string key = PageKey(id_, page, user_key_);
    data_->Put(key, std::move(bytes));
    generations_[page] = data_->generation(key);
  }
  void Drop(uint64_t page) override {
    data_->Delete(PageKey(id_, page, user_key_));
    generations_.erase(page);
  }
  std::unique_ptr<TreeNode> TakeDecoded(uint64_t page) override {
    const std::string key = PageKey(id_, page, user_key_);
    const uint64_t generation = data_->generation(key);
    std::unique_ptr<TreeNode> node = data_->TakeDecoded(key, generation);
    if (node != nullptr) generations_[page] = generation;
    return node;
  }
  void KeepDecoded(uint64_t page, std::unique_ptr<TreeNode> node) override {
    auto it = generations_.find(page);
    if (it != generations_.end()) {
      data_->KeepDecoded(PageKey(id_, page, user_key_), it->second, std::move(node));
    }
  }
  uint64_t NewPage() override {
    allocated_ = true;
    return next_page_++;
  }

  uint64_t id() const { return id_; }
  uint64_t next_page() const { return next_page_; }
  bool allocated() const { return allocated_; }

 private:
  DataView* data_;
  std::string user_key_;
  uint64_t id_;
  uint64_t next_page_;
  bool allocated_ = false;
  // The generation (DataView::generation) of each page's bytes as this
  // collection last loaded, stored or took them: a node it keeps is
  // handed out again only while the bytes are still those.
  std::unordered_map<uint64_t, uint64_t> generations_;
};

Collection::Collection(DataView& data, std::string_view key, ValueType type)
    : data_(&data), key_(key), type_(type) {}
Collection::Collection(Collection&&) noexcept = default;

Collection::~Collection() {
  if (header_generation_ == 0) return;
  for (const PageTree& t : trees_) {
    if (t.root().dirty) return;  // changed since the header: not what it holds
  }
  for (size_t t = 0; t < trees_.size(); ++t) {
    data_->KeepDecoded(RootName(key_, t), header_generation_,
                       std::make_unique<TreeNode>(trees_[t].ReleaseRoot()));
  }
}

Collection Collection::Create(DataView& data, std::string_view key, ValueType type) {
  Collection c(data, key, type);
  c.header_dirty_ = true;  // replaces what the key holds
  // Ids are never 0, so a zeroed header never matches a page.
  c.store_ = std::make_unique<Pages>(&data, key, data.Random() | 1, 1);
  for (size_t t = 0; t < TreesOf(type); ++t) c.trees_.emplace_back(c.store_.get(), TreeNode{});
  return c;
}

Result<Collection> Collection::Open(DataView& data, std::string_view key, ValueType type) {
  RAMPART_ASSIGN_OR_RETURN(auto found, data.FindTyped(key, type));
  if (!found.has_value()) {
    Collection c = Create(data, key, type);
    c.header_dirty_ = false;
    return c;
  }
  Collection c(data, key, type);
  c.exists_ = true;
  c.expire_at_ms_ = found->expire_at_ms;
  auto damaged = [&](const Status& s) {
    return Corruption("ERR rampart: ", RedisTypeName(type), " \"", key.substr(0, 64), "\" is damaged: ",
                      s.message());
  };
  if (found->type == ValueType::kHash || found->type == ValueType::kZset) {
    // A whole-value collection: rewritten paged by its next change.
    c.store_ = std::make_unique<Pages>(&data, key, data.Random() | 1, 1);
    c.header_dirty_ = true;
    std::vector<TreeEntry> by_key, by_score;
    if (found->type == ValueType::kHash) {
      auto fields = DecodeHash(found->payload);
      if (!fields.ok()) return damaged(fields.status());
      for (auto& [name, value] : *fields) by_key.push_back({name, value});
    } else {
      auto zset = SortedSet::Decode(found->payload);
      if (!zset.ok()) return damaged(zset.status());
      const ScoreBound all{std::numeric_limits<double>::infinity() * -1, false};
      for (auto [member, score] :
           zset->RangeByScore(all, {std::numeric_limits<double>::infinity(), false}, 0, -1)) {
        by_score.push_back({ScoreKey(score, member), ""});
        by_key.push_back({std::string(member), ScoreValue(score)});
      }
      std::sort(by_key.begin(), by_key.end(),
                [](const TreeEntry& a, const TreeEntry& b) { return a.key < b.key; });
    }
    c.trees_.push_back(PageTree::Build(c.store_.get(), std::move(by_key)));
    if (type == ValueType::kPagedZset) c.trees_.push_back(PageTree::Build(c.store_.get(), std::move(by_score)));
    return c;
  }
  std::string_view in = found->payload;
  if (in.size() < kIdsBytes) return damaged(Corruption("header of ", in.size(), " bytes"));
  c.store_ = std::make_unique<Pages>(&data, key, LoadU64(in), LoadU64(in.substr(8)));
  in.remove_prefix(kIdsBytes);
  // Roots are kept (~Collection) only for a header that passed the checks
  // below: header_generation_ is set on success only.
  const uint64_t generation = data.generation(key);
  if (c.TakeKeptRoots(generation)) {
    c.header_generation_ = generation;
    return c;
  }
  for (size_t t = 0; t < TreesOf(type); ++t) {
    auto root = DecodeNode(&in);
    if (!root.ok()) return damaged(root.status());
    c.trees_.emplace_back(c.store_.get(), std::move(*root));
  }
  if (!in.empty()) return damaged(Corruption(in.size(), " trailing bytes"));
  if (c.trees_.size() == 2 && c.trees_[0].size() != c.trees_[1].size()) {
    return damaged(Corruption("its trees hold ", c.trees_[0].size(), " and ", c.trees_[1].size(),
                              " members"));
  }
  c.header_generation_ = generation;
  return c;
}

bool Collection::TakeKeptRoots(uint64_t generation) {
  std::vector<std::unique_ptr<TreeNode>> roots;
  for (size_t t = 0; t < TreesOf(type_); ++t) {
    roots.push_back(data_->TakeDecoded(RootName(key_, t), generation));
    if (roots.back() == nullptr) return false;
  }
  for (std::unique_ptr<TreeNode>& root : roots) trees_.emplace_back(store_.get(), std::move(*root));
  return true;
}

void Collection::Rebuild(size_t which, std::vector<TreeEntry> entries) {
  trees_[which] = PageTree::Build(store_.get(), std::move(entries));
}

Status Collection::Save() {
  // Any change rewrites the header, even when only a leaf changed: the
  // header's version is the collection's (WATCH compares it).
  bool changed = header_dirty_ || store_->allocated();
  for (PageTree& t : trees_) {
    changed = changed || t.dirty();
    RAMPART_RETURN_IF_ERROR(t.Flush());
  }
  if (size() == 0) {
    if (exists_ || header_dirty_) data_->Delete(key_);
    header_generation_ = 0;
    return Status::Ok();
  }
  if (!changed) return Status::Ok();
  std::string header = EncodeStored(type_, expire_at_ms_, "");
  PutU64(&header, store_->id());
  PutU64(&header, store_->next_page());
  for (const PageTree& t : trees_) EncodeNode(t.root(), &header);
  data_->Put(key_, std::move(header));
  header_generation_ = data_->generation(key_);
  for (PageTree& t : trees_) t.MarkRootSaved();
  return Status::Ok();
}

std::vector<uint64_t> RandomRanks(DataView& data, uint64_t size, int64_t count) {
  std::vector<uint64_t> ranks;
  if (size == 0 || count == 0) return ranks;
  if (count < 0) {
    const uint64_t n = count == std::numeric_limits<int64_t>::min() ? uint64_t{1} << 63
                                                                     : static_cast<uint64_t>(-count);
    ranks.reserve(n);
    for (uint64_t i = 0; i < n; ++i) ranks.push_back(data.Random() % size);
    return ranks;
  }
  const auto n = static_cast<uint64_t>(count);
  if (n >= size) {
    for (uint64_t r = 0; r < size; ++r) ranks.push_back(r);
    return ranks;
  }
  // Floyd's sampling: n distinct ranks in O(n) draws.
  std::set<uint64_t> chosen;
  for (uint64_t j = size - n; j < size; ++j) {
    const uint64_t t = data.Random() % (j + 1);
    if (!chosen.insert(t).second) chosen.insert(j);
  }
  ranks.assign(chosen.begin(), chosen.end());
  // Distinct but in random order, as Redis gives them.
  for (size_t i = ranks.size(); i > 1; --i) std::swap(ranks[i - 1], ranks[data.Random() % i]);
  return ranks;
}

bool IsInteriorPage(std::string_view page) {
  // The node's first byte is its height (a varint; heights are < 128).
  return !page.empty() && page[0] != 0;
}

bool HasInteriorRoot(std::string_view stored) {
  auto ids = ReadCollectionIds(stored);
  if (!ids.ok()) return false;
  std::string_view in = stored.substr(kStoredHeaderBytes + kIdsBytes);
  if (IsInteriorPage(in)) return true;
  if (stored[0] != static_cast<char>(ValueType::kPagedZset)) return false;
  // Skipped, not decoded: a leaf root may hold a whole small collection.
  return SkipNode(&in).ok() && IsInteriorPage(in);
}

Result<CollectionIds> ReadCollectionIds(std::string_view stored) {
  RAMPART_ASSIGN_OR_RETURN(StoredValue v, DecodeStored(stored));
  const ValueType t = v.type;
  if (t != ValueType::kPagedHash && t != ValueType::kPagedSet && t != ValueType::kPagedZset &&
      t != ValueType::kList) {
    return Corruption("not a paged collection");
  }
  if (v.payload.size() < kIdsBytes) return Corruption("header of ", v.payload.size(), " bytes");
  return CollectionIds{LoadU64(v.payload), LoadU64(v.payload.substr(8))};
}

}  // namespace rampart::proxy
