// pointer_shift (seed 002, Genie POINTER_SHIFT) as a policy: Genie's buffers
// with rows longer than the cache dim by a headroom the pointer offset moves
// through, priced by sim/cache/pointer_shift_policy.cpp.
#include <fmt/format.h>

#include "sim/cache/genie_buffer_sizing.hpp"
#include "sim/policies/genie_buffer_spec.hpp"
#include "sim/policies/policy_registry.hpp"
#include "sim/spec/instance_spec.hpp"

namespace kvsim {
namespace {

class PointerShiftSpec final : public GenieModeSpec {
 public:
  explicit PointerShiftSpec(const PolicyValues& v)
      : GenieModeSpec("pointer_shift", v, kernels::GenieUpdateMode::pointer_shift,
                      make_pointer_shift_policy),
        headroom_(v.values.integer("pointer_shift_headroom")),
        register_cost_(v.values.integer("register_cost")),
        per_head_tensors_(v.values.boolean("per_head_tensors")) {}

  GenieCacheShape shape(const ModelSpec& model, Bytes dtype_bytes) const override {
    GenieCacheShape s = GenieModeSpec::shape(model, dtype_bytes);
    s.pointer_shift_headroom = headroom_;
    s.register_cost = register_cost_;
    s.per_head_tensors = per_head_tensors_;
    return s;
  }
  int64_t row_columns(int64_t ctx_size) const override {
    return pointer_shift_row_columns(ctx_size, headroom_);
  }
  // The buffer checks, and a headroom that takes one pass of the largest
  // variant past the view.
  void check(const InstanceSpec& s, EngineContract engine,
             config::LoadContext& ctx) const override {
    GenieModeSpec::check(s, engine, ctx);
    const int64_t largest = buffers_.largest_variant();
    if (headroom_ > 0 && headroom_ < largest) {
      const std::string key = key_path("pointer_shift_headroom");
      ctx.diagnostics.error(
          ctx.location_of(key), key,
          fmt::format("{} columns cannot take one AR-{} pass past the view", headroom_, largest),
          fmt::format("0 (= ctx_size) or at least the largest variant, {}", largest));
    }
  }

 private:
  int64_t headroom_;
  TimeNs register_cost_;
  bool per_head_tensors_;
};

}  // namespace

PolicyEntry pointer_shift_policy_entry() {
  config::ComponentInfo info{
      "policy", "pointer_shift",
      "Genie POINTER_SHIFT: move the tensor pointers instead of the data (seed 002)",
      genie_buffer_params()};
  info.params.push_back(config::int_param(
      "pointer_shift_headroom", 0, 0, 1 << 22, "tokens",
      "extra columns per buffer row past the cache dim before a compaction (0: ctx_size, a 2x "
      "row)"));
  // Assumption [A], reasoned in sim/cache/pointer_shift_policy.cpp.
  info.params.push_back(config::duration_param(
      "register_cost", 10 * kNsPerUs, 0, 100 * kNsPerMs,
      "host time of re-registering one KV input tensor at the new pointer offset (A: no published "
      "figure; one QNN memory registration on an already mapped buffer)"));
  // seed 002's past_key_{l}_h{h}_in: an export with a K and a V tensor per
  // head, each re-registered at the new offset (kv_heads times more).
  info.params.push_back(config::bool_param(
      "per_head_tensors", false,
      "the graph takes one K and one V tensor per layer and KV head (past_key_{l}_h{h}_in), "
      "each re-registered per update, instead of one per layer"));
  return {info, "", [](const PolicyValues& v) -> std::shared_ptr<PolicySpec> {
            return std::make_shared<PointerShiftSpec>(v);
          }};
}

}  // namespace kvsim
