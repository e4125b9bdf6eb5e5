// Keyspace notification classes (notify.h) against Redis 7.0.15's spelling,
// and the events a DataView records by itself: "new" and "expired".
#include "proxy/notify.h"

#include <gtest/gtest.h>

#include "proxy/data_view.h"
#include "proxy/internal_keys.h"
#include "proxy/value_codec.h"

namespace rampart::proxy {
namespace {

constexpr uint64_t kNow = 1'000'000;

std::string Flags(std::string_view classes) { return notify::FormatFlags(*notify::ParseFlags(classes)); }

TEST(Notify, ParsesAndSpellsAsRedis) {
  // Redis's own CONFIG GET/SET test (unit/pubsub): what it reads back.
  EXPECT_EQ(Flags("gKE"), "gKE");
  EXPECT_EQ(Flags("$lshzxeKE"), "$lshzxeKE");
  EXPECT_EQ(Flags("KA"), "AK");
  EXPECT_EQ(Flags("EA"), "AE");
  EXPECT_EQ(Flags(""), "");
  EXPECT_EQ(Flags("mEn"), "nEm");
  EXPECT_EQ(Flags("g$lshzxetdKEmn"), "AKEm");  // every class: "A", and n unspelt as in Redis
  EXPECT_EQ(*notify::ParseFlags("An") & notify::kNew, notify::kNew);  // though it is on
  EXPECT_EQ(*notify::ParseFlags("A"), notify::kAll);
  EXPECT_EQ(*notify::ParseFlags("KK"), notify::kKeyspace);
  EXPECT_FALSE(notify::ParseFlags("KEQ").has_value());
  EXPECT_FALSE(notify::ParseFlags("k").has_value());  // case matters
  EXPECT_FALSE(notify::ParseFlags(" ").has_value());
}

TEST(Notify, PublishesOnlyWithKOrEAndAClass) {
  EXPECT_FALSE(notify::Publishing(*notify::ParseFlags("A")));
  EXPECT_FALSE(notify::Publishing(*notify::ParseFlags("KE")));
  EXPECT_TRUE(notify::Publishing(*notify::ParseFlags("Kg")));
  EXPECT_TRUE(notify::Publishing(*notify::ParseFlags("Em")));
  EXPECT_EQ(notify::KeyspaceChannel("foo"), "__keyspace@0__:foo");
  EXPECT_EQ(notify::KeyeventChannel("del"), "__keyevent@0__:del");
}

std::vector<std::string> Events(const DataView& view) {
  std::vector<std::string> out;
  for (const DataView::Event& e : view.events()) out.push_back(std::string(e.name) + " " + e.key);
  return out;
}

using Strings = std::vector<std::string>;

TEST(Notify, ViewRecordsOnlyTheClassesAsked) {
  DataView view(kNow);
  view.Notify(notify::kGeneric, "del", "a");  // flags 0: nothing
  view.set_notify_flags(*notify::ParseFlags("Kl"));
  view.Notify(notify::kGeneric, "del", "a");
  view.Notify(notify::kList, "lpush", "b");
  EXPECT_EQ(Events(view), (Strings{"lpush b"}));
  DataView silent(kNow);
  silent.set_notify_flags(*notify::ParseFlags("A"));  // no K, no E: nothing is published
  silent.Notify(notify::kList, "lpush", "b");
  EXPECT_TRUE(silent.events().empty());
}

TEST(Notify, ViewRecordsNewAndExpired) {
  DataView view(kNow);
  view.set_notify_flags(*notify::ParseFlags("KEA") | notify::kNew);
  view.Seed("absent", std::nullopt);
  view.Seed("live", EncodeString("v", 0));
  view.Seed("expired", EncodeString("v", kNow - 1));
  view.Seed("expired2", EncodeString("v", kNow));
  view.Put("absent", EncodeString("x", 0));
  view.Put("absent", EncodeString("y", 0));  // live now: no second "new"
  view.Put("live", EncodeString("x", 0));
  view.Put("expired", EncodeString("x", 0));
  view.Delete("expired2");
  view.Put("blind", EncodeString("x", 0));   // not held: whether it existed is not known
  view.Delete("live");
  view.Put("live", EncodeString("z", 0));    // deleted in this view, then added again
  view.Put(PageKey(7, 1, "absent"), "page");  // internal keys send nothing
  EXPECT_EQ(Events(view), (Strings{"new absent", "expired expired", "new expired", "expired expired2",
                                    "new live"}));
}

TEST(Notify, ViewLeavesNewAndExpiredToTheirClasses) {
  DataView view(kNow);
  view.set_notify_flags(*notify::ParseFlags("Kg"));
  view.Seed("absent", std::nullopt);
  view.Seed("expired", EncodeString("v", kNow - 1));
  view.Put("absent", EncodeString("x", 0));
  view.Put("expired", EncodeString("x", 0));
  EXPECT_TRUE(view.events().empty());
}

}  // namespace
}  // namespace rampart::proxy
