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
      // The whole section: its keys (method, num_speculative_tokens, model)
      // are vLLM's own names; kvsim adds `acceptance`.
      {{"speculative_config", "speculative",
        "the whole section; method, num_speculative_tokens "
        "and model keep vLLM's names"},
       Conversion::same},
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

// Every leaf of `map` (at `path`) was written by --set.
bool all_leaves_set(const YAML::Node& map, const std::string& path,
                    const config::LoadContext& ctx) {
  for (const auto& kv : map) {
    const std::string key = path + "." + kv.first.as<std::string>();
    if (kv.second.IsMap()) {
      if (!all_leaves_set(kv.second, key, ctx)) return false;
    } else if (ctx.overridden_paths.count(key) == 0) {
      return false;
    }
  }
  return true;
}

// The keys of `from` that `into` lacks, copied in (maps merged key by key).
void merge_missing(YAML::Node into, const YAML::Node& from) {
  for (const auto& kv : from) {
    const std::string key = kv.first.as<std::string>();
    YAML::Node there = into[key];
    if (!there.IsDefined() || there.IsNull())
      into[key] = kv.second;
    else if (there.IsMap() && kv.second.IsMap())
      merge_missing(there, kv.second);
  }
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
    if (dot == std::string::npos) {
      // A section under vLLM's name: moved whole, keys and marks kept.
      const std::string& section = r.name.kvsim;
      if (view[section].IsDefined()) {
        // Only --set under kvsim's name may add to it (a compare's --vary
        // speculative.num_speculative_tokens on a file that says
        // speculative_config): the --set keys win, the file's fill the rest.
        YAML::Node given = doc[section];
        if (!given.IsMap() || !value.IsMap() || !all_leaves_set(given, section, ctx)) {
          located.error(fmt::format("is vLLM's name for {}, which is also given", section),
                        fmt::format("one of {} or {}", vllm, section));
          continue;
        }
        merge_missing(given, value);
        doc.remove(vllm);
        continue;
      }
      doc.remove(vllm);
      doc[section] = value;
      continue;
    }
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
