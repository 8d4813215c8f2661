#include "sim/spec/kv_cache_spec.hpp"

#include <stdexcept>

#include "models/model_spec.hpp"

namespace kvsim {

const PolicySpec& KvCacheSpec::policy() const {
  if (!active) throw std::logic_error("kv_cache: no policy (the scenario reader sets one)");
  return *active;
}

Bytes KvCacheSpec::dtype_bytes() const {
  return kv_dtype_bytes(dtype);
}

config::ComponentInfo kv_cache_section_info(const std::vector<std::string>& policy_names) {
  using namespace config;
  return {
      "section",
      "kv_cache",
      "keys every policy shares; a policy's own keys go beside them for the policy that runs, or "
      "in a map under the policy's name for any policy",
      {choice_param("policy", std::string("paged"), policy_names,
                    "the cache policy; its own keys follow in its table"),
       choice_param("dtype", std::string("fp16"), kKvDtypeNames,
                    "element type of the cached K and V (fp8 = fp8_e4m3; fp8 rows carry one "
                    "scale per token and head); vLLM's top-level kv_cache_dtype is the same key"),
       choice_param("kv_scale", std::string("per_token"), {"per_token", "per_tensor"},
                    "fp8 KV scales: one per token and head (the row's amax), or one per layer's "
                    "K and V (a calibrated amax, vLLM's k_scale / v_scale); fp8 dtypes only"),
       number_param("memory_fraction", 0.9, 0.01, 1.0, "fraction of device memory",
                    "memory the engine may use: weights, activations, KV (chunk_lru: see "
                    "main_pool_fraction)")}};
}

}  // namespace kvsim
