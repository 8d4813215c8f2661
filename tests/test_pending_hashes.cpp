// Deferred hashing of decode-filled blocks (sim/cache/pending_hashes.hpp):
// the paged policy with it must answer exactly as the policy without it.
// Randomised workloads drive two policies, deferral off and on, through the
// same calls and compare everything observable after every call.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "sim/cache/block_pool.hpp"
#include "sim/cache/eviction/eviction_registry.hpp"
#include "sim/cache/paged_policy.hpp"
#include "workloads/token_content.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

constexpr int64_t kVocab = 1000;

struct Req {
  TokenContent prompt;
  TokenContent output;
  int64_t out_len = 0;
  int64_t generated = 0;
  enum State { waiting, running, swapped, done } state = waiting;
  bool admitted_once = false;
  SeqSlot slot[2] = {kNoSeq, kNoSeq};
  HostSlot host[2] = {-1, -1};
  std::vector<BlockHash> memo[2];
  TokenView view() const { return TokenView::of(prompt, output, generated); }
  int64_t known() const { return static_cast<int64_t>(prompt.size()) + generated; }
};

struct Options {
  int64_t block_size = 4;
  int64_t num_blocks = 48;
  int64_t host_blocks = 0;  // swap preemption when > 0
  uint32_t seed = 1;
  int requests = 60;
  bool read_hashes = false;  // content_hashes() now and then (materialises)
  // A router's count (device_prefix_tokens, a fresh memo) of a waiting
  // request's prompt now and then, in both policies: it must equal the
  // eager policy's lookup, and what it leaves pending must not change any
  // answer after it.
  bool router_probes = false;
};

// Drives policies [0] (eager) and [1] (deferred) with the same calls.
class Differential {
 public:
  explicit Differential(const Options& o) : o_(o), rng_(o.seed) {
    for (int i = 0; i < 2; ++i) {
      PagedParams p;
      p.num_blocks = o.num_blocks;
      p.block_size = o.block_size;
      p.block_bytes = 1;
      p.host_blocks = o.host_blocks;
      p.defer_output_hashes = i == 1;
      policy_[i] = std::make_unique<PagedPolicy>(p);
    }
  }

  void run() {
    for (int i = 0; i < o_.requests; ++i) add_request();
    size_t next = 0;
    for (int step = 0; step < 4000 && !all_done(); ++step) {
      // Arrivals in bursts: a conversation's next turn may arrive while the
      // turn it quotes is still waiting or decoding.
      if (next < reqs_.size() && pick(3) == 0) ++next;
      for (size_t r = 0; r < next; ++r) {
        Req& q = reqs_[r];
        if (q.state == Req::waiting)
          try_admit(q);
        else if (q.state == Req::swapped)
          try_swap_in(q);
        else if (q.state == Req::running && pick(4) != 0)
          decode(q);
        compare(q);
      }
      if (pick(6) == 0) preempt_one();
      if (o_.read_hashes && pick(5) == 0) read_hashes();
      if (o_.router_probes && pick(2) == 0) router_probe();
    }
    ASSERT_TRUE(all_done()) << "the workload did not finish";
    for (auto& p : policy_) p->check_drained();
  }

  int max_pending() const { return max_pending_; }
  int materialised() const { return materialised_; }

