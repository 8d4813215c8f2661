#pragma once
// A device family (SPEC 7): the kind of hardware a device file describes,
// picked by the file's `kind`. The family owns what differs between kinds of
// hardware: the device-file keys it reads (declared once, base/params.hpp),
// which engine and efficiency class each operator of a step runs on, the
// peak rate each op's compute runs at, the cross-checks a parsed device must
// pass before it is timed, and which simulator runs its scenarios. A new
// kind of hardware is one file implementing this interface plus one line in
// device_family.cpp's table; a new device of a known kind is only data.
#include <string>
#include <string_view>
#include <vector>

#include <array>
#include "base/params.hpp"

#include "base/reader.hpp"
#include "devices/device_spec.hpp"
#include "models/model_spec.hpp"
#include "models/step_ops.hpp"

namespace kvsim {

// Where one kind of op runs on a family's device and which efficiency figure
// it uses; a family holds one per OpKind, in models/step_ops.hpp order.
struct OpPlacement {
  Engine engine;
  OpClass cls;
};
using OpPlacementTable = std::array<OpPlacement, kOpKindCount>;
// The table's entry for `kind` (std::invalid_argument when it is not one).
const OpPlacement& placement_of(const OpPlacementTable& table, OpKind kind);

class DeviceFamily {
 public:
  virtual ~DeviceFamily() = default;

  // kind "device family", the name `kind:` takes, one line of doc, and the
  // device-file keys (key paths: `efficiency.gemm.compute`, `htp.vtcm`).
  virtual const config::ComponentInfo& info() const = 0;
  // Earlier names of the family that `kind:` still accepts, so older device
  // files keep loading.
  virtual std::vector<std::string> old_names() const { return {}; }
  // The engines that can run a scenario on this family, in the order a
  // scenario without `engine:` tries them: "serving" (batched requests,
  // SPEC 5), "genie" (one user's Genie dialog, seed 002). The first that
  // takes the scenario's policy and workload runs it.
  virtual std::vector<std::string_view> engines() const = 0;
  // The NPU graph executor of a device of this family (seed 002: static
  // AR-n graphs, VTCM, the CPU threads that update the KV buffers between
  // passes), which the genie engine prices its passes on; nullptr when the
  // family declares none.
  virtual const HtpSpec* graph_executor(const DeviceSpec& device) const {
    (void)device;
    return nullptr;
  }
  // The silicon design whose efficiencies its devices share, for a fit
  // (`kvsim calibrate`): the device's `architecture` when it names one, else
  // the device itself.
  virtual std::string calibration_design(const DeviceSpec& device) const {
    return device.architecture.empty() ? device.name : device.architecture;
  }

  // The llama.cpp backends that run a model on a device of this family
  // (ggml's names: cpu, cann, cuda, hexagon), the first its default.
  virtual std::vector<std::string> llama_cpp_backends(const DeviceSpec& device) const = 0;

  // Reads every key of the device map but name, kind, description and notes.
  virtual void read(config::MapReader& root, DeviceSpec& spec) const = 0;

  virtual Engine engine_of(OpKind kind) const = 0;
  virtual OpClass class_of(OpKind kind) const = 0;
  // Peak rate (operations per second, before efficiency) of the op's compute
  // on its engine, for this model's weights and this KV dtype.
  virtual int64_t compute_peak(OpKind kind, const DeviceSpec& device, const ModelSpec& model,
                               Bytes kv_dtype_bytes) const = 0;
  // What makes a parsed device untimeable (a rate at zero from a file with
  // errors, an efficiency outside (0, 1]): one sentence each, none when fine.
  virtual std::vector<std::string> problems(const DeviceSpec& device) const = 0;
};

// The family `kind` names (its name or an old name), nullptr when none does.
const DeviceFamily* find_device_family(std::string_view kind);
// The family of a parsed device (std::invalid_argument when its kind names none).
const DeviceFamily& device_family_of(const DeviceSpec& device);
// Every value `kind:` accepts: the names, then the old names.
std::vector<std::string> device_kind_names();
// The families' descriptions, for a catalog and `kvsim list devices --params`.
std::vector<config::ComponentInfo> device_family_infos();

// The families (one file each).
const DeviceFamily& accelerator_family();
const DeviceFamily& htp_family();
const DeviceFamily& cpu_family();

// Shared by families: every rate the timing divides by must be > 0 and every
// efficiency in (0, 1].
std::vector<std::string> rate_problems(const DeviceSpec& device,
                                       const std::vector<std::pair<int64_t, const char*>>& rates);

}  // namespace kvsim
