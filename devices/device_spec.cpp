#include "devices/device_spec.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace kvsim {
namespace {

constexpr std::array<std::string_view, kEngineCount> kEngineNames{"matrix", "vector", "dma",
                                                                  "device_link", "host_link"};
constexpr std::array<std::string_view, kOpClassCount> kOpClassNames{
    "gemm", "attention", "elementwise", "transfer", "collective"};

// Plausibility bounds. They catch a missing or wrong unit ("64" read as
// 64 bytes of HBM, "1.6GB/s" for "1.6TB/s" still passes, but "1.6B/s" does
// not), not unusual hardware: every bound is orders of magnitude away from any
// NPU the simulator targets.
constexpr Bytes kMinMemory = Bytes{1} << 20;                // 1 MiB
constexpr Bytes kMaxMemory = Bytes{1} << 50;                // 1 PiB
constexpr int64_t kMinBandwidth = 1'000'000;                // 1 MB/s
constexpr int64_t kMaxBandwidth = 1'000'000'000'000'000;    // 1 PB/s
constexpr int64_t kMinOpsRate = 1'000'000'000;              // 1 GOPS
constexpr int64_t kMaxOpsRate = 1'000'000'000'000'000'000;  // 1 EOPS
constexpr TimeNs kMaxLaunch = kNsPerS;
constexpr TimeNs kMaxStepOverhead = 10 * kNsPerS;
constexpr int64_t kMaxTensorParallel = 1024;

// Reads the `{value, source}` numbers of one map and files each source in
// DeviceSpec::sources under its key path relative to the device root.
class SourcedReader {
 public:
  SourcedReader(config::MapReader& reader, DeviceSpec& spec, std::string prefix)
      : reader_(reader), spec_(spec), prefix_(std::move(prefix)) {}

  // The value node (undefined when missing or bare; the error is recorded).
  config::Node value(std::string_view key) {
    std::string source;
    config::Node v = reader_.sourced(key, &source);
    const std::string path = prefix_ + std::string(key);
    if (v.defined()) {
      if (source.find_first_not_of(" \t") == std::string::npos) {
        v.error("the source note is empty",
                "a note that says where the number comes from, e.g. \"V: datasheet ...\"");
      } else {
        spec_.sources[path] = source;
      }
    }
    return v;
  }

  Bytes bytes(std::string_view key, Bytes min, Bytes max) {
    config::Node v = value(key);
    return v.defined() ? v.as_bytes(min, max).value_or(0) : 0;
  }
  int64_t bandwidth(std::string_view key) {
    config::Node v = value(key);
    return v.defined() ? v.as_bandwidth(kMinBandwidth, kMaxBandwidth).value_or(0) : 0;
  }
  int64_t ops_rate(std::string_view key) {
    config::Node v = value(key);
    return v.defined() ? v.as_ops_rate(kMinOpsRate, kMaxOpsRate).value_or(0) : 0;
  }
  TimeNs duration(std::string_view key, TimeNs max) {
    config::Node v = value(key);
    return v.defined() ? v.as_duration(0, max).value_or(0) : 0;
  }
  int64_t integer(std::string_view key, int64_t min, int64_t max) {
    config::Node v = value(key);
    return v.defined() ? v.as_int(min, max).value_or(min) : min;
  }
  // A fraction of peak: in (0, 1]. Zero would make an op take forever.
  double efficiency(std::string_view key) {
    config::Node v = value(key);
    if (!v.defined()) return 1.0;
    const std::optional<double> x = v.as_double(0.0, 1.0);
    if (!x) return 1.0;
    if (*x <= 0.0) {
      v.error("an efficiency of 0 would make the op never finish", "a fraction in (0, 1]");
      return 1.0;
    }
    return *x;
  }

