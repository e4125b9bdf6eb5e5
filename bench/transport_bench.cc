// `rampart bench transport` (see transport_bench.h).
//
// Every measurement is a closed loop: `in_flight` operations are kept
// outstanding for the configured duration; each completion records its round
// trip and starts the next. One client thread here and one peer process keep
// at most two threads busy, as many as this machine has cores.
#include "bench/transport_bench.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <cstring>
#include <deque>
#include <functional>
#include <iomanip>
#include <ostream>
#include <thread>

#include "bench/bench_json.h"
#include "bench/transport_peer.h"
#include "common/histogram.h"

namespace rampart::bench {
namespace {

using Clock = std::chrono::steady_clock;
using transport::Backend;
using transport::Channel;
using transport::Endpoint;
using transport::Fabric;
using transport::IoSlice;
using transport::MemoryRegion;
using transport::RemoteRegion;

// Starts one operation; must call `done` exactly once when it completes.
using StartOp = std::function<Status(std::function<void()> done)>;

struct Measured {
  uint64_t ops = 0;
  double seconds = 0;
  Histogram latency;
};

Result<Measured> ClosedLoop(Fabric& fabric, int in_flight, std::chrono::milliseconds duration,
                            uint64_t max_ops, const StartOp& start) {
  Measured m;
  Status failure;
  uint64_t started = 0;
  int outstanding = 0;
  const auto begin = Clock::now();
  const auto end = begin + duration;
  bool stop = false;
  std::function<void()> issue = [&] {
    const auto t0 = Clock::now();
    ++started;
    ++outstanding;
    Status st = start([&, t0] {
      m.latency.Record(Clock::now() - t0);
      ++m.ops;
      --outstanding;
      if (!stop && failure.ok()) issue();
    });
    if (!st.ok()) {
      --outstanding;
      failure = st;
    }
  };
  for (int i = 0; i < in_flight; ++i) issue();
  while (outstanding > 0 && failure.ok()) {
    if (!stop && (Clock::now() >= end || started >= max_ops)) stop = true;
    fabric.Wait(std::chrono::milliseconds(10));
    if (Clock::now() > end + std::chrono::seconds(10)) {
      return TimedOut(outstanding, " operations did not complete within 10 s of the end");
    }
  }
  if (!failure.ok()) return failure;
  m.seconds = std::chrono::duration<double>(Clock::now() - begin).count();
  return m;
}

// A client connected to one peer process, with the peer's region imported
// and, on ucx, a channel open. Replies to messages are matched in order.
struct Session {
  std::unique_ptr<PeerProcess> peer;
  std::unique_ptr<Fabric> fabric;
  std::shared_ptr<Endpoint> ep;
  std::shared_ptr<Channel> channel;
  RemoteRegion remote;
  std::deque<std::function<void()>> waiting_replies;
  std::deque<std::function<void()>> waiting_ring_replies;
};

Result<std::unique_ptr<Session>> OpenSession(const TransportBenchOptions& options,
                                             const transport::FabricOptions& fabric_options,
                                             const std::vector<std::string>& peer_args) {
  auto s = std::make_unique<Session>();
  RAMPART_ASSIGN_OR_RETURN(s->peer, PeerProcess::Start(options.self_exe, peer_args));
  RAMPART_ASSIGN_OR_RETURN(s->fabric, Fabric::Create(fabric_options));
  Session* raw = s.get();
  std::vector<std::byte> region_reply;
  s->fabric->SetMessageHandler([raw, &region_reply](const std::shared_ptr<Endpoint>&,
                                                    std::span<const std::byte> m) {
    if (!m.empty() && m[0] == std::byte{'D'}) {
      region_reply.assign(m.begin(), m.end());
      return;
    }
    if (raw->waiting_replies.empty()) return;
    auto done = std::move(raw->waiting_replies.front());
    raw->waiting_replies.pop_front();
    done();
  });
  RAMPART_ASSIGN_OR_RETURN(s->ep, s->fabric->Connect("127.0.0.1", s->peer->port()));
  if (s->fabric->backend() == Backend::kUcx) {
    std::byte d{'D'};
    IoSlice slice{&d, 1};
    RAMPART_RETURN_IF_ERROR(s->ep->Send(std::span<const IoSlice>(&slice, 1), [](Status) {}));
    auto deadline = Clock::now() + std::chrono::seconds(10);
    while (region_reply.empty() && Clock::now() < deadline) s->fabric->Wait(std::chrono::milliseconds(10));
    if (region_reply.empty()) return TimedOut("the peer did not send its region descriptor");
    RAMPART_ASSIGN_OR_RETURN(s->remote, s->ep->Import(std::span<const std::byte>(region_reply).subspan(1)));
    RAMPART_ASSIGN_OR_RETURN(s->channel, s->fabric->OpenChannel(s->ep));
    s->channel->SetMessageHandler([raw](std::span<const std::byte>) {
      if (raw->waiting_ring_replies.empty()) return;
      auto done = std::move(raw->waiting_ring_replies.front());
      raw->waiting_ring_replies.pop_front();
      done();
    });
  }
  // The handler above captured a local; from here on it only sees replies.
  s->fabric->SetMessageHandler([raw](const std::shared_ptr<Endpoint>&, std::span<const std::byte>) {
    if (raw->waiting_replies.empty()) return;
    auto done = std::move(raw->waiting_replies.front());
    raw->waiting_replies.pop_front();
    done();
  });
  return s;
}

class Runner {
 public:
  explicit Runner(const TransportBenchOptions& options) : options_(options) {}

