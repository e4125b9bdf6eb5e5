// The set commands (commands_sets.cc) applied to DataViews the way the worker
// applies them: a command runs on a view seeded with the keys it declares;
// while it asks for pages the view does not hold (missing()), it runs again
// on a fresh view seeded with those as well; then its writes go into the
// store. Small sets check Redis 7.0's replies and error texts (the cases of
// tests/test_proxy_sets.py and redis-server 7.0.15's answers); sets of
// thousands of members — many pages, trees of several levels — check every
// command against std::set models and count the read rounds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/collection.h"
#include "proxy/collection_scan.h"
#include "proxy/command_test_util.h"
#include "proxy/commands.h"
#include "proxy/data_view.h"
#include "proxy/internal_keys.h"
#include "proxy/value_codec.h"

namespace rampart::proxy {
namespace {

using namespace std::string_literals;
using namespace rampart::proxy::testing;  // command_test_util.h: replies, Store, kNow, kMaxRuns

// ---- Replies -----------------------------------------------------------------------

const std::string kEmpty = "*0\r\n";

// A reply parsed, for the ones whose order or content is random.
struct Reply {
  char type = 0;             // '+', '-', ':', '$', '*', '~', '_'
  std::string text;          // simple, error, bulk bytes, integer digits
  bool null = false;         // "$-1", "_"
  std::vector<Reply> items;  // '*', '~'
};
Reply ParseReply(std::string_view* in) {
  Reply r;
  const size_t eol = in->find("\r\n");
  r.type = (*in)[0];
  const std::string head(in->substr(1, eol - 1));
  in->remove_prefix(eol + 2);
  if (r.type == '$' || r.type == '*' || r.type == '~') {
    const long n = std::stol(head);
    if (n < 0) {
      r.null = true;
    } else if (r.type == '$') {
      r.text = in->substr(0, static_cast<size_t>(n));
      in->remove_prefix(static_cast<size_t>(n) + 2);
    } else {
      for (long i = 0; i < n; ++i) r.items.push_back(ParseReply(in));
    }
  } else {
    r.null = r.type == '_';
    r.text = head;
  }
  return r;
}
// The bulk strings of an array / set reply, in order.
std::vector<std::string> Elements(const std::string& reply) {
  std::string_view in = reply;
  const Reply r = ParseReply(&in);
  EXPECT_TRUE(in.empty()) << reply;
  EXPECT_TRUE(r.type == '*' || r.type == '~') << reply;
  std::vector<std::string> out;
  for (const Reply& item : r.items) out.push_back(item.text);
  return out;
}
std::set<std::string> AsSet(const std::vector<std::string>& v) { return {v.begin(), v.end()}; }

// ---- The worker's loop -------------------------------------------------------------

// The shared harness (command_test_util.h), with sets' batches, pages and
// tree height.
class Harness : public CommandHarness {
 public:
  // SADD key members... in batches of 500 (as a client pipelines them).
  void AddMany(const std::string& key, const std::vector<std::string>& members) {
    for (size_t from = 0; from < members.size(); from += 500) {
      std::vector<std::string> args = {"SADD", key};
      args.insert(args.end(), members.begin() + static_cast<long>(from),
                  members.begin() + static_cast<long>(std::min(members.size(), from + 500)));
      RunStrings(args);
    }
  }

