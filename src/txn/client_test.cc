// End to end: Client against in-process partitions. Each partition is a thread
// with its own tcp Fabric on 127.0.0.1 (port 0) feeding kv::PartitionExecutor
// and sending back its replies, i.e. a kv-node without the process.
#include "txn/client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <map>
#include <set>
#include <thread>
#include <unordered_map>

#include "common/timestamp.h"
#include "kv/executor.h"
#include "kv/test_region.h"
#include "txn/ramp_logic.h"

namespace rampart::txn {
namespace {

namespace wire = kv::wire;
using namespace std::chrono_literals;
using transport::Endpoint;
using transport::Fabric;
using transport::FabricOptions;

FabricOptions TcpOptions() {
  FabricOptions o;
  o.backend = transport::Backend::kTcp;
  o.connect_timeout = 2s;
  return o;
}

// One partition served on its own thread. `mute`: accepts connections and
// reads requests but never answers (a hung node).
class PartitionServer {
 public:
  explicit PartitionServer(uint32_t partition, bool mute = false, uint16_t listen_port = 0)
      : partition_(partition), mute_(mute), listen_port_(listen_port) {
    std::promise<Result<uint16_t>> ready;
    auto port = ready.get_future();
    thread_ = std::thread([this, p = std::move(ready)]() mutable { Run(std::move(p)); });
    auto r = port.get();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    port_ = r.ok() ? *r : 0;
  }
  ~PartitionServer() {
    stop_ = true;
    thread_.join();
  }
  uint16_t port() const { return port_; }

 private:
  struct Buffer {
    std::vector<std::byte> bytes;
    transport::IoSlice slice;
  };

  void Run(std::promise<Result<uint16_t>> ready) {
    auto fabric = Fabric::Create(TcpOptions());
    if (!fabric.ok()) return ready.set_value(fabric.status());
    constexpr size_t kArenaBytes = 8u << 20;
    kv::TestRegion arena(kArenaBytes, 0);
    {
      kv::ExecutorOptions eo;
      eo.lock_timeout = 2s;
      kv::PartitionExecutor exec(partition_, arena.span(), eo);
      std::unordered_map<kv::ConnectionId, std::shared_ptr<Endpoint>> conns;
      std::unordered_map<const Endpoint*, kv::ConnectionId> ids;
      kv::ConnectionId next = 1;
      auto id_of = [&](const std::shared_ptr<Endpoint>& ep) {
        auto [it, inserted] = ids.emplace(ep.get(), next);
        if (inserted) conns[next++] = ep;
        return it->second;
      };
      auto send = [&](std::vector<kv::OutgoingReply> replies) {
        for (kv::OutgoingReply& r : replies) {
          auto it = conns.find(r.to);
          if (it == conns.end()) continue;
          auto buf = std::make_shared<Buffer>();
          buf->bytes = std::move(r.message);
          buf->slice = {buf->bytes.data(), buf->bytes.size()};
          (void)it->second->Send(std::span<const transport::IoSlice>(&buf->slice, 1),
                                 [buf](Status) {});
        }
      };
      (*fabric)->SetAcceptHandler([&](std::shared_ptr<Endpoint> ep) { id_of(ep); });
      (*fabric)->SetMessageHandler(
          [&](const std::shared_ptr<Endpoint>& ep, std::span<const std::byte> bytes) {
            if (mute_) return;
            send(exec.Execute(id_of(ep), bytes, std::chrono::steady_clock::now()));
          });
      (*fabric)->SetDisconnectHandler([&](const std::shared_ptr<Endpoint>& ep, Status) {
        auto it = ids.find(ep.get());
        if (it == ids.end()) return;
        kv::ConnectionId id = it->second;
        ids.erase(it);
        conns.erase(id);
        send(exec.ConnectionClosed(id, std::chrono::steady_clock::now()));
      });
      Status listening = (*fabric)->Listen("127.0.0.1", listen_port_);
      if (!listening.ok()) {
        ready.set_value(listening);
      } else {
        ready.set_value((*fabric)->listen_port());
        while (!stop_) {
          (*fabric)->Wait(10ms);
          send(exec.Tick(std::chrono::steady_clock::now()));
        }
      }
      for (auto& [id, ep] : conns) ep->Close();
      conns.clear();
      ids.clear();
      fabric->reset();
    }
  }

