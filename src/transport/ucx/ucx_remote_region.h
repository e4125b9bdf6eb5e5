// A peer's region imported through a UcxEndpoint: remote keys per segment and,
// where UCX maps the peer's memory into this process (shared memory), direct
// pointers. Release() (peer failed, endpoint closed) destroys the keys and
// forgets the pointers; the region then refuses every access.
//
// Thread-safety: the owning Fabric's thread only.
#pragma once

#include <ucp/api/ucp.h>

#include <algorithm>
#include <vector>

#include "transport/fabric_internal.h"

namespace rampart::transport {

class UcxRemoteRegion final : public RemoteRegion::Impl {
 public:
  struct Segment {
    uint64_t address;  // in the peer's address space
    size_t length;
    size_t start;      // offset of this segment in the region
    ucp_rkey_h rkey;
    std::byte* direct; // mapped here, or null
    bool software;     // not mapped, no RDMA: software one-sided operations
  };

  ~UcxRemoteRegion() override;
  size_t size() const override { return total_; }
  std::byte* DirectPointer(size_t offset, size_t length) const override;
  bool AccessedByMessages() const override {
    return !released_ && std::all_of(segments_.begin(), segments_.end(),
                                      [](const Segment& s) { return s.software; });
  }

  // The segment holding `offset`, or null (out of range, or released).
  const Segment* Find(size_t offset) const;
  bool released() const { return released_; }
  void Release();

 private:
  std::vector<Segment> segments_;
  size_t total_ = 0;
  bool released_ = false;
  friend class UcxEndpoint;
};

}  // namespace rampart::transport
