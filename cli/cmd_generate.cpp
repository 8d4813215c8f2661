// kvsim generate --model stories260k --prompt TEXT --steps N --policy P
//                [--kv-dtype D] [--block-size B] [--ctx-size C] [--checkpoint F --tokenizer F]
// Greedy text from a real llama2.c model whose KV cache is a real policy's
// block pool (SPEC 8): the policy's block tables and slot mappings carry
// every K/V the model reads; with a Genie update mode (shift_concat,
// pointer_shift, smart_mask) the KV lives in Genie's on-device buffers,
// prefilled in AR-32 passes and decoded in AR-1, driven by the policy's plans;
// with llama_cells (seed 004) it lives in llama.cpp's cells and ggml-typed
// tensors ([--type-k T] [--type-v T] [--no-v-trans] [--n-keep N]
// [--defrag-thold X]), and a run longer than --ctx-size shifts its context.
// Genie modes save and load sessions ([--save-session F] [--load-session F]
// [--device D], seed 002 dumpCache / loadCache). Past the context:
// --policy sliding_window --update-mode M --window W (seed 002's
// window-size over paged or a Genie mode), or a Genie mode with
// --context-reset [--n-keep N]; both compared with a recompute from the kept
// tokens and with the full context (cli/generate/llama2_recompute.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "base/input_file.hpp"
#include "base/source_paths.hpp"
#include "cli/commands.hpp"
#include "cli/generate/llama2_generate.hpp"
#include "cli/generate/llama2_window.hpp"
#include "cli/number_checks.hpp"
#include "cli/studies/capacity_plan.hpp"
#include "devices/htp_timing.hpp"
#include "kernels/ggml_kv_type.hpp"
#include "kernels/llama2_chunk_reuse.hpp"
#include "reports/input_error.hpp"
#include "sim/cache/llama_kv_cells.hpp"
#include "sim/policies/policy_registry.hpp"

