#pragma once
// A scenario (SPEC 4): device, model, parallelism, cache policy, engine,
// workload, numerics and expectations, loaded strictly into the tree of
// typed components (sim/spec/). load_scenario() either
// returns a scenario that can run or throws config::ConfigError listing every
// problem with FILE:LINE:COL and key path.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/reader.hpp"
#include "sim/spec/instance_spec.hpp"

namespace kvsim {

// One `expect:` entry: a metric key and the bounds it must meet.
struct Expectation {
  std::string metric;
  std::optional<double> min, max, equals, approx;
  double rel = 0.0;
  double abs = 0.0;
  config::Location where;
};

struct ClusterSpec;  // sim/cluster/cluster_spec.hpp

// A scenario: one instance (sim/spec/instance_spec.hpp) with where it came
// from, its expectations and, for a cluster, its instance groups.
struct ScenarioSpec : InstanceSpec {
  std::string description;
  std::string file;         // the scenario file (empty for an inline test scenario)
  std::string configs_dir;  // where names resolve
  std::vector<Expectation> expect;
  // `cluster:` instance groups behind a router; null: one instance (the
  // scenario itself), run exactly as without the key.
  std::shared_ptr<const ClusterSpec> cluster;
};

// Loads a scenario file, applies `--set` overrides, resolves device/model
// names under configs/, validates everything and runs the cross-field checks.
ScenarioSpec load_scenario(const std::string& path, const std::vector<std::string>& overrides = {});
// The same from an in-memory document (tests, the Python module); `file`
// names it in errors.
ScenarioSpec load_scenario_text(const std::string& yaml_text, const std::string& file,
                                const std::string& configs_dir,
                                const std::vector<std::string>& overrides = {});

// Applies `--set` overrides to a document as load_scenario does: a
// `kv_cache.policy=NEW` first moves the old policy's own keys under
// kv_cache.<old> (where they stay that policy's settings), then each
// override is written. The run folder's scenario.resolved.yaml records the
// document after this, so `kvsim run --from` it reads what the run read.
void apply_overrides(YAML::Node& doc, const std::vector<std::string>& overrides,
                     const std::string& file, config::LoadContext& ctx);

// Expands the connector presets of a document after its --set overrides
// (kv_tiers.preset, cluster.global_pool.preset): the keys each preset sets,
// the user's winning. What load_scenario does, and what a run folder's
// scenario.resolved.yaml records (the preset's keys, not its name).
void apply_presets(YAML::Node& doc, const std::string& file, config::LoadContext& ctx);

// The configs/ folder for a scenario: the nearest ancestor folder named
// `configs` that has devices/ and models/, else the one of this source tree.
std::string find_configs_dir(const std::string& scenario_path);

// Validates any kvsim YAML file (scenario, device or model), guessing the
// kind from its folder or content. Throws ConfigError.
void validate_file(const std::string& path);

// Names available under configs/<kind>/ (devices, models, scenarios).
std::vector<std::string> list_config_names(const std::string& configs_dir, const std::string& kind);

}  // namespace kvsim