 private:
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint32_t>(n)); }
  bool all_done() const {
    for (const Req& q : reqs_)
      if (q.state != Req::done) return false;
    return true;
  }

  void add_request() {
    Req q;
    const uint64_t id = reqs_.size();
    int kind = reqs_.empty() ? 0 : pick(4);
    const Req* prev =
        kind == 0 ? nullptr : &reqs_[static_cast<size_t>(pick(static_cast<int>(reqs_.size())))];
    // Every request fits in half the pool.
    const int64_t fresh_max = 3 * o_.block_size + 3 + 6 * o_.block_size + 4;
    if (prev != nullptr && static_cast<int64_t>(prev->prompt.size()) + prev->out_len + fresh_max >
                               o_.num_blocks * o_.block_size / 2)
      kind = 0;
    if (kind == 1) {
      // A next turn: an earlier request's prompt runs and its whole output,
      // then new tokens.
      for (const TokenRun& run : prev->prompt.runs())
        q.prompt.append_stream(run.key, kVocab, run.length);
      q.prompt.append_stream(prev->output.runs().front().key, kVocab, prev->out_len);
    } else if (kind == 2) {
      // The same request again (another sample of it): same prompt, same
      // output key, so the same block hashes.
      for (const TokenRun& run : prev->prompt.runs())
        q.prompt.append_stream(run.key, kVocab, run.length);
      q.output.append_stream(prev->output.runs().front().key, kVocab, prev->out_len);
      q.out_len = prev->out_len;
      reqs_.push_back(std::move(q));
      return;
    }
    q.prompt.append_stream(1000 + id, kVocab, 1 + pick(3 * static_cast<int>(o_.block_size) + 3));
    q.out_len = 1 + pick(6 * static_cast<int>(o_.block_size) + 4);
    q.output.append_stream(5000 + id, kVocab, q.out_len);
    reqs_.push_back(std::move(q));
  }

  void try_admit(Req& q) {
    PrefixHit hit[2];
    for (int i = 0; i < 2; ++i) hit[i] = policy_[i]->lookup_prefix(q.view(), q.memo[i]);
    ASSERT_EQ(hit[0].blocks, hit[1].blocks);
    ASSERT_EQ(hit[0].hashes, hit[1].hashes);
    ASSERT_EQ(hit[0].cached_tokens, hit[1].cached_tokens);
    AdmitPlan plan[2];
    for (int i = 0; i < 2; ++i) {
      hit[i].readmission = q.admitted_once;
      const int64_t cached = hit[i].cached_tokens;
      plan[i] = policy_[i]->plan_admit(std::move(hit[i]), q.known() - cached);
    }
    ASSERT_EQ(plan[0].fits, plan[1].fits);
    if (!plan[0].fits) return;
    const int64_t cached = plan[0].hit.cached_tokens;
    for (int i = 0; i < 2; ++i) {
      q.slot[i] = policy_[i]->apply_admit(plan[i]);
      // A prefill in two chunks, then the whole known content.
      const int64_t half = cached + (q.known() - cached) / 2;
      policy_[i]->commit(q.slot[i], q.view(), half);
      policy_[i]->commit(q.slot[i], q.view(), q.known());
    }
    q.state = Req::running;
    q.admitted_once = true;
  }

  void decode(Req& q) {
    if (q.generated == q.out_len) {
      for (int i = 0; i < 2; ++i) policy_[i]->release(q.slot[i]);
      q.state = Req::done;
      return;
    }
    // Now and then several tokens in one step (a multi-token decode): the
    // table then holds blocks past the one the next commit fills.
    const int64_t tokens =
        pick(8) == 0 ? std::min<int64_t>(1 + pick(2 * static_cast<int>(o_.block_size) + 1),
                                         q.out_len - q.generated)
                     : 1;
    GrowPlan plan[2];
    for (int i = 0; i < 2; ++i) plan[i] = policy_[i]->plan_grow(q.slot[i], tokens);
    ASSERT_EQ(plan[0].fits, plan[1].fits);
    ASSERT_EQ(plan[0].new_blocks, plan[1].new_blocks);
    if (!plan[0].fits) return;
    q.generated += tokens;
    const bool prepared = pick(2) == 0;
    for (int i = 0; i < 2; ++i) {
      policy_[i]->apply_grow(q.slot[i], plan[i], tokens);
      if (prepared) policy_[i]->prepare_commit(q.slot[i], q.view(), q.known());
      policy_[i]->commit(q.slot[i], q.view(), q.known());
    }
  }

  void preempt_one() {
    std::vector<Req*> running;
    for (Req& q : reqs_)
      if (q.state == Req::running) running.push_back(&q);
    if (running.empty()) return;
    Req& q = *running[static_cast<size_t>(pick(static_cast<int>(running.size())))];
    if (o_.host_blocks > 0) {
      SwapPlan plan[2];
      for (int i = 0; i < 2; ++i) plan[i] = policy_[i]->plan_swap_out(q.slot[i]);
      ASSERT_EQ(plan[0].fits, plan[1].fits);
      if (plan[0].fits) {
        for (int i = 0; i < 2; ++i) q.host[i] = policy_[i]->apply_swap_out(q.slot[i], plan[i]);
        q.state = Req::swapped;
        return;
      }
    }
    // Recompute: the blocks go back (cached), the request waits again with
    // what it generated so far as known content.
    for (int i = 0; i < 2; ++i) policy_[i]->release(q.slot[i]);
    q.state = Req::waiting;
  }

  void try_swap_in(Req& q) {
    SwapPlan plan[2];
    for (int i = 0; i < 2; ++i) plan[i] = policy_[i]->plan_swap_in(q.host[i]);
    ASSERT_EQ(plan[0].fits, plan[1].fits);
    ASSERT_EQ(plan[0].copy_blocks, plan[1].copy_blocks);
    ASSERT_EQ(plan[0].revived_blocks, plan[1].revived_blocks);
    if (!plan[0].fits) return;
    for (int i = 0; i < 2; ++i) q.slot[i] = policy_[i]->apply_swap_in(q.host[i], plan[i]);
    q.state = Req::running;
  }

  void read_hashes() {
    for (Req& q : reqs_) {
      if (q.state != Req::running || pick(3) != 0) continue;
      ASSERT_EQ(policy_[0]->content_hashes(q.slot[0]), policy_[1]->content_hashes(q.slot[1]));
    }
  }

  void router_probe() {
    for (Req& q : reqs_) {
      if (q.state != Req::waiting || pick(2) != 0) continue;
      std::vector<BlockHash> memo[2];
      int64_t counted[2];
      for (int i = 0; i < 2; ++i) counted[i] = policy_[i]->device_prefix_tokens(q.view(), memo[i]);
      std::vector<BlockHash> fresh;
      const PrefixHit eager = policy_[0]->lookup_prefix(q.view(), fresh);
      ASSERT_EQ(counted[0], eager.cached_tokens);
      ASSERT_EQ(counted[1], eager.cached_tokens);
    }
  }

  void compare(const Req& q) {
    const BlockPool& a = policy_[0]->pool();
    const BlockPool& b = policy_[1]->pool();
    if (q.state == Req::running) {
      ASSERT_EQ(policy_[0]->block_table(q.slot[0]), policy_[1]->block_table(q.slot[1]));
      ASSERT_EQ(policy_[0]->registered_blocks(q.slot[0]), policy_[1]->registered_blocks(q.slot[1]));
    }
    ASSERT_EQ(a.evictions(), b.evictions());
    ASSERT_EQ(a.num_free(), b.num_free());
    ASSERT_EQ(a.num_cached_free(), b.num_cached_free());
    ASSERT_EQ(a.free_queue(), b.free_queue());
    b.check_invariants();
    int pending = 0;
    for (BlockId id = 0; id < b.num_blocks(); ++id) {
      ASSERT_EQ(a.has_hash(id), b.has_hash(id)) << "block " << id;
      if (b.is_pending(id))
        ++pending;
      else if (was_pending_.size() > static_cast<size_t>(id) &&
               was_pending_[static_cast<size_t>(id)] && b.has_hash(id))
        ++materialised_;
    }
    was_pending_.assign(static_cast<size_t>(b.num_blocks()), false);
    for (BlockId id = 0; id < b.num_blocks(); ++id)
      was_pending_[static_cast<size_t>(id)] = b.is_pending(id);
    max_pending_ = std::max(max_pending_, pending);
    const CacheAccounting x = policy_[0]->accounting();
    const CacheAccounting y = policy_[1]->accounting();
    ASSERT_EQ(x.prefix_hit_tokens, y.prefix_hit_tokens);
    ASSERT_EQ(x.recompute_hit_tokens, y.recompute_hit_tokens);
  }

  Options o_;
  std::mt19937 rng_;
  std::unique_ptr<PagedPolicy> policy_[2];
  std::vector<Req> reqs_;
  std::vector<bool> was_pending_;
  int max_pending_ = 0;
  int materialised_ = 0;
};

