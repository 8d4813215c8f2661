#pragma once
// `paged` (seeds 000 and 001): one pre-allocated pool of fixed-size blocks,
// per-sequence block tables, prefix caching by chained block hashes with
// reference counts and LRU reuse of freed cached blocks, and block-level swap
// to a bounded host pool. The block tables, swap and accounting are
// PagedPolicyBase's; this class adds the content hashes: looking them up,
// registering computed blocks, and reviving blocks still on device at
// swap-in. Blocks a decode fills inside a described output are registered
// without their hash until someone could look them up
// (paged_policy_deferred.cpp, pending_hashes.hpp): every answer is the same.
//
// When a block becomes findable follows vLLM V1 (docs/vllm-rules.md): a
// full block whose content the scheduled tokens fix is registered when it
// is allocated for them, before the step runs, so a request admitted later
// in the same scheduling pass finds it (vllm/v1/core/kv_cache_manager.py
// KVCacheManager.allocate_slots, which calls cache_blocks up to
// min(num_computed + num_new, request.num_tokens), at commit 003df29;
// nano-vllm's BlockManager.allocate and may_append register at allocation
// too). Those are the blocks whose hashes the admission's lookup computed
// (the known content: the prompt, and what a re-admitted sequence had
// generated); a block a decode fills is registered by the commit after the
// step (paged_policy_scheduled.cpp says why nobody can tell).
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "kernels/kv_layout.hpp"
#include "sim/cache/block_pool.hpp"
#include "sim/cache/kv_cache_policy.hpp"
#include "sim/cache/paged_policy_base.hpp"
#include "sim/cache/pending_hashes.hpp"

namespace kvsim {

struct PagedParams {
  int64_t num_blocks = 0;
  int64_t block_size = 0;  // tokens per block
  Bytes block_bytes = 0;   // per rank
  bool prefix_caching = true;
  int64_t host_blocks = 0;  // swap space in blocks
  // Which free block is reused (and its cached hash evicted) first; a name
  // of eviction_order_names(). `lru` is vLLM's free queue.
  std::string eviction = "lru";
  // When set, the blocks come from this pool (shared with the other KV
  // cache groups of a hybrid model) and num_blocks / eviction are its.
  std::shared_ptr<BlockPool> shared_pool = nullptr;
  // Blocks filled inside a described output are registered without their
  // hash, which is computed when someone could need it (pending_hashes.hpp);
  // taken only where that cannot be observed (an own pool whose eviction
  // order ignores content, no tiers). Not a YAML knob: results are the same
  // either way, and tests turn it off to compare.
  bool defer_output_hashes = true;
};

class PagedPolicy final : public PagedPolicyBase {
 public:
  explicit PagedPolicy(const PagedParams& params);

  std::string_view name() const override { return "paged"; }
  using KvCachePolicy::lookup_prefix;
  PrefixHit lookup_prefix(const TokenView& tokens, std::vector<BlockHash>& memo) const override;
  // The device's part of lookup_prefix, counted; -1 with tiers attached.
  int64_t device_prefix_tokens(const TokenView& tokens,
                               std::vector<BlockHash>& memo) const override;
  // The memo's first block hashed and its map slot requested (the slot the
  // lookup reads first: most lookups find nothing there and stop).
  void prepare_lookup(const TokenView& tokens, std::vector<BlockHash>& memo) const override;
  // The hit's hashes keep their room for the next lookup's.
  void give_back(PrefixHit&& hit) override { spare_hit_hashes_ = std::move(hit.hashes); }
  AdmitPlan plan_admit(PrefixHit hit, int64_t new_tokens) const override;
  SeqSlot apply_admit(const AdmitPlan& plan) override;
  // The base's, and the sequence's new last block noted beside its content;
  // the blocks the growth's tokens fill whose hashes are known are
  // registered now (register_scheduled).
  void apply_grow(SeqSlot seq, const GrowPlan& plan, int64_t new_tokens) override;
  bool grow_in_place(SeqSlot seq, int64_t new_tokens) override;
  // Inline: the scheduler's bulk decodes call it, directly, at most of a
  // step's new blocks (Scheduler::bulk_loop_for).
  SettledGrowth settle_and_grow(SeqSlot s, int64_t settled, int64_t new_tokens) override {
    return settle_then_grow(s, settled, new_tokens, [&](const std::vector<BlockId>& table) {
      note_tail(table, content_[static_cast<size_t>(s)]);
    });
  }
  // Registers the hashes of newly computed full blocks.
  void commit(SeqSlot seq, const TokenView& tokens, int64_t computed_tokens) override;
  // commit(), prepare_commit() and commit_step() read a sequence's table and
  // content, never its count of tokens in place: a caller advancing decodes
  // in bulk may leave that count unsettled across a commit (see
  // KvCachePolicy::settle_in_place; Scheduler::advance_at_event).
  static constexpr bool kCommitReadsTokensInPlace = false;
  int64_t commit_horizon(SeqSlot seq) const override;
  void prepare_commit(SeqSlot seq, const TokenView& tokens, int64_t computed_tokens) override;
  // Those three calls per entry, with the decode that fills its block on
  // its chain (fill_on_chain) taken in the loop itself.
  void commit_step(std::span<StepCommit> commits) override;
  // The base's, and the sequence's content line, which prepare_commit and
  // commit read when a block fills (the event the scheduler prefetches for).
  // `seq` is held, as for the base: its content line exists (open_content).
  void prefetch(SeqSlot seq) const override {
    PagedPolicyBase::prefetch(seq);
    __builtin_prefetch(content_.data() + static_cast<size_t>(seq));
  }
  // Keeps the hashes of the registered blocks, to revive them on swap-in.
  HostSlot apply_swap_out(SeqSlot seq, const SwapPlan& plan) override;
  // Copies in only the blocks whose content is no longer on device.
  SwapPlan plan_swap_in(HostSlot host) const override;
  SeqSlot apply_swap_in(HostSlot host, const SwapPlan& plan) override;
  CacheAccounting accounting() const override;
  // The pool's base checks, then the tiers' conservation.
  void check_drained() const override;
  // Lets the sequence's pending blocks outlive it (they stay cached).
  void release(SeqSlot seq) override;
  // Rejected drafts' slots back (paged_policy_scheduled.cpp): their blocks
  // were never registered, and the tail the commit reads is noted again.
  bool supports_rollback() const override { return true; }
  void rollback(SeqSlot seq, int64_t tokens) override;
  void report(RunMetrics& metrics) const override;
  // Evicted blocks go down the chain, prefix lookups continue into it.
  void attach_tiers(std::unique_ptr<TierChain> chain) override;
  TierLoad take_tier_load() override;
  bool share_tier(std::shared_ptr<KvTier> shared) override;
  const TierChain* tiers() const override { return tiers_.get(); }
  // The pool's own hashes: deferral stops (a pending block has no hash to
  // publish), which changes no answer (pending_hashes.hpp).
  bool set_kv_event_listener(KvEventListener* listener) override;
  // Content hashes of a held sequence's full blocks known so far (prefix
  // caching on), and how many of its leading blocks are registered.
  const std::vector<BlockHash>& content_hashes(SeqSlot seq) const;
  int64_t registered_blocks(SeqSlot seq) const {
    return content_.at(static_cast<size_t>(seq)).registered_blocks;
  }

