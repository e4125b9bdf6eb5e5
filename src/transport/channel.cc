// Message rings: the record protocol (ChannelImpl) and the channel set of a
// Fabric (handshake, polling, sleeping). Format in channel_impl.h and
// docs/transport.md.
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstring>

#include "transport/channel_impl.h"

namespace rampart::transport {
namespace {

void NoOp(Status) {}

uint64_t LoadWord(const std::byte* p, std::memory_order order) {
  return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(const_cast<std::byte*>(p)))
      .load(order);
}
void StoreWord(std::byte* p, uint64_t v, std::memory_order order) {
  std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(p)).store(v, order);
}

// Copies `n` bytes of the concatenated slices, starting at byte `from`, to dst.
void GatherCopy(std::span<const IoSlice> slices, size_t from, size_t n, std::byte* dst) {
  for (const IoSlice& s : slices) {
    if (n == 0) return;
    if (from >= s.size) {
      from -= s.size;
      continue;
    }
    size_t take = std::min(s.size - from, n);
    std::memcpy(dst, static_cast<const std::byte*>(s.data) + from, take);
    dst += take;
    n -= take;
    from = 0;
  }
}

}  // namespace

Status SendControl(EndpointBase& ep, ControlType type, uint64_t a, uint64_t b,
                   std::span<const std::byte> payload, uint32_t flags) {
  auto buf = std::make_shared<std::vector<std::byte>>(sizeof(ControlHeader) + payload.size());
  ControlHeader h{static_cast<uint32_t>(type), flags, a, b};
  std::memcpy(buf->data(), &h, sizeof h);
  if (!payload.empty()) std::memcpy(buf->data() + sizeof h, payload.data(), payload.size());
  IoSlice slice{buf->data(), buf->size()};
  return ep.SendControl(std::span<const IoSlice>(&slice, 1), [buf](Status) {});
}

// ---------------------------------------------------------------------------
// ChannelImpl

ChannelImpl::ChannelImpl(Fabric::Internal& internal, std::shared_ptr<EndpointBase> endpoint,
                         uint64_t local_id, size_t ring_bytes, MemoryRegion local)
    : internal_(internal),
      endpoint_(std::move(endpoint)),
      endpoint_as_public_(endpoint_),
      local_id_(local_id),
      ring_bytes_(ring_bytes),
      local_(std::move(local)) {}

ChannelImpl::~ChannelImpl() = default;

Status ChannelImpl::Connect(uint64_t peer_id, std::span<const std::byte> peer_descriptor) {
  peer_id_ = peer_id;
  RAMPART_ASSIGN_OR_RETURN(remote_, endpoint_->Import(peer_descriptor));
  if (remote_.size() != ring::kControlBytes + ring_bytes_) {
    return Corruption("channel peer region is ", remote_.size(), " bytes, expected ",
                      ring::kControlBytes + ring_bytes_);
  }
  remote_direct_ = remote_.DirectPointer(0, remote_.size());
  if (remote_direct_ == nullptr) {
    RAMPART_ASSIGN_OR_RETURN(staging_, internal_.fabric().Allocate(ring_bytes_));
  }
  writes_are_messages_ = remote_.impl() != nullptr && remote_.impl()->AccessedByMessages();
  state_ = State::kOpen;
  return Status();
}

void ChannelImpl::Fail(const Status& why) {
  if (state_ == State::kFailed) return;
  state_ = State::kFailed;
  failure_ = why;
  remote_direct_ = nullptr;  // never touch a dead peer's memory again
  backlog_.clear();
  backlog_bytes_ = 0;
}

uint64_t ChannelImpl::LocalWord(size_t offset) const {
  return LoadWord(local_.data() + offset, std::memory_order_acquire);
}
void ChannelImpl::StoreLocalWord(size_t offset, uint64_t value) {
  StoreWord(local_.data() + offset, value, std::memory_order_release);
}

size_t ChannelImpl::FreeBytes() const {
  uint64_t consumed = LocalWord(ring::kConsumedOffset);
  return ring_bytes_ - static_cast<size_t>(sent_ - consumed);
}

