#include "sim/policies/policy_registry.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace kvsim {

// Each policy's entry, defined in its own file (sim/policies/<name>_spec.cpp).
PolicyEntry chunk_lru_policy_entry();
PolicyEntry llama_cells_policy_entry();
PolicyEntry native_kv_policy_entry();
PolicyEntry paged_policy_entry();
PolicyEntry pointer_shift_policy_entry();
PolicyEntry shift_concat_policy_entry();
PolicyEntry sliding_window_policy_entry();
PolicyEntry smart_mask_policy_entry();

const std::vector<PolicyEntry>& policy_entries() {
  static const std::vector<PolicyEntry> t = [] {
    std::vector<PolicyEntry> entries = {
        chunk_lru_policy_entry(),      llama_cells_policy_entry(),   native_kv_policy_entry(),
        paged_policy_entry(),          pointer_shift_policy_entry(), shift_concat_policy_entry(),
        sliding_window_policy_entry(), smart_mask_policy_entry(),
    };
    std::sort(entries.begin(), entries.end(),
              [](const PolicyEntry& a, const PolicyEntry& b) { return a.info.name < b.info.name; });
    return entries;
  }();
  return t;
}

const PolicyEntry* find_policy(std::string_view name) {
  for (const PolicyEntry& e : policy_entries())
    if (e.info.name == name) return &e;
  return nullptr;
}

std::vector<std::string> cache_policy_names() {
  std::vector<std::string> names;
  for (const PolicyEntry& e : policy_entries()) names.push_back(e.info.name);
  return names;
}

std::vector<config::ComponentInfo> cache_policy_infos() {
  std::vector<config::ComponentInfo> infos;
  for (const PolicyEntry& e : policy_entries()) infos.push_back(e.info);
  return infos;
}

config::ComponentInfo policy_keys(const PolicyEntry& entry, std::string_view base) {
  if (entry.base_key.empty()) return entry.info;
  const PolicyEntry* b = find_policy(base);
  return b != nullptr && b != &entry ? config::compose_infos(entry.info, b->info) : entry.info;
}

namespace {

// Every key a policy may read: its own plus those of every base it can
// wrap, so that a key is attributed to each policy that could take it.
config::ComponentInfo all_keys(const PolicyEntry& entry) {
  config::ComponentInfo keys = entry.info;
  if (const config::ParamSpec* base = entry.info.find(entry.base_key))
    for (const auto& name : base->choices)
      if (const PolicyEntry* b = find_policy(name)) keys = config::compose_infos(keys, b->info);
  return keys;
}

std::vector<config::ComponentInfo> key_owners() {
  std::vector<config::ComponentInfo> owners;
  for (const PolicyEntry& e : policy_entries()) owners.push_back(all_keys(e));
  return owners;
}

// The base a wrapper's values name (its declared default when unset).
std::string base_of(const PolicyEntry& entry, const config::ParamValues& v) {
  if (entry.base_key.empty()) return "";
  if (v.has(entry.base_key)) return v.string(entry.base_key);
  return entry.info.default_of<std::string>(entry.base_key);
}

// Reads one policy's keys from a map: its own, then (a wrapper) those of
// the base `base` names (by default the one its own named). Declares them
// on the reader.
config::ParamValues read_policy_keys(config::MapReader& r, const PolicyEntry& entry,
                                     config::ComponentInfo* keys_out,
                                     const std::string* base_given = nullptr) {
  config::ParamValues v = config::read_params(r, entry.info);
  *keys_out = entry.info;
  const std::string base = base_given != nullptr ? *base_given : base_of(entry, v);
  if (const PolicyEntry* b = base.empty() ? nullptr : find_policy(base); b != nullptr) {
    const config::ParamValues bv = config::read_params(r, b->info);
    for (const auto& [key, value] : bv.all())
      if (!v.has(key)) v.set(key, value.first, value.second);
    *keys_out = policy_keys(entry, base);
  }
  return v;
}

std::vector<std::string> section_keys() {
  std::vector<std::string> keys;
  for (const auto& p : kv_cache_section_info(cache_policy_names()).params) keys.push_back(p.key);
  return keys;
}

std::shared_ptr<PolicySpec> make_or_report(const PolicyEntry& entry, const PolicyValues& v,
                                           const config::Node& where) {
  try {
    return entry.make(v);
  } catch (const std::invalid_argument& e) {
    where.error(e.what());
    return nullptr;
  }
}

void record_paths(const config::ParamValues& v, const std::string& prefix,
                  std::map<std::string, std::string, std::less<>>& paths) {
  for (const auto& [key, value] : v.all())
    if (value.second) paths[key] = prefix + "." + key;
}

}  // namespace

std::shared_ptr<const PolicySpec> make_policy_spec(std::string_view name,
                                                   const config::ParamValues& values) {
  const PolicyEntry* entry = find_policy(name);
  if (entry == nullptr)
    throw std::invalid_argument(fmt::format("no cache policy named '{}' (there are: {})", name,
                                            fmt::join(cache_policy_names(), ", ")));
  PolicyValues v;
  v.values = values;
  const config::ComponentInfo keys = policy_keys(*entry, base_of(*entry, values));
  for (const auto& p : keys.params)
    if (!v.values.has(p.key) && p.default_value) v.values.set(p.key, *p.default_value, false);
  try {
    return entry->make(v);
  } catch (const std::bad_variant_access&) {
    throw std::invalid_argument(fmt::format("policy '{}': a value of the wrong type", name));
  }
}

