// Hot-node steering (docs/design.md §8, seed 002 §5): a healthy read of a cell on a
// storage node markedly busier than the others of its volume is served by
// reconstruction from the stripe's other k cells (the other data cells and
// the parity) instead of queueing behind that node. This file holds the
// decision only; Volume's read path (volume_read.cc) applies it.
//
//   HotNodeTracker tracker(rule, nodes);
//   tracker.Update(loads);                     // once per read window
//   if (auto hot = tracker.hot(); hot && tracker.TakeSteer()) { ...read around *hot... }
//
// The rule. Every node of a volume holds one cell of every stripe, so "the
// others of its stripe" are the volume's other usable nodes. For each usable
// node n, with m_lat and m_out the medians of the other usable nodes' read
// latency EWMA and outstanding IO:
//
//   n becomes hot  when latency(n)     > hot_ratio  * m_lat + min_latency_us
//                  or   outstanding(n) > hot_ratio  * m_out + min_outstanding
//   a hot n cools  when latency(n)     <= cool_ratio * m_lat + min_latency_us
//                  and  outstanding(n) <= cool_ratio * m_out + min_outstanding
//
// (cool_ratio < hot_ratio: the hysteresis, so a node near the threshold does
// not flip at every window.) The Volume's latency is that of reads issued
// while nothing else of the volume was in flight on the node (the first of
// each call), so it measures the node and its other clients, not the queue
// the volume's own call builds there (which steering itself changes).
// Outstanding IO counts only this volume's: between its synchronous calls it
// is zero, so for the Volume latency decides. At most one node is hot at a time, the one
// furthest above its threshold: a stripe has one parity cell, so a read can go
// around one node only. With fewer than three usable nodes nothing is hot
// (a degraded volume already reads around its down node).
//
// Probes. A steered-around node gets no reads from this client, so its read
// latency would freeze at its hot value in a read-only load: while a node is
// hot, one read of it in `probe_every` goes to it anyway (TakeSteer returns
// false), which keeps its latency current and lets it cool.
//
// Cost: O(nodes^2) per Update with nodes <= 64 or so; nothing per read but a
// counter. Thread-safety: none; owned by the Volume's thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace rampart::storage {

// The thresholds of the rule above. Defaults: hot at 2x the others' median
// plus 200 us (latency) or plus 8 IOs (outstanding), cool at 1.5x, probe 1 in 8.
struct SteeringRule {
  double hot_ratio = 2.0;
  double cool_ratio = 1.5;
  double min_latency_us = 200;
  uint64_t min_outstanding = 8;
  uint32_t probe_every = 8;
};

// One node's load as the volume sees it.
struct NodeLoad {
  bool usable = false;       // up (may be read)
  uint64_t outstanding = 0;  // IO in flight from this volume
  double latency_us = 0;     // EWMA of recent read latency (see above); 0: no sample yet
};

class HotNodeTracker {
 public:
  explicit HotNodeTracker(SteeringRule rule = {}) : rule_(rule) {}

  // Re-evaluates which node is hot from `loads` (by node index). A node with
  // no latency sample yet (0) never becomes hot by latency.
  void Update(std::span<const NodeLoad> loads);
  // The hot node's index, if any.
  std::optional<uint32_t> hot() const { return hot_; }
  // For a read of the hot node's cell that could be steered: true to steer
  // it, false when this one is a probe (one in probe_every).
  bool TakeSteer();

  const SteeringRule& rule() const { return rule_; }

 private:
  SteeringRule rule_;
  std::optional<uint32_t> hot_;
  uint64_t steer_count_ = 0;  // reads of the hot node seen since it became hot
};

// The median of `values` (the mean of the middle two for an even count); 0
// for none. Exposed for tests.
double Median(std::vector<double> values);

}  // namespace rampart::storage
