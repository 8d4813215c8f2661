#include "sim/serve/serving_engine_spec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <variant>

#include "sim/serve/session_retention_spec.hpp"

namespace kvsim {

config::ComponentInfo serving_engine_info() {
  using namespace config;
  return {"engine",
          "serving",
          "continuous batching of many requests over a block pool (vLLM's scheduler, seed 001); "
          "its keys are the `scheduler:` section",
          {int_param("max_num_seqs", 256, 1, 1 << 20, "sequences", "sequences running at once"),
           int_param("max_batched_tokens", 8192, 1, 1 << 24, "tokens", "tokens per engine step"),
           bool_param("chunked_prefill", true, "split a long prompt over several steps"),
           int_param("max_model_len", 0, 0, 1LL << 32, "tokens",
                     "longest sequence (0: the model's max_position_embeddings)"),
           section_param("session_retention", false, "{ttl, on_pressure, max_pinned_fraction}",
                         "pin a finished call's KV blocks for its session's next call (section "
                         "scheduler.session_retention); absent: off")}};
}

SchedulerConfig read_scheduler_section(config::MapReader& top) {
  config::MapReader r(top.child("scheduler"));
  const config::ParamValues v = config::read_params(r, serving_engine_info());
  SchedulerConfig c;
  c.max_num_seqs = v.integer("max_num_seqs");
  c.max_batched_tokens = v.integer("max_batched_tokens");
  c.chunked_prefill = v.boolean("chunked_prefill");
  c.max_model_len = v.integer("max_model_len");
  c.session_retention = read_session_retention(r);
  r.finish();
  return c;
}

std::optional<EngineRefusal> serving_engine_refusal(const InstanceSpec& s) {
  // A dialog's turns are requests like any other (each carries the
  // conversation so far); what only Genie's dialog does is not.
  if (s.workload) {
    if (const auto* dialog = std::get_if<DialogWorkloadSpec>(&s.workload->body)) {
      // llama-bench's runs are llama.cpp's: its cells and a backend of the
      // device (sim/cache/llama_backend.hpp).
      if (dialog->bench && s.policy().name() != "llama_cells")
        return EngineRefusal{"kv_cache.policy",
                             "llama_bench runs llama.cpp's cells (policy: llama_cells)"};
      if (dialog->speculative)
        return EngineRefusal{"workload.speculative", "it runs no dialog's speculative drafts"};
      if (dialog->session_cache.restore || dialog->session_cache.save)
        return EngineRefusal{"workload.session_cache",
                             "it keeps no dialog session to save or restore"};
    }
  }
  if (s.htp.present) return EngineRefusal{"htp", "`htp:` is the genie engine's section"};
  return std::nullopt;
}

void serving_engine_checks(const InstanceSpec& s, config::LoadContext& ctx) {
  auto at = [&](const std::string& key) { return ctx.location_of(key); };
  const ModelSpec& m = s.model;
  if (s.scheduler.max_model_len > m.max_position_embeddings) {
    ctx.diagnostics.error(at("scheduler.max_model_len"), "scheduler.max_model_len",
                          fmt::format("{} is beyond the model's max_position_embeddings {}",
                                      s.scheduler.max_model_len, m.max_position_embeddings),
                          fmt::format("0..{}", m.max_position_embeddings));
  }
  if (s.scheduler.max_batched_tokens < s.scheduler.max_num_seqs && s.scheduler.chunked_prefill) {
    // vLLM requires it so that every running sequence can decode in one step.
    ctx.diagnostics.error(at("scheduler.max_batched_tokens"), "scheduler.max_batched_tokens",
                          fmt::format("{} is below max_num_seqs {}", s.scheduler.max_batched_tokens,
                                      s.scheduler.max_num_seqs),
                          "max_batched_tokens >= max_num_seqs");
  }
  if (s.workload) {
    const WorkloadBounds wb = workload_bounds(*s.workload);
    if (!s.scheduler.chunked_prefill && wb.max_prompt_tokens > s.scheduler.max_batched_tokens) {
      ctx.diagnostics.error(
          at("scheduler.max_batched_tokens"), "scheduler.max_batched_tokens",
          fmt::format("without chunked prefill a {}-token prompt (the workload's longest) "
                      "needs max_batched_tokens >= {}",
                      wb.max_prompt_tokens, wb.max_prompt_tokens),
          "raise max_batched_tokens or set chunked_prefill: true");
    }
  }
  if (s.speculative.on) {
    // Rejected drafts give their slots back (KvCachePolicy::rollback):
    // the paged pool does; a sliding window's or a hybrid model's groups
    // and the numerics' shadow tables do not yet.
    const bool sliding = std::any_of(m.layer_attention.begin(), m.layer_attention.end(),
                                     [](const LayerAttention& a) { return a.sliding; });
    if (s.policy().name() != "paged" || sliding)
      ctx.diagnostics.error(
          at("speculative"), "speculative",
          sliding ? fmt::format("{} has sliding-window layers, whose groups cannot give back "
                                "rejected drafts yet",
                                m.name)
                  : fmt::format("kv_cache.policy '{}' cannot give back rejected drafts' slots",
                                s.policy().display_name()),
          "kv_cache.policy: paged on a full-attention model, or no speculative section");
    if (s.numerics.on())
      ctx.diagnostics.error(at("numerics.mode"), "numerics.mode",
                            "the numerics follow one token per decode, not a verify pass's drafts",
                            "off, or no speculative section");
  }
  if (!ctx.diagnostics.empty()) return;
  const PoolSizing sz = s.pool_sizing();
  if (sz.num_blocks < 1) {
    ctx.diagnostics.error(
        at("model"), "model",
        fmt::format(
            "{} does not fit on {}: {} x {} = {} for weights {} + activations {} leaves {} for KV, "
            "less than one block of {}",
            m.name, s.device.name, format_bytes(s.device.memory_bytes), s.kv.memory_fraction,
            format_bytes(sz.budget), format_bytes(sz.weights_bytes),
            format_bytes(sz.activation_reserve), format_bytes(sz.kv_budget),
            format_bytes(sz.block_bytes)),
        "a larger memory_fraction, more tensor parallelism, a smaller model or a bigger device");
  }
  if (s.numerics.on()) {
    // The shadow pool has every block of the real pool at the shadow width.
    const NumericsConfig& n = s.numerics;
    const int64_t block_size = s.policy().block_pool()->block_size();
    const Bytes shadow = sz.num_blocks * 2 * std::min(n.shadow_layers, m.num_hidden_layers) *
                         block_size * std::min(n.shadow_heads, m.kv_heads_per_rank(s.tp)) *
                         n.shadow_head_dim * s.kv.dtype_bytes();
    constexpr Bytes kShadowLimit = 2LL << 30;
    if (shadow > kShadowLimit) {
      ctx.diagnostics.error(at("numerics.shadow"), "numerics.shadow",
                            fmt::format("the shadow pool would take {} ({} blocks)",
                                        format_bytes(shadow), sz.num_blocks),
                            fmt::format("at most {}: fewer shadow layers, heads or head_dim",
                                        format_bytes(kShadowLimit)));
    }
    if (s.policy().block_pool()->numerics() == ServingNumerics::none) {
      ctx.diagnostics.error(
          at("numerics.mode"), "numerics.mode",
          fmt::format("the serving engine's numerics follow paged and chunk_lru blocks, not '{}'",
                      s.policy().display_name()),
          "off, or kv_cache.policy: paged");
    }
  }
}

}  // namespace kvsim
