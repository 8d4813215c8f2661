#pragma once
// The interface every KV-cache policy implements (SPEC 6): look up reusable
// content, admit a sequence, grow it, record what a step computed, release it,
// swap it out and in, and report its accounting.
//
// Contract: plan_*() and lookup_prefix() are const and never change the cache;
// apply_*() are the only mutators and take a plan made against the current
// state (llama.cpp's find_slot / apply_ubatch split, DESIGN practice 9);
// settle_and_grow() and commit_step() each stand for a fixed run of the
// calls below, fused where the scheduler and the engine make that run for
// most sequences of a step (each says which). The
// scheduler calls the policy at most once per sequence per step, never per token
// (decodes inside their in-place room not at all: see in_place_room).
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "base/units.hpp"
#include "models/step_ops.hpp"
#include "sim/cache/block_hash.hpp"
#include "sim/cache/block_pool.hpp"
#include "sim/cache/tiers/tier_chain.hpp"
#include "workloads/token_content.hpp"

namespace kvsim {

struct RunMetrics;

// A sequence's content: its prompt followed by the tokens generated so far.
// Either part is ids (the pointer) or a described content (workloads/
// token_content.hpp) whose ids are generated only when read.
struct TokenView {
  const int32_t* prompt = nullptr;
  int64_t prompt_len = 0;
  const int32_t* output = nullptr;
  int64_t output_len = 0;                        // generated so far (known content)
  const TokenContent* prompt_content = nullptr;  // when `prompt` is null
  const TokenContent* output_content = nullptr;  // when `output` is null
  int32_t id_slot = -1;  // the slot the request names (llama_cells' id_slot), -1 none
  // The request clears the cache first (llama-bench's llama_memory_clear
  // before a run; llama_cells honours it), so nothing of it is cached.
  bool clear_context = false;

  // The view of a request's content with `generated` output tokens known.
  static TokenView of(const TokenContent& prompt, const TokenContent& output, int64_t generated) {
    TokenView v;
    v.prompt_len = static_cast<int64_t>(prompt.size());
    v.output_len = generated;
    if (prompt.described())
      v.prompt_content = &prompt;
    else
      v.prompt = prompt.data();
    if (output.described())
      v.output_content = &output;
    else
      v.output = output.data();
    return v;
  }

