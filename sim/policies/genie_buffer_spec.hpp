#pragma once
// What every on-device policy of seed 002 reads (ctx_size, the AR-n
// variants, the update threads), declared once and taken by the Genie
// update modes, sliding_window over one of them and llama_cells; and the
// Genie update modes themselves as policies (shift_concat, pointer_shift,
// smart_mask: one file each beside this one).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/params.hpp"
#include "sim/cache/genie_mode_policy.hpp"
#include "sim/policies/policy_values.hpp"
#include "sim/spec/policy_spec.hpp"

namespace kvsim {

std::vector<config::ParamSpec> genie_buffer_params();

struct GenieBufferSettings {
  int64_t ctx_size = 0;
  std::vector<int64_t> ar_variants;  // sorted, unique
  int64_t update_threads = 0;
  static GenieBufferSettings from(const config::ParamValues& v);
  int64_t largest_variant() const { return ar_variants.empty() ? 1 : ar_variants.back(); }
  // The buffers' shape for `model`: every layer and KV head on one NPU (no
  // tensor parallelism splits the heads on the HTP).
  GenieCacheShape shape(const ModelSpec& model, Bytes dtype_bytes) const;
};

// The checks of every Genie buffer (seed 002): each AR variant leaves a
// cache dim (ctx_size - n > 0), no fp8 rows, no latent cache; `keys` says
// where the policy's keys were written.
void check_genie_buffers(const GenieBufferSettings& b, const PolicySpec& keys,
                         const InstanceSpec& s, config::LoadContext& ctx);

// One of Genie's update modes: the buffers, the mechanism that prices its
// updates (sim/cache/*_policy.cpp) and the kernels' mode for numerics.
class GenieModeSpec : public PolicySpec, public DeviceBufferContract {
 public:
  using MakeMode = std::unique_ptr<GenieModePolicy> (*)(const GenieCacheShape&);
  GenieModeSpec(std::string name, const PolicyValues& v, kernels::GenieUpdateMode mode,
                MakeMode mode_factory);

  std::string_view name() const override { return name_; }
  const DeviceBufferContract* device_buffers() const override { return this; }
  void check(const InstanceSpec& s, EngineContract engine, config::LoadContext& ctx) const override;

  int64_t ctx_size() const override { return buffers_.ctx_size; }
  const std::vector<int64_t>& ar_variants() const override { return buffers_.ar_variants; }
  int64_t update_threads() const override { return buffers_.update_threads; }
  GenieCacheShape shape(const ModelSpec& model, Bytes dtype_bytes) const override;
  std::unique_ptr<GenieKvPolicy> make(const ModelSpec& model, Bytes dtype_bytes) const override;
  Bytes buffer_bytes(const ModelSpec& model, Bytes dtype_bytes) const override;
  std::string_view buffer_layout() const override { return name_; }
  std::optional<kernels::GenieUpdateMode> numerics_mode() const override { return mode_; }
  bool keeps_selected() const override { return true; }

  // The mode's own policy for a shape (sliding_window wraps it).
  std::unique_ptr<GenieModePolicy> make_mode(const GenieCacheShape& shape) const {
    return make_mode_(shape);
  }
  // Columns of every buffer row at this ctx_size (pointer_shift: its headroom too).
  virtual int64_t row_columns(int64_t ctx_size) const { return ctx_size; }
  const GenieBufferSettings& buffers() const { return buffers_; }

 protected:
  std::string name_;
  GenieBufferSettings buffers_;
  kernels::GenieUpdateMode mode_;
  MakeMode make_mode_;
};

}  // namespace kvsim
