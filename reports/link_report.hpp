#pragma once
// Where the time of KV movement went, in the run's reports: the links
// (kv_movement.links) by busy time, with their traffic, utilisation and the
// queueing delay per transfer, and what requests waited for loads and
// stores. Nothing for a run whose KV crossed no link.
#include <string>

#include "sim/core/metrics.hpp"

namespace kvsim {

// The terminal summary's lines (the busiest kMaxSummaryLinks links).
std::string links_summary(const RunMetrics& m);
// report.html's section (every link).
std::string links_html(const RunMetrics& m);

inline constexpr size_t kMaxSummaryLinks = 8;

}  // namespace kvsim
