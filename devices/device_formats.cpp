#include "devices/device_formats.hpp"

#include <fmt/format.h>

namespace kvsim {
namespace {

bool is_fp8(const std::string& dtype) {
  return dtype.rfind("fp8", 0) == 0;
}

}  // namespace

std::string weights_format_problem(const DeviceSpec& device, const std::string& weights_dtype) {
  if (is_fp8(weights_dtype) && device.matrix_fp8_ops <= 0)
    return fmt::format(
        "{} weights need fp8 tensor cores, and {} has none (its device file gives no "
        "matrix_fp8)",
        weights_dtype, device.name);
  if (weights_dtype == "fp4" && device.matrix_fp4_ops <= 0)
    return fmt::format(
        "fp4 weights need fp4 tensor cores, and {} has none (its device file gives no "
        "matrix_fp4)",
        device.name);
  return {};
}

std::string kv_format_problem(const DeviceSpec& device, const std::string& kv_dtype) {
  if (is_fp8(kv_dtype) && device.matrix_fp8_ops <= 0)
    return fmt::format(
        "an {} KV cache needs a part with fp8, and {} has none (its device file gives no "
        "matrix_fp8)",
        kv_dtype, device.name);
  return {};
}

}  // namespace kvsim
