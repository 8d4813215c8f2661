// Per-session metrics (session_metrics.hpp has the definitions).
#include "sim/engine/session_metrics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "sim/core/metrics.hpp"
#include "workloads/request.hpp"

namespace kvsim {

void SessionMetricsCollector::completed(const Request& request, TimeNs done, int64_t prompt_tokens,
                                        int64_t output_tokens, int64_t cached_tokens) {
  if (request.session == 0) return;
  auto [it, fresh] = sessions_.try_emplace(request.session);
  Session& s = it->second;
  if (fresh) {
    s.parent = request.parent_session;
    s.first_arrival = request.arrival;
  } else {
    s.tool_wait += std::max<TimeNs>(0, request.arrival - s.last_done);
    const int64_t history = std::min(s.previous_context, prompt_tokens);
    ++followup_calls_;
    history_tokens_ += history;
    reprefilled_ += std::max<int64_t>(0, history - cached_tokens);
  }
  s.first_arrival = std::min(s.first_arrival, request.arrival);
  s.last_done = std::max(s.last_done, done);
  s.engine += done - request.arrival;
  s.previous_context = prompt_tokens + output_tokens;
  ++s.calls;
}

SessionMetrics SessionMetricsCollector::summary() const {
  SessionMetrics m;
  m.sessions = static_cast<int64_t>(sessions_.size());
  // Each tree's last completion, folded into its root through parent links
  // (a parent id never seen, or a loop, ends the walk at the last one seen).
  std::map<uint64_t, TimeNs> tree_done;
  double share_sum = 0;
  int64_t shares = 0;
  std::vector<uint64_t> ids;
  ids.reserve(sessions_.size());
  for (const auto& entry : sessions_) ids.push_back(entry.first);
  std::sort(ids.begin(), ids.end());
  for (const uint64_t id : ids) {
    const Session& s = sessions_.at(id);
    m.calls += s.calls;
    m.engine_s += static_cast<double>(s.engine) / 1e9;
    m.tool_wait_s += static_cast<double>(s.tool_wait) / 1e9;
    const TimeNs span = s.last_done - s.first_arrival;
    if (span > 0) {
      share_sum += static_cast<double>(s.tool_wait) / static_cast<double>(span);
      ++shares;
    }
    uint64_t root = id;
    for (size_t hops = 0; hops <= sessions_.size(); ++hops) {
      const auto at = sessions_.find(root);
      if (at == sessions_.end() || at->second.parent == 0 ||
          sessions_.find(at->second.parent) == sessions_.end())
        break;
      root = at->second.parent;
    }
    TimeNs& done = tree_done[root];
    done = std::max(done, s.last_done);
  }
  std::vector<double> e2e;
  for (const auto& [root, done] : tree_done) {
    const Session& r = sessions_.at(root);
    e2e.push_back(static_cast<double>(done - r.first_arrival) / 1e6);
  }
  m.roots = static_cast<int64_t>(e2e.size());
  std::sort(e2e.begin(), e2e.end());
  if (!e2e.empty()) {
    double sum = 0;
    for (double v : e2e) sum += v;
    m.e2e_ms_mean = sum / static_cast<double>(e2e.size());
    // Nearest rank: the smallest value with at least q of the sessions at or below it.
    const auto rank = [&](double q) {
      const auto n = static_cast<double>(e2e.size());
      const auto i = static_cast<size_t>(std::max(1.0, std::ceil(q * n))) - 1;
      return e2e[std::min(i, e2e.size() - 1)];
    };
    m.e2e_ms_p50 = rank(0.50);
    m.e2e_ms_p99 = rank(0.99);
    m.e2e_ms_max = e2e.back();
  }
  m.tool_wait_share = shares > 0 ? share_sum / static_cast<double>(shares) : 0.0;
  m.followup_calls = followup_calls_;
  m.history_tokens = history_tokens_;
  m.reprefilled_tokens = reprefilled_;
  m.reprefilled_tokens_per_call =
      followup_calls_ > 0 ? static_cast<double>(reprefilled_) / static_cast<double>(followup_calls_)
                          : 0.0;
  return m;
}

namespace {

void write_sessions(const RunMetrics& m, nlohmann::ordered_json& doc) {
  const SessionMetrics* found = m.find<SessionMetrics>();
  if (found == nullptr) return;
  const SessionMetrics& s = *found;
  MetricsObject o = metrics_object(doc, "agent_sessions");
  o.put("count", s.sessions)
      .put("roots", s.roots)
      .put("calls", s.calls)
      .put("e2e_ms", {{"mean", s.e2e_ms_mean},
                      {"p50", s.e2e_ms_p50},
                      {"p99", s.e2e_ms_p99},
                      {"max", s.e2e_ms_max}})
      .put("engine_s", s.engine_s)
      .put("tool_wait_s", s.tool_wait_s)
      .put("tool_wait_share", s.tool_wait_share)
      .put("followup_calls", s.followup_calls)
      .put("history_tokens", s.history_tokens)
      .put("reprefilled_tokens", s.reprefilled_tokens)
      .put("reprefilled_tokens_per_call", s.reprefilled_tokens_per_call);
}

}  // namespace

MetricsSection session_metrics_section() {
  return {"agent_sessions", write_sessions};
}

std::string session_summary(const RunMetrics& m) {
  const SessionMetrics* found = m.find<SessionMetrics>();
  if (found == nullptr) return {};
  const SessionMetrics& s = *found;
  return fmt::format(
      "agent sessions: {} roots ({} sessions counting sub-agents), {} calls; end to end p50 {:.1f} "
      "s, "
      "p99 {:.1f} s; tool waits {:.0f}% of a session's span; {:.1f} history tokens prefilled "
      "again per follow-up call\n",
      s.roots, s.sessions, s.calls, s.e2e_ms_p50 / 1e3, s.e2e_ms_p99 / 1e3,
      100.0 * s.tool_wait_share, s.reprefilled_tokens_per_call);
}

}  // namespace kvsim
