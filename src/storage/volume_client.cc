#include "storage/volume_client.h"

#include <algorithm>
#include <limits>

namespace rampart::storage {

using Clock = std::chrono::steady_clock;

VolumeClient::VolumeClient(const VolumeClientOptions& options) : options_(options) {}

VolumeClient::~VolumeClient() {
  for (Connection& conn : connections_) {
    if (conn.channel) conn.channel->SetMessageHandler([](std::span<const std::byte>) {});
    if (conn.endpoint) conn.endpoint->Close();
  }
  connections_.clear();
  ready_.clear();
  queued_.clear();
  owned_pool_.reset();    // its region must not outlive the fabric
  owned_fabric_.reset();  // queued transport completions run now and find nothing
}

Result<std::unique_ptr<VolumeClient>> VolumeClient::Connect(const VolumeClientOptions& options) {
  if (options.fabric.backend != transport::Backend::kUcx) {
    return InvalidArgument("the volume client needs the ucx transport (the storage node "
                           "moves data one-sidedly)");
  }
  std::unique_ptr<VolumeClient> client(new VolumeClient(options));
  VolumeClient& c = *client;
  auto fabric = transport::Fabric::Create(options.fabric);
  if (!fabric.ok()) return fabric.status();
  c.owned_fabric_ = std::move(*fabric);
  c.fabric_ = c.owned_fabric_.get();
  auto pool = BufferPool::Create(*c.fabric_, options.pool_bytes, options.pool_alignment);
  if (!pool.ok()) return pool.status();
  c.owned_pool_ = std::move(*pool);
  c.pool_ = c.owned_pool_.get();
  c.fabric_->SetDisconnectHandler(
      [&c](const std::shared_ptr<transport::Endpoint>& ep, Status why) {
        c.HandleDisconnect(*ep, why);
      });
  RAMPART_RETURN_IF_ERROR(c.OpenConnections());
  return client;
}

Result<std::unique_ptr<VolumeClient>> VolumeClient::Connect(const VolumeClientOptions& options,
                                                            transport::Fabric& fabric,
                                                            BufferPool& pool) {
  if (fabric.backend() != transport::Backend::kUcx) {
    return InvalidArgument("the volume client needs the ucx transport (the storage node "
                           "moves data one-sidedly)");
  }
  std::unique_ptr<VolumeClient> client(new VolumeClient(options));
  client->fabric_ = &fabric;
  client->pool_ = &pool;
  RAMPART_RETURN_IF_ERROR(client->OpenConnections());
  return client;
}

Status VolumeClient::OpenConnections() {
  if (options_.connections == 0) return InvalidArgument("connections must be at least 1");
  if (options_.queue_depth == 0) return InvalidArgument("queue_depth must be at least 1");
  const std::string where = StrCat("storage node ", options_.host, ":", options_.port);
  connections_.resize(options_.connections);
  hello_.resize(options_.connections);
  for (size_t i = 0; i < options_.connections; ++i) {
    Connection& conn = connections_[i];
    auto ep = fabric_->Connect(options_.host, options_.port);
    if (!ep.ok()) return ep.status().WithContext(StrCat(where, ": connect"));
    conn.endpoint = std::move(*ep);
    auto channel = fabric_->OpenChannel(conn.endpoint, options_.channel);
    if (!channel.ok()) {
      return channel.status().WithContext(StrCat(where, ": opening the message channel"));
    }
    conn.channel = std::move(*channel);
    conn.live = true;
    conn.channel->SetMessageHandler(
        [this, i](std::span<const std::byte> message) { OnMessage(i, message); });
    // The pool's keys for this connection's context (RDMA across hosts).
    auto descriptor = pool_->region().DescriptorFor(*conn.endpoint);
    if (!descriptor.ok()) return descriptor.status().WithContext("describing the buffer pool");
    std::vector<std::byte> hello;
    wire::AppendHello(hello, /*request_id=*/0, *descriptor);
    const transport::IoSlice slice{hello.data(), hello.size()};
    RAMPART_RETURN_IF_ERROR(conn.channel->Send({&slice, 1}));
    const auto deadline = Clock::now() + options_.hello_timeout;
    while (!hello_[i].has_value()) {
      // On a shared fabric the owner routes disconnects, and does not know this
      // client yet: the channel's state tells.
      if (!conn.live || !conn.channel->connected()) {
        return Unavailable(where, ": connection lost during HELLO");
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return TimedOut(where, ": no HELLO reply");
      fabric_->Wait(std::min(left, std::chrono::milliseconds(100)));
    }
    if (!hello_[i]->ok()) return hello_[i]->status().WithContext(StrCat(where, ": HELLO"));
    device_ = hello_[i]->value();
  }
  hello_.clear();
  depth_ = std::max<uint32_t>(
      1, std::min(options_.queue_depth,
                  device_.queue_depth == 0 ? options_.queue_depth : device_.queue_depth));
  return Status::Ok();
}

bool VolumeClient::HandleDisconnect(const transport::Endpoint& endpoint, const Status& why) {
  bool ours = false;
  for (size_t i = 0; i < connections_.size(); ++i) {
    if (connections_[i].endpoint.get() == &endpoint) {
      FailConnection(i, why);
      ours = true;
    }
  }
  return ours;
}

uint32_t VolumeClient::live_connections() const {
  uint32_t n = 0;
  for (const Connection& conn : connections_) n += conn.live ? 1 : 0;
  return n;
}

Status VolumeClient::Read(uint64_t offset, uint32_t length, const BufferRef& buffer,
                          Callback done) {
  if (length > buffer.length) {
    return InvalidArgument("read of ", length, " bytes into a buffer of ", buffer.length);
  }
  return Start(Request{wire::MsgType::kRead, offset, length, buffer.offset, std::move(done)});
}

Status VolumeClient::Write(uint64_t offset, uint32_t length, const BufferRef& buffer,
                           Callback done) {
  if (length > buffer.length) {
    return InvalidArgument("write of ", length, " bytes from a buffer of ", buffer.length);
  }
  return Start(Request{wire::MsgType::kWrite, offset, length, buffer.offset, std::move(done)});
}

Status VolumeClient::Flush(Callback done) {
  return Start(Request{wire::MsgType::kFlush, 0, 0, 0, std::move(done)});
}

Status VolumeClient::Start(Request request) {
  if (!request.done) return InvalidArgument("an IO needs a callback");
  if (request.type != wire::MsgType::kFlush &&
      request.buffer_offset + request.length > pool_->capacity()) {
    return InvalidArgument("buffer [", request.buffer_offset, ", +", request.length,
                           ") lies outside the pool");
  }
  if (live_connections() == 0) {
    return Unavailable("storage node ", options_.host, ":", options_.port,
                       ": no connection left");
  }
  queued_.emplace_back(next_id_++, std::move(request));
  ++outstanding_;
  Dispatch();
  return Status();
}

void VolumeClient::Dispatch() {
  while (!queued_.empty()) {
    size_t best = connections_.size();
    for (size_t i = 0; i < connections_.size(); ++i) {
      const Connection& conn = connections_[i];
      if (!conn.live || conn.in_flight >= depth_) continue;
      if (best == connections_.size() || conn.in_flight < connections_[best].in_flight) best = i;
    }
    if (best == connections_.size()) return;  // all busy, or none left
    auto [id, request] = std::move(queued_.front());
    queued_.pop_front();
    if (!SendOn(best, id, request)) {
      // The connection failed under us: try another, or fail with it.
      if (live_connections() > 0) {
        queued_.emplace_front(id, std::move(request));
      } else {
        ready_.push_back(Ready{std::move(request.done),
                               Unavailable("storage node ", options_.host, ":", options_.port,
                                           ": no connection left"),
                               0});
      }
    }
  }
}

bool VolumeClient::SendOn(size_t c, uint64_t id, Request& request) {
  Connection& conn = connections_[c];
  scratch_.clear();
  switch (request.type) {
    case wire::MsgType::kRead:
      wire::AppendRead(scratch_, id, request.offset, request.length, request.buffer_offset);
      break;
    case wire::MsgType::kWrite:
      wire::AppendWrite(scratch_, id, request.offset, request.length, request.buffer_offset);
      break;
    default:
      wire::AppendFlush(scratch_, id);
      break;
  }
  const transport::IoSlice slice{scratch_.data(), scratch_.size()};
  if (Status st = conn.channel->Send({&slice, 1}); !st.ok()) {
    FailConnection(c, st);
    return false;
  }
  ++conn.in_flight;
  conn.sent.emplace(id, std::move(request));
  return true;
}

void VolumeClient::OnMessage(size_t c, std::span<const std::byte> message) {
  auto replies = wire::DecodeReplies(message);
  if (!replies.ok()) {
    FailConnection(c, replies.status().WithContext("bad reply from the storage node"));
    return;
  }
  Connection& conn = connections_[c];
  for (wire::Reply& reply : *replies) {
    if (reply.type == wire::MsgType::kHello && c < hello_.size()) {
      if (reply.ok()) {
        hello_[c] = reply.info;
      } else {
        hello_[c] = reply.ToStatus();
      }
      continue;
    }
    auto it = conn.sent.find(reply.request_id);
    if (it == conn.sent.end()) continue;  // not ours (or already failed)
    Status st = reply.ToStatus();
    if (!st.ok()) {
      st = st.WithContext(StrCat(wire::MsgTypeName(static_cast<uint8_t>(it->second.type)), " ",
                                 it->second.offset, "+", it->second.length));
    }
    ready_.push_back(Ready{std::move(it->second.done), std::move(st), reply.ok() ? reply.bytes : 0});
    conn.sent.erase(it);
    --conn.in_flight;
  }
}

void VolumeClient::FailConnection(size_t c, const Status& why) {
  Connection& conn = connections_[c];
  if (!conn.live) return;
  conn.live = false;
  const Status failed = Unavailable("storage node ", options_.host, ":", options_.port,
                                    ": connection lost: ", why.ToString());
  for (auto& [id, request] : conn.sent) {
    ready_.push_back(Ready{std::move(request.done), failed, 0});
  }
  conn.sent.clear();
  conn.in_flight = 0;
  if (conn.channel) conn.channel->SetMessageHandler([](std::span<const std::byte>) {});
  if (live_connections() == 0) {
    for (auto& [id, request] : queued_) ready_.push_back(Ready{std::move(request.done), failed, 0});
    queued_.clear();
  }
}

int VolumeClient::RunReady() {
  int ran = 0;
  while (!ready_.empty()) {
    Ready r = std::move(ready_.front());
    ready_.pop_front();
    --outstanding_;
    ++ran;
    r.done(r.status, r.bytes);  // may start new IO
  }
  Dispatch();
  return ran;
}

int VolumeClient::RunCompletions() {
  for (size_t i = 0; i < connections_.size(); ++i) {
    if (connections_[i].live && !connections_[i].channel->connected()) {
      FailConnection(i, Unavailable("channel closed"));
    }
  }
  return RunReady();
}

int VolumeClient::Poll() {
  fabric_->Progress();
  return RunCompletions();
}

int VolumeClient::Wait(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    const int ran = Poll();
    if (ran > 0) return ran;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0 || outstanding_ == 0) return 0;
    fabric_->Wait(left);
  }
}

}  // namespace rampart::storage
