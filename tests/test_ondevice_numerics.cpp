// SPEC 8's equivalence for the Genie update modes (seed 002): a dialog
// (prefill in AR-32 passes with a padded last pass, AR-1 decoding, a
// speculative verify in AR-4 with a rewind of the rejected drafts, a
// set_variant, a second turn, a context reset) is replayed through each
// mode's plans on real GenieKvBuffers. After every update the attention of
// a fresh query through the buffers must equal dense attention over the
// tokens the cache should hold (windowed dense under sliding_window), and
// the bytes the kernel really moved must equal the plan's bytes_moved().
#include <gtest/gtest.h>

#include "sim/cache/genie_mode_policy.hpp"
#include "sim/numerics/genie_numerics.hpp"
#include "sim/serve/step_observer.hpp"
#include "tests/support/genie_modes.hpp"

namespace kvsim::numerics::KVSIM_TEST_FILE_SCOPE {
namespace {

struct Case {
  const char* name;
  const char* mode;
  int64_t window;  // 0: no sliding window
  kernels::KvDtype dtype;
  double tolerance;  // the reference stores K/V in the cache's dtype: only bookkeeping differs
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

GenieNumericsParams params_for(const Case& c) {
  GenieNumericsParams p;
  p.shape.layers = 2;
  p.shape.kv_heads = 2;
  p.shape.head_dim = 16;
  p.shape.dtype_bytes = kernels::kv_dtype_bytes(c.dtype);
  p.shape.ctx_size = 192;
  p.shape.ar_variants = {1, 4, 32};
  p.shape.pointer_shift_headroom = 32;  // compactions happen within the dialog
  p.shape.window = c.window;
  p.mode = testing::kernel_mode(c.mode);
  p.q_heads = 4;
  p.dtype = c.dtype;
  p.tolerance = c.tolerance;
  return p;
}

// Plans an update on the policy, applies it, and replays it on the checker.
struct Driver {
  std::unique_ptr<GenieKvPolicy> policy;
  GenieNumericsChecker checker;
  int updates = 0;
  std::vector<KvDispatch> seen;

  Driver(const GenieNumericsParams& p, const std::string& mode)
      : policy(p.shape.window > 0
                   ? testing::make_window_policy(mode, p.shape)
                   : std::unique_ptr<GenieKvPolicy>(testing::make_mode_policy(mode, p.shape))),
        checker(p) {}

  void update(int64_t n_past, int64_t variant) {
    const KvUpdatePlan plan = policy->plan_update({n_past, variant});
    policy->apply_update(plan);
    checker.apply(plan, "update " + std::to_string(updates++));
    seen.push_back(plan.dispatch);
  }
  int64_t n_past() const { return policy->n_past(); }