namespace kvsim::cli {
namespace {

struct GenerateArgs {
  std::string model = "stories260k", prompt, policy = "paged", kv_dtype = "fp32";
  std::string checkpoint, tokenizer;
  int64_t steps = 256, block_size = 16, ctx_size = 0;
  // llama_cells (seed 004).
  std::string llama_behaviour = "seed_2024";
  std::string type_k, type_v;
  bool no_v_trans = false;
  int64_t n_keep = 0;
  double defrag_thold = 0.1;
  // Genie modes: session files (seed 002 dumpCache / loadCache), priced at
  // a device's storage_bandwidth when --device names one.
  std::string load_session, save_session, device;
  // sliding_window and the context reset.
  std::string update_mode = "pointer_shift";
  bool update_mode_given = false;  // the default applies to sliding_window alone
  int64_t window = 0;
  bool context_reset = false;
};

// The device --device names, which must have a storage bandwidth.
std::optional<DeviceSpec> session_device(const GenerateArgs& a) {
  std::optional<DeviceSpec> device;
  if (!a.device.empty()) {
    device = resolve_device(a.device, KVSIM_CONFIG_DIR);
    if (!device->htp)
      throw_input_error("--device", "device",
                        fmt::format("'{}' (kind {}) has no storage_bandwidth for session files",
                                    device->name, device->kind),
                        "a kind: htp device, such as snapdragon-8-elite");
  }
  return device;
}

// The session I/O a run did, and its price on the device's storage (the
// bandwidth the genie engine's session_cache uses, devices/htp_timing.cpp).
void print_session_io(const kernels::GenerateResult& r, const GenerateArgs& a,
                      const std::optional<DeviceSpec>& device) {
  const auto price = [&](int64_t bytes) -> std::string {
    if (!device) return "";
    const double bw = static_cast<double>(device->htp->storage_bandwidth);
    return fmt::format("; {} at {}'s storage_bandwidth {:.3g} GB/s",
                       format_duration(htp_storage_time(*device->htp, bytes)), device->name,
                       bw / 1e9);
  };
  if (!a.load_session.empty())
    std::cout << fmt::format("session: loaded {} positions ({} KV bytes) from {}{}\n",
                             r.session_loaded_positions, r.session_loaded_kv_bytes, a.load_session,
                             price(r.session_loaded_kv_bytes));
  if (!a.save_session.empty())
    std::cout << fmt::format("session: saved {} positions ({} KV bytes, a {}-byte file) to {}{}\n",
                             r.session_saved_positions, r.session_saved_kv_bytes,
                             r.session_file_bytes, a.save_session, price(r.session_saved_kv_bytes));
}

// What a run past its context kept, and how it compares with a recompute
// from the kept tokens (which the cached run must match) and with the full
// context (where the text first changes).
void print_window_drift(const kernels::WindowDrift& d, const GenerateArgs& a) {
  if (!d.ran) return;
  if (a.window > 0) {
    std::cout << fmt::format("sliding window: {} tokens kept over {}, the KV held at most {}; ",
                             d.window, a.update_mode, d.max_held);
  } else {
    std::cout << fmt::format(
        "context reset: {} resets (at positions {}), each keeping BOS and --n-keep {} prompt "
        "tokens; ",
        d.resets_at.size(), fmt::join(d.resets_at, ", "), d.kept - 1);
  }
  if (d.first_past < 0)
    std::cout << "the run stayed inside its context\n";
  else
    std::cout << fmt::format("first position past it {}\n", d.first_past);
  // The recompute stores K/V as fp32, fp16 and bf16 do; int8's per-tensor
  // quantisation is the run's own, so its error is part of the diff.
  std::cout << fmt::format(
      "  vs a recompute from the kept tokens at their own positions{}: max |diff| {:.6g}, mean "
      "|diff| {:.6g} over {} positions, top-1 {}\n",
      a.kv_dtype == "int8" ? " (its K/V in fp32)" : "", d.max_abs_diff, d.mean_abs_diff, d.compared,
      d.top1_agree ? "agrees at every one (the same text)" : "differs");
  if (d.fresh_compared > 0)
    std::cout << fmt::format(
        "  vs a fresh prefill of the kept tokens at the same positions (their K/V recomputed "
        "without the evicted tokens): max |diff| {:.6g}, mean |diff| {:.6g}, top-1 {}/{} "
        "positions past the window\n",
        d.fresh_max_abs_diff, d.fresh_mean_abs_diff, d.fresh_top1_agreements, d.fresh_compared);
  if (d.first_divergence < 0)
    std::cout << fmt::format("  vs the full context: the same tokens over {} positions\n",
                             d.full_compared);
  else
    std::cout << fmt::format("  vs the full context: the first different token is at position {}\n",
                             d.first_divergence);
}

// The drift of chunk_lru's options against a full prefill of the same
// prompt (kernels/llama2_chunk_reuse.hpp): the seed's mask, a chunk alone,
// and CacheBlend's selective recompute at three ratios; the greedy
// continuation compared over up to 16 positions the model has room for.
void print_chunk_reuse_drift(const kernels::Llama2Weights& w, const kernels::Llama2Tokenizer& t,
                             const GenerateArgs& a, kernels::KvDtype dtype) {
  struct Variant {
    const char* name;
    kernels::ChunkAttention attention;
    double ratio;
  };
  const Variant variants[] = {
      {"isolated", kernels::ChunkAttention::isolated, 0.0},
      {"system_prompt", kernels::ChunkAttention::system_prompt, 0.0},
      {"system_prompt + recompute 0.15", kernels::ChunkAttention::system_prompt, 0.15},
      {"system_prompt + recompute 0.30", kernels::ChunkAttention::system_prompt, 0.30},
      {"system_prompt + recompute 1.00", kernels::ChunkAttention::system_prompt, 1.0},
  };
  kernels::ChunkReuseOptions co;
  co.block_size = a.block_size;
  co.kv_dtype = dtype;
  const int64_t prompt_tokens =
      kernels::chunk_reuse_logits_for_text(w, t, a.prompt, co).prompt_tokens;
  co.generated_tokens = std::clamp<int64_t>(w.config.seq_len - prompt_tokens, 0, 16);
  std::cout << fmt::format(
      "chunk reuse vs full prefill (virtual position {}, greedy continuation over {} "
      "positions):\n  {:<32} {:>8} {:>7} {:>12} {:>12} {:>12} {:>12} {:>7}\n",
      co.virtual_pos_start, co.generated_tokens, "chunk_lru option", "segments", "tokens",
      "recomputed", "KV max|d|", "KV mean|d|", "logit max|d|", "top-1");
  for (const Variant& v : variants) {
    co.attention = v.attention;
    co.recompute_ratio = v.ratio;
    const kernels::ChunkReuseResult r = kernels::chunk_reuse_logits_for_text(w, t, a.prompt, co);
    std::cout << fmt::format(
        "  {:<32} {:>8} {:>7} {:>12} {:>12.6g} {:>12.6g} {:>12.6g} {:>3}/{:<3}\n", v.name, r.units,
        r.prompt_tokens, r.recomputed_tokens, r.kv_max_abs_diff, r.kv_mean_abs_diff, r.max_abs_diff,
        r.top1_agreements, r.generated);
  }
}

int run_generate(const GenerateArgs& a) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(KVSIM_SHARED_DATA_DIR) / "models" / "stories260K";
  const std::string ckpt = a.checkpoint.empty() ? (dir / "stories260K.bin").string() : a.checkpoint;
  const std::string tok = a.tokenizer.empty() ? (dir / "tok512.bin").string() : a.tokenizer;
  for (const std::string& f : {ckpt, tok}) {
    if (const std::string problem = input_file_problem(f); !problem.empty()) {
      std::cerr << fmt::format(
          "kvsim: error: {}: {} (the stories260K model lives in the shared data "
          "folder, ../shared/data/models/stories260K; pass --checkpoint and --tokenizer to use "
          "another copy)\n",
          f, problem);
      return kExitBadInput;
    }
  }
  kernels::GenerateOptions o;
  o.prompt = a.prompt;
  o.steps = a.steps;
  o.policy = a.policy;
  o.kv_dtype = *kernels::parse_kv_dtype(a.kv_dtype);
  o.block_size = a.block_size;
  o.ctx_size = a.ctx_size;
  o.llama_behaviour = a.llama_behaviour;
  o.type_k = a.type_k;
  o.type_v = a.type_v;
  o.v_trans = !a.no_v_trans;
  o.n_keep = a.n_keep;
  o.defrag_thold = a.defrag_thold;
  o.load_session = a.load_session;
  o.save_session = a.save_session;
  // A mode the run would not use is refused, as --window is
  // (llama2_generate.cpp), rather than ignored.
  if (a.update_mode_given && a.policy != "sliding_window") {
    std::cerr << fmt::format(
        "kvsim: error: --update-mode takes --policy sliding_window (the policy it wraps), not "
        "--policy {}; for a Genie mode alone pass --policy {}\n",
        a.policy, a.update_mode);
    return kExitBadInput;
  }
  o.update_mode = a.update_mode;
  o.window = a.window;
  o.context_reset = a.context_reset;
  if (!a.device.empty() && a.load_session.empty() && a.save_session.empty())
    throw_input_error("--device", "device", "prices session files, and none is named",
                      "--device with --save-session or --load-session");
  const std::optional<DeviceSpec> device = session_device(a);  // bad names fail before the run
  try {
    const kernels::Llama2Weights w = kernels::load_llama2_checkpoint(ckpt);
    const kernels::Llama2Tokenizer t(tok, w.config.vocab_size);
    const kernels::GenerateResult r = kernels::generate_greedy(w, t, o);
    std::cout << r.text << "\n";
    print_session_io(r, a, device);
    print_window_drift(r.window, a);
    if (r.drift.shifts > 0) {
      // llama.cpp's context shift keeps keys computed with the dropped
      // tokens in view: report how far that is from recomputing the kept ones.
      std::cout << fmt::format(
          "context shift: {} shifts dropped {} tokens ({} defragmentations); logits right after "
          "each shift vs a recompute of the kept tokens: max |diff| {:.6g}, mean |diff| {:.6g} "
          "over {} positions, top-1 {}\n",
          r.drift.shifts, r.drift.discarded_tokens, r.drift.defrags, r.drift.max_abs_diff,
          r.drift.mean_abs_diff, r.drift.compared, r.drift.top1_agree ? "agrees" : "differs");
    }
    // A policy that reuses chunks by content (seed 003) changes what the
    // model computes: report by how much, under each of chunk_lru's options.
    const std::shared_ptr<const PolicySpec> spec = make_policy_spec(a.policy);
    if (spec->block_pool() != nullptr && spec->block_pool()->reuses_chunks())
      print_chunk_reuse_drift(w, t, a, o.kv_dtype);
  } catch (const std::runtime_error& e) {  // unreadable files
    std::cerr << "kvsim: error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::invalid_argument& e) {
    std::cerr << "kvsim: error: " << e.what() << "\n";
    return kExitBadInput;
  }
  return kExitOk;
}

}  // namespace

