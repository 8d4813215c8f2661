// The paged policy's registration at allocation: vLLM V1's rule for when a
// computed block becomes findable by prefix lookups (docs/vllm-rules.md).
//
// vLLM V1 (vllm/v1/core/kv_cache_manager.py, KVCacheManager.allocate_slots,
// commit 003df2961dd8830c317a61f9745ccd557da9fa06) caches a request's full
// blocks when the scheduler allocates its slots, up to
// min(num_computed_tokens + num_new_tokens, request.num_tokens), before the
// forward pass that computes them; the scheduler
// (vllm/v1/core/sched/scheduler.py, commit b4622cf924bc72504aed99e486062d6633fde39e)
// schedules the running requests first and the waiting ones after, so a
// request admitted later in the same pass finds a block an earlier one only
// allocated, counts it as computed (num_computed_tokens, and a hit in the
// prefix-cache stats) and computes none of it: the forward pass writes each
// layer's KV before any request of the batch reads it. nano-vllm (seed 001)
// does the same: BlockManager.allocate registers a prompt's full blocks, and
// may_append the block a decode's token fills, before the step runs.
//
// Why a block registered here is always computed: preemption happens only
// while the running requests are scheduled, before any admission, it takes
// a request not yet scheduled in this pass (the most recently arrived, from
// the back), and a pass that preempts admits nobody (Scheduler::schedule,
// as vLLM's `if not preempted_reqs`). So nothing registered in a pass is
// dropped before its step runs; a request preempted in a later pass has
// computed its blocks, which keep their hashes in the free queue (vLLM's
// free_blocks) and stay findable.
//
// Registered here: the blocks whose hashes the admission's lookup computed
// (PrefixHit::hashes: the known content, a prompt and what a re-admitted
// sequence had generated), as soon as the tokens held reach past them: at
// admission and at each growth (a later prefill chunk, a swap-in). A block
// a decode fills is hashed and registered by the commit after the step, as
// before: nobody can tell the difference. A later admission of the same pass
// could find it only if its prompt quoted this running sequence's output up
// to that block; a conversation's next turn arrives after the turn has
// finished (its last commit made), the sequence's own re-admission after a
// preemption cannot come while it runs, and a described output's key is
// given to one request (workloads/token_content.hpp). Registering it here
// would need its content, which the growth calls do not carry.
#include <algorithm>
#include <stdexcept>

#include "sim/cache/paged_policy.hpp"

namespace kvsim {

void PagedPolicy::register_scheduled(SeqSlot s, SeqContent& content) {
  const SeqBlocks held = seq(s);
  // The tokens held are those computed and those this step computes, never
  // past the known content, whose full blocks are the hashes.
  const int64_t end =
      std::min({held.tokens / block_size(), static_cast<int64_t>(content.hashes.size()),
                static_cast<int64_t>(held.block_table.size())});
  // (A sequence with a chain has registered_blocks past its hashes.)
  for (; content.registered_blocks < end; ++content.registered_blocks) {
    const auto b = static_cast<size_t>(content.registered_blocks);
    pool_.register_hash(held.block_table[b], content.hashes[b]);
    // Known content at admission is prefilled: a prompt's blocks (a
    // re-admission's generated ones among them, prefilled again).
    if (tiers_) tiers_->on_computed(content.hashes[b], held.block_table[b], true);
  }
}

void PagedPolicy::touch_admitted(const PrefixHit& hit, const SeqContent& content) const {
  // What register_eagerly's touch does for the blocks it registers, for
  // every block of the hashes at once: a later growth registers the next
  // ones with no content to read their runs from. Marking a key seen early
  // only keeps it eager (pending_hashes.hpp), and its chain, if any, is
  // materialised before its first block is registered.
  touch_runs(hit.content, content.registered_blocks, static_cast<int64_t>(hit.hashes.size()),
             Touch::registration);
}

void PagedPolicy::apply_grow(SeqSlot s, const GrowPlan& plan, int64_t new_tokens) {
  PagedPolicyBase::apply_grow(s, plan, new_tokens);
  SeqContent& content = content_[static_cast<size_t>(s)];
  if (plan.new_blocks > 0) note_tail(s, content);
  if (prefix_caching_) register_scheduled(s, content);
}

bool PagedPolicy::grow_in_place(SeqSlot s, int64_t new_tokens) {
  if (!PagedPolicyBase::grow_in_place(s, new_tokens)) return false;
  // Only a growth that fills a block can register one (most calls are
  // decodes inside their block: the content line is not read).
  const int64_t after = seq(s).tokens;
  if (prefix_caching_ && after / block_size() > (after - new_tokens) / block_size())
    register_scheduled(s, content_[static_cast<size_t>(s)]);
  return true;
}

// A verify pass's rejected drafts: registered_blocks never reaches them
// (register_scheduled stops at the known content's hashes, commit at the
// computed tokens, which count accepted drafts only), so the blocks the
// base releases carry no hash; the tail a decode's fill reads moves back.
void PagedPolicy::rollback(SeqSlot s, int64_t tokens) {
  SeqContent& content = content_[static_cast<size_t>(s)];
  PagedPolicyBase::rollback(s, tokens);
  if (content.registered_blocks > static_cast<int64_t>(seq(s).block_table.size()))
    throw std::logic_error("rollback below a registered block");
  note_tail(s, content);
}

}  // namespace kvsim
