#pragma once
// The sessions of one HTP taking turns at its VTCM (shared/data README,
// Hexagon SDK HAP_compute_res "VTCM window feature"): the LLM for each dialog
// turn, other models on their duty cycle. A session that cannot get at least
// its minimum waits; every release hands VTCM to the waiting sessions in the
// order they asked (each one that fits now is granted, so a small request is
// not held up behind a large one). The allocator decides what fits (page
// rounding before v79, windows from v79); this class only queues and
// accounts, and never schedules events: the engine does.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "devices/htp_vtcm_allocator.hpp"
#include "sim/genie/genie_metrics.hpp"

namespace kvsim {

class VtcmSessions {
 public:
  using GrantCallback = std::function<void(const VtcmGrant&)>;

  explicit VtcmSessions(const HtpSpec& htp);

  // Registers a session; returns its id. Throws std::invalid_argument when
  // the request exceeds the VTCM or min > request (cross-checks report that
  // to the user first).
  int32_t add_session(std::string name, Bytes request, Bytes min);

  // The session asks for VTCM at `now`. When a grant fits, `on_grant` runs
  // before this returns (true); otherwise the session waits and `on_grant`
  // runs inside the release() that makes room (false).
  bool acquire(int32_t session, TimeNs now, GrantCallback on_grant);
  // The session gives its VTCM back at `now`; waiting sessions that fit now
  // are granted (their callbacks run here).
  void release(int32_t session, TimeNs now);
  // The run ends at `now`: waits still open count up to here.
  void finish(TimeNs now);

  bool holds(int32_t session) const;
  bool waiting(int32_t session) const;
  Bytes reserved_bytes() const { return allocator_.reserved_bytes(); }

  // Per session, in registration order: request, smallest grant it ran with,
  // time waited, acquisitions.
  std::vector<GenieRunMetrics::Session> report() const;
  // Sessions that waited at least once.
  int64_t sessions_waited() const;
  double total_wait_ms() const;

 private:
  struct State {
    std::string name;
    Bytes request = 0, min = 0;
    Bytes smallest_grant = -1;  // -1 until the first grant
    TimeNs waited = 0;
    int64_t runs = 0;
    bool holding = false;
    bool ever_waited = false;
    TimeNs wait_since = -1;  // >= 0 while waiting
    GrantCallback on_grant;
  };
  void grant(int32_t session, const VtcmGrant& grant, TimeNs now);

  VtcmAllocator allocator_;
  std::vector<State> sessions_;
  std::vector<int32_t> queue_;  // waiting sessions, in the order they asked
};

}  // namespace kvsim
