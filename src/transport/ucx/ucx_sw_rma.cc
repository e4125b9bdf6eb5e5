// One-sided operations carried out in software, over active messages, for
// peer memory that is neither mapped here (shared memory) nor reachable by
// RDMA hardware: UCX over tcp, in particular across hosts.
//
// Why not UCX's own emulation: in UCX 1.13 a peer that dies while its
// emulated puts or gets to us are in flight makes our progress abort the
// process ("Fatal: unexpected error: Endpoint timeout" from ucp_put_handler,
// found by the peer-killed tests). Here a failed peer is an ordinary error,
// and the target checks every address against the regions it exposes, which
// UCX's emulation does not. Cost over tcp is the same: one message each way
// (docs/ucx_notes.md).
//
// Messages (AM id kAmRma), little-endian, header then payload:
//   READ      addr len            -> READ_REPLY   status, len bytes
//   WRITE     addr len, bytes     (no reply: completes when sent, like a put)
//   CAS       addr compare swap   -> CAS_REPLY    status previous
//   FLUSH                         -> FLUSH_REPLY  status of the writes before it
// Requests on one endpoint are handled in order, so a FLUSH_REPLY follows
// every write sent before the FLUSH, and carries the first error any of them
// met at the target (an address outside its regions).
#include <spdlog/spdlog.h>

#include <cstring>

#include "transport/ucx/ucx_fabric.h"
#include "transport/ucx/ucx_op.h"
#include "transport/ucx/ucx_remote_region.h"

