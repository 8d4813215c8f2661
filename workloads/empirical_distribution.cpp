// Empirical distribution: every listed value equally likely, from an inline
// `values:` list or a CSV file (`path:`) with one value per line and an
// optional header line, e.g. the prompt lengths of a production trace.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/input_file.hpp"
#include "workloads/distribution_impl.hpp"
#include "workloads/trace_format.hpp"

namespace kvsim::detail {
namespace {

class EmpiricalDistribution final : public Distribution {
 public:
  explicit EmpiricalDistribution(std::vector<int64_t> values) : values_(std::move(values)) {
    std::sort(values_.begin(), values_.end());  // order-independent of the source file
    double sum = 0;
    for (int64_t v : values_) sum += static_cast<double>(v);
    mean_ = sum / static_cast<double>(values_.size());
  }
  std::string_view name() const override { return "empirical"; }
  double draw(Rng& rng) const override {
    const auto last = static_cast<int64_t>(values_.size()) - 1;
    return static_cast<double>(values_[static_cast<size_t>(rng.uniform_int(0, last))]);
  }
  double mean() const override { return mean_; }
  double support_min() const override { return static_cast<double>(values_.front()); }
  double support_max() const override { return static_cast<double>(values_.back()); }

 private:
  std::vector<int64_t> values_;
  double mean_ = 0;
};

// One CSV cell in the quantity's unit, or the reason it is not one.
ParsedQuantity parse_cell(std::string_view text, const QuantityRules& rules) {
  if (rules.kind == QuantityKind::duration) return parse_duration(text);
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size())
    return {std::nullopt, fmt::format("'{}' is not a whole number of tokens", text)};
  return {value, {}};
}

// Reads the values of a CSV file; problems are reported at FILE:LINE of the CSV.
std::vector<int64_t> read_csv(const config::Node& path_node, const std::string& file,
                              DistributionReader& reader) {
  auto& diagnostics = path_node.context().diagnostics;
  std::vector<int64_t> values;
  // A directory or a device (/dev/zero never ends a line) is refused unread.
  std::error_code ec;
  if (std::filesystem::exists(file, ec) && !std::filesystem::is_regular_file(file, ec)) {
    path_node.error(fmt::format("'{}' is not a regular file", file),
                    "a CSV file, relative to the YAML file's folder");
    return values;
  }
  std::string text;
  if (const std::string problem = read_input_file(file, text); !problem.empty()) {
    path_node.error(fmt::format("cannot read '{}': {}", file, problem),
                    "a CSV file, relative to the YAML file's folder");
    return values;
  }
  std::istringstream in(text);
  const int64_t cap =
      reader.rules().kind == QuantityKind::tokens ? kMaxTokensPerValue : kMaxDurationValue;
  std::string line;
  int line_number = 0;
  bool seen_first = false;
  int bad_lines = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (line_number == 1) strip_utf8_bom(line);
    const std::string_view cell = trim_cell(line);
    if (cell.empty()) continue;
    const ParsedQuantity q = parse_cell(cell, reader.rules());
    if (!seen_first) {
      seen_first = true;
      if (!q.value) continue;  // the optional header line
    }
    // Reports a bad line; stops after ten (a wrong file should not flood the report).
    auto bad_line = [&](std::string problem, std::string allowed) {
      diagnostics.error({file, line_number, 1}, path_node.path(), std::move(problem),
                        std::move(allowed));
      return ++bad_lines < 10;
    };
    if (!q.value) {
      if (!bad_line(q.problem, "one value per line, an optional header first")) return {};
      continue;
    }
    if (*q.value < 0 || *q.value > cap) {
      if (!bad_line(fmt::format("{} is out of range", cell), fmt::format("[0, {}]", cap)))
        return {};
      continue;
    }
    if (!reader.min_given() && *q.value < reader.rules().floor) {
      if (!bad_line(fmt::format("{} is below the minimum {}: {}", cell, reader.rules().floor,
                                reader.rules().floor_reason),
                    "larger values, or set `min` to clamp them explicitly"))
        return {};
      continue;
    }
    values.push_back(*q.value);
  }
  return values;
}

}  // namespace

config::ComponentInfo empirical_distribution_info() {
  config::ParamSpec values = config::section_param("values", false, "[v1, v2, ...]",
                                                   "the values, each equally likely (or `path`)");
  values.unit = config::kQuantityUnit;
  return {
      "distribution",
      "empirical",
      "every listed value equally likely: exactly one of `values` and `path`",
      {values, config::optional_param(config::string_param(
                   "path", std::nullopt,
                   "a CSV file, one value per line, optional header; relative to the YAML file"))}};
}

std::unique_ptr<Distribution> parse_empirical(DistributionReader& reader) {
  const config::Node values_node = reader.map().child("values");  // values: [v1, v2, ...]
  const config::Node path_node = reader.map().child("path");      // path: CSV, one value per line
  if (values_node.defined() == path_node.defined()) {
    reader.node().error("needs exactly one of `values` and `path`",
                        "values: [128, 256, 512] or path: lengths.csv");
    return nullptr;
  }
  const size_t errors_before = reader.node().context().diagnostics.size();
  std::vector<int64_t> values;
  if (values_node.defined()) {
    for (const config::Node& item : values_node.items()) {
      const auto v = read_whole_amount(item, reader.rules());
      if (v && reader.check_floor(*v, item, "value")) values.push_back(*v);
    }
  } else if (const auto path = path_node.as_string()) {
    // A relative path is relative to the YAML file that names it, so a
    // scenario and its data move together.
    std::filesystem::path file(*path);
    if (file.is_relative()) file = std::filesystem::path(path_node.file()).parent_path() / file;
    values = read_csv(path_node, file.lexically_normal().string(), reader);
  }
  if (reader.node().context().diagnostics.size() != errors_before) return nullptr;
  if (values.empty()) {
    (values_node.defined() ? values_node : path_node).error("has no values", "at least one value");
    return nullptr;
  }
  return std::make_unique<EmpiricalDistribution>(std::move(values));
}

}  // namespace kvsim::detail
