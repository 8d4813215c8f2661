#include "devices/htp_timing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace kvsim {
namespace {

// HVX operations per attention score: scale, max, subtract, exp, sum and the
// normalising multiply, rounded to 5 (the softmax of QK^T runs on HVX between
// the two HMX matmuls).
constexpr double kSoftmaxOpsPerScore = 5.0;
// HVX operations per token and layer outside attention: two RMSNorms (~4 ops
// per element of hidden), RoPE on q and k (~2 per element), the residual
// adds (2 per element of hidden) and SiLU-gate (4 per element of the
// intermediate size). A rough count: it binds only for tiny models.
double elementwise_ops_per_token_layer(const ModelSpec& m) {
  return 10.0 * static_cast<double>(m.hidden_size) +
         4.0 * static_cast<double>(m.intermediate_size) +
         2.0 * static_cast<double>(m.q_dim() + m.kv_dim());
}

TimeNs seconds_to_ns(double seconds) {
  if (!(seconds > 0.0)) return 0;
  return static_cast<TimeNs>(std::ceil(seconds * static_cast<double>(kNsPerS)));
}

double safe_rate(int64_t rate, double efficiency) {
  return static_cast<double>(std::max<int64_t>(rate, 1)) * std::max(efficiency, 1e-9);
}

}  // namespace

HtpTimingModel::HtpTimingModel(const DeviceSpec& device, const ModelSpec& model,
                               Bytes kv_dtype_bytes)
    : device_(device), model_(model), kv_dtype_bytes_(kv_dtype_bytes) {
  if (device_.kind != "htp" || !device_.htp) {
    throw std::invalid_argument(fmt::format("HtpTimingModel: device '{}' is kind '{}', not htp",
                                            device_.name, device_.kind));
  }
  if (kv_dtype_bytes_ <= 0)
    throw std::invalid_argument("HtpTimingModel: kv dtype bytes must be > 0");
}

