#pragma once
// Readers for three sections of a scenario file (SPEC 4), called by
// parse_scenario in sim/scenario.cpp: `kv_cache:`, `scheduler:` and
// `expect:`. Each reads its keys strictly through config::MapReader, so an
// unknown key, a bad value or an unknown metric is reported with its
// FILE:LINE:COL; range checks that need other sections are in
// sim/scenario.cpp's cross_checks.
#include "base/params.hpp"
#include "base/reader.hpp"
#include "sim/scenario/scenario.hpp"

namespace kvsim {

// `kv_cache:` into s.cache: the policy (a planned but unbuilt one is named
// as such), the paged keys, the on-device family's (seed 002) and
// chunk_lru's (seed 003).
void read_kv_cache_section(config::MapReader& top, ScenarioSpec& s);

// The serving engine's keys (the `scheduler:` section) and its checks
// against the model and the workload.
config::ComponentInfo serving_engine_info();
// `scheduler:` into s.scheduler.
void read_scheduler_section(config::MapReader& top, ScenarioSpec& s);
void serving_engine_checks(const ScenarioSpec& s, config::LoadContext& ctx);

// `expect:` into s.expect: a map of metric key to bounds, every key one of
// metric_key_names().
void read_expect_section(config::MapReader& top, ScenarioSpec& s);

}  // namespace kvsim
