#pragma once
// `kind: fixed`: benchmark-shaped single-shot requests, the way
// prefix-cache benchmarks build them. `input_tokens` is the WHOLE prompt;
// `prefix.shared_fraction` of it is a prefix shared by every request of its
// group and the rest is unique to the request.
#include <cstdint>
#include <memory>

#include "workloads/arrival.hpp"
#include "workloads/distribution.hpp"

namespace kvsim {

struct FixedPrefixSpec {
  double shared_fraction = 0.0;  // in [0, 1]
  int64_t groups = 1;            // request i uses group i mod groups
};

struct FixedWorkloadSpec {
  int64_t requests = 0;
  std::shared_ptr<const ArrivalProcess> arrival;
  std::shared_ptr<const ClampedDistribution> input_tokens;  // whole prompt
  std::shared_ptr<const ClampedDistribution> output_tokens;
  FixedPrefixSpec prefix;
};

}  // namespace kvsim
