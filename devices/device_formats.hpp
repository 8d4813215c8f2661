#pragma once
// Which number formats a device can run (SPEC 7): fp8 weights and fp8 KV
// need fp8 tensor cores (`matrix_fp8` in the device file), fp4 weights fp4
// ones (`matrix_fp4`). A part without them (A100, Ascend 910B, a Hexagon
// NPU) is refused at scenario load rather than priced as if it had them.
#include <string>

#include "devices/device_spec.hpp"

namespace kvsim {

// Why `device` cannot run weights stored as `weights_dtype` (a
// kWeightsDtypeNames entry); "" when it can.
std::string weights_format_problem(const DeviceSpec& device, const std::string& weights_dtype);
// Why `device` cannot hold a KV cache of `kv_dtype` (a kKvDtypeNames entry);
// "" when it can.
std::string kv_format_problem(const DeviceSpec& device, const std::string& kv_dtype);

}  // namespace kvsim
