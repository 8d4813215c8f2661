#pragma once
// The files of a sweep: sweep.csv and sweep.json (one row per variant in
// variant order: axis values, status, devices, the collected metrics,
// message), sweep.md for reviews and a self-contained sweep.html (Pareto
// chart of throughput per device against latency, latency-vs-throughput
// curves along the rate axis, a sortable table).
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "cli/studies/sweep.hpp"

namespace kvsim {

// A configuration's operating point for the Pareto front.
struct ParetoPoint {
  size_t index = 0;  // a variant index, a search probe: whatever the caller numbers
  double throughput_per_device = 0;
  double latency_ms = 0;
};

// The points no other point dominates (at least as much throughput per
// device and at most as much latency, better in one), by rising throughput.
// Ties keep the lower index.
std::vector<ParetoPoint> pareto_front(std::vector<ParetoPoint> points);

// A metrics.json value as a table cell: shortest exact form, "" when absent.
std::string metric_cell(const nlohmann::ordered_json& metrics, const std::string& key);

// output tokens/s per device (tensor ranks), 0 without metrics.
double throughput_per_device(const VariantOutcome& o);

// A sortable HTML table (click a heading): the page's script sorts numbers
// as numbers. Cells are escaped by html_table().
std::string sortable_table_html(const std::vector<std::string>& headers,
                                const std::vector<std::vector<std::string>>& rows);

// The script (once per page, at its end) that makes those tables sortable.
const char* sortable_tables_script();

void write_sweep_files(const SweepSpec& spec, const SweepResult& result);

}  // namespace kvsim
