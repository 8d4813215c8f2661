// Predicting the Snapdragon rows of published_measurements.csv:
// each row becomes a one-turn dialog scenario (sim/genie/genie_engine)
// on the row's device and a w4a16 model file, and the metric is read from the
// run's RunMetrics:
//   decode_rate          1000 / TPOT (ms) of AR-1 decode at the row's context
//   ttft_one_ar128_pass  TTFT of a 128-token prompt = one AR-128 pass
//   ttft_1024_prompt     TTFT of a 1024-token prompt: those exports (AI Hub's
//                        2024 Llama 2 and Llama 3 "PromptProcessor") ran it
//                        as one 1024-token pass that takes no past KV:
//                        seed 002's BERT variant (n == ctx_size), so the
//                        scenario's ctx_size is the row's context and it
//                        ships an AR-1024 variant. Their graphs apply the LM head to the last
//                        row only (model.py: num_logits_to_return = 1, at
//                        quic/ai-hub-models v0.15.0 1c5de3b9 for Llama 3 8B
//                        and v0.46.0 33c3d032 for Llama 2 7B), so the
//                        scenario says htp.logits: last_row. Nor do they
//                        take a past KV (get_input_spec: input_ids, a
//                        [1024 x 1024] mask and the RoPE tables): their
//                        attention covers the prompt's own 1024 columns,
//                        the BERT variant's static shape (no past columns)
// Assumptions (the rows leave them blank): KV int8 (AI Hub's Genie exports
// quantise the KV cache to 8 bits), update mode smart_mask (Genie's static
// AR-n graphs attend over their whole past input under a mask whatever the
// mode; smart_mask is the mode whose updates move least), the VTCM all the LLM's. A model larger
// than one NPU session's address space is split over the fewest sessions that hold it
// (htp.npu_sessions), as AI Hub's multi-part exports run.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <stdexcept>

#include "cli/studies/calibration.hpp"
#include "models/model_resolve.hpp"
#include "sim/genie/genie_engine.hpp"
#include "sim/policies/policy_registry.hpp"
#include "sim/scenario/scenario.hpp"

