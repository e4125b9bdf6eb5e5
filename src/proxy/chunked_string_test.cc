// Chunked strings: the header format, and the commands on a string longer
// than the kv tier's value limit through DataView (split by Put, joined by
// Find), with a limit of 64 bytes so that a few hundred bytes make chunks.
#include "proxy/chunked_string.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>

#include "proxy/command_test_util.h"
#include "proxy/commands_internal.h"
#include "proxy/internal_keys.h"

namespace rampart::proxy {
namespace {

using testing::Bulk;
using testing::CommandHarness;
using testing::Err;
using testing::Int;
using testing::kNil;
using testing::kOk;
using testing::kWrongTypeReply;

constexpr uint64_t kLimit = 64;  // stored values longer than this go in chunks

TEST(ChunkedHeader, RoundTripsAndRefusesDamage) {
  const ChunkedHeader h{.expire_at_ms = 123, .id = 77, .length = 1000, .chunk_bytes = 64};
  const std::string stored = EncodeChunkedHeader(h);
  ASSERT_EQ(stored.size(), kStoredHeaderBytes + 20);
  EXPECT_EQ(stored[0], 'B');
  auto v = DecodeStored(stored);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->type, ValueType::kChunkedString);
  EXPECT_EQ(RedisTypeName(v->type), "string");
  auto back = DecodeChunkedHeader(*v);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->expire_at_ms, 123u);
  EXPECT_EQ(back->id, 77u);
  EXPECT_EQ(back->length, 1000u);
  EXPECT_EQ(back->chunk_bytes, 64u);
  EXPECT_EQ(ChunkCount(*back), 16u);
  EXPECT_EQ(ChunkLength(*back, 0), 64u);
  EXPECT_EQ(ChunkLength(*back, 15), 1000u - 15 * 64);
  EXPECT_EQ(ChunkKey(*back, 0, "k"), PageKey(77, 1, "k"));

  StoredValue short_payload = *v;
  short_payload.payload.remove_suffix(1);
  EXPECT_EQ(DecodeChunkedHeader(short_payload).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(DecodeChunkedHeader(*DecodeStored(EncodeChunkedHeader({0, 0, 10, 4}))).status().code(),
            StatusCode::kCorruption);  // id 0
  EXPECT_EQ(DecodeChunkedHeader(*DecodeStored(EncodeChunkedHeader({0, 5, 10, 0}))).status().code(),
            StatusCode::kCorruption);  // chunk size 0
}

TEST(ChunkedHeader, ChunkBytesAreWholePagesUnderTheLimit) {
  EXPECT_EQ(ChunkBytesFor(1 << 20), 1u << 20);
  EXPECT_EQ(ChunkBytesFor((1 << 20) + 100), 1u << 20);
  EXPECT_EQ(ChunkBytesFor(10000), 8192u);
  EXPECT_EQ(ChunkBytesFor(3000), 3000u);
  EXPECT_EQ(ChunkBytesFor(0), 0u);
}

std::string Text(size_t n, char salt = 'a') {
  std::string s;
  for (size_t i = 0; i < n; ++i) s.push_back(static_cast<char>(salt + i % 23));
  return s;
}

// The header at `key` in the store, decoded (the test fails when there is none).
ChunkedHeader HeaderIn(const CommandHarness& h, std::string_view key) {
  auto it = h.store().find(key);
  if (it == h.store().end()) {
    ADD_FAILURE() << "no value at " << key;
    return {};
  }
  auto v = DecodeStored(it->second);
  auto header = v.ok() ? DecodeChunkedHeader(*v) : Result<ChunkedHeader>(v.status());
  if (!header.ok()) {
    ADD_FAILURE() << "not a chunked string at " << key << ": " << header.status().ToString();
    return {};
  }
  return *header;
}

class ChunkedStringTest : public ::testing::Test {
 protected:
  void SetUp() override { h_.set_max_value_bytes(kLimit); }

