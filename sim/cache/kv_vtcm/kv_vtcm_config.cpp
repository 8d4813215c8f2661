#include "sim/cache/kv_vtcm/kv_vtcm_config.hpp"

#include <algorithm>

namespace kvsim {

KvVtcmConfig read_kv_vtcm_config(const config::Node& node) {
  KvVtcmConfig c;
  config::MapReader r(node);
  const config::ParamValues shared = config::read_params(r, kv_vtcm_section_info());
  const auto names = kv_vtcm_placement_names();
  c.placement = shared.string("placement");
  if (std::find(names.begin(), names.end(), c.placement) == names.end())
    c.placement = std::string(kDefaultKvVtcmPlacement);  // the error is recorded
  if (shared.has("graph_vtcm")) c.graph_vtcm = shared.integer("graph_vtcm");
  const config::ComponentInfo& info = kv_vtcm_placement_info(c.placement);
  c.params = config::read_params(r, info);
  config::report_foreign_keys(r, info, kv_vtcm_placement_infos(), {"placement", "graph_vtcm"});
  r.finish();
  return c;
}

}  // namespace kvsim
