// The ucx backend: UCX UCP in thread mode SINGLE. Facts this code relies on
// are in docs/transport.md ("UCX settings rampart applies", "Peers on other
// hosts").
//
// A Fabric has one UCP context and worker for peers on this host (every
// transport UCX offers: shared memory to them; it also listens and registers
// memory) and, from its first connection to a peer on another host, a second
// one without the shared-memory transports, through which it reaches peers on
// other hosts. UCX deems every process of one kernel and IPC namespace
// reachable over shared memory, also one in another network namespace, where
// its wake-up signals (abstract unix sockets) never arrive: requests to such a
// peer hung whenever it slept (docs/transport.md).
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

// Registers [addr, addr + len) of this process's memory with `context`.
Result<ucp_mem_h> MapExisting(ucp_context_h context, std::byte* addr, size_t len);

// The UCX transports of the network context: `tls` (a UCX_TLS value; empty or
// "all": UCX's default) without the shared-memory ones ("^sm" for the
// default). kInvalidArgument when nothing left reaches another host.
Result<std::string> NetworkTransports(const std::string& tls);

// One UCP context with its worker (see the top of this file).
struct UcxWorker {
  UcxFabric* fabric = nullptr;
  const char* role = "";          // "same-host" | "network", for messages
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  int event_fd = -1;
  bool native_rma = false;        // an RDMA transport: one-sided ops in hardware
};

// A registered region: one ucp_mem_map(ALLOCATE) allocation, or a vector of
// leases from the registration cache.
class UcxRegion final : public MemoryRegion::Impl {
 public:
  UcxRegion(UcxFabric& fabric) : fabric_(fabric) {}
  ~UcxRegion() override;
  Result<std::vector<std::byte>> Descriptor(const Endpoint* peer) const override;

  // memh of each segment, in segment order (the same-host context).
  std::vector<ucp_mem_h> memh;
  // The segments mapped into the network context too, on first use by an
  // RDMA transfer through it (empty until then).
  mutable std::vector<ucp_mem_h> network_memh;
  // memh of segment i in `worker`'s context: the same-host one's, or (RDMA
  // through the network context) a mapping made on first use.
  // REQUIRES: i < memh.size().
  Result<ucp_mem_h> MemhFor(const UcxWorker& worker, size_t i) const;
  bool allocated = false;  // true: memh[0] came from ALLOCATE and is unmapped here
  std::vector<RegistrationCache::Lease> leases;

 private:
  UcxFabric& fabric_;
};

class UcxEndpoint final : public EndpointBase {
 public:
  UcxEndpoint(UcxFabric& fabric, UcxWorker& worker, std::string peer_name);
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
  UcxWorker& worker() const { return worker_; }

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
  Result<struct LocalPieces> PiecesOf(const MemoryRegion& region, size_t offset,
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
  UcxWorker& worker_;
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

  Result<MemoryRegion> Allocate(size_t bytes) override;
  Result<MemoryRegion> RegisterVector(std::span<const IoSlice> buffers) override;
  CacheStats registration_cache_stats() const override;

  // The same-host context (listening, registered memory).
  ucp_context_h context() const { return local_.context; }
  // The network context, or null before the first connection to another host.
  const UcxWorker* network() const { return network_.get(); }
  RegistrationCache& reg_cache() { return *reg_cache_; }
  // Keeps a request alive until it completes (closing endpoints).
  void TrackCloseRequest(void* request);
  // Memory peers may reach through software one-sided operations.
  void ExposeSegment(const std::byte* data, size_t size);
  void HideSegment(const std::byte* data, size_t size);

 protected:
  Result<std::shared_ptr<Endpoint>> ConnectBackend(const std::string& host, uint16_t port,
                                                   std::chrono::milliseconds timeout) override;
  int ProgressBackend() override;
  bool ArmBackend() override;
  int backend_event_fd() const override { return event_fd_; }

 private:
  explicit UcxFabric(const FabricOptions& options);
  Status Init();
  // Creates `w`'s context (transports `tls`; empty: UCX's default) and worker.
  Status InitWorker(UcxWorker& w, const std::string& tls);
  Status CreateContext(UcxWorker& w, const std::string& tls);
  Status CreateWorker(UcxWorker& w);
  void DestroyWorker(UcxWorker& w);
  // The worker that reaches `host`: the same-host one for an address of this
  // network namespace, the network one (created now if needed) otherwise.
  Result<UcxWorker*> WorkerFor(const std::string& host);
  std::shared_ptr<UcxEndpoint> CreateEndpoint(UcxWorker& w, const ucp_ep_params_t& base,
                                              std::string peer);
  void DeliverPendingMessages();
  void ReapCloseRequests();

  static void OnConnRequest(ucp_conn_request_h request, void* arg);
  static void OnEndpointError(void* arg, ucp_ep_h ep, ucs_status_t status);
  static void OnMemoryUnmapped(ucm_event_type_t event_type, ucm_event_t* event, void* arg);

  UcxWorker local_;
  std::unique_ptr<UcxWorker> network_;
  // Transports of the network context; equal to the same-host one's when
  // those include no shared memory (then there is no second context).
  std::string network_tls_;
  bool network_is_local_ = false;
  ucp_listener_h listener_ = nullptr;
  uint16_t listen_port_ = 0;
  int event_fd_ = -1;  // an epoll set of the workers' event fds
  std::unique_ptr<RegistrationCache> reg_cache_;
  bool ucm_handler_set_ = false;
  std::multimap<uintptr_t, size_t> exposed_;  // start -> size

  // Every live endpoint by its ucp_ep (reply_ep lookups, error callbacks).
  std::unordered_map<ucp_ep_h, std::weak_ptr<UcxEndpoint>> endpoints_;
  // Messages received inside UCX callbacks, delivered after progress returns
  // so handlers never run inside UCX.
  struct PendingMessage {
    std::weak_ptr<UcxEndpoint> ep;
    ucp_worker_h worker = nullptr;  // the worker that received it
    unsigned am_id;
    size_t length;
    size_t offset = 0;              // copied: where in pending_bytes_
    void* ucx_data = nullptr;       // persistent UCX data, released after delivery
    std::unique_ptr<std::byte[]> owned;  // rendezvous: received into this
    bool ready = true;              // rendezvous data has arrived
    bool failed = false;            // rendezvous receive failed: drop
  };
  ucs_status_t ReceiveAm(UcxWorker& w, unsigned am_id, void* data, size_t length,
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
  static bool DetectNativeRma(ucp_context_h context);
  static void OnRendezvousDone(void* request, ucs_status_t status, size_t length,
                               void* user_data);
  std::deque<PendingMessage> pending_;  // deque: rendezvous callbacks hold addresses
  std::vector<std::byte> pending_bytes_;
  std::vector<void*> close_requests_;
  friend class UcxEndpoint;
};

}  // namespace rampart::transport
