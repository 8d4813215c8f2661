#include "devices/device_file_reader.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "devices/plausibility_bounds.hpp"

namespace kvsim {
namespace {

using device_bounds::kMaxBandwidth;
using device_bounds::kMaxMemory;
using device_bounds::kMaxOpsRate;
using device_bounds::kMinBandwidth;
using device_bounds::kMinMemory;
using device_bounds::kMinOpsRate;
constexpr TimeNs kMaxLaunch = kNsPerS;
constexpr TimeNs kMaxStepOverhead = 10 * kNsPerS;

// The lowest efficiency a device file may state (SourcedReader::efficiency).
constexpr double kMinEfficiency = 0.001;

// What an efficiency cites: the calibrated ones name their rows
// (kvsim calibrate --fit), the rest say why they are assumed.
constexpr std::string_view kEfficiencyCites =
    "M: fitted on rows ... (kvsim calibrate --fit), or A: an assumption, why, to be calibrated";

constexpr std::string_view kOpClassKeys[] = {"gemm", "attention", "elementwise", "transfer",
                                             "collective"};

}  // namespace

std::string missing_number_hint(std::string_view cites) {
  if (cites.empty()) return {};
  const std::string_view kind = source_kind(cites);
  return fmt::format("it should cite {}: {{value: ..., source: \"{}\"}}",
                     kind.empty() ? std::string_view("its source") : kind, cites);
}

config::Node SourcedReader::value(std::string_view key, std::string_view cites) {
  std::string source;
  config::Node v = reader_.sourced(key, &source, missing_number_hint(cites));
  const std::string path = prefix_ + std::string(key);
  if (v.defined()) {
    if (source.find_first_not_of(" \t") == std::string::npos) {
      v.error("the source note is empty",
              "a note that says where the number comes from, e.g. \"V: datasheet ...\"");
    } else if (source_label(source).empty()) {
      // The label says what kind of source it is (DESIGN: every number in a
      // device file has a source): a note without one cannot be audited.
      v.error(fmt::format("the source note '{}' has no label", source.substr(0, 40)),
              "a note that begins with V: (datasheet), D: (derived), M: (measured), 3P: (a "
              "third party's figure) or A: (an assumption)");
    } else {
      spec_.sources[path] = source;
    }
  }
  return v;
}

int64_t SourcedReader::integer(const config::ParamSpec& p) {
  using config::ParamType;
  const config::Node v = value(p);
  const auto lo = static_cast<int64_t>(p.min);
  const auto hi = static_cast<int64_t>(p.max);
  if (!v.defined()) return p.type == ParamType::integer ? lo : 0;
  switch (p.type) {
    case ParamType::integer:
      return v.as_int(lo, hi).value_or(lo);
    case ParamType::bytes:
      return v.as_bytes(lo, hi).value_or(0);
    case ParamType::bandwidth:
      return v.as_bandwidth(lo, hi).value_or(0);
    case ParamType::duration:
      return v.as_duration(lo, hi).value_or(0);
    case ParamType::ops_rate:
      return v.as_ops_rate(lo, hi).value_or(0);
    default:
      break;
  }
  throw std::logic_error(fmt::format("device key '{}' is not an integer-like number", p.key));
}

double SourcedReader::number(const config::ParamSpec& p) {
  const config::Node v = value(p);
  return v.defined() ? v.as_double(p.min, p.max).value_or(0.0) : 0.0;
}

double SourcedReader::efficiency(std::string_view key, std::string_view cites) {
  config::Node v = value(key, cites);
  if (!v.defined()) return 1.0;
  const std::optional<double> x = v.as_double(0.0, 1.0);
  if (!x) return 1.0;
  // Below a thousandth of peak no kernel runs (the lowest any device file
  // states is 0.05); such a figure only makes op times absurd, or past
  // what a duration can hold.
  if (*x < kMinEfficiency) {
    v.error(fmt::format("{} is below {} of peak: no kernel is that slow", *x, kMinEfficiency),
            "a fraction in [0.001, 1]");
    return 1.0;
  }
  return *x;
}

std::vector<config::ParamSpec> common_device_params() {
  using namespace config;
  return {
      citing("V: the memory the part ships with (the vendor's datasheet or product page)",
             bytes_param("memory", std::nullopt, kMinMemory, kMaxMemory,
                         "device memory (HBM, LPDDR) per device")),
      citing("V: the memory's datasheet peak, or D: bus width x transfer rate",
             bandwidth_param("memory_bandwidth", std::nullopt, kMinBandwidth, kMaxBandwidth,
                             "peak device-memory bandwidth")),
      citing("V: the datasheet's dense fp16 peak, or D: MACs per cycle x 2 x clock",
             ops_rate_param("matrix_fp16", std::nullopt, kMinOpsRate, kMaxOpsRate,
                            "matrix unit peak, fp16/bf16 (dense)")),
      citing("V: the datasheet's dense int8 peak, or D: MACs per cycle x 2 x clock",
             ops_rate_param("matrix_int8", std::nullopt, kMinOpsRate, kMaxOpsRate,
                            "matrix unit peak, int8 (dense)")),
      citing("V: the datasheet's vector peak, or D: lanes x 2 x clock",
             ops_rate_param("vector_fp16", std::nullopt, kMinOpsRate, kMaxOpsRate,
                            "vector unit peak, fp16")),
      citing("M: a measured launch cost (a profiler trace, named)",
             duration_param("kernel_launch", std::nullopt, 0, kMaxLaunch,
                            "cost of one operator launch")),
      citing("M: a measured per-step overhead, or fitted on named calibration rows",
             duration_param("step_overhead", std::nullopt, 0, kMaxStepOverhead,
                            "fixed cost of one engine step (scheduling, host prep, graph "
                            "execute)")),
      citing("M: fitted on rows ... (kvsim calibrate --fit)",
             number_param("matrix_tokens_exponent", 0.0, -2.0, 2.0, "",
                          "matrix efficiency x (tokens per pass / 128) ^ this, capped at 1 "
                          "(optional; 0: no pass-shape dependence)")),
  };
}

void read_common_numbers(SourcedReader& n, const std::vector<config::ParamSpec>& params,
                         DeviceSpec& spec) {
  spec.memory_bytes = n.integer(declared(params, "memory"));
  spec.memory_bandwidth = n.integer(declared(params, "memory_bandwidth"));
  spec.matrix_fp16_ops = n.integer(declared(params, "matrix_fp16"));
  spec.matrix_int8_ops = n.integer(declared(params, "matrix_int8"));
  spec.vector_fp16_ops = n.integer(declared(params, "vector_fp16"));
  spec.kernel_launch = n.integer(declared(params, "kernel_launch"));
  spec.step_overhead = n.integer(declared(params, "step_overhead"));
  if (n.has("matrix_tokens_exponent"))
    spec.matrix_tokens_exponent = n.number(declared(params, "matrix_tokens_exponent"));
}

std::vector<config::ParamSpec> efficiency_params() {
  std::vector<config::ParamSpec> out;
  for (std::string_view c : kOpClassKeys) {
    for (std::string_view part : {"compute", "memory"}) {
      out.push_back(config::citing(
          std::string(kEfficiencyCites),
          config::number_param(
              fmt::format("efficiency.{}.{}", c, part), std::nullopt, kMinEfficiency, 1.0,
              "fraction of peak",
              fmt::format("fraction of the peak {} rate {} ops reach, in [0.001, 1]", part, c))));
    }
  }
  return out;
}

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
    const std::string class_name(kOpClassKeys[c]);
    config::MapReader per_class(eff.child(class_name));
    if (!per_class.node().defined() && eff.valid()) {
      eff_node.context().diagnostics.error(eff_node.location(), per_class.node().path(),
                                           "is required but missing",
                                           "{compute: {value, source}, memory: {value, source}}");
      continue;
    }
    SourcedReader numbers(per_class, spec, "efficiency." + class_name + ".");
    spec.compute_efficiency[c] = numbers.efficiency("compute", kEfficiencyCites);
    spec.memory_efficiency[c] = numbers.efficiency("memory", kEfficiencyCites);
    per_class.finish();
  }
  eff.finish();
}

const config::ParamSpec& declared(const std::vector<config::ParamSpec>& params,
                                  std::string_view key) {
  for (const auto& p : params)
    if (p.key == key) return p;
  throw std::logic_error(fmt::format("device key '{}' is read but not declared", key));
}

}  // namespace kvsim
