#include "devices/htp_timing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "base/checked_math.hpp"
#include "devices/device_family.hpp"
#include "models/step_ops.hpp"

namespace kvsim {
namespace {

TimeNs seconds_to_ns(double seconds) {
  if (!(seconds > 0.0)) return 0;
  const double ns = std::ceil(seconds * static_cast<double>(kNsPerS));
  if (!(ns < static_cast<double>(kMaxSimulatedTimeNs)))
    throw_duration_overflow("an HTP pass part", ns, static_cast<double>(kMaxSimulatedTimeNs));
  return static_cast<TimeNs>(ns);
}

double safe_rate(int64_t rate, double efficiency) {
  return static_cast<double>(std::max<int64_t>(rate, 1)) * std::max(efficiency, 1e-9);
}

}  // namespace

HtpTimingModel::HtpTimingModel(const DeviceSpec& device, const ModelSpec& model,
                               Bytes kv_dtype_bytes, GraphLogits logits)
    : device_(device), model_(model), kv_dtype_bytes_(kv_dtype_bytes), logits_(logits) {
  if (!device_.htp) {
    throw std::invalid_argument(fmt::format(
        "HtpTimingModel: device '{}' is kind '{}', which has no htp: section (kind: htp)",
        device_.name, device_.kind));
  }
  if (kv_dtype_bytes_ <= 0)
    throw std::invalid_argument("HtpTimingModel: kv dtype bytes must be > 0");
}

// One AR-n pass (seed 002: the graph always computes `variant` tokens, the
// padding of a short last prefill pass included), priced from the op graph
// of models/step_ops.hpp as one fixed-shape step of `variant` tokens over
// `kv_cols_read` columns (attention over the whole block under its mask,
// logits for every row, or for the last one when the graph was exported
// that way: GraphLogits), through the htp family's engines and rates:
//   compute = the ops' flops, each at its engine's peak (HMX for matrix ops,
//             HVX for vector ops, devices/family_htp.cpp) x its class's
//             compute efficiency, plus the attention softmax (vector_flops)
//             on HVX at the elementwise efficiency; summed, because a
//             layer's ops depend on each other and the graph runs them in
//             sequence
//   DDR     = what a fused graph cannot keep in VTCM: the weights (streamed
//             once per pass; an untied input embedding is gathered, n rows),
//             the KV of earlier steps read and the n new columns written,
//             and the residual stream in and out of each layer plus the
//             logits (intermediates stay in VTCM), each over LPDDR bandwidth
//             x its class's memory efficiency (gemm, attention, elementwise)
//             x (1 + vtcm_spill_factor * (1 - granted / requested)) when the
//               session runs with less VTCM than it asked for [assumption A:
//               the tiles that no longer fit are re-fetched from DDR in
//               proportion to the VTCM taken away]
//   VTCM    = the share of the past KV resident in VTCM (HtpPass::kv_vtcm_share)
//             at htp.vtcm_bandwidth, taken out of the DDR part and added to it
//   latency = max(compute, DDR) + step_overhead (fixed per graph execution)
// With gemm_on_vector the GEMMs run on HVX instead (llama.cpp's Hexagon
// backend: ggml-org/llama.cpp ggml/src/ggml-hexagon/htp/matmul-ops.c at
// 18763297, vec_dot_q4x4x2_q8x4x2: the activations are quantised to int8
// in VTCM and multiplied with the unpacked int4/int8 weights by HVX vrmpy,
// 4 byte products per 32-bit lane, 128 MACs per 1024-bit vector where the
// fp16 path has 64 lanes: twice vector_fp16 [derived]; F16 weights take the
// fp16 lanes, vector_fp16 itself), at the HVX kernels' efficiency
// (efficiency.elementwise.compute, the device's HVX efficiency), with no
// HMX pass-shape factor.
HtpPassTiming HtpTimingModel::price_pass(const HtpPass& pass) const {
  if (pass.variant < 1) throw std::invalid_argument("HtpTimingModel: variant must be >= 1");
  if (pass.kv_cols_read < 0)
    throw std::invalid_argument("HtpTimingModel: kv_cols_read must be >= 0");
  StepWork work;
  work.fixed_shape = true;
  work.sampled_logits_only = logits_ == GraphLogits::last_row;
  work.seqs.push_back(SeqWork{pass.variant, pass.kv_cols_read, /*samples=*/true});
  const StepOpCosts costs = step_op_costs(model_, work, StepShapeParams{1, kv_dtype_bytes_});

  const DeviceFamily& family = device_family_of(device_);
  const auto eff_c = [&](OpClass k) { return device_.compute_efficiency[static_cast<size_t>(k)]; };
  const auto eff_m = [&](OpClass k) { return device_.memory_efficiency[static_cast<size_t>(k)]; };
  const double layers = static_cast<double>(model_.num_hidden_layers);
  const double matrix_factor = device_.matrix_shape_factor(pass.variant);
  double compute_s = 0, matrix_flops = 0;
  double weight_bytes = 0, kv_read = 0, kv_write = 0, residual = 0;
  for (size_t k = 0; k < kOpKindCount; ++k) {
    const OpCost& c = costs[k];
    if (!c.present) continue;
    const auto kind = static_cast<OpKind>(k);
    const double copies = op_is_per_layer(kind) ? layers : 1.0;
    if (c.flops > 0 && pass.gemm_on_vector && family.engine_of(kind) == Engine::matrix &&
        family.class_of(kind) == OpClass::gemm) {
      const bool int8_dot = model_.weights_dtype == "w4a16" || model_.weights_dtype == "w8a8" ||
                            model_.weights_dtype == "w8a16";
      const double rate = static_cast<double>(device_.vector_fp16_ops) * (int8_dot ? 2.0 : 1.0);
      compute_s +=
          copies * c.flops / (std::max(rate, 1.0) * std::max(eff_c(OpClass::elementwise), 1e-9));
    } else if (c.flops > 0) {
      const int64_t peak = family.compute_peak(kind, device_, model_, kv_dtype_bytes_);
      const bool on_matrix = family.engine_of(kind) == Engine::matrix;
      // The HMX's efficiency depends on the AR-n graph's n (the pass shape).
      const double eff = on_matrix ? std::min(1.0, eff_c(family.class_of(kind)) * matrix_factor)
                                   : eff_c(family.class_of(kind));
      compute_s += copies * c.flops / safe_rate(peak, eff);
      if (on_matrix) matrix_flops += copies * c.flops;
    }
    if (c.vector_flops > 0) {
      compute_s +=
          copies * c.vector_flops / safe_rate(device_.vector_fp16_ops, eff_c(OpClass::elementwise));
    }
    weight_bytes += copies * c.weight_bytes;
    kv_read += copies * c.kv_read_bytes;
    kv_write += copies * c.kv_write_bytes;
    residual += copies * c.residual_bytes;
  }

  double spill = 1.0;
  if (pass.vtcm_requested > 0 && pass.vtcm_granted < pass.vtcm_requested) {
    const double granted = static_cast<double>(std::max<Bytes>(pass.vtcm_granted, 0));
    spill +=
        device_.htp->vtcm_spill_factor * (1.0 - granted / static_cast<double>(pass.vtcm_requested));
  }
  const double bw = static_cast<double>(std::max<int64_t>(device_.memory_bandwidth, 1));
  // KV resident in VTCM (sim/cache/kv_vtcm/): that share of the past KV is
  // read from VTCM at htp.vtcm_bandwidth, added to the DDR time (a layer's
  // attention reads its KV after the weights' DMA brought its tiles in, so
  // the two do not overlap [assumption A]); the new columns still go to the
  // output buffer in DDR.
  const double share = std::clamp(pass.kv_vtcm_share, 0.0, 1.0);
  const double kv_vtcm = kv_read * share;
  double vtcm_s = 0;
  if (kv_vtcm > 0) {
    if (device_.htp->vtcm_bandwidth <= 0)
      throw std::invalid_argument(fmt::format(
          "HtpTimingModel: device '{}' gives no htp.vtcm_bandwidth to read KV from VTCM",
          device_.name));
    vtcm_s = kv_vtcm / static_cast<double>(device_.htp->vtcm_bandwidth);
  }
  const double kv_bytes = kv_read - kv_vtcm + kv_write;
  const double memory_s = spill * (weight_bytes / (bw * eff_m(OpClass::gemm)) +
                                   kv_bytes / (bw * eff_m(OpClass::attention)) +
                                   residual / (bw * eff_m(OpClass::elementwise))) +
                          vtcm_s;

  HtpPassTiming t;
  t.flops = matrix_flops;
  t.kv_bytes_read = kv_read;
  t.kv_vtcm_bytes = kv_vtcm;
  t.kv_vtcm = seconds_to_ns(vtcm_s);
  t.ddr_bytes = spill * (weight_bytes + kv_bytes + residual);
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

TimeNs htp_storage_time(const HtpSpec& htp, Bytes bytes) {
  if (bytes <= 0) return 0;
  return seconds_to_ns(static_cast<double>(bytes) /
                       static_cast<double>(std::max<int64_t>(htp.storage_bandwidth, 1)));
}

TimeNs HtpTimingModel::storage_time(Bytes bytes) const {
  return htp_storage_time(*device_.htp, bytes);
}

}  // namespace kvsim
