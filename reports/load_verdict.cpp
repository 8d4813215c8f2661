#include "reports/load_verdict.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace kvsim {

void LoadVerdictSink::count(std::vector<int64_t>& buckets, TimeNs t) {
  t = std::max<TimeNs>(t, 0);
  while (bucket(t) >= kBuckets) {  // fold pairs: twice the width, half the buckets
    width_ *= 2;
    for (auto* b : {&arrivals_, &finishes_}) {
      std::vector<int64_t> folded((b->size() + 1) / 2, 0);
      for (size_t i = 0; i < b->size(); ++i) folded[i / 2] += (*b)[i];
      *b = std::move(folded);
    }
  }
  const size_t i = bucket(t);
  if (buckets.size() <= i) buckets.resize(i + 1, 0);
  ++buckets[i];
}

void LoadVerdictSink::request(const RequestRow& row) {
  count(arrivals_, row.arrival);
  // A rejected request leaves when it arrives; a completed one when it ends.
  const bool completed = row.status == "completed" && row.finished >= 0;
  count(finishes_, completed ? row.finished : row.arrival);
  if (first_arrival_ < 0 || row.arrival < first_arrival_) first_arrival_ = row.arrival;
  last_arrival_ = std::max(last_arrival_, row.arrival);
}

int64_t LoadVerdictSink::up_to(const std::vector<int64_t>& buckets, size_t last) const {
  int64_t n = 0;
  for (size_t i = 0; i <= last && i < buckets.size(); ++i) n += buckets[i];
  return n;
}

std::optional<LoadVerdict> LoadVerdictSink::verdict() const {
  if (first_arrival_ < 0) return std::nullopt;
  const size_t from = bucket(first_arrival_ + (last_arrival_ - first_arrival_) / 2);
  const size_t to = bucket(last_arrival_);
  if (to <= from) return std::nullopt;
  LoadVerdict v;
  v.from_s = static_cast<double>(from + 1) * static_cast<double>(width_) / 1e9;
  v.to_s = static_cast<double>(to + 1) * static_cast<double>(width_) / 1e9;
  const int64_t arrived_from = up_to(arrivals_, from), arrived_to = up_to(arrivals_, to);
  const int64_t left_from = up_to(finishes_, from), left_to = up_to(finishes_, to);
  v.arrived = arrived_to - arrived_from;
  v.finished = left_to - left_from;
  if (v.arrived < kMinArrivals) return std::nullopt;
  v.offered_per_s = static_cast<double>(v.arrived) / (v.to_s - v.from_s);
  v.served_per_s = static_cast<double>(v.finished) / (v.to_s - v.from_s);
  v.backlog_from = arrived_from - left_from;
  v.backlog_to = arrived_to - left_to;
  v.overloaded = static_cast<double>(v.finished) < kServedShare * static_cast<double>(v.arrived);
  return v;
}

std::string overload_warning(const std::optional<LoadVerdict>& v) {
  if (!v || !v->overloaded) return {};
  return fmt::format(
      "warning: overloaded: from {:.1f} s to {:.1f} s (the second half of the arrivals) requests "
      "arrived at {:.2f}/s and left at {:.2f}/s, and the backlog grew from {} to {} requests; "
      "latency percentiles then measure the queue and grow with the run's length (lower the "
      "arrival rate or add capacity)",
      v->from_s, v->to_s, v->offered_per_s, v->served_per_s, v->backlog_from, v->backlog_to);
}

}  // namespace kvsim