 private:
  config::MapReader& reader_;
  DeviceSpec& spec_;
  std::string prefix_;
};

// efficiency: {gemm: {compute: {value, source}, memory: {value, source}}, ...}
void read_efficiencies(config::MapReader& root, DeviceSpec& spec) {
  config::Node eff_node = root.child("efficiency");
  if (!eff_node.defined()) {
    // Reported once at the device map rather than once per missing class.
    if (root.valid()) {
      root.node().context().diagnostics.error(
          root.node().location(), eff_node.path(), "is required but missing",
          "efficiency: {gemm: {compute: {value: 0.7, source: ...}, memory: {...}}, attention, "
          "elementwise, transfer, collective}");
    }
    return;
  }
  config::MapReader eff(eff_node);
  for (size_t c = 0; c < kOpClassCount; ++c) {
    const std::string class_name(kOpClassNames[c]);
    config::MapReader per_class(eff.child(class_name));
    if (!per_class.node().defined() && eff.valid()) {
      eff_node.context().diagnostics.error(eff_node.location(), per_class.node().path(),
                                           "is required but missing",
                                           "{compute: {value, source}, memory: {value, source}}");
      continue;
    }
    SourcedReader numbers(per_class, spec, "efficiency." + class_name + ".");
    spec.compute_efficiency[c] = numbers.efficiency("compute");
    spec.memory_efficiency[c] = numbers.efficiency("memory");
    per_class.finish();
  }
  eff.finish();
}

// The numbers every device kind has: memory and its bandwidth, matrix and
// vector rates, launch and per-step overheads (diagnostics are sorted by
// location, so the order they are read in does not show).
void read_common_numbers(SourcedReader& n, DeviceSpec& spec) {
  spec.memory_bytes = n.bytes("memory", kMinMemory, kMaxMemory);
  spec.memory_bandwidth = n.bandwidth("memory_bandwidth");
  spec.matrix_fp16_ops = n.ops_rate("matrix_fp16");
  spec.matrix_int8_ops = n.ops_rate("matrix_int8");
  spec.vector_fp16_ops = n.ops_rate("vector_fp16");
  spec.kernel_launch = n.duration("kernel_launch", kMaxLaunch);
  spec.step_overhead = n.duration("step_overhead", kMaxStepOverhead);
}

// kind: htp (SPEC 7, seed 002, shared/data README "Snapdragon"): the common
// numbers a phone has (LPDDR size and bandwidth, HMX as matrix_*, HVX as
// vector_fp16, per-graph-execution overhead, efficiencies), then an `htp:` map
// of what only an HTP has. Links, host PCIe and tensor parallelism do not
// exist on a phone and are not accepted (max_tensor_parallel is 1).
void read_htp_device(config::MapReader& r, DeviceSpec& spec) {
  SourcedReader n(r, spec, "");
  read_common_numbers(n, spec);
  spec.max_tensor_parallel = 1;
  read_efficiencies(r, spec);

  config::Node htp_node = r.child("htp");
  HtpSpec htp;
  if (!htp_node.defined()) {
    if (r.valid()) {
      r.node().context().diagnostics.error(
          r.node().location(), htp_node.path(), "is required but missing for kind: htp",
          "htp: {hexagon_version, vtcm, address_space, cpu_memcpy_bandwidth, max_update_threads, "
          "graph_switch, storage_bandwidth, vtcm_spill_factor}, each {value, source}");
    }
    spec.htp = htp;
    return;
  }
  config::MapReader hr(htp_node);
  SourcedReader h(hr, spec, "htp.");
  config::Node version = h.value("hexagon_version");
  if (version.defined()) {
    if (auto v = version.as_choice({"68", "69", "73", "75", "79", "81"}))
      htp.hexagon_version = std::stoll(*v);
  }
  htp.vtcm_bytes = h.bytes("vtcm", Bytes{64} << 10, Bytes{1} << 30);
  // VTCM windows exist from v79 (HAP_compute_res "VTCM window feature"); the
  // key may turn them off on v79+ but cannot invent them on older parts.
  htp.vtcm_windows = htp.hexagon_version >= 79;
  if (hr.has("vtcm_windows")) {
    config::Node w = h.value("vtcm_windows");
    if (w.defined()) {
      if (auto b = w.as_bool()) {
        if (*b && htp.hexagon_version < 79) {
          w.error(fmt::format("VTCM windows need Hexagon v79 or later (this is v{})",
                              htp.hexagon_version),
                  "false, or leave the key out");
        } else {
          htp.vtcm_windows = *b;
        }
      }
    }
  }
  if (hr.has("vtcm_window_granule") || htp.vtcm_windows) {
    htp.vtcm_window_granule =
        h.bytes("vtcm_window_granule", 1, htp.vtcm_bytes > 0 ? htp.vtcm_bytes : 1);
  }
  htp.address_space_bytes = h.bytes("address_space", kMinMemory, Bytes{1} << 40);
  htp.cpu_memcpy_bandwidth = h.bandwidth("cpu_memcpy_bandwidth");
  htp.max_update_threads = h.integer("max_update_threads", 1, 64);
  htp.graph_switch = h.duration("graph_switch", kMaxLaunch);
  htp.storage_bandwidth = h.bandwidth("storage_bandwidth");
  config::Node spill = h.value("vtcm_spill_factor");
  if (spill.defined()) htp.vtcm_spill_factor = spill.as_double(0.0, 100.0).value_or(0.0);
  hr.finish();
  spec.htp = htp;
}

}  // namespace

