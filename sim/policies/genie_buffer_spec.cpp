#include "sim/policies/genie_buffer_spec.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "sim/cache/genie_buffer_sizing.hpp"
#include "sim/spec/instance_spec.hpp"

namespace kvsim {

std::vector<config::ParamSpec> genie_buffer_params() {
  using namespace config;
  return {
      int_param("ctx_size", 4096, 1, 1 << 22, "tokens",
                "columns of every Genie KV buffer: the context the graphs are built for"),
      int_list_param("ar_variants", std::vector<int64_t>{1, 32, 128}, 1, 1 << 22, "tokens",
                     "AR-n graphs the model ships (a pass of n tokens, cache dim ctx_size - n)"),
      int_param("update_threads", 4, 1, 64, "threads", "CPU threads that split each KV update"),
  };
}

GenieBufferSettings GenieBufferSettings::from(const config::ParamValues& v) {
  GenieBufferSettings b;
  b.ctx_size = v.integer("ctx_size");
  b.ar_variants = v.int_list("ar_variants");
  std::sort(b.ar_variants.begin(), b.ar_variants.end());
  b.update_threads = v.integer("update_threads");
  return b;
}

void check_genie_buffers(const GenieBufferSettings& b, const PolicySpec& keys,
                         const InstanceSpec& s, config::LoadContext& ctx) {
  // Genie's KV tensors hold K and V per head in fp16 or int8 with one
  // quantisation per tensor (seed 002): neither fp8 rows nor a latent cache.
  if (s.kv.fp8()) {
    ctx.diagnostics.error(ctx.location_of("kv_cache.dtype"), "kv_cache.dtype",
                          fmt::format("Genie's KV buffers do not store {}", s.kv.dtype),
                          "fp16, bf16, int8 or fp32");
  }
  if (s.model.mla.enabled()) {
    ctx.diagnostics.error(ctx.location_of("model"), "model",
                          fmt::format("{} caches a latent (multi-head latent attention); Genie's "
                                      "buffers hold K and V per head",
                                      s.model.name),
                          "a model with per-head K and V on an HTP");
  }
  const std::string variants_key = keys.key_path("ar_variants");
  for (int64_t v : b.ar_variants) {
    // v == ctx_size is seed 002's BERT variant: the whole context in one
    // pass that takes no past (its output cache dim is ctx_size).
    if (v > b.ctx_size) {
      ctx.diagnostics.error(
          ctx.location_of(variants_key), variants_key,
          fmt::format("AR-{} is above ctx_size {}: its cache dim ctx_size - {} is negative", v,
                      b.ctx_size, v),
          fmt::format("variants up to ctx_size {} (ctx_size itself: the BERT variant, no past)",
                      b.ctx_size));
    }
  }
}

GenieModeSpec::GenieModeSpec(std::string name, const PolicyValues& v, kernels::GenieUpdateMode mode,
                             MakeMode mode_factory)
    : name_(std::move(name)),
      buffers_(GenieBufferSettings::from(v.values)),
      mode_(mode),
      make_mode_(mode_factory) {
  set_read(v.values, v.paths);
}

void GenieModeSpec::check(const InstanceSpec& s, EngineContract engine,
                          config::LoadContext& ctx) const {
  (void)engine;  // a Genie mode runs only through its buffers
  check_genie_buffers(buffers_, *this, s, ctx);
}

GenieCacheShape GenieBufferSettings::shape(const ModelSpec& model, Bytes dtype_bytes) const {
  GenieCacheShape s;
  s.layers = model.num_hidden_layers;
  s.kv_heads = model.num_key_value_heads;
  s.head_dim = model.head_dim;
  s.dtype_bytes = dtype_bytes;
  s.ctx_size = ctx_size;
  s.ar_variants = ar_variants;
  return s;
}

GenieCacheShape GenieModeSpec::shape(const ModelSpec& model, Bytes dtype_bytes) const {
  return buffers_.shape(model, dtype_bytes);
}

std::unique_ptr<GenieKvPolicy> GenieModeSpec::make(const ModelSpec& model,
                                                   Bytes dtype_bytes) const {
  return make_mode_(shape(model, dtype_bytes));
}

Bytes GenieModeSpec::buffer_bytes(const ModelSpec& model, Bytes dtype_bytes) const {
  return genie_buffer_bytes(model, row_columns(buffers_.ctx_size), buffers_.ctx_size,
                            buffers_.ar_variants, dtype_bytes)
      .total();
}

}  // namespace kvsim
