#include "sim/cache/paged_window_policy.hpp"

#include <algorithm>
#include <stdexcept>

namespace kvsim {

PagedWindowPolicy::PagedWindowPolicy(const PagedWindowParams& params)
    // Blocks under a window hold no hash: the free order only picks block
    // ids, so the default (`lru`) order is kept.
    : PagedPolicyBase({params.num_blocks}, params.block_size, params.block_bytes,
                      params.host_blocks),
      window_(params.window) {
  if (params.window <= 0) throw std::invalid_argument("sliding_window: window must be at least 1");
}

PrefixHit PagedWindowPolicy::lookup_prefix(const TokenView& tokens, std::vector<BlockHash>&) const {
  // Prefix caching is off under a window: nothing is reused, but the lookup
  // still counts for the hit rate's denominator as paged does with it off.
  (void)tokens;
  return PrefixHit{};
}

AdmitPlan PagedWindowPolicy::plan_admit(PrefixHit hit, int64_t new_tokens) const {
  AdmitPlan plan;
  plan.tokens = new_tokens;
  plan.new_blocks = blocks_for(new_tokens);
  plan.fits = plan.new_blocks <= pool_.num_free();
  plan.hit = std::move(hit);
  return plan;
}

SeqSlot PagedWindowPolicy::apply_admit(const AdmitPlan& plan) {
  if (!plan.fits) throw std::logic_error("apply_admit with a plan that does not fit");
  return open_seq({}, plan.new_blocks, plan.tokens);
}

void PagedWindowPolicy::commit(SeqSlot s, const TokenView&, int64_t computed_tokens) {
  // The next token (position computed_tokens) attends to positions
  // [computed_tokens + 1 - window, computed_tokens]: block b is out of every
  // later window once (b + 1) * block_size <= computed_tokens + 1 - window.
  const int64_t first_needed = computed_tokens + 1 - window_;
  const int64_t released =
      free_leading_blocks(s, std::max<int64_t>(0, first_needed) / block_size());
  window_evicted_tokens_ += released * block_size();
}

int64_t PagedWindowPolicy::attention_context(int64_t context_tokens) const {
  // A query attends to itself and the window - 1 tokens before it.
  return std::min(context_tokens, window_ - 1);
}

CacheAccounting PagedWindowPolicy::accounting() const {
  CacheAccounting a = PagedPolicyBase::accounting();
  a.window_evicted_tokens = window_evicted_tokens_;
  return a;
}

}  // namespace kvsim
