// PageTree against std::map / std::vector models under random operations,
// each run the way the proxy runs a command: the root decoded from its bytes,
// pages loaded on demand from a store that answers kUnavailable for pages not
// read yet (the command is then run again with them), dirty pages flushed.
// After every operation the whole tree is checked: heights, counts,
// separators, node sizes, and that the store holds exactly the reachable
// pages (nothing leaked, nothing dangling).
#include "proxy/page_tree.h"

#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <random>
#include <set>

namespace rampart::proxy {
namespace {

class MemoryStore : public PageStore {
 public:
  Result<std::string_view> Load(uint64_t page) override {
    if (!readable_.contains(page)) {
      wanted_.insert(page);
      return Unavailable("not read yet");
    }
    auto it = pages_.find(page);
    if (it == pages_.end()) return Corruption("page ", page, " missing");
    return std::string_view(it->second);
  }
  void Store(uint64_t page, std::string bytes) override { staged_[page] = std::move(bytes); }
  void Drop(uint64_t page) override { staged_[page] = std::nullopt; }
  uint64_t NewPage() override { return next_++; }

  // Starts a command: nothing staged, `all` makes every page readable.
  void Begin(bool all) {
    staged_.clear();
    if (all) {
      for (auto& [page, bytes] : pages_) readable_.insert(page);
    }
  }
  void Commit() {
    for (auto& [page, bytes] : staged_) {
      if (bytes.has_value()) {
        pages_[page] = std::move(*bytes);
        readable_.insert(page);
      } else {
        pages_.erase(page);
      }
    }
  }
  // Reads what the last attempt wanted; false when it wanted nothing.
  bool ReadWanted() {
    if (wanted_.empty()) return false;
    for (uint64_t p : wanted_) readable_.insert(p);
    wanted_.clear();
    return true;
  }
  void Forget() { readable_.clear(); }
  const std::map<uint64_t, std::string>& pages() const { return pages_; }

 private:
  std::map<uint64_t, std::string> pages_;
  std::map<uint64_t, std::optional<std::string>> staged_;
  std::set<uint64_t> readable_, wanted_;
  uint64_t next_ = 1;
};

// A tree stored as a root encoding plus a MemoryStore, and a way to run
// commands on it.
class StoredTree {
 public:
  // Runs fn(tree) until no page is missing; commits its changes when
  // `write`. Returns the number of attempts.
  template <typename Fn>
  int Run(Fn fn, bool write = true) {
    for (int attempt = 1; attempt <= 16; ++attempt) {
      store_.Begin(false);
      std::string_view in = root_;
      auto root = DecodeNode(&in);
      EXPECT_TRUE(root.ok()) << root.status().ToString();
      PageTree tree(&store_, std::move(*root));
      const Status s = fn(tree);
      if (s.code() == StatusCode::kUnavailable) {
        EXPECT_TRUE(store_.ReadWanted()) << s.ToString();
        continue;
      }
      EXPECT_TRUE(s.ok()) << s.ToString();
      if (write) {
        EXPECT_TRUE(tree.Flush().ok());
        store_.Commit();
        root_.clear();
        EncodeNode(tree.root(), &root_);
      }
      return attempt;
    }
    ADD_FAILURE() << "no progress after 16 attempts";
    return 16;
  }

  // Checks the whole tree; returns its entries in order.
  std::vector<TreeEntry> Check(bool keyed) {
    std::string_view in = root_;
    auto root = DecodeNode(&in);
    EXPECT_TRUE(root.ok() && in.empty());
    std::set<uint64_t> reached;
    std::vector<TreeEntry> out;
    CheckNode(*root, true, keyed, &reached, &out);
    std::set<uint64_t> stored;
    for (auto& [page, bytes] : store_.pages()) stored.insert(page);
    EXPECT_EQ(reached, stored) << "pages stored but not reachable, or reachable but not stored";
    for (size_t i = 1; keyed && i < out.size(); ++i) {
      EXPECT_LT(out[i - 1].key, out[i].key);
    }
    return out;
  }

