// rampart bench iops (--address HOST:PORT | --node ID | --local FILE) [--op read|write]
//     [--pattern random|sequential] [--block-size B] [--span S] [--queue-depth Q]
//     [--connections N] [--seconds T] [--json FILE]
// rampart bench replay TRACE (--address HOST:PORT | --node ID | --local FILE) [--concurrency C]
//     [--connections N] [--json FILE]
//
// Seed 001's IOPS experiments against a storage-node, through the volume
// client (src/storage/volume_client.h): one client thread keeps
// queue-depth x connections requests in flight over N connections, each IO a
// pooled, pre-registered buffer. The node's IO engine is its configuration's.
// Registered under the `bench` command that bench_transport.cc creates.
#include <poll.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <chrono>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>
#include <thread>

#include "bench/bench_json.h"
#include "cmd/bench_common.h"
#include "cmd/commands.h"
#include "common/histogram.h"
#include "common/size.h"
#include "storage/io_engine.h"
#include "storage/volume_client.h"
#include "transport/config_options.h"

namespace rampart::cmd {
namespace {

using Clock = std::chrono::steady_clock;

struct TraceIo {
  uint64_t offset;
  uint32_t length;
};

struct TargetFlags {
  std::string address;  // HOST:PORT of a storage-node
  int64_t node = -1;    // or a storage node of the configuration by id
  std::string local;    // or a local file (or "ram")
  std::string local_size = "1GiB";
  std::string engine = "threads";
  uint32_t io_threads = 4;
  bool buffered = false;
  uint32_t connections = 1;
  std::string json;
};

Result<storage::VolumeClientOptions> ClientOptions(const ClusterConfig& config,
                                                   const TargetFlags& t, uint32_t queue_depth,
                                                   size_t pool_bytes) {
  storage::VolumeClientOptions o;
  if (t.address.empty()) {
    return InvalidArgument("give the storage node as --address HOST:PORT or --node ID");
  }
  const size_t colon = t.address.rfind(':');
  if (colon == std::string::npos) return InvalidArgument("--address wants HOST:PORT");
  o.host = t.address.substr(0, colon);
  const int port = std::atoi(t.address.c_str() + colon + 1);
  if (port <= 0 || port > 65535) return InvalidArgument("--address: bad port");
  o.port = static_cast<uint16_t>(port);
  RAMPART_ASSIGN_OR_RETURN(o.fabric, transport::FabricOptionsFromConfig(config));
  o.fabric.backend = transport::Backend::kUcx;
  o.connections = t.connections;
  o.queue_depth = queue_depth;
  o.pool_bytes = pool_bytes;
  return o;
}

// Where the IOs go: a storage-node through the volume client, or a local
// device through the node's own IO engines. Slot i is the i-th buffer.
class Target {
 public:
  using Callback = std::function<void(const Status&, uint64_t bytes)>;
  virtual ~Target() = default;
  // `depth` buffers of `length` bytes each.
  virtual Status MakeBuffers(uint32_t depth, uint32_t length) = 0;
  // Slot `slot`'s buffer. REQUIRES: MakeBuffers ran; slot < depth.
  virtual std::byte* buffer(uint32_t slot) = 0;
  virtual Status Submit(bool write, const TraceIo& io, uint32_t slot, Callback done) = 0;
  virtual size_t in_flight() const = 0;
  // Runs ready callbacks, waiting up to `timeout` for one.
  virtual void Wait(std::chrono::milliseconds timeout) = 0;
};

class RemoteTarget : public Target {
 public:
  explicit RemoteTarget(std::unique_ptr<storage::VolumeClient> client)
      : client_(std::move(client)) {}
  storage::VolumeClient& client() { return *client_; }
  Status MakeBuffers(uint32_t depth, uint32_t length) override {
    for (uint32_t i = 0; i < depth; ++i) {
      RAMPART_ASSIGN_OR_RETURN(storage::Buffer b, client_->pool().Get(length));
      std::fill(b.data(), b.data() + b.size(), std::byte{0x5a});
      buffers_.push_back(std::move(b));
    }
    return Status();
  }
  std::byte* buffer(uint32_t slot) override { return buffers_[slot].data(); }
  Status Submit(bool write, const TraceIo& io, uint32_t slot, Callback done) override {
    const storage::BufferRef& ref = buffers_[slot].ref();
    return write ? client_->Write(io.offset, io.length, ref, std::move(done))
                 : client_->Read(io.offset, io.length, ref, std::move(done));
  }
  size_t in_flight() const override { return client_->in_flight(); }
  void Wait(std::chrono::milliseconds timeout) override { client_->Wait(timeout); }

