// StorageNode: start-up, the poll loop, request handling and shutdown.
#include "storage/node.h"

#include <spdlog/spdlog.h>

#include <condition_variable>
#include <deque>
#include <map>
#include <unordered_map>
#include <vector>

#include "common/size.h"
#include "storage/protocol.h"
#include "transport/config_options.h"

namespace rampart::storage {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// First-fit ranges of one connection's staging buffer.
class StagingAllocator {
 public:
  explicit StagingAllocator(uint64_t size) { free_[0] = size; }
  // An offset of `n` free bytes, or -1.
  int64_t Allocate(uint64_t n) {
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < n) continue;
      const uint64_t at = it->first;
      const uint64_t left = it->second - n;
      free_.erase(it);
      if (left > 0) free_[at + n] = left;
      return static_cast<int64_t>(at);
    }
    return -1;
  }
  void Free(uint64_t at, uint64_t n) {
    auto next = free_.lower_bound(at);
    if (next != free_.end() && at + n == next->first) {
      n += next->second;
      next = free_.erase(next);
    }
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == at) {
        prev->second += n;
        return;
      }
    }
    free_[at] = n;
  }

 private:
  std::map<uint64_t, uint64_t> free_;  // offset -> length
};

uint64_t RoundUp(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

}  // namespace

struct StorageNode::Loop {
  StorageNodeOptions options;
  std::unique_ptr<Device> device;
  uint32_t alignment = 1;
  std::atomic<bool> stop{false};

  std::mutex mu;
  std::condition_variable cv;
  bool started = false;                 // GUARDED_BY(mu)
  Status start_status;                  // GUARDED_BY(mu)
  uint16_t port = 0;                    // GUARDED_BY(mu)
  transport::Fabric* fabric = nullptr;  // GUARDED_BY(mu)

  // One client connection: a channel, or an endpoint sending two-sided.
  struct Conn {
    std::shared_ptr<transport::Channel> channel;
    std::shared_ptr<transport::Endpoint> endpoint;
    bool open = true;
    transport::RemoteRegion pool;     // after HELLO
    transport::MemoryRegion staging;  // after HELLO
    std::unique_ptr<StagingAllocator> allocator;
    uint32_t running = 0;
    std::deque<wire::Request> waiting;
    std::string name;
  };
  struct Op {
    std::shared_ptr<Conn> conn;
    wire::Request request;
    uint64_t staging_at = 0;
    uint64_t staging_len = 0;
    // Where a read lands straight in the client's buffer (DirectTarget), or
    // nullptr: then staging, and a transfer after the IO.
    std::byte* direct = nullptr;
  };
  struct PendingSend {
    std::vector<std::byte> bytes;
    transport::IoSlice slice{};
  };

  transport::Fabric* f = nullptr;  // the loop thread's
  std::unique_ptr<IoEngine> engine;
  std::unordered_map<const transport::Endpoint*, std::vector<std::shared_ptr<Conn>>> conns;
  std::unordered_map<uint64_t, Op> ops;
  uint64_t next_op = 1;
  std::vector<IoCompletion> reaped;

  void ReportStart(Status st, uint16_t listen_port = 0) {
    std::lock_guard<std::mutex> lock(mu);
    started = true;
    start_status = std::move(st);
    port = listen_port;
    cv.notify_all();
  }

  // ---- replies ----

  void Send(Conn& c, std::vector<std::byte> bytes) {
    if (!c.open) return;
    if (c.channel) {
      transport::IoSlice slice{bytes.data(), bytes.size()};
      Status st = c.channel->Send(std::span<const transport::IoSlice>(&slice, 1));
      if (!st.ok() && c.channel->connected()) {
        spdlog::warn("storage: reply to {} not sent: {}", c.name, st.ToString());
      }
      return;
    }
    auto send = std::make_shared<PendingSend>();
    send->bytes = std::move(bytes);
    send->slice = {send->bytes.data(), send->bytes.size()};
    Status st = c.endpoint->Send(std::span<const transport::IoSlice>(&send->slice, 1),
                                 [send](Status) {});
    if (!st.ok() && c.endpoint->connected()) {
      spdlog::warn("storage: reply to {} not sent: {}", c.name, st.ToString());
    }
  }
  void ReplyOk(Conn& c, const wire::Request& r, uint64_t bytes,
               const wire::DeviceInfo* info = nullptr) {
    std::vector<std::byte> out;
    wire::AppendReply(out, static_cast<uint8_t>(r.type), r.request_id, bytes, info);
    Send(c, std::move(out));
  }
  void ReplyError(Conn& c, uint8_t type, uint64_t request_id, const Status& st) {
    std::vector<std::byte> out;
    wire::AppendErrorReply(out, type, request_id, st);
    Send(c, std::move(out));
  }

