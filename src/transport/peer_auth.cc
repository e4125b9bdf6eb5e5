// The handshake every connection starts with, and peer authentication by the
// cluster secret (docs/transport.md, "Peer authentication"):
//
//   acceptor                                           connector (Connect)
//     HELLO   a = version, b = flags, nonce_A    ->
//                                                <-    PROOF   nonce_C, MAC_C
//     ACCEPT  MAC_A                              ->
//   REFUSE (reason text) either way ends a failed handshake before the close.
//
//   MAC_X = HMAC-SHA256(secret, "rampart-auth-1" | X's role | u32 length of
//           the cluster name | cluster name | nonce_A | nonce_C)
//
// Flag bit 0 of HELLO: the acceptor has a secret. Without one on either side
// HELLO is the whole handshake, and a connector without a secret does not
// wait for it (Connect costs no round trip more than before). Both sides must
// agree: a connector with a secret refuses an acceptor without one (it could
// be anybody), an acceptor with one refuses a connector without (the
// connector learns why from REFUSE). The secret never crosses the wire;
// the nonces make every proof good for one connection only; the cluster name
// in the MAC keeps two clusters that share a secret apart.
//
// Until the handshake is done, an endpoint serves nothing: a user message,
// another control message (channels, hence memory descriptors) or a software
// one-sided request (ucx) from an unproven peer closes the connection with a
// warning, and the accept handler learns of the connection only once it is
// proven. HMAC, randomness and the constant-time compare are OpenSSL's
// (libcrypto).
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

#include "transport/fabric_internal.h"

