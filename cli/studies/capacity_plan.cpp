#include "cli/studies/capacity_plan.hpp"

#include "models/drafter_shape.hpp"

#include <fmt/format.h>

#include <yaml-cpp/yaml.h>
#include <optional>

#include <algorithm>
#include <filesystem>

#include "base/checked_math.hpp"
#include "base/diagnostics.hpp"
#include "cli/studies/capacity_genie.hpp"
#include "kernels/ggml_kv_type.hpp"
#include "models/model_resolve.hpp"
#include "models/pipeline_stages.hpp"
#include "reports/html_page.hpp"
#include "reports/input_error.hpp"
#include "sim/cache/pool_sizing.hpp"
#include "sim/policies/policy_registry.hpp"
#include "sim/scenario/config_ref.hpp"
#include "sim/scenario/scenario.hpp"

namespace kvsim {
namespace fs = std::filesystem;
namespace {

// Longest --context: 2^40 tokens, a thousand times any model's window, so
// block counts and byte products stay far inside int64.
constexpr int64_t kMaxContextTokens = int64_t{1} << 40;

[[noreturn]] void flag_error(const std::string& flag, const std::string& problem,
                             const std::string& allowed) {
  throw_input_error(flag, flag.substr(2), problem, allowed);
}

// The file a --device or --model names (the lookup scenarios use,
// sim/scenario/config_ref.hpp), following {alias: other} files.
ConfigRef resolve_path(const std::string& name, const std::string& configs_dir,
                       const std::string& kind, const std::string& flag, int depth = 0) {
  ConfigRef ref = locate_config(name, kind, configs_dir);
  if (ref.path.empty()) flag_error(flag, ref.problem, ref.allowed);
  if (fs::path(ref.path).extension() == ".yaml" && depth < 4) {
    try {
      const YAML::Node doc = YAML::LoadFile(ref.path);
      if (doc.IsMap() && doc["alias"] && doc["alias"].IsScalar()) {
        ConfigRef target = resolve_path(doc["alias"].Scalar(), configs_dir, kind, flag, depth + 1);
        if (target.weights.empty()) target.weights = ref.weights;
        return target;
      }
    } catch (const YAML::Exception&) {
      // Parsed again below, where the error gets its file, line and column.
    }
  }
  return ref;
}

// Why tp x ep x pp cannot hold `model` on `device` (the flag to change, what
// is wrong, what is allowed), or nothing when it can.
struct LayoutProblem {
  std::string flag, problem, allowed;
};
std::optional<LayoutProblem> layout_problem(const ModelSpec& model, const DeviceSpec& device,
                                            int64_t tp, int64_t ep, int64_t pp) {
  if (const std::string p = model.tensor_parallel_problem(tp, ep); !p.empty()) {
    const bool expert = p.find("expert") != std::string::npos;
    return LayoutProblem{
        expert ? "--ep" : "--tp",
        fmt::format("tensor parallel {}, expert parallel {} for {}: {}", tp, ep, model.name, p),
        expert ? "1, or a multiple of --tp that divides the experts"
               : "a size that divides the heads and the MLP"};
  }
  if (ep > device.max_tensor_parallel)
    return LayoutProblem{"--ep",
                         fmt::format("expert parallel {} exceeds {}'s max_tensor_parallel {}", ep,
                                     device.name, device.max_tensor_parallel),
                         fmt::format("1..{}", device.max_tensor_parallel)};
  if (tp > device.max_tensor_parallel)
    return LayoutProblem{"--tp",
                         fmt::format("tensor parallel {} exceeds {}'s max_tensor_parallel {}", tp,
                                     device.name, device.max_tensor_parallel),
                         fmt::format("1..{}", device.max_tensor_parallel)};
  if (const std::string p = pipeline_problem(model, pp); !p.empty())
    return LayoutProblem{"--pp", fmt::format("pipeline {} for {}: {}", pp, model.name, p),
                         fmt::format("1..{} (the model's layers)", model.num_hidden_layers)};
  if (pp > 1 && device.htp)
    return LayoutProblem{
        "--pp", fmt::format("{} runs a model on one NPU session, not in stages", device.name), "1"};
  return std::nullopt;
}

// A row's identity: which device, model (as given and as named), dtype,
// context and layout it is for.
CapacityRow row_for(const DeviceSpec& device, const std::string& device_arg, const ModelSpec& model,
                    const std::string& model_arg, const std::string& dtype, int64_t context,
                    int64_t tp, int64_t ep, int64_t pp) {
  CapacityRow r;
  r.device = device.name;
  r.device_arg = device_arg;
  r.model = model.name;
  r.model_arg = model_arg;
  r.kv_dtype = dtype;
  r.context = context;
  r.tp = tp;
  r.ep = ep;
  r.pp = pp;
  return r;
}

}  // namespace

DeviceSpec resolve_device(const std::string& name, const std::string& configs_dir,
                          const std::string& flag) {
  config::LoadContext ctx;
  DeviceSpec d = load_device_file(resolve_path(name, configs_dir, "devices", flag).path, ctx);
  ctx.diagnostics.throw_if_any();
  return d;
}

ModelSpec resolve_model(const std::string& name, const std::string& configs_dir,
                        const std::string& flag) {
  // A name as users write it (a Hugging Face name, optionally ending in a
  // weights format) resolves to one shape file per model
  // (models/model_resolve.hpp), a path or folder to its file.
  const ConfigRef ref = resolve_path(name, configs_dir, "models", flag);
  config::LoadContext ctx;
  ModelSpec m = load_model_file(ref.path, ctx);
  ctx.diagnostics.throw_if_any();
  if (!ref.weights.empty()) m = with_weights_format(std::move(m), ref.weights, name);
  return m;
}

std::shared_ptr<const PolicySpec> capacity_policy(const CapacityQuery& q) {
  const PolicyEntry* entry = find_policy(q.policy);
  if (entry == nullptr)
    flag_error("--policy", fmt::format("no cache policy named '{}'", q.policy),
               fmt::format("{}", fmt::join(capacity_policy_names(), ", ")));
  // The flags a policy declares a key for are its values.
  config::ParamValues values;
  const auto offer = [&](const char* key, config::ParamValue value) {
    if (entry->info.find(key) != nullptr) values.set(key, std::move(value), true);
  };
  offer("block_size", q.block_size);
  offer("main_pool_fraction", q.main_pool_fraction);
  offer("chunk_pool_fraction", q.chunk_pool_fraction);
  std::shared_ptr<const PolicySpec> spec = make_policy_spec(q.policy, values);
  if (spec->block_pool() == nullptr)
    flag_error("--policy", fmt::format("'{}' keeps no block pool to size", q.policy),
               fmt::format("{}", fmt::join(capacity_policy_names(), ", ")));
  return spec;
}

std::vector<std::string> split_flag_list(const std::string& flag,
                                         const std::vector<std::string>& given,
                                         const std::string& allowed) {
  std::vector<std::string> out;
  for (const std::string& text : given) {
    size_t start = 0;
    while (true) {
      const size_t comma = text.find(',', start);
      const std::string item =
          text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (item.empty())
        flag_error(
            flag,
            text.empty() ? std::string("is empty") : fmt::format("'{}' has an empty element", text),
            allowed);
      if (std::find(out.begin(), out.end(), item) != out.end())
        flag_error(flag, fmt::format("'{}' is given twice", item), allowed);
      out.push_back(item);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return out;
}

std::vector<std::string> capacity_policy_names() {
  std::vector<std::string> names;
  for (const std::string& name : cache_policy_names())
    if (make_policy_spec(name)->block_pool() != nullptr) names.push_back(name);
  return names;
}

namespace {
// The drafter --speculative names for `model`, none without one (or ngram).
std::optional<DrafterShape> capacity_drafter(const CapacityQuery& q, const ModelSpec& model,
                                             const std::string& configs_dir) {
  const std::string& m = q.speculative;
  if (m.empty() || m == "ngram") return std::nullopt;
  if (m == "mtp" || m == "deepseek_mtp") {
    if (model.num_nextn_predict_layers < 1)
      flag_error("--speculative",
                 fmt::format("{} has no multi-token-prediction layers (num_nextn_predict_layers "
                             "is 0 in its config)",
                             model.name),
                 "a model with num_nextn_predict_layers (DeepSeek-V3/R1), or eagle | eagle3 | "
                 "ngram | draft_model");
    return mtp_drafter(model);
  }
  if (m == "eagle" || m == "eagle3") return eagle_drafter(model, m == "eagle3");
  if (m == "draft_model") {
    if (q.draft_model.empty())
      flag_error("--speculative", "draft_model needs the draft model", "--draft-model NAME");
    const ModelSpec draft = resolve_model(q.draft_model, configs_dir);
    if (draft.vocab_size != model.vocab_size)
      flag_error("--draft-model",
                 fmt::format("{} has a vocabulary of {} tokens, {} has {}", draft.name,
                             draft.vocab_size, model.name, model.vocab_size),
                 fmt::format("a draft model with vocab_size {}", model.vocab_size));
    return draft_model_drafter(draft);
  }
  flag_error("--speculative", fmt::format("unknown method '{}'", m),
             "mtp, deepseek_mtp, eagle, eagle3, ngram, draft_model");
  return std::nullopt;
}
}  // namespace

std::vector<CapacityRow> capacity_rows(const CapacityQuery& q, const std::string& configs_dir) {
  const std::shared_ptr<const PolicySpec> spec = capacity_policy(q);
  const BlockPoolContract& policy = *spec->block_pool();
  const std::vector<std::string> dtypes = policy.capacity_dtypes();
  for (const auto& d : q.kv_dtypes)
    if (std::find(dtypes.begin(), dtypes.end(), d) == dtypes.end())
      flag_error("--kv-dtype", fmt::format("'{}' is not a KV dtype of {}", d, q.policy),
                 fmt::format("{}", fmt::join(dtypes, ", ")));
  for (const int64_t tp : q.tps)
    if (const std::string why = policy.capacity_layout_problem(tp, 1); !why.empty())
      flag_error("--tp", why, "1");
  for (const int64_t pp : q.pps)
    if (const std::string why = policy.capacity_layout_problem(1, pp); !why.empty())
      flag_error("--pp", why, "1");
  // Expert x pipeline sizes, expert-parallel sizes outermost.
  std::vector<std::pair<int64_t, int64_t>> ep_pps;
  for (const int64_t ep : q.eps)
    for (const int64_t pp : q.pps) ep_pps.emplace_back(ep, pp);
  for (const int64_t c : q.contexts)
    if (c < 1 || c > kMaxContextTokens)
      flag_error("--context", fmt::format("context {} is out of range", c),
                 fmt::format("1..{}", kMaxContextTokens));
  std::vector<CapacityRow> rows;
  std::optional<LayoutProblem> first_problem;
  int64_t valid_layouts = 0;
  for (const auto& device_name : q.devices) {
    const DeviceSpec device = resolve_device(device_name, configs_dir);
    for (const auto& model_name : q.models) {
      const ModelSpec model = resolve_model(model_name, configs_dir);
      for (const auto& dtype : q.kv_dtypes) {
        for (const int64_t tp : q.tps) {
          for (const auto& [ep, pp] : ep_pps) {
            if (ep > 1 && !model.moe.enabled()) continue;  // no experts: the ep = 1 row stands
            // A layout this model or device cannot take is a row saying why;
            // when no combination asked for is possible, the first is the error.
            if (const std::optional<LayoutProblem> bad =
                    layout_problem(model, device, tp, ep, pp)) {
              if (!first_problem) first_problem = bad;
              for (const int64_t context : q.contexts) {
                CapacityRow r =
                    row_for(device, device_name, model, model_name, dtype, context, tp, ep, pp);
                r.device_bytes = device.memory_bytes;
                r.fits = false;
                r.note = "invalid layout: " + bad->problem;
                rows.push_back(std::move(r));
              }
              continue;
            }
            ++valid_layouts;
            PoolSizingInput in;
            in.pp = pp;
            in.device_memory = device.memory_bytes;
            in.memory_fraction = q.memory_fraction;
            in.tp = tp;
            in.ep = ep;
            in.kv_dtype_bytes = policy.capacity_dtype_bytes(dtype);
            in.max_batched_tokens = q.max_batched_tokens;
            in.max_num_seqs = q.max_num_seqs;
            if (const std::optional<DrafterShape> d = capacity_drafter(q, model, configs_dir)) {
              in.drafter_weight_bytes = d->weight_bytes_per_rank(tp, ep);
              in.drafter_kv_bytes_per_token = d->kv_bytes_per_token(in.kv_dtype_bytes, tp);
            }
            // The policy sizes its pool as a run does (its block size, its
            // memory split, groups by attention type); a phone's Genie
            // buffers are sized apart (capacity_genie).
            const PoolSizing s = policy.size(model, in);
            // The binding stage's layers (the whole model with one stage).
            const ModelSpec binding =
                pp > 1
                    ? stage_model(model, pipeline_stages(model.num_hidden_layers,
                                                         pp)[static_cast<size_t>(s.binding_stage)])
                    : model;
            for (const int64_t context : q.contexts) {
              CapacityRow r =
                  row_for(device, device_name, model, model_name, dtype, context, tp, ep, pp);
              r.binding_stage = s.binding_stage;
              r.stage_layers = s.stage_layers;
              r.weights_bytes = s.weights_bytes;
              r.kv_bytes_per_token = s.kv_bytes_per_token;
              r.drafter_weights_bytes = s.drafter_weights_bytes;
              r.drafter_kv_bytes_per_token = s.drafter_kv_bytes_per_token;
              const auto kv_at_context = checked_mul(s.kv_bytes_per_token, context);
              if (!kv_at_context || *kv_at_context > kMaxRepresentableBytes)
                flag_error("--context",
                           fmt::format("context {} at {} per token needs more than {} of KV",
                                       context, format_bytes(s.kv_bytes_per_token),
                                       format_bytes(kMaxRepresentableBytes)),
                           fmt::format("at most {} tokens for {}",
                                       kMaxRepresentableBytes / s.kv_bytes_per_token, model.name));
              r.device_bytes = device.memory_bytes;
              r.budget_bytes = s.budget;
              r.activation_reserve_bytes = s.activation_reserve;
              // What the policy's pool holds at this context (its blocks, or
              // llama.cpp's cells), its second pool if it has one.
              const PoolCapacity c = policy.capacity(model, dtype, context, s);
              r.kv_bytes_per_token = c.kv_bytes_per_token;
              r.kv_bytes_at_context = c.kv_bytes_at_context;
              r.block_bytes = c.block_bytes;
              r.num_blocks = c.num_blocks;
              r.capacity_tokens = c.capacity_tokens;
              r.max_concurrent_seqs = c.max_concurrent_seqs;
              r.fits = c.fits;
              r.shortfall_bytes = c.shortfall_bytes;
              r.main_pool_bytes = c.main_pool_bytes;
              r.chunk_pool_bytes = c.chunk_pool_bytes;
              r.chunk_pool_blocks = c.chunk_pool_blocks;
              r.chunk_pool_tokens = c.chunk_pool_tokens;
              r.max_context_tokens = std::min(r.capacity_tokens, model.max_position_embeddings);
              r.windowed_kv_bytes_at_context =
                  binding.kv_bytes_for_context(context, in.kv_dtype_bytes, tp);
              r.windowed_max_concurrent_seqs = s.kv_budget > 0 && r.windowed_kv_bytes_at_context > 0
                                                   ? s.kv_budget / r.windowed_kv_bytes_at_context
                                                   : 0;
              if (!c.note.empty()) {
                r.note = c.note;
              } else if (!r.fits) {
                r.note = fmt::format(
                    "does not fit: weights {} + activations {} + one block {} exceed the budget {} "
                    "by {}",
                    format_bytes(s.weights_bytes), format_bytes(s.activation_reserve),
                    format_bytes(s.block_bytes), format_bytes(s.budget),
                    format_bytes(r.shortfall_bytes));
              } else if (context > model.max_position_embeddings) {
                r.note = fmt::format("context exceeds the model's max_position_embeddings {}",
                                     model.max_position_embeddings);
              } else if (r.max_concurrent_seqs == 0) {
                const int64_t bs = policy.block_size();
                r.note = fmt::format(
                    "one sequence of {} tokens needs {} blocks, the pool has {}", context,
                    s.groups.hybrid() ? s.groups.pages_held(context, bs) : (context + bs - 1) / bs,
                    s.num_blocks);
              }
              if (device.htp && !c.own_row) {  // a Hexagon NPU: Genie buffers, not a pool
                r.note.clear();
                fill_htp_capacity_row(r, device, model);
              }
              rows.push_back(std::move(r));
            }
          }
        }
      }
    }
  }
  if (valid_layouts == 0 && first_problem)
    flag_error(first_problem->flag, first_problem->problem, first_problem->allowed);
  return rows;
}

nlohmann::ordered_json capacity_row_json(const CapacityRow& r) {
  nlohmann::ordered_json j;
  j["device"] = r.device;
  j["model"] = r.model;
  j["kv_dtype"] = r.kv_dtype;
  j["context"] = r.context;
  j["tp"] = r.tp;
  j["weights_bytes"] = r.weights_bytes;
  j["kv_bytes_per_token"] = r.kv_bytes_per_token;
  j["block_bytes"] = r.block_bytes;
  j["num_blocks"] = r.num_blocks;
  j["capacity_tokens"] = r.capacity_tokens;
  j["max_concurrent_seqs"] = r.max_concurrent_seqs;
  j["max_context_tokens"] = r.max_context_tokens;
  // Additions beyond SPEC 9's keys.
  j["kv_bytes_at_context"] = r.kv_bytes_at_context;
  j["device_bytes"] = r.device_bytes;
  j["budget_bytes"] = r.budget_bytes;
  j["activation_reserve_bytes"] = r.activation_reserve_bytes;
  j["fits"] = r.fits;
  j["shortfall_bytes"] = r.shortfall_bytes;
  j["note"] = r.note;
  // kind: htp rows (0 elsewhere): Genie buffers per update mode.
  j["address_space_bytes"] = r.address_space_bytes;
  for (const std::string& mode : kHtpCapacityModes) {
    Bytes bytes = 0;
    for (const auto& c : r.htp_buffers)
      if (c.mode == mode) bytes = c.buffer_bytes;
    j["buffer_bytes_" + mode] = bytes;
  }
  j["npu_sessions_needed"] = r.npu_sessions_needed;
  // chunk_lru (0 elsewhere): the dual pool of seed 003.
  j["main_pool_bytes"] = r.main_pool_bytes;
  j["chunk_pool_bytes"] = r.chunk_pool_bytes;
  // --speculative only, so a plain plan's file keeps its keys.
  if (r.drafter_weights_bytes > 0 || r.drafter_kv_bytes_per_token > 0) {
    j["drafter_weights_bytes"] = r.drafter_weights_bytes;
    j["drafter_kv_bytes_per_token"] = r.drafter_kv_bytes_per_token;
  }
  j["chunk_pool_blocks"] = r.chunk_pool_blocks;
  j["chunk_pool_tokens"] = r.chunk_pool_tokens;
  j["ep"] = r.ep;
  j["windowed_kv_bytes_at_context"] = r.windowed_kv_bytes_at_context;
  j["windowed_max_concurrent_seqs"] = r.windowed_max_concurrent_seqs;
  j["pp"] = r.pp;
  j["binding_stage"] = r.binding_stage;
  j["stage_layers"] = r.stage_layers;
  return j;
}

std::vector<std::string> capacity_csv_header() {
  std::vector<std::string> h;
  const nlohmann::ordered_json j = capacity_row_json(CapacityRow{});
  for (auto it = j.begin(); it != j.end(); ++it) h.push_back(it.key());
  return h;
}

std::vector<std::string> capacity_csv_cells(const CapacityRow& r) {
  std::vector<std::string> cells;
  const nlohmann::ordered_json j = capacity_row_json(r);
  for (auto it = j.begin(); it != j.end(); ++it)
    cells.push_back(it->is_string() ? it->get<std::string>() : it->dump());
  return cells;
}

std::string parallel_label(int64_t tp, int64_t ep, int64_t pp) {
  std::string label = std::to_string(tp);
  if (ep > 1) label += fmt::format(" (ep {})", ep);
  if (pp > 1) label += fmt::format(" x pp {}", pp);
  return label;
}

std::string capacity_markdown(const std::vector<CapacityRow>& rows) {
  std::vector<std::vector<std::string>> cells;
  const std::string htp_table = capacity_genie_markdown(rows);
  for (const auto& r : rows) {
    if (r.htp) continue;  // in their own table below
    cells.push_back({r.device, r.model, r.kv_dtype, std::to_string(r.context),
                     parallel_label(r.tp, r.ep, r.pp), format_bytes(r.weights_bytes),
                     format_bytes(r.kv_bytes_per_token), format_bytes(r.kv_bytes_at_context),
                     format_bytes(r.block_bytes), std::to_string(r.num_blocks),
                     std::to_string(r.capacity_tokens), std::to_string(r.max_concurrent_seqs),
                     std::to_string(r.max_context_tokens), r.fits ? r.note : "**" + r.note + "**"});
  }
  if (cells.empty()) return htp_table;
  return markdown_table({"device", "model", "kv", "context", "tp", "weights", "KV/token", "KV/seq",
                         "block", "blocks", "capacity tokens", "max seqs", "max context", "note"},
                        cells) +
         (htp_table.empty() ? "" : "\n" + htp_table);
}

}  // namespace kvsim
