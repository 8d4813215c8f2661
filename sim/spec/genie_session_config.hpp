#pragma once
// The `htp:` section of a scenario: how the LLM session asks for
// VTCM, and the other models that share the same HTP and its VTCM on a duty
// cycle (shared/data README, Hexagon SDK HAP_compute_res "VTCM window
// feature"). Only meaningful on a `kind: htp` device.
#include <optional>
#include <string>
#include <vector>

#include "base/params.hpp"
#include "base/reader.hpp"
#include "base/units.hpp"
#include "devices/htp_timing.hpp"
#include "sim/cache/kv_vtcm/kv_vtcm_config.hpp"

namespace kvsim {

// Another model on the HTP: from `start`, every `period` it needs VTCM for
// `busy` time (a camera or audio model running per frame). It waits while it
// cannot get at least `vtcm_min`.
struct CoRunnerConfig {
  std::string name;
  Bytes vtcm_request = 0;
  Bytes vtcm_min = 0;
  TimeNs period = 0;
  TimeNs busy = 0;
  TimeNs start = 0;
};

struct HtpSessionConfig {
  bool present = false;               // the scenario has an `htp:` section
  std::optional<Bytes> vtcm_request;  // the LLM's request; default the whole VTCM
  Bytes vtcm_min = 0;                 // the least it runs with
  std::vector<CoRunnerConfig> co_runners;
  // NPU sessions (process domains) the model's layers are split over, each
  // mapping at most the device's htp.address_space (llama.cpp's Hexagon
  // backend splits models over 3.5 GB this way; sim/genie/genie_address_checks.cpp checks it).
  int64_t npu_sessions = 1;
  // Which rows of a pass the exported graph computes logits for
  // (devices/htp_timing.hpp GraphLogits): every row, or the last one.
  GraphLogits logits = GraphLogits::every_row;
  // Which layers' KV lives in the LLM's VTCM window (sim/cache/kv_vtcm/).
  KvVtcmConfig kv_vtcm;

  // The LLM's request on a device with `vtcm_bytes` of VTCM.
  Bytes llm_request(Bytes vtcm_bytes) const { return vtcm_request.value_or(vtcm_bytes); }
};

// The genie engine's keys: the `htp:` section.
config::ComponentInfo genie_engine_info();

// Reads `htp:` (absent: every default). Errors go to the node's diagnostics
// with file:line:col and key path; never throws.
HtpSessionConfig read_htp_config(const config::Node& node);

}  // namespace kvsim
