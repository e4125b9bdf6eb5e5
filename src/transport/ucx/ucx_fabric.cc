// ucx backend, set-up path: context, worker, listener, connections, active
// message reception, progress and waiting.
#include "transport/ucx/ucx_fabric.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/epoll.h>
#include <unistd.h>
#include <ucm/api/ucm.h>

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>

#include "common/local_host.h"

namespace rampart::transport {
namespace {

Status UcxError(std::string_view what, ucs_status_t st) {
  StatusCode code = StatusCode::kInternal;
  switch (st) {
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_REJECTED:
    case UCS_ERR_NOT_CONNECTED:
      code = StatusCode::kUnavailable;
      break;
    case UCS_ERR_NO_MEMORY:
    case UCS_ERR_NO_RESOURCE:
      code = StatusCode::kResourceExhausted;
      break;
    case UCS_ERR_BUSY:
      code = StatusCode::kUnavailable;
      break;
    case UCS_ERR_INVALID_PARAM:
      code = StatusCode::kInvalidArgument;
      break;
    case UCS_ERR_UNSUPPORTED:
      code = StatusCode::kNotSupported;
      break;
    case UCS_ERR_CANCELED:
      code = StatusCode::kAborted;
      break;
    case UCS_ERR_TIMED_OUT:
      code = StatusCode::kTimedOut;
      break;
    default:
      break;
  }
  return Status(code, StrCat(what, ": ", ucs_status_string(st)));
}

// UCX settings rampart relies on (docs/ucx_notes.md), unless the user set them:
// error handling over shared memory (only when shared memory may be used, or
// UCX warns about an unused variable) and reusing a listener's port after a
// restart. These are transport-level settings that ucp_config_modify does not
// reach, so they are put in the environment while the context and worker are
// created, and taken out again so child processes do not inherit them.
// Guards the environment: ScopedUcxEnvironment sets and unsets variables
// while another thread's fabric may read them (getenv during a setenv is
// undefined behaviour: two fabrics created at once crashed in getenv).
std::mutex& UcxEnvironmentMutex() {
  static std::mutex mu;
  return mu;
}

// UCX_TLS as the user set it (nullopt when unset), read under
// UcxEnvironmentMutex. REQUIRES: no ScopedUcxEnvironment alive on this thread.
std::optional<std::string> UserUcxTls() {
  std::lock_guard<std::mutex> lock(UcxEnvironmentMutex());
  const char* env = std::getenv("UCX_TLS");
  if (env == nullptr) return std::nullopt;
  return std::string(env);
}

class ScopedUcxEnvironment {
 public:
  explicit ScopedUcxEnvironment(const std::string& tls) : lock_(UcxEnvironmentMutex()) {
    const char* env_tls = std::getenv("UCX_TLS");
    std::string effective = env_tls != nullptr ? env_tls : tls;
    bool may_use_shm = effective.empty() || effective.find("sm") != std::string::npos ||
                       effective.find("posix") != std::string::npos ||
                       effective.find("sysv") != std::string::npos ||
                       effective.find("all") != std::string::npos || effective[0] == '^';
    if (may_use_shm) Set("UCX_MM_ERROR_HANDLING", "y");
    Set("UCX_TCP_CM_REUSEADDR", "y");
  }
  ~ScopedUcxEnvironment() {
    for (const char* name : set_) unsetenv(name);
  }

