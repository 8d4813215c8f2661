// KV resident in VTCM (sim/cache/kv_vtcm/, seed 002 "KV Cache placement:
// often placed in VTCM"): the placements never put more KV in VTCM than the
// window holds, a resident layer is read at the device's VTCM bandwidth (the
// analytic bound), the dialog engine fills, reads and syncs exactly the
// resident share, a window shrunk by another model holds fewer layers, and
// bad input is exit 2 naming the key.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "devices/device_spec.hpp"
#include "devices/htp_timing.hpp"
#include "models/model_resolve.hpp"
#include "report_test_helpers.hpp"
#include "scenario_helpers.hpp"
#include "sim/cache/kv_vtcm/kv_vtcm_registry.hpp"
#include "sim/genie/genie_engine.hpp"
#include "sim/genie/genie_metrics.hpp"
#include "tests/support/metric_parts.hpp"
#include "tests/support/test_paths.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

constexpr Bytes kMiB = Bytes{1} << 20;

config::ParamValues values(const std::string& name,
                           std::initializer_list<std::pair<std::string, config::ParamValue>> set) {
  config::ParamValues v;
  for (const config::ParamSpec& p : kv_vtcm_placement_info(name).params)
    if (p.default_value) v.set(p.key, *p.default_value, false);
  for (const auto& [k, x] : set) v.set(k, x, true);
  return v;
}

TEST(KvVtcmPlacement, NeverExceedsTheWindow) {
  std::mt19937_64 rng(7);
  const auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  int64_t resident_plans = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    KvVtcmGeometry g{pick(1, 40), pick(1, 6 * kMiB)};
    const Bytes window = pick(0, 16 * kMiB);
    const Bytes graph = pick(0, 16 * kMiB);
    const char* part = pick(0, 1) != 0 ? "keys" : "kv";
    const std::pair<std::string, config::ParamValues> placements[] = {
        {"ddr", values("ddr", {})},
        {"layers", values("layers", {{"layers", pick(1, 48)}, {"part", std::string(part)}})},
        {"fit", values("fit", {{"max_layers", pick(0, 48)}, {"part", std::string(part)}})},
    };
    for (const auto& [name, v] : placements) {
      const auto p = make_kv_vtcm_placement(name, v);
      const KvVtcmPlan plan = p->place(window, graph, g);
      const Bytes unit = name == "ddr" ? 0 : kv_vtcm_unit_bytes(g, kv_vtcm_part(v));
      ASSERT_LE(plan.kv_bytes, window) << name << " window " << window;
      ASSERT_GE(plan.layers, 0) << name;
      ASSERT_LE(plan.layers, g.layers) << name;
      ASSERT_EQ(plan.kv_bytes, plan.layers * unit) << name;
      ASSERT_EQ(plan.graph_bytes, window - plan.kv_bytes) << name;
      ASSERT_LE(plan.share, 1.0) << name;
      if (name == "fit") {
        // The graph's tiles first: the KV only takes what they leave.
        ASSERT_LE(plan.kv_bytes, window - std::min(window, graph)) << name;
        ASSERT_GE(plan.graph_bytes, std::min(window, graph)) << name;
        // ... and as many whole layers as that holds.
        const int64_t cap =
            v.integer("max_layers") > 0 ? std::min(v.integer("max_layers"), g.layers) : g.layers;
        if (plan.layers < cap) {
          ASSERT_LT(window - std::min(window, graph) - plan.kv_bytes, unit) << name;
        }
      }
      if (name == "layers" && plan.layers < std::min(v.integer("layers"), g.layers)) {
        ASSERT_LT(window - plan.kv_bytes, unit) << "layers: only what the window cannot hold";
      }
      resident_plans += plan.layers > 0 ? 1 : 0;
    }
  }
  EXPECT_GT(resident_plans, 1000);  // the trials did place KV
}

TEST(KvVtcmPlacement, ShareIsTheResidentFractionOfTheKv) {
  const KvVtcmGeometry g{16, 1 * kMiB};
  const auto fit = make_kv_vtcm_placement("fit", values("fit", {}));
  const KvVtcmPlan p = fit->place(8 * kMiB, 4 * kMiB, g);
  EXPECT_EQ(p.layers, 4);
  EXPECT_EQ(p.kv_bytes, 4 * kMiB);
  EXPECT_DOUBLE_EQ(p.share, 0.25);
  const auto keys = make_kv_vtcm_placement("fit", values("fit", {{"part", std::string("keys")}}));
  const KvVtcmPlan k = keys->place(8 * kMiB, 4 * kMiB, g);
  EXPECT_EQ(k.layers, 8);  // half a layer each
  EXPECT_DOUBLE_EQ(k.share, 0.25);
  // layers goes first: the graph gets what is left, here nothing.
  const auto layers = make_kv_vtcm_placement("layers", values("layers", {{"layers", int64_t{8}}}));
  const KvVtcmPlan l = layers->place(8 * kMiB, 4 * kMiB, g);
  EXPECT_EQ(l.layers, 8);
  EXPECT_EQ(l.graph_bytes, 0);
  EXPECT_EQ(layers->declared_bytes(g), 8 * kMiB);
}

