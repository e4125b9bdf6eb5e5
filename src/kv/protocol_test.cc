#include "kv/protocol.h"

#include <gtest/gtest.h>

#include <random>

namespace rampart::kv::wire {
namespace {

std::vector<std::string_view> Keys(const KeyList& list) { return list.ToVector(); }

// A message with one request of every type, several per partition.
std::vector<std::byte> SampleRequests(std::string* sib_storage) {
  std::vector<std::string_view> sibs = {"k1", "k2", "other-partition-key"};
  *sib_storage = EncodeKeyList(sibs);
  std::vector<std::byte> msg;
  RequestWriter w(&msg);
  PrepareItemIn items[] = {{"k1", "v1", *sib_storage, false},
                           {"k2", std::string_view("\0bin\xff", 5), *sib_storage, false},
                           {"gone", "", "", true}};
  w.Prepare(3, 100, 0xABCDEF0123456789ull, items);
  w.Prepare(4, 101, 77, std::span<const PrepareItemIn>(items, 1), kFlagCommitNow);
  w.Commit(3, 102, 0xABCDEF0123456789ull);
  std::string_view keys[] = {"a", "", "ccc"};
  w.Get(65535, 103, keys);
  KeyTs kts[] = {{"x", 1}, {"y", UINT64_MAX}};
  w.GetByTs(0, 104, kts);
  LockKey lks[] = {{"a", LockMode::kShared}, {"b", LockMode::kExclusive}};
  w.Lock(9, 105, 555, lks);
  w.Unlock(9, 106, 555);
  w.Get(1, 107, {});
  w.Describe(2, 108, 3);
  w.Count(2, 109);
  w.Flush(7, 110);
  w.Stats(4, 111);
  return msg;
}

TEST(ProtocolTest, RequestRoundTripEveryType) {
  std::string sib;
  std::vector<std::byte> msg = SampleRequests(&sib);
  auto decoded = DecodeRequests(msg, ProtocolLimits());
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  const std::vector<Request>& r = *decoded;
  ASSERT_EQ(r.size(), 12u);
  for (size_t i = 0; i < r.size(); ++i) EXPECT_EQ(r[i].header.request_id, 100 + i);

  EXPECT_EQ(r[0].header.type, MsgType::kPrepare);
  EXPECT_EQ(r[0].header.partition, 3);
  EXPECT_EQ(r[0].header.flags, 0);
  const auto& p = std::get<PrepareRequest>(r[0].body);
  EXPECT_EQ(p.ts, 0xABCDEF0123456789ull);
  ASSERT_EQ(p.items.size(), 3u);
  EXPECT_EQ(p.items[0].key, "k1");
  EXPECT_EQ(p.items[0].value, "v1");
  EXPECT_FALSE(p.items[0].tombstone);
  EXPECT_EQ(Keys(p.items[0].siblings),
            (std::vector<std::string_view>{"k1", "k2", "other-partition-key"}));
  EXPECT_EQ(p.items[0].siblings.encoded(), sib);  // copyable into a slot as is
  EXPECT_EQ(p.items[1].value, std::string_view("\0bin\xff", 5));
  EXPECT_EQ(p.items[2].key, "gone");
  EXPECT_TRUE(p.items[2].tombstone);
  EXPECT_TRUE(p.items[2].siblings.empty());
  // Views point into the message: nothing was copied.
  const char* begin = reinterpret_cast<const char*>(msg.data());
  EXPECT_GE(p.items[0].key.data(), begin);
  EXPECT_LT(p.items[0].key.data(), begin + msg.size());

  EXPECT_EQ(r[1].header.flags, kFlagCommitNow);
  EXPECT_EQ(std::get<PrepareRequest>(r[1].body).items.size(), 1u);
  EXPECT_EQ(std::get<CommitRequest>(r[2].body).ts, 0xABCDEF0123456789ull);
  EXPECT_EQ(r[3].header.partition, 65535);
  EXPECT_EQ(std::get<GetRequest>(r[3].body).keys,
            (std::vector<std::string_view>{"a", "", "ccc"}));
  const auto& g = std::get<GetByTsRequest>(r[4].body);
  ASSERT_EQ(g.items.size(), 2u);
  EXPECT_EQ(g.items[1].key, "y");
  EXPECT_EQ(g.items[1].ts, UINT64_MAX);
  const auto& l = std::get<LockRequest>(r[5].body);
  EXPECT_EQ(l.txn, 555u);
  ASSERT_EQ(l.keys.size(), 2u);
  EXPECT_EQ(l.keys[1].key, "b");
  EXPECT_EQ(l.keys[1].mode, LockMode::kExclusive);
  EXPECT_EQ(std::get<UnlockRequest>(r[6].body).txn, 555u);
  EXPECT_TRUE(std::get<GetRequest>(r[7].body).keys.empty());
  EXPECT_EQ(std::get<DescribeRequest>(r[8].body).extent, 3u);
  EXPECT_EQ(r[9].header.type, MsgType::kCount);
  EXPECT_EQ(r[9].header.partition, 2);
  EXPECT_EQ(r[9].header.body_len, 0u);
  EXPECT_TRUE(std::holds_alternative<CountRequest>(r[9].body));
  EXPECT_EQ(r[10].header.type, MsgType::kFlush);
  EXPECT_EQ(r[10].header.partition, 7);
  EXPECT_EQ(r[10].header.body_len, 0u);
  EXPECT_TRUE(std::holds_alternative<FlushRequest>(r[10].body));
  EXPECT_EQ(r[11].header.type, MsgType::kStats);
  EXPECT_EQ(r[11].header.partition, 4);
  EXPECT_EQ(r[11].header.body_len, 0u);
  EXPECT_TRUE(std::holds_alternative<StatsRequest>(r[11].body));
}

TEST(ProtocolTest, ByteLayoutMatchesTheDocs) {
  // The example in docs/kv_protocol.md.
  std::vector<std::byte> msg;
  RequestWriter w(&msg);
  std::string_view keys[] = {"a", "bc"};
  w.Get(2, 9, keys);
  const uint8_t expect[] = {1, 0, 0, 0,  3, 0, 2, 0, 15, 0, 0, 0,  9, 0, 0, 0, 0, 0, 0, 0,
                            2, 0, 0, 0,  1, 0, 0, 0, 'a',  2, 0, 0, 0, 'b', 'c'};
  ASSERT_EQ(msg.size(), sizeof(expect));
  for (size_t i = 0; i < msg.size(); ++i) EXPECT_EQ(std::to_integer<uint8_t>(msg[i]), expect[i]) << i;
}

TEST(ProtocolTest, WriterAppendsAfterExistingBytes) {
  std::vector<std::byte> buf(5, std::byte{0xEE});
  RequestWriter w(&buf);
  w.Commit(1, 2, 3);
  EXPECT_EQ(w.count(), 1u);
  EXPECT_EQ(w.message_bytes(), kMessageHeaderBytes + kRequestHeaderBytes + 8);
  auto r = DecodeRequests(std::span(buf).subspan(5), ProtocolLimits());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(std::get<CommitRequest>((*r)[0].body).ts, 3u);
}

std::vector<std::byte> SampleReplies() {
  std::vector<std::byte> msg;
  ReplyWriter w(&msg);
  w.Ok(MsgType::kPrepare, 3, 100);
  w.Error(static_cast<uint8_t>(MsgType::kCommit), 3, 101,
          ResourceExhausted("arena full: partition 3"));
  std::string sib = EncodeKeyList(std::vector<std::string_view>{"a", "b"});
  GetResultIn res[] = {
      {true, false, 42, "value-a", sib, {4096, 128, 7}},
      {false},
      {true, true, 43, "", "", {8192, 48, 1}},
  };
  w.GetResults(MsgType::kGet, 5, 102, res);
  w.GetResults(MsgType::kGetByTs, 5, 103, {});
  w.Error(99, 0, 104, InvalidArgument("unknown request type"));
  w.Ok(MsgType::kUnlock, 9, 105);
  w.Count(2, 106, 0x0123456789ABCDEFull);
  w.Ok(MsgType::kFlush, 7, 107);
  return msg;
}

TEST(ProtocolTest, ReplyRoundTrip) {
  std::vector<std::byte> msg = SampleReplies();
  auto decoded = DecodeReplies(msg, ProtocolLimits());
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  const std::vector<Reply>& r = *decoded;
  ASSERT_EQ(r.size(), 8u);
  EXPECT_TRUE(r[0].ok());
  EXPECT_EQ(r[0].header.type, static_cast<uint8_t>(MsgType::kPrepare));
  EXPECT_FALSE(r[1].ok());
  EXPECT_EQ(r[1].ToStatus(), ResourceExhausted("arena full: partition 3"));
  EXPECT_EQ(r[1].header.request_id, 101u);
  ASSERT_EQ(r[2].results.size(), 3u);
  const GetResult& a = r[2].results[0];
  EXPECT_TRUE(a.found);
  EXPECT_FALSE(a.tombstone);
  EXPECT_EQ(a.ts, 42u);
  EXPECT_EQ(a.value, "value-a");
  EXPECT_EQ(Keys(a.siblings), (std::vector<std::string_view>{"a", "b"}));
  EXPECT_EQ(a.slot, (SlotAddress{4096, 128, 7}));
  EXPECT_FALSE(r[2].results[1].found);
  EXPECT_TRUE(r[2].results[2].tombstone);
  EXPECT_EQ(r[2].results[2].slot, (SlotAddress{8192, 48, 1}));
  EXPECT_TRUE(r[3].results.empty());
  EXPECT_EQ(r[4].header.type, 99);
  EXPECT_EQ(r[4].error, "unknown request type");
  EXPECT_TRUE(r[5].ok());
  EXPECT_TRUE(r[6].ok());
  EXPECT_EQ(r[6].header.type, static_cast<uint8_t>(MsgType::kCount));
  EXPECT_EQ(r[6].header.partition, 2);
  EXPECT_EQ(r[6].header.body_len, 8u);
  EXPECT_EQ(r[6].count, 0x0123456789ABCDEFull);
  EXPECT_TRUE(r[7].ok());
  EXPECT_EQ(r[7].header.type, static_cast<uint8_t>(MsgType::kFlush));
  EXPECT_EQ(r[7].header.body_len, 0u);
  EXPECT_EQ(r[7].count, 0u);
}

TEST(ProtocolTest, ErrorMessagesAreTruncated) {
  std::vector<std::byte> msg;
  ReplyWriter w(&msg);
  w.Error(1, 0, 1, InternalError(std::string(5000, 'x')));
  auto r = DecodeReplies(msg, ProtocolLimits());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].error.size(), kMaxErrorMessageBytes);
}

