// The list commands (commands_lists.cc) applied to DataViews the way the
// worker applies them: a command runs on a view seeded with the keys it
// declares; while it asks for pages the view does not hold (missing()), it
// runs again on a fresh view seeded with those as well; then its writes go
// into the store. Small lists check Redis 7.0's replies and error texts (the
// cases of tests/test_proxy_lists.py, which were checked against
// redis-server); lists of thousands of elements — many pages, trees of
// several levels — check every command against a std::deque model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/collection.h"
#include "proxy/command_test_util.h"
#include "proxy/commands.h"
#include "proxy/data_view.h"
#include "proxy/value_codec.h"

namespace rampart::proxy {
namespace {

using namespace rampart::proxy::testing;  // command_test_util.h: replies, Store, kNow, kMaxRuns

// The shared harness (command_test_util.h), with the height of a list's tree.
class Harness : public CommandHarness {
 public:
  // The height of the list's tree (0: the root is its only node).
  uint32_t Height(std::string_view key) const { return TreeHeight(key, ValueType::kList); }
};

// ---- Small lists: replies and errors ---------------------------------------------------

TEST(ListCommands, PushOrderAndLength) {
  Harness h;
  EXPECT_EQ(h.Run({"LPUSH", "k", "a"}), Int(1));
  EXPECT_EQ(h.Run({"LPUSH", "k", "b", "c"}), Int(3));  // one by one at the head: c b a
  EXPECT_EQ(h.Run({"rpush", "k", "d", "e"}), Int(5));
  EXPECT_EQ(h.Run({"LRANGE", "k", "0", "-1"}), Bulks(std::vector<std::string>{"c", "b", "a", "d", "e"}));
  EXPECT_EQ(h.Run({"LLEN", "k"}), Int(5));
  EXPECT_EQ(h.Run({"LLEN", "missing"}), Int(0));
  EXPECT_EQ(h.Run({"RPUSH", "k", "a"}), Int(6));  // duplicates are fine
  EXPECT_EQ(h.Run({"RPUSH", "empty", ""}), Int(1));  // an empty element is an element
  EXPECT_EQ(h.Run({"LRANGE", "empty", "0", "-1"}), Bulks(std::vector<std::string>{""}));
}

TEST(ListCommands, PushxOnlyOnExistingLists) {
  Harness h;
  EXPECT_EQ(h.Run({"LPUSHX", "missing", "a"}), Int(0));
  EXPECT_EQ(h.Run({"RPUSHX", "missing", "a"}), Int(0));
  EXPECT_TRUE(h.store().empty());  // not created
  h.Run({"RPUSH", "k", "m"});
  EXPECT_EQ(h.Run({"LPUSHX", "k", "l1", "l2"}), Int(3));
  EXPECT_EQ(h.Run({"RPUSHX", "k", "r1"}), Int(4));
  EXPECT_EQ(h.Run({"LRANGE", "k", "0", "-1"}), Bulks(std::vector<std::string>{"l2", "l1", "m", "r1"}));
}

TEST(ListCommands, PopsWithoutAndWithCount) {
  Harness h;
  h.Run({"RPUSH", "k", "a", "b", "c", "d", "e", "f", "g"});
  EXPECT_EQ(h.Run({"LPOP", "k"}), Bulk("a"));
  EXPECT_EQ(h.Run({"RPOP", "k"}), Bulk("g"));
  EXPECT_EQ(h.Run({"LPOP", "k", "2"}), Bulks(std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(h.Run({"RPOP", "k", "2"}), Bulks(std::vector<std::string>{"f", "e"}));  // tail first
  EXPECT_EQ(h.Run({"LPOP", "k", "0"}), Arr(0));
  EXPECT_EQ(h.Run({"RPOP", "k", "0"}), Arr(0));
  EXPECT_EQ(h.Run({"LPOP", "k", "1"}), Bulks(std::vector<std::string>{"d"}));  // a count: an array
  EXPECT_TRUE(h.store().empty());  // the last element gone, the key is gone
  EXPECT_EQ(h.Run({"LPOP", "k"}), kNil);
  EXPECT_EQ(h.Run({"RPOP", "k", "2"}), kNilArray);  // no list with a count: nil array
  EXPECT_EQ(h.Run({"LPOP", "k", "0"}), kNilArray);
  EXPECT_EQ(h.Run({"LPOP", "k"}, 3), kNull3);
  EXPECT_EQ(h.Run({"LPOP", "k", "2"}, 3), kNull3);
  h.Run({"RPUSH", "k", "x"});
  for (const char* pop : {"LPOP", "RPOP"}) {
    EXPECT_EQ(h.Run({pop, "k", "-1"}), kNotPositive);
    EXPECT_EQ(h.Run({pop, "k", "two"}), kNotPositive);
    EXPECT_EQ(h.Run({pop, "missing", "-1"}), kNotPositive);  // the count before the key
  }
  EXPECT_EQ(h.Run({"LPOP", "k", "1", "2"}), Err("ERR wrong number of arguments for 'lpop' command"));
  EXPECT_EQ(h.Run({"RPOP", "k", "5"}), Bulks(std::vector<std::string>{"x"}));
}

// LRANGE's index rules on a vector (tests/proxy_helpers.py's rank_slice).
std::vector<std::string> RangeModel(const std::vector<std::string>& model, int64_t start, int64_t stop) {
  const auto n = static_cast<int64_t>(model.size());
  if (start < 0) start += n;
  if (stop < 0) stop += n;
  start = std::max<int64_t>(start, 0);
  if (start > stop || start >= n) return {};
  return {model.begin() + start, model.begin() + std::min(stop, n - 1) + 1};
}

TEST(ListCommands, LRangeAndLIndex) {
  Harness h;
  h.Run({"RPUSH", "k", "a", "b", "c", "d", "e"});
  const std::vector<std::string> model = {"a", "b", "c", "d", "e"};
  const std::vector<std::pair<int64_t, int64_t>> cases = {
      {0, -1}, {0, 0}, {1, 3}, {-2, -1}, {-100, 100}, {2, 1}, {5, 10}, {-1, -2}, {3, 100},
      {-3, 2}, {-6, 0}, {0, -6}, {4, 4}, {-5, -5}, {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()}};
  for (const auto& [start, stop] : cases) {
    EXPECT_EQ(h.Run({"LRANGE", "k", std::to_string(start), std::to_string(stop)}),
              Bulks(RangeModel(model, start, stop)))
        << start << " " << stop;
  }
  EXPECT_EQ(h.Run({"LRANGE", "missing", "0", "-1"}), Arr(0));
  EXPECT_EQ(h.Run({"LRANGE", "k", "a", "1"}), kNotInteger);
  EXPECT_EQ(h.Run({"LRANGE", "missing", "0", "x"}), kNotInteger);  // the indexes before the key
  const std::vector<std::pair<const char*, std::string>> indexes = {
      {"0", Bulk("a")}, {"4", Bulk("e")}, {"5", kNil}, {"-1", Bulk("e")}, {"-5", Bulk("a")},
      {"-6", kNil}, {"100", kNil}, {"-9223372036854775808", kNil}};
  for (const auto& [index, reply] : indexes) EXPECT_EQ(h.Run({"LINDEX", "k", index}), reply) << index;
  EXPECT_EQ(h.Run({"LINDEX", "missing", "0"}), kNil);
  EXPECT_EQ(h.Run({"LINDEX", "missing", "x"}), kNil);  // the key before the index
  EXPECT_EQ(h.Run({"LINDEX", "k", "x"}), kNotInteger);
}

TEST(ListCommands, LSet) {
  Harness h;
  h.Run({"RPUSH", "k", "a", "b", "c"});
  EXPECT_EQ(h.Run({"LSET", "k", "0", "A"}), kOk);
  EXPECT_EQ(h.Run({"LSET", "k", "-1", "C"}), kOk);
  EXPECT_EQ(h.Run({"LSET", "missing", "0", "x"}), Err("ERR no such key"));
  EXPECT_EQ(h.Run({"LSET", "missing", "x", "x"}), Err("ERR no such key"));  // the key first
  EXPECT_EQ(h.Run({"LSET", "k", "3", "x"}), Err("ERR index out of range"));
  EXPECT_EQ(h.Run({"LSET", "k", "-4", "x"}), Err("ERR index out of range"));
  EXPECT_EQ(h.Run({"LSET", "k", "x", "x"}), kNotInteger);
  EXPECT_EQ(h.Run({"LSET", "k", "1", "B"}), kOk);
  EXPECT_EQ(h.Run({"LRANGE", "k", "0", "-1"}), Bulks(std::vector<std::string>{"A", "B", "C"}));
  EXPECT_EQ(h.store().count("missing"), 0u);
}

TEST(ListCommands, LInsert) {
  Harness h;
  h.Run({"RPUSH", "k", "a", "b", "a"});
  EXPECT_EQ(h.Run({"LINSERT", "k", "BEFORE", "a", "x"}), Int(4));  // before the first match only
  EXPECT_EQ(h.Run({"LINSERT", "k", "AFTER", "a", "y"}), Int(5));
  EXPECT_EQ(h.Run({"LINSERT", "k", "after", "b", "z"}), Int(6));
  EXPECT_EQ(h.Run({"LRANGE", "k", "0", "-1"}), Bulks(std::vector<std::string>{"x", "a", "y", "b", "z", "a"}));
  EXPECT_EQ(h.Run({"LINSERT", "k", "BEFORE", "nope", "w"}), Int(-1));
  EXPECT_EQ(h.Run({"LINSERT", "missing", "BEFORE", "a", "w"}), Int(0));
  EXPECT_EQ(h.store().count("missing"), 0u);
  EXPECT_EQ(h.Run({"LINSERT", "k", "MIDDLE", "a", "w"}), kSyntax);
  EXPECT_EQ(h.Run({"LINSERT", "missing", "MIDDLE", "a", "w"}), kSyntax);
  EXPECT_EQ(h.Run({"LLEN", "k"}), Int(6));
}

TEST(ListCommands, LRem) {
  const std::vector<std::string> start = {"a", "X", "b", "X", "c", "X", "d", "X", "e"};
  struct Case {
    const char* count;
    const char* value;
    int64_t removed;
    std::vector<std::string> left;
  };
  const std::vector<Case> cases = {
      {"2", "X", 2, {"a", "b", "c", "X", "d", "X", "e"}},
      {"-2", "X", 2, {"a", "X", "b", "X", "c", "d", "e"}},
      {"0", "X", 4, {"a", "b", "c", "d", "e"}},
      {"1", "nope", 0, start},
      {"-1", "e", 1, {"a", "X", "b", "X", "c", "X", "d", "X"}},
      {"-9223372036854775808", "X", 4, {"a", "b", "c", "d", "e"}},
  };
  for (const Case& c : cases) {
    Harness h;
    h.Run({"RPUSH", "k", "a", "X", "b", "X", "c", "X", "d", "X", "e"});
    EXPECT_EQ(h.Run({"LREM", "k", c.count, c.value}), Int(c.removed)) << c.count << " " << c.value;
    EXPECT_EQ(h.Run({"LRANGE", "k", "0", "-1"}), Bulks(c.left)) << c.count << " " << c.value;
  }
  Harness h;
  h.Run({"RPUSH", "k", "a", "b", "a"});
  EXPECT_EQ(h.Run({"LREM", "k", "-1", "a"}), Int(1));
  EXPECT_EQ(h.Run({"LRANGE", "k", "0", "-1"}), Bulks(std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(h.Run({"LREM", "k", "0", "a"}), Int(1));
  EXPECT_EQ(h.Run({"LREM", "k", "0", "b"}), Int(1));
  EXPECT_TRUE(h.store().empty());
  EXPECT_EQ(h.Run({"LREM", "missing", "0", "a"}), Int(0));
  EXPECT_EQ(h.Run({"LREM", "missing", "x", "a"}), kNotInteger);
}

TEST(ListCommands, LTrim) {
  const std::vector<std::string> model = {"a", "b", "c", "d", "e"};
  const std::vector<std::pair<int64_t, int64_t>> cases = {{1, 3},  {0, -1}, {-2, -1}, {-100, 1},
                                                          {2, 100}, {3, 1}, {10, 20}, {0, 0}};
  for (const auto& [start, stop] : cases) {
    Harness h;
    h.Run({"RPUSH", "k", "a", "b", "c", "d", "e"});
    EXPECT_EQ(h.Run({"LTRIM", "k", std::to_string(start), std::to_string(stop)}), kOk);
    const std::vector<std::string> kept = RangeModel(model, start, stop);
    EXPECT_EQ(h.Run({"LRANGE", "k", "0", "-1"}), Bulks(kept)) << start << " " << stop;
    EXPECT_EQ(h.store().empty(), kept.empty()) << start << " " << stop;  // emptied: gone
  }
  Harness h;
  EXPECT_EQ(h.Run({"LTRIM", "missing", "0", "1"}), kOk);
  EXPECT_EQ(h.Run({"LTRIM", "missing", "x", "1"}), kNotInteger);
  EXPECT_TRUE(h.store().empty());
}

TEST(ListCommands, LPos) {
  Harness h;
  h.Run({"RPUSH", "k", "a", "b", "c", "a", "b", "c", "1", "2", "a"});
  const std::vector<std::pair<std::vector<std::string_view>, std::string>> cases = {
      {{"a"}, Int(0)},
      {{"c"}, Int(2)},
      {{"nope"}, kNil},
      {{"a", "RANK", "2"}, Int(3)},
      {{"a", "RANK", "3"}, Int(8)},
      {{"a", "RANK", "4"}, kNil},
      {{"a", "RANK", "-1"}, Int(8)},
      {{"a", "RANK", "-2"}, Int(3)},
      {{"a", "COUNT", "2"}, Ints({0, 3})},
      {{"a", "COUNT", "0"}, Ints({0, 3, 8})},
      {{"a", "COUNT", "0", "RANK", "-1"}, Ints({8, 3, 0})},
      {{"a", "RANK", "2", "COUNT", "5"}, Ints({3, 8})},
      {{"nope", "COUNT", "0"}, Arr(0)},
      {{"a", "MAXLEN", "1"}, Int(0)},
      {{"b", "MAXLEN", "1"}, kNil},
      {{"b", "COUNT", "0", "MAXLEN", "5"}, Ints({1, 4})},
      {{"a", "COUNT", "0", "MAXLEN", "2", "RANK", "-1"}, Ints({8})},
      {{"a", "COUNT", "0", "MAXLEN", "0"}, Ints({0, 3, 8})},
      {{"c", "rank", "-1", "count", "1"}, Ints({5})},
      {{"a", "RANK", "9223372036854775807"}, kNil},
      // Redis negates the rank in a long: -LONG_MIN is the first match from
      // the tail, and COUNT does not stop the search.
      {{"a", "RANK", "-9223372036854775808"}, Int(8)},
      {{"a", "RANK", "-9223372036854775808", "COUNT", "1"}, Ints({8, 3, 0})},
  };
  for (const auto& [options, reply] : cases) {
    std::vector<std::string_view> args = {"LPOS", "k"};
    args.insert(args.end(), options.begin(), options.end());
    std::string text;
    for (std::string_view o : options) text.append(o).append(" ");
    EXPECT_EQ(h.Run(args), reply) << text;
  }
  EXPECT_EQ(h.Run({"LPOS", "missing", "a"}), kNil);
  EXPECT_EQ(h.Run({"LPOS", "missing", "a", "COUNT", "0"}), Arr(0));
}

TEST(ListCommands, LPosErrors) {
  Harness h;
  h.Run({"RPUSH", "k", "a", "b"});
  const std::string rank_zero =
      "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use "
      "negative to start from the end of the list";
  const std::vector<std::pair<std::vector<std::string_view>, std::string>> cases = {
      {{"RANK", "0"}, Err(rank_zero)},
      {{"COUNT", "-1"}, Err("ERR COUNT can't be negative")},
      {{"COUNT", "x"}, Err("ERR COUNT can't be negative")},
      {{"MAXLEN", "-1"}, Err("ERR MAXLEN can't be negative")},
      {{"MAXLEN", "x"}, Err("ERR MAXLEN can't be negative")},
      {{"RANK", "x"}, kNotInteger},
      {{"COUNT"}, kSyntax},
      {{"FOO", "1"}, kSyntax},
      {{"RANK", "0", "COUNT", "-1"}, Err(rank_zero)},  // the first bad option wins
      {{"COUNT", "-1", "RANK", "0"}, Err("ERR COUNT can't be negative")},
  };
  for (const auto& [options, reply] : cases) {
    for (std::string_view key : {"k", "missing"}) {  // options before the key
      std::vector<std::string_view> args = {"LPOS", key, "a"};
      args.insert(args.end(), options.begin(), options.end());
      EXPECT_EQ(h.Run(args), reply) << options[0] << " on " << key;
    }
  }
}

TEST(ListCommands, LMoveBetweenLists) {
  Harness h;
  h.Run({"RPUSH", "src", "a", "b", "c"});
  EXPECT_EQ(h.Run({"LMOVE", "src", "dst", "LEFT", "RIGHT"}), Bulk("a"));
  EXPECT_EQ(h.Run({"LMOVE", "src", "dst", "right", "left"}), Bulk("c"));
  EXPECT_EQ(h.Run({"LMOVE", "src", "dst", "LEFT", "LEFT"}), Bulk("b"));
  EXPECT_EQ(h.store().count("src"), 0u);  // emptied by the move
  EXPECT_EQ(h.Run({"LRANGE", "dst", "0", "-1"}), Bulks(std::vector<std::string>{"b", "c", "a"}));
  EXPECT_EQ(h.Run({"LMOVE", "dst", "src", "RIGHT", "RIGHT"}), Bulk("a"));
  EXPECT_EQ(h.Run({"LRANGE", "src", "0", "-1"}), Bulks(std::vector<std::string>{"a"}));
  EXPECT_EQ(h.Run({"LMOVE", "missing", "dst", "LEFT", "RIGHT"}), kNil);
  EXPECT_EQ(h.Run({"LMOVE", "missing", "dst", "LEFT", "RIGHT"}, 3), kNull3);
  EXPECT_EQ(h.store().count("missing"), 0u);
  EXPECT_EQ(h.Run({"LMOVE", "src", "dst", "UP", "DOWN"}), kSyntax);
  EXPECT_EQ(h.Run({"LMOVE", "src", "dst", "LEFT", "DOWN"}), kSyntax);
  EXPECT_EQ(h.Run({"LRANGE", "src", "0", "-1"}), Bulks(std::vector<std::string>{"a"}));
  h.Run({"RPUSH", "src", "b"});
  h.Run({"LTRIM", "dst", "1", "0"});
  h.Run({"RPUSH", "dst", "z"});
  EXPECT_EQ(h.Run({"RPOPLPUSH", "src", "dst"}), Bulk("b"));
  EXPECT_EQ(h.Run({"RPOPLPUSH", "src", "dst"}), Bulk("a"));
  EXPECT_EQ(h.Run({"RPOPLPUSH", "src", "dst"}), kNil);
  EXPECT_EQ(h.Run({"LRANGE", "dst", "0", "-1"}), Bulks(std::vector<std::string>{"a", "b", "z"}));
}

TEST(ListCommands, LMoveOnOneListRotates) {
  Harness h;
  h.Run({"RPUSH", "k", "a", "b", "c", "d"});
  EXPECT_EQ(h.Run({"LMOVE", "k", "k", "LEFT", "RIGHT"}), Bulk("a"));
  EXPECT_EQ(h.Run({"LRANGE", "k", "0", "-1"}), Bulks(std::vector<std::string>{"b", "c", "d", "a"}));
  EXPECT_EQ(h.Run({"LMOVE", "k", "k", "RIGHT", "LEFT"}), Bulk("a"));
  EXPECT_EQ(h.Run({"LMOVE", "k", "k", "LEFT", "LEFT"}), Bulk("a"));  // taken and put back
  EXPECT_EQ(h.Run({"LMOVE", "k", "k", "RIGHT", "RIGHT"}), Bulk("d"));
  EXPECT_EQ(h.Run({"LRANGE", "k", "0", "-1"}), Bulks(std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(h.Run({"RPOPLPUSH", "k", "k"}), Bulk("d"));
  EXPECT_EQ(h.Run({"LRANGE", "k", "0", "-1"}), Bulks(std::vector<std::string>{"d", "a", "b", "c"}));
  h.Run({"RPUSH", "one", "x"});
  EXPECT_EQ(h.Run({"LMOVE", "one", "one", "LEFT", "RIGHT"}), Bulk("x"));
  EXPECT_EQ(h.Run({"LRANGE", "one", "0", "-1"}), Bulks(std::vector<std::string>{"x"}));
}

TEST(ListCommands, WrongTypes) {
  Harness h;
  h.Put("str", EncodeString("v", 0));
  h.Run({"RPUSH", "list", "a"});
  const Store before = h.store();
  const std::vector<std::vector<std::string_view>> calls = {
      {"LPUSH", "str", "a"}, {"RPUSH", "str", "a"}, {"LPUSHX", "str", "a"}, {"RPUSHX", "str", "a"},
      {"LPOP", "str"}, {"RPOP", "str"}, {"LPOP", "str", "2"}, {"LPOP", "str", "0"}, {"LLEN", "str"},
      {"LRANGE", "str", "0", "-1"}, {"LINDEX", "str", "0"}, {"LINDEX", "str", "x"},
      {"LSET", "str", "0", "x"}, {"LSET", "str", "x", "x"}, {"LINSERT", "str", "BEFORE", "a", "b"},
      {"LREM", "str", "0", "a"}, {"LTRIM", "str", "0", "1"}, {"LPOS", "str", "a"},
      {"LMOVE", "list", "str", "LEFT", "RIGHT"},  // destination of the wrong type: nothing moves
      {"LMOVE", "str", "list", "LEFT", "RIGHT"}, {"RPOPLPUSH", "list", "str"},
      {"RPOPLPUSH", "str", "str"}};
  for (const auto& call : calls) EXPECT_EQ(h.Run(call), kWrongTypeReply) << call[0] << " " << call[1];
  EXPECT_EQ(h.store(), before);
  // A missing source answers nil before the destination's type is looked at.
  EXPECT_EQ(h.Run({"LMOVE", "missing", "str", "LEFT", "RIGHT"}), kNil);
  EXPECT_EQ(h.Run({"RPOPLPUSH", "missing", "str"}), kNil);
  EXPECT_EQ(h.store(), before);
}

TEST(ListCommands, BinaryElements) {
  Harness h;
  std::string all_bytes;
  for (int c = 0; c < 256; ++c) all_bytes.push_back(static_cast<char>(c));
  const std::vector<std::string> values = {std::string(1, '\0'), "a\r\nb", "*1\r\n$1\r\nx\r\n", all_bytes, ""};
  std::vector<std::string> push = {"RPUSH", "k"};
  push.insert(push.end(), values.begin(), values.end());
  EXPECT_EQ(h.RunStrings(push), Int(5));
  EXPECT_EQ(h.Run({"LRANGE", "k", "0", "-1"}), Bulks(values));
  EXPECT_EQ(h.Run({"LINDEX", "k", "3"}), Bulk(all_bytes));
  EXPECT_EQ(h.Run({"LPOS", "k", "a\r\nb"}), Int(1));
  EXPECT_EQ(h.RunStrings({"LREM", "k", "0", std::string(1, '\0')}), Int(1));
  EXPECT_EQ(h.Run({"LPOP", "k"}), Bulk("a\r\nb"));
}

TEST(ListCommands, TableEntries) {
  for (const char* name : {"lpush", "rpush", "lpushx", "rpushx", "lpop", "rpop", "lset", "linsert",
                           "lrem", "ltrim", "lmove", "rpoplpush"}) {
    const CommandSpec* spec = FindCommand(name);
    ASSERT_NE(spec, nullptr) << name;
    EXPECT_EQ(spec->kind, CommandKind::kWrite) << name;
    EXPECT_TRUE(spec->needs_read == nullptr) << name;  // always read first
  }
  for (const char* name : {"llen", "lrange", "lindex", "lpos"}) {
    const CommandSpec* spec = FindCommand(name);
    ASSERT_NE(spec, nullptr) << name;
    EXPECT_EQ(spec->kind, CommandKind::kRead) << name;
  }
  const std::vector<std::string_view> lmove = {"LMOVE", "s", "d", "LEFT", "RIGHT"};
  EXPECT_EQ(KeysOf(*FindCommand("lmove"), lmove), (std::vector<std::string_view>{"s", "d"}));
  const std::vector<std::string_view> rpoplpush = {"RPOPLPUSH", "s", "d"};
  EXPECT_EQ(KeysOf(*FindCommand("rpoplpush"), rpoplpush), (std::vector<std::string_view>{"s", "d"}));
  const std::vector<std::string_view> lpush = {"LPUSH", "k", "a", "b"};
  EXPECT_EQ(KeysOf(*FindCommand("lpush"), lpush), (std::vector<std::string_view>{"k"}));
  const std::vector<std::string_view> pos = {"LPOS", "k", "a", "RANK", "1"};
  EXPECT_EQ(CheckArity(*FindCommand("lpos"), pos), "");
  const std::vector<std::string_view> short_insert = {"LINSERT", "k", "BEFORE", "a"};
  EXPECT_EQ(CheckArity(*FindCommand("linsert"), short_insert),
            "ERR wrong number of arguments for 'linsert' command");
}

// ---- Large lists against a model -------------------------------------------------------

using Model = std::map<std::string, std::deque<std::string>>;

int64_t Number(const std::string& s) { return std::stoll(s); }

// The reply Redis gives to args on the lists of `model`, and its effect on
// them; the commands and argument shapes ModelChecker makes (valid ones).
std::string ModelApply(Model& model, const std::vector<std::string>& a) {
  const std::string& cmd = a[0];
  std::deque<std::string>& l = model[a[1]];
  const auto n = static_cast<int64_t>(l.size());
  std::string reply;
  if (cmd == "LPUSH" || cmd == "RPUSH" || cmd == "LPUSHX" || cmd == "RPUSHX") {
    if (cmd.back() != 'X' || n > 0) {
      for (size_t i = 2; i < a.size(); ++i) cmd[0] == 'L' ? l.push_front(a[i]) : l.push_back(a[i]);
    }
    reply = Int(static_cast<int64_t>(l.size()));
  } else if (cmd == "LPOP" || cmd == "RPOP") {
    const bool has_count = a.size() == 3;
    std::vector<std::string> popped;
    for (int64_t k = has_count ? Number(a[2]) : 1; k > 0 && !l.empty(); --k) {
      popped.push_back(cmd[0] == 'L' ? l.front() : l.back());
      cmd[0] == 'L' ? l.pop_front() : l.pop_back();
    }
    if (n == 0) {
      reply = has_count ? kNilArray : kNil;
    } else {
      reply = has_count ? Bulks(popped) : Bulk(popped[0]);
    }
  } else if (cmd == "LLEN") {
    reply = Int(n);
  } else if (cmd == "LRANGE" || cmd == "LTRIM") {
    const std::vector<std::string> kept = RangeModel({l.begin(), l.end()}, Number(a[2]), Number(a[3]));
    if (cmd == "LTRIM") l.assign(kept.begin(), kept.end());
    reply = cmd == "LTRIM" ? kOk : Bulks(kept);
  } else if (cmd == "LINDEX" || cmd == "LSET") {
    int64_t i = Number(a[2]);
    if (i < 0) i += n;
    const bool in = i >= 0 && i < n;
    if (cmd == "LINDEX") {
      reply = in ? Bulk(l[i]) : kNil;
    } else if (n == 0) {
      reply = Err("ERR no such key");
    } else {
      if (in) l[i] = a[3];
      reply = in ? kOk : Err("ERR index out of range");
    }
  } else if (cmd == "LINSERT") {
    auto it = std::find(l.begin(), l.end(), a[3]);
    const bool found = it != l.end();
    if (found) l.insert(a[2] == "AFTER" ? it + 1 : it, a[4]);
    reply = Int(n == 0 ? 0 : found ? static_cast<int64_t>(l.size()) : -1);
  } else if (cmd == "LREM") {
    const int64_t count = Number(a[2]);
    std::vector<int64_t> at;  // matches, in the order LREM takes them
    for (int64_t k = 0; k < n; ++k) {
      const int64_t i = count < 0 ? n - 1 - k : k;
      if (l[i] == a[3] && (count == 0 || static_cast<int64_t>(at.size()) < std::abs(count))) at.push_back(i);
    }
    std::sort(at.rbegin(), at.rend());
    for (int64_t i : at) l.erase(l.begin() + i);
    reply = Int(static_cast<int64_t>(at.size()));
  } else if (cmd == "LPOS") {
    int64_t rank = 1, count = -1, maxlen = 0;
    for (size_t j = 3; j + 1 < a.size(); j += 2) {
      (a[j] == "RANK" ? rank : a[j] == "COUNT" ? count : maxlen) = Number(a[j + 1]);
    }
    std::vector<int64_t> found;
    int64_t matches = 0;
    for (int64_t k = 0; k < n && (maxlen == 0 || k < maxlen); ++k) {
      const int64_t i = rank < 0 ? n - 1 - k : k;
      if (l[i] != a[2] || ++matches < std::abs(rank)) continue;
      found.push_back(i);
      if (count == -1 || (count > 0 && static_cast<int64_t>(found.size()) >= count)) break;
    }
    if (count != -1) {
      reply = Ints(found);
    } else {
      reply = found.empty() ? kNil : Int(found[0]);
    }
  } else if (cmd == "LMOVE" || cmd == "RPOPLPUSH") {
    const bool from_left = cmd == "LMOVE" && a[3] == "LEFT";
    const bool to_left = cmd == "RPOPLPUSH" || a[4] == "LEFT";
    std::deque<std::string>& d = model[a[2]];
    if (n == 0) {
      reply = kNil;
    } else {
      std::string e = from_left ? l.front() : l.back();
      from_left ? l.pop_front() : l.pop_back();
      reply = Bulk(e);
      to_left ? d.push_front(std::move(e)) : d.push_back(std::move(e));
    }
    if (d.empty()) model.erase(a[2]);
  } else {
    ADD_FAILURE() << "the model does not know " << cmd;
  }
  if (auto it = model.find(a[1]); it != model.end() && it->second.empty()) model.erase(it);
  return reply;
}

// Random list commands on the harness and on a model, replies compared.
class ModelChecker {
 public:
  explicit ModelChecker(uint64_t seed) : rng_(seed) {}

  Harness& harness() { return h_; }
  const Model& model() const { return model_; }

  // Runs args on both; false (and a test failure) when the replies differ.
  bool Check(const std::vector<std::string>& args) {
    const std::string expected = ModelApply(model_, args);
    const std::string got = h_.RunStrings(args);
    if (got == expected) return true;
    std::string text;
    for (const std::string& a : args) text += (a.size() > 40 ? a.substr(0, 40) + "..." : a) + " ";
    ADD_FAILURE() << "after " << steps_ << " commands, " << text << "replied\n"
                  << got.substr(0, 300) << "\ninstead of\n"
                  << expected.substr(0, 300);
    return false;
  }

  // Pushes `count` new elements at the tail of `key`, `batch` a command.
  bool Load(const std::string& key, int count, int batch) {
    for (int done = 0; done < count; done += batch) {
      std::vector<std::string> args = {"RPUSH", key};
      for (int i = 0; i < batch; ++i) args.push_back(NewElement());
      if (!Check(args)) return false;
    }
    return true;
  }

  // One random command; false when it replied other than the model.
  bool Step() { return Check(NextCommand()); }

  // `n` random commands (DEL among them) run on one view, as a turn's
  // joined commands are; false when a reply differs from the model's.
  bool StepsOnOneView(int n) {
    std::vector<std::vector<std::string>> commands;
    std::vector<std::string> expected;
    for (int i = 0; i < n; ++i) {
      commands.push_back(Pick(12) == 0 ? std::vector<std::string>{"DEL", Pick(2) == 0 ? "a" : "b"}
                                       : NextCommand());
      expected.push_back(commands.back()[0] == "DEL" ? ModelDel(commands.back()[1])
                                                     : ModelApply(model_, commands.back()));
    }
    const std::vector<std::string> got = h_.RunOnOneView(commands);
    for (size_t i = 0; i < got.size() && i < expected.size(); ++i) {
      if (got[i] == expected[i]) continue;
      ADD_FAILURE() << "after " << steps_ << " commands, command " << i << " of a view ("
                    << commands[i][0] << " " << commands[i][1] << ") replied\n"
                    << got[i].substr(0, 300) << "\ninstead of\n" << expected[i].substr(0, 300);
      return false;
    }
    return got.size() == expected.size();
  }

  // The next random command, built against the model.
  std::vector<std::string> NextCommand() {
    ++steps_;
    const std::string key = Pick(5) == 0 ? "b" : "a";
    const auto size = static_cast<int64_t>(Size(key));
    switch (Pick(16)) {
      case 0:
      case 1:
      case 2: {
        std::vector<std::string> args = {Pick(2) == 0 ? "LPUSH" : "RPUSH", key};
        if (Pick(4) == 0) args[0] += "X";
        if (Pick(8) == 0) args[1] = "c";  // a list that does not exist for the X forms
        for (uint64_t i = 0, n = 1 + Pick(8); i < n; ++i) args.push_back(NewElement());
        return args;
      }
      case 3:
      case 4: {
        std::vector<std::string> args = {Pick(2) == 0 ? "LPOP" : "RPOP", key};
        if (Pick(2) == 0) args.push_back(std::to_string(Pick(30)));
        return args;
      }
      case 5:
        return {"LINDEX", key, std::to_string(Index(size))};
      case 6:
        return {"LSET", key, std::to_string(Index(size)), NewElement()};
      case 7:
        return {"LINSERT", key, Pick(2) == 0 ? "BEFORE" : "AFTER", Value(key), NewElement()};
      case 8:
        return {"LREM", key, std::to_string(static_cast<int64_t>(Pick(7)) - 3), Value(key)};
      case 9:
        return {"LTRIM", key, std::to_string(Pick(4)), std::to_string(-1 - static_cast<int64_t>(Pick(4)))};
      case 10:
        return LposArgs(key);
      case 11: {
        const int64_t start = Index(size + 3), stop = Pick(4) == 0 ? -1 : Index(size + 3);
        return {"LRANGE", key, std::to_string(start), std::to_string(stop)};
      }
      case 12:
      case 13: {
        const std::string other = Pick(3) == 0 ? key : key == "a" ? "b" : "a";
        return {"LMOVE", key, other, Pick(2) == 0 ? "LEFT" : "RIGHT", Pick(2) == 0 ? "LEFT" : "RIGHT"};
      }
      case 14:
        return {"RPOPLPUSH", key, Pick(2) == 0 ? "a" : "b"};
      default:
        return {"LLEN", key};
    }
  }

  // DEL key on the model: Redis's reply.
  std::string ModelDel(const std::string& key) { return Int(model_.erase(key)); }

  // The whole list, read back.
  bool CheckWhole(const std::string& key) { return Check({"LRANGE", key, "0", "-1"}); }

 private:
  uint64_t Pick(uint64_t n) { return rng_() % n; }
  size_t Size(const std::string& key) const {
    auto it = model_.find(key);
    return it == model_.end() ? 0 : it->second.size();
  }
  // An index in [-size - 2, size + 2).
  int64_t Index(int64_t size) { return static_cast<int64_t>(Pick(2 * size + 4)) - size - 2; }

  // Mostly new elements of 0 to 600 bytes (a few larger than a page); some of
  // a few repeated values for LPOS, LREM and LINSERT to find many of.
  std::string NewElement() {
    if (Pick(8) == 0) return "dup" + std::to_string(Pick(3));
    const size_t padding = Pick(64) == 0 ? 2500 : Pick(600);
    return "e" + std::to_string(next_++) + ":" + std::string(padding, 'x');
  }
  // An element to look for: one of the list, a repeated one, or none.
  std::string Value(const std::string& key) {
    const uint64_t kind = Pick(5);
    if (kind < 2 && Size(key) > 0) return model_.at(key)[Pick(Size(key))];
    if (kind < 4) return "dup" + std::to_string(Pick(3));
    return "absent";
  }
  std::vector<std::string> LposArgs(const std::string& key) {
    std::vector<std::string> args = {"LPOS", key, Value(key)};
    if (Pick(2) == 0) {
      const int64_t rank = 1 + static_cast<int64_t>(Pick(4));
      args.insert(args.end(), {"RANK", std::to_string(Pick(2) == 0 ? rank : -rank)});
    }
    if (Pick(2) == 0) args.insert(args.end(), {"COUNT", std::to_string(Pick(4))});
    if (Pick(3) == 0) args.insert(args.end(), {"MAXLEN", std::to_string(Pick(3000))});
    return args;
  }

  Harness h_;
  Model model_;
  std::mt19937_64 rng_;
  uint64_t next_ = 0;
  int steps_ = 0;
};

TEST(ListPaging, RandomCommandsOnLargeListsMatchAModel) {
  ModelChecker check(20240611);
  ASSERT_TRUE(check.Load("a", 4000, 250));
  ASSERT_TRUE(check.Load("b", 300, 100));
  ASSERT_GE(check.harness().Height("a"), 2u) << "the list should span a tree of three levels";
  ASSERT_GE(check.harness().Height("b"), 1u);
  for (int step = 1; step <= 500; ++step) {
    ASSERT_TRUE(check.Step());
    if (step % 50 == 0) {
      ASSERT_TRUE(check.CheckWhole("a"));
      ASSERT_TRUE(check.CheckWhole("b"));
    }
  }
  // Emptied, the lists leave nothing behind: no header, no page.
  ASSERT_TRUE(check.Check({"LTRIM", "a", "1", "0"}));
  ASSERT_TRUE(check.Check({"RPOP", "b", "100000"}));
  ASSERT_TRUE(check.Check({"LPOP", "c", "100000"}));
  EXPECT_TRUE(check.model().empty());
  EXPECT_TRUE(check.harness().store().empty()) << check.harness().store().size() << " keys left";
}

// Commands that share a view (a leader and the commands joined to it) pass
// each other decoded pages and roots (DataView::KeepDecoded): the replies
// must be those of the commands run one by one.
TEST(ListPaging, RandomCommandsOnOneViewMatchAModel) {
  ModelChecker check(20261127);
  ASSERT_TRUE(check.Load("a", 3000, 250));
  ASSERT_TRUE(check.Load("b", 300, 100));
  ASSERT_GE(check.harness().Height("a"), 2u) << "the list should span a tree of three levels";
  for (int batch = 1; batch <= 120; ++batch) {
    ASSERT_TRUE(check.StepsOnOneView(1 + batch % 9));
    if (batch % 20 == 0) {
      ASSERT_TRUE(check.CheckWhole("a"));
      ASSERT_TRUE(check.CheckWhole("b"));
    }
  }
}

// Builds a list of `count` elements of 300 bytes e0, e1, ... at "k".
void LoadNumbered(Harness& h, int count) {
  for (int done = 0; done < count; done += 200) {
    std::vector<std::string> args = {"RPUSH", "k"};
    for (int i = done; i < done + 200 && i < count; ++i) {
      args.push_back("e" + std::to_string(i) + ":" + std::string(300, 'x'));
    }
    h.RunStrings(args);
  }
}

TEST(ListPaging, RangesReadOneRoundPerLevel) {
  Harness h;
  LoadNumbered(h, 4000);
  const uint32_t height = h.Height("k");
  ASSERT_GE(height, 2u);
  const size_t pages = h.store().size() - 1;
  // The root is in the header: the first run reads it, each level below one
  // more run.
  h.Run({"LRANGE", "k", "0", "-1"});
  EXPECT_EQ(h.runs(), static_cast<int>(height) + 1);
  EXPECT_EQ(h.keys_read(), pages + 1);
  h.Run({"LINDEX", "k", "2000"});
  EXPECT_EQ(h.runs(), static_cast<int>(height) + 1);
  EXPECT_EQ(h.keys_read(), height + 1u);  // one page a level
  h.Run({"LRANGE", "k", "1000", "1099"});
  EXPECT_EQ(h.runs(), static_cast<int>(height) + 1);
  EXPECT_LT(h.keys_read(), pages / 4);
}

TEST(ListPaging, SearchesThatEndEarlyReadLittle) {
  Harness h;
  LoadNumbered(h, 4000);
  const size_t pages = h.store().size() - 1;
  const std::string near_head = "e3:" + std::string(300, 'x');
  const std::string near_tail = "e3990:" + std::string(300, 'x');
  EXPECT_EQ(h.Run({"LPOS", "k", near_head}), Int(3));
  EXPECT_LT(h.keys_read(), pages / 2);
  EXPECT_EQ(h.Run({"LPOS", "k", near_tail, "RANK", "-1"}), Int(3990));
  EXPECT_LT(h.keys_read(), pages / 2);
  EXPECT_EQ(h.Run({"LPOS", "k", near_tail}), Int(3990));  // all the way: read all
  EXPECT_EQ(h.keys_read(), pages + 1);
  EXPECT_LE(h.runs(), kMaxRuns);
  EXPECT_EQ(h.Run({"LINSERT", "k", "AFTER", near_head, "new"}), Int(4001));
  EXPECT_LT(h.keys_read(), pages / 2);
  EXPECT_EQ(h.Run({"LINDEX", "k", "4"}), Bulk("new"));
  EXPECT_EQ(h.Run({"LREM", "k", "1", "new"}), Int(1));
  EXPECT_LT(h.keys_read(), pages / 2);
  EXPECT_EQ(h.Run({"LLEN", "k"}), Int(4000));
}

TEST(ListPaging, TrimsAndPopsDropPagesUnread) {
  Harness h;
  LoadNumbered(h, 4000);
  const size_t pages = h.store().size() - 1;
  EXPECT_EQ(h.Run({"LTRIM", "k", "1000", "2999"}), kOk);
  EXPECT_LT(h.keys_read(), pages / 4);  // the leaves of the trimmed ranges are dropped unread
  EXPECT_LT(h.store().size() - 1, pages * 3 / 4);
  EXPECT_EQ(h.Run({"LINDEX", "k", "0"}), Bulk("e1000:" + std::string(300, 'x')));
  EXPECT_EQ(h.Run({"LINDEX", "k", "-1"}), Bulk("e2999:" + std::string(300, 'x')));
  EXPECT_EQ(h.Run({"LLEN", "k"}), Int(2000));
  EXPECT_EQ(h.Run({"RPOP", "k", "1500"}).substr(0, 7), "*1500\r\n");
  EXPECT_EQ(h.Run({"LPOP", "k"}), Bulk("e1000:" + std::string(300, 'x')));
  EXPECT_EQ(h.Run({"LTRIM", "k", "5", "1"}), kOk);
  EXPECT_TRUE(h.store().empty());
}

}  // namespace
}  // namespace rampart::proxy
