// Collection's decoded roots and pages kept in its DataView between the
// commands of one view (DataView::KeepDecoded): a later collection takes
// them only while they are what the view holds.
#include "proxy/collection.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "proxy/command_test_util.h"

namespace rampart::proxy {
namespace {

using testing::CommandHarness;

// A list of 2,000 elements of 100 bytes at "k": a root and pages.
CommandHarness ListOnPages() {
  CommandHarness h;
  for (int done = 0; done < 2000; done += 200) {
    std::vector<std::string> args = {"RPUSH", "k"};
    for (int i = done; i < done + 200; ++i) args.push_back(std::to_string(i) + std::string(100, 'x'));
    h.RunStrings(args);
  }
  EXPECT_GE(h.TreeHeight("k", ValueType::kList), 1u);
  return h;
}

Result<uint64_t> SizeOf(DataView& view) {
  RAMPART_ASSIGN_OR_RETURN(Collection list, Collection::Open(view, "k", ValueType::kList));
  return list.size();
}

TEST(CollectionKeptNodes, ALaterCollectionSeesEveryChangeOfAnEarlierOne) {
  CommandHarness h = ListOnPages();
  DataView view = h.View();
  for (int round = 0; round < 3; ++round) {
    auto list = Collection::Open(view, "k", ValueType::kList);
    ASSERT_TRUE(list.ok()) << list.status().ToString();
    ASSERT_EQ(list->size(), 2000u + round);
    ASSERT_TRUE(list->tree().InsertAt(0, "", "new").ok());
    ASSERT_TRUE(list->Save().ok());
  }
  auto list = Collection::Open(view, "k", ValueType::kList);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2003u);
  auto first = list->tree().At(0);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->value, "new");
  auto last = list->tree().At(2002);
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->value, "1999" + std::string(100, 'x'));
}

// Two collections of one key in one command: the one that saved last is
// destroyed first, and the other, whose roots and pages are now stale,
// offers them afterwards. The next collection must not take those.
TEST(CollectionKeptNodes, StaleRootsAndPagesOfAnOutdatedCollectionAreNeverTaken) {
  CommandHarness h = ListOnPages();
  DataView view = h.View();
  {
    auto stale = Collection::Open(view, "k", ValueType::kList);
    ASSERT_TRUE(stale.ok());
    ASSERT_TRUE(stale->tree().At(1999).ok());  // loads the last page too
    {
      auto fresh = Collection::Open(view, "k", ValueType::kList);
      ASSERT_TRUE(fresh.ok());
      ASSERT_TRUE(fresh->tree().EraseRange(1000, 1000).ok());
      ASSERT_TRUE(fresh->Save().ok());
    }  // fresh keeps its nodes, then stale offers its own
  }
  auto size = SizeOf(view);
  ASSERT_TRUE(size.ok()) << size.status().ToString();
  EXPECT_EQ(*size, 1000u);
  // Bytes written without a collection (a raw Put) outdate kept nodes too.
  ASSERT_EQ(*SizeOf(view), 1000u);  // leaves its roots kept
  auto stored = view.Raw("k");
  ASSERT_TRUE(stored.ok() && stored->has_value());
  const std::string header(**stored);
  {
    auto shorter = Collection::Open(view, "k", ValueType::kList);
    ASSERT_TRUE(shorter.ok());
    ASSERT_TRUE(shorter->tree().EraseRange(0, 1).ok());
    ASSERT_TRUE(shorter->Save().ok());
  }  // keeps the roots of 999 elements
  view.Put("k", header);  // back to the header of 1,000
  EXPECT_EQ(*SizeOf(view), 1000u);
}

// A header Open refuses (trailing bytes here) leaves no roots behind: a
// later Open of it on the same view is refused as well.
TEST(CollectionKeptNodes, ARefusedHeaderKeepsNoRoots) {
  CommandHarness h = ListOnPages();
  DataView view = h.View();
  auto stored = view.Raw("k");
  ASSERT_TRUE(stored.ok() && stored->has_value());
  view.Put("k", std::string(**stored) + "x");
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto list = Collection::Open(view, "k", ValueType::kList);
    ASSERT_FALSE(list.ok()) << "attempt " << attempt;
    EXPECT_NE(list.status().message().find("trailing"), std::string_view::npos)
        << list.status().ToString();
  }
}

}  // namespace
}  // namespace rampart::proxy
