#include "sim/scenario/scenario.hpp"
#include "base/source_paths.hpp"
#include "base/yaml_error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "devices/device_formats.hpp"
#include "models/model_resolve.hpp"
#include "models/pipeline_stages.hpp"
#include "sim/cache/tiers/connector_presets.hpp"
#include "sim/cluster/cluster_spec.hpp"
#include "sim/cluster/pool_presets.hpp"
#include "sim/policies/policy_registry.hpp"
#include "sim/scenario/config_ref.hpp"
#include "sim/scenario/data_parallel_layout.hpp"
#include "sim/scenario/engine_registry.hpp"
#include "sim/scenario/invalid_combination.hpp"
#include "sim/scenario/scenario_sections.hpp"
#include "sim/scenario/vllm_names.hpp"
#include "sim/serve/serving_engine_spec.hpp"
#include "sim/serve/speculative_spec.hpp"

namespace kvsim {
namespace fs = std::filesystem;
using config::Location;
using config::MapReader;
using config::Node;

std::string find_configs_dir(const std::string& scenario_path) {
  std::error_code ec;
  fs::path dir = fs::absolute(fs::path(scenario_path), ec).parent_path();
  while (!dir.empty()) {
    if (dir.filename() == "configs" && fs::is_directory(dir / "devices", ec) &&
        fs::is_directory(dir / "models", ec)) {
      return dir.string();
    }
    if (dir == dir.parent_path()) break;
    dir = dir.parent_path();
  }
  return KVSIM_CONFIG_DIR;
}

std::vector<std::string> list_config_names(const std::string& configs_dir,
                                           const std::string& kind) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(configs_dir) / kind, ec)) {
    const auto ext = e.path().extension();
    if (ext == ".yaml" || ext == ".json") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

namespace {

constexpr size_t kMaxAliasChain = 16;

// A `device:` or `model:` value: a name under configs/<kind>/, a path, or an
// inline map. Returns the node to parse (from whichever file it lives in).
std::optional<Node> resolve_ref(const Node& ref, const std::string& kind,
                                const std::string& configs_dir, config::LoadContext& ctx,
                                std::vector<YAML::Node>& keep_alive, bool* is_json,
                                std::string* weights = nullptr) {
  *is_json = false;
  if (!ref.defined()) {
    ref.error("is required but missing",
              fmt::format("a name from {}/{}, a path, or a map", configs_dir, kind));
    return std::nullopt;
  }
  if (ref.is_map()) return ref;
  const auto text = ref.as_string();
  if (!text) return std::nullopt;
  // The one lookup of names, files and Hugging Face folders
  // (sim/scenario/config_ref.hpp), paths beside the file that names them.
  const ConfigRef found = locate_config(*text, kind, configs_dir, ref.file());
  if (found.path.empty()) {
    ref.error(found.problem, found.allowed);
    return std::nullopt;
  }
  if (weights != nullptr) *weights = found.weights;
  const fs::path path(found.path);
  YAML::Node loaded = config::load_file(path.string(), ctx);
  if (!loaded.IsDefined()) return std::nullopt;
  keep_alive.push_back(loaded);
  *is_json = path.extension() == ".json";
  Node file_root(loaded, "", path.string(), &ctx);
  // A file of the form {alias: other-name, description: ...} stands for
  // another file of the same kind (ascend-910b is the 910B2).
  if (loaded.IsMap() && loaded["alias"]) {
    MapReader alias(file_root);
    const Node target = alias.child("alias");
    alias.string("description", "");
    alias.finish();
    if (!target.is_scalar() || target.raw().Scalar() == *text) {
      target.error("an alias must name another file", "alias: <name>");
      return std::nullopt;
    }
    // Each alias followed keeps its file here: a chain this long is a cycle
    // (a.yaml names b.yaml, which names a.yaml), not a recursion to the end
    // of the stack.
    if (keep_alive.size() > kMaxAliasChain) {
      target.error(fmt::format("more than {} aliases in a chain: the aliases name each other "
                               "in a cycle",
                               kMaxAliasChain),
                   "an alias that leads to a device or model file");
      return std::nullopt;
    }
    return resolve_ref(target, kind, configs_dir, ctx, keep_alive, is_json);
  }
  return file_root;
}

// A pipeline the model, the device and the engine can take.
void pipeline_checks(const ScenarioSpec& s, config::LoadContext& ctx) {
  auto at = [&](const std::string& key) { return ctx.location_of(key); };
  if (const std::string why = pipeline_problem(s.model, s.pp); !why.empty()) {
    ctx.diagnostics.error(at("parallel.pipeline"), "parallel.pipeline", why,
                          fmt::format("1..{} (the model's layers)", s.model.num_hidden_layers));
  } else if (const std::string bad = pipeline_problem(s.model, s.pp, s.pipeline_layers);
             !bad.empty()) {
    ctx.diagnostics.error(
        at("parallel.pipeline_layers"), "parallel.pipeline_layers", bad,
        fmt::format("{} positive layer counts adding up to {}", s.pp, s.model.num_hidden_layers));
  }
  if (s.pp > 1 && s.device.htp)
    ctx.diagnostics.error(
        at("parallel.pipeline"), "parallel.pipeline",
        fmt::format("{} runs a model on one NPU session, not in stages", s.device.name), "1");
  if (s.pp == 1 && s.micro_batches > 1)
    ctx.diagnostics.error(at("parallel.micro_batches"), "parallel.micro_batches",
                          fmt::format("{} micro-batches without a pipeline", s.micro_batches),
                          "1, or set parallel.pipeline above 1");
  if (s.pp > 1 && s.pipeline_network_link && s.device.network_link_bandwidth <= 0)
    ctx.diagnostics.error(
        at("parallel.pipeline"), "parallel.pipeline",
        fmt::format("{} x {} devices span nodes of {} but {} gives no network_link_bandwidth for "
                    "the activations between stages",
                    s.tp, s.pp, s.device.max_tensor_parallel, s.device.name),
        "parallel.pipeline_link: device, or a device file with network_link_bandwidth");
}

// Second pass: checks that need several values (DESIGN practice 5). Each
// problem points at the key the user most likely has to change.
void cross_checks(ScenarioSpec& s, const std::optional<std::string>& engine,
                  config::LoadContext& ctx) {
  // `sampled` on a paged pool follows its sequences in shadow slots of its
  // own, not the policy's block ids, so it has no ATB table to read through
  // (seed 000): a run that asks for both would check the Ksana view only.
  if (const BlockPoolContract* pool = s.policy().block_pool();
      pool != nullptr && s.numerics.mode == "sampled" && pool->layout() == "atb" &&
      pool->numerics() == ServingNumerics::block_tables)
    ctx.diagnostics.error(
        ctx.location_of("numerics.mode"), "numerics.mode",
        "sampled follows sequences in shadow slots of its own and cannot read "
        "through the ATB view that kv_cache.layout: atb asks for",
        "full (stores and reads through the kcache/vcache view), or layout ksana");
  if (!s.numerics.quality_checkpoint.empty() && s.policy().block_pool() == nullptr)
    ctx.diagnostics.error(
        ctx.location_of(s.numerics.quality_key_path), s.numerics.quality_key_path,
        fmt::format("measures the KV a serving block pool reuses; {} has none", s.policy().name()),
        "a block-pool policy (paged, chunk_lru, ...), or no reuse_quality");
  auto at = [&](const std::string& key) { return ctx.location_of(key); };
  const ModelSpec& m = s.model;
  if (const std::string why = m.tensor_parallel_problem(s.tp, s.ep); !why.empty()) {
    const bool expert = why.find("expert") != std::string::npos;
    ctx.diagnostics.error(at(expert ? "parallel.expert" : "parallel.tensor"),
                          expert ? "parallel.expert" : "parallel.tensor", why,
                          expert ? "1, or a multiple of parallel.tensor that divides the experts"
                                 : "a tensor-parallel size that divides the heads and the MLP");
  }
  // Data-parallel ranks spread their expert group over nodes; one
  // replica's group sits in one node.
  if (s.dp > 1) data_parallel_checks(s, ctx);
  if (s.dp == 1 && s.ep > s.device.max_tensor_parallel) {
    ctx.diagnostics.error(at("parallel.expert"), "parallel.expert",
                          fmt::format("{} ranks but {} groups at most {} devices", s.ep,
                                      s.device.name, s.device.max_tensor_parallel),
                          fmt::format("1..{}", s.device.max_tensor_parallel));
  }
  if (s.tp > s.device.max_tensor_parallel) {
    ctx.diagnostics.error(at("parallel.tensor"), "parallel.tensor",
                          fmt::format("{} ranks but {} groups at most {} devices", s.tp,
                                      s.device.name, s.device.max_tensor_parallel),
                          fmt::format("1..{}", s.device.max_tensor_parallel));
  }
  pipeline_checks(s, ctx);
  // fp8 / fp4 formats need the part's tensor cores (devices/device_formats.hpp).
  if (const std::string why = weights_format_problem(s.device, m.weights_dtype); !why.empty())
    ctx.diagnostics.error(at("model"), "model", why,
                          "16-bit or int8 weights on this part, or a device with the format");
  if (const std::string why = kv_format_problem(s.device, s.kv.dtype); !why.empty())
    ctx.diagnostics.error(at("kv_cache.dtype"), "kv_cache.dtype", why,
                          "fp16, bf16 or int8 on this part, or a device with matrix_fp8");
  if (s.kv.kv_scale == "per_tensor" && !s.kv.fp8()) {
    ctx.diagnostics.error(
        at("kv_cache.kv_scale"), "kv_cache.kv_scale",
        fmt::format("a per-tensor scale is for fp8 KV; dtype {} has none", s.kv.dtype),
        "dtype: fp8 | fp8_e4m3 | fp8_e5m2, or kv_scale: per_token");
  }
  if (s.numerics.on() && s.numerics.shadow_head_dim % 2 != 0) {
    ctx.diagnostics.error(at("numerics.shadow.head_dim"), "numerics.shadow.head_dim",
                          fmt::format("{} is odd: RoPE rotates pairs", s.numerics.shadow_head_dim),
                          "an even number");
  }
  // The engine, then what the policy and the engine check of the rest.
  s.engine = resolve_engine(s, engine, ctx);
  const EngineKind* kind = find_engine(s.engine);
  // The policy checks itself under its engine's contract, or (no engine
  // takes the scenario) under the first contract it offers, so its own
  // errors come with the engine's.
  s.policy().check(s,
                   kind != nullptr                          ? kind->contract
                   : s.policy().device_buffers() != nullptr ? EngineContract::device_buffers
                                                            : EngineContract::block_pool,
                   ctx);
  if (kind == nullptr) return;
  if (s.speculative.on && s.engine != "serving")
    ctx.diagnostics.error(at("speculative"), "speculative",
                          fmt::format("the {} engine runs no speculative section (a dialog's "
                                      "drafts are workload.speculative)",
                                      s.engine),
                          "engine: serving, or no speculative section");
  if (s.speculative.holds_device_memory()) {
    if (const std::string why = s.speculative.drafter->model.tensor_parallel_problem(s.tp, s.ep);
        !why.empty())
      ctx.diagnostics.error(at("speculative.model"), "speculative.model",
                            fmt::format("the drafter runs at the target's layout: {}", why),
                            "a drafter whose heads and MLP divide by parallel.tensor");
  }
  if (!s.kv_tiers.empty()) {
    const BlockPoolContract* pool = s.policy().block_pool();
    if (pool == nullptr || !pool->keeps_prefix_blocks())
      ctx.diagnostics.error(at("kv_tiers"), "kv_tiers",
                            fmt::format("tiers hold prefix-cached blocks; kv_cache.policy '{}' "
                                        "keeps none",
                                        s.policy().display_name()),
                            "kv_cache: {policy: paged, prefix_caching: true}");
    else
      check_tier_store_costs(s.kv_tiers.tiers, s.pool_sizing().instance_block_bytes, ctx);
    // A tier reached through host DRAM crosses the host link: the dram
    // tier's, or the device file's when there is no dram tier.
    bool dram = false;
    for (const KvTierParams& t : s.kv_tiers.tiers) dram = dram || t.name == "dram";
    for (const KvTierParams& t : s.kv_tiers.tiers) {
      if (!t.via_host || dram || s.device.host_link_bandwidth > 0) continue;
      const std::string key = t.key_path + ".via_host";
      ctx.diagnostics.error(
          ctx.location_of(key), key,
          fmt::format("device '{}' defines no host link to go through", s.device.name),
          "a dram tier, or host_link_bandwidth in the device file");
    }
  }
  kind->checks(s, ctx);
}

ScenarioSpec parse_scenario(const Node& root, const std::string& configs_dir,
                            config::LoadContext& ctx) {
  ScenarioSpec s;
  s.file = root.file();
  s.configs_dir = configs_dir;
  std::vector<YAML::Node> keep_alive;
  MapReader top(root);
  const std::string stem = root.file().empty() ? "scenario" : fs::path(root.file()).stem().string();
  s.name = top.string("name", stem);
  s.description = top.string("description", "");
  s.seed = static_cast<uint64_t>(top.integer("seed", 42, 0, INT64_MAX));

  bool is_json = false;
  if (auto dev =
          resolve_ref(top.child("device"), "devices", configs_dir, ctx, keep_alive, &is_json)) {
    s.device = parse_device(*dev);
    // The host CPU a device file names (`host`): llama.cpp runs there what
    // the device's backend does not (sim/cache/llama_backend.hpp).
    if (!s.device.host_cpu.empty()) {
      const Node at = dev->child_at("host");
      bool host_json = false;
      if (auto h = resolve_ref(at, "devices", configs_dir, ctx, keep_alive, &host_json)) {
        DeviceSpec host = parse_device(*h);
        if (ctx.diagnostics.empty() && host.kind != "cpu")
          at.error(fmt::format("'{}' is a device of kind {}, not a host CPU", host.name, host.kind),
                   "a device file of kind cpu");
        else
          s.device.host = std::make_shared<const DeviceSpec>(std::move(host));
      }
    }
  }
  std::string weights;
  std::string pipeline_link = "auto";
  if (auto model = resolve_ref(top.child("model"), "models", configs_dir, ctx, keep_alive, &is_json,
                               &weights)) {
    s.model = parse_model(*model, is_json);
    if (!weights.empty())
      s.model = with_weights_format(s.model, weights, top.child("model").raw().Scalar());
  }
  {
    MapReader p(top.child("parallel"));
    const bool tensor_given = p.has("tensor");
    s.tp = p.integer("tensor", 1, 1, 64);
    // Data-parallel attention (vLLM's data_parallel_size): `data` ranks of
    // `tensor` devices each (sim/scenario/data_parallel_layout.cpp).
    s.dp = p.integer("data", 1, 1, 1024);
    // Expert parallelism (vLLM's enable_expert_parallel: the expert group
    // spans tensor x data-parallel ranks): whole experts split over `expert`
    // ranks, a multiple of `tensor`.
    const bool expert_given = p.has("expert");
    s.ep = p.integer("expert", 1, 1, 1024);
    std::optional<int64_t> devices;
    if (p.has("devices"))
      devices = p.integer("devices", std::nullopt, 1, 1 << 20);
    else
      p.ignore({"devices"});
    s.expert_skew = p.number("expert_skew", 0.0, 0.0, 4.0);
    // Pipeline parallelism (vLLM's pipeline_parallel_size): consecutive
    // layers per stage, micro-batches in flight (vLLM keeps one per stage).
    s.pp = p.integer("pipeline", 1, 1, 256);
    s.micro_batches = p.integer("micro_batches", s.pp, 1, 256);
    pipeline_link = p.choice("pipeline_link", "auto", {"auto", "device", "network"});
    // Layers per stage, as vLLM's VLLM_PP_LAYER_PARTITION: [32, 29].
    if (const Node layers = p.child("pipeline_layers"); layers.defined()) {
      for (const Node& n : layers.items())
        if (auto v = n.as_int(1, 100000)) s.pipeline_layers.push_back(*v);
    }
    p.finish();
    read_data_parallel_layout(s, devices, tensor_given, expert_given, ctx);
  }
  s.kv = read_kv_cache_section(top);
  read_kv_tiers_section(top, s.kv_tiers);
  s.scheduler = read_scheduler_section(top);
  s.speculative =
      read_speculative_section(top, s.model, [&](const Node& ref) -> std::optional<ModelSpec> {
        bool draft_json = false;
        std::string draft_weights;
        const auto found =
            resolve_ref(ref, "models", configs_dir, ctx, keep_alive, &draft_json, &draft_weights);
        if (!found) return std::nullopt;
        ModelSpec m = parse_model(*found, draft_json);
        if (!draft_weights.empty()) m = with_weights_format(m, draft_weights, ref.raw().Scalar());
        return m;
      });
  std::optional<std::string> engine;
  if (top.has("engine"))
    engine = top.choice("engine", std::nullopt, engine_names());
  else
    top.ignore({"engine"});
  s.workload = parse_workload(top.child("workload"));
  {
    MapReader n(top.child("numerics"));
    s.numerics.mode = n.choice("mode", "off", {"off", "sampled", "full"});
    s.numerics.sample_every = n.integer("sample_every", 16, 1, 1000000);
    s.numerics.tolerance = n.number("tolerance", 1e-4, 1e-9, 10.0);
    {
      MapReader sh(n.child("shadow"));
      s.numerics.shadow_layers = sh.integer("layers", 2, 1, 1024);
      s.numerics.shadow_heads = sh.integer("heads", 2, 1, 1024);
      s.numerics.shadow_head_dim = sh.integer("head_dim", 16, 2, 1024);
      sh.finish();
    }
    read_reuse_quality_section(n.child("reuse_quality"), s.numerics);
    n.finish();
  }
  {
    MapReader o(top.child("output"));
    s.output.timeline_interval = o.duration("timeline_interval", 100 * kNsPerMs, 1, 3600 * kNsPerS);
    o.finish();
  }
  {
    // Goodput (vLLM's benchmark --goodput): a completed request counts when
    // it meets every target given; none given, every completed request does.
    MapReader r(top.child("slo"));
    auto target = [&](const char* key) -> std::optional<double> {
      if (!r.has(key)) {
        r.ignore({key});
        return std::nullopt;
      }
      return r.number(key, std::nullopt, 1e-6, 1e9);
    };
    s.slo.ttft_ms = target("ttft_ms");
    s.slo.tpot_ms = target("tpot_ms");
    s.slo.e2e_ms = target("e2e_ms");
    r.finish();
  }
  s.htp = read_htp_config(top.child("htp"));
  read_expect_section(top, s);
  // The stages sit in one node (device link, HCCS) when all tp x pp devices
  // fit one, else on several nodes (the network link, RoCE).
  s.pipeline_network_link = pipeline_link == "network" ||
                            (pipeline_link == "auto" && s.tp * s.pp > s.device.max_tensor_parallel);
  const Node cluster = top.child("cluster");
  top.finish();
  // The probe reports one instance's reuse; a cluster's metrics merge its
  // instances' and would drop it.
  if (cluster.defined() && !s.numerics.quality_key_path.empty())
    ctx.diagnostics.error(ctx.location_of(s.numerics.quality_key_path), s.numerics.quality_key_path,
                          "measures one serving instance; a cluster run does not report it",
                          "no cluster: section, or no numerics.reuse_quality");
  // Cross-field checks only make sense on values that parsed; what they
  // find is a combination of valid values (sim/scenario/invalid_combination.hpp).
  ctx.diagnostics.throw_if_any();
  cross_checks(s, engine, ctx);
  try {
    ctx.diagnostics.throw_if_any();
  } catch (const config::ConfigError& e) {
    throw InvalidCombination(e.diagnostics());
  }
  if (cluster.defined()) {
    // Each instance group is the file itself with the group's sections laid
    // over it, read and checked as a scenario of its own.
    s.cluster = read_cluster_section(
        cluster, root.raw(),
        [&](const YAML::Node& doc) -> InstanceSpec {
          return parse_scenario(Node(doc, "", root.file(), &ctx), configs_dir, ctx);
        },
        [](const InstanceSpec& group) -> std::string {
          const EngineKind& kind = engine_for(group);
          return kind.routable ? "" : fmt::format("the {} engine runs one user", kind.name);
        },
        ctx);
  }
  return s;
}

// `--set kv_cache.policy=NEW` (a compare's `--vary`) keeps the old policy's
// own keys as that policy's settings (rehome_policy_keys), before any
// override is applied.
void rehome_for_overrides(YAML::Node& doc, const std::vector<std::string>& overrides,
                          const std::string& file, config::LoadContext& ctx) {
  std::optional<std::string> policy;
  std::vector<std::string> paths;
  for (const std::string& o : overrides) {
    const size_t eq = o.find('=');
    if (eq == std::string::npos) continue;
    auto trimmed = [](std::string t) {
      const size_t b = t.find_first_not_of(" \t");
      const size_t e = t.find_last_not_of(" \t");
      return b == std::string::npos ? std::string() : t.substr(b, e - b + 1);
    };
    paths.push_back(trimmed(o.substr(0, eq)));
    if (paths.back() == "kv_cache.policy") policy = trimmed(o.substr(eq + 1));
  }
  if (policy) rehome_policy_keys(doc, *policy, file, ctx, paths);
}

}  // namespace

void apply_presets(YAML::Node& doc, const std::string& file, config::LoadContext& ctx) {
  apply_connector_preset(doc, file, ctx);
  apply_pool_preset(doc, file, ctx);
  // A cluster group's own kv_tiers may name a connector too: expanded in
  // the group's node, as the file's, before the group's sections are laid
  // over the file's (its tiers then replace the file's).
  if (!doc.IsMap()) return;
  const YAML::Node& cdoc = doc;
  if (!cdoc["cluster"] || !cdoc["cluster"].IsMap() || !cdoc["cluster"]["groups"]) return;
  YAML::Node groups = doc["cluster"]["groups"];
  if (groups.IsMap()) {
    for (auto it = groups.begin(); it != groups.end(); ++it) {
      YAML::Node group = it->second;
      apply_connector_preset(group, file, ctx,
                             "cluster.groups." + it->first.Scalar() + ".kv_tiers");
    }
  } else if (groups.IsSequence()) {
    for (size_t i = 0; i < groups.size(); ++i) {
      YAML::Node group = groups[i];
      apply_connector_preset(group, file, ctx, fmt::format("cluster.groups[{}].kv_tiers", i));
    }
  }
}

void apply_overrides(YAML::Node& doc, const std::vector<std::string>& overrides,
                     const std::string& file, config::LoadContext& ctx) {
  rehome_for_overrides(doc, overrides, file, ctx);
  for (const auto& o : overrides) config::apply_override(doc, o, ctx);
}

ScenarioSpec load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  config::LoadContext ctx;
  YAML::Node doc = config::load_file(path, ctx);
  ctx.diagnostics.throw_if_any();
  apply_overrides(doc, overrides, path, ctx);
  apply_presets(doc, path, ctx);
  apply_vllm_names(doc, path, ctx);
  ctx.diagnostics.throw_if_any();
  return parse_scenario(Node(doc, "", path, &ctx), find_configs_dir(path), ctx);
}