  Status Measure(const std::string& path, const std::string& operation, size_t bytes,
                 int in_flight, Fabric& fabric, const StartOp& start) {
    spdlog::info("bench transport: {} {} {} B x{} ...", path, operation, bytes, in_flight);
    RAMPART_ASSIGN_OR_RETURN(Measured m, ClosedLoop(fabric, in_flight, options_.duration,
                                                    options_.max_ops, start));
    TransportBenchResult r;
    r.path = path;
    r.operation = operation;
    r.bytes = bytes;
    r.in_flight = in_flight;
    r.ops = m.ops;
    r.seconds = m.seconds;
    r.ops_per_sec = m.ops / m.seconds;
    r.p50_ns = m.latency.Percentile(50);
    r.p99_ns = m.latency.Percentile(99);
    results_.push_back(r);
    return Status();
  }

  std::vector<TransportBenchResult> results() && { return std::move(results_); }

 private:
  const TransportBenchOptions& options_;
  std::vector<TransportBenchResult> results_;
};

// Request/reply over two-sided messages or the ring.
StartOp RequestReply(Session& s, std::vector<std::byte>& payload, bool ring) {
  return [&s, &payload, ring](std::function<void()> done) -> Status {
    IoSlice slice{payload.data(), payload.size()};
    if (ring) {
      RAMPART_RETURN_IF_ERROR(s.channel->Send(std::span<const IoSlice>(&slice, 1)));
      s.waiting_ring_replies.push_back(std::move(done));
      return Status();
    }
    RAMPART_RETURN_IF_ERROR(s.ep->Send(std::span<const IoSlice>(&slice, 1), [](Status) {}));
    s.waiting_replies.push_back(std::move(done));
    return Status();
  };
}

StartOp OneSided(Session& s, std::vector<std::byte>& buffer, size_t bytes, bool read) {
  return [&s, &buffer, bytes, read, next = size_t{0}](std::function<void()> done) mutable {
    // Walk the region so reads do not all hit one cache line.
    const size_t offset = (next++ * 4096) % (kPeerRegionBytes - bytes);
    IoSlice slice{buffer.data(), bytes};
    auto cb = [done = std::move(done)](Status) { done(); };
    return read ? s.ep->Read(s.remote, offset, std::span<const IoSlice>(&slice, 1), std::move(cb))
                : s.ep->Write(std::span<const IoSlice>(&slice, 1), s.remote, offset, std::move(cb));
  };
}

// Seed 004's experiment: 32 discrete 4 KiB buffers read from the peer.
constexpr int kDiscrete = 32;
constexpr size_t kDiscreteBytes = 4096;

Status MeasureSeed004(Runner& runner, const std::string& path, Session& cached, Session& uncached) {
  std::vector<std::vector<std::byte>> buffers;
  std::vector<IoSlice> slices;
  for (int i = 0; i < kDiscrete; ++i) {
    buffers.emplace_back(kDiscreteBytes + 64);  // separate heap blocks, not one array
    slices.push_back({buffers.back().data() + 64, kDiscreteBytes});
  }
  RAMPART_ASSIGN_OR_RETURN(MemoryRegion handle, cached.fabric->RegisterVector(slices));
  const size_t total = kDiscrete * kDiscreteBytes;

  // (a) one vectored transfer on a pre-registered handle.
  RAMPART_RETURN_IF_ERROR(runner.Measure(path, "seed004-a-vectored", total, 1, *cached.fabric,
      [&](std::function<void()> done) {
        return cached.ep->ReadToRegion(cached.remote, 0, handle, 0, total,
                                       [done = std::move(done)](Status) { done(); });
      }));
  // (b) 32 transfers on pre-registered buffers, one completion each.
  RAMPART_RETURN_IF_ERROR(runner.Measure(path, "seed004-b-32-transfers", total, 1, *cached.fabric,
      [&](std::function<void()> done) -> Status {
        auto left = std::make_shared<int>(kDiscrete);
        auto all = std::make_shared<std::function<void()>>(std::move(done));
        for (int i = 0; i < kDiscrete; ++i) {
          RAMPART_RETURN_IF_ERROR(cached.ep->ReadToRegion(
              cached.remote, i * kDiscreteBytes, handle, i * kDiscreteBytes, kDiscreteBytes,
              [left, all](Status) {
                if (--*left == 0) (*all)();
              }));
        }
        return Status();
      }));
  // (c) 32 transfers, each registering and deregistering its buffer; (d) the
  // same with the registration cache (seed 004's pin-down cache) on.
  auto register_each = [&](Session& s) {
    return [&s, &slices](std::function<void()> done) -> Status {
      auto left = std::make_shared<int>(kDiscrete);
      auto all = std::make_shared<std::function<void()>>(std::move(done));
      for (int i = 0; i < kDiscrete; ++i) {
        RAMPART_ASSIGN_OR_RETURN(MemoryRegion r,
                                 s.fabric->RegisterVector(std::span<const IoSlice>(&slices[i], 1)));
        auto region = std::make_shared<MemoryRegion>(std::move(r));
        RAMPART_RETURN_IF_ERROR(s.ep->ReadToRegion(
            s.remote, i * kDiscreteBytes, *region, 0, kDiscreteBytes,
            [left, all, region](Status) mutable {
              region.reset();  // deregisters (or returns to the cache)
              if (--*left == 0) (*all)();
            }));
      }
      return Status();
    };
  };
  RAMPART_RETURN_IF_ERROR(runner.Measure(path, "seed004-c-register-each", total, 1,
                                         *uncached.fabric, register_each(uncached)));
  return runner.Measure(path, "seed004-d-register-each-cached", total, 1, *cached.fabric,
                        register_each(cached));
}

std::vector<std::string> PeerArgs(const std::string& backend, const std::string& tls,
                                  const transport::FabricOptions& base, int seconds) {
  return {"--backend", backend, "--ucx-tls", tls, "--ucx-net-devices", base.ucx_net_devices,
          "--seconds", std::to_string(seconds)};
}

Status MeasurePath(Runner& runner, const TransportBenchOptions& options, const std::string& path) {
  transport::FabricOptions fo = options.fabric;
  std::string backend = path == "tcp" ? "tcp" : "ucx";
  std::string tls = path == "ucx-tcp" ? "tcp" : path == "ucx-shm" ? "" : fo.ucx_transports;
  fo.backend = path == "tcp" ? Backend::kTcp : Backend::kUcx;
  fo.ucx_transports = tls;
  // The peer lives long enough for every measurement of this path.
  const int peer_seconds = static_cast<int>(30 + options.duration.count() * 20 / 1000);
  RAMPART_ASSIGN_OR_RETURN(auto s, OpenSession(options, fo, PeerArgs(backend, tls, fo, peer_seconds)));
  std::vector<std::byte> payload(64), buffer(4096);
  for (int in_flight : {1, 16}) {
    if (fo.backend == Backend::kUcx) {
      for (size_t bytes : {size_t{64}, size_t{1024}}) {
        RAMPART_RETURN_IF_ERROR(runner.Measure(path, "read", bytes, in_flight, *s->fabric,
                                               OneSided(*s, buffer, bytes, true)));
      }
      RAMPART_RETURN_IF_ERROR(runner.Measure(path, "write", 64, in_flight, *s->fabric,
                                             OneSided(*s, buffer, 64, false)));
    }
    RAMPART_RETURN_IF_ERROR(runner.Measure(path, "message", 64, in_flight, *s->fabric,
                                           RequestReply(*s, payload, false)));
    if (fo.backend == Backend::kUcx) {
      RAMPART_RETURN_IF_ERROR(runner.Measure(path, "ring", 64, in_flight, *s->fabric,
                                             RequestReply(*s, payload, true)));
    }
  }
  if (fo.backend == Backend::kUcx) {
    transport::FabricOptions no_cache = fo;
    no_cache.registration_cache_bytes = 0;
    RAMPART_ASSIGN_OR_RETURN(auto uncached,
                             OpenSession(options, no_cache, PeerArgs(backend, tls, fo, peer_seconds)));
    RAMPART_RETURN_IF_ERROR(MeasureSeed004(runner, path, *s, *uncached));
  }
  return Status();
}

std::string FormatRate(double per_sec) {
  char buf[32];
  if (per_sec >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.2f M/s", per_sec / 1e6);
  } else if (per_sec >= 1e3) {
    std::snprintf(buf, sizeof buf, "%.1f K/s", per_sec / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f /s", per_sec);
  }
  return buf;
}

}  // namespace

Result<std::vector<TransportBenchResult>> RunTransportBench(const TransportBenchOptions& options) {
  std::vector<std::string> paths = options.paths;
  if (paths.empty()) paths = {"ucx-shm", "ucx-tcp", "tcp"};
  Runner runner(options);
  for (const std::string& path : paths) {
    if (path != "ucx-shm" && path != "ucx-tcp" && path != "tcp") {
      return InvalidArgument("unknown transport path \"", path, "\"; use ucx-shm, ucx-tcp or tcp");
    }
    RAMPART_RETURN_IF_ERROR(MeasurePath(runner, options, path).WithContext(path));
  }
  return std::move(runner).results();
}

void PrintTransportTable(const std::vector<TransportBenchResult>& results, std::ostream& out) {
  out << std::left << std::setw(9) << "path" << std::setw(32) << "operation" << std::right
      << std::setw(8) << "bytes" << std::setw(8) << "flight" << std::setw(14) << "ops/s"
      << std::setw(12) << "p50" << std::setw(12) << "p99" << "\n";
  for (const auto& r : results) {
    out << std::left << std::setw(9) << r.path << std::setw(32) << r.operation << std::right
        << std::setw(8) << r.bytes << std::setw(8) << r.in_flight << std::setw(14)
        << FormatRate(r.ops_per_sec) << std::setw(12) << FormatNanos(static_cast<double>(r.p50_ns))
        << std::setw(12) << FormatNanos(static_cast<double>(r.p99_ns)) << "\n";
  }
}

Status WriteTransportJson(const std::vector<TransportBenchResult>& results,
                          const TransportBenchOptions& options, const std::string& path) {
  nlohmann::json doc;
  doc["benchmark"] = "transport";
  doc["configuration"] = {
      {"duration_ms", options.duration.count()},
      {"client_threads", 1},
      {"peer", "one process on the same host, 127.0.0.1"},
      {"spin_us", options.fabric.spin.count()},
      {"ucx_net_devices", options.fabric.ucx_net_devices},
      {"cores", std::thread::hardware_concurrency()},
  };
  for (const auto& r : results) {
    doc["results"].push_back({{"path", r.path},
                              {"operation", r.operation},
                              {"bytes", r.bytes},
                              {"in_flight", r.in_flight},
                              {"ops", r.ops},
                              {"seconds", r.seconds},
                              {"ops_per_sec", r.ops_per_sec},
                              {"p50_ns", r.p50_ns},
                              {"p99_ns", r.p99_ns}});
  }
  return WriteJsonFile(doc, path);
}

}  // namespace rampart::bench
