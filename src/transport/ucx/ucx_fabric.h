// The ucx backend: UCX UCP, one context and worker per Fabric (thread mode
// SINGLE). Facts this code relies on are in shared/UCX_NOTES.md.
//
// Thread-safety: a UcxFabric and everything it hands out are used only on the
// thread that created it (Fabric::Notify excepted).
#pragma once

#include <ucm/api/ucm.h>
#include <ucp/api/ucp.h>

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "transport/fabric_internal.h"
#include "transport/reg_cache.h"

namespace rampart::transport {

class UcxFabric;
class UcxRemoteRegion;

// Active-message ids.
inline constexpr unsigned kAmUser = 0;
inline constexpr unsigned kAmControl = 1;
inline constexpr unsigned kAmRma = 2;  // software one-sided operations (ucx_sw_rma.cc)

struct MultiOp;

// A registered region: one ucp_mem_map(ALLOCATE) allocation, or a vector of
// leases from the registration cache.
class UcxRegion final : public MemoryRegion::Impl {
 public:
  UcxRegion(UcxFabric& fabric) : fabric_(fabric) {}
  ~UcxRegion() override;
  Result<std::vector<std::byte>> Descriptor() const override;

  // memh of each segment, in segment order.
  std::vector<ucp_mem_h> memh;
  bool allocated = false;  // true: memh[0] came from ALLOCATE and is unmapped here
  std::vector<RegistrationCache::Lease> leases;

 private:
  UcxFabric& fabric_;
};

class UcxEndpoint final : public EndpointBase {
 public:
  UcxEndpoint(UcxFabric& fabric, std::string peer_name);
  ~UcxEndpoint() override;

  // Endpoint
  const std::string& peer_name() const override { return peer_name_; }
  bool connected() const override { return state_ == State::kConnected; }
  Status Send(std::span<const IoSlice> message, Completion done) override;
  Result<RemoteRegion> Import(std::span<const std::byte> descriptor) override;
  Status Read(const RemoteRegion& remote, uint64_t remote_offset, std::span<const IoSlice> local,
              Completion done) override;
  Status Write(std::span<const IoSlice> local, const RemoteRegion& remote, uint64_t remote_offset,
               Completion done) override;
  Status ReadToRegion(const RemoteRegion& remote, uint64_t remote_offset, const MemoryRegion& local,
                      size_t local_offset, size_t length, Completion done) override;
  Status WriteFromRegion(const MemoryRegion& local, size_t local_offset, size_t length,
                         const RemoteRegion& remote, uint64_t remote_offset,
                         Completion done) override;
  Status CompareSwap(const RemoteRegion& remote, uint64_t remote_offset, uint64_t expected,
                     uint64_t desired, CasCompletion done) override;
  Status Fence() override;
  Status Flush(Completion done) override;
  void Close() override;

  // EndpointBase
  Status SendControl(std::span<const IoSlice> message, Completion done) override;

  // Backend plumbing.
  void Attach(ucp_ep_h ep) { ep_ = ep; state_ = State::kConnected; }
  // The peer failed: drop remote keys and direct pointers, close the ep.
  void Fail(const Status& why);
  const Status& failure() const { return failure_; }

 private:
  enum class State { kConnecting, kConnected, kFailed, kClosed };
  // A software one-sided request awaiting its reply.
  struct SoftwareRequest {
    MultiOp* op = nullptr;
    std::byte* read_dest = nullptr;
    size_t read_len = 0;
  };

  Status CheckUsable() const;
  Status SendAm(unsigned id, std::span<const IoSlice> message, Completion done);
  Status Transfer(bool is_read, const RemoteRegion& remote, uint64_t remote_offset,
                  std::span<const IoSlice> local, const ucp_mem_h* local_memh,
                  Completion done);
  Result<const UcxRemoteRegion*> Check(const RemoteRegion& remote, uint64_t offset,
                                       size_t length) const;
  void ReleaseRemoteRegions();

  // Software one-sided operations (ucx_sw_rma.cc).
  Status SendSoftware(MultiOp* op, SoftwareRequest request, const void* header,
                      std::span<const IoSlice> payload);
  void SoftwareRead(MultiOp* op, uint64_t addr, std::byte* dest, size_t len);
  void SoftwareWrite(MultiOp* op, uint64_t addr, const std::byte* src, size_t len);
  void SoftwareCompareSwap(MultiOp* op, uint64_t addr);
  void SoftwareFlush(MultiOp* op);
  void OnSoftwareReply(const void* header, std::span<const std::byte> payload);
  void FailSoftwareRequests(const Status& why);

