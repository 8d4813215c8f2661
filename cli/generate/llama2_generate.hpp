#pragma once
// Greedy generation with a llama2.c model whose KV lives in a real cache
// policy's blocks: the policy (from the registry, by name) admits the
// sequence, grows it a token at a time and commits what each step computed;
// the forward pass writes and reads K/V only through that policy's block
// table on a real KvPool of the chosen storage type.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kernels/kv_dtype.hpp"
#include "kernels/llama2_model.hpp"
#include "kernels/llama2_tokenizer.hpp"

namespace kvsim::kernels {

struct GenerateOptions {
  std::string prompt;
  int64_t steps = 256;  // positions run, as llama2.c's -n
  std::string policy = "paged";
  KvDtype kv_dtype = KvDtype::fp32;
  int64_t block_size = 16;
  // Genie modes (shift_concat, pointer_shift, smart_mask): tokens per KV
  // buffer, 0 meaning the model's seq_len.
  int64_t ctx_size = 0;
  // When set, these tokens are fed instead of the argmax (teacher forcing:
  // compares storage types on the same context).
  std::optional<std::vector<int32_t>> forced;
  bool keep_logits = false;
  // llama_cells (seed 004): ggml K/V types (empty: kv_dtype's float type),
  // V stored transposed or not, and the context shift once the ctx_size
  // cells are full: keep BOS plus n_keep tokens, drop half of the rest.
  // behaviour (sim/cache/llama_kv_cells.hpp): seed_2024, or current
  // (scattered slots, no defragmentation, and no context shift: the text
  // stops where the cells are full, as llama-server's reply does).
  std::string llama_behaviour = "seed_2024";
  std::string type_k, type_v;
  bool v_trans = true;
  int64_t n_keep = 0;
  double defrag_thold = 0.1;
  // Genie modes (seed 002 dumpCache / loadCache, cli/generate/
  // genie_session_file.hpp): load_session starts from a saved session (its
  // tokens, its KV, its int8 parameters; no prompt) and continues to
  // `steps` positions; save_session writes the session after the run.
  std::string load_session, save_session;
  // sliding_window (seed 002 window-size): the policy it wraps (paged or a
  // Genie mode, as the YAML key kv_cache.update_mode) and the tokens it
  // keeps; the run may go past ctx_size, the oldest tokens leaving the KV.
  std::string update_mode = "pointer_shift";
  int64_t window = 0;
  // Genie modes: a run longer than ctx_size resets the context when it is
  // full (the genie engine's context reset, sim/genie/genie_engine.cpp):
  // the cache is cleared and BOS, the first n_keep prompt tokens and the
  // newest token are prefilled again at positions 0.., instead of failing.
  bool context_reset = false;
};

// What a llama_cells run did besides the text: its context shifts, and how
// far the logits right after each shift are from a recompute of the kept
// tokens alone (the drift the shift causes).
struct ContextShiftDrift {
  int64_t shifts = 0, discarded_tokens = 0, defrags = 0;
  int64_t compared = 0;  // positions compared with a recompute
  double max_abs_diff = 0, mean_abs_diff = 0;
  bool top1_agree = true;  // every compared argmax agreed
};

// What a sliding_window or context-reset run did besides the text, against
// two references (cli/generate/llama2_recompute.hpp): a recompute of
// attention from the tokens the KV kept, at the positions they were run at
// (RoPE is not re-rotated), teacher-forced on this run's tokens; and the
// full-context run (no window, no reset: llama2.c's text).
struct WindowDrift {
  bool ran = false;
  int64_t window = 0;              // sliding_window: tokens kept
  int64_t kept = 0;                // context reset: tokens kept (BOS + n_keep)
  int64_t max_held = 0;            // most tokens the KV held at once
  int64_t first_past = -1;         // first position whose context missed an earlier token, -1 none
  std::vector<int64_t> resets_at;  // context reset: first token fed after each reset
  // Against the recompute from the kept tokens, over every position run.
  int64_t compared = 0;
  double max_abs_diff = 0, mean_abs_diff = 0;
  bool top1_agree = true;
  // Against the full-context run: the first position whose token differs
  // (-1: none over `full_compared` positions).
  int64_t first_divergence = -1, full_compared = 0;
  // sliding_window: against a fresh prefill of the kept tokens at each
  // position past the window (the same positions, their K/V recomputed
  // without the evicted tokens in view): what the window's K/V are not.
  int64_t fresh_compared = 0, fresh_top1_agreements = 0;
  double fresh_max_abs_diff = 0, fresh_mean_abs_diff = 0;
};

struct GenerateResult {
  std::string text;                        // what llama2.c prints
  std::vector<int32_t> tokens;             // BOS, prompt, then the chosen tokens
  std::vector<std::vector<float>> logits;  // per position, when keep_logits
  ContextShiftDrift drift;                 // llama_cells only
  WindowDrift window;                      // sliding_window and context reset only
  // Genie session files: positions and KV bytes (K and V, every layer)
  // loaded and saved, and the saved file's size.
  int64_t session_loaded_positions = 0, session_loaded_kv_bytes = 0;
  int64_t session_saved_positions = 0, session_saved_kv_bytes = 0, session_file_bytes = 0;
};

// Throws std::invalid_argument for a policy with no generator or bad sizes.
GenerateResult generate_greedy(const Llama2Weights& weights, const Llama2Tokenizer& tokenizer,
                               const GenerateOptions& options);
// The policies generate_greedy runs.
std::vector<std::string> generate_policy_names();

// The pieces every KV store shares (paged here, Genie's buffers in
// cli/generate/llama2_genie.cpp); only the prefill and the decode step differ.

// The prompt's tokens, BOS first; throws std::invalid_argument when they
// are more than `steps`.
std::vector<int32_t> encode_prompt(const Llama2Tokenizer& tokenizer, const std::string& prompt,
                                   int64_t steps);

// Runs tokens.back() at position `pos` through the caller's KV (tokens so
// far, BOS first) and returns its logits.
using Llama2DecodeStep =
    std::function<std::vector<float>(const std::vector<int32_t>& tokens, int64_t pos)>;

// llama2.c's token loop once the prompt is prefilled (`logits` are its last
// token's): the argmax, or the forced token, at each position up to `steps`,
// stopping on BOS; the text holds the prompt and every chosen token.
GenerateResult greedy_token_loop(const Llama2Tokenizer& tokenizer, const GenerateOptions& options,
                                 const std::vector<int32_t>& prompt, int64_t steps,
                                 std::vector<float> logits, const Llama2DecodeStep& decode);

}  // namespace kvsim::kernels