TEST(ProtocolTest, EveryTruncationIsRejected) {
  std::string sib;
  std::vector<std::byte> req = SampleRequests(&sib);
  for (size_t len = 0; len < req.size(); ++len) {
    auto r = DecodeRequests(std::span(req).first(len), ProtocolLimits());
    ASSERT_FALSE(r.ok()) << "request prefix of " << len << " bytes accepted";
    EXPECT_EQ(r.status().code(), StatusCode::kCorruption) << r.status().ToString();
  }
  std::vector<std::byte> rep = SampleReplies();
  for (size_t len = 0; len < rep.size(); ++len) {
    auto r = DecodeReplies(std::span(rep).first(len), ProtocolLimits());
    ASSERT_FALSE(r.ok()) << "reply prefix of " << len << " bytes accepted";
  }
  // Body-level truncation with intact framing: every prefix of every body.
  auto frames = SplitRequests(req, ProtocolLimits());
  ASSERT_TRUE(frames.ok());
  for (const RequestFrame& f : *frames) {
    for (size_t len = 0; len < f.body.size(); ++len) {
      RequestFrame cut = f;
      cut.body = f.body.first(len);
      cut.header.body_len = static_cast<uint32_t>(len);
      auto r = DecodeRequest(cut, ProtocolLimits());
      ASSERT_FALSE(r.ok()) << MsgTypeName(f.header.type) << " body prefix " << len;
      EXPECT_EQ(r.status().code(), StatusCode::kCorruption) << r.status().ToString();
    }
  }
}

