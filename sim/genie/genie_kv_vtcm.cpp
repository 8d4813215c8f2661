// GenieEngine, KV resident in VTCM (sim/cache/kv_vtcm/kv_vtcm_placement.hpp
// says what residency means): each turn's grant is split between the KV
// mirrors and the graph's tiles by the scenario's placement; the mirrors are
// filled from DDR before the turn's first pass and kept in step after each
// update, both as DMA reads of DDR at the LPDDR bandwidth x the attention
// memory efficiency (the same KV bytes read the way a pass reads them,
// devices/htp_timing.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "base/checked_math.hpp"
#include "sim/cache/kv_vtcm/kv_vtcm_geometry.hpp"
#include "sim/genie/genie_engine_impl.hpp"
#include "sim/genie/genie_metrics.hpp"

namespace kvsim {
namespace {

TimeNs ddr_to_vtcm_time(const DeviceSpec& d, double bytes) {
  if (!(bytes > 0)) return 0;
  const double rate = static_cast<double>(std::max<int64_t>(d.memory_bandwidth, 1)) *
                      std::max(d.memory_efficiency[static_cast<size_t>(OpClass::attention)], 1e-9);
  const double ns = std::ceil(bytes / rate * static_cast<double>(kNsPerS));
  if (!(ns < static_cast<double>(kMaxSimulatedTimeNs)))
    throw_duration_overflow("a KV copy into VTCM", ns, static_cast<double>(kMaxSimulatedTimeNs));
  return static_cast<TimeNs>(ns);
}

}  // namespace

void GenieEngine::Impl::init_kv_vtcm() {
  const KvVtcmConfig& c = s_.htp.kv_vtcm;
  kv_vtcm_ = make_kv_vtcm_placement(c.placement, c.params);
  kv_geometry_ = kv_vtcm_geometry(shape_);
  graph_vtcm_ = c.graph_vtcm.value_or(vtcm_request_);
}

TimeNs GenieEngine::Impl::place_kv_vtcm(const VtcmGrant& grant) {
  turn_->kv = kv_vtcm_->place(grant.granted, graph_vtcm_, kv_geometry_);
  const KvVtcmPlan& p = turn_->kv;
  if (p.kv_bytes > grant.granted)
    throw std::logic_error(fmt::format("KV placement of {} exceeds the VTCM grant of {}",
                                       format_bytes(p.kv_bytes), format_bytes(grant.granted)));
  auto& n = kv_vtcm_counts_;
  if (n.turns == 0 || p.layers < n.min_layers) {
    n.min_layers = p.layers;
    n.min_bytes = p.kv_bytes;
  }
  ++n.turns;
  n.fill_bytes += p.kv_bytes;
  return ddr_to_vtcm_time(s_.device, static_cast<double>(p.kv_bytes));
}

// The part of what an update changed that lies in resident layers (the
// update moves the same bytes in every layer, K and V alike).
TimeNs GenieEngine::Impl::kv_vtcm_sync_time(const KvUpdatePlan& plan) const {
  if (!turn_ || turn_->kv.share <= 0) return 0;
  const double bytes = static_cast<double>(plan.bytes_moved()) * turn_->kv.share;
  kv_vtcm_counts_.sync_bytes += static_cast<Bytes>(std::llround(bytes));
  return ddr_to_vtcm_time(s_.device, bytes);
}

void GenieEngine::Impl::report_kv_vtcm(GenieRunMetrics& g) const {
  g.vtcm.kv_layers = kv_vtcm_counts_.min_layers;
  g.vtcm.kv_bytes = kv_vtcm_counts_.min_bytes;
  g.vtcm.kv_fill_bytes = kv_vtcm_counts_.fill_bytes;
  g.vtcm.kv_read_bytes = kv_vtcm_counts_.read_bytes;
  g.vtcm.kv_sync_bytes = kv_vtcm_counts_.sync_bytes;
}

}  // namespace kvsim
