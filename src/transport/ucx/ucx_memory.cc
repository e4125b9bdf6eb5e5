// ucx backend: registered memory, region descriptors, and importing a peer's
// region (remote keys, direct pointers on the same host).
//
// Descriptor format (see docs/transport.md), little-endian:
//   u32 magic "RMPR"   u16 version (1)   u16 segment count   u64 total bytes
//   per segment: u64 address  u64 length  u32 rkey length  u32 zero  rkey bytes, padded to 8

#include <cstring>

#include "transport/ucx/ucx_fabric.h"
#include "transport/ucx/ucx_remote_region.h"

namespace rampart::transport {
namespace {

constexpr uint32_t kDescriptorMagic = 0x52504d52;  // "RMPR"
constexpr uint16_t kDescriptorVersion = 1;
constexpr size_t kMaxDescriptorSegments = 4096;

struct DescriptorHeader {
  uint32_t magic;
  uint16_t version;
  uint16_t segments;
  uint64_t total;
};
struct SegmentHeader {
  uint64_t address;
  uint64_t length;
  uint32_t rkey_length;
  uint32_t zero;
};

void Append(std::vector<std::byte>& out, const void* p, size_t n) {
  auto* b = static_cast<const std::byte*>(p);
  out.insert(out.end(), b, b + n);
}

}  // namespace

// ---------------------------------------------------------------------------
// Local regions

Result<ucp_mem_h> MapExisting(ucp_context_h context, std::byte* addr, size_t len) {
  ucp_mem_map_params_t mp{};
  mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  mp.address = addr;
  mp.length = len;
  ucp_mem_h memh = nullptr;
  ucs_status_t st = ucp_mem_map(context, &mp, &memh);
  if (st == UCS_ERR_NO_MEMORY || st == UCS_ERR_NO_RESOURCE) {
    return ResourceExhausted("ucp_mem_map: ", ucs_status_string(st));
  }
  if (st != UCS_OK) return InternalError("ucp_mem_map: ", ucs_status_string(st));
  return memh;
}

UcxRegion::~UcxRegion() {
  for (const MemoryRegion::Segment& seg : segments) fabric_.HideSegment(seg.data, seg.size);
  for (ucp_mem_h h : network_memh) {
    if (h != nullptr) ucp_mem_unmap(fabric_.network()->context, h);
  }
  if (allocated) {
    ucp_mem_unmap(fabric_.context(), memh[0]);
    return;
  }
  for (auto& lease : leases) fabric_.reg_cache().Release(lease);
}

Result<ucp_mem_h> UcxRegion::MemhFor(const UcxWorker& worker, size_t i) const {
  // Only RDMA transfers use a local memh; over software one-sided operations
  // (and the same-host context) the registration below would be wasted.
  if (worker.context == fabric_.context() || !worker.native_rma) return memh[i];
  if (network_memh.empty()) network_memh.resize(memh.size(), nullptr);
  if (network_memh[i] == nullptr) {
    RAMPART_ASSIGN_OR_RETURN(network_memh[i],
                             MapExisting(worker.context, segments[i].data, segments[i].size));
  }
  return network_memh[i];
}

Result<std::vector<std::byte>> UcxRegion::Descriptor(const Endpoint* peer) const {
  // The keys of the context the peer's endpoint uses: a peer on another host
  // reached through the network context unpacks them against that context's
  // transports (its RDMA keys are of that context's registrations).
  auto* ucx_peer = dynamic_cast<const UcxEndpoint*>(peer);
  const UcxWorker* via = ucx_peer != nullptr && ucx_peer->worker().context != fabric_.context()
                             ? &ucx_peer->worker()
                             : nullptr;
  std::vector<std::byte> out;
  DescriptorHeader h{kDescriptorMagic, kDescriptorVersion, static_cast<uint16_t>(segments.size()),
                     size};
  Append(out, &h, sizeof h);
  for (size_t i = 0; i < segments.size(); ++i) {
    void* rkey = nullptr;
    size_t rkey_size = 0;
    ucp_context_h context = fabric_.context();
    ucp_mem_h handle = memh[i];
    if (via != nullptr && via->native_rma) {
      RAMPART_ASSIGN_OR_RETURN(handle, MemhFor(*via, i));
      context = via->context;
    }
    ucs_status_t st = ucp_rkey_pack(context, handle, &rkey, &rkey_size);
    if (st != UCS_OK) return InternalError("ucp_rkey_pack: ", ucs_status_string(st));
    SegmentHeader sh{reinterpret_cast<uint64_t>(segments[i].data), segments[i].size,
                     static_cast<uint32_t>(rkey_size), 0};
    Append(out, &sh, sizeof sh);
    Append(out, rkey, rkey_size);
    out.resize((out.size() + 7) & ~size_t{7});
    ucp_rkey_buffer_release(rkey);
  }
  return out;
}

Result<MemoryRegion> UcxFabric::Allocate(size_t bytes) {
  if (bytes == 0) return InvalidArgument("Allocate: zero bytes");
  ucp_mem_map_params_t mp{};
  mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS;
  mp.length = bytes;
  mp.flags = UCP_MEM_MAP_ALLOCATE;
  ucp_mem_h memh = nullptr;
  ucs_status_t st = ucp_mem_map(local_.context, &mp, &memh);
  if (st != UCS_OK) {
    return ResourceExhausted("cannot allocate ", bytes, " bytes of registered memory: ",
                             ucs_status_string(st));
  }
  ucp_mem_attr_t attr{};
  attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
  st = ucp_mem_query(memh, &attr);
  if (st != UCS_OK) {
    ucp_mem_unmap(local_.context, memh);
    return InternalError("ucp_mem_query: ", ucs_status_string(st));
  }
  auto region = std::make_unique<UcxRegion>(*this);
  region->segments.push_back({static_cast<std::byte*>(attr.address), bytes});
  region->size = bytes;
  region->memh.push_back(memh);
  region->allocated = true;
  ExposeSegment(region->segments[0].data, bytes);
  return MemoryRegion(std::move(region));
}

Result<MemoryRegion> UcxFabric::RegisterVector(std::span<const IoSlice> buffers) {
  if (buffers.empty()) return InvalidArgument("RegisterVector: no buffers");
  if (buffers.size() > kMaxDescriptorSegments) {
    return InvalidArgument("RegisterVector: ", buffers.size(), " buffers, at most ",
                           kMaxDescriptorSegments);
  }
  auto region = std::make_unique<UcxRegion>(*this);
  for (const IoSlice& b : buffers) {
    if (b.data == nullptr || b.size == 0) {
      return InvalidArgument("RegisterVector: null or empty buffer");  // region releases leases
    }
    auto lease = reg_cache_->Acquire(static_cast<std::byte*>(b.data), b.size);
    if (!lease.ok()) return lease.status();
    region->leases.push_back(*lease);
    region->memh.push_back(static_cast<ucp_mem_h>(lease->handle));
    region->segments.push_back({static_cast<std::byte*>(b.data), b.size});
    region->size += b.size;
    ExposeSegment(static_cast<std::byte*>(b.data), b.size);
  }
  return MemoryRegion(std::move(region));
}

// ---------------------------------------------------------------------------
// Remote regions

UcxRemoteRegion::~UcxRemoteRegion() { Release(); }

void UcxRemoteRegion::Release() {
  for (Segment& s : segments_) {
    if (s.rkey != nullptr) ucp_rkey_destroy(s.rkey);
    s.rkey = nullptr;
    s.direct = nullptr;
  }
  released_ = true;
}

std::byte* UcxRemoteRegion::DirectPointer(size_t offset, size_t length) const {
  const Segment* s = Find(offset);
  if (s == nullptr || s->direct == nullptr || offset + length > s->start + s->length) return nullptr;
  return s->direct + (offset - s->start);
}

const UcxRemoteRegion::Segment* UcxRemoteRegion::Find(size_t offset) const {
  if (released_) return nullptr;
  // Few segments in practice (1 for allocated regions); binary search for many.
  auto it = std::upper_bound(segments_.begin(), segments_.end(), offset,
                             [](size_t off, const Segment& s) { return off < s.start; });
  if (it == segments_.begin()) return nullptr;
  --it;
  return offset < it->start + it->length ? &*it : nullptr;
}

Result<RemoteRegion> UcxEndpoint::Import(std::span<const std::byte> descriptor) {
  RAMPART_RETURN_IF_ERROR(CheckUsable());
  auto bad = [&](std::string_view why) {
    return InvalidArgument("region descriptor from ", peer_name_, ": ", why);
  };
  DescriptorHeader h;
  if (descriptor.size() < sizeof h) return bad("truncated header");
  std::memcpy(&h, descriptor.data(), sizeof h);
  if (h.magic != kDescriptorMagic || h.version != kDescriptorVersion) return bad("bad magic or version");
  if (h.segments == 0 || h.segments > kMaxDescriptorSegments) return bad("bad segment count");
  auto region = std::make_shared<UcxRemoteRegion>();
  size_t pos = sizeof h;
  size_t start = 0;
  for (unsigned i = 0; i < h.segments; ++i) {
    SegmentHeader sh;
    if (descriptor.size() - pos < sizeof sh) return bad("truncated segment");
    std::memcpy(&sh, descriptor.data() + pos, sizeof sh);
    pos += sizeof sh;
    if (sh.rkey_length == 0 || descriptor.size() - pos < sh.rkey_length) return bad("truncated key");
    UcxRemoteRegion::Segment seg{sh.address, sh.length, start, nullptr, nullptr, false};
    ucs_status_t st = ucp_ep_rkey_unpack(ep_, descriptor.data() + pos, &seg.rkey);
    if (st != UCS_OK) return bad(StrCat("ucp_ep_rkey_unpack: ", ucs_status_string(st)));
    void* direct = nullptr;
    if (ucp_rkey_ptr(seg.rkey, sh.address, &direct) == UCS_OK) seg.direct = static_cast<std::byte*>(direct);
    seg.software = seg.direct == nullptr && !worker_.native_rma;
    region->segments_.push_back(seg);
    start += sh.length;
    pos += (sh.rkey_length + 7) & ~size_t{7};
  }
  if (start != h.total) return bad("segment lengths do not add up");
  region->total_ = start;
  std::erase_if(remote_regions_, [](const auto& w) { return w.expired(); });
  remote_regions_.push_back(region);
  return RemoteRegion(region);
}

void UcxEndpoint::ReleaseRemoteRegions() {
  for (auto& weak : remote_regions_) {
    if (auto r = weak.lock()) r->Release();
  }
  remote_regions_.clear();
}

}  // namespace rampart::transport