 private:
  std::unique_ptr<storage::VolumeClient> client_;
  std::vector<storage::Buffer> buffers_;  // destroyed before client_
};

// The local baseline: the device opened and driven as a storage-node does.
class LocalTarget : public Target {
 public:
  static Result<std::unique_ptr<LocalTarget>> Open(const storage::DeviceOptions& device,
                                                   storage::EngineKind kind,
                                                   const storage::EngineOptions& engine) {
    std::unique_ptr<LocalTarget> t(new LocalTarget());
    RAMPART_ASSIGN_OR_RETURN(t->device_, storage::Device::Open(device));
    LocalTarget* raw = t.get();
    RAMPART_ASSIGN_OR_RETURN(t->engine_, storage::IoEngine::Create(kind, *t->device_, engine, [raw] {
                               std::lock_guard lock(raw->mu_);
                               raw->woken_ = true;
                               raw->cv_.notify_one();
                             }));
    return t;
  }
  ~LocalTarget() override {
    engine_.reset();  // waits for IO in flight
    for (std::byte* b : buffers_) std::free(b);
  }
  const storage::Device& device() const { return *device_; }
  Status MakeBuffers(uint32_t depth, uint32_t length) override {
    const size_t bytes = (static_cast<size_t>(length) + 4095) / 4096 * 4096;
    for (uint32_t i = 0; i < depth; ++i) {
      auto* b = static_cast<std::byte*>(std::aligned_alloc(4096, bytes));
      if (b == nullptr) return ResourceExhausted("allocating IO buffers");
      std::fill(b, b + bytes, std::byte{0x5a});
      buffers_.push_back(b);
    }
    return Status();
  }
  std::byte* buffer(uint32_t slot) override { return buffers_[slot]; }
  Status Submit(bool write, const TraceIo& io, uint32_t slot, Callback done) override {
    if (io.offset > device_->size() || io.length > device_->size() - io.offset) {
      return InvalidArgument("IO ", io.offset, "+", io.length, " lies outside the device (",
                             device_->size(), " bytes)");
    }
    const uint64_t tag = next_tag_++;
    RAMPART_RETURN_IF_ERROR(engine_->Submit(storage::IoRequest{
        write ? storage::IoOp::kWrite : storage::IoOp::kRead, io.offset, io.length,
        buffers_[slot], tag}));
    pending_.emplace(tag, std::make_pair(io.length, std::move(done)));
    return Status();
  }
  size_t in_flight() const override { return pending_.size(); }
  void Wait(std::chrono::milliseconds timeout) override {
    done_.clear();
    if (engine_->Reap(done_) == 0 && engine_->wait_fd() >= 0) {
      pollfd p{.fd = engine_->wait_fd(), .events = POLLIN, .revents = 0};
      (void)poll(&p, 1, static_cast<int>(timeout.count()));  // EINTR: reap what there is
      engine_->Reap(done_);
    } else if (done_.empty()) {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, timeout, [this] { return woken_; });
      woken_ = false;
      lock.unlock();
      engine_->Reap(done_);
    }
    for (const storage::IoCompletion& c : done_) {
      auto it = pending_.find(c.tag);
      if (it == pending_.end()) continue;
      auto [length, cb] = std::move(it->second);
      pending_.erase(it);
      cb(c.status, c.status.ok() ? length : 0);
    }
  }

