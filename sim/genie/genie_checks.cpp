#include "sim/genie/genie_checks.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "devices/device_family.hpp"
#include "sim/genie/genie_address_checks.hpp"
#include "sim/genie/genie_passes.hpp"
#include "sim/genie/kv_vtcm_checks.hpp"
#include "sim/spec/instance_spec.hpp"

namespace kvsim {
namespace {

const DialogWorkloadSpec* dialog_spec_of(const InstanceSpec& s) {
  return s.workload ? std::get_if<DialogWorkloadSpec>(&s.workload->body) : nullptr;
}

void vtcm_checks(const InstanceSpec& s, config::LoadContext& ctx) {
  const Bytes vtcm = s.device.htp->vtcm_bytes;
  auto at = [&](const std::string& key) { return ctx.location_of(key); };
  const auto over = [&](const std::string& key, Bytes request, const std::string& who) {
    ctx.diagnostics.error(at(key), key,
                          fmt::format("{} asks for {} of VTCM but {} has {}", who,
                                      format_bytes(request), s.device.name, format_bytes(vtcm)),
                          fmt::format("at most {}", format_bytes(vtcm)));
  };
  const Bytes llm_request = s.htp.llm_request(vtcm);
  if (llm_request > vtcm) over("htp.vtcm_request", llm_request, "the LLM");
  if (s.htp.vtcm_min > std::min(llm_request, vtcm)) {
    ctx.diagnostics.error(at("htp.vtcm_min"), "htp.vtcm_min",
                          fmt::format("{} is above the LLM's request {}",
                                      format_bytes(s.htp.vtcm_min), format_bytes(llm_request)),
                          fmt::format("0..{}", format_bytes(std::min(llm_request, vtcm))));
  }
  for (size_t i = 0; i < s.htp.co_runners.size(); ++i) {
    const CoRunnerConfig& c = s.htp.co_runners[i];
    if (c.vtcm_request > vtcm)
      over(fmt::format("htp.co_runners[{}].vtcm_request", i), c.vtcm_request,
           fmt::format("co-runner '{}'", c.name));
  }
}

// Without a sliding window the longest turn must fit an empty cache, or
// even a context reset could not serve it.
void context_checks(const InstanceSpec& s, const DialogWorkloadSpec& d, config::LoadContext& ctx) {
  auto at = [&](const std::string& key) { return ctx.location_of(key); };
  const DeviceBufferContract& buffers = *s.policy().device_buffers();
  const std::vector<int64_t>& variants = buffers.ar_variants();
  if (variants.empty()) return;
  if (variants.front() != 1) {
    const std::string key = s.policy().key_path("ar_variants");
    ctx.diagnostics.error(at(key), key,
                          fmt::format("a dialog decodes one token per pass, but the smallest "
                                      "variant is AR-{}",
                                      variants.front()),
                          "a list that includes 1, such as [1, 32, 128]");
    return;
  }
  if (d.speculative && d.speculative->draft_tokens + 1 > variants.back()) {
    ctx.diagnostics.error(
        at("workload.speculative.draft_tokens"), "workload.speculative.draft_tokens",
        fmt::format("{} drafts need an AR-{} verify pass, beyond the largest variant AR-{}",
                    d.speculative->draft_tokens, d.speculative->draft_tokens + 1, variants.back()),
        fmt::format("1..{}", variants.back() - 1));
  }
  if (d.speculative && !d.speculative->selected.empty() && !buffers.keeps_selected()) {
    ctx.diagnostics.error(
        at("workload.speculative.selected"), "workload.speculative.selected",
        fmt::format("tree drafts keep their accepted path with dispatchUpdate's keep-mask, which "
                    "'{}' does not have",
                    s.policy().display_name()),
        "a Genie update mode (shift_concat, pointer_shift, smart_mask, or a sliding_window "
        "over one), or remove selected");
  }
  const int64_t ctx_size = buffers.ctx_size();
  const bool windowed = buffers.window() > 0;
  const int64_t held_limit = windowed ? std::min(buffers.window(), ctx_size - variants.back())
                                      : ctx_size - variants.back();
  if (d.session_cache.restore && d.session_cache.tokens > held_limit && !windowed) {
    ctx.diagnostics.error(
        at("workload.session_cache.tokens"), "workload.session_cache.tokens",
        fmt::format("{} restored tokens leave no room for an AR-{} prefill in ctx_size {}",
                    d.session_cache.tokens, variants.back(), ctx_size),
        fmt::format("1..{}", ctx_size - variants.back()));
  }
  if (windowed) return;
  const auto capacity = [&](int64_t v) { return v >= ctx_size ? ctx_size : ctx_size - v; };
  if (d.bench) {
    // llama-bench sizes n_ctx to n_prompt + n_gen + n_depth; here ctx_size
    // is given, so every test must fit it after its depth.
    for (const LlamaBenchTest& t : d.bench->tests) {
      const int64_t input = t.n_prompt > 0 ? t.n_prompt : 1;
      const int64_t reply = t.n_prompt > 0 ? t.n_gen + 1 : t.n_gen;
      if ((t.n_depth == 0 || turn_fits(0, t.n_depth, 1, variants, capacity)) &&
          turn_fits(t.n_depth, input, reply, variants, capacity))
        continue;
      ctx.diagnostics.error(
          at("workload.tests"), "workload.tests",
          fmt::format("test '{}' needs {} cells after its depth, beyond ctx_size {}", t.name,
                      t.n_depth + t.n_prompt + t.n_gen, ctx_size),
          "shorter tests or depths, or a larger ctx_size");
    }
    return;
  }
  const int64_t prompt = d.prompt_tokens->upper_bound();
  const int64_t reply = d.reply_tokens->upper_bound();
  if (!turn_fits(0, prompt, reply, variants, capacity, ctx_size)) {
    ctx.diagnostics.error(
        at("workload.prompt_tokens"), "workload.prompt_tokens",
        fmt::format("the longest turn ({} prompt + {} reply tokens) does not fit ctx_size {} even "
                    "in an empty cache (AR-1 decoding holds {} tokens)",
                    prompt, reply, ctx_size, ctx_size - 1),
        "shorter prompts or replies (a max clamp), a larger ctx_size, or policy: sliding_window");
  }
}

}  // namespace

std::optional<EngineRefusal> genie_engine_refusal(const InstanceSpec& s) {
  if (device_family_of(s.device).graph_executor(s.device) == nullptr)
    return EngineRefusal{
        "device", fmt::format("it runs static graphs on an NPU graph executor, which {} (kind {}) "
                              "does not declare (kind: htp devices do)",
                              s.device.name, s.device.kind)};
  if (dialog_spec_of(s) == nullptr)
    return EngineRefusal{
        "workload.kind",
        fmt::format("it runs one user's `kind: dialog` or `kind: llama_bench`, not kind {}",
                    s.workload ? s.workload->kind : "?")};
  return std::nullopt;
}

void genie_cross_checks(const InstanceSpec& s, config::LoadContext& ctx) {
  auto at = [&](const std::string& key) { return ctx.location_of(key); };
  const DeviceBufferContract* buffers = s.policy().device_buffers();
  if (!s.device.htp || buffers == nullptr) return;  // the engine's refusal says why
  vtcm_checks(s, ctx);
  kv_vtcm_checks(s, ctx);
  // seed 002 splits the KV tensors over the update threads; the device
  // file says how many CPU threads Genie may take.
  if (buffers->update_threads() > s.device.htp->max_update_threads) {
    const std::string key = s.policy().key_path("update_threads");
    ctx.diagnostics.error(
        at(key), key,
        fmt::format("{} threads, but {} allows {} KV update threads", buffers->update_threads(),
                    s.device.name, s.device.htp->max_update_threads),
        fmt::format("1..{}", s.device.htp->max_update_threads));
  }
  if (const DialogWorkloadSpec* d = dialog_spec_of(s); d != nullptr && ctx.diagnostics.empty())
    context_checks(s, *d, ctx);
}

void genie_engine_checks(const InstanceSpec& s, config::LoadContext& ctx) {
  genie_cross_checks(s, ctx);
  genie_address_cross_checks(s, ctx);
}

}  // namespace kvsim