  // The pages the store holds for collections at `key`.
  size_t PagesOf(std::string_view key) const {
    size_t pages = 0;
    for (const auto& [k, stored] : store()) pages += IsInternalKey(k) && ParsePageKey(k).user_key == key;
    return pages;
  }
  // The height of the set's tree (0: the root is its only node).
  uint32_t Height(std::string_view key) const { return TreeHeight(key, ValueType::kPagedSet); }
};

// Commands and the replies they must give, in order, on one harness.
using Steps = std::vector<std::pair<std::vector<std::string_view>, std::string>>;
void ExpectSteps(Harness& h, const Steps& steps, int protocol = 2) {
  for (const auto& [args, reply] : steps) {
    std::string command;
    for (std::string_view a : args) command.append(a).append(" ");
    EXPECT_EQ(h.Run(args, protocol), reply) << command << "(RESP" << protocol << ")";
  }
}

// ---- Small sets ----------------------------------------------------------------------

TEST(CommandSets, AddRemoveMembersCard) {
  Harness h;
  ExpectSteps(h, {{{"SADD", "k", "a", "b", "c"}, Int(3)},
                  {{"SADD", "k", "a", "d", "d"}, Int(1)},  // only d is new, once
                  {{"SMEMBERS", "k"}, Bulks({"a", "b", "c", "d"})},
                  {{"SCARD", "k"}, Int(4)},
                  {{"SREM", "k", "a", "nope", "b", "a"}, Int(2)},
                  {{"SMEMBERS", "k"}, Bulks({"c", "d"})},
                  {{"SREM", "k", "c", "d"}, Int(2)},
                  {{"SMEMBERS", "k"}, kEmpty},
                  {{"SCARD", "k"}, Int(0)},
                  {{"SREM", "missing", "a"}, Int(0)},
                  {{"SADD", "e", ""}, Int(1)},  // the empty string is a member
                  {{"SMEMBERS", "e"}, Bulks({""})},
                  {{"SADD", "n", "1", "01", "-5", "1"}, Int(3)},  // "01" is not 1
                  {{"SMEMBERS", "n"}, Bulks({"-5", "01", "1"})}});
  EXPECT_FALSE(h.store().contains("k"));  // the last member gone, the key is gone
}

TEST(CommandSets, BinaryMembers) {
  Harness h;
  const std::string all_bytes = [] {
    std::string s;
    for (int c = 0; c < 256; ++c) s.push_back(static_cast<char>(c));
    return s;
  }();
  const std::vector<std::string> members = {"\0"s, "a\r\nb", all_bytes, "", "\xff\xfe"};
  std::vector<std::string> sadd = {"SADD", "b"};
  sadd.insert(sadd.end(), members.begin(), members.end());
  EXPECT_EQ(h.RunStrings(sadd), Int(5));
  EXPECT_EQ(AsSet(Elements(h.Run({"SMEMBERS", "b"}))), AsSet(members));
  EXPECT_EQ(h.RunStrings({"SMISMEMBER", "b", "\0"s, "\0\0"s}), Line('*', "2") + Int(1) + Int(0));
  EXPECT_EQ(h.RunStrings({"SREM", "b", all_bytes}), Int(1));
  EXPECT_EQ(h.Run({"SCARD", "b"}), Int(4));
}

TEST(CommandSets, IsMemberAndMIsMember) {
  Harness h;
  h.Run({"SADD", "k", "a", "b"});
  ExpectSteps(h, {{{"SISMEMBER", "k", "a"}, Int(1)},
                  {{"SISMEMBER", "k", "z"}, Int(0)},
                  {{"SISMEMBER", "missing", "a"}, Int(0)},
                  {{"SMISMEMBER", "k", "b", "z", "a", "b"}, Line('*', "4") + Int(1) + Int(0) + Int(1) + Int(1)},
                  {{"SMISMEMBER", "missing", "a", "b"}, Line('*', "2") + Int(0) + Int(0)}});
}

TEST(CommandSets, Resp3RepliesSetsWhereRedisDoes) {
  Harness h;
  h.Run({"SADD", "k", "a", "b"});
  h.Run({"SADD", "j", "b"});
  ExpectSteps(h,
              {{{"SMEMBERS", "k"}, Bulks({"a", "b"}, '~')},
               {{"SINTER", "k", "j"}, Bulks({"b"}, '~')},
               {{"SUNION", "k", "j"}, Bulks({"a", "b"}, '~')},
               {{"SDIFF", "k", "j"}, Bulks({"a"}, '~')},
               {{"SMEMBERS", "missing"}, "~0\r\n"},
               {{"SPOP", "missing", "2"}, "~0\r\n"},
               {{"SPOP", "k", "0"}, "~0\r\n"},
               {{"SRANDMEMBER", "missing", "2"}, kEmpty},  // arrays: members may repeat
               {{"SRANDMEMBER", "k", "5"}, Bulks({"a", "b"})},
               {{"SRANDMEMBER", "missing"}, kNull3},
               {{"SPOP", "missing"}, kNull3},
               {{"SPOP", "k", "5"}, Bulks({"a", "b"}, '~')}},
              3);
}

TEST(CommandSets, WrongTypeChangesNothing) {
  Harness h;
  h.Run({"SET", "s", "v"});
  h.Run({"SADD", "st", "a"});
  const Store before = h.store();
  const std::vector<std::vector<std::string_view>> calls = {
      {"SADD", "s", "a"},         {"SREM", "s", "a"},           {"SMEMBERS", "s"},
      {"SISMEMBER", "s", "a"},    {"SMISMEMBER", "s", "a"},     {"SCARD", "s"},
      {"SPOP", "s"},              {"SPOP", "s", "2"},           {"SRANDMEMBER", "s"},
      {"SRANDMEMBER", "s", "2"},  {"SMOVE", "s", "st", "a"},    {"SMOVE", "st", "s", "a"},
      {"SMOVE", "st", "s", "x"},  {"SINTER", "st", "s"},        {"SINTER", "missing", "s"},
      {"SUNION", "st", "s"},      {"SDIFF", "st", "s"},         {"SDIFF", "s", "st"},
      {"SINTERSTORE", "d", "st", "s"}, {"SUNIONSTORE", "d", "s"}, {"SDIFFSTORE", "d", "missing", "s"},
      {"SINTERCARD", "2", "st", "s"},  {"SSCAN", "s", "0"},      {"SSCAN", "s", "0", "COUNT", "0"},
  };
  for (const auto& call : calls) EXPECT_EQ(h.Run(call), kWrongTypeReply) << call[0] << " " << call[1];
  EXPECT_EQ(h.store(), before);
}

TEST(CommandSets, ArgumentErrors) {
  Harness h;
  h.Run({"SADD", "k", "a"});
  ExpectSteps(h, {
      {{"SPOP", "k", "abc"}, kNotPositive},  // one text for both, as Redis
      {{"SPOP", "k", "-1"}, kNotPositive},
      {{"SPOP", "missing", "-1"}, kNotPositive},  // the count before the key
      {{"SPOP", "k", "1", "2"}, kSyntax},
      {{"SRANDMEMBER", "k", "abc"}, kNotInteger},
      {{"SRANDMEMBER", "k", "1", "2"}, kSyntax},
      {{"SINTERCARD", "0", "k"}, Err("ERR numkeys should be greater than 0")},
      {{"SINTERCARD", "x", "k"}, Err("ERR numkeys should be greater than 0")},
      {{"SINTERCARD", "3", "k", "j"}, Err("ERR Number of keys can't be greater than number of args")},
      {{"SINTERCARD", "1", "k", "LIMIT", "-1"}, Err("ERR LIMIT can't be negative")},
      {{"SINTERCARD", "1", "k", "LIMIT", "x"}, Err("ERR LIMIT can't be negative")},
      {{"SINTERCARD", "1", "k", "LIMIT"}, kSyntax},
      {{"SINTERCARD", "1", "k", "FOO"}, kSyntax},
      {{"SSCAN", "k", "abc"}, Err("ERR invalid cursor")},
      {{"SSCAN", "missing", "abc"}, Err("ERR invalid cursor")},
      {{"SSCAN", "k", "0", "COUNT", "0"}, kSyntax},
      {{"SSCAN", "k", "0", "COUNT", "x"}, kNotInteger},
      {{"SSCAN", "k", "0", "FOO", "1"}, kSyntax},
      {{"SSCAN", "missing", "0", "COUNT", "0"}, Line('*', "2") + Bulk("0") + kEmpty},  // key first
  });
  EXPECT_EQ(h.Run({"SMEMBERS", "k"}), Bulks({"a"}));
}

TEST(CommandSets, Spop) {
  Harness h;
  std::set<std::string> left;
  for (int i = 0; i < 10; ++i) left.insert("m" + std::to_string(i));
  h.Run({"SADD", "k", "m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9"});
  std::string_view in;
  const std::string one = h.Run({"SPOP", "k"});
  in = one;
  const std::string popped = ParseReply(&in).text;
  ASSERT_TRUE(left.contains(popped)) << one;
  left.erase(popped);
  EXPECT_EQ(h.RunStrings({"SISMEMBER", "k", popped}), Int(0));
  const std::vector<std::string> three = Elements(h.Run({"SPOP", "k", "3"}));
  ASSERT_EQ(AsSet(three).size(), 3u);
  for (const std::string& m : three) EXPECT_EQ(left.erase(m), 1u) << m;
  EXPECT_EQ(AsSet(Elements(h.Run({"SMEMBERS", "k"}))), left);
  EXPECT_EQ(h.Run({"SPOP", "k", "0"}), kEmpty);
  const std::vector<std::string> rest = Elements(h.Run({"SPOP", "k", "100"}));  // all of it
  EXPECT_EQ(AsSet(rest), left);
  EXPECT_EQ(rest.size(), left.size());
  EXPECT_TRUE(h.store().empty()) << "the key and its pages are gone";
  ExpectSteps(h, {{{"SPOP", "k"}, kNil}, {{"SPOP", "missing", "2"}, kEmpty}, {{"SPOP", "missing", "0"}, kEmpty}});
}

TEST(CommandSets, Srandmember) {
  Harness h;
  std::set<std::string> members;
  std::vector<std::string> sadd = {"SADD", "k"};
  for (int i = 0; i < 10; ++i) {
    members.insert("m" + std::to_string(i));
    sadd.push_back("m" + std::to_string(i));
  }
  h.RunStrings(sadd);
  const Store before = h.store();
  for (std::string count : {"1", "3", "10", "25"}) {  // distinct members, at most the set
    const std::vector<std::string> got = Elements(h.RunStrings({"SRANDMEMBER", "k", count}));
    EXPECT_EQ(got.size(), std::min<size_t>(std::stoul(count), 10)) << count;
    EXPECT_EQ(AsSet(got).size(), got.size()) << count;
    for (const std::string& m : got) EXPECT_TRUE(members.contains(m)) << m;
  }
  for (std::string count : {"-1", "-3", "-25"}) {  // exactly -count, repeats allowed
    const std::vector<std::string> got = Elements(h.RunStrings({"SRANDMEMBER", "k", count}));
    EXPECT_EQ(got.size(), std::stoul(count.substr(1))) << count;
    for (const std::string& m : got) EXPECT_TRUE(members.contains(m)) << m;
  }
  std::string_view in;
  const std::string single = h.Run({"SRANDMEMBER", "k"});
  in = single;
  EXPECT_TRUE(members.contains(ParseReply(&in).text)) << single;
  EXPECT_EQ(h.Run({"SRANDMEMBER", "k", "0"}), kEmpty);
  EXPECT_EQ(h.store(), before);  // nothing removed
  ExpectSteps(h, {{{"SRANDMEMBER", "missing"}, kNil},
                  {{"SRANDMEMBER", "missing", "2"}, kEmpty},
                  {{"SRANDMEMBER", "missing", "-2"}, kEmpty}});
  h.Run({"SADD", "single", "only"});
  EXPECT_EQ(h.Run({"SRANDMEMBER", "single", "-5"}), Bulks({"only", "only", "only", "only", "only"}));
  h.Run({"SADD", "two", "a", "b"});
  const std::vector<std::string> picks = Elements(h.Run({"SRANDMEMBER", "two", "-200"}));
  EXPECT_EQ(picks.size(), 200u);
  EXPECT_EQ(AsSet(picks), (std::set<std::string>{"a", "b"}));
}

TEST(CommandSets, Smove) {
  Harness h;
  h.Run({"SADD", "src", "a", "b"});
  h.Run({"SADD", "dst", "b", "z"});
  ExpectSteps(h, {{{"SMOVE", "src", "dst", "a"}, Int(1)},
                  {{"SMEMBERS", "src"}, Bulks({"b"})},
                  {{"SMEMBERS", "dst"}, Bulks({"a", "b", "z"})},
                  {{"SMOVE", "src", "dst", "b"}, Int(1)},  // already in dst: removed from src only
                  {{"SCARD", "src"}, Int(0)},
                  {{"SMEMBERS", "dst"}, Bulks({"a", "b", "z"})},
                  {{"SMOVE", "src", "dst", "a"}, Int(0)},  // a missing source
                  {{"SMOVE", "dst", "dst", "a"}, Int(1)},  // the same set: is it there
                  {{"SMOVE", "dst", "dst", "nope"}, Int(0)},
                  {{"SMEMBERS", "dst"}, Bulks({"a", "b", "z"})},
                  {{"SMOVE", "dst", "dst2", "nope"}, Int(0)},
                  {{"SMOVE", "dst", "new", "z"}, Int(1)},  // creates the destination
                  {{"SMEMBERS", "new"}, Bulks({"z"})},
                  {{"SMEMBERS", "dst"}, Bulks({"a", "b"})}});
  EXPECT_FALSE(h.store().contains("src"));
  EXPECT_FALSE(h.store().contains("dst2"));
  h.Run({"SET", "str", "v"});
  EXPECT_EQ(h.Run({"SMOVE", "missing", "str", "a"}), Int(0));  // no source: the destination's type is moot
}

TEST(CommandSets, Algebra) {
  Harness h;
  h.Run({"SADD", "a", "1", "2", "3", "x"});
  h.Run({"SADD", "b", "2", "3", "4"});
  h.Run({"SADD", "c", "3", "5", "x"});
  ExpectSteps(h, {{{"SINTER", "a", "b"}, Bulks({"2", "3"})},
                  {{"SINTER", "a", "b", "c"}, Bulks({"3"})},
                  {{"SINTER", "a"}, Bulks({"1", "2", "3", "x"})},
                  {{"SINTER", "a", "missing"}, kEmpty},
                  {{"SINTER", "a", "a"}, Bulks({"1", "2", "3", "x"})},
                  {{"SUNION", "a", "b", "c"}, Bulks({"1", "2", "3", "4", "5", "x"})},
                  {{"SUNION", "missing", "b"}, Bulks({"2", "3", "4"})},
                  {{"SUNION", "missing"}, kEmpty},
                  {{"SDIFF", "a", "b"}, Bulks({"1", "x"})},
                  {{"SDIFF", "a", "b", "c"}, Bulks({"1"})},
                  {{"SDIFF", "b", "a"}, Bulks({"4"})},
                  {{"SDIFF", "a", "missing"}, Bulks({"1", "2", "3", "x"})},
                  {{"SDIFF", "missing", "a"}, kEmpty},
                  {{"SDIFF", "a", "a"}, kEmpty}});
}

TEST(CommandSets, AlgebraStore) {
  Harness h;
  h.Run({"SADD", "a", "1", "2", "3"});
  h.Run({"SADD", "b", "2", "3", "4"});
  ExpectSteps(h, {{{"SINTERSTORE", "dst", "a", "b"}, Int(2)},
                  {{"SMEMBERS", "dst"}, Bulks({"2", "3"})},
                  {{"SUNIONSTORE", "dst", "a", "b"}, Int(4)},  // replaces the old contents
                  {{"SMEMBERS", "dst"}, Bulks({"1", "2", "3", "4"})},
                  {{"SDIFFSTORE", "dst", "a", "b"}, Int(1)},
                  {{"SMEMBERS", "dst"}, Bulks({"1"})},
                  {{"SINTERSTORE", "dst", "a", "missing"}, Int(0)}});  // an empty result deletes dst
  EXPECT_FALSE(h.store().contains("dst"));
  h.Run({"SET", "dst", "a string"});
  h.Run({"EXPIRE", "dst", "100"});
  ExpectSteps(h, {{{"SUNIONSTORE", "dst", "a"}, Int(3)},  // the destination may be of any type
                  {{"TYPE", "dst"}, "+set\r\n"},
                  {{"TTL", "dst"}, Int(-1)},  // a new value: no expiry
                  {{"SMEMBERS", "dst"}, Bulks({"1", "2", "3"})},
                  {{"SDIFFSTORE", "a", "a", "b"}, Int(1)},  // a source as the destination
                  {{"SMEMBERS", "a"}, Bulks({"1"})},
                  {{"SINTERSTORE", "b", "b", "b"}, Int(3)},
                  {{"SMEMBERS", "b"}, Bulks({"2", "3", "4"})},
                  {{"SUNIONSTORE", "dst", "missing"}, Int(0)}});
  EXPECT_FALSE(h.store().contains("dst"));
}

TEST(CommandSets, Sintercard) {
  Harness h;
  h.Run({"SADD", "a", "a", "b", "c", "d", "e", "f"});
  h.Run({"SADD", "b", "b", "c", "d", "x", "y", "z"});
  ExpectSteps(h, {{{"SINTERCARD", "2", "a", "b"}, Int(3)},
                  {{"SINTERCARD", "2", "a", "b", "LIMIT", "2"}, Int(2)},
                  {{"SINTERCARD", "2", "a", "b", "limit", "0"}, Int(3)},  // 0: no limit
                  {{"SINTERCARD", "2", "a", "b", "LIMIT", "10"}, Int(3)},
                  {{"SINTERCARD", "2", "a", "b", "LIMIT", "1", "LIMIT", "0"}, Int(3)},  // the last counts
                  {{"SINTERCARD", "1", "a"}, Int(6)},
                  {{"SINTERCARD", "2", "a", "missing"}, Int(0)}});
}

TEST(CommandSets, SscanSmall) {
  Harness h;
  h.Run({"SADD", "k", "a", "b", "c"});
  const std::string page = Line('*', "2") + Bulk("0");
  ExpectSteps(h, {{{"SSCAN", "k", "0"}, page + Bulks({"a", "b", "c"})},
                  {{"SSCAN", "k", "0", "MATCH", "[ab]"}, page + Bulks({"a", "b"})},
                  {{"SSCAN", "k", "0", "match", "*", "COUNT", "1000"}, page + Bulks({"a", "b", "c"})},
                  {{"SSCAN", "k", "", "COUNT", "1"}, Line('*', "2") + Bulk(std::to_string(CursorOf("a") + 1)) +
                                                        Bulks({"a"})},
                  {{"SSCAN", "missing", "0"}, page + kEmpty}});
}

// ---- Large sets ------------------------------------------------------------------------

// Every command on sets of thousands of members (trees of several levels)
// against std::set, each within the worker's read rounds.
class LargeSets : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937 rng(21);
    for (int i = 0; i < 5000; ++i) ma_.push_back("member-" + std::to_string(i) + "-" + std::string(rng() % 60, 'y'));
    std::vector<std::string> shuffled = ma_;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    mb_.assign(shuffled.begin(), shuffled.begin() + 2000);
    for (int i = 0; i < 1000; ++i) mb_.push_back("only-b-" + std::to_string(i));
    h_.AddMany("a", ma_);
    h_.AddMany("b", mb_);
    sa_ = AsSet(ma_);
    sb_ = AsSet(mb_);
  }
  // Runs args and checks it stayed within the worker's rounds.
  std::string Run(const std::vector<std::string>& args) {
    std::string reply = h_.RunStrings(args);
    EXPECT_LE(h_.runs(), kMaxRuns - 2) << args[0] << ": read rounds";
    return reply;
  }
  static std::vector<std::string> Sorted(const std::set<std::string>& s) { return {s.begin(), s.end()}; }
  static std::set<std::string> Minus(const std::set<std::string>& x, const std::set<std::string>& y) {
    std::set<std::string> out;
    std::set_difference(x.begin(), x.end(), y.begin(), y.end(), std::inserter(out, out.end()));
    return out;
  }