void ChannelImpl::WritePeerWord(size_t offset, uint64_t value) {
  if (remote_direct_ != nullptr) {
    StoreWord(remote_direct_ + offset, value, std::memory_order_release);
    return;
  }
  // Put path: the word is staged in our own control block, then put.
  std::byte* src = local_.data() + ring::kStagingOffset + offset;
  StoreWord(src, value, std::memory_order_relaxed);
  IoSlice slice{src, 8};
  (void)endpoint_->Fence();  // successive values of one word must land in order
  (void)endpoint_->Write(std::span<const IoSlice>(&slice, 1), remote_, offset, NoOp);
}

void ChannelImpl::WriteWrap(size_t pos) {
  uint64_t header = ring::kWrapBit | static_cast<uint32_t>(send_seq_);
  size_t at = ring::kControlBytes + pos;
  if (remote_direct_ != nullptr) {
    StoreWord(remote_direct_ + at, header, std::memory_order_release);
  } else {
    std::byte* src = staging_.data() + pos;
    StoreWord(src, header, std::memory_order_relaxed);
    IoSlice slice{src, 8};
    (void)endpoint_->Write(std::span<const IoSlice>(&slice, 1), remote_, at, NoOp);
  }
  sent_ += ring_bytes_ - pos;
  ++send_seq_;
}

void ChannelImpl::WriteRecord(std::span<const IoSlice> message, size_t from, size_t body,
                              uint64_t flags) {
  size_t pos = sent_ & (ring_bytes_ - 1);
  if (ring_bytes_ - pos < ring::RecordBytes(body)) {
    WriteWrap(pos);
    pos = 0;
  }
  const uint64_t header = flags | (static_cast<uint64_t>(body) << 32) | static_cast<uint32_t>(send_seq_);
  const size_t trailer_at = pos + 8 + ring::Pad8(body);
  const size_t remote_at = ring::kControlBytes + pos;
  if (remote_direct_ != nullptr) {
    std::byte* dst = remote_direct_ + remote_at;
    StoreWord(dst, header, std::memory_order_relaxed);
    GatherCopy(message, from, body, dst + 8);
    // Fence: the body must be visible before the trailer that validates it.
    StoreWord(remote_direct_ + ring::kControlBytes + trailer_at, send_seq_,
              std::memory_order_release);
  } else {
    std::byte* dst = staging_.data() + pos;
    StoreWord(dst, header, std::memory_order_relaxed);
    GatherCopy(message, from, body, dst + 8);
    StoreWord(staging_.data() + trailer_at, send_seq_, std::memory_order_relaxed);
    if (writes_are_messages_) {
      // One request: the peer's own thread copies the whole record before it
      // looks at its ring, so nothing can see the trailer before the body.
      IoSlice whole{dst, ring::RecordBytes(body)};
      (void)endpoint_->Write(std::span<const IoSlice>(&whole, 1), remote_, remote_at, NoOp);
    } else {
      IoSlice head{dst, 8 + body};
      IoSlice tail{staging_.data() + trailer_at, 8};
      (void)endpoint_->Write(std::span<const IoSlice>(&head, 1), remote_, remote_at, NoOp);
      (void)endpoint_->Fence();
      (void)endpoint_->Write(std::span<const IoSlice>(&tail, 1), remote_,
                             ring::kControlBytes + trailer_at, NoOp);
    }
  }
  sent_ += ring::RecordBytes(body);
  ++send_seq_;
}

Status ChannelImpl::Send(std::span<const IoSlice> message) {
  if (state_ != State::kOpen) {
    return failure_.ok() ? Unavailable("channel is not open") : failure_;
  }
  const size_t total = TotalBytes(message);
  if (total > internal_.fabric().options().max_message_size) {
    return InvalidArgument("channel message of ", total, " bytes exceeds max_message_size ",
                           internal_.fabric().options().max_message_size);
  }
  size_t done = 0;
  bool complete = false;
  if (backlog_.empty()) {
    do {
      std::optional<size_t> body = WriteNextFragment(message, done, total);
      if (!body) break;
      done += *body;
      complete = done == total;
    } while (!complete);
    if (done > 0 || complete) AfterPeerWrite();
  }
  if (!complete) {
    // Out of credit: keep the rest until the peer returns credits. When part
    // of the message went out, the rest continues its MORE chain seamlessly.
    std::vector<std::byte> rest(total - done);
    GatherCopy(message, done, total - done, rest.data());
    backlog_bytes_ += rest.size();
    backlog_.push_back(std::move(rest));
  }
  return Status();
}

