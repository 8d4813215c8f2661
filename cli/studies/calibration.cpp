// The measurements reader, the dispatch of each row to its device kind's
// predictor, and the calibration report (`kvsim calibrate`).
#include "cli/studies/calibration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "base/diagnostics.hpp"
#include "base/input_file.hpp"
#include "reports/html_page.hpp"
#include "reports/output_dir.hpp"

namespace kvsim {
namespace {

struct CsvField {
  std::string text;
  int64_t col = 1;  // 1-based column of the field's first character
};

// Splits one CSV line (RFC 4180 quotes, "" inside quotes). Returns false on
// an unterminated quote, with `bad_col` at the opening quote.
bool split_csv_line(const std::string& line, std::vector<CsvField>& out, int64_t& bad_col) {
  out.clear();
  size_t i = 0;
  for (;;) {
    CsvField f;
    f.col = static_cast<int64_t>(i) + 1;
    if (i < line.size() && line[i] == '"') {
      const size_t open = i++;
      bool closed = false;
      while (i < line.size()) {
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            f.text += '"';
            i += 2;
            continue;
          }
          ++i;
          closed = true;
          break;
        }
        f.text += line[i++];
      }
      if (!closed) {
        bad_col = static_cast<int64_t>(open) + 1;
        return false;
      }
      while (i < line.size() && line[i] != ',') ++i;  // text after a closing quote: dropped
    } else {
      while (i < line.size() && line[i] != ',') f.text += line[i++];
    }
    out.push_back(std::move(f));
    if (i >= line.size()) return true;
    ++i;  // the comma
  }
}

class RowErrors {
 public:
  explicit RowErrors(std::string file) : file_(std::move(file)) {}
  void add(int64_t line, int64_t col, const std::string& key, std::string problem,
           std::string allowed, const std::string& file = {}) {
    config::Diagnostic d;
    d.where.file = file.empty() ? file_ : file;
    d.where.line = line;
    d.where.col = col;
    d.key_path = key;
    d.problem = std::move(problem);
    d.allowed = std::move(allowed);
    all_.push_back(std::move(d));
  }
  void throw_if_any() {
    if (!all_.empty()) throw config::ConfigError(std::move(all_));
  }

 private:
  std::string file_;
  std::vector<config::Diagnostic> all_;
};

// The unit each predicted metric is computed in, and the units a row may
// state it in with their factor to that unit: a published figure is
// converted once, here, and a unit that is not one of these is an error at
// its cell (a TTFT in seconds is not a TTFT in milliseconds).
struct MetricUnits {
  const char* prefix;  // the metric, or the start of its name (ttft_...)
  const char* unit;    // what the predictors produce
  std::vector<std::pair<std::string, double>> accepted;
};

const std::vector<MetricUnits>& metric_units() {
  static const std::vector<MetricUnits> table = {
      {"ttft", "ms", {{"ms", 1.0}, {"s", 1000.0}, {"us", 1e-3}}},
      {"decode_rate", "tokens/s", {{"tokens/s", 1.0}, {"tok/s", 1.0}, {"tokens/min", 1.0 / 60}}},
      {"output_throughput",
       "tokens/s",
       {{"tokens/s", 1.0}, {"tok/s", 1.0}, {"tokens/min", 1.0 / 60}}},
      {"request_throughput",
       "requests/s",
       {{"requests/s", 1.0}, {"req/s", 1.0}, {"requests/min", 1.0 / 60}}},
  };
  return table;
}

const MetricUnits* units_of(const std::string& metric) {
  for (const MetricUnits& m : metric_units()) {
    const std::string_view p(m.prefix);
    if (p == "ttft" ? metric.rfind("ttft", 0) == 0 : metric == p) return &m;
  }
  return nullptr;
}

const std::vector<std::string> kRequiredColumns = {"id",     "device", "model",
                                                   "metric", "value",  "unit"};
constexpr const char* kOptionalColumns =
    "weights,kv_dtype,context,batch,input_tokens,output_tokens,software,source,prefix_hit,"
    "arrival,pipeline,expert,data,speculative_method,num_speculative_tokens,acceptance,lengths,"
    "max_num_seqs,max_batched_tokens,memory_fraction,requests";

}  // namespace

std::string calibration_columns_text() {
  std::string all;
  for (const auto& n : kRequiredColumns) all += (all.empty() ? "" : ",") + n;
  return "needed: " + all + "; optional: " + kOptionalColumns;
}

