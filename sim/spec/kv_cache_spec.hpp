#pragma once
// The `kv_cache:` section as the scenario tree holds it: the knobs every
// policy shares, declared once by the section (policy, dtype, kv_scale,
// memory_fraction), the policy that runs, and every other policy whose
// settings the scenario carries in its own map (`kv_cache: {policy: paged,
// chunk_lru: {chunk_pool_fraction: 0.03}}`), each read and validated by its
// owner so that `--vary kv_cache.policy=...` can pick any of them
// (docs/yaml.md, "Several policies in one scenario").
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/params.hpp"
#include "base/units.hpp"
#include "sim/spec/policy_spec.hpp"

namespace kvsim {

struct KvCacheSpec {
  std::string dtype = "fp16";
  std::string kv_scale = "per_token";  // fp8 rows: per_token | per_tensor
  double memory_fraction = 0.9;
  // The policy that runs (never null once a scenario is read).
  std::shared_ptr<const PolicySpec> active;
  // Other policies the scenario has settings for, read but not run.
  std::vector<std::shared_ptr<const PolicySpec>> carried;

  // The running policy; std::logic_error before a scenario set one.
  const PolicySpec& policy() const;
  Bytes dtype_bytes() const;
  bool fp8() const { return dtype.rfind("fp8", 0) == 0; }
};

// The section's own keys (policy, dtype, kv_scale, memory_fraction); each
// policy's keys are in its own table (sim/policies/).
config::ComponentInfo kv_cache_section_info(const std::vector<std::string>& policy_names);

}  // namespace kvsim
