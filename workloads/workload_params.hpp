#pragma once
// The parameters each workload kind, arrival process and distribution
// declares (base/params.hpp), one function per component, defined in that
// component's own file beside the code that reads the values. The tables of
// workload.cpp, arrival.cpp and distribution_registry.cpp list them; a key
// of a sibling written under the chosen one is an error naming its owner,
// and `kvsim list workloads|arrivals|distributions --params` and
// docs/yaml.md show them.
#include <vector>

#include "base/params.hpp"

namespace kvsim {

// `workload:` keys every kind shares (kind, max_concurrency), each kind's
// own keys, then the nested maps some kinds take (workload.trace,
// workload.shared_prefix, ...): what the catalog lists.
std::vector<config::ComponentInfo> workload_infos();
// Only the kinds, one per value of `kind:`.
std::vector<config::ComponentInfo> workload_kind_infos();

// `arrival:`'s shared key (process) first, then one info per process.
std::vector<config::ComponentInfo> arrival_infos();
// `{dist: ...}`'s shared keys (dist, min, max) first, then one per distribution.
std::vector<config::ComponentInfo> distribution_infos();

// A key whose value is a distribution (or a bare number, short for a
// constant) of `unit` ("tokens", "time").
config::ParamSpec distribution_param(std::string key, bool required, std::string unit,
                                     std::string doc);

}  // namespace kvsim
