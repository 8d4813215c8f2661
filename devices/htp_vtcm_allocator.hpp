#pragma once
// VTCM shared by the processes of one HTP (shared/data README, Hexagon SDK
// HAP_compute_res "VTCM window feature"):
//   before v79: a request is mapped in whole pages (power-of-two sizes); the
//     rest of the page is reserved with it and unusable by other processes,
//     so a 6 MiB request takes 8 MiB and a 2 MiB request then waits or runs
//     with less;
//   v79+: a window confines the process to a contiguous region of its
//     request (rounded to the window granule) and others use the rest.
// Plan, then apply: plan_acquire() is const.
//
// CONTRACT between the HTP device work and the dialog engine; the
// implementation lives in devices/htp_vtcm_allocator.cpp.
#include <cstdint>
#include <map>
#include <optional>

#include "devices/htp_spec.hpp"

namespace kvsim {

struct VtcmGrant {
  Bytes granted = 0;   // usable by the session (min <= granted <= request)
  Bytes reserved = 0;  // taken from the VTCM (>= granted: page rounding)
};

class VtcmAllocator {
 public:
  explicit VtcmAllocator(const HtpSpec& htp);

  // The largest grant in [min, request] that fits now, or nullopt (the
  // session waits). Throws std::invalid_argument when request exceeds the
  // VTCM or min > request.
  std::optional<VtcmGrant> plan_acquire(Bytes request, Bytes min) const;
  void apply_acquire(int32_t session, const VtcmGrant& grant);
  void release(int32_t session);

  Bytes reserved_bytes() const;  // in use now, page rounding included
  Bytes free_bytes() const;

 private:
  HtpSpec htp_;
  std::map<int32_t, VtcmGrant> held_;
};

}  // namespace kvsim
