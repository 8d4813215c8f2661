#include "sim/genie/genie_sessions.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace kvsim {

VtcmSessions::VtcmSessions(const HtpSpec& htp) : allocator_(htp) {}

int32_t VtcmSessions::add_session(std::string name, Bytes request, Bytes min) {
  // An empty allocator validates the figures: throws when request > VTCM or
  // min > request.
  (void)VtcmAllocator(allocator_).plan_acquire(request, min);
  State s;
  s.name = std::move(name);
  s.request = request;
  s.min = min;
  sessions_.push_back(std::move(s));
  return static_cast<int32_t>(sessions_.size() - 1);
}

bool VtcmSessions::acquire(int32_t session, TimeNs now, GrantCallback on_grant) {
  State& s = sessions_.at(static_cast<size_t>(session));
  if (s.holding || s.wait_since >= 0)
    throw std::logic_error(fmt::format("VTCM session '{}' asked twice", s.name));
  // Granted at once when it fits now, even with others waiting (space is
  // not held back for a waiting session; a simplification).
  if (auto g = allocator_.plan_acquire(s.request, s.min)) {
    s.on_grant = std::move(on_grant);
    grant(session, *g, now);
    return true;
  }
  s.on_grant = std::move(on_grant);
  s.wait_since = now;
  s.ever_waited = true;
  queue_.push_back(session);
  return false;
}

void VtcmSessions::grant(int32_t session, const VtcmGrant& g, TimeNs now) {
  State& s = sessions_[static_cast<size_t>(session)];
  allocator_.apply_acquire(session, g);
  s.holding = true;
  ++s.runs;
  s.smallest_grant = s.smallest_grant < 0 ? g.granted : std::min(s.smallest_grant, g.granted);
  if (s.wait_since >= 0) {
    s.waited += now - s.wait_since;
    s.wait_since = -1;
  }
  GrantCallback callback = std::move(s.on_grant);
  s.on_grant = nullptr;
  if (callback) callback(g);
}

void VtcmSessions::release(int32_t session, TimeNs now) {
  State& s = sessions_.at(static_cast<size_t>(session));
  if (!s.holding) throw std::logic_error(fmt::format("VTCM session '{}' released twice", s.name));
  allocator_.release(session);
  s.holding = false;
  // Grant in asking order; a grant's callback may acquire or release again,
  // so walk a snapshot and re-check each entry.
  const std::vector<int32_t> waiting = queue_;
  for (const int32_t w : waiting) {
    auto it = std::find(queue_.begin(), queue_.end(), w);
    if (it == queue_.end()) continue;
    const State& ws = sessions_[static_cast<size_t>(w)];
    if (auto g = allocator_.plan_acquire(ws.request, ws.min)) {
      queue_.erase(it);
      grant(w, *g, now);
    }
  }
}

void VtcmSessions::finish(TimeNs now) {
  for (State& s : sessions_) {
    if (s.wait_since >= 0) {
      s.waited += now - s.wait_since;
      s.wait_since = -1;
    }
  }
  queue_.clear();
}

bool VtcmSessions::holds(int32_t session) const {
  return sessions_.at(static_cast<size_t>(session)).holding;
}

bool VtcmSessions::waiting(int32_t session) const {
  return sessions_.at(static_cast<size_t>(session)).wait_since >= 0;
}

std::vector<GenieRunMetrics::Session> VtcmSessions::report() const {
  std::vector<GenieRunMetrics::Session> out;
  for (const State& s : sessions_) {
    GenieRunMetrics::Session r;
    r.name = s.name;
    r.vtcm_requested_bytes = s.request;
    r.vtcm_granted_bytes = std::max<Bytes>(s.smallest_grant, 0);
    r.vtcm_wait_ms = static_cast<double>(s.waited) / 1e6;
    r.runs = s.runs;
    out.push_back(std::move(r));
  }
  return out;
}

int64_t VtcmSessions::sessions_waited() const {
  return std::count_if(sessions_.begin(), sessions_.end(),
                       [](const State& s) { return s.ever_waited; });
}

double VtcmSessions::total_wait_ms() const {
  TimeNs total = 0;
  for (const State& s : sessions_) total += s.waited;
  return static_cast<double>(total) / 1e6;
}

}  // namespace kvsim
