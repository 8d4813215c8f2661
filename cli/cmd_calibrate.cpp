// kvsim calibrate MEASUREMENTS.csv [--out DIR]
// Predicts every row of a measurements CSV (the format of
// shared/data/calibration/published_measurements.csv) by running a scenario
// built from it, and prints published vs predicted with the error per row and
// the median and max absolute error.
#include <filesystem>
#include <iostream>
#include <memory>

#include "base/source_paths.hpp"
#include "cli/commands.hpp"
#include "cli/studies/calibration.hpp"

namespace kvsim::cli {
namespace {

struct CalibrateOptions {
  std::string measurements;
  std::string out = "out/calibration";
  bool force = false;
};

std::string configs_dir() {
  std::error_code ec;
  return std::filesystem::is_directory("configs/devices", ec) ? "configs" : KVSIM_CONFIG_DIR;
}

int run_calibrate(const CalibrateOptions& o) {
  const std::vector<MeasurementRow> rows = read_measurements(o.measurements);
  const CalibrationReport report = calibrate_rows(rows, configs_dir(), o.measurements);
  write_calibration(report, o.out, o.force);
  std::cout << calibration_table_text(report) << "report: " << o.out
            << "/ (calibration.csv, calibration.json, calibration.md)\n";
  return kExitOk;
}

}  // namespace

Command add_calibrate_command(CLI::App& app) {
  auto o = std::make_shared<CalibrateOptions>();
  auto* cmd = app.add_subcommand("calibrate", "predicted vs published figures, error per row");
  cmd->add_option("measurements", o->measurements,
                  "CSV: id,device,model,weights,kv_dtype,context,batch,input_tokens,"
                  "output_tokens,metric,value,unit,software,source")
      ->required();
  cmd->add_option("--out", o->out, "output folder (default out/calibration)");
  cmd->add_flag("--force", o->force, "replace --out even if kvsim did not write it");
  return {cmd, [o] { return run_calibrate(*o); }};
}

}  // namespace kvsim::cli