std::optional<size_t> ChannelImpl::WriteNextFragment(std::span<const IoSlice> message,
                                                     size_t from, size_t total) {
  const size_t body = std::min(total - from, ring::MaxFragment(ring_bytes_));
  if (!CanWrite(body)) return std::nullopt;
  WriteRecord(message, from, body, from + body == total ? 0 : ring::kMoreBit);
  return body;
}

bool ChannelImpl::CanWrite(size_t body) const {
  size_t pos = sent_ & (ring_bytes_ - 1);
  size_t need = ring::RecordBytes(body);
  if (ring_bytes_ - pos < need) need += ring_bytes_ - pos;  // the wrap wastes the ring's tail
  return FreeBytes() >= need;
}

bool ChannelImpl::HasWork() const {
  // A record whose header is in but not yet its trailer: the writer is in the
  // middle of it. Through a direct pointer that takes nanoseconds, worth a
  // spin; written by messages, the rest arrives as a message, which wakes us.
  if (handler_ && (writes_are_messages_ ? RecordComplete() : RecordReady())) return true;
  if (backlog_.empty()) return false;
  size_t left = backlog_.front().size() - backlog_head_sent_;
  return CanWrite(std::min(left, ring::MaxFragment(ring_bytes_)));
}

void ChannelImpl::DrainBacklog() {
  bool wrote = false;
  while (!backlog_.empty() && state_ == State::kOpen) {
    std::vector<std::byte>& msg = backlog_.front();
    IoSlice slice{msg.data(), msg.size()};
    std::optional<size_t> body =
        WriteNextFragment(std::span<const IoSlice>(&slice, 1), backlog_head_sent_, msg.size());
    if (!body) break;
    wrote = true;
    backlog_head_sent_ += *body;
    backlog_bytes_ -= *body;
    if (backlog_head_sent_ == msg.size()) {
      backlog_.pop_front();
      backlog_head_sent_ = 0;
    }
  }
  if (wrote) AfterPeerWrite();
}

// After writing into the peer's region: if the peer announced that it sleeps,
// ring its doorbell. On the put path the check must follow the writes' remote
// completion, so it runs in a flush callback.
void ChannelImpl::AfterPeerWrite() {
  if (writes_are_messages_) return;  // the write itself woke the peer
  if (remote_direct_ != nullptr) {
    // Dekker with the peer's PrepareToSleep: our record store, full fence,
    // load of its flag; its flag store, full fence, load of our record.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    CheckPeerSleeping();
    return;
  }
  peer_write_unchecked_ = true;
  if (flush_in_flight_) return;
  flush_in_flight_ = true;
  peer_write_unchecked_ = false;
  Status st = endpoint_->Flush([weak = weak_from_this()](Status s) {
    auto self = weak.lock();
    if (!self) return;
    self->OnPeerWritesFlushed(s);
  });
  if (!st.ok()) flush_in_flight_ = false;
}

void ChannelImpl::OnPeerWritesFlushed(const Status& s) {
  flush_in_flight_ = false;
  if (!s.ok() || state_ != State::kOpen) return;
  CheckPeerSleeping();
  if (peer_write_unchecked_) AfterPeerWrite();
}

void ChannelImpl::CheckPeerSleeping() {
  if (LocalWord(ring::kSleepingOffset) == 0) return;
  StoreLocalWord(ring::kSleepingOffset, 0);
  (void)SendControl(*endpoint_, ControlType::kDoorbell, peer_id_, 0, {});
}

bool ChannelImpl::RecordReady() const {
  size_t pos = recv_ & (ring_bytes_ - 1);
  uint64_t header = LoadWord(ring() + pos, std::memory_order_acquire);
  return static_cast<uint32_t>(header) == static_cast<uint32_t>(recv_seq_);
}

bool ChannelImpl::RecordComplete() const {
  if (!RecordReady()) return false;
  const size_t pos = recv_ & (ring_bytes_ - 1);
  const uint64_t header = LoadWord(ring() + pos, std::memory_order_acquire);
  if (header & ring::kWrapBit) return true;
  const size_t body = (header >> 32) & ring::kLengthMask;
  // A bad length is for ReadRecords to report: count it as work.
  if (body > ring::MaxFragment(ring_bytes_) || pos + ring::RecordBytes(body) > ring_bytes_) {
    return true;
  }
  return LoadWord(ring() + pos + 8 + ring::Pad8(body), std::memory_order_acquire) == recv_seq_;
}

