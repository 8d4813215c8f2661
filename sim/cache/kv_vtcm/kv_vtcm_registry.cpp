#include "sim/cache/kv_vtcm/kv_vtcm_registry.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>

namespace kvsim {
namespace {

struct RegisteredPlacement {
  config::ComponentInfo (*info)();
  std::unique_ptr<KvVtcmPlacement> (*make)(const config::ParamValues&);
};

// One line per placement, kept in name order.
const std::vector<RegisteredPlacement>& placement_table() {
  static const std::vector<RegisteredPlacement> t = {
      {kv_vtcm_ddr_info, make_kv_vtcm_ddr},
      {kv_vtcm_fit_info, make_kv_vtcm_fit},
      {kv_vtcm_layers_info, make_kv_vtcm_layers},
  };
  return t;
}

const RegisteredPlacement& find_placement(std::string_view name) {
  for (const RegisteredPlacement& r : placement_table())
    if (r.info().name == name) return r;
  throw std::invalid_argument(fmt::format("unknown kv_vtcm placement '{}' (known: {})", name,
                                          fmt::join(kv_vtcm_placement_names(), ", ")));
}

}  // namespace

std::vector<std::string> kv_vtcm_placement_names() {
  std::vector<std::string> names;
  for (const RegisteredPlacement& r : placement_table()) names.push_back(r.info().name);
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<config::ComponentInfo> kv_vtcm_placement_infos() {
  std::vector<config::ComponentInfo> infos;
  for (const RegisteredPlacement& r : placement_table()) infos.push_back(r.info());
  std::sort(infos.begin(), infos.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  return infos;
}

const config::ComponentInfo& kv_vtcm_placement_info(std::string_view name) {
  static const std::vector<config::ComponentInfo> infos = kv_vtcm_placement_infos();
  for (const auto& info : infos)
    if (info.name == name) return info;
  (void)find_placement(name);  // throws the message listing the known names
  throw std::logic_error("unreachable");
}

config::ComponentInfo kv_vtcm_section_info() {
  using namespace config;
  return {
      "section",
      "htp.kv_vtcm",
      "which layers' KV lives in the LLM's VTCM window (sim/cache/kv_vtcm/)",
      {choice_param("placement", std::string(kDefaultKvVtcmPlacement), kv_vtcm_placement_names(),
                    "the placement: ddr (none), layers (a fixed count, the graph's tiles "
                    "get the rest), fit (what the graph's tiles leave)"),
       optional_param(bytes_param("graph_vtcm", 0, 0, Bytes{1} << 30,
                                  "VTCM the compiled graph's weight and activation tiles "
                                  "need within the window (default: the whole window)"))}};
}

std::unique_ptr<KvVtcmPlacement> make_kv_vtcm_placement(std::string_view name,
                                                        const config::ParamValues& params) {
  return find_placement(name).make(params);
}

config::ParamSpec kv_vtcm_part_param() {
  return config::choice_param("part", std::string("kv"), {"kv", "keys"},
                              "what of a resident layer VTCM holds: kv (keys and values) or keys "
                              "(the keys QK^T reads, half the layer)");
}

KvVtcmPart kv_vtcm_part(const config::ParamValues& params) {
  return params.string("part") == "keys" ? KvVtcmPart::keys : KvVtcmPart::kv;
}

}  // namespace kvsim
