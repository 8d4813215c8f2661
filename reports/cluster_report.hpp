#pragma once
// How a run's reports name its deployment and what each figure sums over.
// One instance: "tensor parallel 4". A cluster (`cluster:`): its groups,
// "8 instances x TP 1", or "5 prefill x TP 1 + 3 decode x TP 2 (8
// instances)" when they differ; its summary says which figures are the
// cluster's (summed over instances), which are one device's and which are
// one instance's.
#include <string>

#include "sim/scenario/scenario.hpp"

namespace kvsim {

// "8 instances x TP 1" and the like; empty for one instance.
std::string cluster_deployment(const ScenarioSpec& s);
// What the first line of report.md and report.html puts in parentheses
// after the device: "tensor parallel 4" (", pipeline parallel ..." is the
// caller's), or cluster_deployment(s).
std::string deployment_phrase(const ScenarioSpec& s);

}  // namespace kvsim