namespace rampart::transport {
namespace {

enum class SwOp : uint8_t {
  kRead = 1,
  kReadReply,
  kWrite,
  kUnused,  // was WRITE_ACK
  kCas,
  kCasReply,
  kFlush,
  kFlushReply,
};

struct SwHeader {
  SwOp op;
  uint8_t status;  // StatusCode of a reply
  uint16_t reserved = 0;
  uint32_t reserved2 = 0;
  uint64_t id;
  uint64_t addr;
  uint64_t len;
  uint64_t a;  // CAS: compare; CAS_REPLY: previous
  uint64_t b;  // CAS: swap
};

}  // namespace

// ---------------------------------------------------------------------------
// Requester side

Status UcxEndpoint::SendSoftware(MultiOp* op, SoftwareRequest request, const void* header_bytes,
                                 std::span<const IoSlice> payload) {
  const uint64_t id = next_sw_id_++;
  auto header = std::make_shared<SwHeader>();
  std::memcpy(header.get(), header_bytes, sizeof(SwHeader));
  header->id = id;
  std::vector<IoSlice> slices = {{header.get(), sizeof(SwHeader)}};
  slices.insert(slices.end(), payload.begin(), payload.end());
  // Two references: the send's completion (the payload may be the caller's
  // buffer until then) and the reply (or the endpoint's failure).
  op->pending += 2;
  request.op = op;
  sw_pending_.emplace(id, request);
  Status st = SendAm(kAmRma, slices, [header, op](Status s) {
    if (!s.ok()) op->Fail(s);
    op->Release();
  });
  if (!st.ok()) {
    sw_pending_.erase(id);
    op->Fail(st);
    op->Release();
    op->Release();
  }
  return st;
}

void UcxEndpoint::SoftwareRead(MultiOp* op, uint64_t addr, std::byte* dest, size_t len) {
  SwHeader h{SwOp::kRead, 0, 0, 0, 0, addr, len, 0, 0};
  (void)SendSoftware(op, SoftwareRequest{nullptr, dest, len}, &h, {});
}

void UcxEndpoint::SoftwareWrite(MultiOp* op, uint64_t addr, const std::byte* src, size_t len) {
  // Like a put: complete once sent (the caller's buffer is free again); the
  // next Flush reports whether the target applied it.
  auto header = std::make_shared<SwHeader>(SwHeader{SwOp::kWrite, 0, 0, 0, 0, addr, len, 0, 0});
  IoSlice slices[] = {{header.get(), sizeof(SwHeader)}, {const_cast<std::byte*>(src), len}};
  ++op->pending;
  Status st = SendAm(kAmRma, slices, [header, op](Status s) {
    if (!s.ok()) op->Fail(s);
    op->Release();
  });
  if (!st.ok()) {
    op->Fail(st);
    op->Release();
  }
  used_software_rma_ = true;
}

void UcxEndpoint::SoftwareCompareSwap(MultiOp* op, uint64_t addr) {
  SwHeader h{SwOp::kCas, 0, 0, 0, 0, addr, 8, op->cas_compare, op->cas_result};
  (void)SendSoftware(op, SoftwareRequest{}, &h, {});
}

void UcxEndpoint::SoftwareFlush(MultiOp* op) {
  SwHeader h{SwOp::kFlush, 0, 0, 0, 0, 0, 0, 0, 0};
  (void)SendSoftware(op, SoftwareRequest{}, &h, {});
}

void UcxEndpoint::FailSoftwareRequests(const Status& why) {
  auto pending = std::move(sw_pending_);
  sw_pending_.clear();
  for (auto& [id, request] : pending) {
    request.op->Fail(why);
    request.op->Release();
  }
}

void UcxEndpoint::OnSoftwareReply(const void* header_bytes, std::span<const std::byte> payload) {
  SwHeader h;
  std::memcpy(&h, header_bytes, sizeof h);
  auto it = sw_pending_.find(h.id);
  if (it == sw_pending_.end()) {
    spdlog::warn("ucx: software one-sided reply {} from {} matches no request", h.id, peer_name_);
    return;
  }
  SoftwareRequest request = it->second;
  sw_pending_.erase(it);
  MultiOp* op = request.op;
  auto code = static_cast<StatusCode>(h.status);
  if (code != StatusCode::kOk && h.op == SwOp::kFlushReply) {
    op->Fail(Status(code, StrCat("peer ", peer_name_, " refused a one-sided write made before "
                                 "this flush (see its log)")));
  } else if (code != StatusCode::kOk) {
    op->Fail(Status(code, StrCat("peer ", peer_name_, " refused a one-sided access at 0x",
                                 h.addr, " (+", h.len, ")")));
  } else if (h.op == SwOp::kReadReply) {
    if (payload.size() == request.read_len) {
      std::memcpy(request.read_dest, payload.data(), payload.size());
    } else {
      op->Fail(Corruption("software read reply of ", payload.size(), " bytes, expected ",
                          request.read_len));
    }
  } else if (h.op == SwOp::kCasReply) {
    op->cas_result = h.a;
  }
  op->Release();
}

// ---------------------------------------------------------------------------
// Target side

void UcxFabric::ExposeSegment(const std::byte* data, size_t size) {
  exposed_.emplace(reinterpret_cast<uintptr_t>(data), size);
}

void UcxFabric::HideSegment(const std::byte* data, size_t size) {
  auto [lo, hi] = exposed_.equal_range(reinterpret_cast<uintptr_t>(data));
  for (auto it = lo; it != hi; ++it) {
    if (it->second == size) {
      exposed_.erase(it);
      return;
    }
  }
}

std::byte* UcxFabric::ExposedRange(uint64_t addr, uint64_t len) const {
  auto it = exposed_.upper_bound(addr);
  for (int i = 0; i < 8 && it != exposed_.begin(); ++i) {
    --it;
    if (addr >= it->first && len <= it->second && addr - it->first <= it->second - len) {
      return reinterpret_cast<std::byte*>(addr);
    }
  }
  return nullptr;
}

void UcxFabric::HandleSoftwareRma(const std::shared_ptr<UcxEndpoint>& ep,
                                  std::span<const std::byte> bytes) {
  if (!ep->proven()) {
    internal().Refuse(ep, "sent a one-sided request before proving the cluster secret");
    return;
  }
  if (bytes.size() < sizeof(SwHeader)) {
    spdlog::warn("ucx: short one-sided request ({} bytes) from {}", bytes.size(), ep->peer_name());
    return;
  }
  SwHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  auto payload = bytes.subspan(sizeof h);
  if (h.op == SwOp::kReadReply || h.op == SwOp::kCasReply || h.op == SwOp::kFlushReply) {
    ep->OnSoftwareReply(bytes.data(), payload);
    return;
  }

  auto reply = std::make_shared<std::vector<std::byte>>(sizeof(SwHeader));
  SwHeader r{};
  r.id = h.id;
  r.addr = h.addr;
  r.len = h.len;
  StatusCode status = StatusCode::kOk;
  std::byte* target = h.op == SwOp::kFlush ? nullptr : ExposedRange(h.addr, h.len);
  if (h.op != SwOp::kFlush && target == nullptr) {
    spdlog::warn("ucx: {} asked for [0x{:x}, +{}) outside every exposed region", ep->peer_name(),
                 h.addr, h.len);
    status = StatusCode::kInvalidArgument;
  }
  switch (h.op) {
    case SwOp::kRead:
      r.op = SwOp::kReadReply;
      if (target != nullptr) {
        reply->resize(sizeof(SwHeader) + h.len);
        std::memcpy(reply->data() + sizeof(SwHeader), target, h.len);
      }
      break;
    case SwOp::kWrite:
      if (target != nullptr && payload.size() == h.len) {
        std::memcpy(target, payload.data(), h.len);
      } else if (ep->sw_write_error_ == StatusCode::kOk) {
        ep->sw_write_error_ = StatusCode::kInvalidArgument;  // reported by the next FLUSH
      }
      return;  // writes are not answered
    case SwOp::kCas:
      r.op = SwOp::kCasReply;
      if (target != nullptr && h.len == 8 && h.addr % 8 == 0) {
        uint64_t expected = h.a;
        __atomic_compare_exchange_n(reinterpret_cast<uint64_t*>(target), &expected, h.b, false,
                                    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        r.a = expected;  // the previous value either way
      } else if (target != nullptr) {
        status = StatusCode::kInvalidArgument;
      }
      break;
    case SwOp::kFlush:
      r.op = SwOp::kFlushReply;
      status = ep->sw_write_error_;
      ep->sw_write_error_ = StatusCode::kOk;
      break;
    default:
      spdlog::warn("ucx: unknown one-sided request {} from {}", static_cast<int>(h.op),
                   ep->peer_name());
      return;
  }
  r.status = static_cast<uint8_t>(status);
  std::memcpy(reply->data(), &r, sizeof r);
  IoSlice slice{reply->data(), reply->size()};
  Status st = ep->SendAm(kAmRma, std::span<const IoSlice>(&slice, 1), [reply](Status) {});
  if (!st.ok()) spdlog::debug("ucx: one-sided reply to {}: {}", ep->peer_name(), st.ToString());
}

}  // namespace rampart::transport
