// rampart nbd --volume NAME | --ram SIZE: serves a volume (or a scratch RAM
// device) over NBD until SIGINT or SIGTERM (docs/nbd.md, "rampart nbd").
//
// Threads. NbdServer makes every device call from its own loop thread, but a
// storage::Volume belongs to the thread that opened it (its transport Fabric
// runs everything on its creator thread). So the main thread opens the
// volume, and OwnerThreadDevice hands each call from the loop thread over to
// the main thread, which runs it and hands the result back: the volume is
// only ever touched by the thread that opened it. A separate thread waits for
// SIGINT/SIGTERM and tells the main thread to stop; the main thread then stops
// the server, flushes and closes the volume, and exits 0.
//
// With --rebuild-node ID the main thread rebuilds that node right after the
// server started, answering the clients' calls between the rebuild's batches
// (Volume::Rebuild's progress callback allows that), then serves as usual.
//
// Exit codes: 0 after SIGINT/SIGTERM; 1 when the volume or the port cannot be
// opened, or the final flush fails; 2 for usage errors (unknown volume).
#include <CLI/CLI.hpp>

#include <signal.h>

#include <spdlog/spdlog.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "cmd/commands.h"
#include "cmd/volume_open.h"
#include "common/size.h"
#include "storage/nbd_server.h"
#include "storage/ram_block_device.h"
#include "storage/volume.h"

namespace rampart::cmd {
namespace {

using storage::BlockDevice;

// A BlockDevice whose calls, made on any thread (NbdServer's loop thread),
// run on the thread that runs Serve() (the one that owns the real device).
// One call at a time: a caller waits for the one before it.
//
// Thread-safety: the BlockDevice calls and Shutdown() from any thread;
// Serve() from the owner thread only.
class OwnerThreadDevice final : public BlockDevice {
 public:
  explicit OwnerThreadDevice(BlockDevice& device)
      : device_(device), size_(device.size()), block_(device.preferred_block_size()) {}

  uint64_t size() const override { return size_; }
  uint32_t preferred_block_size() const override { return block_; }
  Status Read(uint64_t offset, std::span<std::byte> out) override {
    return Call([&] { return device_.Read(offset, out); }, false);
  }
  Status ReadMany(std::span<const ReadRange> reads) override {
    return Call([&] { return device_.ReadMany(reads); }, false);
  }
  Status Write(uint64_t offset, std::span<const std::byte> data) override {
    return Call([&] { return device_.Write(offset, data); }, true);
  }
  Status Flush() override {
    return Call([&] { return device_.Flush(); }, false);
  }
  Status Trim(uint64_t offset, uint64_t length) override {
    return Call([&] { return device_.Trim(offset, length); }, true);
  }

  // Runs the calls handed over until Shutdown(). When calls stopped for
  // `idle` after a write or trim that no flush followed, runs `on_idle`
  // (the owner flushes, so that the volume's intent log clears).
  void Serve(std::chrono::milliseconds idle, const std::function<void()>& on_idle) {
    std::unique_lock lock(mu_);
    for (;;) {
      const bool woke = cv_.wait_for(lock, idle, [this] { return call_ != nullptr || stopping_; });
      if (call_ != nullptr) {
        RunCall(lock);
      } else if (stopping_) {
        return;
      } else if (!woke && unflushed_) {
        unflushed_ = false;
        lock.unlock();
        on_idle();
        lock.lock();
      }
    }
  }

  // Runs the calls handed over for up to `budget`, returning early once
  // none came for `gap`: a long operation of the owner (a rebuild) serves
  // the clients between its steps this way. False once Shutdown() was
  // called.
  bool ServeFor(std::chrono::milliseconds budget,
                std::chrono::microseconds gap = std::chrono::microseconds(500)) {
    const auto end = std::chrono::steady_clock::now() + budget;
    std::unique_lock lock(mu_);
    while (!stopping_ && std::chrono::steady_clock::now() < end) {
      if (!cv_.wait_for(lock, gap, [this] { return call_ != nullptr || stopping_; })) break;
      if (call_ != nullptr) {
        RunCall(lock);
        ++served_between_;
      }
    }
    return !stopping_;
  }

  // Calls ServeFor ran so far. Owner thread only.
  uint64_t served_between() const { return served_between_; }

  // Makes Serve() return once the call it runs (if any) is answered; calls
  // after that fail with Unavailable without reaching the device.
  void Shutdown() {
    std::lock_guard lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }

 private:
  // Runs the call handed over and hands its result back. REQUIRES: call_
  // set; `lock` holds mu_ (released while the call runs).
  void RunCall(std::unique_lock<std::mutex>& lock) {
    const std::function<Status()>* call = call_;
    lock.unlock();
    Status result = (*call)();
    lock.lock();
    result_ = std::move(result);
    call_ = nullptr;
    cv_.notify_all();
  }

  Status Call(const std::function<Status()>& call, bool modifies) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return call_ == nullptr && !result_; });
    if (stopping_) return Unavailable("nbd: shutting down");
    call_ = &call;
    unflushed_ = unflushed_ || modifies;
    cv_.notify_all();
    cv_.wait(lock, [this] { return result_.has_value(); });
    Status result = std::move(*result_);
    result_.reset();
    cv_.notify_all();
    return result;
  }

  BlockDevice& device_;
  const uint64_t size_;
  const uint32_t block_;
  std::mutex mu_;
  std::condition_variable cv_;
  const std::function<Status()>* call_ = nullptr;  // handed over, not yet run
  std::optional<Status> result_;                   // run, not yet taken
  bool stopping_ = false;
  bool unflushed_ = false;  // a write or trim since the last on_idle
  uint64_t served_between_ = 0;  // owner thread only
};

void LogVolumeStats(const std::string& name, const storage::VolumeStats& s) {
  spdlog::info(
      "nbd: volume {}: cell reads {} healthy, {} degraded; stripe writes {} full, {} "
      "read-modify-write, {} reconstruct-write; {} stripes resynced at open; {} nodes down",
      name, s.healthy_reads, s.degraded_reads, s.full_stripe_writes, s.rmw_writes, s.rcw_writes,
      s.resynced_stripes, s.nodes_down);
}

struct NbdFlags {
  std::string volume;
  std::string ram;
  std::string host = "127.0.0.1";
  uint16_t port = 10809;
  std::string export_name;
  bool read_only = false;
  int64_t rebuild_node = -1;  // --rebuild-node: a storage node id, or -1
};

// Opens the device the flags name on this thread. The volume (if any) goes to
// `volume`, which owns it; the result points at it or at the RAM device.
Result<std::unique_ptr<BlockDevice>> OpenDevice(const ClusterConfig* config, const NbdFlags& flags) {
  if (!flags.ram.empty()) {
    Result<uint64_t> bytes = ParseSize(flags.ram);
    if (!bytes.ok()) return bytes.status().WithContext("--ram");
    RAMPART_ASSIGN_OR_RETURN(std::unique_ptr<storage::RamBlockDevice> ram,
                             storage::RamBlockDevice::Create(*bytes));
    return std::unique_ptr<BlockDevice>(std::move(ram));
  }
  RAMPART_ASSIGN_OR_RETURN(std::unique_ptr<storage::Volume> volume,
                           OpenVolume(*config, flags.volume));
  return std::unique_ptr<BlockDevice>(std::move(volume));
}