  uint32_t partition_;
  bool mute_;
  uint16_t listen_port_;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// N partitions, one "node" each (partitions_per_node = 1, so partition i is
// served at node i's port).
class Cluster {
 public:
  explicit Cluster(uint32_t partitions, int mute_partition = -1) {
    for (uint32_t p = 0; p < partitions; ++p) {
      servers_.push_back(std::make_unique<PartitionServer>(p, static_cast<int>(p) == mute_partition));
      nodes_.push_back(NodeConfig{p, "127.0.0.1", servers_.back()->port()});
    }
  }
  ClientOptions Options(Isolation isolation, uint32_t client_id = 1) const {
    ClientOptions o;
    o.nodes = nodes_;
    o.partitions_per_node = 1;
    o.fabric = TcpOptions();
    o.isolation = isolation;
    o.client_id = client_id;
    o.request_timeout = 2s;
    return o;
  }
  std::unique_ptr<Client> NewClient(Isolation isolation, uint32_t client_id = 1) const {
    auto c = Client::Connect(Options(isolation, client_id));
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }
  const std::vector<NodeConfig>& nodes() const { return nodes_; }

 private:
  std::vector<std::unique_ptr<PartitionServer>> servers_;
  std::vector<NodeConfig> nodes_;
};

// Keys "k0".."k{n-1}"; with 4 partitions, 16 keys cover all of them.
std::vector<std::string> Keys(int n, std::string_view prefix = "k") {
  std::vector<std::string> keys;
  for (int i = 0; i < n; ++i) keys.push_back(StrCat(prefix, i));
  return keys;
}

class IsolationTest : public ::testing::TestWithParam<Isolation> {};

TEST_P(IsolationTest, PutGetMultiKeyAndDelete) {
  Cluster cluster(4);
  auto client = cluster.NewClient(GetParam());
  ASSERT_NE(client, nullptr);

  auto missing = client->Get("nothing");
  ASSERT_TRUE(missing.ok()) << missing.status().ToString();
  EXPECT_EQ(*missing, std::nullopt);

  ASSERT_TRUE(client->Put("a", "1").ok());
  auto a = client->Get("a");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(*a, std::optional<std::string>("1"));

  std::vector<std::pair<std::string, std::string>> pairs;
  for (const std::string& k : Keys(16)) pairs.emplace_back(k, "v-" + k);
  Status put = client->MultiPut(pairs);
  ASSERT_TRUE(put.ok()) << put.ToString();

  std::vector<std::string> read = Keys(16);
  read.push_back("k3");       // a repeat
  read.push_back("absent");   // never written
  auto values = client->MultiGet(read);
  ASSERT_TRUE(values.ok()) << values.status().ToString();
  ASSERT_EQ(values->size(), 18u);
  for (int i = 0; i < 16; ++i) EXPECT_EQ((*values)[i], std::optional<std::string>(StrCat("v-k", i)));
  EXPECT_EQ((*values)[16], std::optional<std::string>("v-k3"));
  EXPECT_EQ((*values)[17], std::nullopt);

  ASSERT_TRUE(client->Del("k5").ok());
  auto after = client->MultiGet({"k4", "k5"});
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ((*after)[0], std::optional<std::string>("v-k4"));
  EXPECT_EQ((*after)[1], std::nullopt);

  // Empty calls are no-ops; duplicate write keys are refused.
  EXPECT_TRUE(client->MultiPut({}).ok());
  auto none = client->MultiGet({});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  EXPECT_EQ(client->MultiPut({{"x", "1"}, {"x", "2"}}).code(), StatusCode::kInvalidArgument);
}

// The read-atomic check: writers write one transaction id to all keys of a
// set spanning every partition; readers count reads that return two ids at
// once. Runs for `duration`, or until the first fractured read when
// `stop_at_fracture`.
struct CheckerCounts {
  int writes = 0, reads = 0, fractured = 0, errors = 0, repairs = 0;
};

CheckerCounts RunReadAtomicChecker(Isolation isolation, std::chrono::milliseconds duration,
                                   bool stop_at_fracture) {
  Cluster cluster(4);
  const std::vector<std::string> keys = Keys(8, "set");
  std::atomic<bool> stop{false};
  std::atomic<int> writes{0}, reads{0}, fractured{0}, errors{0}, repairs{0};
  std::vector<std::thread> threads;
  for (uint32_t w = 0; w < 2; ++w) {
    threads.emplace_back([&, w] {
      auto client = cluster.NewClient(isolation, 10 + w);
      if (!client) return;
      for (int n = 0; !stop; ++n) {
        std::vector<std::pair<std::string, std::string>> pairs;
        std::string id = StrCat("w", w, "-", n);
        for (const auto& k : keys) pairs.emplace_back(k, id);
        if (client->MultiPut(pairs).ok()) ++writes; else ++errors;
      }
    });
  }
  for (uint32_t r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      auto client = cluster.NewClient(isolation, 20 + r);
      if (!client) return;
      while (!stop) {
        auto values = client->MultiGet(keys);
        if (!values.ok()) { ++errors; continue; }
        ++reads;
        for (const auto& v : *values) {
          if (v != values->front()) {
            ++fractured;
            if (stop_at_fracture) stop = true;
            break;
          }
        }
      }
      repairs += static_cast<int>(client->stats().repair_rounds);
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + duration;
  while (!stop && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
  stop = true;
  for (auto& t : threads) t.join();
  CheckerCounts c{writes.load(), reads.load(), fractured.load(), errors.load(), repairs.load()};
  std::printf("%s: %d writes, %d reads, %d fractured, %d repair rounds\n",
              std::string(IsolationName(isolation)).c_str(), c.writes, c.reads, c.fractured,
              c.repairs);
  return c;
}

class ReadAtomicTest : public ::testing::TestWithParam<Isolation> {};

TEST_P(ReadAtomicTest, ConcurrentReadersSeeNoFracturedWrites) {
  CheckerCounts c = RunReadAtomicChecker(GetParam(), 1500ms, /*stop_at_fracture=*/false);
  EXPECT_EQ(c.fractured, 0);
  EXPECT_EQ(c.errors, 0);
  EXPECT_GT(c.writes, 10);
  EXPECT_GT(c.reads, 10);
}

INSTANTIATE_TEST_SUITE_P(Modes, ReadAtomicTest,
                         ::testing::Values(Isolation::kRamp, Isolation::kS2pl),
                         [](const auto& info) { return std::string(IsolationName(info.param)); });

// The checker is not vacuous: without isolation the same workload fractures
// (bounded: stops at the first fractured read, gives up after 20 s).
TEST(ReadAtomicCheckerTest, NoIsolationFractures) {
  CheckerCounts c = RunReadAtomicChecker(Isolation::kNone, 20s, /*stop_at_fracture=*/true);
  EXPECT_GT(c.fractured, 0) << "no fractured read in " << c.reads << " reads without isolation";
}

INSTANTIATE_TEST_SUITE_P(Modes, IsolationTest,
                         ::testing::Values(Isolation::kRamp, Isolation::kS2pl, Isolation::kNone),
                         [](const auto& info) { return std::string(IsolationName(info.param)); });

// Plays a writer that dies part-way: sends raw PREPARE/COMMIT messages, one
// per partition, through its own Fabric.
class RawWriter {
 public:
  explicit RawWriter(const kv::Placement& placement) : placement_(placement) {
    auto f = Fabric::Create(TcpOptions());
    EXPECT_TRUE(f.ok());
    fabric_ = std::move(*f);
    fabric_->SetMessageHandler([this](const std::shared_ptr<Endpoint>&,
                                      std::span<const std::byte> bytes) {
      auto replies = wire::DecodeReplies(bytes, wire::ProtocolLimits());
      ASSERT_TRUE(replies.ok());
      for (const auto& r : *replies) {
        EXPECT_TRUE(r.ok()) << r.ToStatus().ToString();
        ++answered_;
      }
    });
  }
  ~RawWriter() {
    for (auto& [p, ep] : conns_) ep->Close();
  }

  // Sends each request and waits for every reply.
  void Run(std::vector<internal::OutgoingRequest> reqs) {
    int expected = answered_ + static_cast<int>(reqs.size());
    for (auto& req : reqs) {
      auto& ep = conns_[req.partition];
      if (!ep) {
        const auto& a = placement_.Address(req.partition);
        auto c = fabric_->Connect(a.host, a.port);
        ASSERT_TRUE(c.ok()) << c.status().ToString();
        ep = *c;
      }
      auto buf = std::make_shared<std::vector<std::byte>>(std::move(req.message));
      auto slice = std::make_shared<transport::IoSlice>(transport::IoSlice{buf->data(), buf->size()});
      ASSERT_TRUE(ep->Send(std::span<const transport::IoSlice>(slice.get(), 1),
                           [buf, slice](Status s) { EXPECT_TRUE(s.ok()); })
                      .ok());
    }
    auto deadline = std::chrono::steady_clock::now() + 5s;
    while (answered_ < expected && std::chrono::steady_clock::now() < deadline) {
      fabric_->Wait(100ms);
    }
    ASSERT_EQ(answered_, expected);
  }

 private:
  const kv::Placement& placement_;
  std::unique_ptr<Fabric> fabric_;
  std::map<uint32_t, std::shared_ptr<Endpoint>> conns_;
  int answered_ = 0;
};

// Keys with distinct partitions under `placement`, the first n found.
std::vector<std::string> KeysOnDistinctPartitions(const kv::Placement& placement, size_t n) {
  std::vector<std::string> keys;
  std::set<uint32_t> used;
  for (int i = 0; keys.size() < n && i < 10000; ++i) {
    std::string k = StrCat("d", i);
    if (used.insert(placement.PartitionOf(k)).second) keys.push_back(k);
  }
  return keys;
}

class DeadWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    reader_ = cluster_.NewClient(Isolation::kRamp, 2);
    ASSERT_NE(reader_, nullptr);
    keys_ = KeysOnDistinctPartitions(reader_->placement(), 3);
    ASSERT_EQ(keys_.size(), 3u);
    std::vector<std::pair<std::string, std::string>> old;
    for (const auto& k : keys_) old.emplace_back(k, "old");
    ASSERT_TRUE(reader_->MultiPut(old).ok());
    for (const auto& k : keys_) views_.push_back(k);
    groups_ = internal::GroupByPartition(views_, [this](std::string_view k) {
      return reader_->placement().PartitionOf(k);
    });
    for (const auto& k : views_) writes_.push_back(internal::WriteOp{k, "new", false});
    ts_ = TimestampSource(99).Next();
  }

  Cluster cluster_{4};
  std::unique_ptr<Client> reader_;
  std::vector<std::string> keys_;
  std::vector<std::string_view> views_;
  std::vector<internal::PartitionGroup> groups_;
  std::vector<internal::WriteOp> writes_;
  uint64_t ts_ = 0;
};

TEST_F(DeadWriterTest, CommitThatReachedOnePartitionIsReadWhole) {
  RawWriter writer(reader_->placement());
  writer.Run(internal::BuildPrepareRequests(writes_, groups_, ts_, 0, 1));
  // The writer "dies" after its COMMIT reached only the first key's partition.
  std::vector<internal::PartitionGroup> first;
  for (const auto& g : groups_) {
    if (g.indices[0] == 0) first.push_back(g);
  }
  writer.Run(internal::BuildCommitRequests(first, ts_, 100));

  auto values = reader_->MultiGet(keys_);
  ASSERT_TRUE(values.ok()) << values.status().ToString();
  for (const auto& v : *values) EXPECT_EQ(v, std::optional<std::string>("new"));
  EXPECT_EQ(reader_->stats().repair_rounds, 1u);
  EXPECT_EQ(reader_->stats().repaired_keys, 2u);

  // Without isolation the same state reads fractured: the test is not vacuous.
  auto plain = cluster_.NewClient(Isolation::kNone, 3);
  auto fractured = plain->MultiGet(keys_);
  ASSERT_TRUE(fractured.ok());
  EXPECT_EQ((*fractured)[0], std::optional<std::string>("new"));
  EXPECT_EQ((*fractured)[1], std::optional<std::string>("old"));

  // A reader that asks only for a key whose COMMIT never arrived cannot know
  // of the transaction: it reads the old value, which is read atomic.
  auto alone = reader_->Get(keys_[1]);
  ASSERT_TRUE(alone.ok());
  EXPECT_EQ(*alone, std::optional<std::string>("old"));
}

TEST_F(DeadWriterTest, PreparedButNeverCommittedStaysInvisible) {
  RawWriter writer(reader_->placement());
  writer.Run(internal::BuildPrepareRequests(writes_, groups_, ts_, 0, 1));
  auto values = reader_->MultiGet(keys_);
  ASSERT_TRUE(values.ok()) << values.status().ToString();
  for (const auto& v : *values) EXPECT_EQ(v, std::optional<std::string>("old"));
  EXPECT_EQ(reader_->stats().repair_rounds, 0u);
}

// A client of a 2-partition cluster whose partition 1 never answers, and its
// MultiGet of a key on each partition.
struct MutedRead {
  std::unique_ptr<Client> client;
  Result<std::vector<std::optional<std::string>>> values;
};
MutedRead ReadWithMutedPartition(Cluster& cluster, std::chrono::milliseconds request_timeout,
                                 std::chrono::milliseconds unreachable_after) {
  ClientOptions o = cluster.Options(Isolation::kRamp);
  o.request_timeout = request_timeout;
  o.unreachable_after = unreachable_after;
  auto client = Client::Connect(o);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  if (!client.ok()) return {nullptr, client.status()};
  auto values = (*client)->MultiGet(KeysOnDistinctPartitions((*client)->placement(), 2));
  return {std::move(*client), std::move(values)};
}

TEST(ClientErrorTest, HungPartitionTimesOutNamingIt) {
  Cluster cluster(2, /*mute_partition=*/1);
  auto [client, values] = ReadWithMutedPartition(cluster, 200ms, ClientOptions{}.unreachable_after);
  ASSERT_NE(client, nullptr);
  ASSERT_FALSE(values.ok());
  EXPECT_EQ(values.status().code(), StatusCode::kTimedOut);
  EXPECT_NE(values.status().message().find("partition 1"), std::string::npos)
      << values.status().ToString();
}

// A partition that is silent but whose host and port are up (a hung or busy
// node) is slow, not unreachable: left to the request timeout, not failed
// after unreachable_after.
TEST(ClientErrorTest, ASilentPartitionThatAcceptsConnectionsIsLeftToTheTimeout) {
  Cluster cluster(2, /*mute_partition=*/1);
  auto [client, values] = ReadWithMutedPartition(cluster, 1500ms, 200ms);
  ASSERT_NE(client, nullptr);
  ASSERT_FALSE(values.ok());
  EXPECT_EQ(values.status().code(), StatusCode::kTimedOut) << values.status().ToString();
  EXPECT_EQ(client->unreachable_partitions(), 0u);
  EXPECT_EQ(client->stats().unreachable, 0u);
}

TEST(ClientErrorTest, UnreachablePartitionIsAnErrorNamingIt) {
  uint16_t dead_port;
  {
    PartitionServer gone(0);  // a port that was just free and is closed again
    dead_port = gone.port();
  }
  ClientOptions o;
  o.nodes = {NodeConfig{0, "127.0.0.1", dead_port}};
  o.fabric = TcpOptions();
  o.fabric.connect_timeout = 500ms;
  auto client = Client::Connect(o);
  ASSERT_TRUE(client.ok()) << client.status().ToString();  // lazy: no connection yet
  Status s = (*client)->Put("a", "1");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("partition 0 (127.0.0.1:"), std::string::npos) << s.ToString();
}

TEST(ClientErrorTest, ReconnectsAfterTheNodeComesBack) {
  auto server = std::make_unique<PartitionServer>(0);
  uint16_t port = server->port();
  ClientOptions o;
  o.nodes = {NodeConfig{0, "127.0.0.1", port}};
  o.fabric = TcpOptions();
  o.fabric.connect_timeout = 500ms;
  auto client = Client::Connect(o);
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->Put("a", "1").ok());
  server.reset();  // the node goes away: an error value, not a hang or crash
  EXPECT_FALSE((*client)->Get("a").ok());
  // Unreachable now: requests fail at once, naming it, until a probe finds it.
  EXPECT_EQ((*client)->unreachable_partitions(), 1u);
  Status down = (*client)->Put("b", "1");
  EXPECT_EQ(down.code(), StatusCode::kUnavailable);
  EXPECT_NE(down.message().find("is unreachable"), std::string::npos) << down.ToString();
  // The node restarts on the same port (with empty memory); a probe, every
  // kProbeInterval, finds it (bounded wait).
  server = std::make_unique<PartitionServer>(0, false, port);
  ASSERT_EQ(server->port(), port);
  for (int i = 0; i < 200 && (*client)->unreachable_partitions() > 0; ++i) {
    std::this_thread::sleep_for(10ms);
    (*client)->Tick();
  }
  EXPECT_EQ((*client)->unreachable_partitions(), 0u);
  Status put = (*client)->Put("b", "2");
  ASSERT_TRUE(put.ok()) << put.ToString();
  auto b = (*client)->Get("b");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(*b, std::optional<std::string>("2"));
  EXPECT_GE((*client)->stats().reconnects, 1u);
}

TEST(ClientOptionsTest, Validation) {
  ClientOptions o;
  EXPECT_EQ(Client::Connect(o).status().code(), StatusCode::kInvalidArgument);  // no nodes
  o.nodes = {NodeConfig{0, "127.0.0.1", 7000}};
  o.client_id = 9000;
  EXPECT_EQ(Client::Connect(o).status().code(), StatusCode::kInvalidArgument);
  o.client_id = 1;
  o.request_timeout = 0ms;
  EXPECT_EQ(Client::Connect(o).status().code(), StatusCode::kInvalidArgument);
}

TEST(ClientOptionsTest, NamesRoundTrip) {
  for (Isolation i : {Isolation::kRamp, Isolation::kS2pl, Isolation::kNone}) {
    auto parsed = ParseIsolation(IsolationName(i));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, i);
  }
  EXPECT_FALSE(ParseIsolation("serializable").ok());
  for (GetMode m : {GetMode::kRpc, GetMode::kRing, GetMode::kRead}) {
    EXPECT_EQ(*ParseGetMode(GetModeName(m)), m);
  }
  for (PutMode m : {PutMode::kRpc, PutMode::kRing}) {
    EXPECT_EQ(*ParsePutMode(PutModeName(m)), m);
  }
  EXPECT_FALSE(ParseGetMode("star").ok());
  EXPECT_FALSE(ParsePutMode("read").ok());
}

}  // namespace
}  // namespace rampart::txn