// One AR-n pass (seed 002: the graph always computes `variant` tokens, the
// padding of a short last prefill pass included), as a roofline:
//   n = variant, c = kv_cols_read, L layers, Hq/Hkv heads, d head_dim
//   HMX  gemm      2 * n * (linear params + vocab * hidden)           (lm_head over all n rows)
//        attention 4 * n * (c + n) * Hq * d * L                       (QK^T and PV)
//   HVX  softmax   5 * n * (c + n) * Hq * L, plus norms/RoPE/SiLU per token and layer
//   compute = HMX time + HVX time (a layer's ops depend on each other; the
//             graph runs them in sequence), each at nominal peak x efficiency
//   DDR  weights   streamed once per pass at weights_dtype (the untied input
//                  embedding is gathered: n rows only)
//        KV        c * 2 * L * Hkv * d * kv_bytes read + n columns written
//        acts      the residual stream in and out of each layer plus the logits
//                  (intermediates stay in VTCM)
//        x (1 + vtcm_spill_factor * (1 - granted / requested)) when the
//          session runs with less VTCM than it asked for [assumption A: the
//          tiles that no longer fit are re-fetched from DDR in proportion to
//          the VTCM taken away]
//   memory = each part / (LPDDR bandwidth x its class's memory efficiency)
//   latency = max(compute, memory) + step_overhead (fixed per graph execution)
HtpPassTiming HtpTimingModel::price_pass(const HtpPass& pass) const {
  if (pass.variant < 1) throw std::invalid_argument("HtpTimingModel: variant must be >= 1");
  if (pass.kv_cols_read < 0)
    throw std::invalid_argument("HtpTimingModel: kv_cols_read must be >= 0");
  const ModelSpec& m = model_;
  const double n = static_cast<double>(pass.variant);
  const double c = static_cast<double>(pass.kv_cols_read);
  const double layers = static_cast<double>(m.num_hidden_layers);
  const double hidden = static_cast<double>(m.hidden_size);
  const double vocab = static_cast<double>(m.vocab_size);
  const double emb_bytes = static_cast<double>(m.embedding_bytes_per_parameter());
  const double act_bytes = static_cast<double>(m.activation_bytes());

  // Compute.
  const double gemm_flops =
      2.0 * n * (static_cast<double>(m.linear_parameter_count()) + vocab * hidden);
  const double scores = n * (c + n) * static_cast<double>(m.num_attention_heads) * layers;
  const double attn_flops = 4.0 * scores * static_cast<double>(m.head_dim);
  const double hvx_ops =
      kSoftmaxOpsPerScore * scores + n * layers * elementwise_ops_per_token_layer(m);
  const bool quantised_weights = m.weights_dtype == "w4a16" || m.weights_dtype == "w8a8";
  const int64_t gemm_peak = quantised_weights ? device_.matrix_int8_ops : device_.matrix_fp16_ops;
  const int64_t attn_peak =
      kv_dtype_bytes_ == 1 ? device_.matrix_int8_ops : device_.matrix_fp16_ops;
  const auto eff_c = [&](OpClass k) { return device_.compute_efficiency[static_cast<size_t>(k)]; };
  const auto eff_m = [&](OpClass k) { return device_.memory_efficiency[static_cast<size_t>(k)]; };
  const double compute_s =
      gemm_flops / safe_rate(gemm_peak, eff_c(OpClass::gemm)) +
      attn_flops / safe_rate(attn_peak, eff_c(OpClass::attention)) +
      hvx_ops / safe_rate(device_.vector_fp16_ops, eff_c(OpClass::elementwise));

  // DDR traffic.
  double weight_bytes = static_cast<double>(m.weight_bytes());
  if (!m.tie_word_embeddings) weight_bytes -= vocab * hidden * emb_bytes;  // gathered, not streamed
  weight_bytes += n * hidden * emb_bytes;
  const double per_col = 2.0 * layers * static_cast<double>(m.num_key_value_heads) *
                         static_cast<double>(m.head_dim) * static_cast<double>(kv_dtype_bytes_);
  const double kv_read = c * per_col;
  const double kv_bytes = kv_read + n * per_col;
  const double act_traffic = 2.0 * layers * n * hidden * act_bytes + n * vocab * act_bytes;
  double spill = 1.0;
  if (pass.vtcm_requested > 0 && pass.vtcm_granted < pass.vtcm_requested) {
    const double granted = static_cast<double>(std::max<Bytes>(pass.vtcm_granted, 0));
    spill +=
        device_.htp->vtcm_spill_factor * (1.0 - granted / static_cast<double>(pass.vtcm_requested));
  }
  const double bw = static_cast<double>(std::max<int64_t>(device_.memory_bandwidth, 1));
  const double memory_s = spill * (weight_bytes / (bw * eff_m(OpClass::gemm)) +
                                   kv_bytes / (bw * eff_m(OpClass::attention)) +
                                   act_traffic / (bw * eff_m(OpClass::elementwise)));

  HtpPassTiming t;
  t.flops = gemm_flops + attn_flops;
  t.kv_bytes_read = kv_read;
  t.ddr_bytes = spill * (weight_bytes + kv_bytes + act_traffic);
  t.compute = seconds_to_ns(compute_s);
  t.memory = seconds_to_ns(memory_s);
  t.latency = std::max(t.compute, t.memory) + device_.step_overhead;
  return t;
}

// Seed 002's runKVUpdateJob splits the KV tensors over the update threads;
// each thread copies at the CPU memcpy bandwidth, and together they cannot
// exceed the LPDDR bandwidth they share.
TimeNs HtpTimingModel::cpu_copy_time(Bytes bytes, int64_t threads) const {
  if (bytes <= 0) return 0;
  const int64_t used =
      std::clamp<int64_t>(threads, 1, std::max<int64_t>(1, device_.htp->max_update_threads));
  const double rate =
      std::min(static_cast<double>(used) * static_cast<double>(device_.htp->cpu_memcpy_bandwidth),
               static_cast<double>(device_.memory_bandwidth));
  return seconds_to_ns(static_cast<double>(bytes) / std::max(rate, 1.0));
}

TimeNs HtpTimingModel::variant_switch_time() const {
  return device_.htp->graph_switch;
}

TimeNs HtpTimingModel::storage_time(Bytes bytes) const {
  if (bytes <= 0) return 0;
  return seconds_to_ns(static_cast<double>(bytes) /
                       static_cast<double>(std::max<int64_t>(device_.htp->storage_bandwidth, 1)));
}

}  // namespace kvsim