  // The keys `args` writes (or deletes) when run on a view of the whole
  // store; the store is left as it is.
  std::set<std::string> Writes(const std::vector<std::string>& args) {
    DataView view = h_.View();
    std::string reply;
    resp::Writer out(&reply);
    FindCommand(args[0])->apply(std::vector<std::string_view>(args.begin(), args.end()), view, out);
    EXPECT_TRUE(view.missing().empty());
    std::set<std::string> written;
    for (const auto& [key, entry] : view.entries()) {
      if (entry.dirty) written.insert(key);
    }
    return written;
  }

  CommandHarness h_;
};

TEST_F(ChunkedStringTest, SetSplitsAndGetJoins) {
  const std::string value = Text(300);
  EXPECT_EQ(h_.Run({"SET", "k", value}), kOk);
  const ChunkedHeader header = HeaderIn(h_, "k");
  EXPECT_EQ(header.length, 300u);
  EXPECT_EQ(header.chunk_bytes, kLimit);
  ASSERT_EQ(ChunkCount(header), 5u);
  EXPECT_EQ(h_.store().size(), 6u);  // the header and five chunks
  for (uint64_t i = 0; i < 5; ++i) {
    EXPECT_EQ(h_.store().at(ChunkKey(header, i, "k")), value.substr(i * kLimit, kLimit)) << i;
  }
  EXPECT_EQ(h_.Run({"GET", "k"}), Bulk(value));
  EXPECT_EQ(h_.runs(), 2);  // the header, then the chunks in one more round
  EXPECT_EQ(h_.Run({"GETRANGE", "k", "60", "70"}), Bulk(value.substr(60, 11)));
  EXPECT_EQ(h_.keys_read(), 3u);  // the header and the two chunks the range crosses
  EXPECT_EQ(h_.Run({"GETRANGE", "k", "-5", "-1"}), Bulk(value.substr(295)));
  EXPECT_EQ(h_.keys_read(), 2u);
  EXPECT_EQ(h_.Run({"GETRANGE", "k", "0", "-1"}), Bulk(value));
  EXPECT_EQ(h_.Run({"GETRANGE", "k", "400", "500"}), Bulk(""));
  EXPECT_EQ(h_.Run({"TYPE", "k"}), "+string\r\n");
  EXPECT_EQ(h_.Run({"OBJECT", "ENCODING", "k"}), Bulk("raw"));

  // A value that fits stays whole.
  const std::string small = Text(kLimit - kStoredHeaderBytes);
  EXPECT_EQ(h_.Run({"SET", "s", small}), kOk);
  EXPECT_EQ(DecodeStored(h_.store().at("s"))->type, ValueType::kString);
}

TEST_F(ChunkedStringTest, HeaderOnlyCommandsReadNoChunk) {
  ASSERT_EQ(h_.Run({"SET", "k", Text(300)}), kOk);
  EXPECT_EQ(h_.Run({"STRLEN", "k"}), Int(300));
  EXPECT_EQ(h_.runs(), 1);
  EXPECT_EQ(h_.Run({"EXISTS", "k"}), Int(1));
  EXPECT_EQ(h_.runs(), 1);
  EXPECT_EQ(h_.Run({"LPUSH", "k", "x"}), kWrongTypeReply);
  EXPECT_EQ(h_.runs(), 1);
  EXPECT_EQ(Writes({"EXPIRE", "k", "100"}), std::set<std::string>{"k"});  // the chunks stay
  EXPECT_EQ(h_.Run({"EXPIRE", "k", "100"}), Int(1));
  EXPECT_EQ(h_.runs(), 1);
  EXPECT_EQ(h_.Run({"TTL", "k"}), Int(100));
  EXPECT_EQ(h_.Run({"GET", "k"}), Bulk(Text(300)));
  EXPECT_EQ(h_.Run({"PERSIST", "k"}), Int(1));
  EXPECT_EQ(h_.Run({"TTL", "k"}), Int(-1));
  EXPECT_EQ(h_.Run({"GET", "k"}), Bulk(Text(300)));
}

TEST_F(ChunkedStringTest, ChangesRewriteOnlyTheChunksTheyTouch) {
  std::string value = Text(300);
  ASSERT_EQ(h_.Run({"SET", "k", value}), kOk);
  const ChunkedHeader header = HeaderIn(h_, "k");

  // Every change rewrites the header too: its version is the string's (WATCH).
  EXPECT_EQ(Writes({"APPEND", "k", "xyz"}), (std::set<std::string>{"k", ChunkKey(header, 4, "k")}));
  EXPECT_EQ(h_.Run({"APPEND", "k", "xyz"}), Int(303));
  EXPECT_EQ(h_.keys_read(), 2u);  // the header and the last chunk, not the string
  value += "xyz";
  EXPECT_EQ(HeaderIn(h_, "k").id, header.id);

  ASSERT_EQ(h_.Run({"SET", "full", Text(320)}), kOk);  // five full chunks
  EXPECT_EQ(h_.Run({"APPEND", "full", "!"}), Int(321));
  EXPECT_EQ(h_.keys_read(), 1u);  // a full last chunk is not read
  EXPECT_EQ(h_.Run({"GET", "full"}), Bulk(Text(320) + "!"));
  ASSERT_EQ(h_.Run({"DEL", "full"}), Int(1));

  EXPECT_EQ(Writes({"SETRANGE", "k", "130", "QQ"}), (std::set<std::string>{"k", ChunkKey(header, 2, "k")}));
  EXPECT_EQ(h_.Run({"SETRANGE", "k", "130", "QQ"}), Int(303));
  value.replace(130, 2, "QQ");

  EXPECT_EQ(Writes({"APPEND", "k", Text(100, 'b')}),  // two chunks more
            (std::set<std::string>{"k", ChunkKey(header, 4, "k"), ChunkKey(header, 5, "k"),
                                   ChunkKey(header, 6, "k")}));
  EXPECT_EQ(h_.Run({"APPEND", "k", Text(100, 'b')}), Int(403));
  value += Text(100, 'b');
  EXPECT_EQ(h_.Run({"GET", "k"}), Bulk(value));

  // Shorter, still chunked (SET ... GET reads the old header): the tail
  // chunks are deleted, under the same id.
  EXPECT_EQ(h_.Run({"SET", "k", Text(100), "GET"}), Bulk(value));
  EXPECT_EQ(HeaderIn(h_, "k").id, header.id);
  EXPECT_EQ(h_.store().size(), 3u);
  EXPECT_EQ(h_.Run({"GET", "k"}), Bulk(Text(100)));
}

// SETRANGE, SETBIT, GETBIT, BITCOUNT and BITPOS of a long string read (and
// write) only the chunks of the part they touch, and answer as they do on
// the same string stored whole (a harness that never chunks).
TEST_F(ChunkedStringTest, PartsAreReadAndWrittenByTheirChunks) {
  CommandHarness whole;  // the model: the same commands on an unchunked string
  auto both = [&](const std::vector<std::string>& args) {
    const std::string reply = h_.RunStrings(args);
    EXPECT_EQ(reply, whole.RunStrings(args)) << [&] {
      std::string text;
      for (const std::string& arg : args) text += (arg.size() > 40 ? arg.substr(0, 40) + "..." : arg) + " ";
      return text;
    }();
    return reply;
  };
  both({"SET", "k", Text(300)});  // chunks 0..4 of 64 bytes, the last of 44
  const ChunkedHeader header = HeaderIn(h_, "k");
  EXPECT_EQ(Writes({"SETRANGE", "k", "130", "QQ"}), (std::set<std::string>{"k", ChunkKey(header, 2, "k")}));
  both({"SETRANGE", "k", "130", "QQ"});
  EXPECT_EQ(h_.keys_read(), 2u);  // the header and chunk 2
  EXPECT_EQ(Writes({"SETRANGE", "k", "130", "QQ"}), (std::set<std::string>{"k"}));  // same bytes
  both({"SETRANGE", "k", "126", "ABCD"});  // across chunks 1 and 2
  EXPECT_EQ(h_.keys_read(), 3u);
  EXPECT_EQ(both({"SETBIT", "k", "801", "1"}), Int(1));  // byte 100: 'a' + 100 % 23
  EXPECT_EQ(h_.keys_read(), 2u);
  both({"GETBIT", "k", "1000"});
  EXPECT_EQ(h_.keys_read(), 2u);
  both({"GETBIT", "k", "100000"});  // past the end: no chunk
  EXPECT_EQ(h_.keys_read(), 1u);
  both({"BITCOUNT", "k", "100", "110"});
  EXPECT_EQ(h_.keys_read(), 2u);
  both({"BITPOS", "k", "1", "200", "-1", "BYTE"});
  EXPECT_EQ(h_.keys_read(), 3u);  // chunks 3 and 4
  EXPECT_EQ(Writes({"SETBIT", "k", "2500", "1"}),  // byte 312, past the end: chunk 4 grows
            (std::set<std::string>{"k", ChunkKey(header, 4, "k")}));
  both({"SETRANGE", "k", "700", "far"});  // zeros from 300 to 700, chunks 4..10
  EXPECT_EQ(h_.keys_read(), 2u);
  EXPECT_EQ(HeaderIn(h_, "k").id, header.id);
  // Random parts against the model: places near the end and the chunk
  // boundaries, runs of ones (BITPOS 0 without an end), every argument shape,
  // the expiry kept; now and then the string set anew at another length.
  std::mt19937 rng(7);
  auto near = [&](uint64_t len) {  // a byte offset around the end or a chunk boundary
    const uint64_t anchor = rng() % 2 ? len : (len / kLimit + rng() % 3) * kLimit;
    return std::to_string(std::max<int64_t>(0, static_cast<int64_t>(anchor + rng() % 5) - 2));
  };
  auto signed_at = [&](uint64_t len, int scale) {  // a start or end of a range, any sign
    const int64_t span = static_cast<int64_t>(len) * scale + 10;
    return std::to_string(static_cast<int64_t>(rng() % (2 * span)) - span);
  };
  both({"PEXPIRE", "k", "100000"});
  for (int n = 0; n < 600; ++n) {
    const uint64_t len = static_cast<uint64_t>(std::stoll(h_.Run({"STRLEN", "k"}).substr(1)));
    const bool bits = rng() % 2;
    const std::string unit = bits ? "BIT" : "BYTE", a = signed_at(len, bits ? 8 : 1),
                      b = signed_at(len, bits ? 8 : 1);
    switch (rng() % 10) {
      case 0: both({"SETRANGE", "k", near(len), Text(1 + rng() % 150, 'A')}); break;
      case 1: both({"SETRANGE", "k", near(len), std::string(1 + rng() % 100, '\xff')}); break;
      case 2: {
        const std::string bit = std::to_string(std::stoll(near(len)) * 8 + rng() % 8);
        both({"SETBIT", "k", bit, std::to_string(rng() % 2)});
        break;
      }
      case 3: both({"GETBIT", "k", std::to_string(rng() % (len * 8 + 64))}); break;
      case 4: both({"BITCOUNT", "k", a, b, unit}); break;
      case 5: both({"BITCOUNT", "k", a, b}); break;
      case 6: both({"BITPOS", "k", std::to_string(rng() % 2), a, b, unit}); break;
      case 7: both({"BITPOS", "k", std::to_string(rng() % 2), a, rng() % 2 ? b : "-1"}); break;
      case 8: both({"BITPOS", "k", std::to_string(rng() % 2), a}); break;
      default:
        if (rng() % 8 == 0) {
          both({"SET", "k", Text(kLimit + rng() % 500, 'a' + rng() % 3), "KEEPTTL"});
        } else {
          both({"APPEND", "k", Text(rng() % 20)});
        }
        break;
    }
  }
  both({"GET", "k"});
  both({"BITCOUNT", "k"});
  both({"PTTL", "k"});
  // What the store holds: the header and exactly its chunks, each as long as it must be.
  const ChunkedHeader last = HeaderIn(h_, "k");
  EXPECT_EQ(h_.store().size(), 1 + ChunkCount(last));
  for (uint64_t i = 0; i < ChunkCount(last); ++i) {
    auto it = h_.store().find(ChunkKey(last, i, "k"));
    ASSERT_NE(it, h_.store().end()) << i;
    EXPECT_EQ(it->second.size(), ChunkLength(last, i)) << i;
  }
}

TEST_F(ChunkedStringTest, DeleteAndOverwriteTakeTheChunksAlong) {
  ASSERT_EQ(h_.Run({"SET", "k", Text(300)}), kOk);
  EXPECT_EQ(h_.Run({"DEL", "k"}), Int(1));
  EXPECT_TRUE(h_.store().empty());

  ASSERT_EQ(h_.Run({"SET", "k", Text(300)}), kOk);
  EXPECT_EQ(h_.Run({"SET", "k", "short", "GET"}), Bulk(Text(300)));
  EXPECT_EQ(h_.store().size(), 1u);
  EXPECT_EQ(h_.Run({"GET", "k"}), Bulk("short"));

  ASSERT_EQ(h_.Run({"SET", "k", Text(300)}), kOk);
  EXPECT_EQ(h_.Run({"RPUSH", "k", "x"}), kWrongTypeReply);
  ASSERT_EQ(h_.Run({"SET", "k", Text(300), "GET"}), Bulk(Text(300)));
  EXPECT_EQ(h_.Run({"GETDEL", "k"}), Bulk(Text(300)));
  EXPECT_TRUE(h_.store().empty());
}

TEST_F(ChunkedStringTest, CopyAndRenameWriteChunksUnderTheDestination) {
  const std::string value = Text(200);
  ASSERT_EQ(h_.Run({"SET", "a", value}), kOk);
  EXPECT_EQ(h_.Run({"COPY", "a", "b"}), Int(1));
  EXPECT_EQ(h_.Run({"RENAME", "a", "c"}), kOk);
  EXPECT_EQ(h_.Run({"GET", "a"}), kNil);
  EXPECT_EQ(h_.Run({"GET", "b"}), Bulk(value));
  EXPECT_EQ(h_.Run({"GET", "c"}), Bulk(value));
  // Nothing of a's is left: two strings of four chunks each.
  EXPECT_EQ(h_.store().size(), 10u);
  for (const auto& [key, stored] : h_.store()) {
    if (IsInternalKey(key)) {
      EXPECT_NE(ParsePageKey(key).user_key, "a");
    }
  }
}

TEST_F(ChunkedStringTest, AMissingChunkIsDamageNotAnEmptyString) {
  ASSERT_EQ(h_.Run({"SET", "k", Text(300)}), kOk);
  h_.Erase(ChunkKey(HeaderIn(h_, "k"), 1, "k"));
  const std::string reply = h_.Run({"GET", "k"});
  EXPECT_EQ(reply.rfind("-ERR rampart: the string at \"k\" is damaged: chunk 1 of 5 is missing", 0), 0u)
      << reply;
}

TEST_F(ChunkedStringTest, TheSweeperKeepsTheChunksOfTheLiveString) {
  ASSERT_EQ(h_.Run({"SET", "k", Text(300)}), kOk);
  const ChunkedHeader old = HeaderIn(h_, "k");
  // A blind SET (the worker reads nothing for it) cannot know the old
  // chunks: it writes under a new id and leaves them to the sweeper.
  DataView blind(testing::kNow, 99);
  blind.set_max_value_bytes(kLimit);
  blind.Put("k", EncodeString(Text(200, 'c'), 0));
  for (const auto& [key, entry] : blind.entries()) {
    ASSERT_TRUE(entry.dirty && entry.stored.has_value());
    h_.Put(key, *entry.stored);
  }
  const ChunkedHeader now = HeaderIn(h_, "k");
  ASSERT_NE(now.id, old.id);
  EXPECT_EQ(h_.store().size(), 1u + 5 + 4);
  EXPECT_EQ(h_.Run({"GET", "k"}), Bulk(Text(200, 'c')));

  auto sweep = [&](const ChunkedHeader& h) {
    std::vector<std::string> args{"rampart-sweep-pages", "k", std::to_string(h.id)};
    for (uint64_t i = 0; i < ChunkCount(h); ++i) args.push_back(ChunkKey(h, i, "k"));
    // Only the header is read: stale chunks are deleted unread.
    EXPECT_EQ(internal::SweepPagesKeys(std::vector<std::string_view>(args.begin(), args.end())),
              std::vector<std::string_view>{"k"});
    DataView view = h_.View();
    std::string reply;
    resp::Writer out(&reply);
    internal::DeleteStalePages(std::vector<std::string_view>(args.begin(), args.end()), view, out);
    size_t deleted = 0;
    for (const auto& [key, entry] : view.entries()) deleted += entry.dirty && !entry.stored.has_value();
    return deleted;
  };
  EXPECT_EQ(sweep(now), 0u);
  EXPECT_EQ(sweep(old), 5u);
}

TEST_F(ChunkedStringTest, AnExpiredStringsIdIsNotTakenAgain) {
  // An expired long string at k: any proxy's sweeper may be deleting its
  // chunks, so a new long string there takes a new id (and drops them).
  const ChunkedHeader old{.expire_at_ms = testing::kNow - 1, .id = 42, .length = 100, .chunk_bytes = kLimit};
  h_.Put("k", EncodeChunkedHeader(old));
  h_.Put(ChunkKey(old, 0, "k"), Text(64));
  h_.Put(ChunkKey(old, 1, "k"), Text(36));
  EXPECT_EQ(h_.Run({"SET", "k", Text(100), "GET"}), kNil);
  const ChunkedHeader now = HeaderIn(h_, "k");
  EXPECT_NE(now.id, old.id);
  EXPECT_EQ(h_.store().size(), 3u);  // the new header and its two chunks
  EXPECT_EQ(h_.Run({"GET", "k"}), Bulk(Text(100)));
}

TEST_F(ChunkedStringTest, ChunksAreToldFromPages) {
  ASSERT_EQ(h_.Run({"SET", "k", Text(300)}), kOk);
  const ChunkedHeader header = HeaderIn(h_, "k");
  DataView view = h_.View();
  EXPECT_TRUE(view.IsChunk(ChunkKey(header, 0, "k")));
  EXPECT_TRUE(view.IsChunk(ChunkKey(header, 4, "k")));
  EXPECT_FALSE(view.IsChunk("k"));
  EXPECT_FALSE(view.IsChunk(PageKey(header.id + 1, 1, "k")));  // another id's page
  EXPECT_FALSE(view.IsChunk(PageKey(header.id, 1, "other")));  // another key's
}

TEST_F(ChunkedStringTest, AHeaderClaimingTooMuchIsDamage) {
  h_.Put("k", EncodeChunkedHeader({.expire_at_ms = 0, .id = 9, .length = uint64_t{1} << 33, .chunk_bytes = 1}));
  const std::string reply = h_.Run({"GET", "k"});
  EXPECT_EQ(reply.rfind("-ERR rampart: the string at \"k\" is damaged: a length of", 0), 0u) << reply;
  EXPECT_EQ(h_.Run({"STRLEN", "k"}), Int(int64_t{1} << 33));  // the header says so; nothing is read
}

}  // namespace
}  // namespace rampart::proxy