namespace kvsim {
namespace {

namespace fs = std::filesystem;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

struct RowShape {
  int64_t ctx_size = 0;
  std::string variants;  // YAML list
  int64_t largest_variant = 0;
  int64_t prompt = 0;
  int64_t reply = 0;
  bool last_row_logits = false;       // htp.logits: last_row
  const char* policy = "smart_mask";  // the Genie update mode
};

std::optional<RowShape> shape_of(const MeasurementRow& row) {
  const int64_t context = row.context.value_or(4096);
  if (row.metric == "decode_rate") {
    // Decode is LPDDR-bound and every mode reads the whole static shape: the prompt
    // only has to fit beside 32 decoded tokens.
    const int64_t prompt = std::min<int64_t>(row.input_tokens.value_or(128), 128);
    return RowShape{context, "[1, 128]", 128, prompt, 33};
  }
  if (row.metric == "ttft_one_ar128_pass") return RowShape{context, "[1, 128]", 128, 128, 1};
  if (row.metric == "ttft_1024_prompt") return RowShape{context, "[1, 1024]", 1024, 1024, 1, true};
  return std::nullopt;
}

// The fewest NPU sessions whose address spaces hold the model and its
// buffers (1 when it fits one).
int64_t sessions_needed(const DeviceSpec& d, const ModelSpec& m, const RowShape& shape,
                        const std::string& kv_dtype) {
  if (!d.htp || d.htp->address_space_bytes <= 0) return 1;
  config::ParamValues buffers;
  buffers.set("ctx_size", shape.ctx_size, true);
  buffers.set("ar_variants", std::vector<int64_t>{1, shape.largest_variant}, true);
  const Bytes total = m.weight_bytes() + make_policy_spec(shape.policy, buffers)
                                             ->device_buffers()
                                             ->buffer_bytes(m, kv_dtype_bytes(kv_dtype));
  return std::max<int64_t>(1,
                           (total + d.htp->address_space_bytes - 1) / d.htp->address_space_bytes);
}

// The row's scenario on `device` (the row's device file when null), ready
// to run; nullopt when the row is not an HTP row this predictor handles.
struct HtpRowScenario {
  ScenarioSpec spec;
  std::string description;
};

std::optional<HtpRowScenario> htp_row_scenario(const MeasurementRow& row,
                                               const std::string& configs_dir,
                                               const DeviceSpec* device) {
  if (row.device.rfind("snapdragon-", 0) != 0) return std::nullopt;
  // Layout and speculation columns are the serving engine's
  // (calibration_ascend.cpp): a phone row with them is not run as another.
  if (row.has_layout_or_speculation())
    throw std::runtime_error(
        "pipeline, expert, data and speculative columns are for serving-engine rows");
  // A phone dialog runs one prompt: a length distribution is another workload.
  if (row.length_distribution)
    throw std::runtime_error("a lengths file is for serving-engine rows (one prompt runs here)");
  const std::optional<RowShape> shape = shape_of(row);
  if (!shape) return std::nullopt;
  const std::string device_file = configs_dir + "/devices/" + row.device + ".yaml";
  if (!fs::exists(device_file)) {
    throw std::runtime_error(
        fmt::format("row {}: no device file {}/devices/{}.yaml", row.id, configs_dir, row.device));
  }
  // Genie exports on AI Hub are w4a16 unless the row says otherwise.
  const std::string weights = row.weights.empty() ? "w4a16" : lower(row.weights);
  const std::string model_name = row.model + "-" + weights;
  ModelSpec model;
  try {
    model = load_model_by_name(row.model, weights, configs_dir);
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("row {}: {}", row.id, e.what()));
  }
  const std::string kv_dtype = row.kv_dtype.empty() ? "int8" : row.kv_dtype;
  if (std::find(kKvDtypeNames.begin(), kKvDtypeNames.end(), kv_dtype) == kKvDtypeNames.end()) {
    throw std::runtime_error(fmt::format(
        "row {}: KV dtype '{}' is not one of fp16, bf16, int8, fp32", row.id, kv_dtype));
  }
  DeviceSpec loaded;
  if (device == nullptr) {
    config::LoadContext ctx;
    loaded = load_device_file(device_file, ctx);
    ctx.diagnostics.throw_if_any();
    device = &loaded;
  }
  const int64_t sessions = sessions_needed(*device, model, *shape, kv_dtype);
  std::string htp;
  if (sessions > 1) htp += fmt::format("npu_sessions: {}", sessions);
  if (shape->last_row_logits) htp += std::string(htp.empty() ? "" : ", ") + "logits: last_row";
  const std::string yaml = fmt::format(
      "name: calibrate-{id}\n"
      "seed: 1\n"
      "device: {device}\n"
      "model: {model}\n"
      "kv_cache: {{policy: {policy}, dtype: {kv}, ctx_size: {ctx}, ar_variants: {variants}}}\n"
      "{htp}"
      "workload: {{kind: dialog, turns: 1, prompt_tokens: {prompt}, reply_tokens: {reply}}}\n",
      fmt::arg("id", row.id), fmt::arg("device", row.device), fmt::arg("model", model_name),
      fmt::arg("policy", shape->policy), fmt::arg("kv", kv_dtype), fmt::arg("ctx", shape->ctx_size),
      fmt::arg("variants", shape->variants),
      fmt::arg("htp", htp.empty() ? "" : fmt::format("htp: {{{}}}\n", htp)),
      fmt::arg("prompt", shape->prompt), fmt::arg("reply", shape->reply));
  HtpRowScenario out;
  out.spec = load_scenario_text(yaml, fmt::format("calibration row {}", row.id), configs_dir);
  out.spec.device = *device;
  out.description = fmt::format("{} {} {} KV {} ctx_size {} ar_variants {} prompt {} reply {}{}{}",
                                row.device, model_name, kv_dtype, shape->policy, shape->ctx_size,
                                shape->variants, shape->prompt, shape->reply,
                                sessions > 1 ? fmt::format(" npu_sessions {}", sessions) : "",
                                shape->last_row_logits ? " logits last_row" : "");
  return out;
}

double htp_metric(const MeasurementRow& row, const RunMetrics& m) {
  if (row.metric == "decode_rate") {
    if (m.latency_ms.tpot.mean <= 0) throw std::runtime_error("row " + row.id + ": no decode ran");
    return 1000.0 / m.latency_ms.tpot.mean;
  }
  return m.latency_ms.ttft.mean;
}

// Distinct passes of one kind with how often each ran and its price on the
// recorded device.
struct PassGroup {
  HtpPass pass;
  int64_t count = 0;
  TimeNs latency = 0;
};

void add_pass(std::vector<PassGroup>& groups, const GeniePassRecord& r) {
  for (PassGroup& g : groups) {
    const HtpPass& p = g.pass;
    if (p.variant == r.htp.variant && p.useful_tokens == r.htp.useful_tokens &&
        p.kv_cols_read == r.htp.kv_cols_read && p.vtcm_requested == r.htp.vtcm_requested &&
        p.vtcm_granted == r.htp.vtcm_granted && g.latency == r.timing.latency) {
      ++g.count;
      return;
    }
  }
  groups.push_back(PassGroup{r.htp, 1, r.timing.latency});
}

}  // namespace