  // ---- requests ----

  void OnMessage(const std::shared_ptr<Conn>& c, std::span<const std::byte> message) {
    auto frames = wire::SplitFrames(message);
    if (!frames.ok()) {  // cannot be trusted: answer once, as request 0
      ReplyError(*c, 0, 0, frames.status());
      return;
    }
    for (const wire::Frame& frame : *frames) {
      auto request = wire::DecodeRequest(frame);
      if (!request.ok()) {
        ReplyError(*c, frame.type, frame.request_id, request.status());
        continue;
      }
      if (Status st = Check(*c, *request); !st.ok()) {
        ReplyError(*c, frame.type, request->request_id, st);
        continue;
      }
      if (request->type == wire::MsgType::kHello) {
        Hello(*c, *request);
        continue;
      }
      c->waiting.push_back(*request);
    }
    StartWaiting(c);
  }

  Status Check(const Conn& c, const wire::Request& r) const {
    const std::string_view name = wire::MsgTypeName(static_cast<uint8_t>(r.type));
    if (r.type == wire::MsgType::kHello) {
      if (c.pool.valid()) return FailedPrecondition("HELLO: this connection already sent HELLO");
      return Status::Ok();
    }
    if (!c.pool.valid()) {
      return FailedPrecondition(name, " request ", r.request_id, ": no HELLO yet on this connection");
    }
    if (r.type == wire::MsgType::kFlush) return Status::Ok();
    if (r.length == 0) return InvalidArgument(name, " request ", r.request_id, ": length 0");
    if (r.length > options.max_io_bytes) {
      return InvalidArgument(name, " request ", r.request_id, ": length ", r.length,
                             " exceeds max_io_bytes ", options.max_io_bytes);
    }
    if (r.offset > device->size() || r.length > device->size() - r.offset) {
      return InvalidArgument(name, " request ", r.request_id, ": [", r.offset, ", +", r.length,
                             ") is outside the device of ", device->size(), " bytes");
    }
    if (r.offset % alignment != 0 || r.length % alignment != 0) {
      return InvalidArgument(name, " request ", r.request_id, ": offset ", r.offset,
                             " and length ", r.length, " must be multiples of ", alignment,
                             " (O_DIRECT)");
    }
    if (r.buffer_offset > c.pool.size() || r.length > c.pool.size() - r.buffer_offset) {
      return InvalidArgument(name, " request ", r.request_id, ": buffer [", r.buffer_offset,
                             ", +", r.length, ") is outside the client's pool of ",
                             c.pool.size(), " bytes");
    }
    return Status::Ok();
  }

  void Hello(Conn& c, const wire::Request& r) {
    const transport::Endpoint& ep = c.channel ? *c.channel->endpoint() : *c.endpoint;
    auto pool = const_cast<transport::Endpoint&>(ep).Import(r.descriptor);
    if (!pool.ok()) {
      return ReplyError(c, static_cast<uint8_t>(r.type), r.request_id,
                        pool.status().WithContext("HELLO: importing the client's pool"));
    }
    auto staging = f->Allocate(options.staging_bytes);
    if (!staging.ok()) {
      return ReplyError(c, static_cast<uint8_t>(r.type), r.request_id,
                        staging.status().WithContext("HELLO: allocating staging"));
    }
    c.pool = std::move(*pool);
    c.staging = std::move(*staging);
    c.allocator = std::make_unique<StagingAllocator>(options.staging_bytes);
    wire::DeviceInfo info{.device_bytes = device->size(),
                          .block_bytes = options.block_bytes,
                          .max_io_bytes = options.max_io_bytes,
                          .alignment = alignment,
                          .queue_depth = options.queue_depth};
    spdlog::info("storage: {} said HELLO (pool of {})", c.name, FormatSize(c.pool.size()));
    ReplyOk(c, r, 0, &info);
  }

  // Where a read may land directly: the client's buffer itself when its pool
  // is mapped here (same host, shared memory) and the engine is `inline`,
  // whose IO is done inside Submit, right after this call (a failed endpoint
  // unmaps the pool: an IO still running later could write into it);
  // nullptr otherwise. Saves the copy out of staging and the transfer. Not
  // with `none`, the transport-only baseline: it keeps the transfer.
  std::byte* DirectTarget(const Conn& c, const wire::Request& r) const {
    if (r.type != wire::MsgType::kRead || engine->kind() != EngineKind::kInline) return nullptr;
    std::byte* p = c.pool.DirectPointer(r.buffer_offset, r.length);
    const uintptr_t align = device->direct() ? 4096 : 1;  // what staging gives O_DIRECT
    return p != nullptr && reinterpret_cast<uintptr_t>(p) % align == 0 ? p : nullptr;
  }

