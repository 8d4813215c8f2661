#pragma once
// Fitting a device's timing parameters to measurements (`kvsim calibrate
// --fit`) and holding the fit to rows it did not see (`--cv`, leave-one-out).
//
// The parameters are physical terms of the device family's timing model,
// each a number of the device file (DeviceSpec), never a per-model or
// per-row constant:
//   efficiency.gemm.memory       weight streaming (decode is bound by it)
//   efficiency.attention.memory  KV reads (a model without GQA reads far more)
//   efficiency.gemm.compute      the matrix unit on projections and MLP
//   efficiency.attention.compute the matrix unit on QK^T / PV
//   efficiency.elementwise.compute  the vector unit (HTP: HVX softmax, norms)
//   matrix_tokens_exponent       the matrix efficiency's pass-shape term
//   step_overhead                fixed cost per pass (HTP graph execute) or step
// The fit is a joint least squares on relative error ((predicted -
// published) / published) over all of a device's rows, by Levenberg-Marquardt
// on a numerical Jacobian (Eigen), in log space for positive parameters. A
// weak prior pulls each parameter toward its assumed value (the family's
// catalog below, with its reason): it decides what the rows leave open and
// nothing else. A parameter whose posterior spread stays wide (the rows do
// not constrain it) keeps its assumed value and is reported as assumed.
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli/studies/calibration.hpp"
#include "devices/device_spec.hpp"

