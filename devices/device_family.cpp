#include "devices/device_family.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace kvsim {
namespace {

// The registry: one line per family.
const std::vector<const DeviceFamily*>& families() {
  static const std::vector<const DeviceFamily*> all = {&accelerator_family(), &htp_family(),
                                                       &cpu_family()};
  return all;
}

}  // namespace

const DeviceFamily* find_device_family(std::string_view kind) {
  for (const DeviceFamily* f : families()) {
    if (f->info().name == kind) return f;
    for (const std::string& old : f->old_names())
      if (old == kind) return f;
  }
  return nullptr;
}

const OpPlacement& placement_of(const OpPlacementTable& table, OpKind kind) {
  const auto k = static_cast<size_t>(kind);
  if (k >= kOpKindCount)
    throw std::invalid_argument(fmt::format("not an op kind ({})", static_cast<int>(kind)));
  return table[k];
}

const DeviceFamily& device_family_of(const DeviceSpec& device) {
  const DeviceFamily* f = find_device_family(device.kind);
  if (f == nullptr) {
    throw std::invalid_argument(fmt::format("device '{}' is kind '{}', which no device family is",
                                            device.name, device.kind));
  }
  return *f;
}

std::vector<std::string> device_kind_names() {
  std::vector<std::string> names;
  for (const DeviceFamily* f : families()) names.push_back(f->info().name);
  for (const DeviceFamily* f : families())
    for (const std::string& old : f->old_names()) names.push_back(old);
  return names;
}

std::vector<config::ComponentInfo> device_family_infos() {
  std::vector<config::ComponentInfo> infos;
  for (const DeviceFamily* f : families()) infos.push_back(f->info());
  return infos;
}

std::vector<std::string> rate_problems(const DeviceSpec& device,
                                       const std::vector<std::pair<int64_t, const char*>>& rates) {
  std::vector<std::string> out;
  for (const auto& [rate, what] : rates) {
    if (rate <= 0)
      out.push_back(fmt::format("device '{}': {} must be > 0, got {}", device.name, what, rate));
  }
  for (size_t c = 0; c < kOpClassCount; ++c) {
    for (const double eff : {device.compute_efficiency[c], device.memory_efficiency[c]}) {
      if (!(eff > 0.0 && eff <= 1.0)) {
        out.push_back(fmt::format("device '{}': efficiency.{} must be in (0, 1], got {}",
                                  device.name, op_class_name(static_cast<OpClass>(c)), eff));
      }
    }
  }
  return out;
}

}  // namespace kvsim
