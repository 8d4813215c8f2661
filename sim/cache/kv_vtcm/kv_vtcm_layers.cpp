// layers: the first `layers` layers' KV (or their keys) are placed in VTCM
// when the graph is set up, before its tiles: the KV goes first and the
// graph's tiles get what is left of the window, spilling to DDR when that
// is less than they need (devices/htp_timing.cpp, vtcm_spill_factor). In a
// window too small for all of them (another model holds the rest of the
// VTCM this turn), the layers that do not fit stay in DDR.
#include <algorithm>

#include "sim/cache/kv_vtcm/kv_vtcm_registry.hpp"

namespace kvsim {
namespace {

class LayersPlacement final : public KvVtcmPlacement {
 public:
  LayersPlacement(int64_t layers, KvVtcmPart part) : layers_(layers), part_(part) {}

  KvVtcmPlan place(Bytes window, Bytes, const KvVtcmGeometry& g) const override {
    const Bytes unit = kv_vtcm_unit_bytes(g, part_);
    int64_t n = std::min(layers_, g.layers);
    if (unit > 0) n = std::min<int64_t>(n, window / unit);
    return kv_vtcm_plan(std::max<int64_t>(n, 0), part_, window, g);
  }
  Bytes declared_bytes(const KvVtcmGeometry& g) const override {
    return std::min(layers_, g.layers) * kv_vtcm_unit_bytes(g, part_);
  }

 private:
  int64_t layers_;
  KvVtcmPart part_;
};

}  // namespace

config::ComponentInfo kv_vtcm_layers_info() {
  using namespace config;
  return {"kv_vtcm placement",
          "layers",
          "the first N layers' KV in VTCM before the graph's tiles, which get the rest of the "
          "window",
          {int_param("layers", 1, 1, 1024, "layers", "layers whose KV VTCM holds"),
           kv_vtcm_part_param()}};
}

std::unique_ptr<KvVtcmPlacement> make_kv_vtcm_layers(const config::ParamValues& params) {
  return std::make_unique<LayersPlacement>(params.integer("layers"), kv_vtcm_part(params));
}

}  // namespace kvsim
