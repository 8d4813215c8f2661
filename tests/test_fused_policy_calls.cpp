// The policy calls the scheduler and the engine make in one piece
// (KvCachePolicy::settle_and_grow and commit_step) leave a policy exactly as
// the calls they stand for do. Randomised workloads of bulk decodes drive
// three paged policies in lockstep: one through the separate calls
// (settle_in_place, plan_grow, apply_grow, in_place_room; prepare_commit,
// commit, commit_horizon one by one), one through the paged policy's own
// fused calls, and one through KvCachePolicy's default fused calls (a
// wrapper that forwards everything else). Everything observable is compared
// after every step.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "sim/cache/block_pool.hpp"
#include "sim/cache/paged_policy.hpp"
#include "sim/cache/paged_window_policy.hpp"
#include "workloads/token_content.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

// A policy whose settle_and_grow and commit_step are KvCachePolicy's
// defaults, made of the calls it forwards to a paged policy.
class DefaultFusedCalls final : public KvCachePolicy {
 public:
  explicit DefaultFusedCalls(const PagedParams& params) : inner_(params) {}
  const PagedPolicy& inner() const { return inner_; }

  std::string_view name() const override { return "default-fused"; }
  using KvCachePolicy::lookup_prefix;
  PrefixHit lookup_prefix(const TokenView& tokens, std::vector<BlockHash>& memo) const override {
    return inner_.lookup_prefix(tokens, memo);
  }
  AdmitPlan plan_admit(PrefixHit hit, int64_t new_tokens) const override {
    return inner_.plan_admit(std::move(hit), new_tokens);
  }
  SeqSlot apply_admit(const AdmitPlan& plan) override { return inner_.apply_admit(plan); }
  GrowPlan plan_grow(SeqSlot s, int64_t n) const override { return inner_.plan_grow(s, n); }
  void apply_grow(SeqSlot s, const GrowPlan& plan, int64_t n) override {
    inner_.apply_grow(s, plan, n);
  }
  int64_t in_place_room(SeqSlot s) const override { return inner_.in_place_room(s); }
  bool counts_in_place_room() const override { return true; }
  void grow_in_place_bulk(int64_t tokens) override { inner_.grow_in_place_bulk(tokens); }
  void settle_in_place(SeqSlot s, int64_t tokens) override { inner_.settle_in_place(s, tokens); }
  void commit(SeqSlot s, const TokenView& tokens, int64_t computed) override {
    inner_.commit(s, tokens, computed);
  }
  void prepare_commit(SeqSlot s, const TokenView& tokens, int64_t computed) override {
    inner_.prepare_commit(s, tokens, computed);
  }
  int64_t commit_horizon(SeqSlot s) const override { return inner_.commit_horizon(s); }
  void release(SeqSlot s) override { inner_.release(s); }
  SwapPlan plan_swap_out(SeqSlot s) const override { return inner_.plan_swap_out(s); }
  HostSlot apply_swap_out(SeqSlot s, const SwapPlan& plan) override {
    return inner_.apply_swap_out(s, plan);
  }
  SwapPlan plan_swap_in(HostSlot h) const override { return inner_.plan_swap_in(h); }
  SeqSlot apply_swap_in(HostSlot h, const SwapPlan& plan) override {
    return inner_.apply_swap_in(h, plan);
  }
  const std::vector<BlockId>& block_table(SeqSlot s) const override {
    return inner_.block_table(s);
  }
  int64_t free_blocks() const override { return inner_.free_blocks(); }
  CacheAccounting accounting() const override { return inner_.accounting(); }
  void check_drained() const override { inner_.check_drained(); }

 private:
  PagedPolicy inner_;
};

constexpr int64_t kVocab = 1000;
constexpr int kSeparate = 0;  // the calls one by one (the reference)
constexpr int kPaged = 1;     // PagedPolicy's fused calls
constexpr int kDefault = 2;   // KvCachePolicy's default fused calls
constexpr int kPolicies = 3;

struct Req {
  TokenContent prompt;
  TokenContent output;
  int64_t out_len = 0;
  int64_t generated = 0;  // = tokens the policy holds beyond the prompt
  enum State { waiting, running, swapped, done } state = waiting;
  int64_t room = 0;       // in-place room left, bulk tokens taken
  int64_t unsettled = 0;  // bulk tokens not yet settled
  int64_t horizon = 0;
  SeqSlot slot[kPolicies] = {kNoSeq, kNoSeq, kNoSeq};
  HostSlot host[kPolicies] = {-1, -1, -1};
  TokenView view() const { return TokenView::of(prompt, output, generated); }
  int64_t known() const { return static_cast<int64_t>(prompt.size()) + generated; }
};

