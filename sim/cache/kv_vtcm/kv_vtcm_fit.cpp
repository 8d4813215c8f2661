// fit: the graph's tiles first; as many whole layers' KV (or their keys) as
// fit in what they leave of the window this turn, at most `max_layers`.
// Never spills the graph for the KV: a window shrunk by another model's
// (today's VTCM contention) holds fewer layers, or none.
#include <algorithm>

#include "sim/cache/kv_vtcm/kv_vtcm_registry.hpp"

namespace kvsim {
namespace {

class FitPlacement final : public KvVtcmPlacement {
 public:
  FitPlacement(int64_t max_layers, KvVtcmPart part) : max_layers_(max_layers), part_(part) {}

  KvVtcmPlan place(Bytes window, Bytes graph_need, const KvVtcmGeometry& g) const override {
    const Bytes room = window - std::clamp<Bytes>(graph_need, 0, window);
    const Bytes unit = kv_vtcm_unit_bytes(g, part_);
    int64_t n = max_layers_ > 0 ? std::min(max_layers_, g.layers) : g.layers;
    n = unit > 0 ? std::min<int64_t>(n, room / unit) : 0;
    return kv_vtcm_plan(std::max<int64_t>(n, 0), part_, window, g);
  }
  Bytes declared_bytes(const KvVtcmGeometry&) const override { return 0; }

 private:
  int64_t max_layers_;
  KvVtcmPart part_;
};

}  // namespace

config::ComponentInfo kv_vtcm_fit_info() {
  using namespace config;
  return {"kv_vtcm placement",
          "fit",
          "as many layers' KV in VTCM as the graph's tiles leave of the window each turn",
          {int_param("max_layers", 0, 0, 1024, "layers", "at most this many layers (0: any)"),
           kv_vtcm_part_param()}};
}

std::unique_ptr<KvVtcmPlacement> make_kv_vtcm_fit(const config::ParamValues& params) {
  return std::make_unique<FitPlacement>(params.integer("max_layers"), kv_vtcm_part(params));
}

}  // namespace kvsim