namespace kvsim {

struct FitParameter {
  std::string key;             // device file key path
  double assumed = 0;          // the value the prior pulls toward (in `unit`)
  std::string assumed_source;  // why that value, when the rows leave it open
  double lo = 0, hi = 0;       // bounds (in `unit`)
  bool log_scale = true;       // fitted as log(value): positive, relative steps
  std::string unit;            // "" (a fraction or exponent) or "ms"
  // One value for every device of the family (calibration_family), fitted on
  // all their rows together; else one per device.
  bool shared = false;
};

// The devices whose fits share parameters: one name per hardware design
// ("hexagon-htp" for every HTP generation); a device alone is its own.
std::string calibration_family(const DeviceSpec& device);
// Whose fits inform a family's parameters its rows leave open: the vendor of
// a part with an architecture ("nvidia"), else the device kind.
std::string calibration_lineage(const DeviceSpec& device);

// The parameters a device family's fit varies, with their assumed values.
std::vector<FitParameter> fit_parameters(const DeviceSpec& device);

double get_fit_parameter(const DeviceSpec& d, const std::string& key);  // in the catalog's unit
void set_fit_parameter(DeviceSpec& d, const std::string& key, double value);
// The device's name and, bit for bit, every field set_fit_parameter writes:
// two devices loaded from one file and moved only by set_fit_parameter have
// equal keys exactly when they price every row alike (the fit's price memo,
// cli/studies/calibration_rows.cpp). A field set_fit_parameter learns to
// write must be added here too.
std::string fit_state_key(const DeviceSpec& d);

// Predicts one row on a device with the parameters being tried (nullopt: the
// row cannot be predicted; it is left out of the fit).
using RowPredictor =
    std::function<std::optional<double>(const MeasurementRow& row, const DeviceSpec& device)>;

struct FittedParameter {
  FitParameter param;
  double value = 0;
  double relative_std = 0;  // posterior standard deviation / value (log-scale parameters)
  double sensitivity = 0;   // |d relative error / d log value|, summed over rows
  bool constrained = false;
};

struct DeviceFit {
  std::string device;
  std::string family;                        // calibration_family()
  std::vector<std::string> row_ids;          // the device's rows fitted on
  std::vector<std::string> family_row_ids;   // every row the shared parameters were fitted on
  std::vector<double> published, predicted;  // per row, after the fit
  std::vector<FittedParameter> params;
  std::vector<std::vector<double>> covariance;  // of the fitted (log) parameters
  DeviceSpec fitted;                            // the device with the fitted values
  int iterations = 0;
  double rms_relative_error = 0;
};

// Fits `params` of `start` to `rows` (all of one device). Rows the predictor
// cannot predict are dropped. With no rows every parameter stays assumed.
// `threads` > 1 prices a trial point's rows on that many threads (`predict`
// must then be safe to call from several at once); the fit is the same
// number for number whatever their count.
DeviceFit fit_device(const DeviceSpec& start, const std::vector<MeasurementRow>& rows,
                     const RowPredictor& predict, const std::vector<FitParameter>& params,
                     int threads = 1);
// Fits the devices of one family jointly: a parameter marked `shared` takes
// one value for all of them, fitted on every device's rows; the others one
// value per device, fitted on its own rows (while the shared ones move with
// them). `rows[i]` and `params[i]` belong to `starts[i]`; every device's
// catalog has the same keys in the same order. One DeviceFit per device.
std::vector<DeviceFit> fit_family(const std::vector<DeviceSpec>& starts,
                                  const std::vector<std::vector<MeasurementRow>>& rows,
                                  const RowPredictor& predict,
                                  const std::vector<std::vector<FitParameter>>& params,
                                  int threads = 1);

struct CvEntry {
  MeasurementRow row;
  std::string device;
  std::optional<double> in_sample;  // predicted by the fit on every row of the device
  std::optional<double> held_out;   // predicted by the fit without this row
  // A row of a device held out whole (--hold-out): predicted by the fit on
  // the other devices' rows only.
  std::optional<double> by_device;
  std::string not_predicted;
};

// One device's share of a report's errors: its rows' absolute errors in %.
struct DeviceErrors {
  std::string device;
  int64_t rows = 0;
  double median_abs_pct = 0, max_abs_pct = 0;
};

struct CvReport {
  std::vector<CvEntry> entries;
  std::vector<DeviceFit> fits;  // the full fit of each device
  // Absolute errors in %, over devices with at least kCvMinRows rows.
  double median_abs_held_out_pct = 0, max_abs_held_out_pct = 0;
  double median_abs_in_sample_pct = 0, max_abs_in_sample_pct = 0;
  int64_t counted_rows = 0;
  // Over the rows of the devices held out whole.
  std::vector<std::string> held_out_devices;
  int64_t by_device_rows = 0;
  double median_abs_by_device_pct = 0, max_abs_by_device_pct = 0;
  // Per device, in the order its first row comes: the leave-one-out errors
  // of the devices counted above (with leave_one_out), and the errors of
  // each device held out whole (`held_out_devices`), so that a figure
  // quoted per device is one the command prints.
  std::vector<DeviceErrors> held_out_per_device, by_device_per_device;
};
constexpr int64_t kCvMinRows = 3;

// The row prepared for a fit on `device` (the row's device file at some
// parameter values): recorded where its price can be re-derived without a
// run (prepare_htp_row), checked once against a full run with every catalog
// parameter moved; a row that fails the check, or cannot be recorded, runs
// its predictor at every price. nullopt: no predictor handles the row.
std::optional<RowPricer> prepare_row(const MeasurementRow& row, const std::string& configs_dir,
                                     const DeviceSpec& device);

// Groups rows by row_device_name(), loads each device file from
// `configs_dir`, fits it on all its rows and, when `leave_one_out`, once more
// per row without it. Every row is prepared once (prepare_row;
// cli/studies/calibration_rows.cpp).
// With `hold_out_devices`, those devices' rows are left out of every fit and
// predicted by it (the held-out-by-device check: a part's efficiencies from
// its design's other parts, or its vendor's other designs).
// With `left_out_rows` (and `leave_one_out`), only those rows are left out
// in turn, each fit on all the others: a test's check of the rows hardest
// to predict, at a fraction of the fits.
CvReport cross_validate(const std::vector<MeasurementRow>& rows, const std::string& configs_dir,
                        bool leave_one_out, const std::set<std::string>& hold_out_devices = {},
                        const std::set<std::string>& left_out_rows = {});
// Same with a given predictor and devices (tests).
// `threads` as for fit_family.
CvReport cross_validate(const std::vector<MeasurementRow>& rows,
                        const std::function<DeviceSpec(const std::string&)>& load_device,
                        const RowPredictor& predict, bool leave_one_out,
                        const std::set<std::string>& hold_out_devices = {}, int threads = 1,
                        const std::set<std::string>& left_out_rows = {});

std::string cv_table_text(const CvReport& report, bool leave_one_out);
std::string cv_markdown(const CvReport& report, bool leave_one_out, const std::string& command);
std::string fit_json_text(const CvReport& report, const std::string& command);
// Per device: each fitted parameter as a device-file line with its source.
std::string fit_device_yaml(const DeviceFit& fit, const std::string& command);

}  // namespace kvsim
