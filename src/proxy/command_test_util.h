// Test-only: shared by the command tests (commands_test.cc,
// commands_lists_test.cc, commands_sets_test.cc); include it from *_test.cc
// files only, never from the proxy library.
//
// Contract:
//   - Reply builders: the exact RESP bytes a command must write (Line, Bulk,
//     Int, Arr, Err, Bulks, Ints) and the common replies and error texts of
//     Redis 7.0 (kOk, kNil, kSyntax, ...).
//   - Store: what the kv holds, by key; a key not listed is absent.
//   - CommandHarness: a Store and the worker's way of running one data
//     command on it (Worker::ApplyCommands): the command runs on a DataView
//     seeded with the keys it declares (KeysOf); while it asks for keys the
//     view does not hold (missing()), it runs again on a fresh view seeded
//     with those as well, giving up after kMaxRuns runs as the worker does;
//     then the last run's writes go into the store. A read command that
//     writes fails the test.
// Every definition is inline: several test files of one binary include it.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/collection.h"
#include "proxy/commands.h"
#include "proxy/data_view.h"
#include "proxy/resp.h"
#include "proxy/value_codec.h"

namespace rampart::proxy::testing {

inline constexpr uint64_t kNow = 1'700'000'000'000;  // every view's clock, unix ms
// The worker gives up on a command that ran this many times (kMaxReadRounds).
inline constexpr int kMaxRuns = 10;

// ---- Replies ---------------------------------------------------------------

inline const std::string kOk = "+OK\r\n";
inline const std::string kNil = "$-1\r\n";       // RESP2 nil bulk
inline const std::string kNilArray = "*-1\r\n";  // RESP2 nil array
inline const std::string kNull3 = "_\r\n";       // RESP3 null, both

inline std::string Line(char type, std::string_view text) {
  std::string line(1, type);
  line.append(text).append("\r\n");
  return line;
}
inline std::string Bulk(std::string_view s) { return Line('$', std::to_string(s.size())).append(s).append("\r\n"); }
inline std::string Int(int64_t v) { return Line(':', std::to_string(v)); }
inline std::string Arr(size_t n) { return Line('*', std::to_string(n)); }
inline std::string Err(std::string_view message) { return Line('-', message); }
// An array ('*') or RESP3 set ('~') of bulk strings, in the order given; any
// container of strings, or a braced list of them.
template <typename Strings = std::vector<std::string>>
std::string Bulks(const Strings& elements, char type = '*') {
  std::string reply = Line(type, std::to_string(elements.size()));
  for (const auto& e : elements) reply += Bulk(e);
  return reply;
}
inline std::string Ints(const std::vector<int64_t>& values) {
  std::string reply = Arr(values.size());
  for (int64_t v : values) reply += Int(v);
  return reply;
}

inline const std::string kWrongTypeReply = Err(kWrongType);
inline const std::string kSyntax = Err("ERR syntax error");
inline const std::string kNotInteger = Err("ERR value is not an integer or out of range");
inline const std::string kNotPositive = Err("ERR value is out of range, must be positive");
inline const std::string kNotFloat = Err("ERR value is not a valid float");

// ---- The worker's loop -----------------------------------------------------

// What the kv holds (what a read round returns), by key; a key not listed is
// absent.
using Store = std::map<std::string, std::string, std::less<>>;

// A store and the worker's way of running a data command on it.
class CommandHarness {
 public:
  void Put(std::string_view key, std::string stored) { store_[std::string(key)] = std::move(stored); }
  void Erase(std::string_view key) { store_.erase(std::string(key)); }
  const Store& store() const { return store_; }
  // The kv tier's value limit the views know (DataView::set_max_value_bytes):
  // longer strings go in chunks. 0 (the default): never.
  void set_max_value_bytes(uint64_t n) { max_value_bytes_ = n; }

  // Runs args until it needs no key the view does not hold, each run on a
  // fresh view seeded with the declared keys and every key the runs before
  // asked for; stores the last run's writes; its reply.
  std::string Run(const std::vector<std::string_view>& args, int protocol = 2) {
    const CommandSpec* spec = FindCommand(args[0]);
    if (spec != nullptr) {
      EXPECT_EQ(CheckArity(*spec, args), "");
    }
    std::vector<std::string> replies = RunCommands({args}, protocol);
    return replies.empty() ? "" : replies[0];
  }
  std::string RunStrings(const std::vector<std::string>& args, int protocol = 2) {
    return Run(std::vector<std::string_view>(args.begin(), args.end()), protocol);
  }

