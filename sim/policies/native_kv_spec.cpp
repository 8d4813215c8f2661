// native_kv (Genie's NativeKV cache manager, the mode newer Genie releases
// keep beside SMART_MASK) as a policy: Genie's buffers in the tiled layout
// the QNN compiler chooses (kernels/native_kv_layout.hpp), priced by
// sim/cache/native_kv_policy.cpp. Its tiles are the compiler's (qualla's
// K_TILE and V_TILE, native-kv.hpp), here as keys with those values.
#include <fmt/format.h>

#include "kernels/native_kv_layout.hpp"
#include "sim/policies/genie_buffer_spec.hpp"
#include "sim/policies/policy_registry.hpp"
#include "sim/spec/instance_spec.hpp"

namespace kvsim {
namespace {

class NativeKvSpec final : public GenieModeSpec {
 public:
  explicit NativeKvSpec(const PolicyValues& v)
      : GenieModeSpec("native_kv", v, kernels::GenieUpdateMode::native_kv, make_native_kv_policy),
        tiles_{v.values.integer("k_tile"), v.values.integer("v_tile")} {}

  GenieCacheShape shape(const ModelSpec& model, Bytes dtype_bytes) const override {
    GenieCacheShape s = GenieModeSpec::shape(model, dtype_bytes);
    s.k_tile = tiles_.k_tile;
    s.v_tile = tiles_.v_tile;
    return s;
  }

  // The buffer checks, a layout that takes this context and head dim, and
  // 8-bit KV (qualla: "Native KV only supports uint8", native-kv.cpp).
  void check(const InstanceSpec& s, EngineContract engine,
             config::LoadContext& ctx) const override {
    GenieModeSpec::check(s, engine, ctx);
    std::string bad;
    const std::string why =
        kernels::native_kv_layout_error(buffers_.ctx_size, s.model.head_dim, tiles_, &bad);
    if (!why.empty()) {
      const std::string key = key_path(bad);
      ctx.diagnostics.error(
          ctx.location_of(key), key, fmt::format("native_kv's tiled layout: {}", why),
          fmt::format("k_tile a multiple of 32 that divides ctx_size (or is at least it), v_tile "
                      "a multiple of 32 that divides head_dim {} (or is at least it), ctx_size a "
                      "multiple of 32",
                      s.model.head_dim));
    }
    if (s.model.head_dim % kernels::kHmxBlock != 0) {
      ctx.diagnostics.error(ctx.location_of("model"), "model",
                            fmt::format("{}'s head_dim {} is not a whole number of the HMX "
                                        "layout's 32-element blocks (qualla asserts it)",
                                        s.model.name, s.model.head_dim),
                            "a model with head_dim 32, 64, 128, ...");
    }
    if (s.kv.dtype_bytes() != 1) {
      ctx.diagnostics.error(ctx.location_of("kv_cache.dtype"), "kv_cache.dtype",
                            fmt::format("NativeKV holds 8-bit KV only (qualla native-kv.cpp "
                                        "completeInit), not {}",
                                        s.kv.dtype),
                            "int8");
    }
  }

 private:
  kernels::NativeKvTiles tiles_;
};

}  // namespace

PolicyEntry native_kv_policy_entry() {
  config::ComponentInfo info{
      "policy", "native_kv",
      "Genie NativeKV: the QNN compiler's tiled KV layout, written in place with a mask (qualla "
      "native-kv.cpp)",
      genie_buffer_params()};
  info.params.push_back(config::int_param(
      "k_tile", 256, 32, 1 << 22, "tokens",
      "context columns per key tile of the HMX layout (qualla K_TILE; a multiple of 32 dividing "
      "ctx_size)"));
  info.params.push_back(config::int_param(
      "v_tile", 64, 32, 1 << 22, "elements",
      "head-dim columns per value tile of the HMX layout (qualla V_TILE; a multiple of 32 "
      "dividing head_dim)"));
  return {info, "", [](const PolicyValues& v) -> std::shared_ptr<PolicySpec> {
            return std::make_shared<NativeKvSpec>(v);
          }};
}

}  // namespace kvsim
