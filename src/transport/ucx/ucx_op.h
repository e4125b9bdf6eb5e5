// One user-visible operation made of several UCX requests or software
// one-sided requests (ucx_sw_rma.cc). Private to the ucx backend.
//
// Thread-safety: the owning Fabric's thread only.
#pragma once

#include <ucp/api/ucp.h>

#include <vector>

#include "transport/fabric_internal.h"

namespace rampart::transport {

// One user operation made of several UCX requests: completes once, with the
// first error, when the last request finishes. Owns what UCX reads until then.
struct MultiOp {
  Fabric::Internal* internal;
  Completion done;
  int pending = 1;  // 1 = the issuing call itself, released at its end
  Status status;
  std::vector<ucp_dt_iov_t> iov;  // active messages sent from a gather list
  uint64_t cas_compare = 0;       // compare-and-swap operands
  uint64_t cas_result = 0;
  Endpoint::CasCompletion cas_done;

  void Fail(Status s) {
    if (status.ok()) status = std::move(s);
  }
  void Release() {
    if (--pending > 0) return;
    if (cas_done) {
      Result<uint64_t> r = status.ok() ? Result<uint64_t>(cas_result) : Result<uint64_t>(status);
      internal->Defer([cb = std::move(cas_done), r = std::move(r)] { cb(r); });
    } else {
      internal->Defer(std::move(done), std::move(status));
    }
    delete this;
  }
};

// UCX calls no callback for a request freed before it completes, so requests
// are freed here, after their callback.
inline void OnRequestDone(void* request, ucs_status_t st, void* user_data) {
  ucp_request_free(request);
  auto* op = static_cast<MultiOp*>(user_data);
  if (st != UCS_OK) op->Fail(Unavailable("ucx operation failed: ", ucs_status_string(st)));
  op->Release();
}

// Accounts for what a nbx call returned: done now, failed now, or in flight.
inline void Track(MultiOp* op, ucs_status_ptr_t req) {
  if (req == nullptr) return;
  if (UCS_PTR_IS_ERR(req)) {
    op->Fail(Unavailable("ucx operation failed: ", ucs_status_string(UCS_PTR_STATUS(req))));
    return;
  }
  ++op->pending;  // OnRequestDone releases it and frees the request
}

inline ucp_request_param_t RequestParam(MultiOp* op) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.cb.send = &OnRequestDone;
  p.user_data = op;
  return p;
}

}  // namespace rampart::transport
