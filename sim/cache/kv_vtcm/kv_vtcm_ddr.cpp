// ddr: every layer's KV stays in DDR; the graph's tiles have the whole
// window (kvsim's behaviour before placements existed).
#include "sim/cache/kv_vtcm/kv_vtcm_registry.hpp"

namespace kvsim {
namespace {

class DdrPlacement final : public KvVtcmPlacement {
 public:
  KvVtcmPlan place(Bytes window, Bytes, const KvVtcmGeometry& g) const override {
    return kv_vtcm_plan(0, KvVtcmPart::kv, window, g);
  }
  Bytes declared_bytes(const KvVtcmGeometry&) const override { return 0; }
};

}  // namespace

config::ComponentInfo kv_vtcm_ddr_info() {
  return {"kv_vtcm placement", "ddr", "no KV in VTCM: the graph's tiles have the whole window", {}};
}

std::unique_ptr<KvVtcmPlacement> make_kv_vtcm_ddr(const config::ParamValues&) {
  return std::make_unique<DdrPlacement>();
}

}  // namespace kvsim