TEST(ProtocolTest, TruncationMessageNamesTheField) {
  std::vector<std::byte> msg;
  RequestWriter w(&msg);
  std::string long_key(120, 'k');
  std::vector<std::string_view> keys(8, "key");
  keys[2] = long_key;
  w.Get(0, 7, keys);
  auto frames = SplitRequests(msg, ProtocolLimits());
  ASSERT_TRUE(frames.ok());
  RequestFrame f = (*frames)[0];
  // Keep the count, two keys, the third's length and 17 bytes of it.
  size_t keep = 4 + 2 * (4 + 3) + 4 + 17;
  f.body = f.body.first(keep);
  auto r = DecodeRequest(f, ProtocolLimits());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "truncated GET request (id 7): key 3 of 8 needs 120 bytes, 17 left");
  // A count that cannot fit is refused before the keys are looked at.
  f.body = f.body.first(4 + 2 * (4 + 3) + 2);
  EXPECT_EQ(DecodeRequest(f, ProtocolLimits()).status().message(),
            "truncated GET request (id 7): key count is 8 but 8 items need at least 32 "
            "bytes, 16 left");
  std::vector<std::byte> msg2;
  RequestWriter w2(&msg2);
  std::string_view three[] = {"key", "key", "key"};
  w2.Get(0, 8, three);
  RequestFrame f2 = (*SplitRequests(msg2, ProtocolLimits()))[0];
  f2.body = f2.body.first(4 + 2 * (4 + 3) + 2);
  EXPECT_EQ(DecodeRequest(f2, ProtocolLimits()).status().message(),
            "truncated GET request (id 8): length of key 3 of 3 needs 4 bytes, 2 left");
}

