// The calibration measurements CSV reader (kvsim calibrate's input).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

#include "base/diagnostics.hpp"
#include "cli/studies/calibration.hpp"
#include "fuzz/fuzz_input.hpp"

// The predictions run whole simulations (all of sim/), which the reader never
// calls: the harness links these stand-ins instead, so it builds from the
// reader layers alone.
namespace kvsim {
std::optional<Prediction> predict_llamacpp_row(const MeasurementRow&, const std::string&,
                                               const DeviceSpec*) {
  std::abort();
}
std::optional<Prediction> predict_static_batch_row(const MeasurementRow&, const std::string&,
                                                   const DeviceSpec*) {
  std::abort();
}
std::optional<Prediction> predict_ascend_row(const MeasurementRow&, const std::string&,
                                             const DeviceSpec*) {
  std::abort();
}
std::optional<Prediction> predict_htp_row(const MeasurementRow&, const std::string&,
                                          const DeviceSpec*) {
  std::abort();
}
}  // namespace kvsim

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const kvsim::fuzz::MemoryFile file(data, size);
  try {
    (void)kvsim::read_measurements(file.path());
  } catch (const kvsim::config::ConfigError&) {
  }
  return 0;
}