 private:
  // A held sequence's content, by SeqSlot; set whenever the slot is opened.
  // One cache line per slot: a block filled by a decode is hashed from
  // `last` (its parent) without waiting on a miss in the list first.
  struct alignas(64) SeqContent {
    std::vector<BlockHash> hashes;  // of the first hashes.size() full blocks
    int64_t registered_blocks = 0;  // full blocks whose hash is in the pool's map
    BlockHash last;                 // hashes.back(), or zero when hashes is empty
    // Its blocks registered but not yet hashed, [hashes.size(),
    // registered_blocks), or kNoChain.
    PendingHashes::ChainId chain = PendingHashes::kNoChain;
    uint32_t chain_tag = 0;  // its tag, read here rather than from the chain
    // The last entry of the block table and its index, copied here whenever
    // the table grows (note_tail). A decode fills the block it was last
    // given, so with a chain the fill is decided from this line alone: the
    // block table, far away on the heap, is not read (fill_on_chain).
    int32_t tail_index = -1;
    BlockId tail_block = kNoBlock;
  };
  static_assert(sizeof(SeqContent) == 64, "one cache line per sequence");

  // The content of slot s, grown to cover it: called wherever the base opens a slot.
  SeqContent& open_content(SeqSlot s);
  // Copies the table's last entry of slot s into its content (SeqContent::tail_block).
  void note_tail(SeqSlot s, SeqContent& content) const { note_tail(seq(s).block_table, content); }
  static void note_tail(const std::vector<BlockId>& table, SeqContent& content) {
    content.tail_index = static_cast<int32_t>(table.size()) - 1;
    content.tail_block = table.empty() ? kNoBlock : table.back();
  }
  // prepare_commit() and commit() of a commit that reaches past the
  // sequence's first unregistered block (below it they do nothing) and is
  // not a fill on its chain.
  void prepare_filled(SeqSlot s, SeqContent& content, const TokenView& tokens,
                      int64_t computed_tokens);
  void commit_filled(SeqSlot s, SeqContent& content, const TokenView& tokens,
                     int64_t computed_tokens);
  // The block a commit up to `computed_tokens` fills when that is the one
  // block after content.registered_blocks, the table's last, and the
  // sequence's chain takes it (the common decode fill): every other case
  // reads kNoBlock and goes the long way. The same answer as the long way:
  // eager_end() returns registered_blocks for a sequence with a chain, so
  // defer() appends exactly table[registered_blocks].
  BlockId fill_on_chain(const SeqContent& content, int64_t computed_tokens) const {
    const int64_t r = content.registered_blocks;
    if (content.chain == PendingHashes::kNoChain || content.tail_index != r ||
        computed_tokens >= (r + 2) * block_size())
      return kNoBlock;
    return content.tail_block;
  }
  // The full blocks a commit up to `computed_tokens` registers up to, once
  // it is past the sequence's horizon (commit_horizon: below it a commit
  // has nothing to do, and the callers have told that by a multiply).
  int64_t blocks_filled(SeqSlot s, int64_t computed_tokens) const {
    const auto table_blocks = static_cast<int64_t>(seq(s).block_table.size());
    return std::min<int64_t>(computed_tokens / block_size(), table_blocks);
  }
  // Sets content.last after content.hashes changed.
  // Hashes the memo's first block if it has none, and requests that
  // block's map slot; nothing when no block of `tokens` can be a hit.
  void start_memo(const TokenView& tokens, std::vector<BlockHash>& memo) const;
  static void note_last(SeqContent& content) {
    content.last = content.hashes.empty() ? BlockHash{} : content.hashes.back();
  }
  // Extends content.hashes over the first `full` blocks (inline: most calls
  // find them hashed, the prompt's at lookup or the block at its prepare).
  void hash_filled_blocks(SeqContent& content, const TokenView& tokens, int64_t full) {
    if (full > static_cast<int64_t>(content.hashes.size())) hash_more_blocks(content, tokens, full);
  }
  void hash_more_blocks(SeqContent& content, const TokenView& tokens, int64_t full);
  // The block up to which commit(..., full) registers with hashes; the
  // blocks after it, up to `full`, are deferred. With Guess::unseen (from
  // prepare_commit, whose work is only hints and hashes commit() would
  // compute anyway) a run's key is taken as not seen and its filter word
  // only requested: commit() reads it, with the other commits' misses
  // overlapped, and decides.
  enum class Guess { none, unseen };
  int64_t eager_end(const SeqContent& content, const TokenView& tokens, int64_t full,
                    Guess guess = Guess::none) const;
  // Hashes (hash_filled_blocks) and registers blocks up to `end`.
  void register_eagerly(SeqSlot s, SeqContent& content, const TokenView& tokens, int64_t end);
  // Registers blocks [registered_blocks, full) pending, on the sequence's chain.
  void defer(SeqSlot s, SeqContent& content, const TokenView& tokens, int64_t full);
  // What a touch does to a run's key: a lookup only reads the map, so it
  // only needs the key's pending blocks registered (if it has a chain); a
  // registration must also keep the key from ever going pending after it.
  enum class Touch { lookup, registration };
  // Before blocks [first, end) of `tokens` are looked up or registered:
  // touch_key() for every run that holds one of them whole (the blocks
  // hashed from a run's key).
  void touch_runs(const TokenView& tokens, int64_t first, int64_t end, Touch touch) const;
  // Starts loading the filter words touch_runs() reads for the runs of
  // `tokens` (the first few: a hint).
  void prefetch_seen_runs(const TokenView& tokens) const;
  // Someone may hash content of run `key`: its pending blocks are
  // registered now, and after a registration it never goes pending again.
  // Logically const: the cache answers as before, with the hashes it
  // defers computed.
  void touch_key(uint64_t key, Touch touch = Touch::registration) const;
  void materialise(PendingHashes::ChainId chain) const;
  // Every chain (the deferral stops: tiers were attached).
  void materialise_all();
  // Blocks a swap-in must copy: those whose content is no longer on device.
  int64_t blocks_to_copy(HostSlot h) const;
  // vLLM V1's cache_blocks at allocation (paged_policy_scheduled.cpp):
  // registers the sequence's blocks that its tokens held (computed or
  // scheduled) fill and whose hashes are known, from registered_blocks on.
  void register_scheduled(SeqSlot s, SeqContent& content);
  // At admission, before any of its blocks is registered: the runs of every
  // block whose hash the lookup computed are touched for registration.
  void touch_admitted(const PrefixHit& hit, const SeqContent& content) const;