  Harness h_;
  std::vector<std::string> ma_, mb_;
  std::set<std::string> sa_, sb_;
};

// PageCache keeps the headers of collections with pages; HasInteriorRoot
// tells them apart without decoding the root (a sorted set's second root is
// found by skipping the first).
TEST_F(LargeSets, HasInteriorRootTellsHeadersOfPagedCollections) {
  EXPECT_TRUE(HasInteriorRoot(h_.store().at("a")));
  h_.RunStrings({"SADD", "small", "x", "y"});
  EXPECT_FALSE(HasInteriorRoot(h_.store().at("small")));
  std::vector<std::string> zadd = {"ZADD", "z"};
  for (int i = 0; i < 3000; ++i) {
    zadd.push_back(std::to_string(i));
    zadd.push_back("member-" + std::to_string(i) + std::string(40, 'z'));
  }
  h_.RunStrings(zadd);
  EXPECT_TRUE(HasInteriorRoot(h_.store().at("z")));
  h_.RunStrings({"ZADD", "smallz", "1", "m", "2", std::string(500, 'n')});
  EXPECT_FALSE(HasInteriorRoot(h_.store().at("smallz")));
  std::string cut = h_.store().at("smallz");
  cut.resize(cut.size() - 100);  // the first root whole, the second cut
  EXPECT_FALSE(HasInteriorRoot(cut));
  EXPECT_FALSE(HasInteriorRoot("plain bytes"));
}