  int64_t size() const { return prompt_len + output_len; }
  int32_t at(int64_t i) const {
    if (i < prompt_len) return prompt ? prompt[i] : prompt_content->at(i);
    return output ? output[i - prompt_len] : output_content->at(i - prompt_len);
  }
  // Copies [begin, begin + count) into dst.
  void copy(int64_t begin, int64_t count, int32_t* dst) const;
  // The ids of [begin, begin + count): in place where the view holds them
  // in one array (inside the held prompt or the held output), else copied
  // into `scratch` (>= count) and read from there.
  const int32_t* ids(int64_t begin, int64_t count, int32_t* scratch) const {
    if (begin + count <= prompt_len && prompt) return prompt + begin;
    if (begin >= prompt_len && output) return output + (begin - prompt_len);
    copy(begin, count, scratch);
    return scratch;
  }
  // The prompt as ids (generated and kept by a described content).
  const int32_t* prompt_ids() const { return prompt ? prompt : prompt_content->data(); }
  // chained_block_hash of the block [begin, begin + count): from its run's
  // key and offset when the block lies inside one described run (no ids
  // generated), else from its ids (copied through `scratch`, >= count).
  BlockHash block_hash(const BlockHash& parent, int64_t begin, int64_t count,
                       int32_t* scratch) const;
  // Extends `hashes` (each block's chained on the one before) to the first
  // `blocks` full blocks of `block_size` tokens: the block_hash of each, with
  // one pass over the described runs instead of a search per block.
  void extend_block_hashes(std::vector<BlockHash>& hashes, int64_t blocks, int64_t block_size,
                           int32_t* scratch) const;
};

using SeqSlot = int32_t;  // a policy's handle for a sequence it holds
constexpr SeqSlot kNoSeq = -1;
using HostSlot = int32_t;  // a policy's handle for a sequence swapped to the host

struct PrefixHit {
  int64_t cached_tokens = 0;      // tokens whose KV is reused (multiple of the block size)
  std::vector<BlockId> blocks;    // the blocks holding them, in order
  std::vector<BlockHash> hashes;  // hashes of the full blocks of the known content
  int64_t tokens_queried = 0;     // tokens looked up (for the hit rate)
  // The content looked up (it outlives the admission): a policy that
  // registers blocks when it allocates them reads their runs from it.
  TokenView content;
  // chunk_lru (seed 003): `hashes` are the content hashes of the prompt's
  // segments before the question and these their token counts (separator
  // included); empty for block-prefix policies.
  std::vector<int64_t> segment_tokens;
  // Set by the scheduler: the sequence was admitted before and lost its KV
  // to a recompute preemption. Its hits are mostly its own blocks found
  // again, so they are counted apart from prefix sharing.
  bool readmission = false;
  // Tiers below the device (sim/cache/tiers/): the blocks right after
  // `blocks` found in a lower tier, by tier index; cached_tokens counts them.
  // They are read back into freshly allocated blocks at admission.
  std::vector<int8_t> tier_hits;
};

struct AdmitPlan {
  bool fits = false;
  PrefixHit hit;
  int64_t tokens = 0;      // cached + newly scheduled tokens the sequence will hold
  int64_t new_blocks = 0;  // blocks to allocate from the free queue
};

struct GrowPlan {
  bool fits = false;
  int64_t new_blocks = 0;
};

// What settle_and_grow() did: grew the sequence (and the in-place room it
// has after), or did not fit (with the settled tokens counted all the same).
struct SettledGrowth {
  bool grown = false;
  int64_t room = 0;  // in_place_room() after the growth; 0 when not grown
};

// One sequence's commit among a step's (commit_step): what commit() takes,
// and the commit_horizon() it leaves, which commit_step() writes. The
// content is built only when the commit reads it (tokens()): a decode
// filling its block on a deferred chain reads none, and most of a step's
// commits are such fills.
struct StepCommit {
  // The sequence's content with `generated` output tokens known, from
  // `source` (whatever keeps it: a Sequence, the scheduler's list).
  using ContentOf = TokenView (*)(const void* source, SeqSlot seq, int64_t generated);
  SeqSlot seq = kNoSeq;
  int64_t computed_tokens = 0;
  int64_t generated = 0;
  const void* source = nullptr;
  ContentOf content_of = nullptr;
  int64_t horizon = 0;  // out

  TokenView tokens() const { return content_of(source, seq, generated); }
  // A commit of `tokens` as they are (it must outlive the commit_step call).
  static StepCommit of(SeqSlot seq, const TokenView& tokens, int64_t computed_tokens) {
    return {
        seq, computed_tokens, tokens.output_len, &tokens,
        [](const void* view, SeqSlot, int64_t) { return *static_cast<const TokenView*>(view); }};
  }
};

struct SwapPlan {
  bool fits = false;           // host space (swap out) or device space (swap in)
  int64_t blocks = 0;          // blocks the sequence holds
  int64_t copy_blocks = 0;     // blocks that must cross the host link
  Bytes bytes = 0;             // copy_blocks * block_bytes
  int64_t revived_blocks = 0;  // swap in: kept blocks that leave the free queue
};

// What a policy reports (SPEC 9 kv_cache.* and memory.kv_bytes).
struct CacheAccounting {
  int64_t num_blocks = 0;
  int64_t block_size = 0;      // tokens per block
  Bytes block_bytes = 0;       // per tensor-parallel rank
  int64_t blocks_used = 0;     // referenced now
  int64_t slots_reserved = 0;  // sum over sequences of block slots held
  int64_t tokens_held = 0;     // sum over sequences of token slots in use
  uint64_t evictions = 0;      // cached blocks whose content was overwritten
  Bytes bytes_moved = 0;       // swap + copies, per rank
  Bytes swapped_bytes = 0;     // over the host link, per rank
  uint64_t pointer_updates = 0;
  int64_t prefix_query_tokens = 0;
  int64_t prefix_hit_tokens = 0;
  // The same for re-admissions after a recompute preemption (PrefixHit::readmission).
  int64_t recompute_query_tokens = 0;
  int64_t recompute_hit_tokens = 0;
  int64_t host_blocks_used = 0;
  int64_t window_evicted_tokens = 0;  // sliding_window: tokens whose blocks left the window
};

class KvCachePolicy {
 public:
  virtual ~KvCachePolicy() = default;
  virtual std::string_view name() const = 0;