std::vector<MeasurementRow> read_measurements(const std::string& path) {
  RowErrors errors(path);
  const char* allowed = "a CSV in the format of published_measurements.csv";
  // A directory or a device (/dev/zero reads forever) is refused before
  // reading.
  if (const std::string problem = input_file_problem(path); !problem.empty()) {
    errors.add(1, 1, "measurements", problem, allowed);
    errors.throw_if_any();
  }
  std::string contents;
  if (const std::string problem = read_input_file(path, contents); !problem.empty()) {
    errors.add(1, 1, "measurements", problem, allowed);
    errors.throw_if_any();
  }
  std::istringstream in(contents);
  std::string line;
  std::vector<CsvField> fields;
  int64_t bad_col = 0;
  std::map<std::string, size_t> column;  // name -> index
  if (!std::getline(in, line)) {
    errors.add(1, 1, "header", "the file is empty", "a header line naming the columns");
    errors.throw_if_any();
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  strip_utf8_bom(line);
  if (!split_csv_line(line, fields, bad_col)) {
    errors.add(1, bad_col, "header", "unterminated quote", "");
    errors.throw_if_any();
  }
  for (size_t i = 0; i < fields.size(); ++i) column[fields[i].text] = i;
  for (const auto& name : kRequiredColumns) {
    if (!column.count(name)) {
      errors.add(1, 1, name, "the header has no such column", calibration_columns_text());
    }
  }
  errors.throw_if_any();

  std::vector<MeasurementRow> rows;
  std::set<std::string> ids;
  int64_t line_no = 1;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;  // blank line
    if (!split_csv_line(line, fields, bad_col)) {
      errors.add(line_no, bad_col, "row", "unterminated quote", "");
      continue;
    }
    MeasurementRow row;
    row.line = line_no;
    auto cell = [&](const std::string& name) -> const CsvField* {
      const auto it = column.find(name);
      if (it == column.end() || it->second >= fields.size()) return nullptr;
      return &fields[it->second];
    };
    auto end_col = [&]() { return static_cast<int64_t>(line.size()) + 1; };
    auto text = [&](const std::string& name, std::string& out, bool required) {
      const CsvField* f = cell(name);
      if (f == nullptr) {
        if (required) errors.add(line_no, end_col(), name, "is missing (the row is too short)", "");
        return;
      }
      out = f->text;
      if (required && out.empty()) errors.add(line_no, f->col, name, "is empty", "");
    };
    auto count = [&](const std::string& name, std::optional<int64_t>& out) {
      const CsvField* f = cell(name);
      if (f == nullptr || f->text.empty()) return;
      size_t used = 0;
      long long v = 0;
      try {
        v = std::stoll(f->text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != f->text.size() || v < 1)
        errors.add(line_no, f->col, name, fmt::format("'{}' is not a whole number >= 1", f->text),
                   "a count, or empty");
      else
        out = v;
    };
    // A number in [0, 1) (or [0, 1] when one_included), or an empty cell.
    auto fraction = [&](const char* name, bool one_included, const char* what,
                        std::optional<double>& out) {
      const CsvField* f = cell(name);
      if (f == nullptr || f->text.empty()) return;
      size_t used = 0;
      double v = -1;
      try {
        v = std::stod(f->text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != f->text.size() || !(v >= 0.0 && (one_included ? v <= 1.0 : v < 1.0)))
        errors.add(line_no, f->col, name, fmt::format("'{}' is not {}", f->text, what),
                   one_included ? "a number in [0, 1], or empty" : "a number in [0, 1), or empty");
      else
        out = v;
    };
    text("id", row.id, true);
    text("device", row.device, true);
    text("model", row.model, true);
    text("metric", row.metric, true);
    text("unit", row.unit, true);
    text("weights", row.weights, false);
    text("kv_dtype", row.kv_dtype, false);
    text("software", row.software, false);
    text("source", row.source, false);
    count("context", row.context);
    count("batch", row.batch);
    count("input_tokens", row.input_tokens);
    count("output_tokens", row.output_tokens);
    fraction("prefix_hit", false, "a fraction", row.prefix_hit);
    if (const CsvField* f = cell("arrival"); f != nullptr && !f->text.empty()) {
      if (f->text != "closed" && f->text != "static_batch" && f->text != "all_at_once")
        errors.add(line_no, f->col, "arrival", fmt::format("'{}' is not an arrival", f->text),
                   "closed, static_batch, all_at_once, or empty (closed)");
      else
        row.arrival = f->text;
    }
    count("pipeline", row.pipeline);
    count("expert", row.expert);
    count("data", row.data);
    count("max_num_seqs", row.max_num_seqs);
    count("max_batched_tokens", row.max_batched_tokens);
    count("requests", row.requests);
    count("num_speculative_tokens", row.num_speculative_tokens);
    fraction("memory_fraction", true, "a fraction of the device", row.memory_fraction);
    if (row.memory_fraction && *row.memory_fraction == 0.0) {
      errors.add(line_no, cell("memory_fraction")->col, "memory_fraction",
                 "'0' leaves the engine no memory", "a number in (0, 1], or empty");
      row.memory_fraction.reset();
    }
    if (const CsvField* f = cell("speculative_method"); f != nullptr && !f->text.empty()) {
      // The methods the serving engine drafts with and the calibration runs
      // (a draft_model row would need a second model column).
      static const std::set<std::string> kMethods = {"mtp", "eagle", "eagle3", "ngram"};
      if (!kMethods.count(f->text))
        errors.add(line_no, f->col, "speculative_method",
                   fmt::format("'{}' is not a speculative method", f->text),
                   "mtp, eagle, eagle3, ngram, or empty (no speculation)");
      else
        row.speculative_method = f->text;
    }
    fraction("acceptance", true, "an acceptance rate", row.acceptance);
    {
      // Speculation is all three columns or none: a method without its K or
      // its acceptance cannot be run, and K or a rate alone means nothing.
      // (Cells given, valid or not: a bad one has its own error.)
      auto given_cell = [&](const char* name) {
        const CsvField* f = cell(name);
        return static_cast<int>(f != nullptr && !f->text.empty());
      };
      const int given = given_cell("speculative_method") + given_cell("num_speculative_tokens") +
                        given_cell("acceptance");
      if (given != 0 && given != 3) {
        const CsvField* f = cell("speculative_method");
        errors.add(line_no, f != nullptr ? f->col : end_col(), "speculative_method",
                   "speculation needs speculative_method, num_speculative_tokens and acceptance "
                   "together",
                   "all three, or all empty");
      }
    }
    if (const CsvField* f = cell("lengths"); f != nullptr && !f->text.empty()) {
      // The histograms replace the two length cells: both given would be
      // two workloads for one row.
      row.lengths = f->text;
      for (const char* name : {"input_tokens", "output_tokens"})
        if (const CsvField* g = cell(name); g != nullptr && !g->text.empty())
          errors.add(line_no, g->col, name, "is given beside a lengths file",
                     "input_tokens and output_tokens empty when lengths names a file");
      namespace fs = std::filesystem;
      const fs::path file = fs::path(f->text).is_absolute()
                                ? fs::path(f->text)
                                : fs::path(path).parent_path() / f->text;
      try {
        row.length_distribution = read_length_distribution(file.string());
      } catch (const config::ConfigError& e) {
        errors.add(line_no, f->col, "lengths", fmt::format("'{}' cannot be used", f->text),
                   "a lengths file relative to the CSV's folder (see below)");
        for (const config::Diagnostic& d : e.diagnostics())
          errors.add(d.where.line, d.where.col, d.key_path, d.problem, d.allowed, d.where.file);
      }
    }
    row.file = path;
    if (const CsvField* f = cell("value")) {
      size_t used = 0;
      double v = 0;
      try {
        v = std::stod(f->text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != f->text.size() || f->text.empty() || !(v > 0) || !std::isfinite(v))
        errors.add(line_no, f->col, "value", fmt::format("'{}' is not a number > 0", f->text),
                   "the published figure in the row's unit");
      else
        row.value = v;
    } else {
      errors.add(line_no, end_col(), "value", "is missing (the row is too short)", "");
    }
    if (const MetricUnits* units = units_of(row.metric); units != nullptr && !row.unit.empty()) {
      const auto it = std::find_if(units->accepted.begin(), units->accepted.end(),
                                   [&](const auto& u) { return u.first == row.unit; });
      if (it == units->accepted.end()) {
        std::string units_list;
        for (const auto& u : units->accepted)
          units_list += (units_list.empty() ? "" : ", ") + u.first;
        errors.add(line_no, cell("unit")->col, "unit",
                   fmt::format("'{}' is not a unit of {}", row.unit, row.metric), units_list);
      } else {
        row.value *= it->second;
        row.unit = units->unit;
      }
    }
    if (!row.id.empty() && !ids.insert(row.id).second)
      errors.add(line_no, cell("id")->col, "id", fmt::format("'{}' appears twice", row.id),
                 "unique row ids");
    rows.push_back(std::move(row));
  }
  errors.throw_if_any();
  return rows;
}

std::vector<MeasurementRow> read_measurements(const std::vector<std::string>& paths) {
  std::vector<MeasurementRow> all;
  std::map<std::string, const MeasurementRow*> seen;
  for (const std::string& p : paths) {
    for (MeasurementRow& r : read_measurements(p)) all.push_back(std::move(r));
  }
  std::vector<config::Diagnostic> problems;
  for (const MeasurementRow& r : all) {
    const auto [it, fresh] = seen.emplace(r.id, &r);
    if (fresh) continue;
    config::Diagnostic d;
    d.where.file = r.file;
    d.where.line = r.line;
    d.where.col = 1;
    d.key_path = "id";
    d.problem =
        fmt::format("'{}' is also a row of {} (line {})", r.id, it->second->file, it->second->line);
    d.allowed = "row ids unique over every file given";
    problems.push_back(std::move(d));
  }
  if (!problems.empty()) throw config::ConfigError(std::move(problems));
  return all;
}

std::string row_device_name(const MeasurementRow& row) {
  std::string name;
  for (const char c : row.device) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (name.empty()) continue;
      break;
    }
    name += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return name;
}

std::optional<Prediction> predict_row(const MeasurementRow& row, const std::string& configs_dir,
                                      const DeviceSpec* device) {
  std::optional<Prediction> p = predict_llamacpp_row(row, configs_dir, device);
  if (!p) p = predict_static_batch_row(row, configs_dir, device);
  if (!p) p = predict_ascend_row(row, configs_dir, device);
  if (!p) p = predict_htp_row(row, configs_dir, device);
  return p;
}

CalibrationReport calibrate_rows(const std::vector<MeasurementRow>& rows,
                                 const std::string& configs_dir, const std::string& measurements) {
  CalibrationReport report;
  report.measurements = measurements;
  std::vector<double> abs_errors;
  for (const MeasurementRow& row : rows) {
    CalibrationEntry e;
    e.row = row;
    try {
      e.prediction = predict_row(row, configs_dir);
      if (!e.prediction)
        e.not_predicted =
            fmt::format("no predictor for device '{}' and metric '{}'", row.device, row.metric);
    } catch (const std::exception& ex) {
      e.prediction.reset();
      e.not_predicted = ex.what();
    }
    if (e.prediction) {
      e.error_pct = (e.prediction->value - row.value) / row.value * 100.0;
      abs_errors.push_back(std::abs(*e.error_pct));
    }
    report.entries.push_back(std::move(e));
  }
  report.predicted = static_cast<int64_t>(abs_errors.size());
  if (!abs_errors.empty()) {
    std::sort(abs_errors.begin(), abs_errors.end());
    const size_t n = abs_errors.size();
    report.median_abs_error_pct =
        n % 2 == 1 ? abs_errors[n / 2] : (abs_errors[n / 2 - 1] + abs_errors[n / 2]) / 2.0;
    report.max_abs_error_pct = abs_errors.back();
  }
  return report;
}

namespace {

const std::vector<std::string> kHeader = {"id",        "device",    "model",   "metric",
                                          "published", "predicted", "error %", "unit"};

std::vector<std::vector<std::string>> table_cells(const CalibrationReport& report) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& e : report.entries) {
    const auto& r = e.row;
    rows.push_back({r.id, r.device, r.model + (r.weights.empty() ? "" : " " + r.weights), r.metric,
                    fmt::format("{:g}", r.value),
                    e.prediction ? fmt::format("{:.4g}", e.prediction->value) : "not predicted",
                    e.error_pct ? fmt::format("{:+.1f}", *e.error_pct) : "-", r.unit});
  }
  return rows;
}

std::string summary_line(const CalibrationReport& report) {
  if (report.predicted == 0) return fmt::format("0 of {} rows predicted", report.entries.size());
  return fmt::format("{} of {} rows predicted; absolute error median {:.1f}%, max {:.1f}%",
                     report.predicted, report.entries.size(), report.median_abs_error_pct,
                     report.max_abs_error_pct);
}

std::string csv_quote(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (const char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

std::string aligned_columns_text(const std::vector<std::string>& header,
                                 const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(header.size());
  for (size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size() && c < width.size(); ++c)
      width[c] = std::max(width[c], row[c].size());
  auto line = [&](const std::vector<std::string>& row) {
    std::string out;
    for (size_t c = 0; c < row.size(); ++c)
      out +=
          fmt::format("{:<{}}", row[c],
                      (c < width.size() ? width[c] : row[c].size()) + (c + 1 < row.size() ? 2 : 0));
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(header);
  for (const auto& row : rows) out += line(row);
  return out;
}

std::string calibration_table_text(const CalibrationReport& report) {
  std::string out = aligned_columns_text(kHeader, table_cells(report));
  for (const auto& e : report.entries)
    if (!e.prediction) out += fmt::format("  {}: not predicted: {}\n", e.row.id, e.not_predicted);
  return out + summary_line(report) + "\n";
}

std::string calibration_csv(const CalibrationReport& report) {
  std::string csv =
      "id,device,model,weights,metric,unit,published,predicted,error_pct,scenario,"
      "not_predicted\n";
  for (const auto& e : report.entries) {
    const auto& r = e.row;
    csv += fmt::format(
        "{},{},{},{},{},{},{:g},{},{},{},{}\n", csv_quote(r.id), csv_quote(r.device),
        csv_quote(r.model), csv_quote(r.weights), csv_quote(r.metric), csv_quote(r.unit), r.value,
        e.prediction ? fmt::format("{:.6g}", e.prediction->value) : "",
        e.error_pct ? fmt::format("{:.3f}", *e.error_pct) : "",
        csv_quote(e.prediction ? e.prediction->scenario : ""), csv_quote(e.not_predicted));
  }
  return csv;
}

std::string calibration_json_text(const CalibrationReport& report) {
  nlohmann::ordered_json j;
  j["measurements"] = report.measurements;
  j["error_definition"] = "(predicted - published) / published x 100";
  j["predicted_rows"] = report.predicted;
  j["median_abs_error_pct"] = report.median_abs_error_pct;
  j["max_abs_error_pct"] = report.max_abs_error_pct;
  j["rows"] = nlohmann::ordered_json::array();
  for (const auto& e : report.entries) {
    const auto& r = e.row;
    nlohmann::ordered_json row;
    row["id"] = r.id;
    row["device"] = r.device;
    row["model"] = r.model;
    row["weights"] = r.weights;
    row["metric"] = r.metric;
    row["unit"] = r.unit;
    row["published"] = r.value;
    row["source"] = r.source;
    if (e.prediction) {
      row["predicted"] = e.prediction->value;
      row["error_pct"] = *e.error_pct;
      row["scenario"] = e.prediction->scenario;
    } else {
      row["predicted"] = nullptr;
      row["not_predicted"] = e.not_predicted;
    }
    j["rows"].push_back(std::move(row));
  }
  return j.dump(2) + "\n";
}

std::string calibration_markdown(const CalibrationReport& report) {
  std::string md = fmt::format(
      "# Calibration: predicted vs published\n\nMeasurements: `{}`. Error = (predicted - "
      "published) / published. {}.\n\n",
      report.measurements, summary_line(report));
  md += markdown_table(kHeader, table_cells(report));
  md += "\n";
  for (const auto& e : report.entries) {
    if (e.prediction)
      md += fmt::format("- {}: {}\n", e.row.id, e.prediction->scenario);
    else
      md += fmt::format("- {}: not predicted: {}\n", e.row.id, e.not_predicted);
  }
  return md;
}

void write_calibration(const CalibrationReport& report, const std::string& out, bool force) {
  OutputDir dir(out, force);
  write_file_atomically(dir.file("calibration.csv"), calibration_csv(report));
  write_file_atomically(dir.file("calibration.json"), calibration_json_text(report));
  write_file_atomically(dir.file("calibration.md"), calibration_markdown(report));
  dir.commit();
}

}  // namespace kvsim
