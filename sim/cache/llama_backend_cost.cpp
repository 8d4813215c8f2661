#include "sim/cache/llama_backend_cost.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "base/checked_math.hpp"
#include "sim/cache/llama_cells_metrics.hpp"
#include "sim/core/metrics.hpp"

namespace kvsim {
namespace {

// ggml's activations between backends are F32 rows of hidden_size.
constexpr Bytes kActivationBytes = 4;

// Sums and products of quantities derived from the input; past int64 the
// input is at fault (exit 2), as every priced duration.
int64_t add(int64_t a, int64_t b, const char* what) {
  const auto r = checked_add(a, b);
  if (!r) throw UnrepresentableQuantity(fmt::format("{} does not fit int64", what));
  return *r;
}
int64_t mul(int64_t a, int64_t b, const char* what) {
  const auto r = checked_mul(a, b);
  if (!r) throw UnrepresentableQuantity(fmt::format("{} does not fit int64", what));
  return *r;
}

TimeNs link_time(Bytes bytes, int64_t bandwidth) {
  if (bytes <= 0 || bandwidth <= 0) return 0;
  const double ns = std::ceil(static_cast<double>(bytes) / static_cast<double>(bandwidth) * 1e9);
  if (!(ns < static_cast<double>(kMaxSimulatedTimeNs)))
    throw_duration_overflow("llama_cells host link bytes", ns,
                            static_cast<double>(kMaxSimulatedTimeNs));
  return static_cast<TimeNs>(ns);
}

}  // namespace

LlamaBackendCost::LlamaBackendCost(const DeviceSpec& device, const ModelSpec& model,
                                   Bytes kv_dtype_bytes, LlamaOpMap map, int64_t host_layers)
    : device_(device),
      model_(model),
      kv_dtype_bytes_(kv_dtype_bytes),
      map_(std::move(map)),
      host_layers_(host_layers),
      layers_(model.num_hidden_layers) {
  if (layers_ <= 0) throw std::invalid_argument("llama_cells: the model has no layers");
  if (host_layers_ < 0 || host_layers_ > layers_)
    throw std::invalid_argument(
        fmt::format("llama_cells: {} host layers of {}", host_layers_, layers_));
  if (!device_.host)
    throw std::invalid_argument(fmt::format(
        "llama_cells: device '{}' names no host CPU (`host`), which would run {}", device_.name,
        host_layers_ > 0 ? "the layers n_gpu_layers leaves on the host"
                         : "the ops its backend does not take"));
  const TimingModel::Params p{1, kv_dtype_bytes_};
  host_timing_.emplace(*device_.host, model_, p);
  if (!device_.htp) device_timing_.emplace(device_, model_, p);
}

std::unique_ptr<LlamaBackendCost> LlamaBackendCost::make(const DeviceSpec& device,
                                                         const ModelSpec& model,
                                                         Bytes kv_dtype_bytes,
                                                         const LlamaCellsShape& llama) {
  const auto backend = resolve_llama_backend(llama.backend, device);
  if (!backend || *backend == LlamaBackend::cpu) return nullptr;  // the CPU is the device
  LlamaOpMap map = llama_op_map(*backend, device, model, llama);
  const int64_t L = model.num_hidden_layers;
  const int64_t on_device = llama.n_gpu_layers < 0 ? L : std::min(llama.n_gpu_layers, L);
  if (!map.any() && !map.gemm_on_vector && on_device == L) return nullptr;
  return std::make_unique<LlamaBackendCost>(device, model, kv_dtype_bytes, std::move(map),
                                            L - on_device);
}

TimeNs LlamaBackendCost::scaled(TimeNs all_layers, int64_t layers) const {
  return mul(all_layers, layers, "a llama_cells layer share") / layers_;
}

LlamaHostShare LlamaBackendCost::share(
    const StepWork& work, const std::array<TimeNs, kOpKindCount>& device_op_time) const {
  LlamaHostShare s;
  const StepTiming host = host_timing_->price(work);
  const int64_t device_layers = layers_ - host_layers_;
  for (size_t k = 0; k < kOpKindCount; ++k) {
    const auto kind = static_cast<OpKind>(k);
    const bool moved = map_.on_host[k];
    if (op_is_per_layer(kind)) {
      const int64_t n = host_layers_ + (moved ? device_layers : 0);
      s.host = add(s.host, scaled(host.op_time[k], n), "llama_cells host time");
      s.device_saved += scaled(device_op_time[k], n);
    } else if (moved) {
      s.host = add(s.host, host.op_time[k], "llama_cells host time");
      s.device_saved += device_op_time[k];
    }
  }
  if (device_.host_link_bandwidth > 0) {
    const StepOpCosts costs = step_op_costs(model_, work, StepShapeParams{1, kv_dtype_bytes_});
    Bytes t = work.totals_given ? static_cast<Bytes>(work.totals.tokens) : 0;
    if (!work.totals_given)
      for (const SeqWork& q : work.seqs) t += q.query_tokens;
    const Bytes row = mul(model_.hidden_size, kActivationBytes, "an activation row");
    const Bytes act = mul(t, row, "activations at a backend boundary");
    Bytes bytes = 0;
    if (host_layers_ > 0 && device_layers > 0) bytes += act;  // the split point
    for (size_t k = 0; k < kOpKindCount; ++k) {
      if (!map_.on_host[k]) continue;
      const auto kind = static_cast<OpKind>(k);
      const OpCost& c = costs[k];
      // In and out of the CPU, and the cache rows it reads or writes.
      const auto kv = static_cast<Bytes>(c.kv_read_bytes + c.kv_write_bytes);
      const Bytes per = add(2 * act, kv, "a moved op's bytes");
      bytes = add(bytes, op_is_per_layer(kind) ? mul(per, device_layers, "moved bytes") : act,
                  "moved bytes");
    }
    s.link_bytes = bytes;
    s.link = link_time(bytes, device_.host_link_bandwidth);
  }
  return s;
}

TimeNs LlamaBackendCost::serve_step(const StepWork& work, TimeNs device_latency) {
  const StepTiming dev = device_timing_->price(work);
  const LlamaHostShare s = share(work, dev.op_time);
  const TimeNs kept = std::max(device_latency - s.device_saved, device_.step_overhead);
  ++steps_;
  host_ns_ += s.host;
  link_ns_ += s.link;
  link_bytes_ += s.link_bytes;
  return add(add(kept, s.host, "a llama_cells step"), s.link, "a llama_cells step");
}

HtpPassTiming LlamaBackendCost::htp_pass(const HtpTimingModel& htp, const HtpPass& given,
                                         HtpPassTiming t) {
  // The backend's GEMMs on HVX: the pass re-priced so (HtpPass::gemm_on_vector).
  HtpPass pass = given;
  if (map_.gemm_on_vector && !pass.gemm_on_vector) {
    pass.gemm_on_vector = true;
    t = htp.price_pass(pass);
  }
  StepWork work;
  work.seqs.push_back(SeqWork{pass.useful_tokens,
                              std::max<int64_t>(0, pass.kv_cols_read - pass.useful_tokens), true});
  const LlamaHostShare s = share(work, {});
  // The NPU's part of the pass: its per-layer time for its own layers; an
  // attention the backend moved reads no context KV on the NPU (the pass
  // priced without it tells how much that was).
  const TimeNs overhead = device_.step_overhead;
  TimeNs per_layer = std::max<TimeNs>(t.latency - overhead, 0);
  if (map_.on_host[static_cast<size_t>(OpKind::attention)]) {
    HtpPass bare = pass;
    bare.kv_cols_read = 0;
    per_layer -= std::max<TimeNs>(t.latency - htp.price_pass(bare).latency, 0);
  }
  const TimeNs device = scaled(std::max<TimeNs>(per_layer, 0), layers_ - host_layers_) + overhead;
  ++steps_;
  host_ns_ += s.host;
  link_ns_ += s.link;
  link_bytes_ += s.link_bytes;
  const TimeNs added = s.host + s.link;
  t.latency = add(device, added, "a llama_cells pass");
  t.compute += s.host;
  return t;
}

void LlamaBackendCost::report(RunMetrics& m) const {
  LlamaCellsMetrics& o = m.part<LlamaCellsMetrics>();
  o.backend = std::string(llama_backend_name(map_.backend));
  o.host_device = device_.host ? device_.host->name : "";
  o.ops_on_host = map_.why;
  o.host_layers = host_layers_;
  o.host_ns = host_ns_;
  o.host_link_ns = link_ns_;
  o.host_link_bytes = link_bytes_;
}

}  // namespace kvsim