TEST_F(LargeSets, ReadsAndAlgebra) {
  EXPECT_GE(h_.Height("a"), 1u) << "the test wants a tree with pages";
  EXPECT_EQ(Run({"SCARD", "a"}), Int(5000));
  EXPECT_EQ(Run({"SMEMBERS", "a"}), Bulks(Sorted(sa_)));
  std::vector<std::string> probe = {"SMISMEMBER", "a"};
  std::string want = Line('*', "400");
  for (int i = 0; i < 300; ++i) {
    probe.push_back(ma_[static_cast<size_t>(i) * 16]);
    want += Int(1);
  }
  for (int i = 0; i < 100; ++i) {
    probe.push_back("absent-" + std::to_string(i));
    want += Int(0);
  }
  EXPECT_EQ(Run(probe), want);
  std::set<std::string> inter, uni = sa_;
  for (const std::string& m : sb_) (sa_.contains(m) ? inter : uni).insert(m);
  EXPECT_EQ(Run({"SINTER", "a", "b"}), Bulks(Sorted(inter)));
  EXPECT_EQ(Run({"SUNION", "a", "b"}), Bulks(Sorted(uni)));
  EXPECT_EQ(Run({"SDIFF", "a", "b"}), Bulks(Sorted(Minus(sa_, sb_))));
  EXPECT_EQ(Run({"SINTERCARD", "2", "a", "b"}), Int(2000));
  EXPECT_EQ(Run({"SINTERCARD", "2", "a", "b", "LIMIT", "123"}), Int(123));
  EXPECT_EQ(Run({"SUNIONSTORE", "dst", "a", "b"}), Int(6000));
  EXPECT_EQ(Run({"SCARD", "dst"}), Int(6000));
  EXPECT_EQ(Run({"SMEMBERS", "dst"}), Bulks(Sorted(uni)));
  EXPECT_EQ(Run({"SISMEMBER", "dst", "only-b-999"}), Int(1));
}