  // Longest cached prefix of `tokens`, never the whole of it (the last token
  // is always computed so the step yields logits, as vLLM does). `memo`
  // belongs to the sequence: the content hashes of its full blocks computed
  // so far, extended in place, so a request that waits at the head of the
  // queue for several steps is hashed once, not once per step.
  virtual PrefixHit lookup_prefix(const TokenView& tokens, std::vector<BlockHash>& memo) const = 0;
  PrefixHit lookup_prefix(const TokenView& tokens) const {
    std::vector<BlockHash> memo;
    return lookup_prefix(tokens, memo);
  }
  // The leading tokens of `tokens` in blocks lookup_prefix(tokens, memo)
  // would find on the device, for a reader that wants only that count (a
  // router asking every instance): the same number, without the hit's
  // vectors.
  // -1 when the policy answers only through lookup_prefix (a tier below
  // the device, whose hits the caller must see too).
  virtual int64_t device_prefix_tokens(const TokenView& tokens,
                                       std::vector<BlockHash>& memo) const {
    (void)tokens;
    (void)memo;
    return -1;
  }
  // A hint that lookup_prefix(tokens, memo) comes soon (the next sequence
  // in the queue): a policy may start its memo and load what the lookup
  // will read first. Nothing it does changes any result.
  virtual void prepare_lookup(const TokenView& tokens, std::vector<BlockHash>& memo) const {
    (void)tokens;
    (void)memo;
  }
  // The hit of a lookup whose plan was applied or dropped, handed back: a
  // policy may keep its vectors' room for the next lookup (one allocation
  // and one free an admission otherwise).
  virtual void give_back(PrefixHit&& hit) { (void)hit; }
  // Room for a new sequence holding hit.cached_tokens + new_tokens tokens.
  virtual AdmitPlan plan_admit(PrefixHit hit, int64_t new_tokens) const = 0;
  virtual SeqSlot apply_admit(const AdmitPlan& plan) = 0;