int ChannelImpl::ReadRecords() {
  if (!handler_) return 0;  // records wait in the ring until someone listens
  int delivered = 0;
  const size_t max_fragment = ring::MaxFragment(ring_bytes_);
  // Bounded batch so one busy channel cannot starve the others.
  for (int budget = 256; budget > 0 && state_ == State::kOpen; --budget) {
    size_t pos = recv_ & (ring_bytes_ - 1);
    uint64_t header = LoadWord(ring() + pos, std::memory_order_acquire);
    if (static_cast<uint32_t>(header) != static_cast<uint32_t>(recv_seq_)) break;
    if (header & ring::kWrapBit) {
      // The bytes after the marker were zeroed when they were last consumed.
      StoreWord(ring() + pos, 0, std::memory_order_relaxed);
      recv_ += ring_bytes_ - pos;
      ++recv_seq_;
      continue;
    }
    size_t body = (header >> 32) & ring::kLengthMask;
    if (body > max_fragment || pos + ring::RecordBytes(body) > ring_bytes_) {
      Fail(Corruption("channel record of ", body, " bytes at ring offset ", pos,
                      " does not fit the ring"));
      spdlog::warn("transport: channel to {}: {}", endpoint_->peer_name(), failure_.ToString());
      break;
    }
    const std::byte* trailer = ring() + pos + 8 + ring::Pad8(body);
    if (LoadWord(trailer, std::memory_order_acquire) != recv_seq_) break;  // still arriving
    const std::byte* data = ring() + pos + 8;
    const bool more = (header & ring::kMoreBit) != 0;
    if (more || reassembling_) {
      if (reassembly_.size() + body > internal_.fabric().options().max_message_size) {
        Fail(Corruption("channel message exceeds max_message_size"));
        break;
      }
      reassembly_.insert(reassembly_.end(), data, data + body);
      reassembling_ = more;
      if (!more) {
        handler_(std::span<const std::byte>(reassembly_));
        reassembly_.clear();
        ++delivered;
      }
    } else {
      handler_(std::span<const std::byte>(data, body));
      ++delivered;
    }
    // Zero the record before its credit can go back: see ClearConsumed.
    ClearConsumed(pos, ring::RecordBytes(body));
    recv_ += ring::RecordBytes(body);
    ++recv_seq_;
    ReturnCredits(false);
  }
  return delivered;
}

// The reader recognises a record by its header's seq (low 32 bits) and its
// trailer (the full seq). Bytes left over from an earlier lap are payload, and
// payload is full of small integers (lengths, counts, ids): a stale word whose
// low half happened to equal the seq expected next was taken for a header, its
// high half (payload) for the length, and the channel failed with "record ...
// does not fit the ring" before the writer had even reached that position (a
// stale trailer equal to the seq would even have let a half-written record
// through). So every consumed record is zeroed before its credit returns: the
// ring then holds only zeros and unconsumed records, and zero is never a seq
// the reader waits for with a trailer that matches.
void ChannelImpl::ClearConsumed(size_t pos, size_t bytes) {
  std::memset(ring() + pos, 0, bytes);
}

// Credits go back when a good part of the ring was consumed, or (force) when
// the ring ran dry, so a sender waiting on credit always gets it.
void ChannelImpl::ReturnCredits(bool force) {
  uint64_t unreported = recv_ - credits_reported_;
  if (unreported == 0) return;
  if (!force && unreported < ring_bytes_ / 8) return;
  credits_reported_ = recv_;
  WritePeerWord(ring::kConsumedOffset, recv_);
  AfterPeerWrite();
}

int ChannelImpl::Poll() {
  if (state_ != State::kOpen) return 0;
  int n = ReadRecords();
  if (state_ != State::kOpen) return n;
  ReturnCredits(/*force=*/true);
  if (!backlog_.empty()) DrainBacklog();
  return n;
}