struct Options {
  int64_t block_size = 4;
  int64_t num_blocks = 48;
  int64_t host_blocks = 0;
  bool prefix_caching = true;
  bool defer = true;
  uint32_t seed = 1;
  int requests = 50;
};

class Lockstep {
 public:
  explicit Lockstep(const Options& o) : o_(o), rng_(o.seed) {
    PagedParams p;
    p.num_blocks = o.num_blocks;
    p.block_size = o.block_size;
    p.block_bytes = 1;
    p.host_blocks = o.host_blocks;
    p.prefix_caching = o.prefix_caching;
    p.defer_output_hashes = o.defer;
    separate_ = std::make_unique<PagedPolicy>(p);
    paged_ = std::make_unique<PagedPolicy>(p);
    default_ = std::make_unique<DefaultFusedCalls>(p);
    policy_[kSeparate] = separate_.get();
    policy_[kPaged] = paged_.get();
    policy_[kDefault] = default_.get();
    pools_[kSeparate] = separate_.get();
    pools_[kPaged] = paged_.get();
    pools_[kDefault] = &default_->inner();
  }

  void run() {
    for (int i = 0; i < o_.requests; ++i) add_request();
    size_t next = 0;
    for (int step = 0; step < 4000 && !all_done(); ++step) {
      if (next < reqs_.size() && pick(3) == 0) ++next;
      // The step's growth (bulk decodes in place, the others through the
      // fused call), then its commits in batch order.
      int64_t bulk = 0;
      std::vector<Req*> committing;
      for (size_t r = 0; r < next; ++r) {
        Req& q = reqs_[r];
        if (q.state == Req::waiting) {
          try_admit(q);
        } else if (q.state == Req::swapped) {
          try_swap_in(q);
        } else if (q.state == Req::running && pick(4) != 0) {
          if (!decode(q, bulk)) return;
          if (q.state == Req::running && (q.known() >= q.horizon || pick(8) == 0))
            committing.push_back(&q);
        }
      }
      for (KvCachePolicy* p : policy_) p->grow_in_place_bulk(bulk);
      commit(committing);
      if (::testing::Test::HasFatalFailure()) return;
      for (const Req& q : reqs_) {
        compare(q);
        if (::testing::Test::HasFatalFailure()) return;
      }
      if (pick(6) == 0) preempt_one();
    }
    ASSERT_TRUE(all_done()) << "the workload did not finish";
    for (KvCachePolicy* p : policy_) p->check_drained();
  }

  int blocks_grown() const { return blocks_grown_; }
  int did_not_fit() const { return did_not_fit_; }
  int pending_fills() const { return pending_fills_; }
  int shared_fills() const { return shared_fills_; }

