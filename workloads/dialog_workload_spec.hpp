#pragma once
// `kind: dialog` (SPEC 5, seed 002): one user's turns on a phone NPU. The
// KV cache persists across turns on the device, so a turn's prompt is only
// its new user tokens; the history is already in the cache.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/units.hpp"

namespace kvsim {

class ClampedDistribution;

// `speculative:` each verify pass feeds the last token plus `draft_tokens`
// drafted tokens through one AR-n pass (the smallest shipped variant >=
// draft_tokens + 1); the target accepts drafts one by one with probability
// `acceptance_rate` until the first rejection, emits the accepted drafts plus
// one token of its own, and the rejected drafts' KV entries are rewound
// (seed 002 dispatch UPDATE_OUTPUT).
//
// Drafting has a price unless said otherwise: `drafter: eagle_head` (the
// default) drafts with an EAGLE-style head (Li et al., "EAGLE: Speculative
// Sampling Requires Rethinking Feature Uncertainty", ICML 2024: one decoder
// layer of the target's shape over its features, reusing the target's
// embedding and LM head), priced per draft token as one AR-1 pass of that
// one-layer model on the same device; `drafter: prompt_lookup` (n-gram
// matching against the context, free next to an NPU pass) costs nothing.
// `draft_cost_per_token`, when given, replaces the drafter's own price.
enum class Drafter { eagle_head, prompt_lookup };

struct SpeculativeSpec {
  int64_t draft_tokens = 4;
  double acceptance_rate = 0.7;
  Drafter drafter = Drafter::eagle_head;
  std::optional<TimeNs> draft_cost_per_token;  // nullopt: the drafter's own price
  // Tree drafts: 1 marks the verify pass's entries on the path the target
  // walks (the first, the fed token, always); the target accepts a prefix
  // of the path's drafts and the update keeps exactly those entries with
  // dispatchUpdate's keep-mask (seed 002 `selected`). Empty: a chain, the
  // rejected drafts rewound.
  std::vector<int64_t> selected;
};

// `session_cache:` Genie's dumpCache/loadCache (seed 002): restore a saved
// conversation of `tokens` tokens before the first turn, save the cache after
// the last one; both priced at the device's storage bandwidth.
struct SessionCacheSpec {
  bool restore = false;
  int64_t tokens = 0;  // tokens of the restored conversation (restore: true)
  bool save = false;
};

// `kind: llama_bench` (workloads/llama_bench_workload.cpp): llama-bench's
// tests run as turns of the dialog engine. One test as llama-bench names it
// (tools/llama-bench/llama-bench.cpp, ggml-org/llama.cpp 0104b151):
// `pp N` (n_prompt N), `tg N` (n_gen N), `pp N + tg M` (`-pg N,M`), each at
// depth `n_depth` (`-d`).
struct LlamaBenchTest {
  std::string name;  // as llama-bench prints it: "pp512", "tg128 @ d4096"
  std::string key;   // its key under metrics.json llama_bench.ts: "pp512", "tg128@d4096"
  int64_t n_prompt = 0;
  int64_t n_gen = 0;
  int64_t n_depth = 0;
};

struct LlamaBenchSpec {
  std::vector<LlamaBenchTest> tests;  // every test at every depth, in llama-bench's order
  int64_t repetitions = 5;            // llama-bench -r (default 5)
  bool warmup = true;                 // false: llama-bench --no-warmup
};

struct DialogWorkloadSpec {
  int64_t turns = 1;
  std::shared_ptr<const ClampedDistribution> prompt_tokens;  // new user tokens per turn
  std::shared_ptr<const ClampedDistribution> reply_tokens;   // tokens generated per turn (>= 1)
  std::shared_ptr<const ClampedDistribution> think_time;     // ns, reply to next prompt; null: 0
  std::optional<SpeculativeSpec> speculative;
  SessionCacheSpec session_cache;
  // Set for `kind: llama_bench`: its runs replace the dialog's turns.
  std::optional<LlamaBenchSpec> bench;
};

}  // namespace kvsim