  // Room for `new_tokens` more tokens of a sequence the policy holds.
  virtual GrowPlan plan_grow(SeqSlot seq, int64_t new_tokens) const = 0;
  virtual void apply_grow(SeqSlot seq, const GrowPlan& plan, int64_t new_tokens) = 0;
  // plan_grow + apply_grow in one call when the growth needs no new block
  // (most decodes): true when it grew the sequence; false, with nothing
  // changed, when it needs blocks or the policy does not say (the default).
  virtual bool grow_in_place(SeqSlot seq, int64_t new_tokens) {
    (void)seq;
    (void)new_tokens;
    return false;
  }
  // Growth by deltas, for callers that advance many decodes a step at once:
  // in_place_room() is how many more tokens grow_in_place(seq, ...) would
  // take, counted from now, 0 when the policy does not say (the default: its
  // sequences then grow one call at a time). It never reaches past the
  // sequence's last block (a table holds no whole block ahead of its tokens),
  // which an observer of block writes relies on (SchedulerParams::watched). A caller that grows
  // sequences within that room tells the policy the step's total with grow_in_place_bulk() (its
  // totals, e.g. accounting().tokens_held, move at once), and each sequence's own share with
  // settle_in_place() before it next asks anything about that sequence (plan_grow, commit, release,
  // swap; not commit where the policy's commit never reads that count, as PagedPolicy declares with
  // kCommitReadsTokensInPlace): the pair leaves the policy as grow_in_place() calls would.
  // Starts loading what the next call about `seq` reads, so a caller
  // going through many sequences does not wait on each in turn. Nothing
  // observable changes; the default does nothing.
  virtual void prefetch(SeqSlot seq) const { (void)seq; }
  virtual int64_t in_place_room(SeqSlot seq) const {
    (void)seq;
    return 0;
  }
  // True when in_place_room() counts a sequence's room (then a caller may
  // also grow it by a block with plan_grow/apply_grow in between, after a
  // settle_in_place of its bulk tokens so far); false (the default) when
  // the policy does not say and its sequences grow one call at a time.
  virtual bool counts_in_place_room() const { return false; }
  virtual void grow_in_place_bulk(int64_t tokens) {
    if (tokens != 0) throw std::logic_error("grow_in_place_bulk on a policy with no in-place room");
  }
  virtual void settle_in_place(SeqSlot seq, int64_t tokens) {
    (void)seq;
    if (tokens != 0) throw std::logic_error("settle_in_place on a policy with no in-place room");
  }
  // settle_in_place(seq, settled), then plan_grow(seq, new_tokens) and, if
  // it fits, apply_grow and in_place_room: the question a caller growing a
  // bulk decode past its room asks (at batch 1,024 about 60 sequences a
  // step each take a block this way). That frequency, four virtual calls
  // each re-reading the sequence's record, is why plan and apply are fused
  // here; everywhere else they stay apart. When the growth does not fit,
  // nothing but the settle has happened. The default is those calls; a
  // policy that counts in-place room may answer from one look.
  virtual SettledGrowth settle_and_grow(SeqSlot seq, int64_t settled, int64_t new_tokens) {
    if (settled != 0) settle_in_place(seq, settled);
    const GrowPlan plan = plan_grow(seq, new_tokens);
    if (!plan.fits) return {};
    apply_grow(seq, plan, new_tokens);
    return {true, in_place_room(seq)};
  }

  // A step finished: the first `computed_tokens` tokens of `tokens` now have
  // their KV in the cache (full blocks become reusable by content). A policy
  // may have made some findable already, when the step that computes them
  // allocated them (PagedPolicy does, as vLLM V1: docs/vllm-rules.md).
  virtual void commit(SeqSlot seq, const TokenView& tokens, int64_t computed_tokens) = 0;
  // Ahead of a run of commits: does what commit(seq, tokens,
  // computed_tokens) will do that depends on nothing else (hashing the
  // blocks it fills) and starts loading the memory it will write, so a
  // step's commits do not each wait on their cache misses in turn. Nothing
  // observable changes; the default does nothing.
  virtual void prepare_commit(SeqSlot seq, const TokenView& tokens, int64_t computed_tokens) {
    (void)seq;
    (void)tokens;
    (void)computed_tokens;
  }
  // Computed tokens below which commit(seq, ...) would change nothing, as
  // the sequence stands after its last commit: callers may skip those
  // commits until then, or until the sequence is admitted or swapped in
  // again. 0 (the default) means any commit may matter.
  virtual int64_t commit_horizon(SeqSlot seq) const {
    (void)seq;
    return 0;
  }
  // A step's commits, in batch order (the order matters when two sequences
  // register the same content: the first stays canonical): every
  // prepare_commit first, then each commit and its commit_horizon, written
  // to the entry. The same as those calls (the default makes them); a step
  // at batch 1,024 has ~60 of them, mostly a decode filling its block, which
  // a policy may take without a call per entry.
  virtual void commit_step(std::span<StepCommit> commits) {
    for (const StepCommit& c : commits) prepare_commit(c.seq, c.tokens(), c.computed_tokens);
    for (StepCommit& c : commits) {
      commit(c.seq, c.tokens(), c.computed_tokens);
      c.horizon = commit_horizon(c.seq);
    }
  }
  // The sequence finished or is preempted by recompute: drop its references.
  virtual void release(SeqSlot seq) = 0;
  // Speculative decoding: the last `tokens` token slots the sequence holds
  // were drafts the target rejected. Their slots go back, and so does every
  // block left with none (the partly filled block keeps its place); nothing
  // of them was committed, so no hash of theirs is ever registered. Called
  // after the step and before its commit. A policy that cannot take its
  // tokens back says so (false, the default: the scenario's checks refuse
  // speculation on it first).
  virtual bool supports_rollback() const { return false; }
  virtual void rollback(SeqSlot seq, int64_t tokens) {
    (void)seq;
    (void)tokens;
    throw std::logic_error("this cache policy cannot give back rejected draft slots");
  }