TEST(ProtocolTest, BadRequestDoesNotSpoilTheOthers) {
  std::vector<std::byte> msg;
  RequestWriter w(&msg);
  w.Commit(0, 1, 10);
  w.Commit(0, 2, 20);
  w.Commit(0, 3, 30);
  // Second request: unknown type; third: a flag COMMIT does not have.
  msg[4 + 24] = std::byte{42};
  msg[4 + 48 + 1] = std::byte{kFlagCommitNow};
  auto frames = SplitRequests(msg, ProtocolLimits());
  ASSERT_TRUE(frames.ok()) << frames.status().ToString();
  ASSERT_EQ(frames->size(), 3u);
  EXPECT_TRUE(DecodeRequest((*frames)[0], ProtocolLimits()).ok());
  auto bad = DecodeRequest((*frames)[1], ProtocolLimits());
  EXPECT_EQ(bad.status(), InvalidArgument("request of type 42 (id 2): unknown request type"));
  auto bad_flags = DecodeRequest((*frames)[2], ProtocolLimits());
  EXPECT_EQ(bad_flags.status(), InvalidArgument("COMMIT request (id 3): unknown flags 1"));
  EXPECT_FALSE(DecodeRequests(msg, ProtocolLimits()).ok());
}

TEST(ProtocolTest, BadLockModeAndTrailingBytes) {
  std::vector<std::byte> msg;
  RequestWriter w(&msg);
  LockKey k[] = {{"a", LockMode::kShared}};
  w.Lock(0, 1, 9, k);
  msg[4 + 16 + 8 + 4] = std::byte{3};
  auto r = DecodeRequests(msg, ProtocolLimits());
  EXPECT_EQ(r.status(), InvalidArgument("LOCK request (id 1): mode of key 1 of 1 is 3; "
                                        "expected 1 (shared) or 2 (exclusive)"));
  // A body longer than its content.
  std::vector<std::byte> msg2;
  RequestWriter w2(&msg2);
  w2.Commit(0, 5, 1);
  msg2.push_back(std::byte{0});
  msg2[4 + 4] = std::byte{9};  // body_len 8 -> 9
  EXPECT_EQ(DecodeRequests(msg2, ProtocolLimits()).status(),
            Corruption("COMMIT request (id 5) has 1 trailing bytes after its body"));
  // Bytes after the last request.
  std::vector<std::byte> msg3;
  RequestWriter w3(&msg3);
  w3.Commit(0, 5, 1);
  msg3.push_back(std::byte{0});
  EXPECT_EQ(DecodeRequests(msg3, ProtocolLimits()).status().code(), StatusCode::kCorruption);
}

TEST(ProtocolTest, LimitsEnforced) {
  ProtocolLimits lim;
  lim.max_keys_per_request = 4;
  lim.max_key_bytes = 8;
  lim.max_value_bytes = 16;
  lim.max_requests_per_message = 2;
  lim.max_message_bytes = 120;
  auto status_of = [&](auto&& build) {
    std::vector<std::byte> msg;
    RequestWriter w(&msg);
    build(w);
    return DecodeRequests(msg, lim).status();
  };
  std::string_view five[] = {"a", "b", "c", "d", "e"};
  EXPECT_EQ(status_of([&](RequestWriter& w) { w.Get(0, 1, five); }),
            InvalidArgument("GET request (id 1): key count is 5, over the limit of 4 "
                            "(max_keys_per_request)"));
  EXPECT_TRUE(status_of([&](RequestWriter& w) { w.Get(0, 1, std::span(five).first(4)); }).ok());
  std::string_view long_key[] = {"123456789"};
  EXPECT_EQ(status_of([&](RequestWriter& w) { w.Get(0, 1, long_key); }),
            InvalidArgument("GET request (id 1): key 1 of 1 is 9 bytes, over the limit of 8 "
                            "(max_key_bytes)"));
  std::string big(17, 'v');
  PrepareItemIn item[] = {{"k", big, "", false}};
  EXPECT_EQ(status_of([&](RequestWriter& w) { w.Prepare(0, 2, 1, item); }),
            InvalidArgument("PREPARE request (id 2): value of item 1 of 1 is 17 bytes, over "
                            "the limit of 16 (max_value_bytes)"));
  std::string sibs = EncodeKeyList(five);
  PrepareItemIn sib_item[] = {{"k", "v", sibs, false}};
  EXPECT_EQ(status_of([&](RequestWriter& w) { w.Prepare(0, 2, 1, sib_item); }).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(status_of([&](RequestWriter& w) {
              w.Commit(0, 1, 1);
              w.Commit(0, 2, 1);
              w.Commit(0, 3, 1);
            }),
            InvalidArgument("request message has 3 requests, over the limit of 2 "
                            "(max_requests_per_message)"));
  std::string_view four_big[] = {"12345678", "12345678", "12345678", "12345678"};
  EXPECT_EQ(status_of([&](RequestWriter& w) {
              w.Get(0, 1, four_big);
              w.Get(0, 2, four_big);
            }),
            InvalidArgument("request message is 140 bytes, over the limit of 120 "
                            "(max_message_bytes)"));
  // A count that cannot fit in the bytes left is refused before any
  // allocation.
  std::vector<std::byte> msg;
  RequestWriter w(&msg);
  w.Get(0, 1, {});
  msg[4 + 16] = std::byte{0xFF};  // count 255, no bytes
  EXPECT_EQ(DecodeRequests(msg, ProtocolLimits()).status(),
            Corruption("truncated GET request (id 1): key count is 255 but 255 items need at "
                       "least 1020 bytes, 0 left"));
}

TEST(ProtocolTest, KeyListParse) {
  std::vector<std::string_view> in = {"", "x", "yy"};
  std::string enc = EncodeKeyList(in);
  auto list = KeyList::Parse(enc);
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->size(), 3u);
  EXPECT_EQ(list->ToVector(), in);
  EXPECT_TRUE(KeyList::Parse("")->empty());
  EXPECT_FALSE(KeyList::Parse(enc.substr(0, enc.size() - 1)).ok());
  EXPECT_FALSE(KeyList::Parse(enc + "z").ok());
}