bool ChannelImpl::PrepareToSleep() {
  if (state_ != State::kOpen) return true;
  if (HasWork()) return false;
  // The peer's writes into our ring are messages too (see writes_are_messages_):
  // they wake this thread, nothing to announce.
  if (writes_are_messages_) return true;
  switch (sleep_) {
    case SleepState::kAnnounced:
      break;
    case SleepState::kAnnouncing:
      return false;  // waiting for the flush of our announcement
    case SleepState::kAwake:
      WritePeerWord(ring::kSleepingOffset, 1);
      if (remote_direct_ != nullptr) {
        std::atomic_thread_fence(std::memory_order_seq_cst);
        sleep_ = SleepState::kAnnounced;
        break;
      }
      sleep_ = SleepState::kAnnouncing;
      if (Status st = endpoint_->Flush([weak = weak_from_this()](Status s) {
            auto self = weak.lock();
            if (self && self->sleep_ == SleepState::kAnnouncing && s.ok()) {
              self->sleep_ = SleepState::kAnnounced;
            }
          });
          !st.ok()) {
        sleep_ = SleepState::kAwake;
      }
      return false;
  }
  // Re-check once the announcement is visible to the peer: whatever it wrote
  // before seeing it must not be slept on; whatever it writes after rings.
  return !HasWork();
}

void ChannelImpl::OnDoorbell() {
  // Without this, a thread that announced, then stayed awake for another
  // channel's work (Fabric::Wait returns without Awake()), would later sleep
  // on a stale kAnnounced while the peer sees no announcement: a lost wake-up.
  if (sleep_ == SleepState::kAnnounced) sleep_ = SleepState::kAwake;
}

void ChannelImpl::Awake() {
  if (sleep_ == SleepState::kAwake || state_ != State::kOpen || writes_are_messages_) return;
  sleep_ = SleepState::kAwake;
  WritePeerWord(ring::kSleepingOffset, 0);
}

// ---------------------------------------------------------------------------
// The channel set of a Fabric

Result<std::shared_ptr<Channel>> Fabric::Internal::OpenChannel(
    const std::shared_ptr<Endpoint>& endpoint, const ChannelOptions& options) {
  auto ep = std::dynamic_pointer_cast<EndpointBase>(endpoint);
  if (!ep) return InvalidArgument("OpenChannel: endpoint of another fabric");
  if (!ep->connected()) return Unavailable("OpenChannel: endpoint to ", ep->peer_name(), " is not connected");
  size_t ring_bytes = options.ring_bytes;
  if (!ring::ValidRingBytes(ring_bytes)) {
    return InvalidArgument("channel ring_bytes must be a power of two between 4 KiB and 1 GiB, got ",
                           ring_bytes);
  }
  RAMPART_ASSIGN_OR_RETURN(MemoryRegion local, fabric_.Allocate(ring::kControlBytes + ring_bytes));
  RAMPART_ASSIGN_OR_RETURN(std::vector<std::byte> descriptor, local.DescriptorFor(*ep));
  const uint64_t id = next_channel_id_++;
  auto channel = std::make_shared<ChannelImpl>(*this, ep, id, ring_bytes, std::move(local));
  channels_[id] = channel;
  Status st = SendControl(*ep, ControlType::kChannelOpen, id, ring_bytes, descriptor);
  if (st.ok()) {
    st = WaitUntil(fabric_, [&] { return !channel->opening(); }, fabric_.options().connect_timeout,
                   "opening a channel to " + ep->peer_name());
  }
  if (st.ok() && channel->failed()) st = channel->failure();
  if (!st.ok()) {
    channel->Fail(st);
    channels_.erase(id);
    return st;
  }
  return std::shared_ptr<Channel>(channel);
}

void Fabric::Internal::HandleChannelOpen(const std::shared_ptr<EndpointBase>& ep,
                                         std::span<const std::byte> bytes) {
  ControlHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  auto descriptor = bytes.subspan(sizeof h);
  auto reject = [&](const Status& why) {
    std::string text = why.ToString();
    spdlog::warn("transport: refusing channel from {}: {}", ep->peer_name(), text);
    (void)SendControl(*ep, ControlType::kChannelReject, h.a, 0,
                      std::as_bytes(std::span<const char>(text.data(), text.size())));
  };
  size_t ring_bytes = h.b;
  if (!fabric_.on_channel_) return reject(FailedPrecondition("this process accepts no channels"));
  if (!ring::ValidRingBytes(ring_bytes)) {
    return reject(InvalidArgument("bad ring size ", ring_bytes));
  }
  auto local = fabric_.Allocate(ring::kControlBytes + ring_bytes);
  if (!local.ok()) return reject(local.status());
  auto my_descriptor = local->DescriptorFor(*ep);
  if (!my_descriptor.ok()) return reject(my_descriptor.status());
  const uint64_t id = next_channel_id_++;
  auto channel = std::make_shared<ChannelImpl>(*this, ep, id, ring_bytes, std::move(*local));
  if (Status st = channel->Connect(h.a, descriptor); !st.ok()) return reject(st);
  if (Status st = SendControl(*ep, ControlType::kChannelAccept, h.a, id, *my_descriptor,
                              channel->writes_are_messages() ? kAcceptWritesAreMessages : 0);
      !st.ok()) {
    spdlog::warn("transport: cannot accept channel from {}: {}", ep->peer_name(), st.ToString());
    return;
  }
  channels_[id] = channel;
  fabric_.on_channel_(channel);
}