ScenarioSpec load_scenario_text(const std::string& yaml_text, const std::string& file,
                                const std::string& configs_dir,
                                const std::vector<std::string>& overrides) {
  config::LoadContext ctx;
  YAML::Node doc;
  try {
    doc = YAML::Load(yaml_text);
    config::check_duplicate_keys(doc, file, ctx);
  } catch (const YAML::Exception& e) {
    ctx.diagnostics.error({file, e.mark.line + 1, e.mark.column + 1}, "",
                          "invalid YAML: " + config::yaml_error_text(e));
  }
  if (ctx.diagnostics.empty()) {
    apply_overrides(doc, overrides, file, ctx);
    apply_presets(doc, file, ctx);
    apply_vllm_names(doc, file, ctx);
  }
  ctx.diagnostics.throw_if_any();
  return parse_scenario(Node(doc, "", file, &ctx), configs_dir, ctx);
}

void validate_file(const std::string& path) {
  config::LoadContext ctx;
  YAML::Node doc = config::load_file(path, ctx);
  ctx.diagnostics.throw_if_any();
  const std::string parent = fs::path(path).parent_path().filename().string();
  Node root(doc, "", path, &ctx);
  if (doc.IsMap() && doc["alias"] && (parent == "devices" || parent == "models")) {
    bool is_json = false;
    std::vector<YAML::Node> keep_alive;
    Node ref(YAML::Node(fs::path(path).filename().string()), "", path, &ctx);
    if (auto target = resolve_ref(ref, parent, fs::path(path).parent_path().parent_path().string(),
                                  ctx, keep_alive, &is_json)) {
      if (parent == "devices")
        parse_device(*target);
      else
        parse_model(*target, is_json);
    }
    ctx.diagnostics.throw_if_any();
    return;
  }
  if (parent == "devices" || (doc.IsMap() && doc["kind"] && !doc["workload"])) {
    parse_device(root);
  } else if (parent == "models" || (doc.IsMap() && doc["hidden_size"])) {
    parse_model(root, fs::path(path).extension() == ".json");
  } else {
    apply_presets(doc, path, ctx);
    apply_vllm_names(doc, path, ctx);
    (void)parse_scenario(Node(doc, "", path, &ctx), find_configs_dir(path), ctx);
  }
  ctx.diagnostics.throw_if_any();
}

}  // namespace kvsim
