// ScanTree over trees whose keys share 8-byte prefixes in long runs, with
// keys added and removed between the calls of a scan: every key present
// from the first call to the last is returned, nothing twice, and the scan
// ends. Each call runs the way a command runs: on a tree decoded from its
// root, over a store that answers kUnavailable for pages not read yet (the
// call is then run again with them).
#include "proxy/collection_scan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

namespace rampart::proxy {
namespace {

using namespace std::literals;

// Pages by id; readable only once asked for when `lazy` (as the proxy reads
// a collection's pages on demand).
class MemoryStore : public PageStore {
 public:
  explicit MemoryStore(bool lazy) : lazy_(lazy) {}
  Result<std::string_view> Load(uint64_t page) override {
    if (lazy_ && !readable_.contains(page)) {
      wanted_.insert(page);
      return Unavailable("not read yet");
    }
    auto it = pages_.find(page);
    if (it == pages_.end()) return Corruption("page ", page, " missing");
    return std::string_view(it->second);
  }
  void Store(uint64_t page, std::string bytes) override { pages_[page] = std::move(bytes); }
  void Drop(uint64_t page) override { pages_.erase(page); }
  uint64_t NewPage() override { return next_++; }

  // Makes what the last attempt asked for readable; false when it asked for nothing.
  bool ReadWanted() {
    if (wanted_.empty()) return false;
    readable_.insert(wanted_.begin(), wanted_.end());
    wanted_.clear();
    return true;
  }
  void Forget() { readable_.clear(); }

 private:
  bool lazy_;
  std::map<uint64_t, std::string> pages_;
  std::set<uint64_t> readable_, wanted_;
  uint64_t next_ = 1;
};

// A keyed tree kept as a root's encoding plus a store (as a collection's
// header holds it); changes are made and flushed with every page readable,
// scans run lazily.
class Tree {
 public:
  explicit Tree(const std::set<std::string>& keys) : store_(/*lazy=*/true) {
    std::vector<TreeEntry> entries;
    for (const std::string& k : keys) entries.push_back({k, "v:" + k});
    Commit(PageTree::Build(&store_, std::move(entries)));
  }

  void Change(const std::vector<std::string>& add, const std::vector<std::string>& remove) {
    MemoryStore* store = &store_;
    PageTree tree(store, Root());
    ReadAll(tree);
    for (const std::string& k : add) ASSERT_TRUE(tree.Put(k, "v:" + k).ok());
    for (const std::string& k : remove) ASSERT_TRUE(tree.Erase(k).ok());
    Commit(std::move(tree));
  }

  // One scan call on a fresh tree, run again while pages are missing; the
  // number of attempts in *attempts.
  Result<ScanPage> Scan(uint64_t cursor, uint64_t count, std::optional<std::string_view> match,
                        int* attempts) {
    store_.Forget();
    for (*attempts = 1;; ++*attempts) {
      PageTree tree(&store_, Root());
      auto page = ScanTree(tree, cursor, count, match);
      if (page.ok() || page.status().code() != StatusCode::kUnavailable) return page;
      if (!store_.ReadWanted()) return page;
    }
  }

  uint64_t size() const { return size_; }

 private:
  // Reads every page (Prefetch in rounds, as the lazy store wants).
  void ReadAll(PageTree& tree) {
    while (true) {
      Status s = tree.Prefetch(0, tree.size());
      if (s.ok()) return;
      ASSERT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
      ASSERT_TRUE(store_.ReadWanted());
    }
  }
  void Commit(PageTree tree) {
    ASSERT_TRUE(tree.Flush().ok());
    root_.clear();
    EncodeNode(tree.root(), &root_);
    size_ = tree.size();
  }
  TreeNode Root() const {
    std::string_view in = root_;
    auto root = DecodeNode(&in);
    EXPECT_TRUE(root.ok()) << root.status().ToString();
    return root.ok() ? std::move(*root) : TreeNode{};
  }