 private:
  void Set(const char* name, const char* value) {
    if (std::getenv(name) != nullptr) return;  // the user's choice stands
    setenv(name, value, 0);
    set_.push_back(name);
  }
  std::lock_guard<std::mutex> lock_;
  std::vector<const char*> set_;
};

Result<sockaddr_storage> ResolveAddress(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::string service = std::to_string(port);
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &res);
  if (rc != 0) return InvalidArgument("cannot resolve ", host, ": ", gai_strerror(rc));
  sockaddr_storage out{};
  std::memcpy(&out, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  return out;
}

std::string PeerName(const sockaddr_storage& addr) {
  char host[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (addr.ss_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    port = ntohs(in->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    port = ntohs(in6->sin6_port);
  }
  return StrCat(host, ":", port);
}

}  // namespace

Result<std::unique_ptr<Fabric>> CreateUcxFabric(const FabricOptions& options) {
  return UcxFabric::Create(options);
}

Result<std::unique_ptr<Fabric>> UcxFabric::Create(const FabricOptions& options) {
  std::unique_ptr<UcxFabric> fabric(new UcxFabric(options));
  RAMPART_RETURN_IF_ERROR(fabric->Init());
  return std::unique_ptr<Fabric>(std::move(fabric));
}

UcxFabric::UcxFabric(const FabricOptions& options) : Fabric(options) {}

// The transports of the network context: `tls` (UCX_TLS or the configured
// list; empty = UCX's default) without the shared-memory ones. Error when
// nothing would reach another host.
Result<std::string> NetworkTransports(const std::string& tls) {
  if (tls.empty() || tls == "all") return std::string("^sm");
  if (tls[0] == '^') return tls + ",sm";
  static const std::set<std::string, std::less<>> kSharedMemory = {
      "sm", "shm", "mm", "posix", "sysv", "xpmem", "knem", "cma"};
  std::string out;
  bool reaches_out = false;
  size_t at = 0;
  while (at <= tls.size()) {
    size_t comma = tls.find(',', at);
    if (comma == std::string::npos) comma = tls.size();
    const std::string name = tls.substr(at, comma - at);
    at = comma + 1;
    const std::string base = name.substr(0, name.find(':'));  // "ud_verbs:aux"
    if (name.empty() || kSharedMemory.count(base) != 0) continue;
    if (base != "self") reaches_out = true;
    out += (out.empty() ? "" : ",") + name;
  }
  if (!reaches_out) {
    return InvalidArgument("the UCX transports \"", tls,
                           "\" include none that reaches another host (add tcp, or an RDMA "
                           "transport)");
  }
  return out;
}

Status UcxFabric::Init() {
  event_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (event_fd_ < 0) return ErrnoStatus("epoll_create1", errno);
  const std::string tls = UserUcxTls().value_or(options_.ucx_transports);
  local_.role = "same-host";
  RAMPART_RETURN_IF_ERROR(InitWorker(local_, options_.ucx_transports));
  Result<std::string> network_tls = NetworkTransports(tls);
  if (network_tls.ok()) {
    network_tls_ = *network_tls;
    network_is_local_ = *network_tls == tls;
  } else {
    network_tls_.clear();  // WorkerFor reports it for a peer on another host
  }
  spdlog::debug("ucx: one-sided access to unmapped peer memory by {}",
                local_.native_rma ? "RDMA" : "software requests");

  RegistrationCache::Registrar registrar;
  registrar.reg = [this](std::byte* addr, size_t len) -> Result<RegistrationCache::Handle> {
    RAMPART_ASSIGN_OR_RETURN(ucp_mem_h memh, MapExisting(local_.context, addr, len));
    return static_cast<RegistrationCache::Handle>(memh);
  };
  registrar.dereg = [this](RegistrationCache::Handle h) {
    ucp_mem_unmap(local_.context, static_cast<ucp_mem_h>(h));
  };
  // A copy: the fallback below needs the registrar again.
  reg_cache_ = std::make_unique<RegistrationCache>(registrar, options_.registration_cache_bytes);
  // Forget registrations of memory that is unmapped (UCX's own memory hooks).
  ucs_status_t hs = ucm_set_event_handler(UCM_EVENT_VM_UNMAPPED, 1000, &UcxFabric::OnMemoryUnmapped, this);
  if (hs == UCS_OK) {
    ucm_handler_set_ = true;
  } else {
    spdlog::warn("ucx: memory hooks unavailable ({}); the registration cache keeps no unused entries",
                 ucs_status_string(hs));
    reg_cache_ = std::make_unique<RegistrationCache>(std::move(registrar), 0);
  }
  return Status();
}

// Messages of the same-host context larger than this go by UCX's rendezvous
// protocol (unless RDMA serves it); see InitWorker. Measured in
// docs/transport.md ("Rendezvous on one host").
constexpr size_t kEagerMessageBytes = 256 * 1024;

Status UcxFabric::InitWorker(UcxWorker& w, const std::string& tls) {
  w.fabric = this;
  // UCX reads its variables when the context and when the worker is created.
  ScopedUcxEnvironment environment(tls);
  RAMPART_RETURN_IF_ERROR(CreateContext(w, tls));
  return CreateWorker(w);
}

// The worker's UCP context, configured from rampart's options and UCX_*
// variables (the variables win). REQUIRES: the caller holds a
// ScopedUcxEnvironment (InitWorker).
Status UcxFabric::CreateContext(UcxWorker& w, const std::string& tls) {
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) return UcxError("ucp_config_read", st);
  // The caller's ScopedUcxEnvironment holds UcxEnvironmentMutex: getenv is safe here.
  auto modify = [&](const char* env, const char* key, const std::string& value) -> Status {
    if (value.empty() || (env != nullptr && std::getenv(env) != nullptr)) return Status();
    ucs_status_t s = ucp_config_modify(config, key, value.c_str());
    return s == UCS_OK ? Status() : UcxError(StrCat("UCX setting ", key, "=", value), s);
  };
  Status cfg = modify("UCX_NET_DEVICES", "NET_DEVICES", options_.ucx_net_devices);
  // The same-host context takes UCX_TLS as the user set it; the network
  // context's list is derived from it (NetworkTransports).
  if (cfg.ok()) cfg = modify(&w == &local_ ? "UCX_TLS" : nullptr, "TLS", tls);
  // Messages of the same-host context up to kEagerMessageBytes go eagerly
  // (through shared memory to a peer on this host). Above UCX's own threshold
  // (a few KiB) it would send them by rendezvous, whose zero-copy put cannot
  // use cma under UCP_ERR_HANDLING_MODE_PEER and so went through the tcp
  // transport on loopback: three legs and a socket wake-up per message
  // (docs/transport.md). Not where RDMA serves: undone below.
  const bool eager = &w == &local_ && std::getenv("UCX_RNDV_THRESH") == nullptr;
  if (cfg.ok() && eager) {
    cfg = modify(nullptr, "RNDV_THRESH", std::to_string(kEagerMessageBytes));
  }
  if (!cfg.ok()) {
    ucp_config_release(config);
    return cfg;
  }

  // UCP's one-sided features only where an RDMA transport serves them. UCX
  // emulates them over active messages elsewhere, and its emulation writes
  // and reads any address a peer names, without a check, below rampart's
  // handshake: a peer that never proved the cluster secret could use it.
  // Without RDMA rampart's own software requests carry one-sided operations
  // (checked against exposed regions, served only to proven peers), and
  // shared memory is reached through ucp_rkey_ptr, which needs no feature.
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME;
  params.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  params.name = "rampart";
  st = ucp_init(&params, config, &w.context);
  if (st == UCS_OK && DetectNativeRma(w.context)) {
    ucp_cleanup(w.context);
    w.context = nullptr;
    params.features |= UCP_FEATURE_RMA | UCP_FEATURE_AMO64;
    w.native_rma = true;
    // Zero-copy RDMA is what rendezvous is for: UCX's threshold again.
    if (eager) st = ucp_config_modify(config, "RNDV_THRESH", "auto");
    if (st == UCS_OK) st = ucp_init(&params, config, &w.context);
  }
  ucp_config_release(config);
  if (st != UCS_OK) return UcxError(StrCat("ucp_init (", w.role, ")"), st);
  return Status();
}

// The UCP worker of w's context: its event fd in the fabric's epoll set and
// rampart's three active-message handlers. REQUIRES: as CreateContext.
Status UcxFabric::CreateWorker(UcxWorker& w) {
  ucp_worker_params_t wparams{};
  wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
  ucs_status_t st = ucp_worker_create(w.context, &wparams, &w.worker);
  if (st != UCS_OK) return UcxError("ucp_worker_create", st);
  st = ucp_worker_get_efd(w.worker, &w.event_fd);
  if (st != UCS_OK) return UcxError("ucp_worker_get_efd", st);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = w.event_fd;
  if (epoll_ctl(event_fd_, EPOLL_CTL_ADD, w.event_fd, &ev) != 0) {
    return ErrnoStatus("epoll_ctl(ucx worker event fd)", errno);
  }

  for (unsigned id : {kAmUser, kAmControl, kAmRma}) {
    ucp_am_handler_param_t am{};
    am.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                    UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
    am.id = id;
    am.cb = id == kAmUser      ? &UcxFabric::OnAmUser
            : id == kAmControl ? &UcxFabric::OnAmControl
                               : &UcxFabric::OnAmRma;
    am.arg = &w;
    am.flags = UCP_AM_FLAG_WHOLE_MSG;
    st = ucp_worker_set_am_recv_handler(w.worker, &am);
    if (st != UCS_OK) return UcxError("ucp_worker_set_am_recv_handler", st);
  }
  return Status();
}

Result<UcxWorker*> UcxFabric::WorkerFor(const std::string& host) {
  if (network_is_local_ || IsLocalHost(host)) return &local_;
  if (network_ == nullptr) {
    if (network_tls_.empty()) {
      return NetworkTransports(UserUcxTls().value_or(options_.ucx_transports)).status();
    }
    auto w = std::make_unique<UcxWorker>();
    w->role = "network";
    Status st = InitWorker(*w, network_tls_);
    if (!st.ok()) {
      DestroyWorker(*w);
      return st.WithContext(StrCat("UCX for peers on other hosts (transports ", network_tls_, ")"));
    }
    spdlog::debug("ucx: peers on other hosts over transports {}", network_tls_);
    network_ = std::move(w);
  }
  return network_.get();
}

// Whether this context has a transport with hardware one-sided operations
// (InfiniBand/RoCE verbs, Cray uGNI). UCX 1.13 has no query for it, so the
// resource list that ucp_context_print_info prints is searched.
bool UcxFabric::DetectNativeRma(ucp_context_h context) {
  char* text = nullptr;
  size_t size = 0;
  FILE* out = open_memstream(&text, &size);
  if (out == nullptr) return false;
  ucp_context_print_info(context, out);
  fclose(out);
  std::string info(text, size);
  free(text);
  for (const char* tl : {"rc_verbs", "rc_mlx5", "dc_mlx5", "ugni_rdma"}) {
    if (info.find(tl) != std::string::npos) return true;
  }
  return false;
}

void UcxFabric::OnMemoryUnmapped(ucm_event_type_t, ucm_event_t* event, void* arg) {
  static_cast<UcxFabric*>(arg)->reg_cache_->Invalidate(event->vm_unmapped.address,
                                                       event->vm_unmapped.size);
}

UcxFabric::~UcxFabric() {
  // Order matters. First stop all traffic: with one-sided operations emulated
  // over active messages (UCX over tcp), a peer's write is carried out by our
  // own progress and nothing checks that the target memory still exists. So
  // endpoints close (force) before any region they may target is freed.
  if (listener_ != nullptr) ucp_listener_destroy(listener_);
  std::vector<std::shared_ptr<UcxEndpoint>> live;
  for (auto& [ep, weak] : endpoints_) {
    if (auto e = weak.lock()) live.push_back(std::move(e));
  }
  for (auto& e : live) e->Fail(Aborted("fabric shut down"));
  // Bounded: a graceful close waits for the peer, which may be gone or not
  // progressing; after the deadline the requests are released unfinished.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
  while (!close_requests_.empty() && std::chrono::steady_clock::now() < deadline) {
    for (UcxWorker* w : {&local_, network_.get()}) {
      if (w != nullptr && w->worker != nullptr) ucp_worker_progress(w->worker);
    }
    ReapCloseRequests();
  }
  for (void* req : close_requests_) ucp_request_free(req);
  close_requests_.clear();
  internal().Shutdown();  // now channels may free their rings
  for (PendingMessage& m : pending_) {
    if (m.ucx_data != nullptr) ucp_am_data_release(m.worker, m.ucx_data);
  }
  pending_.clear();
  if (ucm_handler_set_) ucm_unset_event_handler(UCM_EVENT_VM_UNMAPPED, &UcxFabric::OnMemoryUnmapped, this);
  reg_cache_.reset();
  if (network_ != nullptr) DestroyWorker(*network_);
  DestroyWorker(local_);
  if (event_fd_ >= 0) close(event_fd_);
}

// REQUIRES: no endpoint, region or pending message of `w` is left.
void UcxFabric::DestroyWorker(UcxWorker& w) {
  if (w.worker != nullptr) ucp_worker_destroy(w.worker);
  if (w.context != nullptr) ucp_cleanup(w.context);
  w.worker = nullptr;
  w.context = nullptr;
}

Fabric::CacheStats UcxFabric::registration_cache_stats() const {
  auto s = reg_cache_->stats();
  return CacheStats{s.hits, s.misses, s.evictions, s.invalidations};
}

void UcxFabric::TrackCloseRequest(void* request) {
  if (request == nullptr || !UCS_PTR_IS_PTR(request)) return;
  close_requests_.push_back(request);
}

// ---------------------------------------------------------------------------
// Connections

void UcxFabric::OnEndpointError(void* arg, ucp_ep_h ep, ucs_status_t status) {
  auto* self = static_cast<UcxFabric*>(arg);
  auto it = self->endpoints_.find(ep);
  if (it == self->endpoints_.end()) return;
  auto endpoint = it->second.lock();
  if (!endpoint || endpoint->state_ != UcxEndpoint::State::kConnected) return;
  Status why = UcxError(StrCat("connection to ", endpoint->peer_name()), status);
  spdlog::info("ucx: {}", why.message());
  endpoint->Fail(why);
  // The user hears of it outside UCX's callback.
  self->internal().Defer([self, endpoint, why] {
    self->internal().DeliverDisconnect(endpoint, why);
  });
}

std::shared_ptr<UcxEndpoint> UcxFabric::CreateEndpoint(UcxWorker& w, const ucp_ep_params_t& base,
                                                       std::string peer) {
  auto endpoint = std::make_shared<UcxEndpoint>(*this, w, std::move(peer));
  ucp_ep_params_t params = base;
  params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = &UcxFabric::OnEndpointError;
  params.err_handler.arg = this;
  ucp_ep_h ep = nullptr;
  ucs_status_t st = ucp_ep_create(w.worker, &params, &ep);
  if (st != UCS_OK) {
    endpoint->state_ = UcxEndpoint::State::kFailed;
    endpoint->failure_ = UcxError(StrCat("connect to ", endpoint->peer_name()), st);
    return endpoint;
  }
  endpoint->Attach(ep);
  endpoints_[ep] = endpoint;
  return endpoint;
}

void UcxFabric::OnConnRequest(ucp_conn_request_h request, void* arg) {
  auto* self = static_cast<UcxFabric*>(arg);
  ucp_conn_request_attr_t attr{};
  attr.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR;
  std::string peer = "?";
  if (ucp_conn_request_query(request, &attr) == UCS_OK) peer = PeerName(attr.client_address);
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST;
  params.conn_request = request;
  auto endpoint = self->CreateEndpoint(self->local_, params, peer);
  if (!endpoint->connected()) {
    spdlog::warn("ucx: cannot accept {}: {}", peer, endpoint->failure().ToString());
    return;
  }
  self->internal().MarkAccepted(*endpoint);
  self->internal().Defer([self, endpoint] { self->internal().DeliverAccept(endpoint); });
}

Status UcxFabric::Listen(const std::string& host, uint16_t port) {
  if (listener_ != nullptr) return FailedPrecondition("already listening on port ", listen_port_);
  RAMPART_ASSIGN_OR_RETURN(sockaddr_storage addr, ResolveAddress(host, port));
  ucp_listener_params_t params{};
  params.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
  params.sockaddr.addr = reinterpret_cast<const sockaddr*>(&addr);
  params.sockaddr.addrlen = sizeof(sockaddr_in);
  params.conn_handler.cb = &UcxFabric::OnConnRequest;
  params.conn_handler.arg = this;
  ucs_status_t st = ucp_listener_create(local_.worker, &params, &listener_);
  if (st != UCS_OK) {
    listener_ = nullptr;
    return UcxError(StrCat("listen on ", host, ":", port,
                           " (the ucx listener needs tcp among UCX_TLS and a free port)"),
                    st);
  }
  ucp_listener_attr_t attr{};
  attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
  st = ucp_listener_query(listener_, &attr);
  if (st != UCS_OK) return UcxError("ucp_listener_query", st);
  listen_port_ = ntohs(reinterpret_cast<const sockaddr_in*>(&attr.sockaddr)->sin_port);
  return Status();
}

Result<std::shared_ptr<Endpoint>> UcxFabric::ConnectBackend(const std::string& host, uint16_t port,
                                                            std::chrono::milliseconds timeout) {
  RAMPART_ASSIGN_OR_RETURN(sockaddr_storage addr, ResolveAddress(host, port));
  RAMPART_ASSIGN_OR_RETURN(UcxWorker * w, WorkerFor(host));
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR;
  params.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
  params.sockaddr.addr = reinterpret_cast<const sockaddr*>(&addr);
  params.sockaddr.addrlen = sizeof(sockaddr_in);
  auto endpoint = CreateEndpoint(*w, params, StrCat(host, ":", port));
  if (!endpoint->connected()) return endpoint->failure();
  // Wire-up is asynchronous; a flush completes once the peer has answered.
  // The flush may complete after we return (the endpoint closed first): its
  // result lives on the heap.
  auto flush = std::make_shared<std::optional<Status>>();
  RAMPART_RETURN_IF_ERROR(endpoint->Flush([flush](Status s) { *flush = std::move(s); }));
  Status wait = WaitUntil(*this, [&] { return flush->has_value() || !endpoint->connected(); },
                          timeout, StrCat("connecting to ", host, ":", port));
  if (!wait.ok()) {
    endpoint->Close();
    return wait;
  }
  // A handshake that failed meanwhile (the HELLO came first) is for
  // Fabric::Connect to report.
  if (endpoint->auth == EndpointBase::Auth::kRefused) return std::shared_ptr<Endpoint>(endpoint);
  if (!endpoint->connected()) {
    if (!endpoint->failure().ok()) return endpoint->failure();
    return Unavailable("connection to ", host, ":", port, " closed while connecting");
  }
  if (!flush->value().ok()) {
    return flush->value().WithContext(StrCat("connecting to ", host, ":", port));
  }
  return std::shared_ptr<Endpoint>(endpoint);
}

// ---------------------------------------------------------------------------
// Receiving

ucs_status_t UcxFabric::OnAmUser(void* arg, const void*, size_t, void* data, size_t length,
                                 const ucp_am_recv_param_t* param) {
  auto* w = static_cast<UcxWorker*>(arg);
  return w->fabric->ReceiveAm(*w, kAmUser, data, length, param);
}

ucs_status_t UcxFabric::OnAmRma(void* arg, const void*, size_t, void* data, size_t length,
                                const ucp_am_recv_param_t* param) {
  auto* w = static_cast<UcxWorker*>(arg);
  return w->fabric->ReceiveAm(*w, kAmRma, data, length, param);
}

ucs_status_t UcxFabric::OnAmControl(void* arg, const void*, size_t, void* data, size_t length,
                                    const ucp_am_recv_param_t* param) {
  auto* w = static_cast<UcxWorker*>(arg);
  return w->fabric->ReceiveAm(*w, kAmControl, data, length, param);
}

void UcxFabric::OnRendezvousDone(void* request, ucs_status_t status, size_t, void* user_data) {
  ucp_request_free(request);
  auto* m = static_cast<PendingMessage*>(user_data);
  m->ready = true;
  m->failed = status != UCS_OK;
}

// Runs inside ucp_worker_progress: only queues; DeliverPendingMessages hands
// the messages to the handlers once progress has returned.
ucs_status_t UcxFabric::ReceiveAm(UcxWorker& w, unsigned am_id, void* data, size_t length,
                                  const ucp_am_recv_param_t* param) {
  std::weak_ptr<UcxEndpoint> from;
  if (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) {
    auto it = endpoints_.find(param->reply_ep);
    if (it != endpoints_.end()) from = it->second;
  }
  const bool rendezvous = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  const auto sender = from.lock();
  if (sender == nullptr || length > options_.max_message_size) {
    spdlog::warn("ucx: dropping a {}-byte message ({})", length,
                 sender == nullptr ? "unknown endpoint" : "over max_message_size");
    if (rendezvous) ucp_am_data_release(w.worker, data);
    return UCS_OK;
  }
  if (!sender->proven() && length > kMaxUnprovenMessageBytes) {
    // Not even buffered: refused outside UCX's callback.
    if (rendezvous) ucp_am_data_release(w.worker, data);
    internal().Defer([this, sender, length] {
      internal().Refuse(sender, StrCat("sent a ", length,
                                       "-byte message before the handshake finished"));
    });
    return UCS_OK;
  }
  PendingMessage& m = pending_.emplace_back();
  m.ep = std::move(from);
  m.worker = w.worker;
  m.am_id = am_id;
  m.length = length;
  if (rendezvous) {
    m.owned = std::make_unique<std::byte[]>(length);
    m.ready = false;
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    p.cb.recv_am = &UcxFabric::OnRendezvousDone;
    p.user_data = &m;
    ucs_status_ptr_t req = ucp_am_recv_data_nbx(w.worker, data, m.owned.get(), length, &p);
    if (req == nullptr) {
      m.ready = true;
    } else if (UCS_PTR_IS_ERR(req)) {
      m.ready = true;
      m.failed = true;
    }  // else OnRendezvousDone frees the request
    return UCS_OK;
  }
  if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_DATA) {
    m.ucx_data = data;  // keep UCX's buffer, no copy
    return UCS_INPROGRESS;
  }
  m.offset = pending_bytes_.size();
  pending_bytes_.insert(pending_bytes_.end(), static_cast<std::byte*>(data),
                        static_cast<std::byte*>(data) + length);
  return UCS_OK;
}

void UcxFabric::DeliverPendingMessages() {
  // In arrival order; a rendezvous message still arriving holds back those
  // behind it.
  while (!pending_.empty() && pending_.front().ready) {
    PendingMessage m = std::move(pending_.front());
    pending_.pop_front();
    auto ep = m.ep.lock();
    if (ep && !m.failed) {
      const std::byte* bytes = m.owned   ? m.owned.get()
                               : m.ucx_data ? static_cast<const std::byte*>(m.ucx_data)
                                            : pending_bytes_.data() + m.offset;
      std::span<const std::byte> body(bytes, m.length);
      if (m.am_id == kAmUser) {
        internal().DeliverMessage(ep, body);
      } else if (m.am_id == kAmControl) {
        internal().DeliverControl(ep, body);
      } else {
        HandleSoftwareRma(ep, body);
      }
    }
    if (m.ucx_data != nullptr) ucp_am_data_release(m.worker, m.ucx_data);
  }
  if (pending_.empty()) pending_bytes_.clear();
}

int UcxFabric::ProgressBackend() {
  int n = static_cast<int>(ucp_worker_progress(local_.worker));
  if (network_ != nullptr) n += static_cast<int>(ucp_worker_progress(network_->worker));
  if (!pending_.empty()) {
    size_t before = pending_.size();
    DeliverPendingMessages();
    n += static_cast<int>(before - pending_.size());
  }
  if (!close_requests_.empty()) ReapCloseRequests();
  return n;
}

void UcxFabric::ReapCloseRequests() {
  std::erase_if(close_requests_, [](void* req) {
    if (ucp_request_check_status(req) == UCS_INPROGRESS) return false;
    ucp_request_free(req);
    return true;
  });
}

bool UcxFabric::ArmBackend() {
  // UCS_ERR_BUSY: events pending, progress again. The workers' event fds are
  // in event_fd_, the set the Fabric blocks on.
  if (ucp_worker_arm(local_.worker) != UCS_OK) return false;
  return network_ == nullptr || ucp_worker_arm(network_->worker) == UCS_OK;
}

}  // namespace rampart::transport
