#include "sim/cache/cache_replay.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "base/cancellation.hpp"

namespace kvsim {

CacheReplayResult replay_through_cache(KvCachePolicy& policy, RequestSource& source) {
  CacheReplayResult result;
  std::vector<BlockHash> memo;  // reused: hashes are computed once per request
  for (;;) {
    if (!source.next_arrival()) {
      // Completions are immediate, so a stream that knows no next request is done.
      if (!source.exhausted())
        throw std::logic_error("cache replay: the request stream stalled before its end");
      break;
    }
    // An embedding's stop request (base/cancellation.hpp), every 256 requests.
    if (result.requests % 256 == 0) throw_if_cancelled();
    const Request request = source.take();
    const auto prompt_len = static_cast<int64_t>(request.prompt.size());
    ++result.requests;
    result.prompt_tokens += prompt_len;
    if (prompt_len > 0) {
      const TokenView tokens = TokenView::of(request.prompt, request.output, 0);
      memo.clear();
      PrefixHit hit = policy.lookup_prefix(tokens, memo);
      const int64_t cached = hit.cached_tokens;
      const AdmitPlan plan = policy.plan_admit(std::move(hit), prompt_len - cached);
      // The pool is empty of live sequences here, so a plan that does not
      // fit means the prompt alone is larger than the whole pool: a serving
      // run would reject it at the door, and nothing of it is cached.
      if (plan.fits) {
        const SeqSlot slot = policy.apply_admit(plan);
        policy.commit(slot, tokens, prompt_len);
        // Decode writes KV too, as the engine's steps do: every generated
        // token but the last (sampled, never fed back) is computed, and its
        // full blocks become reusable (a chat's next turn repeats the answer).
        const auto output_len = static_cast<int64_t>(request.output.size());
        const int64_t decoded = std::max<int64_t>(0, output_len - 1);
        if (decoded > 0) {
          const GrowPlan grow = policy.plan_grow(slot, decoded);
          if (grow.fits) {
            policy.apply_grow(slot, grow, decoded);
            const TokenView full{request.prompt.data(), prompt_len, request.output.data(),
                                 output_len};
            policy.commit(slot, full, prompt_len + decoded);
            result.decode_tokens += decoded;
          }
        }
        policy.release(slot);
        result.hit_tokens += cached;
      } else {
        ++result.oversized_requests;
      }
    }
    source.on_complete(request, request.arrival);
  }
  policy.check_drained();
  result.evictions = policy.accounting().evictions;
  return result;
}

}  // namespace kvsim