struct Case {
  int64_t block_size;
  int64_t num_blocks;
  int64_t host_blocks;
  bool read_hashes;
  bool router_probes = false;
};

class DeferredHashes : public ::testing::TestWithParam<Case> {};

TEST_P(DeferredHashes, AnswerAsEagerRegistrationDoes) {
  const Case c = GetParam();
  int pending = 0;
  int materialised = 0;
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    Options o;
    o.block_size = c.block_size;
    o.num_blocks = c.num_blocks;
    o.host_blocks = c.host_blocks;
    o.read_hashes = c.read_hashes;
    o.router_probes = c.router_probes;
    o.seed = seed;
    Differential d(o);
    d.run();
    if (HasFatalFailure()) return;
    pending = std::max(pending, d.max_pending());
    materialised += d.materialised();
  }
  // Not vacuous: blocks went pending, and some were registered later.
  EXPECT_GT(pending, 0);
  EXPECT_GT(materialised, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Workloads, DeferredHashes,
    ::testing::Values(Case{1, 64, 0, false}, Case{2, 40, 0, false}, Case{16, 24, 0, false},
                      Case{4, 48, 0, true}, Case{2, 40, 30, false}, Case{4, 20, 16, true},
                      Case{16, 40, 20, false}, Case{4, 400, 0, false}, Case{1, 64, 0, false, true},
                      Case{4, 48, 0, false, true}, Case{4, 20, 16, true, true}),
    [](const ::testing::TestParamInfo<Case>& param_info) {
      const Case& c = param_info.param;
      return "Block" + std::to_string(c.block_size) + "Pool" + std::to_string(c.num_blocks) +
             (c.host_blocks > 0 ? "Swap" : "Recompute") + (c.read_hashes ? "ReadHashes" : "") +
             (c.router_probes ? "RouterProbes" : "");
    });