 private:
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint32_t>(n)); }
  bool all_done() const {
    return std::all_of(reqs_.begin(), reqs_.end(),
                       [](const Req& q) { return q.state == Req::done; });
  }

  void add_request() {
    Req q;
    const uint64_t id = reqs_.size();
    // Now and then the same request again (another sample of it): the same
    // hashes, registered by two sequences in one step's commits.
    if (!reqs_.empty() && pick(3) == 0) {
      const Req& prev = reqs_[static_cast<size_t>(pick(static_cast<int>(reqs_.size())))];
      for (const TokenRun& run : prev.prompt.runs())
        q.prompt.append_stream(run.key, kVocab, run.length);
      q.output.append_stream(prev.output.runs().front().key, kVocab, prev.out_len);
      q.out_len = prev.out_len;
      reqs_.push_back(std::move(q));
      return;
    }
    q.prompt.append_stream(1000 + id, kVocab, 1 + pick(3 * static_cast<int>(o_.block_size) + 3));
    q.out_len = 1 + pick(8 * static_cast<int>(o_.block_size) + 4);
    q.output.append_stream(5000 + id, kVocab, q.out_len);
    reqs_.push_back(std::move(q));
  }

  void try_admit(Req& q) {
    AdmitPlan plan[kPolicies];
    for (int i = 0; i < kPolicies; ++i) {
      PrefixHit hit = policy_[i]->lookup_prefix(q.view());
      const int64_t cached = hit.cached_tokens;
      plan[i] = policy_[i]->plan_admit(std::move(hit), q.known() - cached);
    }
    if (!plan[0].fits) return;
    for (int i = 0; i < kPolicies; ++i) {
      ASSERT_TRUE(plan[i].fits);
      q.slot[i] = policy_[i]->apply_admit(plan[i]);
      policy_[i]->commit(q.slot[i], q.view(), q.known());
    }
    q.horizon = policy_[0]->commit_horizon(q.slot[0]);
    q.room = policy_[0]->in_place_room(q.slot[0]);
    q.unsettled = 0;
    q.state = Req::running;
  }

  // Settles q's bulk tokens and grows it by `tokens`: one by one on the
  // reference, fused on the others. False when the growth did not fit.
  bool settle_and_grow(Req& q, int64_t tokens) {
    const GrowPlan plan = [&] {
      if (q.unsettled > 0) policy_[kSeparate]->settle_in_place(q.slot[kSeparate], q.unsettled);
      return policy_[kSeparate]->plan_grow(q.slot[kSeparate], tokens);
    }();
    SettledGrowth expected;
    if (plan.fits) {
      policy_[kSeparate]->apply_grow(q.slot[kSeparate], plan, tokens);
      expected = {true, policy_[kSeparate]->in_place_room(q.slot[kSeparate])};
      if (plan.new_blocks > 0) ++blocks_grown_;
    } else {
      ++did_not_fit_;
    }
    for (int i = kPaged; i < kPolicies; ++i) {
      const SettledGrowth got = policy_[i]->settle_and_grow(q.slot[i], q.unsettled, tokens);
      EXPECT_EQ(got.grown, expected.grown) << "policy " << i;
      EXPECT_EQ(got.room, expected.room) << "policy " << i;
    }
    q.unsettled = 0;
    q.room = expected.room;
    return expected.grown;
  }

  // One step of q: a token in place (bulk), or a growth past its room,
  // now and then several tokens (a multi-token step) or with its bulk
  // tokens settled by a growth of none. False on a failed expectation.
  bool decode(Req& q, int64_t& bulk) {
    if (q.generated == q.out_len) {
      release(q);
      q.state = Req::done;
      return true;
    }
    const int64_t left = q.out_len - q.generated;
    int64_t tokens = 1;
    if (pick(8) == 0)
      tokens = std::min<int64_t>(1 + pick(3 * static_cast<int>(o_.block_size)), left);
    if (tokens == 1 && q.room > 0 && pick(6) != 0) {
      --q.room;
      ++q.unsettled;
      ++bulk;
      ++q.generated;
      return true;
    }
    if (pick(5) == 0) settle_and_grow(q, 0);  // fits: no block
    const bool grown = settle_and_grow(q, tokens);
    if (::testing::Test::HasFailure()) return false;
    if (!grown) {
      // A preemption by recompute: what it generated so far is known content.
      release(q);
      q.state = Req::waiting;
      return true;
    }
    q.generated += tokens;
    return true;
  }

  // The step's commits: prepared then committed one by one on the
  // reference, in one commit_step on the others; each is settled first.
  void commit(const std::vector<Req*>& committing) {
    std::vector<StepCommit> steps[kPolicies];
    std::vector<TokenView> views;  // kept for the commits' lifetime
    views.reserve(committing.size());
    for (Req* q : committing) {
      if (q->unsettled > 0) {
        for (int i = 0; i < kPolicies; ++i) policy_[i]->settle_in_place(q->slot[i], q->unsettled);
        q->unsettled = 0;
      }
      views.push_back(q->view());
      for (int i = 0; i < kPolicies; ++i)
        steps[i].push_back(StepCommit::of(q->slot[i], views.back(), q->known()));
    }
    const int64_t pending_before = pending_blocks(*pools_[kSeparate]);
    for (const StepCommit& c : steps[kSeparate])
      policy_[kSeparate]->prepare_commit(c.seq, c.tokens(), c.computed_tokens);
    for (StepCommit& c : steps[kSeparate]) {
      policy_[kSeparate]->commit(c.seq, c.tokens(), c.computed_tokens);
      c.horizon = policy_[kSeparate]->commit_horizon(c.seq);
    }
    if (pending_blocks(*pools_[kSeparate]) > pending_before) ++pending_fills_;
    if (has_shared_fill(committing)) ++shared_fills_;
    for (int i = kPaged; i < kPolicies; ++i) {
      policy_[i]->commit_step(steps[i]);
      for (size_t k = 0; k < committing.size(); ++k)
        ASSERT_EQ(steps[i][k].horizon, steps[kSeparate][k].horizon) << "policy " << i;
    }
    for (size_t k = 0; k < committing.size(); ++k) committing[k]->horizon = steps[0][k].horizon;
  }

  // Two entries of a step's commits with the same content.
  static bool has_shared_fill(const std::vector<Req*>& committing) {
    for (size_t a = 0; a < committing.size(); ++a)
      for (size_t b = a + 1; b < committing.size(); ++b)
        if (committing[a]->output.runs().front().key == committing[b]->output.runs().front().key)
          return true;
    return false;
  }

  static int64_t pending_blocks(const PagedPolicy& p) {
    int64_t n = 0;
    for (BlockId b = 0; b < p.pool().num_blocks(); ++b) n += p.pool().is_pending(b) ? 1 : 0;
    return n;
  }

  void release(Req& q) {
    for (int i = 0; i < kPolicies; ++i) {
      if (q.unsettled > 0) policy_[i]->settle_in_place(q.slot[i], q.unsettled);
      policy_[i]->release(q.slot[i]);
    }
    q.unsettled = 0;
  }

  void preempt_one() {
    std::vector<Req*> running;
    for (Req& q : reqs_)
      if (q.state == Req::running) running.push_back(&q);
    if (running.empty()) return;
    Req& q = *running[static_cast<size_t>(pick(static_cast<int>(running.size())))];
    if (o_.host_blocks > 0) {
      for (int i = 0; i < kPolicies; ++i) {
        if (q.unsettled > 0) policy_[i]->settle_in_place(q.slot[i], q.unsettled);
      }
      q.unsettled = 0;
      SwapPlan plan[kPolicies];
      for (int i = 0; i < kPolicies; ++i) plan[i] = policy_[i]->plan_swap_out(q.slot[i]);
      if (plan[0].fits) {
        for (int i = 0; i < kPolicies; ++i)
          q.host[i] = policy_[i]->apply_swap_out(q.slot[i], plan[i]);
        q.state = Req::swapped;
        return;
      }
    }
    release(q);
    q.state = Req::waiting;
  }

  void try_swap_in(Req& q) {
    SwapPlan plan[kPolicies];
    for (int i = 0; i < kPolicies; ++i) plan[i] = policy_[i]->plan_swap_in(q.host[i]);
    if (!plan[0].fits) return;
    for (int i = 0; i < kPolicies; ++i) q.slot[i] = policy_[i]->apply_swap_in(q.host[i], plan[i]);
    q.horizon = 0;  // as the scheduler has it after a swap-in
    q.room = policy_[0]->in_place_room(q.slot[0]);
    q.state = Req::running;
  }

  void compare(const Req& q) {
    const BlockPool& a = pools_[kSeparate]->pool();
    for (int i = kPaged; i < kPolicies; ++i) {
      const BlockPool& b = pools_[i]->pool();
      if (q.state == Req::running) {
        ASSERT_EQ(policy_[0]->block_table(q.slot[0]), policy_[i]->block_table(q.slot[i]));
        ASSERT_EQ(pools_[0]->registered_blocks(q.slot[0]), pools_[i]->registered_blocks(q.slot[i]));
        ASSERT_EQ(policy_[0]->in_place_room(q.slot[0]), policy_[i]->in_place_room(q.slot[i]));
        ASSERT_EQ(policy_[0]->commit_horizon(q.slot[0]), policy_[i]->commit_horizon(q.slot[i]));
      }
      ASSERT_EQ(a.evictions(), b.evictions());
      ASSERT_EQ(a.num_free(), b.num_free());
      ASSERT_EQ(a.num_cached_free(), b.num_cached_free());
      ASSERT_EQ(a.free_queue(), b.free_queue());
      b.check_invariants();
      for (BlockId id = 0; id < b.num_blocks(); ++id) {
        ASSERT_EQ(a.has_hash(id), b.has_hash(id)) << "block " << id;
        ASSERT_EQ(a.is_pending(id), b.is_pending(id)) << "block " << id;
        ASSERT_EQ(a.ref_count(id), b.ref_count(id)) << "block " << id;
      }
      const CacheAccounting x = policy_[0]->accounting();
      const CacheAccounting y = policy_[i]->accounting();
      ASSERT_EQ(x.blocks_used, y.blocks_used);
      ASSERT_EQ(x.slots_reserved, y.slots_reserved);
      ASSERT_EQ(x.tokens_held, y.tokens_held);
      ASSERT_EQ(x.evictions, y.evictions);
      ASSERT_EQ(x.bytes_moved, y.bytes_moved);
      ASSERT_EQ(x.prefix_hit_tokens, y.prefix_hit_tokens);
      ASSERT_EQ(x.recompute_hit_tokens, y.recompute_hit_tokens);
    }
  }

  Options o_;
  std::mt19937 rng_;
  std::unique_ptr<PagedPolicy> separate_;
  std::unique_ptr<PagedPolicy> paged_;
  std::unique_ptr<DefaultFusedCalls> default_;
  KvCachePolicy* policy_[kPolicies] = {};
  const PagedPolicy* pools_[kPolicies] = {};
  std::vector<Req> reqs_;
  int blocks_grown_ = 0;
  int did_not_fit_ = 0;
  int pending_fills_ = 0;
  int shared_fills_ = 0;
};

