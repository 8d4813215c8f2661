// kvsim calibrate MEASUREMENTS.csv [MORE.csv ...] [--fit | --cv] [--out DIR]
// Predicts every row of one or more measurements CSVs (the format of
// shared/data/calibration/published_measurements.csv) by running a scenario
// built from it, and prints published vs predicted with the error per row and
// the median and max absolute error (the device files as they are).
//   --fit  fits each device's timing parameters jointly on its rows
//          (cli/studies/calibration_fit.hpp) and writes the fitted values,
//          their residuals and covariance, and a device-file fragment per
//          device with each value's source
//   --cv   the fit, plus leave-one-out per device: every row predicted by a
//          fit on the device's other rows, beside the in-sample figure
// Each invocation writes a folder of its own (out/calibration/<UTC time>
// unless --out names one), so a run never replaces the last one.
#include <chrono>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "base/diagnostics.hpp"
#include "base/source_paths.hpp"
#include "cli/commands.hpp"
#include "cli/studies/calibration.hpp"
#include "cli/studies/calibration_fit.hpp"
#include "reports/output_dir.hpp"

namespace kvsim::cli {
namespace {

struct CalibrateOptions {
  std::vector<std::string> measurements;
  std::string out;  // empty: out/calibration/<UTC time>
  bool force = false;
  bool fit = false;
  bool cv = false;
  std::vector<std::string> hold_out;  // devices whose rows no fit sees
};

// out/calibration/YYYYMMDD-HHMMSS, with -2, -3, ... when taken.
std::string timestamped_calibration_folder() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &utc);
  const std::string base = std::string("out/calibration/") + stamp;
  std::error_code ec;
  std::string path = base;
  for (int i = 2; std::filesystem::exists(path, ec); ++i) path = base + "-" + std::to_string(i);
  return path;
}

std::string command_line(const CalibrateOptions& o) {
  std::string c = "kvsim calibrate";
  for (const auto& m : o.measurements) c += " " + m;
  if (o.cv) c += " --cv";
  if (o.fit && !o.cv) c += " --fit";
  if (!o.hold_out.empty()) {
    c += " --hold-out ";
    for (size_t i = 0; i < o.hold_out.size(); ++i) c += (i ? "," : "") + o.hold_out[i];
  }
  return c;
}

int run_calibrate(const CalibrateOptions& o) {
  const std::vector<MeasurementRow> rows = read_measurements(o.measurements);
  const std::string out = o.out.empty() ? timestamped_calibration_folder() : o.out;
  std::string measurements;
  for (const auto& m : o.measurements) measurements += (measurements.empty() ? "" : " ") + m;
  if (!o.fit && !o.cv && o.hold_out.empty()) {
    const CalibrationReport report = calibrate_rows(rows, configs_dir(), measurements);
    write_calibration(report, out, o.force);
    std::cout << calibration_table_text(report) << "report: " << out
              << "/ (calibration.csv, calibration.json, calibration.md)\n";
    return kExitOk;
  }
  const std::string command = command_line(o);
  // A held-out device must be one the rows name, or the check holds nothing out.
  std::set<std::string> hold(o.hold_out.begin(), o.hold_out.end());
  for (const std::string& d : hold) {
    bool named = false;
    for (const MeasurementRow& r : rows) named = named || row_device_name(r) == d;
    if (!named) {
      config::Diagnostic diag;
      diag.where.file = "--hold-out";
      diag.key_path = "--hold-out";
      diag.problem = fmt::format("no row of the measurements names device '{}'", d);
      diag.allowed = "a device of the rows' device column";
      throw config::ConfigError({diag});
    }
  }
  const CvReport report = cross_validate(rows, configs_dir(), o.cv, hold);
  OutputDir dir(out, o.force);
  write_file_atomically(dir.file("calibration.md"), cv_markdown(report, o.cv, command));
  write_file_atomically(dir.file("fit.json"), fit_json_text(report, command));
  for (const auto& f : report.fits)
    write_file_atomically(dir.file("fitted-" + safe_path_component(f.device) + ".yaml"),
                          fit_device_yaml(f, command));
  dir.commit();
  std::cout << cv_table_text(report, o.cv) << "report: " << out
            << "/ (calibration.md, fit.json, fitted-<device>.yaml)\n";
  return kExitOk;
}

}  // namespace

Command add_calibrate_command(CLI::App& app) {
  auto o = std::make_shared<CalibrateOptions>();
  auto* cmd = app.add_subcommand(
      "calibrate", "predicted vs published figures; --fit the device parameters, --cv hold out");
  cmd->add_option("measurements", o->measurements,
                  "CSV files with a header line (columns " + calibration_columns_text() + ")")
      ->required();
  cmd->add_flag("--fit", o->fit,
                "fit each device's parameters jointly on its rows (least squares on relative "
                "error)");
  cmd->add_flag("--cv", o->cv, "the fit plus leave-one-out per device: error on held-out rows");
  cmd->add_option("--hold-out", o->hold_out,
                  "devices (comma-separated) whose rows no fit sees, predicted from their "
                  "design's other parts or their vendor's other designs (implies --fit)")
      ->delimiter(',');
  cmd->add_option("--out", o->out, "output folder (default: a new out/calibration/<UTC time>)");
  cmd->add_flag("--force", o->force, "replace --out even if kvsim did not write it");
  return {cmd, [o] { return run_calibrate(*o); }};
}

}  // namespace kvsim::cli