DeviceSpec load_device(const std::string& name) {
  config::LoadContext ctx;
  DeviceSpec d =
      load_device_file(std::string(KVSIM_CONFIG_DIR) + "/devices/" + name + ".yaml", ctx);
  EXPECT_TRUE(ctx.diagnostics.empty());
  return d;
}

TEST(KvVtcmTiming, AResidentLayerReadsAtTheVtcmBandwidth) {
  const DeviceSpec elite = load_device("snapdragon-8-elite");
  ASSERT_GT(elite.htp->vtcm_bandwidth, 0);
  const ModelSpec model = load_model_by_name("llama-3.2-1b-instruct-w4a16", "", KVSIM_CONFIG_DIR);
  const HtpTimingModel timing(elite, model, 1);
  const double layers = static_cast<double>(model.num_hidden_layers);
  for (int64_t cols : {511, 1023, 4095}) {
    HtpPass ddr{1, 1, cols, 8 * kMiB, 8 * kMiB};
    HtpPass one = ddr;
    one.kv_vtcm_share = 1.0 / layers;  // one layer of 16 resident
    const HtpPassTiming a = timing.price_pass(ddr);
    const HtpPassTiming b = timing.price_pass(one);
    // That layer's past KV comes from VTCM, not DDR...
    EXPECT_NEAR(b.kv_vtcm_bytes, a.kv_bytes_read / layers, 1e-6);
    EXPECT_NEAR(a.ddr_bytes - b.ddr_bytes, b.kv_vtcm_bytes, 1e-3);
    // ...and takes at least its bytes over the VTCM bandwidth (the analytic
    // bound), inside the pass's memory time.
    const double bound_ns = b.kv_vtcm_bytes / static_cast<double>(elite.htp->vtcm_bandwidth) * 1e9;
    EXPECT_GE(static_cast<double>(b.kv_vtcm), bound_ns);
    EXPECT_LE(static_cast<double>(b.kv_vtcm), bound_ns + 1);
    EXPECT_GE(b.memory, b.kv_vtcm);
    // VTCM is faster than the DDR read it replaces: never dearer.
    EXPECT_LE(b.memory, a.memory) << cols;
    // The DDR part lost exactly that layer's read at the KV-read rate.
    const double ddr_rate = static_cast<double>(elite.memory_bandwidth) *
                            elite.memory_efficiency[static_cast<size_t>(OpClass::attention)];
    const double expected_ns =
        static_cast<double>(a.memory) - b.kv_vtcm_bytes / ddr_rate * 1e9 + bound_ns;
    EXPECT_NEAR(static_cast<double>(b.memory), expected_ns, 2.0) << cols;
  }
}

TEST(KvVtcmTiming, ADeviceWithoutAVtcmBandwidthCannotReadKvFromVtcm) {
  DeviceSpec elite = load_device("snapdragon-8-elite");
  elite.htp->vtcm_bandwidth = 0;
  const ModelSpec model = load_model_by_name("llama-3.2-1b-instruct-w4a16", "", KVSIM_CONFIG_DIR);
  const HtpTimingModel timing(elite, model, 1);
  HtpPass p{1, 1, 1000, 0, 0};
  EXPECT_NO_THROW((void)timing.price_pass(p));
  p.kv_vtcm_share = 0.5;
  EXPECT_THROW((void)timing.price_pass(p), std::invalid_argument);
}

// Llama-3.2-1B (16 layers, 8 KV heads of 64) with an int8 cache of 1024
// columns: 1 MiB of K and V per layer.
std::string dialog(const std::string& device, const std::string& kv_vtcm,
                   const std::string& htp_extra = "") {
  return "name: kv-vtcm\nseed: 3\ndevice: " + device +
         "\nmodel: llama-3.2-1b-instruct-w4a16\n"
         "kv_cache: {policy: pointer_shift, dtype: int8, ctx_size: 1024, ar_variants: [1, 128]}\n"
         "workload: {kind: dialog, turns: 4, prompt_tokens: 150, reply_tokens: 60, think_time: "
         "1s}\n"
         "htp:\n  vtcm_request: 8MiB\n  kv_vtcm: " +
         kv_vtcm + "\n" + htp_extra;
}

