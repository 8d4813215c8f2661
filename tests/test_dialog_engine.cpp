// The on-device dialog engine: turns of a `kind: dialog` workload
// on a Snapdragon HTP, AR-n prefill passes, AR-1 or speculative decoding,
// Genie KV updates, VTCM sessions and co-runners, context resets and the
// sliding window, metrics, determinism and bad input.
#include <gtest/gtest.h>

#include <cstdio>

#include <algorithm>
#include <cmath>
#include <regex>
#include <string>

#include "base/diagnostics.hpp"
#include "report_test_helpers.hpp"
#include "scenario_helpers.hpp"
#include "sim/genie/genie_engine.hpp"
#include "sim/genie/genie_passes.hpp"
#include "sim/numerics/genie_engine_numerics.hpp"
#include "sim/scenario/metrics_document.hpp"
#include "sim/scenario/run_scenario.hpp"
#include "sim/serve/step_observer.hpp"
#include "tests/support/metric_parts.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

struct DialogYaml {
  std::string device = "snapdragon-8-elite";
  std::string policy = "pointer_shift";
  std::string extra_cache;  // more kv_cache keys, ", key: value"
  int64_t ctx = 4096;
  std::string variants = "[1, 32, 128]";
  bool genie_keys = true;  // ctx_size and ar_variants (a paged policy refuses them)
  int turns = 3;
  std::string prompt = "300";
  std::string reply = "10";
  std::string workload_extra;  // more workload lines, each "  key: value\n"
  std::string tail;            // more top-level lines
  std::string text() const {
    return "name: dialog-test\nseed: 11\ndevice: " + device +
           "\nmodel: llama-3.2-3b-instruct-w4a16\n"
           "kv_cache: {policy: " +
           policy + ", dtype: int8" +
           (genie_keys ? ", ctx_size: " + std::to_string(ctx) + ", ar_variants: " + variants
                       : std::string()) +
           extra_cache +
           "}\n"
           "workload:\n  kind: dialog\n  turns: " +
           std::to_string(turns) + "\n  prompt_tokens: " + prompt + "\n  reply_tokens: " + reply +
           "\n  think_time: 2s\n" + workload_extra + tail;
  }
};

ScenarioSpec load(const DialogYaml& y) {
  return testing::scenario_from_text(y.text());
}

struct DialogRun {
  RunMetrics metrics;
  std::vector<GeniePassRecord> passes;
  testing::CapturingSink sink;
};

DialogRun run_dialog(const DialogYaml& y) {
  const ScenarioSpec s = load(y);
  DialogRun r;
  GenieEngine engine(s, &r.sink);
  if (auto numerics = make_genie_numerics_observer(s)) engine.add_observer(std::move(numerics));
  engine.set_pass_callback([&r](const GeniePassRecord& p) { r.passes.push_back(p); });
  r.metrics = engine.run();
  return r;
}