  // Starts waiting requests while the connection has room.
  void StartWaiting(const std::shared_ptr<Conn>& c) {
    while (c->open && !c->waiting.empty() && c->running < options.queue_depth) {
      const wire::Request r = c->waiting.front();
      Op op{.conn = c, .request = r, .direct = DirectTarget(*c, r)};
      if (r.type != wire::MsgType::kFlush && op.direct == nullptr) {
        op.staging_len = RoundUp(r.length, 4096);
        const int64_t at = c->allocator->Allocate(op.staging_len);
        if (at < 0) break;  // staging full: wait for a request to finish
        op.staging_at = static_cast<uint64_t>(at);
      }
      c->waiting.pop_front();
      ++c->running;
      const uint64_t id = next_op++;
      ops.emplace(id, std::move(op));
      Begin(id);
    }
  }

  void Begin(uint64_t id) {
    Op& op = ops.at(id);
    Conn& c = *op.conn;
    const wire::Request& r = op.request;
    std::byte* staged = r.type == wire::MsgType::kFlush ? nullptr : c.staging.data() + op.staging_at;
    switch (r.type) {
      case wire::MsgType::kRead:
        return SubmitIo(id, {.op = IoOp::kRead, .offset = r.offset, .length = r.length,
                             .buffer = op.direct != nullptr ? op.direct : staged, .tag = id});
      case wire::MsgType::kFlush:
        return SubmitIo(id, {.op = IoOp::kFlush, .tag = id});
      case wire::MsgType::kWrite: {
        const transport::Endpoint& ep = c.channel ? *c.channel->endpoint() : *c.endpoint;
        Status st = const_cast<transport::Endpoint&>(ep).ReadToRegion(
            c.pool, r.buffer_offset, c.staging, op.staging_at, r.length, [this, id](Status st) {
              if (!st.ok()) return Finish(id, st.WithContext("pulling the data"));
              auto it = ops.find(id);
              if (it == ops.end()) return;
              const Op& o = it->second;
              SubmitIo(id, {.op = IoOp::kWrite, .offset = o.request.offset,
                            .length = o.request.length,
                            .buffer = o.conn->staging.data() + o.staging_at, .tag = id});
            });
        if (!st.ok()) Finish(id, st.WithContext("pulling the data"));
        return;
      }
      case wire::MsgType::kHello: break;
    }
    Finish(id, InternalError("unexpected request"));
  }

  void SubmitIo(uint64_t id, const IoRequest& io) {
    if (!engine) return Finish(id, Aborted("the storage node is stopping"));
    if (Status st = engine->Submit(io); !st.ok()) Finish(id, st);
  }

  void OnIoDone(uint64_t id, Status st) {
    auto it = ops.find(id);
    if (it == ops.end()) return;
    Op& op = it->second;
    if (!st.ok() || op.request.type != wire::MsgType::kRead || !op.conn->open ||
        op.direct != nullptr) {
      return Finish(id, std::move(st));
    }
    Conn& c = *op.conn;
    const transport::Endpoint& ep = c.channel ? *c.channel->endpoint() : *c.endpoint;
    Status sent = const_cast<transport::Endpoint&>(ep).WriteFromRegion(
        c.staging, op.staging_at, op.request.length, c.pool, op.request.buffer_offset,
        [this, id](Status st) { Finish(id, st.ok() ? st : st.WithContext("writing the data")); });
    if (!sent.ok()) Finish(id, sent.WithContext("writing the data"));
  }

  void Finish(uint64_t id, Status st) {
    auto it = ops.find(id);
    if (it == ops.end()) return;
    Op op = std::move(it->second);
    ops.erase(it);
    Conn& c = *op.conn;
    if (st.ok()) {
      ReplyOk(c, op.request, op.request.type == wire::MsgType::kFlush ? 0 : op.request.length);
    } else {
      ReplyError(c, static_cast<uint8_t>(op.request.type), op.request.request_id, st);
    }
    if (op.staging_len > 0) c.allocator->Free(op.staging_at, op.staging_len);
    --c.running;
    StartWaiting(op.conn);
  }

  // ---- the loop ----

