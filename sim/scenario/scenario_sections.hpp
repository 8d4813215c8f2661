#pragma once
// The readers of a scenario's `expect:` section (SPEC 4: every key one of
// metrics.json's numeric keys, so an unknown metric is reported with its
// FILE:LINE:COL) and of `numerics.reuse_quality:`, called by parse_scenario
// in sim/scenario/scenario.cpp.
// (Each component's own section is read by its component.)
#include "base/params.hpp"
#include "base/reader.hpp"
#include "sim/scenario/scenario.hpp"

namespace kvsim {

// `expect:` into s.expect: a map of metric key to bounds, every key one of
// metric_key_names().
void read_expect_section(config::MapReader& top, ScenarioSpec& s);

// `numerics.reuse_quality:` into n (sim/numerics/reuse_quality_probe.hpp):
// the checkpoint is resolved against the YAML file's folder and read now,
// so a missing or malformed one fails before anything runs.
void read_reuse_quality_section(const config::Node& node, NumericsConfig& n);

}  // namespace kvsim
