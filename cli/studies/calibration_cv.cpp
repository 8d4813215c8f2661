// Leave-one-out over a device's rows and the reports of `kvsim calibrate
// --fit` / `--cv`: every row predicted by a fit that did not see it, beside
// the fit on all rows (in-sample).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/studies/calibration.hpp"
#include "cli/studies/calibration_fit.hpp"
#include "reports/html_page.hpp"

namespace kvsim {
namespace {

double error_pct(double predicted, double published) {
  return (predicted - published) / published * 100.0;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

std::string rows_list(const std::vector<std::string>& ids) {
  std::string out;
  for (const auto& id : ids) out += (out.empty() ? "" : ", ") + id;
  return out;
}

// The posterior standard deviation: relative for a log-scale parameter.
std::string spread(const FittedParameter& p) {
  return p.param.log_scale ? fmt::format("+-{:.1f}%", 100 * p.relative_std)
                           : fmt::format("+-{:.3f}", p.relative_std);
}

std::string format_value(const FittedParameter& p) {
  if (p.param.unit == "ms") return fmt::format("{:.4g}ms", p.value);
  return fmt::format("{:.4g}", p.value);
}

// The catalog's parameters of `device`, each assumed value replaced by what
// the other devices of its family fitted (their mean, in log space for a
// log-scale parameter, each weighted by its precision: 1 / spread^2) where
// any of them constrained it: the rows of
// one Hexagon or one Ascend part inform a sibling's parameters its own rows
// leave open. `others` never holds `device`'s own fit, so a held-out row
// cannot reach its prediction through this prior.
std::vector<FitParameter> family_priors(const DeviceSpec& device,
                                        const std::vector<const DeviceFit*>& others) {
  std::vector<FitParameter> params = fit_parameters(device);
  // A GPU design's parameters are all shared by its parts; a design no row
  // pins takes them from its vendor's other designs (`others` then holds
  // no part of its own design).
  const bool design = !device.architecture.empty();
  for (FitParameter& p : params) {
    if (p.shared && !design) continue;  // fitted on the whole family's rows together
    double sum = 0, weights = 0;
    std::vector<std::string> from;
    for (const DeviceFit* f : others) {
      if (calibration_lineage(f->fitted) != calibration_lineage(device)) continue;
      if (design && calibration_family(f->fitted) == calibration_family(device)) continue;
      for (const FittedParameter& q : f->params) {
        if (q.param.key != p.key || !q.constrained) continue;
        const double sd = std::max(q.relative_std, 0.02);
        sum += (p.log_scale ? std::log(q.value) : q.value) / (sd * sd);
        weights += 1.0 / (sd * sd);
        from.push_back(fmt::format("{} (rows {})", f->device, rows_list(f->row_ids)));
      }
    }
    if (from.empty()) continue;
    const double mean = sum / weights;
    p.assumed = std::clamp(p.log_scale ? std::exp(mean) : mean, p.lo, p.hi);
    p.assumed_source = std::string(design ? "A: as fitted on the vendor's other designs: "
                                          : "A: as fitted on the same device family: ") +
                       rows_list(from);
  }
  return params;
}

}  // namespace

CvReport cross_validate(const std::vector<MeasurementRow>& rows,
                        const std::function<DeviceSpec(const std::string&)>& load_device,
                        const RowPredictor& predict, bool leave_one_out,
                        const std::set<std::string>& hold_out_devices, int threads,
                        const std::set<std::string>& left_out_rows) {
  CvReport report;
  std::vector<std::string> order;
  std::map<std::string, std::vector<MeasurementRow>> by_device;
  for (const MeasurementRow& r : rows) {
    const std::string d = row_device_name(r);
    if (!by_device.count(d)) order.push_back(d);
    by_device[d].push_back(r);
  }
  std::map<std::string, DeviceSpec> starts;
  std::map<std::string, std::string> load_errors;
  std::vector<std::string> family_order;
  std::map<std::string, std::vector<std::string>> families;  // family -> its devices
  for (const std::string& name : order) {
    try {
      starts[name] = load_device(name);
    } catch (const std::exception& e) {
      load_errors[name] = e.what();
      continue;
    }
    const std::string family = calibration_family(starts[name]);
    if (!families.count(family)) family_order.push_back(family);
    families[family].push_back(name);
  }
  auto shares = [&](const std::string& name) {
    for (const FitParameter& p : fit_parameters(starts[name]))
      if (p.shared) return true;
    return false;
  };
  // Pass 1: every device of a family that shares nothing on its own rows,
  // from the catalog's assumed values (what its kind's siblings take as
  // priors in pass 2).
  // The rows a fit sees: a held-out device's are predicted, never fitted on.
  auto fit_rows = [&](const std::string& name) {
    return hold_out_devices.count(name) ? std::vector<MeasurementRow>{} : by_device[name];
  };
  std::map<std::string, DeviceFit> own;
  for (const std::string& name : order)
    if (!load_errors.count(name) && !shares(name))
      own[name] =
          fit_device(starts[name], fit_rows(name), predict, fit_parameters(starts[name]), threads);
  // Pass 1 for the GPU designs too: each design jointly on its own rows from
  // the catalog's values, which its vendor's other designs take as priors in
  // pass 2.
  for (const std::string& family : family_order) {
    const std::vector<std::string>& names = families[family];
    if (starts[names.front()].architecture.empty()) continue;
    std::vector<DeviceSpec> design_starts;
    std::vector<std::vector<MeasurementRow>> design_rows;
    std::vector<std::vector<FitParameter>> design_params;
    for (const std::string& name : names) {
      design_starts.push_back(starts[name]);
      design_rows.push_back(fit_rows(name));
      design_params.push_back(fit_parameters(starts[name]));
    }
    std::vector<DeviceFit> fits =
        fit_family(design_starts, design_rows, predict, design_params, threads);
    for (size_t d = 0; d < names.size(); ++d)
      if (!fits[d].row_ids.empty()) own[names[d]] = std::move(fits[d]);
  }

  std::map<std::string, CvEntry> entries;
  std::map<std::string, int64_t> predicted_rows;
  for (const std::string& name : order) {
    if (!load_errors.count(name)) continue;
    for (const auto& r : by_device[name]) {
      CvEntry e;
      e.row = r;
      e.device = name;
      e.not_predicted = load_errors[name];
      entries[r.id] = std::move(e);
    }
  }
  // Pass 2: every family jointly (what a device shares with its siblings is
  // fitted on all their rows; what its rows leave open of its own comes from
  // its kind's other devices, pass 1); then leave-one-out: each row
  // predicted by the same joint fit on every other row of the family.
  for (const std::string& family : family_order) {
    const std::vector<std::string>& names = families[family];
    std::vector<DeviceSpec> family_starts;
    std::vector<std::vector<MeasurementRow>> family_rows;
    std::vector<std::vector<FitParameter>> params;
    for (const std::string& name : names) {
      family_starts.push_back(starts[name]);
      family_rows.push_back(fit_rows(name));
      std::vector<const DeviceFit*> others;
      for (const auto& [other, fit] : own)
        if (other != name) others.push_back(&fit);
      params.push_back(family_priors(starts[name], others));
    }
    std::vector<DeviceFit> full = fit_family(family_starts, family_rows, predict, params, threads);
    for (size_t d = 0; d < names.size(); ++d) {
      if (!hold_out_devices.count(names[d])) continue;
      for (const auto& r : by_device[names[d]]) {
        CvEntry e;
        e.row = r;
        e.device = names[d];
        try {
          e.by_device = predict(r, full[d].fitted);
          if (!e.by_device) e.not_predicted = "the predictor does not handle this row";
        } catch (const std::exception& ex) {
          e.not_predicted = ex.what();
        }
        entries[r.id] = std::move(e);
      }
    }
    for (size_t d = 0; d < names.size(); ++d) {
      for (const auto& r : family_rows[d]) {
        CvEntry e;
        e.row = r;
        e.device = names[d];
        const auto it = std::find(full[d].row_ids.begin(), full[d].row_ids.end(), r.id);
        if (it == full[d].row_ids.end()) {
          try {
            (void)predict(r, full[d].fitted);
            e.not_predicted = "the predictor does not handle this row";
          } catch (const std::exception& ex) {
            e.not_predicted = ex.what();
          }
        } else {
          e.in_sample = full[d].predicted[static_cast<size_t>(it - full[d].row_ids.begin())];
          ++predicted_rows[names[d]];
        }
        entries[r.id] = std::move(e);
      }
    }
    if (leave_one_out) {
      for (size_t d = 0; d < names.size(); ++d) {
        for (const auto& r : family_rows[d]) {
          CvEntry& e = entries[r.id];
          if (!e.in_sample) continue;
          if (!left_out_rows.empty() && !left_out_rows.count(r.id)) continue;
          std::vector<std::vector<MeasurementRow>> rest = family_rows;
          std::erase_if(rest[d], [&](const MeasurementRow& o) { return o.id == r.id; });
          const std::vector<DeviceFit> without =
              fit_family(family_starts, rest, predict, params, threads);
          try {
            e.held_out = predict(r, without[d].fitted);
          } catch (const std::exception& ex) {
            e.not_predicted = ex.what();
          }
        }
      }
    }
    for (DeviceFit& f : full) report.fits.push_back(std::move(f));
  }
  std::vector<double> held, in, by_device_errors;
  // Per device, in the order of `order` (its first row's).
  std::map<std::string, std::vector<double>> held_of, by_device_of;
  for (const MeasurementRow& r : rows) {
    CvEntry& e = entries[r.id];
    if (e.by_device) {
      by_device_errors.push_back(std::abs(error_pct(*e.by_device, r.value)));
      by_device_of[e.device].push_back(by_device_errors.back());
    }
    if (predicted_rows[e.device] >= kCvMinRows && e.in_sample) {
      in.push_back(std::abs(error_pct(*e.in_sample, r.value)));
      if (e.held_out) {
        held.push_back(std::abs(error_pct(*e.held_out, r.value)));
        held_of[e.device].push_back(held.back());
      }
      ++report.counted_rows;
    }
    report.entries.push_back(std::move(e));
  }
  auto per_device = [&](const std::map<std::string, std::vector<double>>& of) {
    std::vector<DeviceErrors> out;
    for (const std::string& name : order) {
      const auto it = of.find(name);
      if (it == of.end() || it->second.empty()) continue;
      out.push_back({name, static_cast<int64_t>(it->second.size()), median(it->second),
                     *std::max_element(it->second.begin(), it->second.end())});
    }
    return out;
  };
  report.held_out_per_device = per_device(held_of);
  report.by_device_per_device = per_device(by_device_of);
  report.median_abs_in_sample_pct = median(in);
  report.max_abs_in_sample_pct = in.empty() ? 0 : *std::max_element(in.begin(), in.end());
  report.median_abs_held_out_pct = median(held);
  report.max_abs_held_out_pct = held.empty() ? 0 : *std::max_element(held.begin(), held.end());
  report.by_device_rows = static_cast<int64_t>(by_device_errors.size());
  report.median_abs_by_device_pct = median(by_device_errors);
  report.max_abs_by_device_pct =
      by_device_errors.empty()
          ? 0
          : *std::max_element(by_device_errors.begin(), by_device_errors.end());
  for (const std::string& name : hold_out_devices) report.held_out_devices.push_back(name);
  return report;
}

namespace {

std::vector<std::string> header(bool loo, bool by_device) {
  std::vector<std::string> h = {"id",        "device", "model",          "metric",
                                "published", "fitted", "in-sample err %"};
  if (loo) {
    h.push_back("held out");
    h.push_back("held-out err %");
  }
  if (by_device) {
    h.push_back("device held out");
    h.push_back("device held-out err %");
  }
  h.push_back("unit");
  return h;
}

std::vector<std::vector<std::string>> cells(const CvReport& report, bool loo) {
  const bool by_device = !report.held_out_devices.empty();
  std::vector<std::vector<std::string>> out;
  for (const CvEntry& e : report.entries) {
    const auto& r = e.row;
    std::vector<std::string> c = {
        r.id,
        e.device,
        r.model + (r.weights.empty() ? "" : " " + r.weights),
        r.metric,
        fmt::format("{:g}", r.value),
        e.in_sample ? fmt::format("{:.4g}", *e.in_sample) : (e.by_device ? "-" : "not predicted"),
        e.in_sample ? fmt::format("{:+.1f}", error_pct(*e.in_sample, r.value)) : "-"};
    if (loo) {
      c.push_back(e.held_out ? fmt::format("{:.4g}", *e.held_out) : "-");
      c.push_back(e.held_out ? fmt::format("{:+.1f}", error_pct(*e.held_out, r.value)) : "-");
    }
    if (by_device) {
      c.push_back(e.by_device ? fmt::format("{:.4g}", *e.by_device) : "-");
      c.push_back(e.by_device ? fmt::format("{:+.1f}", error_pct(*e.by_device, r.value)) : "-");
    }
    c.push_back(r.unit);
    out.push_back(std::move(c));
  }
  return out;
}

std::string summary(const CvReport& report, bool loo) {
  std::string s = fmt::format(
      "over the {} rows of devices with at least {} rows: in-sample absolute error median "
      "{:.1f}%, max {:.1f}%",
      report.counted_rows, kCvMinRows, report.median_abs_in_sample_pct,
      report.max_abs_in_sample_pct);
  if (loo)
    s += fmt::format("; leave-one-out median {:.1f}%, max {:.1f}%", report.median_abs_held_out_pct,
                     report.max_abs_held_out_pct);
  if (!report.held_out_devices.empty()) {
    std::string devices;
    for (const auto& d : report.held_out_devices) devices += (devices.empty() ? "" : ", ") + d;
    s += fmt::format(
        "; devices held out ({}, fitted on none of their rows): {} rows, median {:.1f}%, max "
        "{:.1f}%",
        devices, report.by_device_rows, report.median_abs_by_device_pct,
        report.max_abs_by_device_pct);
  }
  return s;
}

// "a100-sxm4 8 rows median 9.8%, max 26.3%; h100-sxm5 ..." (empty: none).
std::string per_device_text(const std::vector<DeviceErrors>& of) {
  std::string s;
  for (const DeviceErrors& d : of)
    s += fmt::format("{}{} {} rows median {:.1f}%, max {:.1f}%", s.empty() ? "" : "; ", d.device,
                     d.rows, d.median_abs_pct, d.max_abs_pct);
  return s;
}

// The summary's figures per device, one line each kind.
std::string per_device_summary(const CvReport& report, bool loo) {
  std::string s;
  if (loo && !report.held_out_per_device.empty())
    s += "leave-one-out per device: " + per_device_text(report.held_out_per_device) + "\n";
  if (!report.by_device_per_device.empty())
    s += "held out by device (fitted on none of its rows): " +
         per_device_text(report.by_device_per_device) + "\n";
  return s;
}

nlohmann::ordered_json per_device_json(const std::vector<DeviceErrors>& of) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (const DeviceErrors& d : of)
    a.push_back({{"device", d.device},
                 {"rows", d.rows},
                 {"median_abs_pct", d.median_abs_pct},
                 {"max_abs_pct", d.max_abs_pct}});
  return a;
}

std::string params_text(const DeviceFit& f) {
  std::string out = fmt::format("{}: {} rows ({}), rms relative error {:.1f}%\n", f.device,
                                f.row_ids.size(), rows_list(f.row_ids), 100 * f.rms_relative_error);
  for (const auto& p : f.params) {
    out += fmt::format(
        "  {:<32} {:>10}  {}\n", p.param.key, format_value(p),
        p.constrained
            ? fmt::format("fitted{}, {}, sensitivity {:.3f}",
                          p.param.shared ? " (shared by " + f.family + ")" : "", spread(p),
                          p.sensitivity)
            : fmt::format("assumed (rows do not constrain it; sensitivity {:.3f})", p.sensitivity));
  }
  return out;
}

}  // namespace

std::string cv_table_text(const CvReport& report, bool loo) {
  std::string out =
      aligned_columns_text(header(loo, !report.held_out_devices.empty()), cells(report, loo));
  for (const auto& e : report.entries)
    if (!e.in_sample && !e.by_device)
      out += fmt::format("  {}: not predicted: {}\n", e.row.id, e.not_predicted);
  out += "\n";
  for (const auto& f : report.fits) out += params_text(f);
  return out + summary(report, loo) + "\n" + per_device_summary(report, loo);
}

std::string cv_markdown(const CvReport& report, bool loo, const std::string& command) {
  std::string md = fmt::format(
      "# Calibration: {}\n\n`{}`\n\nError = (predicted - published) / published. Fitted: every "
      "device's parameters fitted jointly on all its rows. {}{}.\n\n",
      loo ? "leave-one-out" : "joint fit", command,
      loo ? "Held out: the row predicted by a fit on the device's other rows only. " : "",
      summary(report, loo));
  // One paragraph per line of the per-device summary.
  for (const char c : per_device_summary(report, loo))
    md += c == '\n' ? std::string("\n\n") : std::string(1, c);
  md += markdown_table(header(loo, !report.held_out_devices.empty()), cells(report, loo));
  md += "\n```\n";
  for (const auto& f : report.fits) md += params_text(f);
  md += "```\n";
  return md;
}

std::string fit_json_text(const CvReport& report, const std::string& command) {
  nlohmann::ordered_json j;
  j["command"] = command;
  j["error_definition"] = "(predicted - published) / published x 100";
  j["counted_rows"] = report.counted_rows;
  j["median_abs_in_sample_pct"] = report.median_abs_in_sample_pct;
  j["max_abs_in_sample_pct"] = report.max_abs_in_sample_pct;
  j["median_abs_held_out_pct"] = report.median_abs_held_out_pct;
  j["max_abs_held_out_pct"] = report.max_abs_held_out_pct;
  if (!report.held_out_per_device.empty())
    j["held_out_per_device"] = per_device_json(report.held_out_per_device);
  if (!report.held_out_devices.empty()) {
    j["held_out_devices"] = report.held_out_devices;
    j["by_device_rows"] = report.by_device_rows;
    j["median_abs_by_device_pct"] = report.median_abs_by_device_pct;
    j["max_abs_by_device_pct"] = report.max_abs_by_device_pct;
    j["by_device_per_device"] = per_device_json(report.by_device_per_device);
  }
  j["devices"] = nlohmann::ordered_json::array();
  for (const auto& f : report.fits) {
    nlohmann::ordered_json d;
    d["device"] = f.device;
    d["family"] = f.family;
    d["rows"] = f.row_ids;
    d["family_rows"] = f.family_row_ids;
    d["rms_relative_error"] = f.rms_relative_error;
    d["iterations"] = f.iterations;
    d["parameters"] = nlohmann::ordered_json::array();
    for (const auto& p : f.params) {
      nlohmann::ordered_json pj;
      pj["key"] = p.param.key;
      pj["value"] = p.value;
      pj["unit"] = p.param.unit;
      pj["status"] = p.constrained ? "fitted" : "assumed";
      pj["shared_by_family"] = p.param.shared;
      pj["relative_std"] = p.relative_std;
      pj["sensitivity"] = p.sensitivity;
      if (!p.constrained) pj["assumed_source"] = p.param.assumed_source;
      d["parameters"].push_back(std::move(pj));
    }
    d["covariance_log"] = f.covariance;
    nlohmann::ordered_json residuals = nlohmann::ordered_json::array();
    for (size_t i = 0; i < f.row_ids.size(); ++i)
      residuals.push_back({{"id", f.row_ids[i]},
                           {"published", f.published[i]},
                           {"predicted", f.predicted[i]},
                           {"error_pct", error_pct(f.predicted[i], f.published[i])}});
    d["residuals"] = std::move(residuals);
    j["devices"].push_back(std::move(d));
  }
  j["rows"] = nlohmann::ordered_json::array();
  for (const auto& e : report.entries) {
    nlohmann::ordered_json r;
    r["id"] = e.row.id;
    r["device"] = e.device;
    r["published"] = e.row.value;
    r["in_sample"] = e.in_sample ? nlohmann::ordered_json(*e.in_sample) : nullptr;
    r["held_out"] = e.held_out ? nlohmann::ordered_json(*e.held_out) : nullptr;
    if (e.by_device) r["device_held_out"] = *e.by_device;
    if (!e.not_predicted.empty()) r["not_predicted"] = e.not_predicted;
    j["rows"].push_back(std::move(r));
  }
  return j.dump(2) + "\n";
}

std::string fit_device_yaml(const DeviceFit& f, const std::string& command) {
  std::string out = fmt::format("# {}: `{}`; rows {}; rms relative error {:.1f}%\n", f.device,
                                command, rows_list(f.row_ids), 100 * f.rms_relative_error);
  for (const auto& p : f.params) {
    std::string source = p.param.assumed_source + " (the rows do not constrain it)";
    if (p.constrained && p.param.shared)
      source = fmt::format(
          "M: fitted on rows {} (one value for the {} family; kvsim calibrate --fit; {})",
          rows_list(f.family_row_ids), f.family, spread(p));
    else if (p.constrained)
      source = fmt::format("M: fitted on rows {} (kvsim calibrate --fit; {})", rows_list(f.row_ids),
                           spread(p));
    out += fmt::format("{}: {{value: {}, source: \"{}\"}}\n", p.param.key, format_value(p), source);
  }
  return out;
}

}  // namespace kvsim