  virtual SwapPlan plan_swap_out(SeqSlot seq) const = 0;
  virtual HostSlot apply_swap_out(SeqSlot seq, const SwapPlan& plan) = 0;
  virtual SwapPlan plan_swap_in(HostSlot host) const = 0;
  virtual SeqSlot apply_swap_in(HostSlot host, const SwapPlan& plan) = 0;

  // Block table of a held sequence (for slot mappings and numerics).
  virtual const std::vector<BlockId>& block_table(SeqSlot seq) const = 0;
  virtual int64_t free_blocks() const = 0;
  virtual CacheAccounting accounting() const = 0;
  // Throws std::logic_error unless every block is back in the pool with no
  // reference and no sequence is held: called after every run.
  virtual void check_drained() const = 0;
  // Cached tokens a new token attends to when `context_tokens` are before it
  // (sliding_window caps it at window - 1; the timing model prices this many).
  virtual int64_t attention_context(int64_t context_tokens) const { return context_tokens; }
  // False when attention_context() is the identity, so a caller may sum
  // contexts without asking for each one.
  virtual bool caps_attention_context() const { return false; }
  // The output tokens a request of `prompt` + `output` tokens may generate
  // under the policy's own context rule (llama-server: a prompt of a slot's
  // context or more is refused, a reply stops where the context is full):
  // `output` when it has none (the default), 0 when the request is refused.
  // Called once per request as it arrives; the policy may count what it cut.
  virtual int64_t context_limited_output(int64_t prompt, int64_t output) {
    (void)prompt;
    return output;
  }

  // Device work the policy itself ran since the last call, besides the
  // batch's own tokens (seed 003: missed chunks prefilled alone at a virtual
  // position, cached chunks copied into the main pool and re-rotated),
  // appended to `pass`; true when there was any. The engine prices `pass` as
  // a pass of its own ahead of the step that admitted the sequences.
  virtual bool take_pending_work(StepWork& pass) {
    (void)pass;
    return false;
  }
  // Adds the policy's own counters to the run's metrics (kv_cache.chunk_*).
  virtual void report(RunMetrics& metrics) const { (void)metrics; }

  // Tiers below device HBM (`kv_tiers:`): a policy with a prefix cache
  // takes a chain; the others refuse it (the scenario reader refuses such
  // a scenario first, so this means a caller's bug).
  virtual void attach_tiers(std::unique_ptr<TierChain> chain) {
    (void)chain;
    throw std::logic_error("this cache policy keeps no blocks for tiers below the device");
  }
  // What reading tier hits back costs the step being built (since the last
  // call); zero without tiers.
  virtual TierLoad take_tier_load() { return {}; }
  // Puts a tier shared by several instances (a cluster's global pool) in
  // place of the attached chain's tier of the same name, before the run.
  // False when there is no such tier (no chain, or none of that name).
  virtual bool share_tier(std::shared_ptr<KvTier> shared) {
    (void)shared;
    return false;
  }
  // The attached chain, read-only (a cluster balances its shared pool
  // against every chain's puts); nullptr without one.
  virtual const TierChain* tiers() const { return nullptr; }
  // KV events (block_pool.hpp KvEventListener): a policy with a prefix cache
  // tells `listener` of every content hash its device pool makes findable or
  // drops, before the run. False (the default) when it publishes none. Its
  // tiers below the device publish nothing.
  virtual bool set_kv_event_listener(KvEventListener* listener) {
    (void)listener;
    return false;
  }
};

}  // namespace kvsim