  MemoryStore store_;
  std::string root_;
  uint64_t size_ = 0;
};

// A key from runs that share their first 8 bytes (some runs long), keys
// shorter than 8 bytes, zero bytes (padding lookalikes), high bytes (cursors
// >= 2^63).
std::string RandomKey(std::mt19937& rng) {
  static const std::string prefixes[] = {"",         "a",        "a\0"s,     "a\0\0\0\0\0\0\0"s, "ab",
                                         "abcdefgh", "abcdefgi", "user:000", "user:001",         "\xff\xff\xff",
                                         "\x80",     "\0"s,      "\0\0\0\0\0\0\0\0"s};
  std::string k = prefixes[rng() % std::size(prefixes)];
  const int tail = static_cast<int>(rng() % 7);
  for (int i = 0; i < tail; ++i) k.push_back("\0\x01" "az\xfe\xff"[rng() % 6]);
  return k;
}

std::set<std::string> MakeKeys(std::mt19937& rng, int n) {
  std::set<std::string> keys;
  while (static_cast<int>(keys.size()) < n) keys.insert(RandomKey(rng));
  return keys;
}

TEST(CollectionScan, CursorKeyIsTheLeastKeyWithThatCursor) {
  EXPECT_EQ(CursorOf(""), 0u);
  EXPECT_EQ(CursorOf("\0\0"s), 0u);
  EXPECT_EQ(CursorOf("a"), 0x6100000000000000u);
  EXPECT_EQ(CursorOf("abcdefghXYZ"), 0x6162636465666768u);
  EXPECT_EQ(CursorOf("\xff\xff\xff\xff\xff\xff\xff\xff\xff"), ~uint64_t{0});
  EXPECT_EQ(CursorKey(0), "");
  EXPECT_EQ(CursorKey(0x6100000000000000u), "a");
  EXPECT_EQ(CursorKey(0x6100000000000001u), "a\0\0\0\0\0\0\x01"s);
  EXPECT_EQ(CursorKey(0x0000610000000000u), "\0\0a"s);
  std::mt19937 rng(3);
  const std::set<std::string> keys = MakeKeys(rng, 2000);
  for (int n = 0; n < 2000; ++n) {
    const std::string& probe = *std::next(keys.begin(), static_cast<long>(rng() % keys.size()));
    for (uint64_t cursor : {CursorOf(probe), CursorOf(probe) + 1, CursorOf(probe) - 1,
                            static_cast<uint64_t>(rng()) << 32 | rng()}) {
      for (const std::string& k : {probe, *keys.begin(), *keys.rbegin()}) {
        EXPECT_EQ(CursorOf(k) >= cursor, k >= CursorKey(cursor)) << cursor;
      }
    }
  }
}

TEST(CollectionScan, EmptyTreeAndCursorsPastTheEnd) {
  Tree tree({});
  int attempts = 0;
  auto page = tree.Scan(0, 10, std::nullopt, &attempts);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->cursor, 0u);
  EXPECT_TRUE(page->entries.empty());
  Tree small({"a", "b"});
  page = small.Scan(CursorOf("c"), 10, std::nullopt, &attempts);  // a client's own cursor
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->cursor, 0u);
  EXPECT_TRUE(page->entries.empty());
}

TEST(CollectionScan, ARunSharingEightBytesIsNeverCut) {
  std::set<std::string> keys;
  for (int i = 0; i < 300; ++i) keys.insert("samepref" + std::to_string(i));  // one cursor
  for (int i = 0; i < 5; ++i) keys.insert("z" + std::to_string(i));
  Tree tree(keys);
  int attempts = 0;
  auto page = tree.Scan(0, 1, std::nullopt, &attempts);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_EQ(page->entries.size(), 300u);
  EXPECT_EQ(page->cursor, CursorOf("samepref") + 1);
  EXPECT_EQ(page->entries.front().value, "v:" + page->entries.front().key);
  page = tree.Scan(page->cursor, 1, std::nullopt, &attempts);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->entries.size(), 1u);  // z0 .. z4 have cursors of their own
  EXPECT_EQ(page->entries[0].key, "z0");
  EXPECT_EQ(page->cursor, CursorOf("z0") + 1);
}

TEST(CollectionScan, MatchFiltersAfterCounting) {
  std::set<std::string> keys;
  for (int i = 0; i < 100; ++i) keys.insert("k" + std::to_string(i));
  Tree tree(keys);
  std::set<std::string> seen;
  uint64_t cursor = 0;
  int calls = 0, attempts = 0, empty_calls = 0;
  do {
    auto page = tree.Scan(cursor, 5, "k1*"sv, &attempts);
    ASSERT_TRUE(page.ok());
    for (const TreeEntry& e : page->entries) seen.insert(e.key);
    empty_calls += page->entries.empty();
    cursor = page->cursor;
  } while (cursor != 0 && ++calls < 1000);
  EXPECT_EQ(cursor, 0u);
  std::set<std::string> want;
  for (const std::string& k : keys) {
    if (k.starts_with("k1")) want.insert(k);
  }
  EXPECT_EQ(seen, want);
  EXPECT_GT(empty_calls, 0);  // COUNT is work: calls that matched nothing
}

