#include "cli/studies/compare_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "cli/studies/compare_writers.hpp"
#include "cli/studies/run_folder.hpp"
#include "reports/input_error.hpp"
#include "reports/output_dir.hpp"
#include "sim/scenario/invalid_combination.hpp"
#include "sim/scenario/metrics_document.hpp"
#include "sim/scenario/scenario.hpp"

namespace kvsim {
namespace {

[[noreturn]] void vary_error(const std::string& problem) {
  throw_input_error("--vary", "vary", problem, "KEY=V1,V2[,...]");
}

// Folder names keep letters, digits and . _ = - and replace the rest.
std::string folder_safe(const std::string& text) {
  std::string out;
  for (const char c : text) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '=' || c == '-';
    out += ok ? c : '_';
  }
  return out.substr(0, 100);
}

}  // namespace

VaryAxis parse_vary(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) vary_error(fmt::format("'{}' is not KEY=VALUES", text));
  VaryAxis axis{text.substr(0, eq), {}, {}};
  std::stringstream values(text.substr(eq + 1));
  std::string v;
  while (std::getline(values, v, ',')) {
    if (v.empty()) vary_error(fmt::format("'{}' has an empty value", text));
    axis.values.push_back(v);
  }
  if (axis.values.empty()) vary_error(fmt::format("'{}' has no values", text));
  return axis;
}

VaryAxis parse_named_variants(const std::vector<std::string>& texts) {
  const auto bad = [](const std::string& problem) {
    throw_input_error("--variant", "variant", problem, "\"LABEL: KEY=VALUE[; KEY=VALUE...]\"");
  };
  const auto trim = [](const std::string& t) {
    const size_t b = t.find_first_not_of(" \t"), e = t.find_last_not_of(" \t");
    return b == std::string::npos ? std::string() : t.substr(b, e - b + 1);
  };
  VaryAxis axis{"variant", {}, {}};
  for (const std::string& text : texts) {
    const size_t colon = text.find(':');
    const std::string label = colon == std::string::npos ? "" : trim(text.substr(0, colon));
    if (label.empty()) bad(fmt::format("'{}' has no label before ':'", text));
    if (std::find(axis.values.begin(), axis.values.end(), label) != axis.values.end())
      bad(fmt::format("the label '{}' is given twice", label));
    std::vector<std::string> sets;
    std::stringstream parts(text.substr(colon + 1));
    std::string part;
    while (std::getline(parts, part, ';')) {
      part = trim(part);
      if (part.empty()) continue;
      if (part.find('=') == std::string::npos || part.front() == '=')
        bad(fmt::format("'{}' in '{}' is not KEY=VALUE", part, text));
      sets.push_back(part);
    }
    if (sets.empty()) bad(fmt::format("'{}' sets no key", text));
    axis.values.push_back(label);
    axis.sets.push_back(std::move(sets));
  }
  return axis;
}

void check_vary_axes(const std::vector<VaryAxis>& axes) {
  double count = 1;
  std::string product;
  for (size_t i = 0; i < axes.size(); ++i) {
    for (size_t j = 0; j < i; ++j)
      if (axes[j].key == axes[i].key)
        vary_error(fmt::format("'{}' is varied twice; give its values in one --vary", axes[i].key));
    count *= static_cast<double>(axes[i].values.size());
    product += (product.empty() ? "" : " x ") + std::to_string(axes[i].values.size());
  }
  if (count > static_cast<double>(kMaxCompareVariants))
    throw_input_error(
        "--vary", "vary",
        fmt::format("{:.0f} variants ({}), more than a compare runs", count, product),
        fmt::format("at most {} variants; `kvsim sweep` runs larger grids", kMaxCompareVariants));
}

std::vector<CompareVariant> expand_variants(const std::vector<VaryAxis>& axes) {
  check_vary_axes(axes);
  std::vector<CompareVariant> out = {CompareVariant{}};
  for (const auto& axis : axes) {
    std::vector<CompareVariant> next;
    for (const auto& base : out) {
      for (size_t i = 0; i < axis.values.size(); ++i) {
        const std::string& value = axis.values[i];
        CompareVariant v = base;
        if (axis.sets.empty()) {
          const std::string assignment = axis.key + "=" + value;
          v.sets.push_back(assignment);
          v.label += (v.label.empty() ? "" : " ") + assignment;
          v.folder_name += (v.folder_name.empty() ? "" : "_") + assignment;
        } else {
          v.sets.insert(v.sets.end(), axis.sets[i].begin(), axis.sets[i].end());
          v.label += (v.label.empty() ? "" : " ") + value;
          v.folder_name += (v.folder_name.empty() ? "" : "_") + value;
        }
        v.short_label += (v.short_label.empty() ? "" : " ") + value;
        next.push_back(std::move(v));
      }
    }
    out = std::move(next);
  }
  for (size_t i = 0; i < out.size(); ++i) {
    const std::string& name = out[i].folder_name;
    out[i].folder = fmt::format("{:02}-{}", i + 1, folder_safe(name.empty() ? "base" : name));
    if (out[i].label.empty()) out[i].label = out[i].short_label = "base";
  }
  return out;
}