Command add_generate_command(CLI::App& app) {
  auto a = std::make_shared<GenerateArgs>();
  auto* cmd =
      app.add_subcommand("generate", "greedy text from stories260K through a real cache policy");
  cmd->add_option("--model", a->model, "model (stories260k)")
      ->check(CLI::IsMember({"stories260k"}));
  cmd->add_option("--prompt", a->prompt, "prompt text (default empty)");
  cmd->add_option("--steps", a->steps, "positions to run, as llama2.c -n (default 256)")
      ->check(CLI::Range(1, 1 << 20));
  const std::vector<std::string> policies = kernels::generate_policy_names();
  cmd->add_option("--policy", a->policy,
                  "cache policy holding the KV, e.g. paged, shift_concat, pointer_shift, "
                  "smart_mask, native_kv, sliding_window (default paged)")
      ->check(CLI::IsMember(policies));
  CLI::Option* update_mode =
      cmd->add_option("--update-mode", a->update_mode,
                      "sliding_window: the policy it wraps, paged or a Genie mode (default "
                      "pointer_shift)")
          ->check(CLI::IsMember(kernels::sliding_window_bases()));
  cmd->add_option("--window", a->window,
                  "sliding_window: tokens kept (required; at most --ctx-size - 32 over a Genie "
                  "mode)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_flag("--context-reset", a->context_reset,
                "Genie modes: a run longer than --ctx-size clears the cache when it is full and "
                "prefills BOS, --n-keep prompt tokens and the newest token again");
  cmd->add_option("--kv-dtype", a->kv_dtype, "KV storage: fp32, fp16, bf16, int8 (default fp32)")
      // Genie's buffers (the on-device policies) keep one int8 quantisation
      // per tensor and no fp8 rows: generate takes the four dtypes they store.
      ->check(CLI::IsMember(std::vector<std::string>{"fp32", "fp16", "bf16", "int8"}));
  cmd->add_option("--block-size", a->block_size, "paged: tokens per block (default 16)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--ctx-size", a->ctx_size,
                  "Genie modes: tokens per KV buffer; llama_cells: cells (n_ctx) (default the "
                  "model's seq_len, 512)")
      ->check(CLI::Range(2, 1 << 20));
  cmd->add_option("--llama-behaviour", a->llama_behaviour,
                  "llama_cells: which llama.cpp, seed_2024 (context shift, defragmentation) or "
                  "current (scattered slots, no defragmentation, the text stops at --ctx-size) "
                  "(default seed_2024)")
      ->check(CLI::IsMember(llama_behaviour_names()));
  cmd->add_option("--type-k", a->type_k,
                  "llama_cells: ggml type of the cached keys (default: --kv-dtype's)")
      ->check(CLI::IsMember(kernels::ggml_type_names()));
  cmd->add_option("--type-v", a->type_v,
                  "llama_cells: ggml type of the cached values (quantized needs --no-v-trans)")
      ->check(CLI::IsMember(kernels::ggml_type_names()));
  cmd->add_flag("--no-v-trans", a->no_v_trans,
                "llama_cells: store V untransposed (llama.cpp with flash attention)");
  cmd->add_option("--n-keep", a->n_keep,
                  "llama_cells, --context-reset: prompt tokens a context shift or reset keeps "
                  "besides BOS (default 0)")
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--defrag-thold", a->defrag_thold,
                  "llama_cells: defragment above this fragmentation; < 0 never (default 0.1)")
      ->check(finite_range(-1.0, 1.0));
  cmd->add_option("--load-session", a->load_session,
                  "Genie modes: continue a session a --save-session wrote (its tokens and KV; "
                  "no --prompt), to --steps positions");
  cmd->add_option("--save-session", a->save_session,
                  "Genie modes: write the session (tokens, KV, int8 parameters) after the run; "
                  "a new file, or one kvsim wrote");
  cmd->add_option("--device", a->device,
                  "with a session file: price its I/O at this kind: htp device's "
                  "storage_bandwidth");
  cmd->add_option("--checkpoint", a->checkpoint, "llama2.c .bin (default: shared data)");
  cmd->add_option("--tokenizer", a->tokenizer, "llama2.c tokenizer .bin (default: shared data)");
  return {cmd, [a, update_mode] {
            a->update_mode_given = update_mode->count() > 0;
            return run_generate(*a);
          }};
}

}  // namespace kvsim::cli
