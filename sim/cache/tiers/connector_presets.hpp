#pragma once
// Named connector presets (`kv_tiers: {preset: lmcache}`): what a deployed
// KV connector amounts to in kvsim's tier keys, so a scenario says what it
// runs and overrides what differs key by key:
//
//   kv_tiers:
//     preset: lmcache
//     tiers: {dram: {capacity: 64GiB}, ssd: {capacity: 1TB}}   # overrides
//
// Each preset is data: values of the existing `kv_tiers` keys (kind `kv
// tier`), each with the upstream file it comes from, or "assumed" where the
// connector has no default (a capacity it asks the user for, a link's
// bandwidth that is the deployment's). Tiers a preset gives with capacity 0
// (LMCache's disk and remote backends, off by default) are left out until an
// override gives them room. The preset is expanded into the document after
// --set (so `--set kv_tiers.preset=NAME` and `compare --vary` reach it) and
// before the section is read; the user's keys win.
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "base/params.hpp"
#include "base/reader.hpp"

namespace kvsim {

// One key a preset sets: its value as YAML and where that value comes from
// (the upstream repository, file and setting, at a commit where one is
// pinned, or "assumed: ..." saying why the connector gives none).
struct PresetValue {
  std::string key;
  std::string value;
  std::string source;
};

struct ConnectorPresetTier {
  std::string name;  // dram | ssd | global
  std::vector<PresetValue> values;
};

struct ConnectorPreset {
  std::string name;
  std::string doc;           // what it is
  std::string source;        // where its values come from (repository, file)
  std::string load_overlap;  // empty: the section's default
  std::vector<ConnectorPresetTier> tiers;
};

// Every preset, by name.
const std::vector<ConnectorPreset>& connector_presets();
const ConnectorPreset* find_connector_preset(const std::string& name);
std::string connector_preset_names();  // "vllm_offloading, lmcache, ..."

// Kind "connector preset", one a preset (`kvsim list presets`): the keys it
// sets as parameters, typed as the section declares them, the preset's
// value as the default and the value's source as the doc.
std::vector<config::ComponentInfo> connector_preset_infos();
// The parameter `key` of a preset: `of` (the section's declaration) with
// the preset's value as its default and its source as its doc.
// std::logic_error when the value does not parse as `of`'s type (a preset
// that is not data over the section's keys).
config::ParamSpec preset_param(const config::ParamSpec& of, std::string key, const PresetValue& v);
// Lays `values` under the keys `given` has (the user's win): a new map.
YAML::Node overlay_preset(const YAML::Node& given, const std::vector<PresetValue>& values);

// Expands `kv_tiers.preset` of `doc` in place (the key itself removed).
// Errors (exit 2, at their node): an unknown preset (the known ones
// listed), `tiers` given as a list, an override of a tier or a key the
// preset's tiers do not know (the preset's keys listed).
// `at` names the section in errors (a cluster group's: "cluster.groups.
// replica.kv_tiers").
void apply_connector_preset(YAML::Node& doc, const std::string& file, config::LoadContext& ctx,
                            const std::string& at = "kv_tiers");

}  // namespace kvsim
