#include "sim/scenario/vllm_names.hpp"

#include <fmt/format.h>

#include <string_view>

namespace kvsim {
namespace {

// How one value converts on its way to the kvsim key. Most names carry the
// value unchanged; vLLM gives swap space as a bare number of GiB
// (EngineArgs.swap_space), and its kv_cache_dtype "auto" means "the model's
// own dtype", which is kvsim's default when the key is absent.
enum class Conversion { same, gib_when_bare, auto_means_default };

struct Rename {
  VllmName name;
  Conversion conversion;
};

const std::vector<Rename>& renames() {
  static const std::vector<Rename> table = {
      {{"gpu_memory_utilization", "kv_cache.memory_fraction", ""}, Conversion::same},
      {{"block_size", "kv_cache.block_size", ""}, Conversion::same},
      {{"enable_prefix_caching", "kv_cache.prefix_caching", ""}, Conversion::same},
      {{"kv_cache_dtype", "kv_cache.dtype", "auto: kvsim's default dtype"},
       Conversion::auto_means_default},
      {{"swap_space", "kv_cache.swap_space", "a bare number is GiB, as in vLLM"},
       Conversion::gib_when_bare},
      {{"preemption_mode", "kv_cache.preemption", ""}, Conversion::same},
      {{"tensor_parallel_size", "parallel.tensor", ""}, Conversion::same},
      {{"pipeline_parallel_size", "parallel.pipeline", ""}, Conversion::same},
      {{"max_num_seqs", "scheduler.max_num_seqs", ""}, Conversion::same},
      {{"max_num_batched_tokens", "scheduler.max_batched_tokens", ""}, Conversion::same},
      {{"enable_chunked_prefill", "scheduler.chunked_prefill", ""}, Conversion::same},
      {{"max_model_len", "scheduler.max_model_len", ""}, Conversion::same},
  };
  return table;
}

bool is_bare_number(const YAML::Node& value) {
  if (!value.IsScalar()) return false;
  const std::string& text = value.Scalar();
  if (text.empty()) return false;
  size_t used = 0;
  try {
    (void)std::stod(text, &used);
  } catch (const std::exception&) {
    return false;
  }
  return used == text.size();
}

// The map at `path`'s parent, created when absent; an undefined node when a
// non-map is in the way (the section's own reader reports that).
YAML::Node parent_map(YAML::Node& doc, std::string_view section) {
  YAML::Node node = doc[std::string(section)];
  if (!node.IsDefined() || node.IsNull()) {
    doc[std::string(section)] = YAML::Node(YAML::NodeType::Map);
    node.reset(doc[std::string(section)]);
  }
  return node;
}

}  // namespace

const std::vector<VllmName>& vllm_names() {
  static const std::vector<VllmName> names = [] {
    std::vector<VllmName> out;
    for (const auto& r : renames()) out.push_back(r.name);
    return out;
  }();
  return names;
}

void apply_vllm_names(YAML::Node& doc, const std::string& file, config::LoadContext& ctx) {
  if (!doc.IsMap()) return;
  const YAML::Node& view = doc;  // lookups that must not insert keys
  for (const auto& r : renames()) {
    const std::string& vllm = r.name.vllm;
    if (!view[vllm].IsDefined()) continue;
    YAML::Node value = doc[vllm];
    const config::Node located(value, vllm, file, &ctx);
    const size_t dot = r.name.kvsim.find('.');
    const std::string section = r.name.kvsim.substr(0, dot);
    const std::string key = r.name.kvsim.substr(dot + 1);
    const YAML::Node existing = view[section];
    const bool set_here = ctx.overridden_paths.count(vllm) > 0;
    if (set_here && ctx.overridden_paths.count(r.name.kvsim) > 0) {
      // Both names through --set: which one was meant is not for kvsim to
      // guess (and a run's --from could not replay it).
      located.error(fmt::format("is vLLM's name for {}, which --set also gives", r.name.kvsim),
                    fmt::format("one of --set {} or --set {}", vllm, r.name.kvsim));
      continue;
    }
    if (existing.IsDefined() && existing.IsMap() && existing[key].IsDefined()) {
      // A --set wins over the file, under either name; two names in one file
      // is ambiguous.
      if (!set_here && ctx.overridden_paths.count(r.name.kvsim)) {
        doc.remove(vllm);
        continue;
      }
      if (!set_here) {
        located.error(fmt::format("is vLLM's name for {}, which is also given", r.name.kvsim),
                      fmt::format("one of {} or {}", vllm, r.name.kvsim));
        continue;
      }
    }
    if (existing.IsDefined() && !existing.IsNull() && !existing.IsMap()) continue;
    // Convert in place: the node keeps its mark, so errors on it point at
    // the line the user wrote.
    if (r.conversion == Conversion::gib_when_bare && is_bare_number(value)) {
      value = value.Scalar() + "GiB";
    }
    const bool drop = r.conversion == Conversion::auto_means_default && value.IsScalar() &&
                      value.Scalar() == "auto";
    doc.remove(vllm);
    if (!drop) {
      YAML::Node target = parent_map(doc, section);
      target[key] = value;
    }
    if (set_here) {
      ctx.overridden_paths.insert(r.name.kvsim);
      ctx.set_as[r.name.kvsim] = vllm;
    }
  }
}

}  // namespace kvsim