TEST_F(LargeSets, RemovalsPopsAndRandomMembers) {
  std::mt19937 rng(5);
  std::vector<std::string> gone = ma_;
  std::shuffle(gone.begin(), gone.end(), rng);
  gone.resize(2500);
  int64_t removed = 0;
  for (size_t from = 0; from < gone.size(); from += 250) {
    std::vector<std::string> args = {"SREM", "a"};
    args.insert(args.end(), gone.begin() + static_cast<long>(from), gone.begin() + static_cast<long>(from + 250));
    args.push_back("absent");
    std::string_view in;
    const std::string reply = Run(args);
    in = reply;
    removed += std::stoll(ParseReply(&in).text);
  }
  EXPECT_EQ(removed, 2500);
  for (const std::string& m : gone) sa_.erase(m);
  EXPECT_EQ(Run({"SCARD", "a"}), Int(2500));
  EXPECT_EQ(Run({"SMEMBERS", "a"}), Bulks(Sorted(sa_)));
  EXPECT_EQ(Run({"SDIFFSTORE", "dst", "b", "a"}), Int(static_cast<int64_t>(Minus(sb_, sa_).size())));
  EXPECT_EQ(Run({"SMEMBERS", "dst"}), Bulks(Sorted(Minus(sb_, sa_))));

  const std::vector<std::string> popped = Elements(Run({"SPOP", "a", "1000"}));
  EXPECT_EQ(AsSet(popped).size(), 1000u);
  for (const std::string& m : popped) EXPECT_EQ(sa_.erase(m), 1u) << m;
  EXPECT_EQ(Run({"SMEMBERS", "a"}), Bulks(Sorted(sa_)));
  std::vector<std::string> picks = Elements(Run({"SRANDMEMBER", "a", "2000"}));  // more than the set
  EXPECT_EQ(picks.size(), 1500u);
  EXPECT_EQ(AsSet(picks), sa_);
  picks = Elements(Run({"SRANDMEMBER", "a", "-3000"}));
  EXPECT_EQ(picks.size(), 3000u);
  for (const std::string& m : picks) EXPECT_TRUE(sa_.contains(m)) << m;
  EXPECT_LT(AsSet(picks).size(), 3000u);  // 3000 picks of 1500: repeats
  picks = Elements(Run({"SRANDMEMBER", "a", "7"}));  // a few: paths only
  EXPECT_EQ(AsSet(picks).size(), 7u);

  // Popping everything leaves neither the key nor a page.
  EXPECT_EQ(AsSet(Elements(Run({"SPOP", "a", "100000"}))), sa_);
  EXPECT_FALSE(h_.store().contains("a"));
  EXPECT_EQ(h_.PagesOf("a"), 0u);
}