  bool prefix_caching_;
  bool defer_;  // defer_output_hashes, where it is exact
  // Mutable for touch_key(): a const lookup may compute deferred hashes.
  mutable std::vector<SeqContent> content_;
  mutable PendingHashes pending_;
  // A swapped-out sequence's registered blocks' hashes, by HostSlot.
  std::vector<std::vector<BlockHash>> host_hashes_;
  int64_t prefix_query_tokens_ = 0;
  int64_t prefix_hit_tokens_ = 0;
  int64_t recompute_query_tokens_ = 0;  // re-admissions after a recompute preemption
  int64_t recompute_hit_tokens_ = 0;
  mutable std::vector<int32_t> scratch_tokens_;  // reused buffer for hashing
  // The room of a hit handed back (give_back), for the next lookup's hashes.
  mutable std::vector<BlockHash> spare_hit_hashes_;
  std::unique_ptr<TierChain> tiers_;  // null without kv_tiers
  // A block an async store reads holds a reference of the pool's until the
  // store lands (tier_chain.hpp's StorePins): neither free nor evictable.
  struct PoolPins final : StorePins {
    BlockPool* pool = nullptr;
    void pin(BlockId b) override { pool->add_reference(b); }
    void unpin(BlockId b) override { pool->release(b); }
  };
  PoolPins store_pins_;
};

}  // namespace kvsim