  std::shared_ptr<Conn> AddConn(const std::shared_ptr<transport::Endpoint>& ep,
                                std::shared_ptr<transport::Channel> channel) {
    auto c = std::make_shared<Conn>();
    c->channel = std::move(channel);
    c->endpoint = ep;
    c->name = StrCat(ep->peer_name(), c->channel ? " (channel)" : "");
    conns[ep.get()].push_back(c);
    return c;
  }

  void Run() {
    auto created = transport::Fabric::Create(options.fabric);
    if (!created.ok()) return ReportStart(created.status().WithContext("creating the fabric"));
    std::unique_ptr<transport::Fabric> fabric = std::move(*created);
    f = fabric.get();
    {
      EngineOptions eo = options.engine_options;
      auto e = IoEngine::Create(options.engine, *device, eo, [f = fabric.get()] { f->Notify(); });
      if (!e.ok()) return ReportStart(e.status().WithContext("starting the IO engine"));
      engine = std::move(*e);
    }
    // The engine's completions are one more source of the loop's events.
    auto source = f->AddSource(engine->wait_fd(), [this] { return ReapEngine(); });
    if (!source.ok()) {
      engine.reset();
      return ReportStart(source.status().WithContext("watching the IO engine"));
    }
    // Two-sided connections get a Conn on their first message.
    std::unordered_map<const transport::Endpoint*, std::shared_ptr<Conn>> two_sided;
    // Accepted endpoints live until they disconnect (dropping the last
    // reference would close the connection before its channel opens).
    std::unordered_map<const transport::Endpoint*, std::shared_ptr<transport::Endpoint>> accepted;
    f->SetAcceptHandler([&accepted](std::shared_ptr<transport::Endpoint> ep) {
      accepted.emplace(ep.get(), std::move(ep));
    });
    f->SetChannelHandler([this](std::shared_ptr<transport::Channel> channel) {
      auto c = AddConn(channel->endpoint(), channel);
      std::weak_ptr<Conn> weak = c;
      channel->SetMessageHandler([this, weak](std::span<const std::byte> m) {
        if (auto conn = weak.lock()) OnMessage(conn, m);
      });
    });
    f->SetMessageHandler([this, &two_sided](const std::shared_ptr<transport::Endpoint>& ep,
                                            std::span<const std::byte> m) {
      auto& c = two_sided[ep.get()];
      if (!c) c = AddConn(ep, nullptr);
      OnMessage(c, m);
    });
    f->SetDisconnectHandler([this, &two_sided, &accepted](
                                const std::shared_ptr<transport::Endpoint>& ep, Status why) {
      accepted.erase(ep.get());
      auto it = conns.find(ep.get());
      if (it == conns.end()) return;
      for (auto& c : it->second) {
        c->open = false;
        c->waiting.clear();  // the pool stays imported while ops still use it
      }
      spdlog::info("storage: {} disconnected: {}", ep->peer_name(), why.ToString());
      // Conns stay alive through the ops still holding them (staging in use).
      conns.erase(it);
      two_sided.erase(ep.get());
    });
    if (Status st = f->Listen(options.host, options.port); !st.ok()) {
      f->RemoveSource(*source);
      engine.reset();
      return ReportStart(st.WithContext(StrCat("listening on ", options.host, ":", options.port)));
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      fabric_ptr_set(fabric.get());
    }
    ReportStart(Status::Ok(), f->listen_port());

    while (!stop.load(std::memory_order_acquire)) {
      f->Wait(100ms);  // progresses first; its Progress reaps the engine (a source)
    }

    // Shutdown: no new work, close connections, let the device finish.
    f->SetAcceptHandler([](std::shared_ptr<transport::Endpoint> ep) { ep->Close(); });
    f->SetMessageHandler([](const std::shared_ptr<transport::Endpoint>&, std::span<const std::byte>) {});
    f->SetChannelHandler([](std::shared_ptr<transport::Channel>) {});
    f->SetDisconnectHandler([](const std::shared_ptr<transport::Endpoint>&, Status) {});
    for (auto& [ep, list] : conns) {
      for (auto& c : list) {
        c->open = false;
        if (c->channel) c->channel->SetMessageHandler([](std::span<const std::byte>) {});
      }
      if (!list.empty()) list.front()->endpoint->Close();
    }
    const auto deadline = Clock::now() + 2s;
    while (!ops.empty() && Clock::now() < deadline) f->Wait(10ms);
    f->RemoveSource(*source);
    engine.reset();  // waits for IO still in flight on staging buffers
    ops.clear();
    two_sided.clear();
    for (auto& [raw, ep] : accepted) ep->Close();
    accepted.clear();
    conns.clear();
    {
      std::lock_guard<std::mutex> lock(mu);
      fabric_ptr_set(nullptr);
    }
    f = nullptr;
  }