struct DialogRun {
  RunMetrics m;
  std::vector<GeniePassRecord> passes;
};

DialogRun run(const std::string& text) {
  const ScenarioSpec s = testing::scenario_from_text(text);
  DialogRun r;
  GenieEngine engine(s, nullptr);
  engine.set_pass_callback([&r](const GeniePassRecord& p) { r.passes.push_back(p); });
  r.m = engine.run();
  return r;
}

TEST(KvVtcmDialog, TheResidentShareIsFilledReadAndSynced) {
  const DialogRun ddr = run(dialog("snapdragon-8-elite", "{placement: ddr}"));
  const DialogRun fit = run(dialog("snapdragon-8-elite", "{placement: fit, graph_vtcm: 4MiB}"));
  const GenieRunMetrics& g = testing::genie_of(fit.m);
  EXPECT_EQ(g.vtcm.kv_layers, 4);  // (8 - 4) MiB / 1 MiB
  EXPECT_EQ(g.vtcm.kv_bytes, 4 * kMiB);
  EXPECT_EQ(g.vtcm.kv_fill_bytes, 4 * 4 * kMiB);  // once per turn
  double read = 0;
  for (const GeniePassRecord& p : fit.passes) {
    EXPECT_DOUBLE_EQ(p.htp.kv_vtcm_share, 0.25);
    EXPECT_LE(p.htp.vtcm_granted, 8 * kMiB);
    EXPECT_GE(p.htp.vtcm_granted, p.htp.vtcm_requested);  // the graph keeps its 4 MiB
    read += p.timing.kv_vtcm_bytes;
  }
  EXPECT_NEAR(static_cast<double>(g.vtcm.kv_read_bytes), read, fit.passes.size());
  EXPECT_GT(g.vtcm.kv_sync_bytes, 0);
  EXPECT_NEAR(static_cast<double>(g.vtcm.kv_sync_bytes),
              0.25 * static_cast<double>(fit.m.kv_cache.bytes_moved), 64.0);
  // Same passes, a quarter of the KV from VTCM: every decode (bound by its
  // DDR bytes) is faster, no prefill (bound by the HMX) slower.
  ASSERT_EQ(ddr.passes.size(), fit.passes.size());
  int64_t decodes = 0;
  for (size_t i = 0; i < fit.passes.size(); ++i) {
    EXPECT_LE(fit.passes[i].timing.latency, ddr.passes[i].timing.latency) << i;
    if (fit.passes[i].kind != GeniePassKind::decode) continue;
    ++decodes;
    EXPECT_LT(fit.passes[i].timing.latency, ddr.passes[i].timing.latency) << i;
  }
  EXPECT_GT(decodes, 100);
  EXPECT_LT(fit.m.latency_ms.tpot.p50, ddr.m.latency_ms.tpot.p50);
  // ddr: nothing resident, nothing read from VTCM.
  EXPECT_EQ(testing::genie_of(ddr.m).vtcm.kv_layers, 0);
  EXPECT_EQ(testing::genie_of(ddr.m).vtcm.kv_read_bytes, 0);
}

TEST(KvVtcmDialog, KvThatTakesTheGraphsTilesCostsItsSpill) {
  // layers: 8 takes the whole window before the graph's tiles, which needed
  // all of it: the weights spill to DDR and the pass is slower than none.
  const DialogRun ddr = run(dialog("snapdragon-8-elite", "{placement: ddr}"));
  const DialogRun greedy = run(dialog("snapdragon-8-elite", "{placement: layers, layers: 8}"));
  EXPECT_EQ(testing::genie_of(greedy.m).vtcm.kv_layers, 8);
  for (const GeniePassRecord& p : greedy.passes) EXPECT_EQ(p.htp.vtcm_granted, 0);
  EXPECT_GT(greedy.m.latency_ms.tpot.p50, ddr.m.latency_ms.tpot.p50);
}