  // Runs `commands` in order on one view, as the worker runs a read-modify-
  // write and the commands joined to it (what one leaves in the view, the
  // next sees, decoded pages included), all again on a fresh view while any
  // asks for keys the view does not hold; stores the writes; the replies.
  std::vector<std::string> RunOnOneView(const std::vector<std::vector<std::string>>& commands) {
    std::vector<std::vector<std::string_view>> views;
    for (const std::vector<std::string>& c : commands) views.emplace_back(c.begin(), c.end());
    return RunCommands(views);
  }

  // A fresh view holding everything the store holds.
  DataView View() const {
    DataView view(kNow);
    view.set_max_value_bytes(max_value_bytes_);
    for (const auto& [k, stored] : store_) view.Seed(k, stored);
    return view;
  }

  int runs() const { return runs_; }               // of the last command
  size_t keys_read() const { return keys_read_; }  // by the last command's last run

  // The height of the tree of the collection of `type` at `key` (0: the root
  // is its only node); a key holding no such collection fails the test.
  uint32_t TreeHeight(std::string_view key, ValueType type) const {
    DataView view = View();
    auto collection = Collection::Open(view, key, type);
    EXPECT_TRUE(collection.ok()) << collection.status().ToString();
    return collection.ok() ? collection->tree().root().height : 0;
  }

 private:
  // Run's and RunOnOneView's loop: the commands on fresh views seeded with
  // their declared keys and every key a run before asked for, until none
  // asks for more (at most kMaxRuns runs); the last run's writes stored (a
  // group of read commands must write nothing); the replies, or none.
  std::vector<std::string> RunCommands(const std::vector<std::vector<std::string_view>>& commands,
                                       int protocol = 2) {
    std::vector<std::string> keys;
    bool read_only = true;
    for (const std::vector<std::string_view>& args : commands) {
      const CommandSpec* spec = FindCommand(args[0]);
      if (spec == nullptr || spec->apply == nullptr) {
        ADD_FAILURE() << "not a data command: " << args[0];
        return {};
      }
      read_only = read_only && spec->kind == CommandKind::kRead;
      for (std::string_view k : KeysOf(*spec, args)) keys.emplace_back(k);
    }
    ++seed_;
    for (runs_ = 1; runs_ <= kMaxRuns; ++runs_) {
      DataView view(kNow, seed_);  // one seed for every run, as the worker does
      view.set_max_value_bytes(max_value_bytes_);
      for (const std::string& k : keys) {
        auto it = store_.find(k);
        view.Seed(k, it == store_.end() ? std::nullopt : std::optional<std::string>(it->second));
      }
      std::vector<std::string> replies;
      for (const std::vector<std::string_view>& args : commands) {
        resp::Writer out(&replies.emplace_back());
        out.SetProtocol(protocol);
        FindCommand(args[0])->apply(args, view, out);
      }
      if (!view.missing().empty()) {
        keys.insert(keys.end(), view.missing().begin(), view.missing().end());
        continue;
      }
      keys_read_ = keys.size();
      Commit(view, read_only);
      return replies;
    }
    ADD_FAILURE() << FirstName(commands) << " still missing keys after " << kMaxRuns << " runs";
    return {};
  }
  static std::string_view FirstName(const std::vector<std::vector<std::string_view>>& commands) {
    return commands.empty() ? std::string_view() : commands[0][0];
  }

  void Commit(const DataView& view, bool read_only) {
    for (const auto& [key, entry] : view.entries()) {
      if (!entry.dirty) continue;
      EXPECT_FALSE(read_only) << "a read command wrote a key of " << key.size() << " bytes";
      if (entry.stored.has_value()) {
        store_[key] = *entry.stored;
      } else {
        store_.erase(key);
      }
    }
  }

  Store store_;
  uint64_t max_value_bytes_ = 0;
  uint64_t seed_ = 0;
  int runs_ = 0;
  size_t keys_read_ = 0;
};

}  // namespace rampart::proxy::testing