// Checks that every view of a decoded message lies inside the message.
void CheckInside(std::span<const std::byte> msg, std::string_view v) {
  if (v.empty()) return;
  auto* b = reinterpret_cast<const char*>(msg.data());
  ASSERT_GE(v.data(), b);
  ASSERT_LE(v.data() + v.size(), b + msg.size());
}
void TouchRequests(std::span<const std::byte> msg, const std::vector<Request>& reqs) {
  size_t sum = 0;
  for (const Request& r : reqs) {
    if (auto* p = std::get_if<PrepareRequest>(&r.body)) {
      for (const auto& it : p->items) {
        CheckInside(msg, it.key);
        CheckInside(msg, it.value);
        for (std::string_view s : it.siblings) CheckInside(msg, s), sum += s.size();
      }
    } else if (auto* g = std::get_if<GetRequest>(&r.body)) {
      for (std::string_view k : g->keys) CheckInside(msg, k);
    } else if (auto* t = std::get_if<GetByTsRequest>(&r.body)) {
      for (const auto& k : t->items) CheckInside(msg, k.key);
    } else if (auto* l = std::get_if<LockRequest>(&r.body)) {
      for (const auto& k : l->keys) CheckInside(msg, k.key);
    }
  }
  (void)sum;
}

TEST(ProtocolTest, RandomGarbageNeverCrashes) {
  std::mt19937_64 rng(20261122);
  std::string sib;
  const std::vector<std::byte> valid_req = SampleRequests(&sib);
  const std::vector<std::byte> valid_rep = SampleReplies();
  ProtocolLimits lim;
  lim.max_keys_per_request = 1000;
  int accepted = 0;
  for (int iter = 0; iter < 100000; ++iter) {
    std::vector<std::byte> msg;
    const int kind = iter % 4;
    if (kind == 0) {  // pure garbage, sometimes with a plausible count
      msg.resize(rng() % 300);
      for (auto& b : msg) b = static_cast<std::byte>(rng());
      if (msg.size() >= 4 && rng() % 2) {
        msg[0] = static_cast<std::byte>(rng() % 4);
        msg[1] = msg[2] = msg[3] = std::byte{0};
      }
    } else {  // a valid message with a few bytes changed and maybe cut
      msg = kind == 3 ? valid_rep : valid_req;
      int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) msg[rng() % msg.size()] = static_cast<std::byte>(rng());
      if (rng() % 4 == 0) msg.resize(rng() % msg.size());
    }
    // An exactly-sized heap copy, so ASan catches any read past the end.
    std::unique_ptr<std::byte[]> exact(new std::byte[msg.size()]);
    std::copy(msg.begin(), msg.end(), exact.get());
    std::span<const std::byte> span(exact.get(), msg.size());
    auto reqs = DecodeRequests(span, lim);
    if (reqs.ok()) {
      ++accepted;
      TouchRequests(span, *reqs);
    } else {
      EXPECT_FALSE(reqs.status().message().empty());
    }
    auto reps = DecodeReplies(span, lim);
    if (reps.ok()) {
      for (const Reply& r : *reps) {
        CheckInside(span, r.error);
        for (const GetResult& g : r.results) {
          CheckInside(span, g.value);
          for (std::string_view s : g.siblings) CheckInside(span, s);
        }
      }
    }
  }
  // Mutations of values keep messages valid now and then; the test is about
  // never crashing, but it should have exercised the success path too.
  EXPECT_GT(accepted, 0);
}

}  // namespace
}  // namespace rampart::kv::wire

