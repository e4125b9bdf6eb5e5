// Hot-node steering: the rule of volume_steering.h.
#include "storage/volume_steering.h"

#include <algorithm>

namespace rampart::storage {

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  if (values.size() % 2 == 1) return values[mid];
  const double upper = values[mid];
  const double lower = *std::max_element(values.begin(), values.begin() + mid);
  return (lower + upper) / 2;
}

namespace {

// How far node n is above the threshold of `ratio`: > 1 above it, <= 1 not.
// Latency counts only when n and some other node have a sample.
double Excess(std::span<const NodeLoad> loads, uint32_t n, double ratio, const SteeringRule& rule) {
  std::vector<double> latency, outstanding;
  for (uint32_t i = 0; i < loads.size(); ++i) {
    if (i == n || !loads[i].usable) continue;
    if (loads[i].latency_us > 0) latency.push_back(loads[i].latency_us);
    outstanding.push_back(static_cast<double>(loads[i].outstanding));
  }
  double excess = static_cast<double>(loads[n].outstanding) /
                  (ratio * Median(outstanding) + static_cast<double>(rule.min_outstanding));
  if (loads[n].latency_us > 0 && !latency.empty()) {
    excess = std::max(excess,
                      loads[n].latency_us / (ratio * Median(latency) + rule.min_latency_us));
  }
  return excess;
}

}  // namespace

void HotNodeTracker::Update(std::span<const NodeLoad> loads) {
  const auto usable =
      std::count_if(loads.begin(), loads.end(), [](const NodeLoad& l) { return l.usable; });
  std::optional<uint32_t> hot;
  if (usable >= 3) {
    if (hot_ && *hot_ < loads.size() && loads[*hot_].usable &&
        Excess(loads, *hot_, rule_.cool_ratio, rule_) > 1) {
      hot = hot_;  // still above the cooling threshold
    } else {
      double worst = 1;
      for (uint32_t n = 0; n < loads.size(); ++n) {
        if (!loads[n].usable) continue;
        const double excess = Excess(loads, n, rule_.hot_ratio, rule_);
        if (excess > worst) {
          worst = excess;
          hot = n;
        }
      }
    }
  }
  if (hot != hot_) steer_count_ = 0;
  hot_ = hot;
}

bool HotNodeTracker::TakeSteer() {
  if (!hot_) return false;
  ++steer_count_;
  return rule_.probe_every == 0 || steer_count_ % rule_.probe_every != 0;
}

}  // namespace rampart::storage