 private:
  LocalTarget() = default;
  std::unique_ptr<storage::Device> device_;
  std::unique_ptr<storage::IoEngine> engine_;
  std::vector<std::byte*> buffers_;
  uint64_t next_tag_ = 1;
  std::unordered_map<uint64_t, std::pair<uint32_t, Callback>> pending_;
  std::vector<storage::IoCompletion> done_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool woken_ = false;
};

// --verify: the bytes a write puts at each device position, a function of the
// position alone, so reads of any block size can check what writes of any
// other block size left. Positions are 8-byte aligned words.
uint64_t PatternWord(uint64_t position) {
  uint64_t z = position + 0x9e3779b97f4a7c15ull;  // splitmix64
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void FillPattern(std::byte* out, const TraceIo& io) {
  for (uint32_t i = 0; i < io.length; ++i) {
    const uint64_t position = io.offset + i;
    const uint64_t word = PatternWord(position & ~uint64_t{7});
    out[i] = static_cast<std::byte>(word >> (8 * (position & 7)));
  }
}

// OK, or the first device position whose byte differs from the pattern.
Status CheckPattern(const std::byte* data, const TraceIo& io) {
  std::vector<std::byte> want(io.length);
  FillPattern(want.data(), io);
  if (std::memcmp(data, want.data(), io.length) == 0) return Status::Ok();
  uint32_t i = 0;
  while (data[i] == want[i]) ++i;
  return Corruption("verify: byte ", io.offset + i, " of the device reads ",
                    static_cast<int>(data[i]), ", the pattern says ", static_cast<int>(want[i]));
}

// Keeps `depth` IOs in flight on `target`, taking each next IO from `next`
// (false: no more), until `deadline`. Latency per IO from issue to callback.
// With `verify`, writes carry the pattern and reads check it.
RunResult Drive(Target& target, bool write, uint32_t depth, uint32_t max_length,
                Clock::time_point deadline, const std::function<bool(TraceIo&)>& next,
                bool verify = false) {
  RunResult r;
  Histogram h;
  if (Status st = target.MakeBuffers(depth, max_length); !st.ok()) {
    r.errors = 1;
    r.first_error = st.ToString();
    return r;
  }
  bool done = false;
  std::function<void(uint32_t)> issue = [&](uint32_t slot) {
    TraceIo io;
    if (done || Clock::now() >= deadline || !next(io)) {
      done = true;
      return;
    }
    if (verify && write) FillPattern(target.buffer(slot), io);
    const auto t0 = Clock::now();
    auto cb = [&, slot, t0, io](const Status& io_status, uint64_t bytes) {
      Status st = io_status;
      if (st.ok() && verify && !write) st = CheckPattern(target.buffer(slot), io);
      if (st.ok()) {
        h.Record(Clock::now() - t0);
        ++r.ops;
        r.bytes += bytes;
      } else {
        ++r.errors;
        if (r.first_error.empty()) r.first_error = st.ToString();
        if (st.code() == StatusCode::kUnavailable) done = true;
      }
      issue(slot);
    };
    if (Status st = target.Submit(write, io, slot, cb); !st.ok()) {
      ++r.errors;
      if (r.first_error.empty()) r.first_error = st.ToString();
      done = true;
    }
  };
  const auto start = Clock::now();
  for (uint32_t slot = 0; slot < depth; ++slot) issue(slot);
  while (target.in_flight() > 0) target.Wait(std::chrono::milliseconds(100));
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.p50_ns = h.Percentile(50);
  r.p99_ns = h.Percentile(99);
  return r;
}

struct OpenedTarget {
  std::unique_ptr<Target> target;
  uint64_t device_bytes = 0;
  std::string description;  // for the table title
  nlohmann::json json;      // for the configuration
};

// The --address or --local target, with room for `depth` IOs of `max_length`
// bytes (`per_connection` of them on each connection to a node).
Result<OpenedTarget> OpenTarget(const ClusterConfig& config, TargetFlags t,
                                uint32_t per_connection, uint32_t depth, uint32_t max_length) {
  OpenedTarget out;
  if (t.node >= 0) {
    const StorageNodeConfig* node = config.FindStorageNode(static_cast<uint32_t>(t.node));
    if (node == nullptr) {
      return InvalidArgument("--node ", t.node, ": no storage node with that id in the "
                             "configuration's [[storage_nodes]]");
    }
    t.address = node->address();
  }
  if (!t.local.empty()) {
    storage::DeviceOptions d;
    d.path = t.local;
    RAMPART_ASSIGN_OR_RETURN(d.size, ParseSize(t.local_size));
    d.direct = !t.buffered;
    RAMPART_ASSIGN_OR_RETURN(storage::EngineKind kind, storage::ParseEngineKind(t.engine));
    storage::EngineOptions e;
    e.threads = t.io_threads;
    e.queue_depth = std::max<uint32_t>(depth, 1);
    RAMPART_ASSIGN_OR_RETURN(std::unique_ptr<LocalTarget> local,
                             LocalTarget::Open(d, kind, e));
    out.device_bytes = local->device().size();
    out.description = StrCat("local ", local->device().description(), ", engine ", t.engine,
                             kind == storage::EngineKind::kThreads
                                 ? StrCat(" (", t.io_threads, " threads)")
                                 : std::string());
    out.json = {{"target", "local"},         {"path", t.local},
                {"device", local->device().description()},
                {"device_bytes", out.device_bytes}, {"engine", t.engine},
                {"io_threads", t.io_threads}, {"direct", local->device().direct()}};
    out.target = std::move(local);
    return out;
  }
  if (t.address.empty()) {
    return InvalidArgument("give a target: --address HOST:PORT, --node ID or --local FILE");
  }
  const size_t pool = static_cast<size_t>(depth) * ((max_length + 4095) / 4096 * 4096);
  RAMPART_ASSIGN_OR_RETURN(storage::VolumeClientOptions o,
                           ClientOptions(config, t, per_connection, pool));
  RAMPART_ASSIGN_OR_RETURN(std::unique_ptr<storage::VolumeClient> client,
                           storage::VolumeClient::Connect(o));
  const storage::wire::DeviceInfo dev = client->device();
  out.device_bytes = dev.device_bytes;
  out.description = StrCat("node ", t.address, " (device ", dev.device_bytes, " B, block ",
                           dev.block_bytes, " B, node queue depth ", dev.queue_depth, "), ",
                           t.connections, " connections, transport ucx",
                           o.fabric.ucx_transports.empty() ? "" : " " + o.fabric.ucx_transports);
  out.json = {{"target", "node"},          {"address", t.address},
              {"device_bytes", dev.device_bytes}, {"device_block_bytes", dev.block_bytes},
              {"node_queue_depth", dev.queue_depth}, {"connections", t.connections},
              {"transport", "ucx"},        {"ucx_tls", o.fabric.ucx_transports}};
  out.target = std::make_unique<RemoteTarget>(std::move(client));
  return out;
}

// A target named wrongly is a usage error (exit 2); one that cannot be reached
// or opened is a failure (exit 1).
int ReportOpenError(const Status& status) {
  return status.code() == StatusCode::kInvalidArgument ? ReportUsageError(status)
                                                       : ReportFailure(status);
}

void AddTargetFlags(CLI::App* cmd, TargetFlags& t) {
  CLI::Option* address =
      cmd->add_option("--address", t.address, "The storage-node to measure, HOST:PORT")
          ->type_name("HOST:PORT");
  CLI::Option* local =
      cmd->add_option("--local", t.local,
                      "Measure this local file (or \"ram\") directly, through the storage "
                      "node's IO engine (the baseline)")
          ->type_name("FILE");
  CLI::Option* node =
      cmd->add_option("--node", t.node,
                      "The storage-node to measure, by its id in the configuration's "
                      "[[storage_nodes]]")
          ->check(CLI::Range(0, 65535))
          ->type_name("ID");
  address->excludes(local);
  node->excludes(address)->excludes(local);
  cmd->add_option("--local-size", t.local_size,
                  "--local: bytes of the file used (created or extended when shorter)")
      ->capture_default_str();
  cmd->add_option("--engine", t.engine, "--local: IO engine, auto, threads, uring, inline or none")
      ->check(CLI::IsMember({"auto", "threads", "uring", "inline", "none"}))
      ->capture_default_str();
  cmd->add_option("--io-threads", t.io_threads, "--local: IO threads of the threads engine")
      ->check(CLI::Range(1u, 64u))
      ->capture_default_str();
  cmd->add_flag("--buffered", t.buffered, "--local: do not try O_DIRECT");
  cmd->add_option("--connections", t.connections, "Connections to the node")
      ->check(CLI::Range(1u, 64u))
      ->capture_default_str();
  cmd->add_option("--json", t.json, "Where to write the results as JSON")->capture_default_str();
}

// Reads a trace: one "offset length" per line (decimal bytes), blank lines
// and lines starting with '#' ignored.
Result<std::vector<TraceIo>> ReadTrace(const std::string& path) {
  std::ifstream in(path);
  if (!in) return ErrnoStatus("open " + path, errno);
  std::vector<TraceIo> ops;
  std::string line;
  for (size_t n = 1; std::getline(in, line); ++n) {
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    std::istringstream fields(line);
    uint64_t offset = 0, length = 0;
    std::string extra;
    if (!(fields >> offset >> length) || (fields >> extra) || length == 0 ||
        length > (uint64_t{1} << 30)) {
      return InvalidArgument(path, ":", n, ": expected \"offset length\" (bytes), got \"", line,
                             "\"");
    }
    ops.push_back(TraceIo{offset, static_cast<uint32_t>(length)});
  }
  if (ops.empty()) return InvalidArgument(path, ": no IO in the trace");
  return ops;
}

// Widens each IO to the `align`-byte blocks it touches.
// REQUIRES: align is a power of two.
void AlignTrace(std::vector<TraceIo>& ops, uint32_t align) {
  for (TraceIo& io : ops) {
    const uint64_t start = io.offset & ~uint64_t{align - 1};
    const uint64_t end = (io.offset + io.length + align - 1) & ~uint64_t{align - 1};
    io = TraceIo{start, static_cast<uint32_t>(end - start)};
  }
}

struct IopsFlags {
  TargetFlags target;
  std::string op = "read", pattern = "random";
  std::string block_size = "4KiB", span;
  uint32_t queue_depth = 16;
  double seconds = 5;
  bool verify = false;
};

struct ReplayFlags {
  TargetFlags target;
  std::string trace;
  uint32_t concurrency = 8;
  uint32_t align = 0;
};

// The run's results into `doc`, written to `path`; the exit code.
int WriteResults(nlohmann::json doc, const RunResult& r, const std::string& path) {
  doc["results"] = ResultJson(r);
  if (Status st = bench::WriteJsonFile(doc, path); !st.ok()) return ReportFailure(st);
  std::cerr << "rampart: results written to " << path << "\n";
  return r.errors == 0 ? kExitOk : kExitFailure;
}

int RunIops(const ClusterConfig& config, const IopsFlags& f) {
  auto block = ParseSize(f.block_size);
  if (!block.ok() || *block == 0 || *block > (uint64_t{1} << 30)) {
    return ReportUsageError(InvalidArgument("--block-size: expected a size up to 1 GiB"));
  }
  const uint32_t bs = static_cast<uint32_t>(*block);
  const uint32_t depth = f.queue_depth * f.target.connections;
  auto opened = OpenTarget(config, f.target, f.queue_depth, depth, bs);
  if (!opened.ok()) return ReportOpenError(opened.status());
  uint64_t span = opened->device_bytes;
  if (!f.span.empty()) {
    auto s = ParseSize(f.span);
    if (!s.ok()) return ReportUsageError(s.status());
    span = std::min<uint64_t>(*s, span);
  }
  const uint64_t blocks = span / bs;
  if (blocks == 0) {
    return ReportUsageError(InvalidArgument("--span (", span, " bytes) holds no block of ", bs));
  }
  std::mt19937_64 rng(0x10b5);
  std::uniform_int_distribution<uint64_t> pick(0, blocks - 1);
  uint64_t cursor = 0;
  const bool random = f.pattern == "random";
  auto next = [&](TraceIo& io) {
    const uint64_t block_index = random ? pick(rng) : cursor++ % blocks;
    io = TraceIo{block_index * bs, bs};
    return true;
  };
  const auto deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(f.seconds * 1000));
  const RunResult r =
      Drive(*opened->target, f.op == "write", depth, bs, deadline, next, f.verify);
  std::ostringstream title;
  title << "iops bench: " << f.op << " " << f.pattern << ", block " << bs << " B, span "
        << span << " B, queue depth " << f.queue_depth << " x " << f.target.connections
        << ", " << opened->description << ", " << std::fixed << std::setprecision(2)
        << r.seconds << " s";
  PrintRow(title.str(), r);
  nlohmann::json doc;
  doc["benchmark"] = "iops";
  doc["configuration"] = opened->json;
  doc["configuration"].update({{"op", f.op},
                               {"pattern", f.pattern},
                               {"block_bytes", bs},
                               {"span_bytes", span},
                               {"queue_depth", f.queue_depth},
                               {"in_flight", depth},
                               {"verify", f.verify},
                               {"duration_bound_s", f.seconds},
                               {"cores", std::thread::hardware_concurrency()}});
  return WriteResults(std::move(doc), r, f.target.json);
}

int RunReplay(const ClusterConfig& config, const ReplayFlags& f) {
  auto trace = ReadTrace(f.trace);
  if (!trace.ok()) return ReportUsageError(trace.status());
  if (f.align > 1) AlignTrace(*trace, f.align);
  uint32_t max_length = 0;
  for (const TraceIo& io : *trace) max_length = std::max(max_length, io.length);
  const uint32_t per_connection =
      (f.concurrency + f.target.connections - 1) / f.target.connections;
  auto opened = OpenTarget(config, f.target, per_connection, f.concurrency, max_length);
  if (!opened.ok()) return ReportOpenError(opened.status());
  size_t i = 0;
  auto next = [&](TraceIo& io) {
    if (i == trace->size()) return false;
    io = (*trace)[i++];
    return true;
  };
  const RunResult r = Drive(*opened->target, /*write=*/false, f.concurrency, max_length,
                            Clock::time_point::max(), next);
  std::ostringstream title;
  title << "replay bench: " << f.trace << " (" << trace->size() << " IOs), concurrency "
        << f.concurrency << ", " << opened->description << ", elapsed " << std::fixed
        << std::setprecision(3) << r.seconds << " s";
  PrintRow(title.str(), r);
  nlohmann::json doc;
  doc["benchmark"] = "replay";
  doc["configuration"] = opened->json;
  doc["configuration"].update({{"trace", f.trace},
                               {"trace_ios", trace->size()},
                               {"align", f.align},
                               {"concurrency", f.concurrency},
                               {"cores", std::thread::hardware_concurrency()}});
  return WriteResults(std::move(doc), r, f.target.json);
}

void RegisterIops(CLI::App* bench, CommandContext& ctx) {
  auto f = std::make_shared<IopsFlags>();
  f->target.json = "iops-bench.json";
  CLI::App* iops = bench->add_subcommand(
      "iops",
      "Seed 001: random or sequential reads or writes of one block size over a span of a "
      "storage-node's device, queue-depth x connections in flight from one client thread "
      "(the node's engine is its configuration's); prints IOPS, MB/s, latency p50/p99 and "
      "writes JSON");
  AddTargetFlags(iops, f->target);
  iops->add_option("--op", f->op, "read or write")
      ->check(CLI::IsMember({"read", "write"}))
      ->capture_default_str();
  iops->add_option("--pattern", f->pattern, "random or sequential offsets")
      ->check(CLI::IsMember({"random", "sequential"}))
      ->capture_default_str();
  iops->add_option("--block-size", f->block_size, "Bytes per IO (e.g. 512, 4KiB, 16KiB)")
      ->capture_default_str();
  iops->add_option("--span", f->span, "Bytes of the device addressed. Default: all of it");
  iops->add_option("--queue-depth", f->queue_depth, "IOs in flight per connection")
      ->check(CLI::Range(1u, 4096u))
      ->capture_default_str();
  iops->add_option("--seconds", f->seconds, "How long to run")
      ->check(CLI::Range(0.01, 86400.0))
      ->capture_default_str();
  iops->add_flag("--verify", f->verify,
                 "Writes store a pattern that is a function of each byte's device position; "
                 "reads check it and count every mismatch as an error (write the span "
                 "first, e.g. --op write --pattern sequential)");
  OnRunWithConfig(iops, ctx, [f](const ClusterConfig& config) { return RunIops(config, *f); });
}

void RegisterReplay(CLI::App* bench, CommandContext& ctx) {
  auto rf = std::make_shared<ReplayFlags>();
  rf->target.json = "replay-bench.json";
  CLI::App* replay = bench->add_subcommand(
      "replay",
      "Replays an IO trace as reads against a storage-node, `concurrency` IOs in flight in "
      "trace order; reports elapsed time, IOPS, MB/s and latency p50/p99 and writes JSON. "
      "TRACE format: one IO per line, \"OFFSET LENGTH\" in decimal bytes separated by "
      "blanks; blank lines and lines starting with # are ignored");
  replay->add_option("TRACE", rf->trace, "The IO trace file")->required();
  AddTargetFlags(replay, rf->target);
  replay->add_option("--concurrency", rf->concurrency, "IOs in flight")
      ->check(CLI::Range(1u, 4096u))
      ->capture_default_str();
  replay->add_option("--align", rf->align,
                     "Widen every IO to whole blocks of this many bytes (a power of two), as "
                     "O_DIRECT devices need; 0 replays the trace as it is")
      ->check([](const std::string& v) -> std::string {
        const unsigned long a = std::strtoul(v.c_str(), nullptr, 10);
        return a == 0 || (a <= (1u << 20) && (a & (a - 1)) == 0)
                   ? std::string()
                   : std::string("0 or a power of two up to 1 MiB");
      })
      ->capture_default_str();
  OnRunWithConfig(replay, ctx,
                  [rf](const ClusterConfig& config) { return RunReplay(config, *rf); });
}

}  // namespace

void RegisterBenchIopsCommands(CLI::App& app, CommandContext& ctx) {
  CLI::App* bench = app.get_subcommand("bench");  // throws if RegisterBenchCommands did not run
  RegisterIops(bench, ctx);
  RegisterReplay(bench, ctx);
}

}  // namespace rampart::cmd