namespace rampart::kv::wire {
namespace {

TEST(ProtocolTest, DescribeRoundTripAndTruncation) {
  std::vector<std::byte> req;
  RequestWriter(&req).Describe(5, 77, 0x01020304);
  auto decoded = DecodeRequests(req, ProtocolLimits());
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  ASSERT_EQ(decoded->size(), 1u);
  EXPECT_EQ((*decoded)[0].header.type, MsgType::kDescribe);
  EXPECT_EQ((*decoded)[0].header.partition, 5);
  EXPECT_EQ(std::get<DescribeRequest>((*decoded)[0].body).extent, 0x01020304u);
  EXPECT_EQ(MsgTypeName(MsgType::kDescribe), "DESCRIBE");
  for (size_t len = 4 + 16; len < req.size(); ++len) {  // a cut extent index
    std::vector<std::byte> cut(req.begin(), req.begin() + static_cast<long>(len));
    cut[4 + 4] = std::byte{static_cast<uint8_t>(len - 20)};  // body_len
    EXPECT_FALSE(DecodeRequests(cut, ProtocolLimits()).ok()) << len;
  }

  const std::string descriptor("\x01\x00rkey-bytes\xff", 13);
  std::vector<std::byte> rep;
  ReplyWriter(&rep).Arena(5, 77, ArenaInfo{64u << 20, descriptor});
  auto replies = DecodeReplies(rep, ProtocolLimits());
  ASSERT_TRUE(replies.ok()) << replies.status().ToString();
  ASSERT_EQ(replies->size(), 1u);
  EXPECT_TRUE((*replies)[0].ok());
  EXPECT_EQ((*replies)[0].arena.extent_bytes, 64u << 20);
  EXPECT_EQ((*replies)[0].arena.descriptor, descriptor);
  for (size_t len = 0; len < rep.size(); ++len) {
    EXPECT_FALSE(DecodeReplies(std::span(rep).first(len), ProtocolLimits()).ok()) << len;
  }
  // More than the extent index on a DESCRIBE request is trailing garbage.
  std::vector<std::byte> bad = req;
  bad.push_back(std::byte{0});
  bad[4 + 4] = std::byte{5};  // body_len 5
  auto r = DecodeRequests(bad, ProtocolLimits());
  EXPECT_FALSE(r.ok());
}

}  // namespace
}  // namespace rampart::kv::wire