int Serve(const ClusterConfig* config, const NbdFlags& flags) {
  // Blocked before any thread starts (the volume's transport starts some), so
  // only the waiter below receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  Result<std::unique_ptr<BlockDevice>> device = OpenDevice(config, flags);
  if (!device.ok()) {
    if (!flags.ram.empty()) return ReportUsageError(device.status());
    return ReportOpenError(device.status());
  }
  auto* volume = dynamic_cast<storage::Volume*>(device->get());
  OwnerThreadDevice owner(**device);

  storage::NbdServerOptions options;
  options.host = flags.host;
  options.port = flags.port;
  options.export_name =
      !flags.export_name.empty() ? flags.export_name : (volume ? flags.volume : std::string("ram"));
  options.read_only = flags.read_only;
  auto server = storage::NbdServer::Start(options, owner);
  if (!server.ok()) {
    if (server.status().code() == StatusCode::kUnavailable) {
      return ReportFailure(server.status().WithContext(
          StrCat("port ", flags.port, " on ", flags.host,
                 " (in use by another server? pick another with --port, or 0 for any free one)")));
    }
    return ReportUsageError(server.status());
  }
  // The URI on stdout is the "ready" line scripts wait for.
  std::printf("%s\n", (*server)->uri().c_str());
  std::fflush(stdout);

  int signal = 0;
  std::thread waiter([&] {
    sigwait(&stop_signals, &signal);
    owner.Shutdown();
  });
  if (flags.rebuild_node >= 0 && volume != nullptr) {
    // Online: the clients' calls run between the rebuild's batches.
    const uint32_t index = *VolumeNodeIndex(*config, flags.volume, flags.rebuild_node);
    const Status st = RebuildNode(*config, flags.volume, *volume, index,
                                  [&] { return owner.ServeFor(std::chrono::milliseconds(50)); });
    if (st.ok()) {
      spdlog::info("nbd: answered {} client calls during the rebuild", owner.served_between());
    } else if (st.code() != StatusCode::kAborted) {
      spdlog::error("nbd: {}; serving on without storage node {}", st.ToString(), flags.rebuild_node);
    }
  }
  owner.Serve(std::chrono::seconds(2), [&] {
    // Idle after writes: make them durable and let the volume clear its
    // intent log, so a crash later has less to resync.
    const Status st = (*device)->Flush();
    if (!st.ok()) spdlog::warn("nbd: idle flush: {}", st.ToString());
  });
  waiter.join();
  spdlog::info("nbd: {} received, stopping", signal == SIGINT ? "SIGINT" : "SIGTERM");
  (*server)->Stop();
  const Status closed = volume ? volume->Close() : (*device)->Flush();
  if (!closed.ok()) return ReportFailure(closed.WithContext("nbd: final flush"));
  if (volume != nullptr) LogVolumeStats(flags.volume, volume->stats());
  spdlog::info("nbd: stopped");
  return kExitOk;
}

}  // namespace

void RegisterNbdCommand(CLI::App& app, CommandContext& ctx) {
  auto flags = std::make_shared<NbdFlags>();
  CLI::App* cmd = app.add_subcommand(
      "nbd",
      "Serve a volume over NBD (fixed newstyle; for nbdcopy, nbdinfo, qemu-img, fio "
      "--ioengine=nbd, nbd-client) until SIGINT or SIGTERM, then flush it and exit. Prints the "
      "URI (nbd://HOST:PORT/EXPORT) on stdout once clients can connect. One process at a time "
      "may open a volume");
  CLI::Option* volume =
      cmd->add_option("--volume", flags->volume, "The volume to serve, by name in [[volumes]]")
          ->type_name("NAME");
  CLI::Option* ram = cmd->add_option(
      "--ram", flags->ram,
      "Instead of a volume: serve SIZE bytes of RAM (zeros, lost on exit; no storage nodes or "
      "cluster file needed). Handy to try NBD clients");
  ram->type_name("SIZE")->excludes(volume);
  cmd->add_option("--host", flags->host,
                  "Address to listen on. NBD has no authentication: expose it deliberately")
      ->capture_default_str();
  cmd->add_option("--port", flags->port, "TCP port; 0 picks a free one (see the printed URI)")
      ->capture_default_str();
  cmd->add_option("--export", flags->export_name,
                  "Export name in the URI. Default: the volume's name, or \"ram\" (clients asking "
                  "for the default export get it too)")
      ->type_name("NAME");
  cmd->add_flag("--read-only", flags->read_only, "Refuse writes, trims and write-zeroes (EPERM)");
  cmd->add_option("--rebuild-node", flags->rebuild_node,
                  "Rebuild this storage node (by id; replaced, serving again, empty or stale) while "
                  "serving: clients are answered between the rebuild's batches. Progress on stderr "
                  "as for `rampart volume rebuild`")
      ->type_name("ID")
      ->excludes(ram);
  OnRun(cmd, ctx, [flags, &ctx] {
    if (flags->volume.empty() == flags->ram.empty()) {
      return ReportUsageError(InvalidArgument("give --volume NAME or --ram SIZE (see rampart nbd --help)"));
    }
    if (!flags->ram.empty()) return Serve(nullptr, *flags);
    const Result<ClusterConfig>& config = ctx.config();
    if (!config.ok()) return ReportUsageError(config.status());
    if (flags->rebuild_node >= 0) {
      const Result<uint32_t> index = VolumeNodeIndex(*config, flags->volume, flags->rebuild_node);
      if (!index.ok()) return ReportUsageError(index.status().WithContext("--rebuild-node"));
    }
    return Serve(&*config, *flags);
  });
}

}  // namespace rampart::cmd