void Fabric::Internal::DeliverControl(const std::shared_ptr<EndpointBase>& ep,
                                      std::span<const std::byte> bytes) {
  if (bytes.size() < sizeof(ControlHeader)) {
    spdlog::warn("transport: short control message ({} bytes) from {}", bytes.size(), ep->peer_name());
    return;
  }
  ControlHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  auto payload = bytes.subspan(sizeof h);
  const auto type = static_cast<ControlType>(h.type);
  if (type == ControlType::kAuthHello || type == ControlType::kAuthProof ||
      type == ControlType::kAuthAccept || type == ControlType::kAuthRefuse) {
    HandleAuth(ep, h, payload);
    return;
  }
  if (!ep->proven()) {
    Refuse(ep, "sent a control message before proving the cluster secret");
    return;
  }
  auto find = [&](uint64_t id) -> ChannelImpl* {
    auto it = channels_.find(id);
    return it == channels_.end() || it->second->endpoint().get() != ep.get() ? nullptr
                                                                             : it->second.get();
  };
  switch (type) {
    case ControlType::kAuthHello:
    case ControlType::kAuthProof:
    case ControlType::kAuthAccept:
    case ControlType::kAuthRefuse:
      return;  // handled above
    case ControlType::kChannelOpen:
      HandleChannelOpen(ep, bytes);
      return;
    case ControlType::kChannelAccept:
      if (ChannelImpl* c = find(h.a); c != nullptr && c->opening()) {
        Status st = c->Connect(h.b, payload);
        // Each side skips the doorbells only if its own writes wake the peer
        // (ChannelImpl::writes_are_messages_); both must agree, or a side that
        // skips could sleep through the other's silent writes.
        const bool peer_messages = (h.flags & kAcceptWritesAreMessages) != 0;
        if (st.ok() && peer_messages != c->writes_are_messages()) {
          st = FailedPrecondition("the peer writes into this side's ring ",
                                  peer_messages ? "by messages" : "silently (RDMA or shared memory)",
                                  " but this side's writes go ",
                                  c->writes_are_messages() ? "by messages" : "silently",
                                  ": the hosts' transports differ (one has RDMA, the other not?)");
        }
        if (!st.ok()) c->Fail(st);
      }
      return;
    case ControlType::kChannelReject:
      if (ChannelImpl* c = find(h.a); c != nullptr && c->opening()) {
        c->Fail(FailedPrecondition(
            "peer refused the channel: ",
            std::string_view(reinterpret_cast<const char*>(payload.data()), payload.size())));
      }
      return;
    case ControlType::kDoorbell:
      // Waking up was the point (PollChannels reads the ring); the channel
      // only notes that its announcement is gone.
      if (ChannelImpl* c = find(h.a); c != nullptr) c->OnDoorbell();
      return;
  }
  spdlog::warn("transport: unknown control message type {} from {}", h.type, ep->peer_name());
}

int Fabric::Internal::PollChannels() {
  int n = 0;
  for (auto it = channels_.begin(); it != channels_.end();) {
    ChannelImpl& c = *it->second;
    if (!c.opening() && !c.failed() && !c.endpoint()->connected()) {
      c.Fail(Aborted("endpoint closed"));
    }
    if (c.failed()) {
      it = channels_.erase(it);
      continue;
    }
    n += c.Poll();
    ++it;
  }
  return n;
}

bool Fabric::Internal::PrepareToSleep() {
  bool ok = true;
  for (auto& [id, c] : channels_) ok = c->PrepareToSleep() && ok;
  return ok;
}

void Fabric::Internal::Awake() {
  for (auto& [id, c] : channels_) c->Awake();
}

void Fabric::Internal::Shutdown() {
  for (auto& [id, c] : channels_) c->Fail(Aborted("fabric shut down"));
  channels_.clear();
  deferred_.clear();
  completions_.clear();
}

}  // namespace rampart::transport