namespace rampart::transport {
namespace {

constexpr uint64_t kHandshakeVersion = 1;
constexpr uint64_t kFlagSecret = 1;
constexpr size_t kNonceBytes = 32;
constexpr size_t kMacBytes = 32;  // SHA-256

using Mac = std::array<std::byte, kMacBytes>;
using Nonce = std::array<std::byte, kNonceBytes>;

// MAC_X of the file comment. An error when OpenSSL cannot compute it: never a
// MAC of zeros that a peer could send without knowing the secret.
Result<Mac> Proof(const FabricOptions& options, std::string_view role, const EndpointBase& ep) {
  std::string data = "rampart-auth-1";
  data += role;
  const uint32_t name_length = static_cast<uint32_t>(options.cluster_name.size());
  data.append(reinterpret_cast<const char*>(&name_length), sizeof name_length);
  data += options.cluster_name;
  data.append(reinterpret_cast<const char*>(ep.nonce_acceptor.data()), kNonceBytes);
  data.append(reinterpret_cast<const char*>(ep.nonce_connector.data()), kNonceBytes);
  Mac mac{};
  unsigned int length = 0;
  const unsigned char* done =
      HMAC(EVP_sha256(), options.cluster_secret.data(),
           static_cast<int>(options.cluster_secret.size()),
           reinterpret_cast<const unsigned char*>(data.data()), data.size(),
           reinterpret_cast<unsigned char*>(mac.data()), &length);
  if (done == nullptr || length != kMacBytes) {
    return InternalError("OpenSSL could not compute the handshake's HMAC-SHA256");
  }
  return mac;
}

// True when `got` is the MAC `expected` (compared in constant time); false
// when `expected` could not be computed.
bool SameMac(const Result<Mac>& expected, std::span<const std::byte> got) {
  return expected.ok() && got.size() == kMacBytes &&
         CRYPTO_memcmp(expected->data(), got.data(), kMacBytes) == 0;
}

Result<Nonce> RandomNonce() {
  Nonce nonce;
  if (RAND_bytes(reinterpret_cast<unsigned char*>(nonce.data()), kNonceBytes) != 1) {
    return InternalError("no random bytes for a handshake nonce (OpenSSL RAND_bytes failed)");
  }
  return nonce;
}

}  // namespace

void Fabric::Internal::MarkAccepted(EndpointBase& ep) {
  ep.auth = EndpointBase::Auth::kAwaitingProof;
}

void Fabric::Internal::DeliverAccept(std::shared_ptr<EndpointBase> ep) {
  // MarkAccepted ran when the backend made the endpoint; anything the peer
  // sent before this (a HELLO of its own, a PROOF) found no HELLO of ours
  // out and was refused.
  if (ep->auth != EndpointBase::Auth::kAwaitingProof || ep->hello_sent) return;
  const FabricOptions& options = fabric_.options();
  const bool secret = !options.cluster_secret.empty();
  Result<Nonce> nonce = RandomNonce();
  Status st = nonce.status();
  if (nonce.ok()) {
    ep->nonce_acceptor = *nonce;
    st = SendControl(*ep, ControlType::kAuthHello, kHandshakeVersion, secret ? kFlagSecret : 0,
                     ep->nonce_acceptor);
  }
  if (!st.ok()) {
    Refuse(ep, StrCat("the handshake could not start: ", st.ToString()));
    return;
  }
  ep->hello_sent = true;
  if (secret) {
    handshakes_.push_back({ep, std::chrono::steady_clock::now() + options.connect_timeout});
    return;
  }
  ep->auth = EndpointBase::Auth::kProven;
  ep->handed_out = true;
  if (fabric_.on_accept_) fabric_.on_accept_(std::move(ep));
}

void Fabric::Internal::HandleAuth(const std::shared_ptr<EndpointBase>& ep, const ControlHeader& h,
                                  std::span<const std::byte> payload) {
  switch (static_cast<ControlType>(h.type)) {
    case ControlType::kAuthHello:
      return OnHello(ep, h, payload);
    case ControlType::kAuthProof:
      return OnProof(ep, payload);
    case ControlType::kAuthAccept:
      return OnAccept(ep, payload);
    default: {  // REFUSE: keep its reason for Connect, and close
      if (ep->auth == EndpointBase::Auth::kRefused) return;  // we ended it first
      const std::string why(reinterpret_cast<const char*>(payload.data()),
                            std::min<size_t>(payload.size(), 512));
      if (ep->auth_error.ok()) ep->auth_error = PermissionDenied(ep->peer_name(), " refused us: ", why);
      spdlog::warn("transport: {} refused this process: {}", ep->peer_name(), why);
      return EndConnection(ep, why, /*tell_peer=*/false);
    }
  }
}

// Connector: the acceptor's greeting. Answers with a proof, or is done.
void Fabric::Internal::OnHello(const std::shared_ptr<EndpointBase>& ep, const ControlHeader& h,
                               std::span<const std::byte> payload) {
  const bool expected = ep->auth == EndpointBase::Auth::kAwaitingHello ||
                        (ep->proven() && ep->hello_pending);
  if (!expected || payload.size() != kNonceBytes) return Refuse(ep, "sent an unexpected HELLO");
  ep->hello_pending = false;
  if (h.a != kHandshakeVersion) {
    return Refuse(ep, StrCat("speaks handshake version ", h.a, ", this process ",
                             kHandshakeVersion));
  }
  const FabricOptions& options = fabric_.options();
  const bool peer_has_secret = (h.b & kFlagSecret) != 0;
  if (options.cluster_secret.empty()) {
    if (peer_has_secret) {
      ep->auth_error = PermissionDenied(
          ep->peer_name(), " requires the cluster secret, and this process has none "
                           "(cluster.secret_file in the cluster file)");
      return Refuse(ep, "requires the cluster secret, and this process has none");
    }
    ep->auth = EndpointBase::Auth::kProven;
    return;
  }
  if (!peer_has_secret) {
    ep->auth_error = PermissionDenied(
        ep->peer_name(), " serves without a cluster secret while this process has one: "
                         "both sides need the same cluster.secret");
    return Refuse(ep, "has no cluster secret");
  }
  std::memcpy(ep->nonce_acceptor.data(), payload.data(), kNonceBytes);
  Result<Nonce> nonce = RandomNonce();
  if (!nonce.ok()) return Refuse(ep, nonce.status().ToString());
  ep->nonce_connector = *nonce;
  const Result<Mac> mac = Proof(options, "connector", *ep);
  if (!mac.ok()) return Refuse(ep, mac.status().ToString());
  std::array<std::byte, kNonceBytes + kMacBytes> proof;
  std::memcpy(proof.data(), ep->nonce_connector.data(), kNonceBytes);
  std::memcpy(proof.data() + kNonceBytes, mac->data(), kMacBytes);
  ep->auth = EndpointBase::Auth::kAwaitingAccept;
  if (Status st = SendControl(*ep, ControlType::kAuthProof, 0, 0, proof); !st.ok()) {
    ep->auth_error = st;
    Refuse(ep, StrCat("cannot send the proof: ", st.ToString()));
  }
}

// Acceptor: the connector's proof. Right: ACCEPT, and the user hears of the
// connection. Wrong: refused.
void Fabric::Internal::OnProof(const std::shared_ptr<EndpointBase>& ep,
                               std::span<const std::byte> payload) {
  const FabricOptions& options = fabric_.options();
  if (ep->auth != EndpointBase::Auth::kAwaitingProof || !ep->hello_sent ||
      options.cluster_secret.empty() || payload.size() != kNonceBytes + kMacBytes) {
    return Refuse(ep, "sent an unexpected PROOF");
  }
  std::memcpy(ep->nonce_connector.data(), payload.data(), kNonceBytes);
  if (!SameMac(Proof(options, "connector", *ep), payload.subspan(kNonceBytes))) {
    return Refuse(ep, "failed to prove the cluster secret (another secret or cluster name)");
  }
  const Result<Mac> mac = Proof(options, "acceptor", *ep);
  if (!mac.ok()) return Refuse(ep, mac.status().ToString());
  if (Status st = SendControl(*ep, ControlType::kAuthAccept, 0, 0, *mac); !st.ok()) {
    return Refuse(ep, StrCat("cannot send ACCEPT: ", st.ToString()));
  }
  ep->auth = EndpointBase::Auth::kProven;
  std::erase_if(handshakes_, [&](const Handshake& h) { return h.ep == ep; });
  ep->handed_out = true;
  if (fabric_.on_accept_) fabric_.on_accept_(ep);
}

// Connector: the acceptor's proof that it holds the secret too.
void Fabric::Internal::OnAccept(const std::shared_ptr<EndpointBase>& ep,
                                std::span<const std::byte> payload) {
  if (ep->auth != EndpointBase::Auth::kAwaitingAccept) {
    return Refuse(ep, "sent an unexpected ACCEPT");
  }
  if (!SameMac(Proof(fabric_.options(), "acceptor", *ep), payload)) {
    ep->auth_error = PermissionDenied(ep->peer_name(),
                                      " failed to prove the cluster secret (another secret or "
                                      "cluster name)");
    return Refuse(ep, "failed to prove the cluster secret");
  }
  ep->auth = EndpointBase::Auth::kProven;
}

void Fabric::Internal::Refuse(const std::shared_ptr<EndpointBase>& ep, std::string_view why) {
  if (ep->auth == EndpointBase::Auth::kRefused) return;  // one warning per connection
  if (ep->auth_error.ok()) ep->auth_error = PermissionDenied(ep->peer_name(), " ", why);
  spdlog::warn("transport: refused {}: {}; closing the connection", ep->peer_name(), why);
  EndConnection(ep, why, /*tell_peer=*/true);
}

void Fabric::Internal::EndConnection(const std::shared_ptr<EndpointBase>& ep, std::string_view why,
                                     bool tell_peer) {
  if (ep->auth == EndpointBase::Auth::kRefused) return;  // ended already, reported once
  // A connection the user has: tell them it is gone (Close() itself reports
  // nothing).
  const bool report = ep->handed_out && ep->connected();
  ep->auth = EndpointBase::Auth::kRefused;
  // The peer learns why before the connection closes: Close() may drop what
  // is still queued (tcp), so it waits for the flush, bounded by the
  // handshake's timeout in case the peer reads nothing.
  const std::span<const std::byte> text(reinterpret_cast<const std::byte*>(why.data()), why.size());
  if (tell_peer && ep->connected() && SendControl(*ep, ControlType::kAuthRefuse, 0, 0, text).ok() &&
      ep->Flush([ep](Status) { ep->Close(); }).ok()) {
    closing_.push_back({ep, std::chrono::steady_clock::now() + fabric_.options().connect_timeout});
  } else {
    ep->Close();
  }
  if (report) DeliverDisconnect(ep, Unavailable("refused: ", why));
}

void Fabric::Internal::ExpireHandshakes() {
  const auto now = std::chrono::steady_clock::now();
  std::erase_if(closing_, [&](const Handshake& h) {
    if (!h.ep->connected()) return true;
    if (now < h.deadline) return false;
    h.ep->Close();  // the REFUSE did not drain in time
    return true;
  });
  std::vector<std::shared_ptr<EndpointBase>> overdue;
  std::erase_if(handshakes_, [&](const Handshake& h) {
    if (h.ep->proven()) return true;
    if (h.ep->auth == EndpointBase::Auth::kRefused || !h.ep->connected()) {
      if (h.ep->connected() && !Closing(*h.ep)) h.ep->Close();
      return true;
    }
    if (now < h.deadline) return false;
    overdue.push_back(h.ep);
    return true;
  });
  for (auto& ep : overdue) {
    Refuse(ep, StrCat("did not prove the cluster secret within ",
                      fabric_.options().connect_timeout.count(), " ms"));
  }
}

bool Fabric::Internal::Closing(const EndpointBase& ep) const {
  return std::any_of(closing_.begin(), closing_.end(),
                     [&](const Handshake& h) { return h.ep.get() == &ep; });
}

Status Fabric::Internal::AwaitHandshake(EndpointBase& ep,
                                        std::chrono::steady_clock::time_point deadline) {
  if (fabric_.options().cluster_secret.empty()) {
    // Nothing to prove: go ahead; a HELLO that demands a secret closes it.
    if (ep.auth == EndpointBase::Auth::kAwaitingHello) {
      ep.auth = EndpointBase::Auth::kProven;
      ep.hello_pending = true;
    }
    if (ep.proven()) return Status();
    if (!ep.auth_error.ok()) return ep.auth_error;
    return Unavailable("connection to ", ep.peer_name(), " closed during the handshake");
  }
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  Status wait = WaitUntil(
      fabric_, [&] { return ep.proven() || ep.auth == EndpointBase::Auth::kRefused || !ep.connected(); },
      std::max(left, std::chrono::milliseconds(1)), StrCat("the handshake with ", ep.peer_name()));
  if (ep.proven()) return Status();
  if (!ep.auth_error.ok()) return ep.auth_error;
  if (!wait.ok()) {
    return TimedOut("no handshake from ", ep.peer_name(),
                    " in time (is it a rampart process of this cluster?)");
  }
  return Unavailable("connection to ", ep.peer_name(), " closed during the handshake");
}

}  // namespace rampart::transport
