#pragma once
// Named presets of a cluster's global pool (`cluster.global_pool: {preset:
// ascend_store, capacity: 8TB}`): what Mooncake Store, or vllm-ascend's
// AscendStore over it, amounts to in the existing `global_pool` keys, each
// value with its upstream source or marked assumed, so a scenario says what
// it deploys and overrides what differs key by key. The pool's capacity is
// the sum of the segments every client mounts (Mooncake's
// global_segment_size), which only the deployment knows: a preset asks for
// it. Expanded into the document after --set (so `--set
// cluster.global_pool.preset=NAME` and `compare --vary` reach it), before
// the section is read; the user's keys win.
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "base/params.hpp"
#include "base/reader.hpp"
#include "sim/cache/tiers/connector_presets.hpp"

namespace kvsim {

struct PoolPreset {
  std::string name;
  std::string doc;
  std::string source;
  // Why capacity is the user's, with the connector's per-client default.
  std::string capacity_note;
  std::vector<PresetValue> values;  // keys of `cluster.global_pool`
};

const std::vector<PoolPreset>& pool_presets();
std::string pool_preset_names();
// Kind "pool preset", one a preset (`kvsim list presets`).
std::vector<config::ComponentInfo> pool_preset_infos();

// Expands `cluster.global_pool.preset` of `doc` in place (the key itself
// removed). Errors (exit 2, at their node): an unknown preset (the known
// ones listed), a key `global_pool` does not have (the preset's keys
// listed), no capacity.
void apply_pool_preset(YAML::Node& doc, const std::string& file, config::LoadContext& ctx);

}  // namespace kvsim