namespace rampart::kv::wire {
namespace {

TEST(ProtocolTest, CountAndFlushLayoutNamesAndTruncation) {
  EXPECT_EQ(MsgTypeName(MsgType::kCount), "COUNT");
  EXPECT_EQ(MsgTypeName(MsgType::kFlush), "FLUSH");
  EXPECT_EQ(MsgTypeName(static_cast<MsgType>(kMaxMsgType + 1)), "UNKNOWN");

  // Header only: type 8 / 9, flags 0, partition, body_len 0, request id.
  std::vector<std::byte> req;
  RequestWriter w(&req);
  w.Count(0x0102, 5);
  w.Flush(0x0102, 6);
  const uint8_t expect[] = {2, 0, 0, 0,                                  // count 2
                            8, 0, 2, 1, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0,   // COUNT
                            9, 0, 2, 1, 0, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0};  // FLUSH
  ASSERT_EQ(req.size(), sizeof(expect));
  for (size_t i = 0; i < req.size(); ++i) EXPECT_EQ(std::to_integer<uint8_t>(req[i]), expect[i]) << i;

  // A body on either is trailing garbage; a flag is unknown.
  for (MsgType type : {MsgType::kCount, MsgType::kFlush}) {
    std::vector<std::byte> bad;
    RequestWriter wb(&bad);
    type == MsgType::kCount ? wb.Count(0, 1) : wb.Flush(0, 1);
    bad.push_back(std::byte{0});
    bad[4 + 4] = std::byte{1};  // body_len 1
    EXPECT_EQ(DecodeRequests(bad, ProtocolLimits()).status(),
              Corruption(MsgTypeName(type), " request (id 1) has 1 trailing bytes after its body"));
  }
  std::vector<std::byte> flagged = req;
  flagged[4 + 1] = std::byte{kFlagCommitNow};
  EXPECT_EQ(DecodeRequests(flagged, ProtocolLimits()).status(),
            InvalidArgument("COUNT request (id 5): unknown flags 1"));

  // Replies: every prefix of a COUNT reply is refused, an OK COUNT reply
  // without its u64 names the field, an error COUNT reply carries no count.
  std::vector<std::byte> rep;
  ReplyWriter rw(&rep);
  rw.Count(3, 5, 42);
  rw.Ok(MsgType::kFlush, 3, 6);
  rw.Error(static_cast<uint8_t>(MsgType::kCount), 3, 7, Unavailable("partition 3 is down"));
  auto replies = DecodeReplies(rep, ProtocolLimits());
  ASSERT_TRUE(replies.ok()) << replies.status().ToString();
  ASSERT_EQ(replies->size(), 3u);
  EXPECT_EQ((*replies)[0].count, 42u);
  EXPECT_TRUE((*replies)[1].ok());
  EXPECT_FALSE((*replies)[2].ok());
  EXPECT_EQ((*replies)[2].count, 0u);
  EXPECT_EQ((*replies)[2].error, "partition 3 is down");
  for (size_t len = 0; len < rep.size(); ++len) {
    EXPECT_FALSE(DecodeReplies(std::span(rep).first(len), ProtocolLimits()).ok()) << len;
  }
  std::vector<std::byte> empty_count;
  ReplyWriter(&empty_count).Ok(MsgType::kCount, 3, 8);
  EXPECT_EQ(DecodeReplies(empty_count, ProtocolLimits()).status(),
            Corruption("truncated COUNT reply (id 8): key count needs 8 bytes, 0 left"));
  // A FLUSH reply with a body is trailing garbage.
  std::vector<std::byte> long_flush;
  ReplyWriter(&long_flush).Count(3, 9, 1);
  long_flush[4] = std::byte{static_cast<uint8_t>(MsgType::kFlush)};
  EXPECT_EQ(DecodeReplies(long_flush, ProtocolLimits()).status(),
            Corruption("FLUSH reply (id 9) has 8 trailing bytes after its body"));
}

TEST(ProtocolTest, StatsReplyRoundTripAndTruncation) {
  EXPECT_EQ(MsgTypeName(MsgType::kStats), "STATS");
  std::vector<std::byte> rep;
  ReplyWriter(&rep).Stats(3, 5, PartitionStatsInfo{7, 9, 4096, 64u << 20, 12345, 11});
  auto replies = DecodeReplies(rep, ProtocolLimits());
  ASSERT_TRUE(replies.ok()) << replies.status().ToString();
  const PartitionStatsInfo& st = (*replies)[0].stats;
  EXPECT_EQ(st.keys, 7u);
  EXPECT_EQ(st.versions, 9u);
  EXPECT_EQ(st.used_bytes, 4096u);
  EXPECT_EQ(st.reserved_bytes, 64u << 20);
  EXPECT_EQ(st.max_ts, 12345u);
  EXPECT_EQ(st.internal_keys, 11u);
  for (size_t len = 0; len < rep.size(); ++len) {
    EXPECT_FALSE(DecodeReplies(std::span(rep).first(len), ProtocolLimits()).ok()) << len;
  }
}

TEST(ProtocolTest, PrepareSlotsFlagAndReplyRoundTrip) {
  const PrepareItemIn item{"k", "v", "", false};
  for (uint8_t flags : {uint8_t{kFlagReturnSlots}, uint8_t{kFlagCommitNow | kFlagReturnSlots}}) {
    std::vector<std::byte> req;
    RequestWriter(&req).Prepare(1, 9, 5, std::span<const PrepareItemIn>(&item, 1), flags);
    auto frames = SplitRequests(req, ProtocolLimits());
    ASSERT_TRUE(frames.ok()) << frames.status().ToString();
    auto decoded = DecodeRequest((*frames)[0], ProtocolLimits());
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(decoded->header.flags, flags);
  }
  std::vector<std::byte> bad;
  RequestWriter(&bad).Prepare(1, 9, 5, std::span<const PrepareItemIn>(&item, 1), 0x04);
  auto frames = SplitRequests(bad, ProtocolLimits());
  ASSERT_TRUE(frames.ok());
  EXPECT_EQ(DecodeRequest((*frames)[0], ProtocolLimits()).status().code(),
            StatusCode::kInvalidArgument);

  std::vector<std::byte> rep;
  const SlotAddress slots[] = {{(uint64_t{2} << 40) | 4096, 160, 7}, {}};
  ReplyWriter w(&rep);
  w.Slots(3, 11, slots);
  w.Ok(MsgType::kPrepare, 3, 12);  // without the flag: an empty body, no slots
  auto replies = DecodeReplies(rep, ProtocolLimits());
  ASSERT_TRUE(replies.ok()) << replies.status().ToString();
  ASSERT_EQ(replies->size(), 2u);
  EXPECT_EQ((*replies)[0].header.type, static_cast<uint8_t>(MsgType::kPrepare));
  EXPECT_EQ((*replies)[0].slots, std::vector<SlotAddress>(std::begin(slots), std::end(slots)));
  EXPECT_EQ((*replies)[0].slots[0].extent(), 2u);
  EXPECT_TRUE((*replies)[1].slots.empty());
  for (size_t len = 0; len < rep.size(); ++len) {
    EXPECT_FALSE(DecodeReplies(std::span(rep).first(len), ProtocolLimits()).ok()) << len;
  }
}

// kFlagIfUnchanged: the read versions follow the items; items_bytes ends
// at the items (what the redo log keeps), and a cut list is refused.
TEST(ProtocolTest, PrepareIfUnchangedListRoundTripAndTruncation) {
  const PrepareItemIn item{"k", "v", "", false};
  const KeyTs read[] = {{"k", 7}, {"other", 0}};
  const uint8_t flags = kFlagCommitNow | kFlagIfUnchanged;
  std::vector<std::byte> plain, req;
  RequestWriter(&plain).Prepare(1, 9, 5, std::span<const PrepareItemIn>(&item, 1), kFlagCommitNow);
  RequestWriter(&req).Prepare(1, 9, 5, std::span<const PrepareItemIn>(&item, 1), flags, read);
  auto frames = SplitRequests(req, ProtocolLimits());
  ASSERT_TRUE(frames.ok()) << frames.status().ToString();
  auto decoded = DecodeRequest((*frames)[0], ProtocolLimits());
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  const auto& p = std::get<PrepareRequest>(decoded->body);
  ASSERT_EQ(p.unchanged.size(), 2u);
  EXPECT_EQ(p.unchanged[1].key, "other");
  EXPECT_EQ(p.unchanged[0].ts, 7u);
  // The items' bytes are those of the same PREPARE without the flag.
  EXPECT_EQ(p.items_bytes, plain.size() - kMessageHeaderBytes - kRequestHeaderBytes);
  const RequestFrame& f = (*frames)[0];
  for (size_t len = p.items_bytes; len < f.body.size(); ++len) {
    RequestFrame cut = f;
    cut.body = f.body.first(len);
    cut.header.body_len = static_cast<uint32_t>(len);
    EXPECT_EQ(DecodeRequest(cut, ProtocolLimits()).status().code(), StatusCode::kCorruption) << len;
  }
  std::vector<std::byte> alone;
  RequestWriter(&alone).Prepare(1, 9, 5, std::span<const PrepareItemIn>(&item, 1), kFlagIfUnchanged, read);
  auto alone_frames = SplitRequests(alone, ProtocolLimits());
  ASSERT_TRUE(alone_frames.ok());
  auto refused = DecodeRequest((*alone_frames)[0], ProtocolLimits());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("IF_UNCHANGED needs COMMIT_NOW"), std::string_view::npos);
}

TEST(ProtocolTest, ScanRequestAndReplyRoundTripLimitsAndTruncation) {
  EXPECT_EQ(MsgTypeName(MsgType::kScan), "SCAN");
  std::vector<std::byte> req;
  RequestWriter(&req).Scan(2, 8, ScanRequest{uint64_t{1} << 40, 100, 25});
  auto requests = DecodeRequests(req, ProtocolLimits());
  ASSERT_TRUE(requests.ok()) << requests.status().ToString();
  const auto& scan = std::get<ScanRequest>((*requests)[0].body);
  EXPECT_EQ(scan.from, uint64_t{1} << 40);
  EXPECT_EQ(scan.max_keys, 100u);
  EXPECT_EQ(scan.head_bytes, 25u);
  for (const ScanRequest& bad : {ScanRequest{0, 0, 8}, ScanRequest{0, 70000, 8}, ScanRequest{0, 8, 257}}) {
    std::vector<std::byte> m;
    RequestWriter(&m).Scan(0, 1, bad);
    EXPECT_FALSE(DecodeRequests(m, ProtocolLimits()).ok()) << bad.max_keys << " " << bad.head_bytes;
  }
  for (std::optional<uint64_t> next : {std::optional<uint64_t>(65536), std::optional<uint64_t>()}) {
    std::vector<std::byte> rep;
    const std::vector<ScanItem> items = {{"a", "head"}, {std::string_view("\0\1p", 3), ""}};
    ReplyWriter(&rep).Scan(2, 8, next, items);
    auto replies = DecodeReplies(rep, ProtocolLimits());
    ASSERT_TRUE(replies.ok()) << replies.status().ToString();
    const ScanResult& got = (*replies)[0].scan;
    EXPECT_EQ(got.done, !next.has_value());
    if (next.has_value()) EXPECT_EQ(got.next, *next);
    ASSERT_EQ(got.items.size(), 2u);
    EXPECT_EQ(got.items[0].key, "a");
    EXPECT_EQ(got.items[0].head, "head");
    EXPECT_EQ(got.items[1].key, std::string_view("\0\1p", 3));
    for (size_t len = 0; len < rep.size(); ++len) {
      EXPECT_FALSE(DecodeReplies(std::span(rep).first(len), ProtocolLimits()).ok()) << len;
    }
  }
}

}  // namespace
}  // namespace rampart::kv::wire
