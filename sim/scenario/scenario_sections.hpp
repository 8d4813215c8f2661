#pragma once
// The reader of a scenario's `expect:` section (SPEC 4), called by
// parse_scenario in sim/scenario/scenario.cpp: every key one of metrics.json's
// numeric keys, so an unknown metric is reported with its FILE:LINE:COL.
// (Each component's own section is read by its component.)
#include "base/params.hpp"
#include "base/reader.hpp"
#include "sim/scenario/scenario.hpp"

namespace kvsim {

// `expect:` into s.expect: a map of metric key to bounds, every key one of
// metric_key_names().
void read_expect_section(config::MapReader& top, ScenarioSpec& s);

}  // namespace kvsim