  void fabric_ptr_set(transport::Fabric* p) { fabric = p; }

  int ReapEngine() {
    reaped.clear();
    const size_t n = engine->Reap(reaped);
    for (IoCompletion& c : reaped) OnIoDone(c.tag, std::move(c.status));
    return static_cast<int>(n);
  }
};

Result<StorageNodeOptions> StorageNodeOptionsFromConfig(const ClusterConfig& config, uint32_t id) {
  const StorageNodeConfig* n = config.FindStorageNode(id);
  if (n == nullptr) {
    std::string ids;
    for (const StorageNodeConfig& s : config.storage_nodes) {
      ids += (ids.empty() ? "" : ", ") + std::to_string(s.id);
    }
    return NotFound("storage node ", id, " is not in ", config.origin.empty() ? "<unnamed>" : config.origin,
                    " (storage node ids: ", ids.empty() ? "none" : ids, ")");
  }
  const StorageConfig& st = config.storage;
  StorageNodeOptions o;
  o.host = n->host;
  o.port = n->port;
  o.device = {.path = n->path, .size = n->size, .direct = st.direct};
  RAMPART_ASSIGN_OR_RETURN(o.engine, ParseEngineKind(st.engine));
  o.engine_options.threads = st.io_threads;
  o.engine_options.queue_depth = std::max<uint32_t>(st.queue_depth * 4, 64);
  o.block_bytes = static_cast<uint32_t>(st.block_bytes);
  o.queue_depth = st.queue_depth;
  o.max_io_bytes = static_cast<uint32_t>(st.max_io_bytes);
  o.staging_bytes = st.staging_bytes;
  RAMPART_ASSIGN_OR_RETURN(o.fabric, transport::FabricOptionsFromConfig(config));
  o.channel = transport::ChannelOptionsFromConfig(config.transport);
  return o;
}

Result<std::unique_ptr<StorageNode>> StorageNode::Start(const StorageNodeOptions& options) {
  const uint32_t b = options.block_bytes;
  if (b < 512 || b > (1u << 20) || (b & (b - 1)) != 0) {
    return InvalidArgument("storage block_bytes must be a power of two in 512B..1MiB, got ", b);
  }
  if (options.device.size % b != 0) {
    return InvalidArgument("storage device size ", options.device.size,
                           " is not a multiple of block_bytes ", b);
  }
  if (options.queue_depth == 0 || options.max_io_bytes == 0 ||
      options.staging_bytes < RoundUp(options.max_io_bytes, 4096)) {
    return InvalidArgument("storage queue_depth and max_io_bytes must be > 0 and staging_bytes (",
                           options.staging_bytes, ") must hold one max_io_bytes request (",
                           options.max_io_bytes, ")");
  }
  std::unique_ptr<StorageNode> node(new StorageNode());
  node->loop_ = std::make_unique<Loop>();
  Loop& loop = *node->loop_;
  loop.options = options;
  RAMPART_ASSIGN_OR_RETURN(loop.device, Device::Open(options.device));
  loop.alignment = loop.device->direct() ? b : 1;
  node->thread_ = std::thread([&loop] { loop.Run(); });
  {
    std::unique_lock<std::mutex> lock(loop.mu);
    loop.cv.wait(lock, [&] { return loop.started; });
    if (!loop.start_status.ok()) {
      Status st = loop.start_status;
      lock.unlock();
      node->thread_.join();
      return st;
    }
    node->listen_port_ = loop.port;
  }
  const EngineKind kind = loop.engine->kind();  // auto resolved to the device's
  std::string engine = std::string(EngineKindName(kind));
  if (kind == EngineKind::kThreads) {
    engine += StrCat(" (", options.engine_options.threads, " IO threads)");
  }
  node->description_ =
      StrCat(loop.device->description(), ", ", FormatSize(loop.device->size()), ", engine ",
             engine, ", blocks of ", FormatSize(b), ", on ", options.host, ":", node->listen_port_);
  return node;
}

StorageNode::~StorageNode() { Stop(); }

void StorageNode::Stop() {
  std::lock_guard<std::mutex> lock(stop_mu_);
  if (!loop_) return;
  loop_->stop.store(true, std::memory_order_release);
  {
    std::lock_guard<std::mutex> l(loop_->mu);
    if (loop_->fabric != nullptr) loop_->fabric->Notify();
  }
  if (thread_.joinable()) thread_.join();
}

}  // namespace rampart::storage