struct Case {
  int64_t block_size;
  int64_t num_blocks;
  int64_t host_blocks;
  bool prefix_caching;
  bool defer;
};

class FusedPolicyCalls : public ::testing::TestWithParam<Case> {};

TEST_P(FusedPolicyCalls, LeaveThePolicyAsTheCallsTheyReplaceDo) {
  const Case c = GetParam();
  int grown = 0, did_not_fit = 0, pending = 0, shared = 0;
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    Options o;
    o.block_size = c.block_size;
    o.num_blocks = c.num_blocks;
    o.host_blocks = c.host_blocks;
    o.prefix_caching = c.prefix_caching;
    o.defer = c.defer;
    o.seed = seed;
    Lockstep run(o);
    run.run();
    if (HasFailure()) return;
    grown += run.blocks_grown();
    did_not_fit += run.did_not_fit();
    pending += run.pending_fills();
    shared += run.shared_fills();
  }
  // Not vacuous: blocks were added, some growths did not fit, and two
  // sequences with the same content committed in one step.
  EXPECT_GT(grown, 0);
  EXPECT_GT(did_not_fit, 0);
  EXPECT_GT(shared, 0);
  // With deferral, decodes filled blocks on their chains (fill_on_chain).
  if (c.prefix_caching && c.defer) {
    EXPECT_GT(pending, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Workloads, FusedPolicyCalls,
                         ::testing::Values(Case{1, 64, 0, true, true}, Case{4, 48, 0, true, true},
                                           Case{16, 24, 0, true, true}, Case{4, 40, 24, true, true},
                                           Case{4, 48, 0, true, false},
                                           Case{2, 40, 16, true, false},
                                           Case{4, 48, 0, false, false}),
                         [](const ::testing::TestParamInfo<Case>& param_info) {
                           const Case& c = param_info.param;
                           return "Block" + std::to_string(c.block_size) + "Pool" +
                                  std::to_string(c.num_blocks) +
                                  (c.host_blocks > 0 ? "Swap" : "Recompute") +
                                  (!c.prefix_caching ? "NoPrefix"
                                   : c.defer         ? "Deferred"
                                                     : "Eager");
                         });

// Sequences driven by hand through two paged policies with deferral, one
// committing call by call (every prepare_commit, then each commit and
// commit_horizon), one through commit_step, for the steps the random
// workloads above reach only by chance.
class HandDriven {
 public:
  static constexpr int64_t kBlock = 4;
  struct Seq {
    TokenContent prompt;
    TokenContent output;
    int64_t generated = 0;
    SeqSlot slot[2] = {kNoSeq, kNoSeq};
    TokenView view() const { return TokenView::of(prompt, output, generated); }
    int64_t known() const { return static_cast<int64_t>(prompt.size()) + generated; }
  };

  HandDriven() {
    PagedParams p;
    p.num_blocks = 32;
    p.block_size = kBlock;
    p.block_bytes = 1;
    for (auto& policy : policy_) policy = std::make_unique<PagedPolicy>(p);
  }
  PagedPolicy& separate() { return *policy_[0]; }

  void admit(Seq& q) {
    for (int i = 0; i < 2; ++i) {
      PrefixHit hit = policy_[i]->lookup_prefix(q.view());
      const int64_t cached = hit.cached_tokens;
      q.slot[i] =
          policy_[i]->apply_admit(policy_[i]->plan_admit(std::move(hit), q.known() - cached));
      policy_[i]->commit(q.slot[i], q.view(), q.known());
    }
  }
  // One more token decoded (its slot reserved): not yet committed.
  void decode(Seq& q) {
    for (int i = 0; i < 2; ++i) ASSERT_TRUE(policy_[i]->settle_and_grow(q.slot[i], 0, 1).grown);
    ++q.generated;
  }
  // One step's commits of these sequences, each up to what it knows, in
  // this order (a sequence may come twice).
  void step(const std::vector<Seq*>& order) {
    std::vector<TokenView> views;
    views.reserve(order.size());
    std::vector<StepCommit> commits[2];
    for (Seq* q : order) {
      views.push_back(q->view());
      for (int i = 0; i < 2; ++i)
        commits[i].push_back(StepCommit::of(q->slot[i], views.back(), q->known()));
    }
    for (const StepCommit& c : commits[0])
      policy_[0]->prepare_commit(c.seq, c.tokens(), c.computed_tokens);
    for (StepCommit& c : commits[0]) {
      policy_[0]->commit(c.seq, c.tokens(), c.computed_tokens);
      c.horizon = policy_[0]->commit_horizon(c.seq);
    }
    policy_[1]->commit_step(commits[1]);
    for (size_t k = 0; k < order.size(); ++k) {
      EXPECT_EQ(commits[0][k].horizon, commits[1][k].horizon) << "entry " << k;
      EXPECT_EQ(policy_[0]->registered_blocks(order[k]->slot[0]),
                policy_[1]->registered_blocks(order[k]->slot[1]))
          << "entry " << k;
    }
    const BlockPool& a = policy_[0]->pool();
    const BlockPool& b = policy_[1]->pool();
    EXPECT_EQ(a.num_cached_free(), b.num_cached_free());
    for (BlockId id = 0; id < a.num_blocks(); ++id) {
      EXPECT_EQ(a.has_hash(id), b.has_hash(id)) << "block " << id;
      EXPECT_EQ(a.is_pending(id), b.is_pending(id)) << "block " << id;
    }
  }
  // Reads every hash (materialising the chains of both alike).
  void expect_same_hashes(const Seq& q) {
    EXPECT_EQ(policy_[0]->content_hashes(q.slot[0]), policy_[1]->content_hashes(q.slot[1]));
  }
  void release(Seq& q) {
    for (int i = 0; i < 2; ++i) policy_[i]->release(q.slot[i]);
  }
  void check_drained() {
    for (auto& policy : policy_) policy->check_drained();
  }

 private:
  std::unique_ptr<PagedPolicy> policy_[2];
};

// A decode prepared as a fill on its chain whose chain another entry's
// preparation ends before it is committed (an output that quotes the same
// stream as a run of its own touches the key): the commit takes the long
// way, eager, as the separate calls do. And a sequence given twice in one
// step: its second entry, prepared as the same fill, finds the block
// already registered.
TEST(FusedPolicyCalls, CommitStepFollowsWhatChangedSinceTheFillWasPrepared) {
  HandDriven run;
  HandDriven::Seq a;  // its output one run, 5000: deferred on a chain
  a.prompt.append_stream(1000, kVocab, 6);
  a.output.append_stream(5000, kVocab, 40);
  HandDriven::Seq d;  // the same prompt; an output that quotes 5000's first 12 ids, then more
  d.prompt.append_stream(1000, kVocab, 6);
  d.output.append_stream(5000, kVocab, 12);
  d.output.append_stream(7000, kVocab, 28);
  HandDriven::Seq e;  // another chain of its own
  e.prompt.append_stream(1001, kVocab, 6);
  e.output.append_stream(6000, kVocab, 40);
  for (HandDriven::Seq* q : {&a, &d, &e}) run.admit(*q);
  // Up to 12 tokens each: the block holding the prompt's end (eager), then
  // the first block inside the output (a's and e's chains start; d's two
  // runs keep it eager, and its block 2 lies inside the run of 5000).
  for (int t = 0; t < 2; ++t)
    for (HandDriven::Seq* q : {&a, &e}) run.decode(*q);
  run.step({&a, &e});
  for (int t = 0; t < 4; ++t)
    for (HandDriven::Seq* q : {&a, &e}) run.decode(*q);
  run.step({&a, &e});
  ASSERT_TRUE(run.separate().pool().is_pending(run.separate().block_table(a.slot[0])[2]));
  for (int t = 0; t < 2; ++t) run.decode(d);
  run.step({&d});
  // a fills block 3 on its chain; d, after it, fills its block 2, inside
  // the run of 5000: its preparation touches 5000 and ends a's chain.
  for (int t = 0; t < 4; ++t) run.decode(a);
  for (int t = 0; t < 4; ++t) run.decode(d);
  run.step({&a, &d});
  EXPECT_FALSE(run.separate().pool().is_pending(run.separate().block_table(a.slot[0])[3]));
  EXPECT_TRUE(run.separate().pool().has_hash(run.separate().block_table(a.slot[0])[3]));
  // e fills block 3 on its chain, committed twice in one step.
  for (int t = 0; t < 4; ++t) run.decode(e);
  run.step({&e, &e});
  EXPECT_TRUE(run.separate().pool().is_pending(run.separate().block_table(e.slot[0])[3]));
  for (HandDriven::Seq* q : {&a, &d, &e}) {
    run.expect_same_hashes(*q);
    run.release(*q);
  }
  run.check_drained();
}

// The same by hand on the other PagedPolicyBase (whose fused call is the
// base's own): a growth inside the room, one past it, one of several blocks,
// and one that does not fit, after which only the settle has happened.
TEST(FusedPolicyCalls, GrowAWindowedSequenceAsTheSeparateCallsDo) {
  constexpr int64_t kBlock = 4;
  PagedWindowParams params;
  params.num_blocks = 6;
  params.block_size = kBlock;
  params.block_bytes = 1;
  params.window = 64;
  PagedWindowPolicy separate(params);
  PagedWindowPolicy fused(params);
  std::vector<int32_t> prompt(6);
  std::iota(prompt.begin(), prompt.end(), 1);
  const TokenView view{prompt.data(), 6, nullptr, 0};
  SeqSlot slot[2];
  PagedWindowPolicy* policy[2] = {&separate, &fused};
  for (int i = 0; i < 2; ++i) {
    slot[i] = policy[i]->apply_admit(policy[i]->plan_admit(policy[i]->lookup_prefix(view), 6));
  }
  auto expect_same = [&] {
    EXPECT_EQ(separate.block_table(slot[0]), fused.block_table(slot[1]));
    EXPECT_EQ(separate.in_place_room(slot[0]), fused.in_place_room(slot[1]));
    const CacheAccounting a = separate.accounting();
    const CacheAccounting b = fused.accounting();
    EXPECT_EQ(a.slots_reserved, b.slots_reserved);
    EXPECT_EQ(a.tokens_held, b.tokens_held);
    EXPECT_EQ(a.blocks_used, b.blocks_used);
    EXPECT_EQ(separate.free_blocks(), fused.free_blocks());
  };
  // {bulk tokens taken in place before, tokens to grow by, fits}: the
  // prompt's 6 tokens in 8 slots, then 1 in place and 1 grown in place; 1
  // in a new block; 2 in place and 10 over three blocks (the pool's last);
  // 1 in place and 6 that need a block when none is left.
  struct Growth {
    int64_t settled, tokens;
    bool fits;
  };
  for (const Growth g :
       {Growth{1, 1, true}, Growth{0, 1, true}, Growth{2, 10, true}, Growth{1, 6, false}}) {
    for (PagedWindowPolicy* p : policy) p->grow_in_place_bulk(g.settled);
    if (g.settled > 0) separate.settle_in_place(slot[0], g.settled);
    const GrowPlan plan = separate.plan_grow(slot[0], g.tokens);
    ASSERT_EQ(plan.fits, g.fits);
    if (plan.fits) separate.apply_grow(slot[0], plan, g.tokens);
    const SettledGrowth got = fused.settle_and_grow(slot[1], g.settled, g.tokens);
    EXPECT_EQ(got.grown, g.fits);
    EXPECT_EQ(got.room, g.fits ? separate.in_place_room(slot[0]) : 0);
    expect_same();
  }
  // Past the room of its last block, the settle of a bulk token is refused.
  const int64_t room = fused.in_place_room(slot[1]);
  EXPECT_THROW(fused.settle_and_grow(slot[1], room + 1, 0), std::logic_error);
  for (int i = 0; i < 2; ++i) {
    policy[i]->release(slot[i]);
    policy[i]->check_drained();
  }
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
