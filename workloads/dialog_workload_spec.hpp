#pragma once
// `kind: dialog` (SPEC 5, seed 002): one user's turns on a phone NPU. The
// KV cache persists across turns on the device, so a turn's prompt is only
// its new user tokens; the history is already in the cache.
#include <cstdint>
#include <memory>
#include <optional>

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
};

// `session_cache:` Genie's dumpCache/loadCache (seed 002): restore a saved
// conversation of `tokens` tokens before the first turn, save the cache after
// the last one; both priced at the device's storage bandwidth.
struct SessionCacheSpec {
  bool restore = false;
  int64_t tokens = 0;  // tokens of the restored conversation (restore: true)
  bool save = false;
};

struct DialogWorkloadSpec {
  int64_t turns = 1;
  std::shared_ptr<const ClampedDistribution> prompt_tokens;  // new user tokens per turn
  std::shared_ptr<const ClampedDistribution> reply_tokens;   // tokens generated per turn (>= 1)
  std::shared_ptr<const ClampedDistribution> think_time;     // ns, reply to next prompt; null: 0
  std::optional<SpeculativeSpec> speculative;
  SessionCacheSpec session_cache;
};

}  // namespace kvsim