std::string_view engine_name(Engine e) {
  const auto i = static_cast<size_t>(e);
  return i < kEngineCount ? kEngineNames[i] : std::string_view("unknown");
}

std::string_view op_class_name(OpClass c) {
  const auto i = static_cast<size_t>(c);
  return i < kOpClassCount ? kOpClassNames[i] : std::string_view("unknown");
}

std::string_view source_label(std::string_view source) {
  const size_t start = source.find_first_not_of(" \t");
  if (start == std::string_view::npos) return {};
  source.remove_prefix(start);
  for (std::string_view label : {"3P", "V", "D", "M", "A"}) {
    if (source.size() > label.size() && source.substr(0, label.size()) == label &&
        source[label.size()] == ':') {
      return label;
    }
  }
  return {};
}

DeviceSpec parse_device(const config::Node& node) {
  DeviceSpec spec;
  config::MapReader r(node);
  spec.name = r.string("name", std::nullopt);
  spec.kind = r.choice("kind", std::nullopt, {"ascend", "htp"});
  spec.description = r.string("description", std::string());
  spec.notes = r.string("notes", std::string());
  if (spec.kind == "htp") {
    read_htp_device(r, spec);  // Snapdragon phones: devices/htp_spec.hpp
    r.finish();
    return spec;
  }

  SourcedReader n(r, spec, "");
  read_common_numbers(n, spec);
  spec.device_link_bandwidth = n.bandwidth("device_link_bandwidth");
  spec.device_link_latency = n.duration("device_link_latency", kMaxLaunch);
  spec.host_link_bandwidth = n.bandwidth("host_link_bandwidth");
  spec.max_tensor_parallel = n.integer("max_tensor_parallel", 1, kMaxTensorParallel);
  read_efficiencies(r, spec);
  r.finish();
  return spec;
}

DeviceSpec load_device_file(const std::string& path, config::LoadContext& ctx) {
  YAML::Node root = config::load_file(path, ctx);
  if (!root.IsDefined()) return DeviceSpec{};
  return parse_device(config::Node(root, "", path, &ctx));
}

Engine engine_of(OpKind kind) {
  switch (kind) {
    case OpKind::qkv_proj:
    case OpKind::o_proj:
    case OpKind::mlp_gate_up:
    case OpKind::mlp_down:
    case OpKind::lm_head:
    case OpKind::attention:  // QK^T and PV run on the cube (Ascend FlashAttention kernels)
      return Engine::matrix;
    case OpKind::input_norm:
    case OpKind::post_norm:
    case OpKind::final_norm:
    case OpKind::rope:
    case OpKind::kv_rerope:  // the seed 003 remap's rotation: vector math on K
    case OpKind::mlp_act:
    case OpKind::embedding:  // a gather: vector unit moving rows
    case OpKind::sampling:
      return Engine::vector;
    case OpKind::kv_store:  // scatter by slot mapping (seed 001 store_kvcache): a copy engine
    case OpKind::kv_copy:
      return Engine::dma;
    case OpKind::attn_allreduce:
    case OpKind::mlp_allreduce:
      return Engine::device_link;
    case OpKind::swap_in:
    case OpKind::swap_out:
      return Engine::host_link;
    case OpKind::count:
      break;
  }
  throw std::invalid_argument(
      fmt::format("engine_of: not an op kind ({})", static_cast<int>(kind)));
}

OpClass class_of(OpKind kind) {
  switch (kind) {
    case OpKind::qkv_proj:
    case OpKind::o_proj:
    case OpKind::mlp_gate_up:
    case OpKind::mlp_down:
    case OpKind::lm_head:
      return OpClass::gemm;
    case OpKind::attention:
      return OpClass::attention;
    case OpKind::input_norm:
    case OpKind::post_norm:
    case OpKind::final_norm:
    case OpKind::rope:
    case OpKind::kv_rerope:
    case OpKind::mlp_act:
    case OpKind::embedding:
    case OpKind::sampling:
      return OpClass::elementwise;
    case OpKind::kv_store:
    case OpKind::kv_copy:
    case OpKind::swap_in:
    case OpKind::swap_out:
      return OpClass::transfer;
    case OpKind::attn_allreduce:
    case OpKind::mlp_allreduce:
      return OpClass::collective;
    case OpKind::count:
      break;
  }
  throw std::invalid_argument(fmt::format("class_of: not an op kind ({})", static_cast<int>(kind)));
}

}  // namespace kvsim
