// The rows of a fit, each prepared once (`kvsim calibrate --fit` / `--cv`
// price every row at hundreds of parameter values): recorded where a price
// can be re-derived without a run, held to a full run where the fit goes.
#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include "cli/studies/calibration.hpp"
#include "cli/studies/calibration_fit.hpp"

namespace kvsim {
namespace {
// A fit's trial point prices a device family's rows (a few dozen): more
// threads than this mostly wait.
constexpr unsigned kMaxFitThreads = 8;
}  // namespace

std::optional<RowPricer> prepare_row(const MeasurementRow& row, const std::string& configs_dir,
                                     const DeviceSpec& device) {
  std::optional<RowPricer> pricer = prepare_static_batch_row(row, configs_dir, device);
  if (!pricer) pricer = prepare_ascend_row(row, configs_dir, device);
  if (!pricer) pricer = prepare_htp_row(row, configs_dir, device);
  if (!pricer) {
    // Not recordable (or not handled at all): the predictor runs every time.
    const std::optional<Prediction> p = predict_row(row, configs_dir, &device);
    if (!p) return std::nullopt;
    RowPricer slow;
    slow.recorded = p->value;
    slow.scenario = p->scenario;
    slow.price = [row, configs_dir](const DeviceSpec& d) {
      return predict_row(row, configs_dir, &d).value().value;
    };
    return slow;
  }
  // Held to the predictor where the fit goes: every parameter of the catalog
  // moved at once must price as a full run prices it, else the row runs.
  DeviceSpec moved = device;
  for (const FitParameter& p : fit_parameters(device)) {
    const double v = get_fit_parameter(device, p.key);
    set_fit_parameter(moved, p.key,
                      std::clamp(p.log_scale ? v * 0.8 : v + 0.05 * (p.hi - p.lo), p.lo, p.hi));
  }
  const double fast = pricer->price(moved);
  const double full = predict_row(row, configs_dir, &moved).value().value;
  if (!(std::abs(fast - full) <= 1e-9 * std::abs(full))) {
    pricer->price = [row, configs_dir](const DeviceSpec& d) {
      return predict_row(row, configs_dir, &d).value().value;
    };
  }
  return pricer;
}

CvReport cross_validate(const std::vector<MeasurementRow>& rows, const std::string& configs_dir,
                        bool leave_one_out, const std::set<std::string>& hold_out_devices,
                        const std::set<std::string>& left_out_rows) {
  auto load = [&](const std::string& name) {
    config::LoadContext ctx;
    DeviceSpec d = load_device_file(configs_dir + "/devices/" + name + ".yaml", ctx);
    ctx.diagnostics.throw_if_any();
    return d;
  };
  // Each row prepared once, on the first device it is priced on.
  struct Prepared {
    std::optional<RowPricer> pricer;
    std::string error;
  };
  std::map<std::string, Prepared> prepared;
  // Prices already worked out, by row and device state (fit_state_key):
  // the leave-one-out fits all start from the same values and the fit
  // prices its start twice (the order of holding, then its first step), so
  // most points come back. A price is a pure function of the row and the
  // device (RowPricer), so an answer from here is the one a run gives.
  // Bounded: emptied when full (it only ever saves work).
  constexpr size_t kMemoLimit = size_t{1} << 16;
  std::unordered_map<std::string, double> memo;
  std::mutex mu;      // guards `prepared` and `memo` (rows may be priced on several threads)
  std::mutex serial;  // held by the pricers that are not thread_safe
  auto predict = [&](const MeasurementRow& row, const DeviceSpec& d) -> std::optional<double> {
    const Prepared* prep = nullptr;
    std::string key = row.id;
    key += '\0';
    key += fit_state_key(d);
    {
      const std::lock_guard<std::mutex> lock(mu);
      auto it = prepared.find(row.id);
      if (it == prepared.end()) {
        Prepared p;
        try {
          p.pricer = prepare_row(row, configs_dir, d);
        } catch (const std::exception& e) {
          p.error = e.what();
        }
        it = prepared.emplace(row.id, std::move(p)).first;
      }
      prep = &it->second;  // std::map: stays valid as rows are added
      if (!prep->error.empty()) throw std::runtime_error(prep->error);
      if (!prep->pricer) return std::nullopt;
      if (const auto m = memo.find(key); m != memo.end()) return m->second;
    }
    double v = 0;
    if (prep->pricer->thread_safe) {
      v = prep->pricer->price(d);
    } else {
      const std::lock_guard<std::mutex> lock(serial);
      v = prep->pricer->price(d);
    }
    const std::lock_guard<std::mutex> lock(mu);
    if (memo.size() >= kMemoLimit) memo.clear();
    memo.emplace(std::move(key), v);
    return v;
  };
  // Rows on a few threads: each price is independent and gathered in row
  // order (calibration_fit.cpp), so the figures are the same on any count.
  const int threads =
      static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, kMaxFitThreads));
  return cross_validate(rows, load, predict, leave_one_out, hold_out_devices, threads,
                        left_out_rows);
}

}  // namespace kvsim
