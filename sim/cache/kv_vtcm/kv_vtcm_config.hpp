#pragma once
// `htp.kv_vtcm:` of a scenario: the KV placement in VTCM (kv_vtcm_registry.hpp)
// and the VTCM the compiled graph's own tiles need within the LLM's window.
#include <optional>
#include <string>

#include "base/params.hpp"
#include "base/reader.hpp"
#include "base/units.hpp"
#include "sim/cache/kv_vtcm/kv_vtcm_registry.hpp"

namespace kvsim {

struct KvVtcmConfig {
  std::string placement{kDefaultKvVtcmPlacement};
  config::ParamValues params;  // the placement's keys
  // The graph's tiles' need within the window; absent: the whole window
  // (today's meaning of the LLM's request: the graph uses all it asked for).
  std::optional<Bytes> graph_vtcm;

  bool places_kv() const { return placement != kDefaultKvVtcmPlacement; }
};

// Reads `htp.kv_vtcm` (absent: placement ddr). Errors go to the node's
// diagnostics with file:line:col and key path; never throws.
KvVtcmConfig read_kv_vtcm_config(const config::Node& node);

}  // namespace kvsim
