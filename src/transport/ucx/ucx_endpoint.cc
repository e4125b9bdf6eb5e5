// ucx backend, datapath: one-sided reads and writes (direct pointer when the
// peer's memory is mapped here, ucp_get/put_nbx otherwise), compare-and-swap,
// two-sided messages (active messages), fence and flush.

#include <atomic>
#include <cstring>

#include "transport/ucx/ucx_fabric.h"
#include "transport/ucx/ucx_op.h"
#include "transport/ucx/ucx_remote_region.h"

namespace rampart::transport {

UcxEndpoint::UcxEndpoint(UcxFabric& fabric, UcxWorker& worker, std::string peer_name)
    : fabric_(fabric), worker_(worker), peer_name_(std::move(peer_name)) {}

UcxEndpoint::~UcxEndpoint() {
  if (state_ == State::kConnected) Close();
}

Status UcxEndpoint::CheckUsable() const {
  switch (state_) {
    case State::kConnected:
      return Status();
    case State::kFailed:
      return failure_;
    case State::kClosed:
      return Unavailable("endpoint to ", peer_name_, " is closed");
    case State::kConnecting:
      break;
  }
  return Unavailable("endpoint to ", peer_name_, " is not connected");
}

void UcxEndpoint::Fail(const Status& why) {
  if (state_ != State::kConnected && state_ != State::kConnecting) return;
  state_ = State::kFailed;
  failure_ = why.code() == StatusCode::kUnavailable ? why : Unavailable(why.ToString());
  ReleaseRemoteRegions();  // no direct pointer into a dead peer's memory again
  FailSoftwareRequests(failure_);
  if (ep_ != nullptr) {
    fabric_.endpoints_.erase(ep_);
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = UCP_EP_CLOSE_FLAG_FORCE;
    fabric_.TrackCloseRequest(ucp_ep_close_nbx(ep_, &p));
    ep_ = nullptr;
  }
}

void UcxEndpoint::Close() {
  if (state_ != State::kConnected) return;
  state_ = State::kClosed;
  ReleaseRemoteRegions();
  FailSoftwareRequests(Aborted("endpoint to ", peer_name_, " closed"));
  fabric_.endpoints_.erase(ep_);
  ucp_request_param_t p{};  // graceful: flushes, then the peer sees a disconnect
  fabric_.TrackCloseRequest(ucp_ep_close_nbx(ep_, &p));
  ep_ = nullptr;
}

// ---------------------------------------------------------------------------
// Two-sided

Status UcxEndpoint::SendAm(unsigned id, std::span<const IoSlice> message, Completion done) {
  RAMPART_RETURN_IF_ERROR(CheckUsable());
  const size_t total = TotalBytes(message);
  if (total > fabric_.options().max_message_size) {
    return InvalidArgument("message of ", total, " bytes exceeds max_message_size ",
                           fabric_.options().max_message_size);
  }
  auto* op = new MultiOp{&fabric_.internal(), std::move(done)};
  ucp_request_param_t p = RequestParam(op);
  p.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
  p.flags = UCP_AM_SEND_FLAG_REPLY;  // lets the receiver find this endpoint
  const void* buffer = nullptr;
  size_t count = 0;
  if (message.size() == 1) {
    buffer = message[0].data;
    count = message[0].size;
  } else if (!message.empty()) {
    op->iov.reserve(message.size());
    for (const IoSlice& s : message) op->iov.push_back(ucp_dt_iov_t{s.data, s.size});
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
    p.datatype = ucp_dt_make_iov();
    buffer = op->iov.data();
    count = op->iov.size();
  }
  Track(op, ucp_am_send_nbx(ep_, id, nullptr, 0, buffer, count, &p));
  op->Release();
  return Status();
}

Status UcxEndpoint::Send(std::span<const IoSlice> message, Completion done) {
  return SendAm(kAmUser, message, std::move(done));
}

Status UcxEndpoint::SendControl(std::span<const IoSlice> message, Completion done) {
  return SendAm(kAmControl, message, std::move(done));
}

// ---------------------------------------------------------------------------
// One-sided

Result<const UcxRemoteRegion*> UcxEndpoint::Check(const RemoteRegion& remote, uint64_t offset,
                                                  size_t length) const {
  RAMPART_RETURN_IF_ERROR(CheckUsable());
  auto* r = dynamic_cast<const UcxRemoteRegion*>(remote.impl());
  if (r == nullptr) return InvalidArgument("remote region was not imported through a ucx endpoint");
  if (r->released()) return Unavailable("remote region of ", peer_name_, " is no longer reachable");
  if (offset > r->size() || length > r->size() - offset) {
    return InvalidArgument("one-sided access [", offset, ", +", length, ") outside the ",
                           r->size(), "-byte remote region");
  }
  return r;
}

Status UcxEndpoint::Transfer(bool is_read, const RemoteRegion& remote, uint64_t remote_offset,
                             std::span<const IoSlice> local, const ucp_mem_h* local_memh,
                             Completion done) {
  const size_t total = TotalBytes(local);
  RAMPART_ASSIGN_OR_RETURN(const UcxRemoteRegion* r, Check(remote, remote_offset, total));

  // Fast path: the whole range is mapped here. A one-sided access is a copy.
  if (std::byte* p = r->DirectPointer(remote_offset, total)) {
    for (const IoSlice& s : local) {
      if (is_read) {
        std::memcpy(s.data, p, s.size);
      } else {
        std::memcpy(p, s.data, s.size);
      }
      p += s.size;
    }
    fabric_.internal().Defer(std::move(done), Status());
    return Status();
  }

  // Otherwise one UCX request per piece that lies in one local slice and one
  // remote segment; one completion for all of them.
  auto* op = new MultiOp{&fabric_.internal(), std::move(done)};
  uint64_t offset = remote_offset;
  for (size_t i = 0; i < local.size(); ++i) {
    auto* data = static_cast<std::byte*>(local[i].data);
    size_t left = local[i].size;
    while (left > 0 && op->status.ok()) {
      const UcxRemoteRegion::Segment* seg = r->Find(offset);
      size_t in_seg = seg->start + seg->length - offset;
      size_t n = std::min(left, in_seg);
      uint64_t raddr = seg->address + (offset - seg->start);
      if (seg->direct != nullptr) {
        std::byte* p = seg->direct + (offset - seg->start);
        is_read ? std::memcpy(data, p, n) : std::memcpy(p, data, n);
      } else if (seg->software) {
        is_read ? SoftwareRead(op, raddr, data, n) : SoftwareWrite(op, raddr, data, n);
      } else {
        ucp_request_param_t prm = RequestParam(op);
        if (local_memh != nullptr) {
          prm.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
          prm.memh = local_memh[i];
        }
        Track(op, is_read ? ucp_get_nbx(ep_, data, n, raddr, seg->rkey, &prm)
                          : ucp_put_nbx(ep_, data, n, raddr, seg->rkey, &prm));
      }
      data += n;
      left -= n;
      offset += n;
    }
  }
  op->Release();
  return Status();
}

Status UcxEndpoint::Read(const RemoteRegion& remote, uint64_t remote_offset,
                         std::span<const IoSlice> local, Completion done) {
  return Transfer(true, remote, remote_offset, local, nullptr, std::move(done));
}

Status UcxEndpoint::Write(std::span<const IoSlice> local, const RemoteRegion& remote,
                          uint64_t remote_offset, Completion done) {
  return Transfer(false, remote, remote_offset, local, nullptr, std::move(done));
}

// The local side of a region transfer: slices with the memh of their segment
// in this endpoint's context.
struct LocalPieces {
  std::vector<IoSlice> slices;
  std::vector<ucp_mem_h> memh;
};

Result<LocalPieces> UcxEndpoint::PiecesOf(const MemoryRegion& region, size_t offset,
                                          size_t length) const {
  auto* impl = dynamic_cast<UcxRegion*>(region.impl());
  if (impl == nullptr) return InvalidArgument("local region was not registered by a ucx fabric");
  if (offset > impl->size || length > impl->size - offset) {
    return InvalidArgument("local range [", offset, ", +", length, ") outside the ", impl->size,
                           "-byte region");
  }
  LocalPieces out;
  for (size_t i = 0; i < impl->segments.size() && length > 0; ++i) {
    const auto& seg = impl->segments[i];
    if (offset >= seg.size) {
      offset -= seg.size;
      continue;
    }
    size_t n = std::min(seg.size - offset, length);
    out.slices.push_back(IoSlice{seg.data + offset, n});
    RAMPART_ASSIGN_OR_RETURN(ucp_mem_h memh, impl->MemhFor(worker_, i));
    out.memh.push_back(memh);
    length -= n;
    offset = 0;
  }
  return out;
}

Status UcxEndpoint::ReadToRegion(const RemoteRegion& remote, uint64_t remote_offset,
                                 const MemoryRegion& local, size_t local_offset, size_t length,
                                 Completion done) {
  RAMPART_ASSIGN_OR_RETURN(LocalPieces pieces, PiecesOf(local, local_offset, length));
  return Transfer(true, remote, remote_offset, pieces.slices, pieces.memh.data(), std::move(done));
}

Status UcxEndpoint::WriteFromRegion(const MemoryRegion& local, size_t local_offset, size_t length,
                                    const RemoteRegion& remote, uint64_t remote_offset,
                                    Completion done) {
  RAMPART_ASSIGN_OR_RETURN(LocalPieces pieces, PiecesOf(local, local_offset, length));
  return Transfer(false, remote, remote_offset, pieces.slices, pieces.memh.data(), std::move(done));
}

Status UcxEndpoint::CompareSwap(const RemoteRegion& remote, uint64_t remote_offset,
                                uint64_t expected, uint64_t desired, CasCompletion done) {
  RAMPART_ASSIGN_OR_RETURN(const UcxRemoteRegion* r, Check(remote, remote_offset, 8));
  if (remote_offset % 8 != 0) return InvalidArgument("compare-and-swap offset ", remote_offset, " is not 8-byte aligned");
  const UcxRemoteRegion::Segment* seg = r->Find(remote_offset);
  if (remote_offset + 8 > seg->start + seg->length) {
    return InvalidArgument("compare-and-swap word straddles two segments");
  }
  // With RDMA in this context, always through UCX atomics, even when the
  // memory is mapped here: on RDMA hardware only NIC atomics are atomic with
  // respect to other NIC atomics. Without RDMA (the context has no UCP
  // atomics then, see InitWorker), a CPU atomic on the mapped word, or a
  // software request whose target does the same: the two kinds mix safely.
  auto* op = new MultiOp{&fabric_.internal(), nullptr};
  op->cas_done = std::move(done);
  op->cas_compare = expected;
  op->cas_result = desired;
  if (seg->software) {
    SoftwareCompareSwap(op, seg->address + (remote_offset - seg->start));
    op->Release();
    return Status();
  }
  if (!worker_.native_rma) {  // then seg->direct: mapped here (same host)
    uint64_t found = expected;
    std::atomic_ref<uint64_t>(
        *reinterpret_cast<uint64_t*>(seg->direct + (remote_offset - seg->start)))
        .compare_exchange_strong(found, desired, std::memory_order_seq_cst);
    op->cas_result = found;
    op->Release();  // completes from the next Progress(), as every operation
    return Status();
  }
  // CSWAP (ucp.h's table): `buffer` holds the compare value; reply_buffer
  // holds the new value going in and the previous value coming out.
  ucp_request_param_t p = RequestParam(op);
  p.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
  p.datatype = ucp_dt_make_contig(8);
  p.reply_buffer = &op->cas_result;
  Track(op, ucp_atomic_op_nbx(ep_, UCP_ATOMIC_OP_CSWAP, &op->cas_compare, 1,
                              seg->address + (remote_offset - seg->start), seg->rkey, &p));
  op->Release();
  return Status();
}

Status UcxEndpoint::Fence() {
  RAMPART_RETURN_IF_ERROR(CheckUsable());
  std::atomic_thread_fence(std::memory_order_release);  // direct-pointer stores
  ucs_status_t st = ucp_worker_fence(worker_.worker);
  return st == UCS_OK ? Status() : InternalError("ucp_worker_fence: ", ucs_status_string(st));
}

Status UcxEndpoint::Flush(Completion done) {
  RAMPART_RETURN_IF_ERROR(CheckUsable());
  auto* op = new MultiOp{&fabric_.internal(), std::move(done)};
  ucp_request_param_t p = RequestParam(op);
  Track(op, ucp_ep_flush_nbx(ep_, &p));
  if (used_software_rma_) SoftwareFlush(op);
  op->Release();
  return Status();
}

}  // namespace rampart::transport
