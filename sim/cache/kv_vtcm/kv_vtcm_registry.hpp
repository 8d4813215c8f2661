#pragma once
// KV placements in VTCM by name: the YAML value `htp.kv_vtcm.placement`
// picks one (kv_vtcm_placement.hpp). The table in kv_vtcm_registry.cpp is the
// only place a placement is registered.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/params.hpp"
#include "sim/cache/kv_vtcm/kv_vtcm_placement.hpp"

namespace kvsim {

constexpr std::string_view kDefaultKvVtcmPlacement = "ddr";

// Registered names, sorted.
std::vector<std::string> kv_vtcm_placement_names();
// Kind "kv_vtcm placement", name, doc and keys of each, in name order.
std::vector<config::ComponentInfo> kv_vtcm_placement_infos();
const config::ComponentInfo& kv_vtcm_placement_info(std::string_view name);
// The keys every placement shares (`placement`, `graph_vtcm`): the section's.
config::ComponentInfo kv_vtcm_section_info();
// A new placement of that name over the values read for it. Throws
// std::invalid_argument naming the known ones for an unregistered name.
std::unique_ptr<KvVtcmPlacement> make_kv_vtcm_placement(std::string_view name,
                                                        const config::ParamValues& params);

// The implementations, one file each (kv_vtcm_ddr.cpp, kv_vtcm_layers.cpp,
// kv_vtcm_fit.cpp).
config::ComponentInfo kv_vtcm_ddr_info();
std::unique_ptr<KvVtcmPlacement> make_kv_vtcm_ddr(const config::ParamValues& params);
config::ComponentInfo kv_vtcm_layers_info();
std::unique_ptr<KvVtcmPlacement> make_kv_vtcm_layers(const config::ParamValues& params);
config::ComponentInfo kv_vtcm_fit_info();
std::unique_ptr<KvVtcmPlacement> make_kv_vtcm_fit(const config::ParamValues& params);

// The `part` key the layered placements share, and its value.
config::ParamSpec kv_vtcm_part_param();
KvVtcmPart kv_vtcm_part(const config::ParamValues& params);

}  // namespace kvsim