std::optional<Prediction> predict_htp_row(const MeasurementRow& row, const std::string& configs_dir,
                                          const DeviceSpec* device) {
  std::optional<HtpRowScenario> run = htp_row_scenario(row, configs_dir, device);
  if (!run) return std::nullopt;
  GenieEngine engine(run->spec, nullptr);
  Prediction p;
  p.value = htp_metric(row, engine.run());
  p.scenario = run->description;
  return p;
}

// The one-turn dialog runs its passes one after another, each followed by a
// KV update whose price does not depend on the fitted parameters: the TTFT is
// the recorded one plus what each prefill pass's price moved, and the decode
// span (first token to last) the recorded one plus what each decode pass's
// price moved, divided by the reply's gaps as the engine does (integer ns).
std::optional<RowPricer> prepare_htp_row(const MeasurementRow& row, const std::string& configs_dir,
                                         const DeviceSpec& device) {
  std::optional<HtpRowScenario> run = htp_row_scenario(row, configs_dir, &device);
  if (!run) return std::nullopt;
  std::vector<GeniePassRecord> passes;
  GenieEngine engine(run->spec, nullptr);
  engine.set_pass_callback([&](const GeniePassRecord& r) { passes.push_back(r); });
  const RunMetrics m = engine.run();
  const double recorded = htp_metric(row, m);

  std::vector<PassGroup> prefill, decode;
  TimeNs first_token = -1, last_token = -1;
  int64_t gaps = 0;
  for (size_t i = 0; i < passes.size(); ++i) {
    const GeniePassRecord& r = passes[i];
    const TimeNs end = r.start + r.timing.latency;
    if (r.kind == GeniePassKind::verify) return std::nullopt;  // drafts: not a fixed pass list
    if (r.kind == GeniePassKind::prefill) {
      add_pass(prefill, r);
      first_token = end;
    } else {
      add_pass(decode, r);
      last_token = end;
      ++gaps;
    }
  }
  const bool decode_rate = row.metric == "decode_rate";
  if (first_token < 0 || (decode_rate && gaps == 0)) return std::nullopt;
  const TimeNs ttft = static_cast<TimeNs>(std::llround(m.latency_ms.ttft.mean * 1e6));
  const TimeNs span = last_token - first_token;
  const ModelSpec model = run->spec.model;
  const Bytes kv_bytes = kv_dtype_bytes(run->spec.kv.dtype);
  const GraphLogits logits = run->spec.htp.logits;
  RowPricer pricer;
  pricer.scenario = run->description;
  pricer.recorded = recorded;
  pricer.price = [=](const DeviceSpec& d) {
    const HtpTimingModel timing(d, model, kv_bytes, logits);
    auto moved = [&](const std::vector<PassGroup>& groups) {
      TimeNs t = 0;
      for (const PassGroup& g : groups)
        t += g.count * (timing.price_pass(g.pass).latency - g.latency);
      return t;
    };
    if (decode_rate) {
      const TimeNs tpot = (span + moved(decode)) / gaps;
      return 1000.0 / (static_cast<double>(tpot) / 1e6);
    }
    return static_cast<double>(ttft + moved(prefill)) / 1e6;
  };
  return pricer;
}

}  // namespace kvsim
