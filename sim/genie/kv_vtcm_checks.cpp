#include "sim/genie/kv_vtcm_checks.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "sim/cache/kv_vtcm/kv_vtcm_geometry.hpp"
#include "sim/spec/instance_spec.hpp"

namespace kvsim {

void kv_vtcm_checks(const InstanceSpec& s, config::LoadContext& ctx) {
  const KvVtcmConfig& c = s.htp.kv_vtcm;
  const DeviceBufferContract* buffers = s.policy().device_buffers();
  if (!s.device.htp || buffers == nullptr) return;
  auto error = [&](const std::string& key, const std::string& problem, const std::string& allowed) {
    ctx.diagnostics.error(ctx.location_of(key), key, problem, allowed);
  };
  const Bytes window = s.htp.llm_request(s.device.htp->vtcm_bytes);
  if (c.graph_vtcm && *c.graph_vtcm > window) {
    error("htp.kv_vtcm.graph_vtcm",
          fmt::format("the graph's {} of VTCM do not fit the LLM's window of {}",
                      format_bytes(*c.graph_vtcm), format_bytes(window)),
          fmt::format("0..{} (htp.vtcm_request)", format_bytes(window)));
  }
  if (!c.places_kv()) return;
  if (s.device.htp->vtcm_bandwidth <= 0) {
    error("htp.kv_vtcm.placement",
          fmt::format("'{}' reads KV from VTCM at the device's htp.vtcm_bandwidth, which {} does "
                      "not give",
                      c.placement, s.device.name),
          "placement: ddr, or htp.vtcm_bandwidth: {value, source: \"D: ...\"} in the device file");
    return;
  }
  KvVtcmGeometry g;
  try {
    g = kv_vtcm_geometry(buffers->shape(s.model, s.kv.dtype_bytes()));
  } catch (const std::invalid_argument& e) {
    error("htp.kv_vtcm.placement", e.what(), "a smaller kv_cache.ctx_size");
    return;
  }
  const config::ComponentInfo& info = kv_vtcm_placement_info(c.placement);
  if (info.find("layers") != nullptr && c.params.integer("layers") > g.layers) {
    error(
        "htp.kv_vtcm.layers",
        fmt::format("{} layers, but {} has {}", c.params.integer("layers"), s.model.name, g.layers),
        fmt::format("1..{}", g.layers));
    return;
  }
  const std::unique_ptr<KvVtcmPlacement> p = make_kv_vtcm_placement(c.placement, c.params);
  const Bytes declared = p->declared_bytes(g);
  if (declared > window) {
    const Bytes unit = kv_vtcm_unit_bytes(g, kv_vtcm_part(c.params));
    const int64_t most = unit > 0 ? window / unit : 0;
    error("htp.kv_vtcm.layers",
          fmt::format("{} layers of KV take {} of VTCM ({} each at ctx_size {}), more than the "
                      "LLM's window of {}",
                      c.params.integer("layers"), format_bytes(declared), format_bytes(unit),
                      buffers->ctx_size(), format_bytes(window)),
          most > 0 ? fmt::format("1..{} layers, part: keys, or a smaller ctx_size", most)
                   : "part: keys, a smaller ctx_size, or placement: ddr");
  }
}

}  // namespace kvsim
