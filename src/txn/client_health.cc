// Partitions that do not answer: a host cut off from the network, or down.
//
// Waiting for such a partition up to the request timeout on every request
// would hold up everything else the caller does meanwhile (a proxy worker's
// other clients), and reconnecting to it on every request would block in
// connect() for as long. So once a partition has answered nothing for
// ClientOptions::unreachable_after while a phase waited for it (or a
// connection to it failed: timed out, refused, or refused by the handshake),
// it is unreachable: its connection is dropped, its
// requests fail at once, and a non-blocking TCP connection attempt probes its
// address every kProbeInterval. When one is accepted the partition is tried
// again; a fresh connection then carries the requests, whatever TCP's backoff
// would have done with the old one. Reads fail over to another replica
// meanwhile (the proxy's RunWithFailover), as for a dead node.
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
      if (state == TcpConnectProbe::State::kPending && now - h.probe_started < kProbeInterval) {
        continue;
      }
      h.probe.reset();  // refused, or no answer within the interval: try anew
    }
    if (now - h.probe_started >= kProbeInterval) {
      const kv::PartitionAddress& a = placement_.Address(p);
      h.probe.emplace(a.host, a.port);
      h.probe_started = now;
    }
  }
}

Client::Impl::Clock::time_point Client::Impl::FailSilentPartitions(std::span<Call> calls,
                                                                   Clock::time_point sent) {
  const auto silent_since = sent;
  const auto now = Clock::now();
  if (now - sent < options_.unreachable_after) return sent + options_.unreachable_after;
  std::vector<uint32_t> silent;
  for (const Call& c : calls) {
    if (c.done || health_[c.partition].last_heard >= silent_since) continue;
    if (std::find(silent.begin(), silent.end(), c.partition) == silent.end()) {
      silent.push_back(c.partition);
    }
  }
  for (uint32_t p : silent) {
    MarkUnreachable(p, StrCat("no reply within ", options_.unreachable_after.count(), " ms"));
  }
  // Partitions still answering (just slowly) are left to the request timeout.
  return Clock::time_point::max();
}

}  // namespace rampart::txn
