#include "sim/spec/genie_session_config.hpp"

#include <fmt/format.h>

#include <set>

namespace kvsim {
namespace {

// VTCM is 8 MiB on every shipped Hexagon (v73..v79); 1 GiB bounds typos
// while the device-specific limit is a cross-field check.
constexpr Bytes kMaxVtcmValue = 1LL << 30;
constexpr TimeNs kMaxPeriod = 3600 * kNsPerS;

CoRunnerConfig read_co_runner(const config::Node& node, size_t index) {
  config::MapReader r(node);
  CoRunnerConfig c;
  // name: shown in the sessions array of metrics.json
  c.name = r.string("name", fmt::format("co_runner_{}", index));
  // vtcm_request: VTCM it asks for each burst
  c.vtcm_request = r.bytes("vtcm_request", std::nullopt, 1, kMaxVtcmValue);
  // vtcm_min: the least it runs with (default: all of its request)
  c.vtcm_min = r.bytes("vtcm_min", c.vtcm_request, 0, kMaxVtcmValue);
  // period: time between burst starts; busy: how long each burst holds VTCM
  c.period = r.duration("period", std::nullopt, 1, kMaxPeriod);
  c.busy = r.duration("busy", std::nullopt, 1, kMaxPeriod);
  // start: first burst
  c.start = r.duration("start", 0, 0, kMaxPeriod);
  r.finish();
  if (c.vtcm_min > c.vtcm_request) {
    r.node()
        .child_at("vtcm_min")
        .error(fmt::format("{} is above vtcm_request {}", format_bytes(c.vtcm_min),
                           format_bytes(c.vtcm_request)),
               "0..vtcm_request");
  }
  if (c.busy > c.period) {
    r.node().child_at("busy").error(fmt::format("{} is longer than period {}",
                                                format_duration(c.busy), format_duration(c.period)),
                                    "busy <= period (a duty cycle)");
  }
  return c;
}

}  // namespace

config::ComponentInfo genie_engine_info() {
  using namespace config;
  return {
      "engine",
      "genie",
      "one user's dialog through Genie's update modes on a kind: htp device (seed 002); its keys "
      "are the `htp:` section",
      {optional_param(bytes_param("vtcm_request", 0, 1, kMaxVtcmValue,
                                  "the LLM session's VTCM request (default: the whole VTCM)")),
       bytes_param("vtcm_min", 0, 0, kMaxVtcmValue,
                   "the least VTCM the LLM runs with; a turn waits for it"),
       // sim/genie/genie_address_checks.cpp holds each session to the address space.
       int_param("npu_sessions", 1, 1, 16, "sessions",
                 "NPU sessions the model's layers are split over, each with its own address "
                 "space"),
       choice_param("logits", std::string("every_row"), {"every_row", "last_row"},
                    "rows of a pass the exported graph computes logits for: every_row (AI Hub's "
                    "Genie exports) or last_row (an export that slices the last row before the "
                    "LM head: AI Hub's 2024 Llama 2 / Llama 3 prompt processors, llama.cpp)"),
       section_param("co_runners", false,
                     "[{name, vtcm_request, vtcm_min, period, busy, start}, ...]",
                     "other models sharing the HTP and its VTCM on a duty cycle"),
       section_param("kv_vtcm", false, "{placement, graph_vtcm, ...}",
                     "which layers' KV lives in the LLM's VTCM window (htp.kv_vtcm)")}};
}

HtpSessionConfig read_htp_config(const config::Node& node) {
  HtpSessionConfig h;
  h.present = node.defined();
  config::MapReader r(node);
  const config::ParamValues v = config::read_params(r, genie_engine_info());
  if (v.has("vtcm_request")) h.vtcm_request = v.integer("vtcm_request");
  h.vtcm_min = v.integer("vtcm_min");
  if (h.vtcm_request && h.vtcm_min > *h.vtcm_request) {
    r.node()
        .child_at("vtcm_min")
        .error(fmt::format("{} is above vtcm_request {}", format_bytes(h.vtcm_min),
                           format_bytes(*h.vtcm_request)),
               "0..vtcm_request");
  }
  h.npu_sessions = v.integer("npu_sessions");
  h.logits = v.string("logits") == "last_row" ? GraphLogits::last_row : GraphLogits::every_row;
  h.kv_vtcm = read_kv_vtcm_config(r.child("kv_vtcm"));
  if (const config::Node list = r.child("co_runners"); list.defined()) {
    std::set<std::string> names;
    size_t index = 0;
    for (const config::Node& item : list.items()) {
      CoRunnerConfig c = read_co_runner(item, index++);
      if (!names.insert(c.name).second)
        item.child_at("name").error(fmt::format("'{}' is used twice", c.name), "unique names");
      h.co_runners.push_back(std::move(c));
    }
  }
  r.finish();
  return h;
}

}  // namespace kvsim
