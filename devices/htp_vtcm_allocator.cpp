#include "devices/htp_vtcm_allocator.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "base/checked_math.hpp"
#include "base/units.hpp"

namespace kvsim {
namespace {

// Smallest power of two >= bytes (a pre-v79 VTCM page; HAP_compute_res maps
// whole power-of-two pages).
Bytes page_of(Bytes bytes) {
  Bytes page = 1;
  while (page < bytes) page <<= 1;
  return page;
}

// Largest power of two <= bytes (0 when bytes < 1).
Bytes largest_page_within(Bytes bytes) {
  if (bytes < 1) return 0;
  Bytes page = 1;
  while (page <= bytes / 2) page <<= 1;
  return page;
}

}  // namespace

VtcmAllocator::VtcmAllocator(const HtpSpec& htp) : htp_(htp) {
  if (htp_.vtcm_bytes <= 0) throw std::invalid_argument("VtcmAllocator: the VTCM size must be > 0");
}

// What a grant of `granted` usable bytes takes from the VTCM:
//   before v79: the whole power-of-two page holding it (6 MiB -> 8 MiB);
//   v79+: a window of `granted` rounded up to the window granule.
// Zero bytes reserve nothing (the session runs from DDR).
std::optional<VtcmGrant> VtcmAllocator::plan_acquire(Bytes request, Bytes min) const {
  if (request < 0 || min < 0) {
    throw std::invalid_argument(
        fmt::format("VTCM request {} / minimum {} must be >= 0", request, min));
  }
  if (request > htp_.vtcm_bytes) {
    throw std::invalid_argument(fmt::format("VTCM request {} exceeds the VTCM ({})",
                                            format_bytes(request), format_bytes(htp_.vtcm_bytes)));
  }
  if (min > request) {
    throw std::invalid_argument(fmt::format("VTCM minimum {} exceeds the request {}",
                                            format_bytes(min), format_bytes(request)));
  }
  const Bytes free = free_bytes();
  VtcmGrant grant;
  if (request == 0) return grant;
  if (!htp_.vtcm_windows) {
    if (page_of(request) <= free) {
      grant.granted = request;
      grant.reserved = page_of(request);
    } else {
      // Less than asked: the largest whole page that is still free.
      grant.granted = largest_page_within(free);
      grant.reserved = grant.granted;
    }
  } else {
    const Bytes granule = std::max<Bytes>(1, htp_.vtcm_window_granule);
    const Bytes window = std::min(round_up(request, granule), htp_.vtcm_bytes);
    if (window <= free) {
      grant.granted = request;
      grant.reserved = window;
    } else {
      grant.granted = free / granule * granule;
      grant.reserved = grant.granted;
    }
  }
  if (grant.granted < min) return std::nullopt;
  return grant;
}

void VtcmAllocator::apply_acquire(int32_t session, const VtcmGrant& grant) {
  if (held_.count(session) != 0) {
    throw std::logic_error(fmt::format("VTCM session {} already holds a grant", session));
  }
  if (grant.reserved > free_bytes()) {
    throw std::logic_error(fmt::format("VTCM grant of {} does not fit the {} free",
                                       format_bytes(grant.reserved), format_bytes(free_bytes())));
  }
  held_[session] = grant;
}

void VtcmAllocator::release(int32_t session) {
  held_.erase(session);
}

Bytes VtcmAllocator::reserved_bytes() const {
  Bytes total = 0;
  for (const auto& [session, grant] : held_) total += grant.reserved;
  return total;
}

Bytes VtcmAllocator::free_bytes() const {
  return htp_.vtcm_bytes - reserved_bytes();
}

}  // namespace kvsim