  MemoryStore& store() { return store_; }
  size_t root_bytes() const { return root_.size(); }

 private:
  void CheckNode(const TreeNode& node, bool is_root, bool keyed, std::set<uint64_t>* reached,
                 std::vector<TreeEntry>* out) {
    const size_t items = node.leaf() ? node.entries.size() : node.children.size();
    if (items >= 2) {
      EXPECT_LE(node.EncodedBytes(), kMaxNodeBytes) << "a node that should have split";
    }
    if (!is_root) {
      EXPECT_GE(items, 1u);
    }
    if (node.leaf()) {
      for (const TreeEntryRef& e : node.entries) out->push_back({std::string(e.key), std::string(e.value)});
      return;
    }
    EXPECT_GE(node.children.size(), is_root ? 2u : 1u) << "a root with one child should collapse";
    for (size_t i = 0; i < node.children.size(); ++i) {
      const TreeChild& c = node.children[i];
      EXPECT_TRUE(reached->insert(c.page).second) << "page " << c.page << " reached twice";
      auto it = store_.pages().find(c.page);
      if (it == store_.pages().end()) {
        ADD_FAILURE() << "page " << c.page << " referenced but not stored";
        continue;
      }
      std::string_view in = it->second;
      auto child = DecodeNode(&in);
      ASSERT_TRUE(child.ok() && in.empty());
      EXPECT_EQ(child->height + 1, node.height);
      EXPECT_EQ(child->Count(), c.count);
      const size_t first = out->size();
      CheckNode(*child, false, keyed, reached, out);
      if (keyed && i > 0 && first > 0 && first < out->size()) {
        EXPECT_GE((*out)[first].key, c.separator);
        EXPECT_LT((*out)[first - 1].key, c.separator);
      }
    }
  }

