#pragma once
// Shared by the workload tests: parse a `workload:` map that must be valid.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "workloads/workload.hpp"

namespace kvsim::testing {

inline std::shared_ptr<const WorkloadSpec> parse_ok(const std::string& yaml) {
  config::LoadContext ctx;
  auto spec = parse_workload(config::Node(YAML::Load(yaml), "workload", "test.yaml", &ctx));
  for (const auto& diag : ctx.diagnostics.all()) ADD_FAILURE() << diag.format();
  if (!spec) throw std::runtime_error("workload did not parse:\n" + yaml);
  return spec;
}

}  // namespace kvsim::testing