TEST_F(LargeSets, RemovingEveryMemberOneBatchAtATimeDropsThePages) {
  std::vector<std::string> order = ma_;
  std::shuffle(order.begin(), order.end(), std::mt19937(9));
  for (size_t from = 0; from < order.size(); from += 500) {
    std::vector<std::string> args = {"SREM", "a"};
    args.insert(args.end(), order.begin() + static_cast<long>(from), order.begin() + static_cast<long>(from + 500));
    EXPECT_EQ(Run(args), Int(500));
  }
  EXPECT_FALSE(h_.store().contains("a"));
  EXPECT_EQ(h_.PagesOf("a"), 0u);
}

TEST_F(LargeSets, SscanReturnsEveryMemberOnce) {
  for (std::string count : {"10", "200", "100000"}) {
    std::vector<std::string> seen;
    std::string cursor = "0";
    int calls = 0;
    do {
      const std::string reply = Run({"SSCAN", "a", cursor, "COUNT", count});
      std::string_view in = reply;
      const Reply r = ParseReply(&in);
      ASSERT_EQ(r.items.size(), 2u) << reply;
      cursor = r.items[0].text;
      for (const Reply& m : r.items[1].items) seen.push_back(m.text);
    } while (cursor != "0" && ++calls < 10000);
    EXPECT_EQ(cursor, "0") << count;
    EXPECT_EQ(seen.size(), sa_.size()) << count;  // at most once each
    EXPECT_EQ(AsSet(seen), sa_) << count;
  }
  // MATCH filters what COUNT selected.
  std::set<std::string> seen, want;
  std::string cursor = "0";
  do {
    const std::string reply = Run({"SSCAN", "a", cursor, "MATCH", "member-1*", "COUNT", "100"});
    std::string_view in = reply;
    const Reply r = ParseReply(&in);
    cursor = r.items[0].text;
    for (const Reply& m : r.items[1].items) seen.insert(m.text);
  } while (cursor != "0");
  for (const std::string& m : sa_) {
    if (m.starts_with("member-1")) want.insert(m);
  }
  EXPECT_EQ(seen, want);
}

}  // namespace
}  // namespace rampart::proxy
