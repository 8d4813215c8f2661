#include "devices/device_spec.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "devices/device_family.hpp"

namespace kvsim {
namespace {

constexpr std::array<std::string_view, kEngineCount> kEngineNames{"matrix", "vector", "dma",
                                                                  "device_link", "host_link"};
constexpr std::array<std::string_view, kOpClassCount> kOpClassNames{
    "gemm", "attention", "elementwise", "transfer", "collective"};

}  // namespace

double DeviceSpec::matrix_shape_factor(int64_t tokens) const {
  if (matrix_tokens_exponent == 0.0 || tokens < 1) return 1.0;
  return std::pow(static_cast<double>(tokens) / kMatrixTokensReference, matrix_tokens_exponent);
}

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

std::string_view source_kind(std::string_view source) {
  const std::string_view label = source_label(source);
  if (label == "V") return "a datasheet";
  if (label == "D") return "a derivation (its formula)";
  if (label == "M")
    return source.find("fitted") != std::string_view::npos ? "a fit on named calibration rows"
                                                           : "a measurement";
  if (label == "3P") return "a third party's figure";
  if (label == "A") return "an assumption (why, to be calibrated)";
  return {};
}

DeviceSpec parse_device(const config::Node& node) {
  DeviceSpec spec;
  config::MapReader r(node);
  spec.name = r.string("name", std::nullopt);
  const std::string kind = r.choice("kind", std::nullopt, device_kind_names());
  spec.description = r.string("description", std::string());
  spec.notes = r.string("notes", std::string());
  // The family reads the rest; an old name (`ascend`) is stored as the
  // family's name, so nothing downstream sees two names for one family.
  const DeviceFamily* family = find_device_family(kind);
  if (family != nullptr) {
    spec.kind = family->info().name;
    family->read(r, spec);
    // A key of another family (an `htp:` section in an accelerator file)
    // names the family that takes it.
    config::report_foreign_keys(r, family->info(), device_family_infos(),
                                {"name", "kind", "description", "notes"});
  } else if (r.valid() && node.raw().IsMap()) {
    // A missing or unknown kind is the one error: which keys are right
    // depends on the family.
    for (auto it = node.raw().begin(); it != node.raw().end(); ++it) r.declare(it->first.Scalar());
  }
  r.finish();
  return spec;
}

DeviceSpec load_device_file(const std::string& path, config::LoadContext& ctx) {
  YAML::Node root = config::load_file(path, ctx);
  if (!root.IsDefined()) return DeviceSpec{};
  return parse_device(config::Node(root, "", path, &ctx));
}

}  // namespace kvsim
