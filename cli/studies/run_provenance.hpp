#pragma once
// What a run folder keeps to be run again (`kvsim run --from`): the scenario
// file, the configs/ folder its device: and model: names resolved in, the
// --set overrides and the document they produced. Reloading parses that
// document as if it were the original file (relative paths inside it still
// resolve from the original file's folder), so a rerun does not depend on
// the file having stayed the same.
#include <string>
#include <vector>

#include "sim/core/metrics.hpp"
#include "sim/scenario/scenario.hpp"

namespace kvsim {

// The provenance of `load_scenario(path, overrides)`; call it after that
// load succeeded (it reports no errors of its own).
RunProvenance describe_scenario(const std::string& path, const std::vector<std::string>& overrides);

// scenario.resolved.yaml: the resolved document under a comment header that
// names the original file and configs folder.
std::string resolved_scenario_file_text(const RunProvenance& p);

// Reloads a run from a metrics.json it wrote (its provenance section) or from
// the scenario.resolved.yaml beside it. Throws config::ConfigError (exit 2)
// when the file holds neither.
struct Reproduction {
  ScenarioSpec spec;
  RunProvenance provenance;
};
Reproduction load_reproduction(const std::string& from);

}  // namespace kvsim
