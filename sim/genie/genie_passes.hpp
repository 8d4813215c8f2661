#pragma once
// The shape of a dialog turn on Genie's AR-n graphs (seed 002), as pure
// functions the engine, the cross-checks and the tests share:
//   prefill: full passes at the largest shipped variant, the remainder in one
//            pass at the smallest variant that holds it (padded when the
//            variant is larger than the remainder: useful_tokens < variant);
//            so a prompt of P tokens takes ceil(P / max_variant) passes;
//   decode:  one AR-1 pass per token after the first (the prefill's last pass
//            produces the first reply token);
//   verify:  speculative decoding feeds the last token and K drafts through
//            one pass at the smallest variant >= K + 1.
// A pass at variant v reads a cache of ctx_size - v columns, so the tokens it
// finds in the cache must fit that (seed 002 "Cache Dimension").
#include <cstdint>
#include <functional>
#include <vector>

#include "sim/core/acceptance_model.hpp"

namespace kvsim {

struct PassShape {
  int64_t variant = 1;
  int64_t useful_tokens = 1;
};

// Smallest shipped variant >= n, or the largest when none is (`variants`
// sorted ascending, non-empty).
int64_t smallest_variant_at_least(int64_t n, const std::vector<int64_t>& variants);

// The prefill passes of `tokens` input tokens (tokens >= 1).
std::vector<PassShape> prefill_passes(int64_t tokens, const std::vector<int64_t>& variants);

// Whether a turn fits without evicting: starting with `n_past` tokens in the
// cache, prefill `input_tokens`, then generate `reply_tokens` with AR-1
// decodes; every pass must find at most capacity(variant) tokens in the
// cache, and every update after a pass must leave at most capacity of the
// next pass's variant. `capacity` is GenieKvPolicy::capacity_tokens. A
// pass of the BERT variant (n == ctx_size, when given) takes no past KV
// (seed 002: its input cache dim is 0, the whole context in one pass), so it
// fits only an empty cache.
bool turn_fits(int64_t n_past, int64_t input_tokens, int64_t reply_tokens,
               const std::vector<int64_t>& variants,
               const std::function<int64_t(int64_t)>& capacity, int64_t ctx_size = 0);

// accepted_drafts (the drafts a verify pass keeps) is the acceptance model
// the serving engine shares: sim/core/acceptance_model.hpp.

}  // namespace kvsim