TEST(KvVtcmDialog, AnotherModelsWindowLeavesFewerLayers) {
  // v75 (no windows): the LLM asks 6 MiB (an 8 MiB page); a camera holding
  // 2 MiB 48 ms of every 50 leaves it a 4 MiB page on the turns it finds the
  // camera there, which hold no KV once the graph has its 4 MiB.
  const std::string camera =
      "  co_runners:\n    - {name: camera, vtcm_request: 2MiB, period: 50ms, busy: 48ms, start: "
      "10ms}\n";
  std::string text = dialog("snapdragon-8-gen3", "{placement: fit, graph_vtcm: 4MiB}", camera);
  text.replace(text.find("vtcm_request: 8MiB"), 18, "vtcm_request: 6MiB");
  const DialogRun r = run(text);
  int64_t shrunk = 0, full = 0;
  for (const GeniePassRecord& p : r.passes) {
    const Bytes window =
        p.htp.vtcm_granted + static_cast<Bytes>(std::llround(p.htp.kv_vtcm_share * 16.0)) * kMiB;
    EXPECT_LE(window, 6 * kMiB);
    if (p.htp.kv_vtcm_share == 0) ++shrunk;
    if (p.htp.kv_vtcm_share > 0) {
      EXPECT_DOUBLE_EQ(p.htp.kv_vtcm_share, 2.0 / 16.0);  // (6 - 4) MiB
      ++full;
    }
  }
  EXPECT_GT(full, 0);    // the first turn took its page at t = 0
  EXPECT_GT(shrunk, 0);  // a later one found the camera
  EXPECT_EQ(testing::genie_of(r.m).vtcm.kv_layers, 0);
}

TEST(KvVtcmDialog, SameSeedGivesTheSameRun) {
  const std::string text = dialog("snapdragon-8-elite", "{placement: fit, graph_vtcm: 5MiB}");
  const DialogRun a = run(text), b = run(text);
  EXPECT_EQ(testing::genie_of(a.m).vtcm.kv_read_bytes, testing::genie_of(b.m).vtcm.kv_read_bytes);
  EXPECT_EQ(a.m.latency_ms.tpot.p50, b.m.latency_ms.tpot.p50);
}

class KvVtcmBadInput : public testing::TempFolderTest {
 protected:
  void expect_exit_2(const std::string& text, const std::string& key, const std::string& what) {
    const std::string file = write("bad.yaml", text);
    const auto r = kvsim("run " + file + " --quiet --out " + path("out"));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("bad.yaml:"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(key), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(what), std::string::npos) << r.output;
    EXPECT_FALSE(std::filesystem::exists(path("out")));
  }
};

TEST_F(KvVtcmBadInput, APlacementLargerThanTheWindowNamesTheKey) {
  // 9 layers of 1 MiB in an 8 MiB window.
  expect_exit_2(dialog("snapdragon-8-elite", "{placement: layers, layers: 9}"),
                "htp.kv_vtcm.layers", "more than the LLM's window of 8.00 MiB");
  // ... and in a 6 MiB one, even as keys only (7 x 512 KiB fits, 13 does not).
  std::string text = dialog("snapdragon-8-elite", "{placement: layers, layers: 13, part: keys}");
  text.replace(text.find("vtcm_request: 8MiB"), 18, "vtcm_request: 6MiB");
  expect_exit_2(text, "htp.kv_vtcm.layers", "1..12 layers");
}

TEST_F(KvVtcmBadInput, OtherWrongPlacements) {
  expect_exit_2(dialog("snapdragon-8-elite", "{placement: layers, layers: 17}"),
                "htp.kv_vtcm.layers", "has 16");
  expect_exit_2(dialog("snapdragon-8-elite", "{placement: fit, graph_vtcm: 9MiB}"),
                "htp.kv_vtcm.graph_vtcm", "do not fit");
  expect_exit_2(dialog("snapdragon-8-elite", "{placement: everywhere}"), "htp.kv_vtcm.placement",
                "ddr, fit, layers");
  expect_exit_2(dialog("snapdragon-8-elite", "{placement: layers, max_layers: 2}"),
                "htp.kv_vtcm.max_layers", "fit");
  expect_exit_2(dialog("snapdragon-8-elite", "{placement: fit, part: values}"), "htp.kv_vtcm.part",
                "keys");
}

TEST_F(KvVtcmBadInput, ADeviceWithoutAVtcmBandwidth) {
  std::string device = read(std::string(KVSIM_CONFIG_DIR) + "/devices/snapdragon-8-elite.yaml");
  const size_t at = device.find("  vtcm_bandwidth:");
  ASSERT_NE(at, std::string::npos);
  device.erase(at, device.find('\n', at) + 1 - at);
  const std::string dev = write("dev.yaml", device);
  expect_exit_2(dialog(dev, "{placement: fit, graph_vtcm: 4MiB}"), "htp.kv_vtcm.placement",
                "htp.vtcm_bandwidth");
  // Without a placement the device still runs.
  const std::string ok = write("ok.yaml", dialog(dev, "{placement: ddr}"));
  EXPECT_EQ(kvsim("run " + ok + " --quiet --out " + path("ok")).exit_code, 0);
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
