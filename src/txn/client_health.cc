// Partitions that do not answer: a host cut off from the network, or down.
//
// Waiting for such a partition up to the request timeout on every request
// would hold up everything else the caller does meanwhile (a proxy worker's
// other clients), and reconnecting to it on every request would block in
// connect() for as long. So once a partition has answered nothing for
// ClientOptions::unreachable_after while a phase waited for it, a TCP
// connection attempt to its address tells a lost host or process (no answer
// within ProbeGrace(), or refused) from a slow one (accepted: left to the
// request timeout). A lost one — or one whose connection failed or timed out
// — is unreachable: its connection is dropped, its requests fail at once, and
// a non-blocking TCP connection attempt probes its address every
// kProbeInterval (a pending one is given unreachable_after). When one is
// accepted the partition is tried again; a fresh connection then carries the
// requests, whatever TCP's backoff would have done with the old one. Reads
// fail over to another replica meanwhile (the proxy's RunWithFailover), as
// for a dead node.
#include <spdlog/spdlog.h>

#include "txn/client_impl.h"

namespace rampart::txn {

void Client::Tick() { impl_->Tick(); }
uint32_t Client::unreachable_partitions() const { return impl_->unreachable_partitions(); }

void Client::Impl::Tick() {
  for (int i = 0; i < 16 && fabric_->Progress() > 0; ++i) {
  }
  if (unreachable_ > 0) Probe();
}

void Client::Impl::Heard(uint32_t partition) {
  Health& h = health_[partition];
  h.last_heard = Clock::now();
  if (h.unreachable_since) MarkReachable(partition);
}

void Client::Impl::MarkUnreachable(uint32_t partition, std::string why) {
  Health& h = health_[partition];
  if (h.unreachable_since) return;
  h.unreachable_since = Clock::now();
  h.why = std::move(why);
  h.probe.reset();
  h.silence_probe.reset();
  h.probe_started = Clock::time_point{};  // the first probe starts at once
  ++unreachable_;
  ++stats_.unreachable;
  spdlog::warn("{} is unreachable ({}); its requests fail until it answers a probe",
               Where(partition), h.why);
  FailPartition(partition, UnreachableError(partition));
  DropConnection(partition);
}

void Client::Impl::MarkReachable(uint32_t partition) {
  Health& h = health_[partition];
  if (!h.unreachable_since) return;
  const auto down = std::chrono::duration_cast<std::chrono::milliseconds>(
      Clock::now() - *h.unreachable_since);
  h.unreachable_since.reset();
  h.probe.reset();
  --unreachable_;
  spdlog::info("{} answers again after {} ms", Where(partition), down.count());
}

Status Client::Impl::UnreachableError(uint32_t partition) const {
  const Health& h = health_[partition];
  const auto since = h.unreachable_since.value_or(Clock::now());
  const auto ago =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - since).count();
  return Unavailable(Where(partition), " is unreachable (", h.why, "; ", ago,
                     " ms ago); retrying it in the background");
}

std::chrono::milliseconds Client::Impl::ProbeGrace() const {
  return std::clamp<std::chrono::milliseconds>(options_.unreachable_after / 4,
                                               std::chrono::milliseconds(100),
                                               std::chrono::milliseconds(1000));
}

Result<TcpConnectProbe> Client::Impl::StartProbe(uint32_t partition) {
  Health& h = health_[partition];
  if (!h.address) {
    const kv::PartitionAddress& a = placement_.Address(partition);
    RAMPART_ASSIGN_OR_RETURN(std::vector<TcpAddress> addresses, ResolveTcp(a.host, a.port));
    h.address = addresses.front();
  }
  return TcpConnectProbe(*h.address);
}

void Client::Impl::Probe() {
  const auto now = Clock::now();
  for (uint32_t p = 0; p < health_.size(); ++p) {
    Health& h = health_[p];
    if (!h.unreachable_since) continue;
    if (h.probe) {
      const TcpConnectProbe::State state = h.probe->Check();
      if (state == TcpConnectProbe::State::kAccepted) {
        MarkReachable(p);
        continue;
      }
      // A pending attempt gets as long as a reply would; a refused one is
      // followed by the next kProbeInterval after it started.
      if (state == TcpConnectProbe::State::kPending &&
          now - h.probe_started < options_.unreachable_after) {
        continue;
      }
      h.probe.reset();
    }
    if (now - h.probe_started >= kProbeInterval) {
      h.probe_started = now;
      if (Result<TcpConnectProbe> probe = StartProbe(p); probe.ok()) {
        h.probe = std::move(*probe);
      }
    }
  }
}

Client::Impl::Clock::time_point Client::Impl::CheckSilence(std::span<Call> calls,
                                                           Clock::time_point sent) {
  const auto now = Clock::now();
  if (now - sent < options_.unreachable_after) return sent + options_.unreachable_after;
  std::vector<uint32_t> silent;
  for (const Call& c : calls) {
    const Health& h = health_[c.partition];
    if (c.done || h.last_heard >= sent || h.up_at >= sent) continue;
    if (std::find(silent.begin(), silent.end(), c.partition) == silent.end()) {
      silent.push_back(c.partition);
    }
  }
  const std::string quiet = StrCat("no reply within ", options_.unreachable_after.count(), " ms");
  bool watching = false;
  for (uint32_t p : silent) {
    Health& h = health_[p];
    if (!h.silence_probe || h.silence_probe_started < sent) {
      Result<TcpConnectProbe> probe = StartProbe(p);
      if (!probe.ok()) {
        MarkUnreachable(p, StrCat(quiet, "; ", probe.status().message()));
        continue;
      }
      h.silence_probe = std::move(*probe);
      h.silence_probe_started = now;
    }
    switch (h.silence_probe->Check()) {
      case TcpConnectProbe::State::kAccepted:  // up, only slow
        h.silence_probe.reset();
        h.up_at = now;
        break;
      case TcpConnectProbe::State::kFailed:
        MarkUnreachable(p, StrCat(quiet, ", and its port refuses connections"));
        break;
      case TcpConnectProbe::State::kPending:
        if (now - h.silence_probe_started >= ProbeGrace()) {
          MarkUnreachable(p, StrCat(quiet, ", nor to a connection attempt within ",
                                    ProbeGrace().count(), " ms"));
        } else {
          watching = true;
        }
        break;
    }
  }
  return watching ? now + std::chrono::milliseconds(5) : Clock::time_point::max();
}

}  // namespace rampart::txn
