#include "sim/genie/genie_address_checks.hpp"

#include <fmt/format.h>

#include "sim/spec/instance_spec.hpp"

namespace kvsim {
namespace {

Bytes session_share(Bytes bytes, int64_t sessions) {
  return sessions <= 1 ? bytes : (bytes + sessions - 1) / sessions;
}

}  // namespace

HtpAddressSpaceUse htp_address_space_use(const InstanceSpec& s) {
  HtpAddressSpaceUse use;
  const int64_t sessions = std::max<int64_t>(1, s.htp.npu_sessions);
  const Bytes buffers = s.policy().device_buffers()->buffer_bytes(s.model, s.kv.dtype_bytes());
  use.weights = session_share(s.model.weight_bytes(), sessions);
  use.kv_buffers = session_share(buffers, sessions);
  use.limit = s.device.htp ? s.device.htp->address_space_bytes : 0;
  return use;
}

void genie_address_cross_checks(const InstanceSpec& s, config::LoadContext& ctx) {
  auto at = [&](const std::string& key) { return ctx.location_of(key); };
  const DeviceBufferContract* buffers = s.policy().device_buffers();
  if (!s.device.htp || buffers == nullptr) return;  // the engine's refusal says why
  const HtpAddressSpaceUse use = htp_address_space_use(s);
  // The phone's LPDDR holds every session's session_share (the paged pool check of
  // cross_checks does not apply to a phone).
  const int64_t sessions = std::max<int64_t>(1, s.htp.npu_sessions);
  const Bytes whole = s.model.weight_bytes() + use.kv_buffers * sessions;
  const auto ddr_budget =
      static_cast<Bytes>(static_cast<double>(s.device.memory_bytes) * s.kv.memory_fraction);
  if (whole > ddr_budget) {
    ctx.diagnostics.error(
        at("model"), "model",
        fmt::format("{} does not fit the memory of {}: weights {} + KV buffers {} = {} exceed {} "
                    "x {} = {} by {}",
                    s.model.name, s.device.name, format_bytes(s.model.weight_bytes()),
                    format_bytes(use.kv_buffers * sessions), format_bytes(whole),
                    format_bytes(s.device.memory_bytes), s.kv.memory_fraction,
                    format_bytes(ddr_budget), format_bytes(whole - ddr_budget)),
        "a smaller or more quantised model, a smaller ctx_size, or a phone with more memory");
  }
  if (s.device.htp->address_space_bytes <= 0) return;
  if (use.fits()) return;
  const int64_t needed = (whole + use.limit - 1) / use.limit;
  ctx.diagnostics.error(
      at("model"), "model",
      fmt::format("{} does not fit the NPU address space of {}: weights {} + KV buffers {} ({}, "
                  "ctx_size {}, {}) = {}{} exceed {} by {}",
                  s.model.name, s.device.name, format_bytes(use.weights),
                  format_bytes(use.kv_buffers), buffers->buffer_layout(), buffers->ctx_size(),
                  s.kv.dtype, format_bytes(use.total()),
                  sessions > 1 ? fmt::format(" per session (npu_sessions {})", sessions) : "",
                  format_bytes(use.limit), format_bytes(use.total() - use.limit)),
      fmt::format("a smaller model or ctx_size{}{}", s.kv.dtype == "int8" ? "" : ", int8 KV",
                  needed > sessions && needed <= 16
                      ? fmt::format(", or htp.npu_sessions: {} (the model split over sessions, "
                                    "each with its own address space)",
                                    needed)
                      : ""));
}

}  // namespace kvsim