KvCacheSpec read_kv_cache_section(config::MapReader& top) {
  config::MapReader r(top.child("kv_cache"));
  const std::vector<std::string> names = cache_policy_names();
  const config::ComponentInfo shared = kv_cache_section_info(names);
  KvCacheSpec spec;
  const config::Node policy_node = r.node().child_at("policy");
  // A policy name that is not registered: only its error counts, the keys
  // that would have belonged are not judged.
  const bool known =
      !policy_node.defined() || !policy_node.is_scalar() ||
      std::find(names.begin(), names.end(), policy_node.raw().Scalar()) != names.end();
  const config::ParamValues sv = config::read_params(r, shared);
  spec.dtype = sv.string("dtype");
  spec.kv_scale = sv.string("kv_scale");
  spec.memory_fraction = sv.number("memory_fraction");
  const std::string active = sv.string("policy");

  // Every policy's own map, read by its owner whether it runs or not.
  std::map<std::string, std::pair<config::ParamValues, config::Node>> maps;
  for (const PolicyEntry& entry : policy_entries()) {
    const config::Node sub = r.child(entry.info.name);
    if (!sub.defined()) continue;
    config::MapReader sr(sub);
    config::ComponentInfo keys;
    config::ParamValues v = read_policy_keys(sr, entry, &keys);
    config::report_foreign_keys(sr, keys, key_owners());
    sr.finish();
    maps.emplace(entry.info.name, std::make_pair(std::move(v), sub));
  }
  if (!known) {
    for (const auto& info : key_owners())
      for (const auto& p : info.params) r.declare(p.key);
    r.finish();
    return spec;
  }

  // The running policy: its keys beside the shared ones, or in its map. A
  // wrapper's base is the one named beside the shared keys, else in its map.
  const PolicyEntry& entry = *find_policy(active);
  const auto own = maps.find(active);
  std::string base;
  if (!entry.base_key.empty()) {
    const config::Node flat_base = r.node().child_at(entry.base_key);
    if (flat_base.defined() && flat_base.is_scalar())
      base = flat_base.raw().Scalar();
    else if (own != maps.end())
      base = base_of(entry, own->second.first);
    else
      base = entry.info.default_of<std::string>(entry.base_key);
  }
  config::ComponentInfo keys;
  PolicyValues values;
  values.values = read_policy_keys(r, entry, &keys, entry.base_key.empty() ? nullptr : &base);
  record_paths(values.values, "kv_cache", values.paths);
  if (own != maps.end()) {
    for (const auto& [key, value] : own->second.first.all()) {
      if (!value.second) continue;
      if (values.values.given(key)) {
        r.node().child_at(key).error(
            fmt::format("given twice: here and in kv_cache.{}.{}", active, key),
            fmt::format("one of kv_cache.{} and kv_cache.{}.{}", key, active, key));
        continue;
      }
      values.values.set(key, value.first, true);
      values.paths[key] = fmt::format("kv_cache.{}.{}", active, key);
    }
  }
  config::report_foreign_keys(r, keys, key_owners(), section_keys());
  r.finish();
  spec.active = make_or_report(entry, values, policy_node.defined() ? policy_node : r.node());
  if (!spec.active) spec.active = make_policy_spec("paged");  // errors are reported already

  // The others, made so their values are whole; they run only when a
  // variant picks them.
  for (const auto& [name, read] : maps) {
    if (name == active) continue;
    PolicyValues v;
    v.values = read.first;
    record_paths(v.values, "kv_cache." + name, v.paths);
    if (auto carried = make_or_report(*find_policy(name), v, read.second))
      spec.carried.push_back(std::move(carried));
  }
  return spec;
}

bool rehome_policy_keys(YAML::Node& doc, const std::string& new_policy, const std::string& file,
                        config::LoadContext& ctx, const std::vector<std::string>& kept) {
  if (!doc.IsMap() || !doc["kv_cache"] || !doc["kv_cache"].IsMap()) return true;
  YAML::Node kv = doc["kv_cache"];
  const config::ComponentInfo shared = kv_cache_section_info(cache_policy_names());
  std::string old = shared.default_of<std::string>("policy");
  if (kv["policy"] && kv["policy"].IsScalar()) old = kv["policy"].Scalar();
  const PolicyEntry* from = find_policy(old);
  const PolicyEntry* to = find_policy(new_policy);
  if (from == nullptr || to == nullptr || from == to) return true;
  std::string base;
  if (!from->base_key.empty())
    base = kv[from->base_key] && kv[from->base_key].IsScalar()
               ? kv[from->base_key].Scalar()
               : from->info.default_of<std::string>(from->base_key);
  const config::ComponentInfo old_keys = policy_keys(*from, base);
  const config::ComponentInfo new_keys = all_keys(*to);
  std::vector<std::string> moving;
  for (auto it = kv.begin(); it != kv.end(); ++it) {
    const std::string key = it->first.Scalar();
    // A key the command line sets or removes itself stays where it writes it.
    if (std::find(kept.begin(), kept.end(), "kv_cache." + key) != kept.end()) continue;
    if (old_keys.find(key) != nullptr && new_keys.find(key) == nullptr) moving.push_back(key);
  }
  if (moving.empty()) return true;
  YAML::Node own = kv[old];
  if (own && !own.IsMap()) return true;  // its own error, when read
  if (!own) own = YAML::Node(YAML::NodeType::Map);
  bool ok = true;
  for (const std::string& key : moving) {
    if (own[key]) {
      const YAML::Mark m = kv[key].Mark();
      ctx.diagnostics.error({file, m.line + 1, m.column + 1}, "kv_cache." + key,
                            fmt::format("given twice: here and in kv_cache.{}.{}", old, key),
                            fmt::format("one of kv_cache.{} and kv_cache.{}.{}", key, old, key));
      ok = false;
      continue;
    }
    own[key] = kv[key];
    kv.remove(key);
  }
  kv[old] = own;
  return ok;
}

}  // namespace kvsim
