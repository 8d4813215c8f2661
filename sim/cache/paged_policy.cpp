#include "sim/cache/paged_policy.hpp"

#include "sim/cache/eviction/eviction_registry.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "kernels/kv_layout.hpp"
#include "sim/cache/tiers/tier_metrics.hpp"
#include "sim/core/metrics.hpp"

namespace kvsim {

namespace {
std::shared_ptr<BlockPool> pool_of(const PagedParams& params) {
  if (params.shared_pool) return params.shared_pool;
  // The pool's map holds the hashes of registered blocks: none without
  // prefix caching, and with output hashes deferred mostly the prompts'
  // (a decode's blocks inside its output go pending, with no entry): a
  // quarter of the pool to start with, grown if more are registered. At
  // batch 1,024 of bench/bench_step_cost.cpp about 13K of 105K blocks
  // hold an entry at the end, and the full-size map was 2 MiB written at
  // construction, its entries spread over 13K lines of it.
  int64_t expected = params.num_blocks;
  if (!params.prefix_caching)
    expected = 0;
  else if (params.defer_output_hashes)
    expected = params.num_blocks / 4;
  return std::make_shared<BlockPool>(BlockPoolParams{params.num_blocks, params.eviction, expected});
}
}  // namespace

PagedPolicy::PagedPolicy(const PagedParams& params)
    : PagedPolicyBase(pool_of(params), params.block_size, params.block_bytes, params.host_blocks),
      prefix_caching_(params.prefix_caching),
      defer_(params.defer_output_hashes && params.prefix_caching && !params.shared_pool &&
             !pool_.eviction_order().uses_content()) {
  scratch_tokens_.resize(static_cast<size_t>(params.block_size));
}

PrefixHit PagedPolicy::lookup_prefix(const TokenView& tokens, std::vector<BlockHash>& memo) const {
  PrefixHit hit;
  if (!prefix_caching_) return hit;
  hit.tokens_queried = tokens.size();
  // Hash every full block of the known content once (the memo keeps them
  // across calls); the sequence registers them as its blocks get computed.
  const int64_t full_blocks = tokens.size() / block_size();
  // Every time, not only when the memo grows: the memo may come from a
  // lookup in another instance's cache (prefix-aware routing). Without a
  // chain there is no pending block to find; the keys are marked when the
  // blocks are registered (register_eagerly), so a router asking every
  // instance writes nothing in any of them.
  // (The touch reads a filter word per run: requested first, read once the
  // hashing, which needs nothing the touch changes, is done.)
  const bool touch = defer_ && !pending_.empty();
  if (touch) prefetch_seen_runs(tokens);
  // The last token is always recomputed, so at most (n - 1) / block_size
  // blocks can be hits (vLLM v1 get_computed_blocks).
  const int64_t max_hit_blocks = (tokens.size() - 1) / block_size();
  // The first block's map slot, which every lookup reads (most find
  // nothing there and stop: a miss on a map of ~10^5 blocks), is requested
  // as soon as its hash is known, and loads while the other blocks are
  // hashed (prepare_lookup may have asked for it earlier still).
  start_memo(tokens, memo);
  tokens.extend_block_hashes(memo, full_blocks, block_size(), scratch_tokens_.data());
  // The map slots a few blocks ahead are loaded while this one is looked up.
  constexpr int64_t kAhead = 8;
  for (int64_t b = 1; b < std::min(kAhead, max_hit_blocks); ++b)
    pool_.prefetch_lookup(memo[static_cast<size_t>(b)]);
  if (touch) touch_runs(tokens, 0, full_blocks, Touch::lookup);
  // Looked up from the memo, the hit's copy made after: a hash read back
  // from memmove's fresh wide stores waits for them to retire.
  for (int64_t b = 0; b < max_hit_blocks; ++b) {
    if (b + kAhead < max_hit_blocks) pool_.prefetch_lookup(memo[static_cast<size_t>(b + kAhead)]);
    const BlockId found = pool_.lookup(memo[static_cast<size_t>(b)]);
    if (found == kNoBlock) break;
    hit.blocks.push_back(found);
  }
  hit.hashes = std::move(spare_hit_hashes_);
  hit.hashes.assign(memo.begin(), memo.begin() + full_blocks);
  if (tiers_) {
    // Past the device's prefix, the chain may hold the next blocks.
    for (auto b = static_cast<int64_t>(hit.blocks.size()); b < max_hit_blocks; ++b) {
      const int tier = tiers_->find(hit.hashes[static_cast<size_t>(b)]);
      if (tier < 0) break;
      hit.tier_hits.push_back(static_cast<int8_t>(tier));
    }
  }
  hit.cached_tokens = static_cast<int64_t>(hit.blocks.size() + hit.tier_hits.size()) * block_size();
  hit.content = tokens;
  return hit;
}

int64_t PagedPolicy::device_prefix_tokens(const TokenView& tokens,
                                          std::vector<BlockHash>& memo) const {
  if (tiers_) return -1;
  if (!prefix_caching_) return 0;
  const int64_t full_blocks = tokens.size() / block_size();
  const int64_t max_hit_blocks = (tokens.size() - 1) / block_size();
  start_memo(tokens, memo);
  tokens.extend_block_hashes(memo, full_blocks, block_size(), scratch_tokens_.data());
  constexpr int64_t kAhead = 8;
  for (int64_t b = 1; b < std::min(kAhead, max_hit_blocks); ++b)
    pool_.prefetch_lookup(memo[static_cast<size_t>(b)]);
  // lookup_prefix touches every run of the prompt before its walk, so that
  // a block still pending (pending_hashes.hpp) is found. Only the block a
  // walk stops at decides the count: a pending block is found once its
  // run's chain is registered, and the block that stops the walk is the
  // only one whose run needs it (a block hashes inside the run it lies in
  // wholly, by that run's key). So the run of that block is touched and
  // the block looked up again; the other chains stay pending, which
  // registering them later makes no different (pending_hashes.hpp). A
  // router asking 64 instances then reads one filter word per instance,
  // not one per run of a long agent history.
  const bool touch = defer_ && !pending_.empty();
  int64_t b = 0;
  for (; b < max_hit_blocks; ++b) {
    if (b + kAhead < max_hit_blocks) pool_.prefetch_lookup(memo[static_cast<size_t>(b + kAhead)]);
    if (pool_.lookup(memo[static_cast<size_t>(b)]) != kNoBlock) continue;
    if (!touch) break;
    touch_runs(tokens, b, b + 1, Touch::lookup);
    if (pool_.lookup(memo[static_cast<size_t>(b)]) == kNoBlock) break;
  }
  return b * block_size();
}

void PagedPolicy::start_memo(const TokenView& tokens, std::vector<BlockHash>& memo) const {
  if (tokens.size() <= block_size()) return;  // no block can be a hit
  // The memo gets the room extend_block_hashes would give it at once, so
  // hashing the first block alone changes no allocation.
  if (memo.empty()) {
    const auto full_blocks = static_cast<size_t>(tokens.size() / block_size());
    if (full_blocks > memo.capacity()) memo.reserve(std::max(full_blocks, 2 * memo.capacity()));
    // extend_block_hashes(memo, 1, ...)'s hash, without its walk set up.
    memo.push_back(tokens.block_hash({}, 0, block_size(), scratch_tokens_.data()));
  }
  pool_.prefetch_lookup(memo[0]);
}

void PagedPolicy::prepare_lookup(const TokenView& tokens, std::vector<BlockHash>& memo) const {
  if (prefix_caching_) start_memo(tokens, memo);
}

AdmitPlan PagedPolicy::plan_admit(PrefixHit hit, int64_t new_tokens) const {
  AdmitPlan plan;
  plan.tokens = hit.cached_tokens + new_tokens;
  plan.new_blocks = blocks_for(plan.tokens) - static_cast<int64_t>(hit.blocks.size());
  // Hit blocks that sit in the free queue leave it when touched: they count
  // against the free capacity like new blocks.
  int64_t revived = 0;
  for (BlockId b : hit.blocks) revived += pool_.ref_count(b) == 0 ? 1 : 0;
  plan.fits = plan.new_blocks + revived <= pool_.num_free();
  plan.hit = std::move(hit);
  return plan;
}

PagedPolicy::SeqContent& PagedPolicy::open_content(SeqSlot s) {
  // The base hands out slots densely from 0, so this grows by at most one.
  if (content_.size() <= static_cast<size_t>(s)) content_.resize(static_cast<size_t>(s) + 1);
  return content_[static_cast<size_t>(s)];
}

SeqSlot PagedPolicy::apply_admit(const AdmitPlan& plan) {
  if (!plan.fits) throw std::logic_error("apply_admit with a plan that does not fit");
  const auto on_device = static_cast<int64_t>(plan.hit.blocks.size());
  const auto loaded = static_cast<int64_t>(plan.hit.tier_hits.size());
  // The lookup asked the tiers for the blocks past the device's prefix up
  // to the first miss: its round trips go on the step.
  if (tiers_ && plan.hit.content.size() > 0) {
    const int64_t lookable = (plan.hit.content.size() - 1) / block_size() - on_device;
    if (lookable > 0) tiers_->note_lookup(std::min(loaded + 1, lookable));
  }
  // Tier hits are read before allocation evicts anything below them.
  for (int64_t i = 0; i < loaded; ++i) {
    tiers_->load(plan.hit.hashes[static_cast<size_t>(on_device + i)],
                 plan.hit.tier_hits[static_cast<size_t>(i)], !plan.hit.readmission);
  }
  const SeqSlot s = open_seq(plan.hit.blocks, plan.new_blocks, plan.tokens);
  SeqContent& content = open_content(s);
  content.hashes = plan.hit.hashes;
  // note_last's value, read from the plan: the copy's last bytes were just
  // written by memmove's wide stores, and a 16-byte load from them waited
  // for the stores to retire (no store forwarding from those), the one
  // hot instruction of an admission.
  content.last = plan.hit.hashes.empty() ? BlockHash{} : plan.hit.hashes.back();
  content.registered_blocks = on_device + loaded;
  content.chain = PendingHashes::kNoChain;
  note_tail(s, content);
  // The blocks read back hold their content now: reusable at once.
  const std::vector<BlockId>& table = seq(s).block_table;
  for (int64_t b = on_device; b < on_device + loaded; ++b)
    pool_.register_hash(table[static_cast<size_t>(b)], content.hashes[static_cast<size_t>(b)]);
  // The blocks this step computes are findable from now on, by the next
  // admission of this pass too (vLLM V1: paged_policy_scheduled.cpp).
  if (prefix_caching_) {
    if (defer_) touch_admitted(plan.hit, content);
    register_scheduled(s, content);
  }
  if (plan.hit.readmission) {
    recompute_query_tokens_ += plan.hit.tokens_queried;
    recompute_hit_tokens_ += plan.hit.cached_tokens;
  } else {
    prefix_query_tokens_ += plan.hit.tokens_queried;
    prefix_hit_tokens_ += plan.hit.cached_tokens;
  }
  return s;
}

void PagedPolicy::hash_more_blocks(SeqContent& content, const TokenView& tokens, int64_t full) {
  // Blocks filled by generated tokens: hashed now, each chained on its parent
  // (the prompt's full blocks were hashed at admission).
  const auto have = static_cast<int64_t>(content.hashes.size());
  if (full == have + 1 && have > 0) {
    // A decode filled one block (most calls): the same hash as below, its
    // parent read from beside the count. Where the list is full, it first
    // gets the room extend_block_hashes would give it: twice its capacity,
    // or every block of the known content (a described output is known to
    // its end).
    if (content.hashes.size() == content.hashes.capacity()) {
      const int64_t known =
          tokens.prompt_len + (tokens.output_content != nullptr
                                   ? static_cast<int64_t>(tokens.output_content->size())
                                   : tokens.output_len);
      content.hashes.reserve(std::max({static_cast<size_t>(full), 2 * content.hashes.capacity(),
                                       static_cast<size_t>(known / block_size())}));
    }
    content.hashes.push_back(
        tokens.block_hash(content.last, have * block_size(), block_size(), scratch_tokens_.data()));
  } else {
    tokens.extend_block_hashes(content.hashes, full, block_size(), scratch_tokens_.data());
  }
  note_last(content);
}

void PagedPolicy::prepare_commit(SeqSlot s, const TokenView& tokens, int64_t computed_tokens) {
  if (!prefix_caching_) return;
  SeqContent& content = content_.at(static_cast<size_t>(s));
  if (computed_tokens < (content.registered_blocks + 1) * block_size()) return;
  if (const BlockId b = fill_on_chain(content, computed_tokens); b != kNoBlock) {
    pool_.prefetch_mark(b);  // what commit() will write
    // A decode that fills its last block takes a new one next step: its
    // table line is loaded now (nothing else reads it since the last grow).
    prefetch_table_end(s);
    return;
  }
  prepare_filled(s, content, tokens, computed_tokens);
}

void PagedPolicy::prepare_filled(SeqSlot s, SeqContent& content, const TokenView& tokens,
                                 int64_t computed_tokens) {
  const int64_t full = blocks_filled(s, computed_tokens);
  if (full == 0) return;
  const int64_t end = defer_ ? eager_end(content, tokens, full, Guess::unseen) : full;
  const std::vector<BlockId>& table = seq(s).block_table;
  for (int64_t b = std::max(end, content.registered_blocks); b < full; ++b) {
    pool_.prefetch_mark(table[static_cast<size_t>(b)]);  // deferred: see defer()
  }
  if (end <= content.registered_blocks) return;
  if (defer_)
    touch_runs(tokens, static_cast<int64_t>(content.hashes.size()), end, Touch::registration);
  hash_filled_blocks(content, tokens, end);
  for (int64_t b = content.registered_blocks; b < end; ++b)
    pool_.prefetch_register(table[static_cast<size_t>(b)], content.hashes[static_cast<size_t>(b)]);
}

void PagedPolicy::commit(SeqSlot s, const TokenView& tokens, int64_t computed_tokens) {
  if (!prefix_caching_) return;
  SeqContent& content = content_.at(static_cast<size_t>(s));
  if (computed_tokens < (content.registered_blocks + 1) * block_size()) return;
  // The short path of a decode filling a block on its chain: what defer()
  // does for that one block (see fill_on_chain).
  if (const BlockId b = fill_on_chain(content, computed_tokens); b != kNoBlock) {
    pending_.append(content.chain_tag, b, pool_);
    ++content.registered_blocks;
    return;
  }
  commit_filled(s, content, tokens, computed_tokens);
}

void PagedPolicy::commit_filled(SeqSlot s, SeqContent& content, const TokenView& tokens,
                                int64_t computed_tokens) {
  const int64_t full = blocks_filled(s, computed_tokens);
  if (full == 0) return;
  if (!defer_) {
    register_eagerly(s, content, tokens, full);
    return;
  }
  const int64_t end = eager_end(content, tokens, full);
  if (end > content.registered_blocks) register_eagerly(s, content, tokens, end);
  if (end < full) defer(s, content, tokens, full);
}

void PagedPolicy::commit_step(std::span<StepCommit> commits) {
  if (!prefix_caching_) {
    for (StepCommit& c : commits) c.horizon = std::numeric_limits<int64_t>::max();
    return;
  }
  // prepare_commit, commit and commit_horizon as written above, the checks
  // they share made once per entry. Every entry is prepared before the
  // first is committed, as the default does.
  const int64_t bs = block_size();
  // An entry's horizon, an output written last, holds meanwhile whether
  // its preparation found a fill on the chain (kFillOnChain) or not (0).
  constexpr int64_t kFillOnChain = -1;
  const BlockPool::PendingMarks marks = pool_.pending_marks();
  for (StepCommit& c : commits) {
    SeqContent& content = content_[static_cast<size_t>(c.seq)];
    c.horizon = 0;
    if (c.computed_tokens < (content.registered_blocks + 1) * bs) continue;
    if (const BlockId b = fill_on_chain(content, c.computed_tokens); b != kNoBlock) {
      marks.prefetch(b);
      prefetch_table_end(c.seq);
      c.horizon = kFillOnChain;
      continue;
    }
    prepare_filled(c.seq, content, c.tokens(), c.computed_tokens);
  }
  for (StepCommit& c : commits) {
    SeqContent& content = content_[static_cast<size_t>(c.seq)];
    // A fill on the chain when prepared is one still while the sequence
    // keeps its chain and registered no block since (nothing else moves its
    // tail): fill_on_chain's answer then, without its arithmetic again.
    if (c.horizon == kFillOnChain && content.chain != PendingHashes::kNoChain &&
        content.tail_index == content.registered_blocks) {
      pending_.append(content.chain_tag, content.tail_block, marks);
      ++content.registered_blocks;
    } else if (c.computed_tokens >= (content.registered_blocks + 1) * bs) {
      if (const BlockId b = fill_on_chain(content, c.computed_tokens); b != kNoBlock) {
        pending_.append(content.chain_tag, b, pool_);
        ++content.registered_blocks;
      } else {
        commit_filled(c.seq, content, c.tokens(), c.computed_tokens);
      }
    }
    c.horizon = (content.registered_blocks + 1) * bs;
  }
}

void PagedPolicy::register_eagerly(SeqSlot s, SeqContent& content, const TokenView& tokens,
                                   int64_t full) {
  const std::vector<BlockId>& table = seq(s).block_table;
  // Every block registered now, the prompt's hashed at lookup included.
  if (defer_) touch_runs(tokens, content.registered_blocks, full, Touch::registration);
  hash_filled_blocks(content, tokens, full);  // prepare_commit() usually has
  while (content.registered_blocks < full) {
    const int64_t b = content.registered_blocks;
    pool_.register_hash(table[static_cast<size_t>(b)], content.hashes[static_cast<size_t>(b)]);
    if (tiers_) {
      tiers_->on_computed(content.hashes[static_cast<size_t>(b)], table[static_cast<size_t>(b)],
                          (b + 1) * block_size() <= tokens.prompt_len);
    }
    ++content.registered_blocks;
  }
}

int64_t PagedPolicy::commit_horizon(SeqSlot s) const {
  // commit() returns at once below this count (see above).
  if (!prefix_caching_) return std::numeric_limits<int64_t>::max();
  return (content_.at(static_cast<size_t>(s)).registered_blocks + 1) * block_size();
}

HostSlot PagedPolicy::apply_swap_out(SeqSlot s, const SwapPlan& plan) {
  // Only hashes of blocks whose content is complete AND registered are kept:
  // those are the ones a swap-in may find still on device.
  const SeqContent& content = content_.at(static_cast<size_t>(s));
  if (content.chain != PendingHashes::kNoChain) {
    // Its hashes are needed now, and the sequence it comes back as keeps them.
    touch_key(pending_.key(content.chain));
  }
  std::vector<BlockHash> kept(
      content.hashes.begin(),
      content.hashes.begin() + std::min<int64_t>(content.registered_blocks,
                                                 static_cast<int64_t>(content.hashes.size())));
  const HostSlot h = PagedPolicyBase::apply_swap_out(s, plan);
  if (host_hashes_.size() <= static_cast<size_t>(h))
    host_hashes_.resize(static_cast<size_t>(h) + 1);
  host_hashes_[static_cast<size_t>(h)] = std::move(kept);
  return h;
}

int64_t PagedPolicy::blocks_to_copy(HostSlot h) const {
  int64_t on_device = 0;
  for (const BlockHash& hash : host_hashes_.at(static_cast<size_t>(h))) {
    if (pool_.lookup(hash) == kNoBlock) break;
    ++on_device;
  }
  return host(h).blocks - on_device;
}

SwapPlan PagedPolicy::plan_swap_in(HostSlot hs) const {
  const std::vector<BlockHash>& hashes = host_hashes_.at(static_cast<size_t>(hs));
  SwapPlan plan;
  plan.blocks = host(hs).blocks;
  plan.copy_blocks = blocks_to_copy(hs);
  plan.bytes = plan.copy_blocks * block_bytes();
  int64_t revived = 0;
  for (int64_t i = 0; i < plan.blocks - plan.copy_blocks; ++i) {
    revived += pool_.ref_count(pool_.lookup(hashes[static_cast<size_t>(i)])) == 0 ? 1 : 0;
  }
  plan.revived_blocks = revived;
  plan.fits = plan.copy_blocks + revived <= pool_.num_free();
  return plan;
}

SeqSlot PagedPolicy::apply_swap_in(HostSlot hs, const SwapPlan& plan) {
  if (!plan.fits) throw std::logic_error("apply_swap_in with a plan that does not fit");
  std::vector<BlockHash>& hashes = host_hashes_.at(static_cast<size_t>(hs));
  const int64_t kept = host(hs).blocks - plan.copy_blocks;
  std::vector<BlockId> on_device;
  for (int64_t i = 0; i < kept; ++i)
    on_device.push_back(pool_.lookup(hashes[static_cast<size_t>(i)]));
  const SeqSlot s = restore_from_host(hs, plan, on_device);
  SeqContent& content = open_content(s);
  content.hashes = std::move(hashes);
  note_last(content);
  content.registered_blocks = kept;
  note_tail(s, content);
  hashes.clear();
  return s;
}

CacheAccounting PagedPolicy::accounting() const {
  CacheAccounting a = PagedPolicyBase::accounting();
  a.prefix_query_tokens = prefix_query_tokens_;
  a.prefix_hit_tokens = prefix_hit_tokens_;
  a.recompute_query_tokens = recompute_query_tokens_;
  a.recompute_hit_tokens = recompute_hit_tokens_;
  return a;
}

void PagedPolicy::check_drained() const {
  PagedPolicyBase::check_drained();
  if (tiers_) tiers_->check_conserved();
}

void PagedPolicy::report(RunMetrics& metrics) const {
  if (tiers_) {
    tiers_->report(metrics, prefix_query_tokens_, prefix_hit_tokens_);
  } else if (prefix_query_tokens_ > 0) {
    // The device is the only tier: all of prefix_hit_rate is its own.
    metrics.part<KvTiersMetrics>().device_hit_rate =
        static_cast<double>(prefix_hit_tokens_) / static_cast<double>(prefix_query_tokens_);
  }
}

void PagedPolicy::attach_tiers(std::unique_ptr<TierChain> chain) {
  if (!prefix_caching_)
    throw std::logic_error("tiers below the device need the paged pool's prefix caching");
  tiers_ = std::move(chain);
  store_pins_.pool = &pool_;
  tiers_->set_pins(&store_pins_);
  // Evictions are heard from now on: every content needs its hash.
  materialise_all();
  defer_ = false;
  pool_.set_eviction_listener(tiers_.get());
}

bool PagedPolicy::set_kv_event_listener(KvEventListener* listener) {
  if (!prefix_caching_) return false;  // no content is ever findable
  if (listener != nullptr && defer_) {
    materialise_all();
    defer_ = false;
  }
  pool_.set_kv_event_listener(listener);
  return true;
}

bool PagedPolicy::share_tier(std::shared_ptr<KvTier> shared) {
  return tiers_ && tiers_->share_tier(std::move(shared));
}

TierLoad PagedPolicy::take_tier_load() {
  return tiers_ ? tiers_->take_load() : TierLoad{};
}

}  // namespace kvsim