// The first error message of a scenario that must not load.
std::string load_error(const DialogYaml& y) {
  try {
    (void)load(y);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(GeniePasses, PrefillUsesTheLargestVariantAndPadsTheLastPass) {
  const std::vector<int64_t> v{1, 32, 128};
  const auto p300 = prefill_passes(300, v);
  ASSERT_EQ(p300.size(), 3u);  // ceil(300 / 128)
  EXPECT_EQ(p300[0].variant, 128);
  EXPECT_EQ(p300[1].useful_tokens, 128);
  EXPECT_EQ(p300[2].variant, 128);  // 44 left: the smallest variant >= 44
  EXPECT_EQ(p300[2].useful_tokens, 44);
  const auto p20 = prefill_passes(20, v);
  ASSERT_EQ(p20.size(), 1u);
  EXPECT_EQ(p20[0].variant, 32);
  EXPECT_EQ(p20[0].useful_tokens, 20);
  EXPECT_EQ(prefill_passes(256, v).size(), 2u);
  EXPECT_EQ(prefill_passes(1, v)[0].variant, 1);
  for (int64_t n : {1, 127, 128, 129, 1000, 4000}) {
    const auto p = prefill_passes(n, {1, 128});
    EXPECT_EQ(static_cast<int64_t>(p.size()), (n + 127) / 128) << n;
  }
}

TEST(GeniePasses, TurnFitsFollowsTheCacheDims) {
  const std::vector<int64_t> v{1, 128};
  const auto cap = [](int64_t variant) { return 1024 - variant; };
  EXPECT_TRUE(turn_fits(0, 128, 895, v, cap));   // 128 + 894 = 1022 <= 1023
  EXPECT_TRUE(turn_fits(0, 128, 896, v, cap));   // 1023
  EXPECT_FALSE(turn_fits(0, 128, 897, v, cap));  // 1024 > AR-1's 1023
  EXPECT_FALSE(turn_fits(800, 200, 1, v, cap));  // the 2nd AR-128 pass finds 928 > 896
}

TEST(GeniePasses, AcceptanceRunStopsAtTheFirstRejection) {
  std::vector<double> draws{0.1, 0.2, 0.9, 0.1};
  size_t i = 0;
  EXPECT_EQ(accepted_drafts(4, 0.5, [&] { return draws[i++]; }), 2);
  i = 0;
  EXPECT_EQ(accepted_drafts(1, 0.5, [&] { return draws[i++]; }), 1);
  EXPECT_EQ(accepted_drafts(4, 0.0, [] { return 0.0; }), 0);
  EXPECT_EQ(accepted_drafts(4, 1.0, [] { return 0.999; }), 4);
}

TEST(GenieEngine, PassCountsMatchTheArithmetic) {
  DialogYaml y;  // 3 turns, 300 prompt tokens, 10 reply tokens
  const DialogRun r = run_dialog(y);
  EXPECT_EQ(r.metrics.requests.arrived, 3);
  EXPECT_EQ(r.metrics.requests.completed, 3);
  // Turn 0 prefills 300 tokens; later turns 301 (the previous reply's last
  // token, which no pass has fed yet): 3 AR-128 passes each, the last padded
  // (44 or 45 useful of 128); then 9 AR-1 decodes.
  ASSERT_EQ(r.passes.size(), 3u * (3 + 9));
  EXPECT_EQ(r.metrics.sim.steps, 36);
  for (int turn = 0; turn < 3; ++turn) {
    const GeniePassRecord* p = &r.passes[static_cast<size_t>(turn) * 12];
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(p[i].kind, GeniePassKind::prefill);
      EXPECT_EQ(p[i].htp.variant, 128);
    }
    EXPECT_EQ(p[2].htp.useful_tokens, turn == 0 ? 44 : 45);
    for (int i = 3; i < 12; ++i) {
      EXPECT_EQ(p[i].kind, GeniePassKind::decode);
      EXPECT_EQ(p[i].htp.variant, 1);
      EXPECT_EQ(p[i].htp.useful_tokens, 1);
    }
  }
  // Cache holds every fed token: 300 + 9, then + 301 + 9 twice.
  EXPECT_EQ(r.passes.back().update.n_past_after, 300 + 9 + 2 * (301 + 9));
  // One request row per turn; what was cached is the conversation so far.
  ASSERT_EQ(r.sink.request_rows.size(), 3u);
  EXPECT_EQ(r.sink.request_rows[0].cached_tokens, 0);
  EXPECT_EQ(r.sink.request_rows[1].cached_tokens, 309);
  EXPECT_EQ(r.sink.request_rows[1].prompt_tokens, 301);
  EXPECT_FALSE(r.sink.timeline_rows.empty());
  // The first clear sets AR-128 (the policy starts at AR-1), then AR-128 ->
  // AR-1 and back once per turn.
  EXPECT_EQ(testing::genie_of(r.metrics).variant_switches, 6u);
  EXPECT_GT(r.metrics.latency_ms.ttft.mean, 0.0);
  EXPECT_GT(r.metrics.latency_ms.tpot.mean, 0.0);
}

TEST(GenieEngine, EachPassTakesAtLeastItsDdrBytesAtPeakBandwidth) {
  DialogYaml y;
  const ScenarioSpec s = load(y);
  const DialogRun r = run_dialog(y);
  const double bw = static_cast<double>(s.device.memory_bandwidth);
  for (const GeniePassRecord& p : r.passes) {
    ASSERT_GT(p.timing.ddr_bytes, 0.0);
    EXPECT_GE(static_cast<double>(p.timing.latency), p.timing.ddr_bytes / bw * 1e9 - 1.0)
        << "turn " << p.turn << " pass " << p.pass;
    // A decode pass streams at least the weights.
    EXPECT_GE(p.timing.ddr_bytes, static_cast<double>(s.model.weight_bytes()) * 0.5);
  }
  // TTFT of the first turn covers its three prefill passes.
  const TimeNs prefill =
      r.passes[0].timing.latency + r.passes[1].timing.latency + r.passes[2].timing.latency;
  EXPECT_GE(r.sink.request_rows[0].first_token - r.sink.request_rows[0].arrival, prefill);
}

TEST(GenieEngine, SpeculativeDecodingRewindsRejectedDrafts) {
  DialogYaml y;
  y.reply = "200";
  y.workload_extra = "  speculative: {draft_tokens: 4, acceptance_rate: 0.6}\n";
  const DialogRun r = run_dialog(y);
  int64_t verify = 0, rewinds = 0, generated = 0;
  for (const GeniePassRecord& p : r.passes) {
    if (p.kind != GeniePassKind::verify) continue;
    ++verify;
    EXPECT_EQ(p.htp.variant, 32);  // smallest variant >= 5
    EXPECT_LE(p.htp.useful_tokens, 5);
    EXPECT_LE(p.accepted_drafts, 4);
    if (!p.extra.empty()) {
      ++rewinds;
      EXPECT_EQ(p.extra[0].dispatch, KvDispatch::rewind);
      EXPECT_LT(p.extra[0].n_past_after, p.update.n_past_after);
    }
    generated += p.update.n_past_after - p.n_past_before;
  }
  EXPECT_GT(verify, 0);
  EXPECT_GT(rewinds, 0);
  EXPECT_EQ(testing::genie_of(r.metrics).rewinds, static_cast<uint64_t>(rewinds));
  EXPECT_EQ(r.metrics.requests.completed, 3);
  // Fewer passes than one per token.
  EXPECT_LT(verify, 3 * 199);
}

TEST(GenieEngine, SpeculationWithFullAcceptanceNeverRewinds) {
  DialogYaml y;
  y.reply = "50";
  y.workload_extra = "  speculative: {draft_tokens: 4, acceptance_rate: 1.0}\n";
  const DialogRun r = run_dialog(y);
  EXPECT_EQ(testing::genie_of(r.metrics).rewinds, 0u);
  // 49 tokens after the first, 5 per verify pass: 9 passes, then one with
  // the 3 drafts the reply still needs.
  int64_t verify = 0;
  for (const auto& p : r.passes) verify += p.kind == GeniePassKind::verify;
  EXPECT_EQ(verify, 3 * 10);
}

// Speculation cannot beat streaming the weights: every verify pass streams
// the target's weights once and emits at most K + 1 tokens, and each of the
// K drafts before it streams the draft head's (one target layer plus the LM
// head, workloads/dialog_workload_spec.hpp), all over LPDDR at no more than
// its peak. So TPOT >= (W + K x W_head) / bandwidth / (K + 1), with every
// draft accepted; prompt-lookup drafts are free but the target's share stays.
TEST(GenieEngine, SpeculativeTpotNeverBeatsTheWeightStreamingBound) {
  auto tpot_ms = [](const std::string& speculative) {
    DialogYaml y;
    y.turns = 1;
    y.reply = "81";
    y.workload_extra = "  speculative: " + speculative + "\n";
    return run_dialog(y).metrics.latency_ms.tpot.mean;
  };
  const ScenarioSpec s = load(DialogYaml{});
  ModelSpec head = s.model;
  head.num_hidden_layers = 1;
  const double bw = static_cast<double>(s.device.memory_bandwidth);
  const double target = static_cast<double>(s.model.weight_bytes()) / bw * 1e3;  // ms
  const double draft = static_cast<double>(head.weight_bytes()) / bw * 1e3;
  const int k = 4;
  const double eagle = tpot_ms("{draft_tokens: 4, acceptance_rate: 1.0}");
  const double lookup = tpot_ms("{draft_tokens: 4, acceptance_rate: 1.0, drafter: prompt_lookup}");
  const double given = tpot_ms(
      "{draft_tokens: 4, acceptance_rate: 1.0, drafter: prompt_lookup, "
      "draft_cost_per_token: 5ms}");
  std::printf(
      "[ spec     ] TPOT eagle %.3f ms, prompt lookup %.3f ms, 5 ms drafts %.3f ms; "
      "bound %.3f ms\n",
      eagle, lookup, given, (target + k * draft) / (k + 1));
  EXPECT_GE(eagle, (target + k * draft) / (k + 1));
  EXPECT_GE(lookup, target / (k + 1));
  EXPECT_GT(eagle, lookup);  // drafting has a price by default
  EXPECT_NEAR(given - lookup, 4 * 5.0 / (k + 1), 0.05);
}

std::string contention_yaml(const std::string& device, const std::string& busy = "20ms") {
  DialogYaml y;
  y.device = device;
  y.turns = 2;
  y.reply = "40";
  y.tail =
      "htp:\n  vtcm_request: 6MiB\n  co_runners:\n"
      "    - {name: camera, vtcm_request: 2MiB, period: 50ms, busy: " +
      busy + ", start: 10ms}\n";
  return y.text();
}

TEST(GenieEngine, VtcmOfV75KeepsTheSecondSessionWaitingWhileV79RunsBoth) {
  const auto run = [](const std::string& device) {
    const ScenarioSpec s = testing::scenario_from_text(contention_yaml(device));
    return GenieEngine(s, nullptr).run();
  };
  const RunMetrics v75 = run("snapdragon-8-gen3");
  const RunMetrics v79 = run("snapdragon-8-elite");
  ASSERT_EQ(testing::genie_of(v75).sessions.size(), 2u);
  ASSERT_EQ(testing::genie_of(v79).sessions.size(), 2u);
  // v75: the 6 MiB request maps an 8 MiB page; the camera waits, or the LLM
  // gets less when the camera came first.
  EXPECT_TRUE(testing::genie_of(v75).vtcm.wait_ms > 0 ||
              testing::genie_of(v75).vtcm.granted_bytes < (6 << 20) ||
              testing::genie_of(v75).sessions[1].vtcm_granted_bytes < (2 << 20));
  // The LLM took its page at t = 0; the camera, 10 ms later, waits.
  EXPECT_GT(testing::genie_of(v75).sessions[1].vtcm_wait_ms, 0.0);
  EXPECT_EQ(testing::genie_of(v75).vtcm.sessions_waited, 1);
  EXPECT_EQ(testing::genie_of(v75).sessions[1].name, "camera");
  // v79: windows of 6 and 2 MiB side by side, nobody waits.
  EXPECT_EQ(testing::genie_of(v79).vtcm.wait_ms, 0.0);
  EXPECT_EQ(testing::genie_of(v79).vtcm.sessions_waited, 0);
  EXPECT_EQ(testing::genie_of(v79).vtcm.granted_bytes, 6 << 20);
  EXPECT_EQ(testing::genie_of(v79).sessions[1].vtcm_granted_bytes, 2 << 20);
  EXPECT_EQ(testing::genie_of(v79).vtcm_bytes, 6 << 20);
  EXPECT_GT(testing::genie_of(v79).sessions[1].runs, 1);
}

TEST(GenieEngine, LessVtcmThanAskedRaisesThePassesDdrTraffic) {
  // The camera holds its 2 MiB 48 ms of every 50, so the second turn finds it
  // held whatever the device's timing makes its arrival time.
  const ScenarioSpec s = testing::scenario_from_text(contention_yaml("snapdragon-8-gen3", "48ms"));
  std::vector<GeniePassRecord> passes;
  GenieEngine engine(s, nullptr);
  engine.set_pass_callback([&](const GeniePassRecord& p) { passes.push_back(p); });
  (void)engine.run();
  const HtpTimingModel timing(s.device, s.model, kv_dtype_bytes(s.kv.dtype));
  int64_t short_passes = 0;
  for (const GeniePassRecord& p : passes) {
    EXPECT_EQ(p.htp.vtcm_requested, 6 << 20);
    if (p.htp.vtcm_granted >= p.htp.vtcm_requested) continue;
    ++short_passes;
    HtpPass full = p.htp;
    full.vtcm_granted = full.vtcm_requested;
    EXPECT_GT(p.timing.ddr_bytes, timing.price_pass(full).ddr_bytes);
  }
  // The second turn arrives while the camera holds its 2 MiB: a 4 MiB page.
  EXPECT_GT(short_passes, 0);
}

TEST(GenieEngine, SameSeedGivesByteIdenticalMetrics) {
  DialogYaml y;
  y.reply = "{dist: uniform, min: 5, max: 60}";
  y.prompt = "{dist: uniform, min: 10, max: 400}";
  y.workload_extra = "  speculative: {draft_tokens: 3, acceptance_rate: 0.5}\n";
  y.tail =
      "htp:\n  co_runners:\n    - {name: audio, vtcm_request: 1MiB, period: 30ms, busy: 5ms}\n";
  auto a = metrics_to_json(run_dialog(y).metrics);
  auto b = metrics_to_json(run_dialog(y).metrics);
  a["sim"].erase("wall_s");
  b["sim"].erase("wall_s");
  EXPECT_EQ(a.dump(), b.dump());
}

TEST(GenieEngine, AConversationPastCtxSizeResetsWithoutAWindowAndSlidesWithOne) {
  DialogYaml y;
  y.ctx = 1024;
  y.turns = 8;
  y.prompt = "200";
  y.reply = "100";
  const DialogRun reset = run_dialog(y);
  EXPECT_GT(testing::genie_of(reset.metrics).context_resets, 0);
  EXPECT_EQ(reset.metrics.requests.completed, 8);
  for (const auto& p : reset.passes) EXPECT_LE(p.n_past_before, 1023);

  y.policy = "sliding_window";
  y.extra_cache = ", update_mode: smart_mask, window: 512";
  const DialogRun slide = run_dialog(y);
  EXPECT_EQ(testing::genie_of(slide.metrics).context_resets, 0);
  EXPECT_GT(slide.metrics.kv_cache.window_evicted_tokens, 0);
  EXPECT_EQ(slide.metrics.requests.completed, 8);
  // The logical position keeps growing past ctx_size.
  EXPECT_GT(slide.passes.back().update.n_past_after, 1024);
}

TEST(GenieEngine, SessionCacheRestoreAndSaveArePricedAtStorageBandwidth) {
  DialogYaml y;
  y.turns = 1;
  y.workload_extra = "  session_cache: {restore: true, tokens: 1000, save: true}\n";
  const ScenarioSpec s = load(y);
  const DialogRun r = run_dialog(y);
  const Bytes column = r.metrics.kv_cache.kv_bytes_per_token;
  // Restored 1000 tokens, saved 1000 + 300 + 9.
  EXPECT_EQ(testing::genie_of(r.metrics).session_io_bytes, (1000 + 1309) * column);
  EXPECT_EQ(r.sink.request_rows[0].cached_tokens, 1000);
  const double restore_ns = static_cast<double>(1000 * column) /
                            static_cast<double>(s.device.htp->storage_bandwidth) * 1e9;
  EXPECT_GE(static_cast<double>(r.sink.request_rows[0].first_token), restore_ns);
}

TEST(GenieEngine, RunScenarioPicksTheEngineByDeviceKind) {
  const ScenarioSpec s = load(DialogYaml{});
  EXPECT_EQ(s.engine, "genie");
  testing::CapturingSink sink;
  const ScenarioRunResult r = run_scenario(s, &sink);
  EXPECT_EQ(r.metrics.requests.completed, 3);
  EXPECT_EQ(r.metrics.engine, "genie");
  EXPECT_EQ(r.sizing.weights_bytes, s.model.weight_bytes());
  const ScenarioSpec serving = testing::scenario_from_text(
      "device: ascend-910b2\nmodel: llama-3.2-1b\nworkload: {kind: synthetic, requests: 2, "
      "arrival: {process: constant, rate_per_s: 1}, input_tokens: 10, output_tokens: 2}\n");
  EXPECT_EQ(serving.engine, "serving");
}

// The real policy, except that one update's plan claims a column more than
// it copies: the numerics replay must catch it and name where.
class MispricedPolicy final : public GenieKvPolicy {
 public:
  MispricedPolicy(std::unique_ptr<GenieKvPolicy> inner, int64_t bad_update, Bytes column)
      : inner_(std::move(inner)), bad_update_(bad_update), column_(column) {}
  std::string_view name() const override { return inner_->name(); }
  KvUpdatePlan plan_update(const KvUpdateRequest& request) const override {
    KvUpdatePlan plan = inner_->plan_update(request);
    if (plan.dispatch == KvDispatch::update_and_set && appends_++ == bad_update_)
      plan.bytes_copied += column_;
    return plan;
  }
  void apply_update(const KvUpdatePlan& plan) override { inner_->apply_update(plan); }
  AttentionSpan attention_span() const override { return inner_->attention_span(); }
  int64_t n_past() const override { return inner_->n_past(); }
  int64_t tokens_held() const override { return inner_->tokens_held(); }
  int64_t variant() const override { return inner_->variant(); }
  int64_t capacity_tokens(int64_t v) const override { return inner_->capacity_tokens(v); }
  int64_t view_offset() const override { return inner_->view_offset(); }
  Bytes saved_bytes() const override { return inner_->saved_bytes(); }
  GenieAccounting accounting() const override { return inner_->accounting(); }

 private:
  std::unique_ptr<GenieKvPolicy> inner_;
  int64_t bad_update_;
  Bytes column_;
  mutable int64_t appends_ = 0;
};

TEST(DialogEngineNumerics, EveryUpdateIsReplayedOnRealBuffers) {
  DialogYaml y;
  y.ctx = 1024;
  y.prompt = "150";
  y.reply = "30";
  y.workload_extra = "  speculative: {draft_tokens: 3, acceptance_rate: 0.5}\n";
  y.tail = "numerics: {mode: full}\n";
  const DialogRun r = run_dialog(y);
  EXPECT_EQ(r.metrics.numerics.mode, "full");
  EXPECT_GT(r.metrics.numerics.checks, static_cast<int64_t>(r.passes.size()));
  EXPECT_LE(r.metrics.numerics.max_abs_err, 1e-4);
  EXPECT_GT(testing::genie_of(r.metrics).rewinds, 0u);
}

TEST(DialogEngineNumerics, AMispricedUpdateStopsTheRunNamingTurnAndPass) {
  DialogYaml y;
  y.ctx = 1024;
  y.prompt = "150";
  y.reply = "30";
  y.tail = "numerics: {mode: full}\n";
  const ScenarioSpec s = load(y);
  // Updates and sets: turn 0 has 2 prefill + 29 decode passes, so the 40th
  // is turn 1's ninth pass (2 prefill passes, then decodes).
  auto policy = std::make_unique<MispricedPolicy>(
      s.policy().device_buffers()->make(s.model, s.kv.dtype_bytes()), 39,
      s.policy().device_buffers()->shape(s.model, s.kv.dtype_bytes()).column_bytes());
  GenieEngine engine(s, nullptr, std::move(policy));
  engine.add_observer(make_genie_numerics_observer(s));
  try {
    (void)engine.run();
    ADD_FAILURE() << "the mispriced update was not caught";
  } catch (const CheckFailed& e) {
    EXPECT_NE(std::string(e.what()).find("turn 1 after pass 8"), std::string::npos) << e.what();
  }
}

class DialogCli : public testing::TempFolderTest {};

TEST_F(DialogCli, RunWritesTheReportOfADialogScenario) {
  const std::string scenario =
      std::string(KVSIM_SOURCE_DIR) + "/configs/scenarios/htp-vtcm-contention-v79.yaml";
  const auto r = kvsim("run " + scenario + " --quiet --out " + path("run"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string md = read(path("run") + "/report.md");
  EXPECT_NE(md.find("## VTCM sessions"), std::string::npos) << md;
  EXPECT_NE(md.find("| camera |"), std::string::npos) << md;
  const std::string json = read(path("run") + "/metrics.json");
  EXPECT_NE(json.find("\"sessions\""), std::string::npos);
  // One row per turn.
  const std::string csv = read(path("run") + "/requests.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 6);
}

TEST_F(DialogCli, CapacitySloSearchRefusesAnHtpDevice) {
  const auto r = kvsim(
      "capacity --device snapdragon-8-elite --model llama-3.2-3b-instruct-w4a16 --context 4096 "
      "--slo ttft_p99_ms=500 --workload " +
      std::string(KVSIM_SOURCE_DIR) + "/configs/scenarios/shared-prefix.yaml --out " + path("cap"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--slo"), std::string::npos) << r.output;
}

// Bad input: clear errors at FILE:LINE:COL naming the key.
TEST(DialogEngineBadInput, WindowLargerThanTheContext) {
  DialogYaml y;
  y.policy = "sliding_window";
  y.extra_cache = ", update_mode: pointer_shift, window: 8192";
  const std::string e = load_error(y);
  EXPECT_NE(e.find("kv_cache.window"), std::string::npos) << e;
  EXPECT_TRUE(std::regex_search(e, std::regex("test\\.yaml:\\d+:\\d+"))) << e;
}

TEST(DialogEngineBadInput, VariantLargerThanTheContext) {
  DialogYaml y;
  y.variants = "[1, 128, 8192]";
  const std::string e = load_error(y);
  EXPECT_NE(e.find("kv_cache.ar_variants"), std::string::npos) << e;
  EXPECT_NE(e.find("8192"), std::string::npos) << e;
  EXPECT_TRUE(std::regex_search(e, std::regex("test\\.yaml:\\d+:\\d+"))) << e;
}

TEST(DialogEngineBadInput, VtcmRequestOverTheVtcm) {
  DialogYaml y;
  y.tail = "htp: {vtcm_request: 12MiB}\n";
  std::string e = load_error(y);
  EXPECT_NE(e.find("htp.vtcm_request"), std::string::npos) << e;
  EXPECT_NE(e.find("12.00 MiB"), std::string::npos) << e;
  EXPECT_NE(e.find("8.00 MiB"), std::string::npos) << e;
  EXPECT_TRUE(std::regex_search(e, std::regex("test\\.yaml:\\d+:\\d+"))) << e;
  y.tail = "htp:\n  co_runners:\n    - {name: cam, vtcm_request: 9MiB, period: 10ms, busy: 1ms}\n";
  e = load_error(y);
  EXPECT_NE(e.find("htp.co_runners[0].vtcm_request"), std::string::npos) << e;
}

TEST(DialogEngineBadInput, HtpKeysAreStrictAndRanged) {
  DialogYaml y;
  y.tail = "htp: {vtcm_reqest: 1MiB}\n";
  EXPECT_NE(load_error(y).find("did you mean 'vtcm_request'"), std::string::npos) << load_error(y);
  y.tail = "htp:\n  co_runners:\n    - {name: cam, vtcm_request: 1MiB, period: 10ms, busy: 20ms}\n";
  EXPECT_NE(load_error(y).find("busy"), std::string::npos) << load_error(y);
}

TEST(DialogEngineBadInput, DeviceAndWorkloadMustMatch) {
  // A dialog on a server device is one user's turns under the serving
  // engine (policy, engine and device compose); under a Genie mode it has
  // no engine: the genie engine needs an NPU graph executor.
  DialogYaml y;
  y.device = "ascend-910b2";
  y.policy = "paged";
  y.genie_keys = false;
  EXPECT_EQ(load_error(y), "");
  EXPECT_EQ(load(y).engine, "serving");
  y.policy = "smart_mask";
  EXPECT_NE(load_error(y).find("which 'smart_mask' does not keep"), std::string::npos)
      << load_error(y);
  const std::string chat_on_phone =
      "device: snapdragon-8-elite\nmodel: llama-3.2-3b-instruct-w4a16\nkv_cache: {policy: "
      "smart_mask}\nworkload: {kind: synthetic, requests: 2, arrival: {process: constant, "
      "rate_per_s: 1}, input_tokens: 10, output_tokens: 2}\n";
  try {
    (void)testing::scenario_from_text(chat_on_phone);
    ADD_FAILURE() << "a synthetic workload on an HTP loaded";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("kind: dialog"), std::string::npos) << e.what();
  }
}

TEST(DialogEngineBadInput, TurnLongerThanTheContextWithoutAWindow) {
  DialogYaml y;
  y.ctx = 512;
  y.prompt = "400";
  y.reply = "200";
  const std::string e = load_error(y);
  EXPECT_NE(e.find("workload.prompt_tokens"), std::string::npos) << e;
  EXPECT_NE(e.find("ctx_size 512"), std::string::npos) << e;
}

TEST(DialogEngineBadInput, DraftsBeyondTheLargestVariant) {
  DialogYaml y;
  y.variants = "[1, 8]";
  y.workload_extra = "  speculative: {draft_tokens: 8, acceptance_rate: 0.5}\n";
  const std::string e = load_error(y);
  EXPECT_NE(e.find("workload.speculative.draft_tokens"), std::string::npos) << e;
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