  MemoryStore store_;
  std::string root_ = std::string("\x00\x00", 2);  // an empty leaf
};

std::string RandomKey(std::mt19937_64& rng, int keys) {
  return "key" + std::to_string(rng() % keys);
}
std::string RandomValue(std::mt19937_64& rng) {
  // Mostly small, sometimes larger than a node.
  const size_t n = rng() % 50 == 0 ? 3000 : rng() % 120;
  return std::string(n, static_cast<char>('a' + rng() % 26));
}

TEST(PageTree, KeyedOperationsMatchAMap) {
  std::mt19937_64 rng(7);
  StoredTree st;
  std::map<std::string, std::string> model;
  for (int op = 0; op < 6000; ++op) {
    // Grow for the first half, shrink in the second: splits, then merges.
    const int roll = static_cast<int>(rng() % 100);
    const bool grow = op < 3000 ? roll < 75 : roll < 25;
    const std::string key = RandomKey(rng, 4000);
    if (grow) {
      const std::string value = RandomValue(rng);
      const bool fresh = !model.contains(key);
      model[key] = value;
      st.Run([&](PageTree& t) -> Status {
        RAMPART_ASSIGN_OR_RETURN(bool added, t.Put(key, value));
        EXPECT_EQ(added, fresh);
        return Status::Ok();
      });
    } else {
      const bool present = model.erase(key) > 0;
      st.Run([&](PageTree& t) -> Status {
        RAMPART_ASSIGN_OR_RETURN(bool erased, t.Erase(key));
        EXPECT_EQ(erased, present);
        return Status::Ok();
      });
    }
    if (op % 500 == 0 || op == 5999) {
      const auto entries = st.Check(true);
      ASSERT_EQ(entries.size(), model.size());
      size_t i = 0;
      for (auto& [k, v] : model) {
        EXPECT_EQ(entries[i].key, k);
        EXPECT_EQ(entries[i].value, v);
        ++i;
      }
    }
  }
}

// A node's keys and values view bytes the node owns; a tree that lives
// through many changes (a script's or a MULTI block's commands share their
// collection's decoded nodes) compacts a node's bytes once what its entries
// no longer view is most of them: memory stays bounded, and every view stays
// right through the compactions, splits and merges (ASan checks the reads).
TEST(PageTree, ALongLivedTreeKeepsItsBytesBoundedAndItsViewsRight) {
  std::mt19937_64 rng(23);
  MemoryStore store;
  store.Begin(/*all=*/true);
  PageTree tree(&store, TreeNode{});
  // One key overwritten 10,000 times with 1000 bytes: 10 MB without compaction.
  const std::string big(1000, 'b');
  for (int i = 0; i < 10000; ++i) ASSERT_TRUE(tree.Put("hot", big).ok());
  ASSERT_TRUE(tree.root().leaf());
  EXPECT_LE(tree.root().bytes->size, 4 * kMaxNodeBytes + 2 * tree.root().EncodedBytes() + big.size());
  // A tree built whole: each node owns its own entries, not the collection
  // the root held before it was cut into pages.
  {
    std::vector<TreeEntry> entries;
    size_t data = 0;
    for (int i = 0; i < 5000; ++i) {
      entries.push_back({StrCat("built", 100000 + i), std::string(60, 'v')});
      data += entries.back().key.size() + entries.back().value.size();
    }
    PageTree built = PageTree::Build(&store, std::move(entries));
    const PageTree::Held held = built.held();
    EXPECT_LE(held.bytes, data * 3 / 2 + held.nodes * 64) << held.nodes << " nodes";
  }
  // Random changes on many pages, checked against a map as they go.
  std::map<std::string, std::string> model{{"hot", big}};
  for (int op = 0; op < 20000; ++op) {
    const std::string key = RandomKey(rng, 2000);
    const int roll = static_cast<int>(rng() % 100);
    if (roll < (op < 10000 ? 70 : 30)) {
      std::string value = RandomValue(rng);
      ASSERT_TRUE(tree.Put(key, value).ok());
      model[key] = std::move(value);
    } else {
      ASSERT_TRUE(tree.Erase(key).ok());
      model.erase(key);
    }
    // A node holds at most max(8 KiB, twice its encoding of about 3 KiB at most
    // here) after a change that passed through it, and then the change's own
    // key and value (a value of 3000 bytes at most).
    const PageTree::Held held = tree.held();
    ASSERT_LE(held.bytes, held.nodes * 12 * 1024) << "op " << op << ", " << held.nodes << " nodes";
    if (op % 500 == 0 || op == 19999) {
      ASSERT_EQ(tree.size(), model.size());
      auto it = model.begin();
      ASSERT_TRUE(tree.ForEach(0, false, [&](uint64_t, const TreeEntryRef& e) {
        EXPECT_EQ(e.key, it->first);
        EXPECT_EQ(e.value, it->second);
        ++it;
        return true;
      }).ok());
    }
  }
}

TEST(PageTree, LookupsRanksAndIterationOnManyPages) {
  std::mt19937_64 rng(11);
  StoredTree st;
  std::map<std::string, std::string> model;
  for (int i = 0; i < 3000; ++i) model["m" + std::to_string(rng() % 100000)] = RandomValue(rng);
  std::vector<TreeEntry> sorted;
  for (auto& [k, v] : model) sorted.push_back({k, v});
  st.Run([&](PageTree& t) -> Status {
    t = PageTree::Build(&st.store(), sorted);
    return Status::Ok();
  });
  st.Check(true);
  std::vector<std::string> keys;
  for (auto& [k, v] : model) keys.push_back(k);
  for (int probe = 0; probe < 300; ++probe) {
    const std::string key = "m" + std::to_string(rng() % 100000);
    const uint64_t want_rank = static_cast<uint64_t>(
        std::lower_bound(keys.begin(), keys.end(), key) - keys.begin());
    st.store().Forget();  // every probe reads its pages afresh
    const int attempts = st.Run([&](PageTree& t) -> Status {
      RAMPART_ASSIGN_OR_RETURN(auto got, t.Get(key));
      EXPECT_EQ(got.has_value(), model.contains(key));
      if (got.has_value()) {
        EXPECT_EQ(*got, model[key]);
      }
      RAMPART_ASSIGN_OR_RETURN(uint64_t rank, t.LowerRank(key));
      EXPECT_EQ(rank, want_rank);
      return Status::Ok();
    }, /*write=*/false);
    EXPECT_LE(attempts, 4) << "one read round per level";
    const uint64_t from = rng() % keys.size();
    const bool reverse = rng() % 2 == 0;
    st.store().Forget();
    const int range_attempts = st.Run([&](PageTree& t) -> Status {
      const uint64_t lo = reverse ? (from >= 149 ? from - 149 : 0) : from;
      RAMPART_RETURN_IF_ERROR(t.Prefetch(lo, std::min<uint64_t>(lo + 150, keys.size())));
      RAMPART_ASSIGN_OR_RETURN(TreeEntry at, t.At(from));
      EXPECT_EQ(at.key, keys[from]);
      std::vector<std::string> seen;
      RAMPART_RETURN_IF_ERROR(t.ForEach(from, reverse, [&](uint64_t rank, const TreeEntryRef& e) {
        EXPECT_EQ(e.key, keys[rank]);
        seen.emplace_back(e.key);
        return seen.size() < 150;
      }));
      const size_t want = std::min<size_t>(150, reverse ? from + 1 : keys.size() - from);
      EXPECT_EQ(seen.size(), want);
      return Status::Ok();
    }, /*write=*/false);
    EXPECT_LE(range_attempts, 3) << "a prefetched range costs one read round per level";
  }
}

TEST(PageTree, RankOperationsMatchAVector) {
  std::mt19937_64 rng(5);
  StoredTree st;
  std::vector<std::string> model;
  for (int op = 0; op < 5000; ++op) {
    const int roll = static_cast<int>(rng() % 100);
    if (model.empty() || roll < 55) {
      const uint64_t at = rng() % (model.size() + 1);
      const std::string v = RandomValue(rng);
      model.insert(model.begin() + static_cast<ptrdiff_t>(at), v);
      st.Run([&](PageTree& t) { return t.InsertAt(at, "", v); });
    } else if (roll < 75) {
      const uint64_t at = rng() % model.size();
      model.erase(model.begin() + static_cast<ptrdiff_t>(at));
      st.Run([&](PageTree& t) { return t.EraseRange(at, 1); });
    } else if (roll < 90) {
      const uint64_t at = rng() % model.size();
      model[at] = RandomValue(rng);
      st.Run([&](PageTree& t) { return t.SetValueAt(at, model[at]); });
    } else if (roll < 93) {
      const uint64_t at = rng() % model.size();
      const uint64_t n = rng() % (model.size() - at + 1);
      model.erase(model.begin() + static_cast<ptrdiff_t>(at),
                  model.begin() + static_cast<ptrdiff_t>(at + n));
      st.Run([&](PageTree& t) { return t.EraseRange(at, n); });
    }
    if (op % 250 == 0 || op == 4999) {
      const auto entries = st.Check(false);
      ASSERT_EQ(entries.size(), model.size());
      for (size_t i = 0; i < model.size(); ++i) ASSERT_EQ(entries[i].value, model[i]) << i;
    }
  }
}

TEST(PageTree, EraseRangeDropsWholePagesWithoutReadingThem) {
  StoredTree st;
  std::vector<TreeEntry> entries;
  for (int i = 0; i < 20000; ++i) entries.push_back({"", std::string(40, 'x')});
  st.Run([&](PageTree& t) -> Status {
    t = PageTree::Build(&st.store(), entries);
    return Status::Ok();
  });
  const size_t pages_before = st.store().pages().size();
  ASSERT_GT(pages_before, 300u);
  st.store().Forget();
  int reads = 0;
  st.Run([&](PageTree& t) -> Status {
    ++reads;
    return t.EraseRange(10, 19980);  // LTRIM-like: keep 10 at each end
  });
  EXPECT_LE(reads, 4) << "leaves inside the range are dropped by id";
  const auto left = st.Check(false);
  EXPECT_EQ(left.size(), 20u);
  EXPECT_LE(st.store().pages().size(), 2u);
}

TEST(PageTree, DecodeRejectsEveryTruncationAndGarbage) {
  TreeNode node;
  node.height = 1;
  node.children = {{5, 3, ""}, {9, 4, "sep"}};
  std::string bytes;
  EncodeNode(node, &bytes);
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    std::string_view in(bytes.data(), cut);
    EXPECT_FALSE(DecodeNode(&in).ok()) << "cut at " << cut;
  }
  std::string_view whole = bytes;
  auto back = DecodeNode(&whole);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(whole.empty());
  EXPECT_EQ(back->Count(), 7u);
  EXPECT_EQ(back->children[1].separator, "sep");
  std::mt19937_64 rng(3);
  for (int i = 0; i < 2000; ++i) {
    std::string junk(rng() % 40, '\0');
    for (char& c : junk) c = static_cast<char>(rng());
    std::string_view in = junk;
    (void)DecodeNode(&in);  // must not crash or over-read (asan)
  }
}

TEST(PageTree, SkipNodeEndsWhereDecodeEndsAndRejectsTruncation) {
  TreeNode leaf;
  const std::string long_key(300, 'k'), long_value(200, 'v');  // the node views them
  leaf.entries = {{"a", "1"}, {long_key, long_value}, {"z", ""}};
  TreeNode interior;
  interior.height = 2;
  interior.children = {{5, 3, ""}, {300, 400, "sep"}};
  for (const TreeNode* node : {&leaf, &interior}) {
    std::string bytes;
    EncodeNode(*node, &bytes);
    bytes += "after";
    std::string_view skipped = bytes, decoded = bytes;
    ASSERT_TRUE(SkipNode(&skipped).ok());
    ASSERT_TRUE(DecodeNode(&decoded).ok());
    EXPECT_EQ(skipped, "after");
    EXPECT_EQ(skipped.data(), decoded.data());
    for (size_t cut = 0; cut + 5 < bytes.size(); ++cut) {
      std::string_view in(bytes.data(), cut);
      EXPECT_FALSE(SkipNode(&in).ok()) << "cut at " << cut;
    }
  }
}

// EncodeNode writes into a buffer EncodedBytes sized: the two must agree at
// every varint length boundary (1, 2, 3 and 10 bytes), and append after what
// the buffer held.
TEST(PageTree, EncodingIsExactlyEncodedBytesLongAtEveryVarintBoundary) {
  std::deque<std::string> bytes_held;  // what the nodes view
  auto hold = [&](std::string s) -> std::string_view { return bytes_held.emplace_back(std::move(s)); };
  TreeNode leaf;
  for (size_t n : {0u, 1u, 127u, 128u, 16383u, 16384u}) {
    leaf.entries.push_back({hold(std::string(n % 300, 'k')), hold(std::string(n, 'v'))});
  }
  TreeNode interior;
  interior.height = 1;
  interior.children = {{0, 1, ""}, {127, 128, "s"}, {16384, UINT64_MAX, hold(std::string(128, 'x'))},
                       {UINT64_MAX, 5, "t"}};
  for (const TreeNode* node : {&leaf, &interior}) {
    std::string bytes = "before";
    EncodeNode(*node, &bytes);
    ASSERT_EQ(bytes.size(), 6 + node->EncodedBytes());
    EXPECT_EQ(bytes.substr(0, 6), "before");
    std::string_view in = std::string_view(bytes).substr(6);
    auto back = DecodeNode(&in);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_TRUE(in.empty());
    std::string again;
    EncodeNode(*back, &again);
    EXPECT_EQ(again, bytes.substr(6));
  }
}

}  // namespace
}  // namespace rampart::proxy