  void prefill(int64_t tokens) {
    update(n_past(), 32);  // set_variant (or clear on an empty cache)
    const int64_t end = n_past() + tokens;
    while (n_past() < end) {
      const int64_t n = std::min<int64_t>(32, end - n_past());
      update(n_past() + n, n_past() + n == end ? 1 : 32);  // last pass padded, then AR-1
    }
  }
  void decode(int64_t tokens) {
    for (int64_t i = 0; i < tokens; ++i) update(n_past() + 1, 1);
  }
  // A verify pass of 4 drafts in AR-4: all four enter, the rejected ones
  // are rewound and decoding goes back to AR-1.
  void verify(int64_t accepted) {
    update(n_past(), 4);
    update(n_past() + 4, 4);
    update(n_past() - (4 - accepted), 1);
  }
};

class GenieDialog : public ::testing::TestWithParam<Case> {};

TEST_P(GenieDialog, EveryUpdateMatchesDenseAttentionAndThePlannedBytes) {
  const Case c = GetParam();
  Driver d(params_for(c), c.mode);
  d.update(0, 32);  // clear
  d.prefill(70);    // AR-32, AR-32, then 6 tokens padded
  d.decode(12);
  d.verify(1);
  d.verify(3);
  d.update(d.n_past(), 32);  // set_variant only
  d.update(d.n_past(), 1);
  d.decode(5);
  d.prefill(20);  // second turn's prompt, one padded pass
  d.decode(40);
  if (c.window > 0) {
    d.prefill(40);  // beyond ctx_size only with a window
    d.decode(40);
    d.verify(0);
    d.decode(5);
  }
  d.update(0, 1);  // context reset
  d.prefill(9);
  d.decode(3);
  for (KvDispatch k : {KvDispatch::clear_cache, KvDispatch::set_variant, KvDispatch::rewind,
                       KvDispatch::update_and_set})
    EXPECT_NE(std::find(d.seen.begin(), d.seen.end(), k), d.seen.end()) << kv_dispatch_name(k);
  EXPECT_GT(d.checker.checks(), 140u);
  EXPECT_LE(d.checker.max_abs_err(), c.tolerance);
  // The kernel moved exactly what the policy priced, in total too.
  EXPECT_EQ(d.checker.kernel_bytes_moved(),
            static_cast<uint64_t>(d.policy->accounting().bytes_moved));
  if (c.window > 0) {
    EXPECT_GT(d.policy->accounting().window_evicted_tokens, 0);
  }
  if (std::string(c.mode) == "pointer_shift") {
    EXPECT_GT(d.policy->accounting().compactions, 0u);
  }
  std::cout << "[ figures ] " << c.name << ": " << d.checker.checks() << " checks, max |err| "
            << d.checker.max_abs_err() << ", bytes moved " << d.policy->accounting().bytes_moved
            << "\n";
}

INSTANTIATE_TEST_SUITE_P(
    Modes, GenieDialog,
    ::testing::Values(Case{"shift_concat_fp32", "shift_concat", 0, kernels::KvDtype::fp32, 1e-5},
                      Case{"pointer_shift_fp32", "pointer_shift", 0, kernels::KvDtype::fp32, 1e-5},
                      Case{"smart_mask_fp32", "smart_mask", 0, kernels::KvDtype::fp32, 1e-5},
                      Case{"shift_concat_fp16", "shift_concat", 0, kernels::KvDtype::fp16, 1e-5},
                      Case{"pointer_shift_int8", "pointer_shift", 0, kernels::KvDtype::int8, 1e-5},
                      Case{"smart_mask_int8", "smart_mask", 0, kernels::KvDtype::int8, 1e-5},
                      Case{"window_shift_concat", "shift_concat", 48, kernels::KvDtype::fp32, 1e-5},
                      Case{"window_pointer_shift", "pointer_shift", 48, kernels::KvDtype::fp32,
                           1e-5},
                      Case{"window_smart_mask", "smart_mask", 48, kernels::KvDtype::fp16, 1e-5}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(GenieNumericsFaults, AWrongRewindFailsNamingTheUpdate) {
  // A rewind of the rejected drafts mistaken for an eviction of the oldest:
  // the buffers hold the same number of tokens, but the wrong ones.
  GenieNumericsParams p = params_for({"f", "smart_mask", 0, kernels::KvDtype::fp32, 1e-5});
  p.check_bytes = false;
  Driver d(p, "smart_mask");
  d.prefill(40);
  d.update(d.n_past(), 4);
  d.update(d.n_past() + 4, 4);
  KvUpdatePlan plan = d.policy->plan_update({d.n_past() - 3, 1});
  plan.evicted_tokens = plan.rewound_tokens;
  plan.rewound_tokens = 0;
  try {
    d.checker.apply(plan, "turn 0 pass 7");
    FAIL() << "expected a failed check";
  } catch (const CheckFailed& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("turn 0 pass 7: rewind"), std::string::npos) << msg;
    EXPECT_NE(msg.find("attention differs from the dense reference"), std::string::npos) << msg;
  }
}

TEST(GenieNumericsFaults, APlanThatPricesTheWrongBytesFails) {
  GenieNumericsParams p = params_for({"f", "shift_concat", 0, kernels::KvDtype::fp32, 1e-5});
  Driver d(p, "shift_concat");
  d.prefill(40);
  KvUpdatePlan plan = d.policy->plan_update({41, 1});
  plan.bytes_shifted -= p.shape.column_bytes();  // an off-by-one in the closed form
  EXPECT_THROW(d.checker.apply(plan, "decode"), CheckFailed);
}

}  // namespace
}  // namespace kvsim::numerics::KVSIM_TEST_FILE_SCOPE
