#pragma once
// `expect:` blocks (SPEC 4): bounds a run's metrics must meet. A failed
// expectation makes `kvsim run` exit 1 with one line per failure.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "sim/scenario/scenario.hpp"

namespace kvsim {

// One line per failed expectation ("FILE:LINE:COL: expect.KEY: value V is above max M").
std::vector<std::string> check_expectations(const std::vector<Expectation>& expect,
                                            const nlohmann::ordered_json& metrics);

}  // namespace kvsim