// A full scan while keys come and go: what was there throughout is seen,
// nothing is seen twice, nothing is invented, cursors grow, the scan ends.
void ScanWhileChanging(uint64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::set<std::string> present = MakeKeys(rng, 3000);
  Tree tree(present);
  std::set<std::string> throughout = present, ever = present, seen;
  uint64_t cursor = 0;
  int calls = 0, max_attempts = 0;
  do {
    int attempts = 0;
    auto page = tree.Scan(cursor, count, std::nullopt, &attempts);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    max_attempts = std::max(max_attempts, attempts);
    for (const TreeEntry& e : page->entries) {
      EXPECT_TRUE(ever.contains(e.key));
      EXPECT_TRUE(seen.insert(e.key).second) << "returned twice";
      EXPECT_EQ(e.value, "v:" + e.key);
    }
    EXPECT_TRUE(page->cursor == 0 || page->cursor > cursor);
    cursor = page->cursor;
    // Between calls: 20 new keys, 20 of the present ones gone.
    std::vector<std::string> add, remove;
    for (const std::string& k : MakeKeys(rng, 20)) {
      if (!present.contains(k)) add.push_back(k);
    }
    for (int i = 0; i < 20; ++i) {
      auto it = present.lower_bound(RandomKey(rng));
      if (it == present.end()) it = present.begin();
      if (std::find(remove.begin(), remove.end(), *it) == remove.end()) remove.push_back(*it);
    }
    tree.Change(add, remove);
    for (const std::string& k : add) {
      present.insert(k);
      ever.insert(k);
    }
    for (const std::string& k : remove) {
      present.erase(k);
      throughout.erase(k);
    }
  } while (cursor != 0 && ++calls < 100000);
  EXPECT_EQ(cursor, 0u) << "the scan did not end";
  for (const std::string& k : throughout) EXPECT_TRUE(seen.contains(k)) << "missed a key";
  EXPECT_LE(max_attempts, 6) << "read rounds of one call";
}

TEST(CollectionScan, EveryKeyPresentThroughoutIsReturnedOnce) {
  for (uint64_t count : {1, 7, 100, 10000}) {
    SCOPED_TRACE(count);
    ScanWhileChanging(count, static_cast<uint32_t>(count));
  }
}

TEST(CollectionScan, ParseScanCursorIsStrtoul) {
  const std::pair<std::string, uint64_t> good[] = {
      {"0", 0}, {"", 0}, {"42", 42}, {"+7", 7}, {"-0", 0}, {"-1", ~uint64_t{0}},
      {"007", 7}, {"18446744073709551615", ~uint64_t{0}}, {"5\0junk"s, 5}, {"\0abc"s, 0},
  };
  for (const auto& [text, value] : good) {
    auto v = ParseScanCursor(text);
    ASSERT_TRUE(v.ok()) << text;
    EXPECT_EQ(*v, value) << text;
  }
  for (std::string text : {"abc", " 1", "\t1", "1 ", "1x", "0x10", "+", "-", "1.5", "18446744073709551616",
                           "99999999999999999999", "--1"}) {
    EXPECT_EQ(ParseScanCursor(text).status(), InvalidArgument("ERR invalid cursor")) << text;
  }
}

TEST(CollectionScan, ParseScanOptions) {
  using Args = std::vector<std::string_view>;
  auto parse = [](Args args) { return ParseScanOptions(args); };
  auto o = parse({});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->count, 10u);
  EXPECT_FALSE(o->match.has_value());
  o = parse({"MATCH", "a*", "count", "5", "Count", "6", "match", "b?"});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->count, 6u);
  EXPECT_EQ(o->match, "b?");
  o = parse({"MATCH", "*"});
  ASSERT_TRUE(o.ok());
  EXPECT_FALSE(o->match.has_value());
  const Status syntax = InvalidArgument("ERR syntax error");
  EXPECT_EQ(parse({"COUNT", "0"}).status(), syntax);
  EXPECT_EQ(parse({"COUNT", "-3"}).status(), syntax);
  EXPECT_EQ(parse({"COUNT"}).status(), syntax);
  EXPECT_EQ(parse({"MATCH"}).status(), syntax);
  EXPECT_EQ(parse({"FOO", "1"}).status(), syntax);
  EXPECT_EQ(parse({"TYPE", "set"}).status(), syntax);  // SCAN's option only
  EXPECT_EQ(parse({"COUNT", "x"}).status(), InvalidArgument("ERR value is not an integer or out of range"));
}

}  // namespace
}  // namespace rampart::proxy