std::vector<CompareColumn> compare_columns(const CompareResult& r) {
  static const std::vector<CompareColumn> every = {
      {"latency_ms.ttft.p50", "TTFT p50 ms"},
      {"latency_ms.ttft.p99", "TTFT p99 ms"},
      {"latency_ms.tpot.p50", "TPOT p50 ms"},
      {"latency_ms.tpot.p99", "TPOT p99 ms"},
      {"latency_ms.e2e.p99", "E2E p99 ms"},
      {"throughput.output_tokens_per_s", "output tok/s"},
      {"throughput.requests_per_s", "req/s"},
      {"kv_cache.peak_used_bytes", "peak KV bytes"},
      {"kv_cache.prefix_hit_rate", "prefix hit rate"},
      {"kv_cache.chunk_hit_rate", "chunk hit rate"},
      {"reuse_quality.logits_mean_abs_diff", "logit mean |d|"},
      {"reuse_quality.kv_mean_abs_diff", "KV mean |d|"},
      {"reuse_quality.top1_agreement", "top-1 agreement"},
      {"kv_cache.bytes_moved", "bytes moved"},
      {"kv_cache.pointer_updates", "pointer updates"},
      {"kv_cache.swapped_bytes", "swapped bytes"},
      {"requests.preemptions", "preemptions"},
      {"requests.completed", "completed"},
      {"requests.rejected", "rejected"},
      {"latency_ms.itl.p50", "ITL p50 ms"},
      {"latency_ms.ttft.p95", "TTFT p95 ms"},
      {"goodput.requests_per_s", "goodput req/s"},
      {"vtcm.wait_ms", "VTCM wait ms"},
  };
  std::vector<nlohmann::ordered_json> docs;
  for (const auto& m : r.metrics) docs.push_back(metrics_to_json(m));
  std::vector<CompareColumn> columns;
  for (const CompareColumn& c : every)
    if (std::any_of(docs.begin(), docs.end(),
                    [&](const auto& d) { return metric_value(d, c.key).has_value(); }))
      columns.push_back(c);
  return columns;
}

std::vector<size_t> most_different_columns(const CompareResult& r, size_t count) {
  const auto columns = compare_columns(r);
  std::vector<nlohmann::ordered_json> docs;
  for (const auto& m : r.metrics) docs.push_back(metrics_to_json(m));
  std::vector<std::pair<double, size_t>> spread;
  for (size_t c = 0; c < columns.size(); ++c) {
    double lo = 0, hi = 0;
    bool first = true;
    for (const auto& d : docs) {
      const double v = std::abs(metric_value(d, columns[c].key).value_or(0.0));
      lo = first ? v : std::min(lo, v);
      hi = first ? v : std::max(hi, v);
      first = false;
    }
    if (hi == lo) continue;  // the same in every variant: nothing to show
    spread.push_back({lo > 0 ? hi / lo : std::numeric_limits<double>::infinity(), c});
  }
  std::stable_sort(spread.begin(), spread.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<size_t> out;
  for (size_t i = 0; i < spread.size() && out.size() < count; ++i) out.push_back(spread[i].second);
  return out;
}

std::vector<CompareRow> compare_rows(const CompareResult& r) {
  std::vector<CompareRow> rows;
  size_t ran = 0, rejected = 0;
  while (ran < r.variants.size() || rejected < r.rejected.size()) {
    const bool take_rejected =
        rejected < r.rejected.size() && (ran >= r.variants.size() || ran >= r.positions.size() ||
                                         r.rejected[rejected].position < r.positions[ran]);
    if (take_rejected) {
      rows.push_back({&r.rejected[rejected].variant, std::nullopt, &r.rejected[rejected].reason});
      ++rejected;
    } else {
      rows.push_back({&r.variants[ran], ran, nullptr});
      ++ran;
    }
  }
  return rows;
}

CompareResult run_compare(const std::string& scenario_path, const std::vector<std::string>& sets,
                          const std::vector<VaryAxis>& axes, const std::string& out,
                          const std::function<void(size_t, const std::string&)>& progress,
                          bool force) {
  CompareResult result;
  const std::vector<CompareVariant> grid = expand_variants(axes);
  std::vector<ScenarioSpec> specs;
  std::optional<InvalidCombination> first_rejected;
  for (size_t i = 0; i < grid.size(); ++i) {
    std::vector<std::string> all = sets;
    all.insert(all.end(), grid[i].sets.begin(), grid[i].sets.end());
    try {
      specs.push_back(load_scenario(scenario_path, all));
    } catch (const InvalidCombination& e) {
      // Valid values that do not go together: this variant's row says why.
      std::string reason;
      for (const auto& d : e.diagnostics())
        reason += (reason.empty() ? "" : "; ") + d.key_path + ": " + d.problem;
      result.rejected.push_back({i, grid[i], reason.empty() ? e.what() : reason});
      if (!first_rejected) first_rejected = e;
      continue;
    }
    result.variants.push_back(grid[i]);
    result.positions.push_back(i);
  }
  if (specs.empty()) {
    // Nothing to compare: the first variant's problem is the grid's.
    std::vector<config::Diagnostic> d = first_rejected->diagnostics();
    if (grid.size() > 1 && !d.empty())
      d.front().problem += fmt::format("; none of the grid's {} variants can run", grid.size());
    throw InvalidCombination(std::move(d));
  }
  OutputDir dir(out, force);
  for (size_t i = 0; i < specs.size(); ++i) {
    if (progress) progress(result.positions[i], result.variants[i].label);
    const std::string folder = dir.file(result.variants[i].folder);
    RunFolderResult run = run_into_folder(specs[i], folder);
    result.metrics.push_back(std::move(run.metrics));
    result.series.push_back(std::move(run.series));
  }
  write_compare_files(dir, specs.front(), result, axes, sets);
  dir.commit();
  result.folder = dir.final_path();
  return result;
}

}  // namespace kvsim
