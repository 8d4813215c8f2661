#pragma once
// Cross-field checks that tie a scenario to the kind of its device,
// called once from cross_checks in sim/scenario.cpp:
//   - on a kind: htp device the model's weights plus Genie's KV buffers must
//     fit the NPU session's address space (about 3.5 GB, shared/data README),
//     per session when `htp.npu_sessions` splits the model;
//   - Genie's on-device policies (shift_concat, pointer_shift, smart_mask,
//     sliding_window over one of them) run on kind: htp devices only. (The
//     converse, an HTP device with a server policy, is in
//     sim/genie/genie_checks.cpp, as is a VTCM request over the VTCM.)
#include "base/reader.hpp"
#include "base/units.hpp"

namespace kvsim {

struct ScenarioSpec;

// What one NPU session maps for the scenario's model and cache.
struct HtpAddressSpaceUse {
  Bytes weights = 0;     // the model's weights, this session's share
  Bytes kv_buffers = 0;  // Genie's cache + output buffers (genie_buffer_bytes), this share
  Bytes limit = 0;       // the device's htp.address_space
  Bytes total() const { return weights + kv_buffers; }
  bool fits() const { return total() <= limit; }
};

// Per session: weights / npu_sessions + buffers / npu_sessions (a session
// holds its layers' weights and their KV buffers), rounded up.
HtpAddressSpaceUse htp_address_space_use(const ScenarioSpec& s);

void genie_address_cross_checks(const ScenarioSpec& s, config::LoadContext& ctx);

}  // namespace kvsim