  UcxFabric& fabric_;
  std::string peer_name_;
  ucp_ep_h ep_ = nullptr;
  State state_ = State::kConnecting;
  Status failure_;
  std::vector<std::weak_ptr<UcxRemoteRegion>> remote_regions_;
  std::unordered_map<uint64_t, SoftwareRequest> sw_pending_;
  uint64_t next_sw_id_ = 1;
  bool used_software_rma_ = false;
  // Target side: the first software write from this peer refused since its
  // last FLUSH (reported in the FLUSH reply).
  StatusCode sw_write_error_ = StatusCode::kOk;
  friend class UcxFabric;
};

class UcxFabric final : public Fabric {
 public:
  static Result<std::unique_ptr<Fabric>> Create(const FabricOptions& options);
  ~UcxFabric() override;

  Backend backend() const override { return Backend::kUcx; }
  Status Listen(const std::string& host, uint16_t port) override;
  uint16_t listen_port() const override { return listen_port_; }
  Result<std::shared_ptr<Endpoint>> Connect(const std::string& host, uint16_t port) override;
  Result<MemoryRegion> Allocate(size_t bytes) override;
  Result<MemoryRegion> RegisterVector(std::span<const IoSlice> buffers) override;
  CacheStats registration_cache_stats() const override;

  ucp_context_h context() const { return context_; }
  ucp_worker_h worker() const { return worker_; }
  RegistrationCache& reg_cache() { return *reg_cache_; }
  // Keeps a request alive until it completes (closing endpoints).
  void TrackCloseRequest(void* request);
  // True when peer memory that is not mapped here is reached by software
  // one-sided operations (no RDMA transport in this context).
  bool software_rma() const { return !native_remote_rma_; }
  // Memory peers may reach through software one-sided operations.
  void ExposeSegment(const std::byte* data, size_t size);
  void HideSegment(const std::byte* data, size_t size);

 protected:
  int ProgressBackend() override;
  bool ArmBackend() override;
  int backend_event_fd() const override { return event_fd_; }

 private:
  explicit UcxFabric(const FabricOptions& options);
  Status Init();
  std::shared_ptr<UcxEndpoint> CreateEndpoint(const ucp_ep_params_t& base, std::string peer);
  void DeliverPendingMessages();
  void ReapCloseRequests();

  static void OnConnRequest(ucp_conn_request_h request, void* arg);
  static void OnEndpointError(void* arg, ucp_ep_h ep, ucs_status_t status);
  static void OnMemoryUnmapped(ucm_event_type_t event_type, ucm_event_t* event, void* arg);

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  ucp_listener_h listener_ = nullptr;
  uint16_t listen_port_ = 0;
  int event_fd_ = -1;
  std::unique_ptr<RegistrationCache> reg_cache_;
  bool ucm_handler_set_ = false;
  bool native_remote_rma_ = false;
  std::multimap<uintptr_t, size_t> exposed_;  // start -> size

  // Every live endpoint by its ucp_ep (reply_ep lookups, error callbacks).
  std::unordered_map<ucp_ep_h, std::weak_ptr<UcxEndpoint>> endpoints_;
  // Messages received inside UCX callbacks, delivered after progress returns
  // so handlers never run inside UCX.
  struct PendingMessage {
    std::weak_ptr<UcxEndpoint> ep;
    unsigned am_id;
    size_t length;
    size_t offset = 0;              // copied: where in pending_bytes_
    void* ucx_data = nullptr;       // persistent UCX data, released after delivery
    std::unique_ptr<std::byte[]> owned;  // rendezvous: received into this
    bool ready = true;              // rendezvous data has arrived
    bool failed = false;            // rendezvous receive failed: drop
  };
  ucs_status_t ReceiveAm(unsigned am_id, void* data, size_t length,
                         const ucp_am_recv_param_t* param);
  static ucs_status_t OnAmUser(void* arg, const void* header, size_t header_length, void* data,
                               size_t length, const ucp_am_recv_param_t* param);
  static ucs_status_t OnAmControl(void* arg, const void* header, size_t header_length,
                                  void* data, size_t length, const ucp_am_recv_param_t* param);
  static ucs_status_t OnAmRma(void* arg, const void* header, size_t header_length, void* data,
                              size_t length, const ucp_am_recv_param_t* param);
  void HandleSoftwareRma(const std::shared_ptr<UcxEndpoint>& ep, std::span<const std::byte> bytes);
  // Start of [addr, addr + len) if an exposed segment holds it all, else null.
  std::byte* ExposedRange(uint64_t addr, uint64_t len) const;
  bool DetectNativeRma() const;
  static void OnRendezvousDone(void* request, ucs_status_t status, size_t length,
                               void* user_data);
  std::deque<PendingMessage> pending_;  // deque: rendezvous callbacks hold addresses
  std::vector<std::byte> pending_bytes_;
  std::vector<void*> close_requests_;
  friend class UcxEndpoint;
};

}  // namespace rampart::transport
