#pragma once
// The genie engine's memory checks (seed 002, shared/data README): the
// model's weights plus Genie's KV buffers must fit the NPU session's
// address space (about 3.5 GB), per session when `htp.npu_sessions` splits
// the model, and the phone's memory as a whole.
#include "base/reader.hpp"
#include "base/units.hpp"

namespace kvsim {

struct InstanceSpec;

// What one NPU session maps for the scenario's model and cache.
struct HtpAddressSpaceUse {
  Bytes weights = 0;     // the model's weights, this session's share
  Bytes kv_buffers = 0;  // Genie's cache + output buffers (genie_buffer_bytes), this share
  Bytes limit = 0;       // the device's htp.address_space
  Bytes total() const { return weights + kv_buffers; }
  bool fits() const { return total() <= limit; }
};

// Per session: weights / npu_sessions + buffers / npu_sessions (a session
// holds its layers' weights and their KV buffers), rounded up. The policy
// must offer device buffers.
HtpAddressSpaceUse htp_address_space_use(const InstanceSpec& s);

void genie_address_cross_checks(const InstanceSpec& s, config::LoadContext& ctx);

}  // namespace kvsim