// A prefix-aware router extends one memo in one instance and looks it up in
// others: a lookup whose memo already holds the hashes must still bring the
// deferred blocks in. Looked up while the quoted output is half done, then
// when it is done.
TEST(DeferredHashes, AMemoFilledElsewhereStillFindsDeferredBlocks) {
  PagedParams p;
  p.num_blocks = 64;
  p.block_size = 4;
  p.block_bytes = 1;
  p.defer_output_hashes = false;
  PagedPolicy eager(p);
  PagedPolicy router_side(p);
  p.defer_output_hashes = true;
  PagedPolicy deferred(p);
  TokenContent prompt;
  TokenContent output;
  prompt.append_stream(1, kVocab, 8);
  output.append_stream(2, kVocab, 16);
  TokenContent next_turn;  // quotes the prompt and the whole output
  next_turn.append_stream(1, kVocab, 8);
  next_turn.append_stream(2, kVocab, 16);
  next_turn.append_stream(3, kVocab, 4);
  const TokenContent none;
  SeqSlot slot[2];
  PagedPolicy* policies[2] = {&eager, &deferred};
  for (int i = 0; i < 2; ++i) {
    PrefixHit hit = policies[i]->lookup_prefix(TokenView::of(prompt, output, 0));
    slot[i] = policies[i]->apply_admit(policies[i]->plan_admit(std::move(hit), 8));
    policies[i]->commit(slot[i], TokenView::of(prompt, output, 0), 8);
  }
  for (int g = 1; g <= 16; ++g) {
    for (int i = 0; i < 2; ++i) {
      PagedPolicy& policy = *policies[i];
      policy.apply_grow(slot[i], policy.plan_grow(slot[i], 1), 1);
      policy.commit(slot[i], TokenView::of(prompt, output, g), 8 + g);
    }
    if (g != 9 && g != 16) continue;
    std::vector<BlockHash> memo;
    const TokenView v = TokenView::of(next_turn, none, 0);
    router_side.lookup_prefix(v, memo);
    std::vector<BlockHash> memo_copy = memo;
    const PrefixHit a = eager.lookup_prefix(v, memo);
    const PrefixHit b = deferred.lookup_prefix(v, memo_copy);
    EXPECT_EQ(a.blocks, b.blocks) << "after " << g << " tokens";
    EXPECT_EQ(a.cached_tokens, (8 + g) / 4 * 4);
  }
  EXPECT_EQ(eager.content_hashes(slot[0]), deferred.content_hashes(slot[1]));
  eager.release(slot[0]);
  deferred.release(slot[1]);
  deferred.check_drained();
}

TEST(DeferredHashes, OnlyWhereTheEvictionOrderIgnoresContent) {
  EXPECT_FALSE(make_eviction_order("lru")->uses_content());
  for (const char* name : {"arc", "lfu", "s3fifo"})
    EXPECT_TRUE(make_eviction_order(name)->uses_content());
  // A pool whose order uses content refuses a pending block.
  BlockPool pool({4, "s3fifo"});
  const BlockId b = pool.allocate();
  EXPECT_THROW(pool.mark_pending(b), std::logic_error);
  EXPECT_THROW(pool.pending_marks().mark(b, 1), std::logic_error);
  EXPECT_FALSE(pool.has_hash(b));
}

TEST(DeferredHashes, APendingBlockCountsAsCachedContentWithoutAMapEntry) {
  BlockPool pool({2});
  const BlockId b = pool.allocate();
  ASSERT_TRUE(pool.mark_pending(b));
  EXPECT_TRUE(pool.has_hash(b));
  EXPECT_FALSE(pool.mark_pending(b));  // content never changes
  pool.release(b);
  EXPECT_EQ(pool.num_cached_free(), 1);
  pool.check_invariants();
  EXPECT_EQ(pool.allocate(), 1);
  EXPECT_EQ(pool.allocate(), b);  // evicted: counted, nothing to erase
  EXPECT_EQ(pool.evictions(), 1u);
  EXPECT_FALSE(pool.is_pending(b));
  EXPECT_FALSE(pool.has_hash(b));
  // Registered later, it is found as register_hash would have left it.
  ASSERT_TRUE(pool.mark_pending(b));
  const BlockHash h{7, 9};
  pool.register_pending(b, h);
  EXPECT_EQ(pool.lookup(h), b);
  EXPECT_FALSE(pool.is_pending(b));
  // A second copy of the same content registered the deferred way would
  // break exactness: refused loudly.
  pool.release(b);
  pool.check_invariants();
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
