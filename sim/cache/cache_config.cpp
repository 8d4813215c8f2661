// Which field of CacheConfig each kv_cache key fills. The defaults are not
// here: they come from the declarations (one list, no copy that can drift).
#include "sim/cache/cache_config.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <utility>
#include <variant>

#include "sim/cache/policy_registry.hpp"

namespace kvsim {
namespace {

using Field =
    std::variant<std::string CacheConfig::*, int64_t CacheConfig::*, double CacheConfig::*,
                 bool CacheConfig::*, std::vector<int64_t> CacheConfig::*,
                 std::optional<Bytes> CacheConfig::*>;

const std::pair<const char*, Field> kFields[] = {
    {"policy", &CacheConfig::policy},
    {"dtype", &CacheConfig::dtype},
    {"kv_scale", &CacheConfig::kv_scale},
    {"memory_fraction", &CacheConfig::memory_fraction},
    {"block_size", &CacheConfig::block_size},
    {"prefix_caching", &CacheConfig::prefix_caching},
    {"layout", &CacheConfig::layout},
    {"preemption", &CacheConfig::preemption},
    {"swap_space", &CacheConfig::swap_space},
    {"activation_reserve", &CacheConfig::activation_reserve},
    {"eviction", &CacheConfig::eviction},
    {"ctx_size", &CacheConfig::ctx_size},
    {"ar_variants", &CacheConfig::ar_variants},
    {"update_threads", &CacheConfig::update_threads},
    {"pointer_shift_headroom", &CacheConfig::pointer_shift_headroom},
    {"update_mode", &CacheConfig::update_mode},
    {"window", &CacheConfig::window},
    {"type_k", &CacheConfig::type_k},
    {"type_v", &CacheConfig::type_v},
    {"v_trans", &CacheConfig::v_trans},
    {"n_keep", &CacheConfig::n_keep},
    {"n_discard", &CacheConfig::n_discard},
    {"defrag_thold", &CacheConfig::defrag_thold},
    {"n_gpu_layers", &CacheConfig::n_gpu_layers},
    {"main_pool_fraction", &CacheConfig::main_pool_fraction},
    {"chunk_pool_fraction", &CacheConfig::chunk_pool_fraction},
    {"virtual_pos_start", &CacheConfig::virtual_pos_start},
    {"max_chunks", &CacheConfig::max_chunks},
    {"max_chunk_tokens", &CacheConfig::max_chunk_tokens},
};

// The declared default of every kv_cache key: the shared keys, then each
// policy's (a key two policies share is one declaration, so one default).
const config::ParamValues& declared_defaults() {
  static const config::ParamValues defaults = [] {
    config::ParamValues v;
    std::vector<config::ComponentInfo> infos = cache_policy_infos();
    infos.insert(infos.begin(), kv_cache_section_info());
    for (const auto& info : infos)
      for (const auto& p : info.params)
        if (p.default_value && !v.has(p.key)) v.set(p.key, *p.default_value, false);
    return v;
  }();
  return defaults;
}

}  // namespace

CacheConfig::CacheConfig() {
  assign(declared_defaults());
}

const std::string& CacheConfig::text(std::string_view key) const {
  for (const auto& [name, f] : kFields)
    if (key == name && std::holds_alternative<std::string CacheConfig::*>(f))
      return this->*std::get<std::string CacheConfig::*>(f);
  throw std::logic_error(fmt::format("kv_cache key '{}' has no text field", key));
}

void CacheConfig::assign(const config::ParamValues& values) {
  for (const auto& [key, entry] : values.all()) {
    const config::ParamValue& value = entry.first;
    const Field* field = nullptr;
    for (const auto& [name, f] : kFields)
      if (key == name) field = &f;
    if (field == nullptr)
      throw std::logic_error(fmt::format("kv_cache key '{}' has no CacheConfig field", key));
    std::visit(
        [&](auto member) {
          using T = std::remove_reference_t<decltype(this->*member)>;
          if constexpr (std::is_same_v<T, std::optional<Bytes>>)
            this->*member = std::get<int64_t>(value);
          else
            this->*member = std::get<T>(value);
        },
        *field);
  }
}

}  // namespace kvsim
