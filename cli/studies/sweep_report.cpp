#include "cli/studies/sweep_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "cli/studies/sweep_chart.hpp"
#include "reports/html_page.hpp"
#include "reports/output_dir.hpp"
#include "sim/core/metrics.hpp"

namespace kvsim {
namespace {
using Json = nlohmann::ordered_json;

constexpr const char* kThroughput = "throughput.output_tokens_per_s";
constexpr const char* kTtft = "latency_ms.ttft.p99";
constexpr const char* kTpot = "latency_ms.tpot.p99";
constexpr const char* kRateKey = "workload.arrival.rate_per_s";

std::vector<std::string> table_headers(const SweepSpec& spec) {
  std::vector<std::string> h = {"variant"};
  for (const auto& k : sweep_axis_keys(spec)) h.push_back(k);
  h.insert(h.end(), {"status", "reason", "devices"});
  for (const auto& m : spec.metrics) h.push_back(m);
  h.push_back("message");
  return h;
}

std::vector<std::vector<std::string>> table_rows(const SweepSpec& spec, const SweepResult& r) {
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < r.variants.size(); ++i) {
    const auto& v = r.variants[i];
    const auto& o = r.outcomes[i];
    std::vector<std::string> row = {fmt::format("{}", v.index)};
    row.insert(row.end(), v.axis_values.begin(), v.axis_values.end());
    row.push_back(o.status);
    row.push_back(o.reason);
    row.push_back(o.devices > 0 ? fmt::format("{}", o.devices) : "");
    for (const auto& m : spec.metrics) row.push_back(metric_cell(o.metrics, m));
    row.push_back(o.message);
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string csv_text(const SweepSpec& spec, const SweepResult& r) {
  std::string out;
  const auto line = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) {
      if (i > 0) out += ',';
      out += csv_cell(cells[i]);
    }
    out += "\n";
  };
  line(table_headers(spec));
  for (const auto& row : table_rows(spec, r)) line(row);
  return out;
}

std::string json_text(const SweepSpec& spec, const SweepResult& r) {
  Json doc;
  doc["sweep"] = spec.name;
  doc["base"] = spec.base;
  doc["set"] = spec.sets;
  doc["axes"] = sweep_axis_keys(spec);
  doc["metrics"] = spec.metrics;
  Json variants = Json::array();
  const auto keys = sweep_axis_keys(spec);
  for (size_t i = 0; i < r.variants.size(); ++i) {
    const auto& v = r.variants[i];
    const auto& o = r.outcomes[i];
    Json j;
    j["index"] = v.index;
    j["label"] = v.label;
    Json values;
    for (size_t k = 0; k < keys.size(); ++k) values[keys[k]] = v.axis_values[k];
    j["values"] = values;
    j["status"] = o.status;
    j["reason"] = o.reason;
    j["devices"] = o.devices;
    j["folder"] = "variants/" + variant_folder_name(v.index);
    Json metrics = Json::object();
    for (const auto& m : spec.metrics)
      if (auto x = metric_value(o.metrics, m)) metrics[m] = *x;
    j["metrics"] = metrics;
    j["message"] = o.message;
    variants.push_back(std::move(j));
  }
  doc["variants"] = variants;
  return doc.dump(2) + "\n";
}

// Variants grouped by every axis but the rate, each group a curve along the
// rate: x throughput, y the latency key. Empty when the rate is not an axis.
std::vector<XySeries> rate_curves(const SweepSpec& spec, const SweepResult& r,
                                  const std::string& latency_key) {
  const auto keys = sweep_axis_keys(spec);
  const auto rate = std::find(keys.begin(), keys.end(), kRateKey);
  if (rate == keys.end()) return {};
  const size_t rate_col = static_cast<size_t>(rate - keys.begin());
  std::map<std::string, size_t> group_of;
  std::vector<std::vector<std::pair<double, size_t>>> members;
  std::vector<XySeries> out;
  for (size_t i = 0; i < r.variants.size(); ++i) {
    if (r.outcomes[i].metrics.is_null()) continue;
    std::string label;
    for (size_t k = 0; k < keys.size(); ++k)
      if (k != rate_col) {
        if (!label.empty()) label += ' ';
        label += r.variants[i].axis_values[k];
      }
    auto [it, fresh] = group_of.emplace(label, out.size());
    if (fresh) {
      out.push_back({label.empty() ? "base" : label, {}, {}, true});
      members.emplace_back();
    }
    members[it->second].push_back({std::stod(r.variants[i].axis_values[rate_col]), i});
  }
  for (size_t g = 0; g < out.size(); ++g) {
    std::sort(members[g].begin(), members[g].end());
    for (const auto& [rate_value, i] : members[g]) {
      out[g].x.push_back(metric_value(r.outcomes[i].metrics, kThroughput).value_or(0));
      out[g].y.push_back(metric_value(r.outcomes[i].metrics, latency_key).value_or(0));
    }
  }
  return out;
}

const char* kSortScript = R"(
// Click a heading to sort by it; numbers sort as numbers, again to reverse.
document.querySelectorAll('table.sortable th').forEach((th, col) => {
  th.style.cursor = 'pointer';
  th.addEventListener('click', () => {
    const table = th.closest('table');
    const rows = Array.from(table.querySelectorAll('tr')).slice(1);
    const dir = th.dataset.dir === 'asc' ? -1 : 1;
    th.dataset.dir = dir > 0 ? 'asc' : 'desc';
    const key = r => r.children[col].textContent;
    rows.sort((a, b) => {
      const x = key(a), y = key(b), nx = parseFloat(x), ny = parseFloat(y);
      if (!isNaN(nx) && !isNaN(ny)) return dir * (nx - ny);
      return dir * x.localeCompare(y);
    });
    rows.forEach(r => table.appendChild(r));
  });
});
)";

std::string html_text(const SweepSpec& spec, const SweepResult& r) {
  std::string body = "<h1>Sweep " + html_escape(spec.name) + "</h1>\n";
  body += "<p>Base scenario <code>" + html_escape(spec.base) + "</code>; " +
          fmt::format("{} variants", r.variants.size()) +
          ". Every variant replays the base's request stream (same seed); its "
          "<code>expect</code> block is not checked.</p>\n";
  std::vector<ParetoPoint> points;
  XySeries all{"variants", {}, {}, false};
  for (size_t i = 0; i < r.outcomes.size(); ++i) {
    const auto& o = r.outcomes[i];
    const auto ttft = metric_value(o.metrics, kTtft);
    if (o.status != "ok" || !ttft) continue;
    points.push_back({i, throughput_per_device(o), *ttft});
    all.x.push_back(points.back().throughput_per_device);
    all.y.push_back(*ttft);
  }
  XySeries front{"Pareto front", {}, {}, true};
  std::string front_list;
  for (const auto& p : pareto_front(points)) {
    front.x.push_back(p.throughput_per_device);
    front.y.push_back(p.latency_ms);
    front_list += "<li>" + html_escape(r.variants[p.index].label) +
                  fmt::format(": {:.1f} tokens/s per device, TTFT p99 {:.1f} ms</li>\n",
                              p.throughput_per_device, p.latency_ms);
  }
  body += "<h2>Pareto front</h2>\n";
  body += render_xy_svg({"Throughput per device vs TTFT p99",
                         "output tokens/s per device",
                         "TTFT p99 (ms)",
                         {all, front}});
  body += "<ul>\n" + front_list + "</ul>\n";
  for (const char* key : {kTtft, kTpot}) {
    auto curves = rate_curves(spec, r, key);
    if (curves.empty()) continue;
    body += fmt::format("<h2>{} along the arrival rate</h2>\n", key);
    body += render_xy_svg({fmt::format("{} vs throughput, one curve per configuration", key),
                           "output tokens/s", std::string(key), std::move(curves)});
  }
  body += "<h2>Variants</h2>\n" + sortable_table_html(table_headers(spec), table_rows(spec, r));
  return html_document("kvsim sweep " + spec.name, body, {sortable_tables_script()});
}

std::string markdown_text(const SweepSpec& spec, const SweepResult& r) {
  std::string md = "# Sweep " + spec.name + "\n\n";
  md += "Base scenario `" + spec.base + "`, " + fmt::format("{} variants", r.variants.size());
  std::map<std::string, size_t> counts;
  for (const auto& o : r.outcomes) ++counts[o.status];
  for (const auto& [status, n] : counts) md += fmt::format(", {} {}", n, status);
  md += ". Each variant replays the base's request stream; `expect` is not checked.\n\n";
  md += markdown_table(table_headers(spec), table_rows(spec, r));
  return md;
}

}  // namespace

std::vector<ParetoPoint> pareto_front(std::vector<ParetoPoint> points) {
  // By falling throughput (then rising latency, then index): a point is on
  // the front when its latency beats every point before it.
  std::sort(points.begin(), points.end(), [](const ParetoPoint& a, const ParetoPoint& b) {
    if (a.throughput_per_device != b.throughput_per_device)
      return a.throughput_per_device > b.throughput_per_device;
    if (a.latency_ms != b.latency_ms) return a.latency_ms < b.latency_ms;
    return a.index < b.index;
  });
  std::vector<ParetoPoint> front;
  for (const auto& p : points)
    if (front.empty() || p.latency_ms < front.back().latency_ms) front.push_back(p);
  std::reverse(front.begin(), front.end());
  return front;
}

std::string metric_cell(const Json& metrics, const std::string& key) {
  const auto v = metric_value(metrics, key);
  return v ? fmt::format("{}", *v) : "";
}

double throughput_per_device(const VariantOutcome& o) {
  if (o.devices <= 0) return 0;
  return metric_value(o.metrics, kThroughput).value_or(0) / static_cast<double>(o.devices);
}

std::string sortable_table_html(const std::vector<std::string>& headers,
                                const std::vector<std::vector<std::string>>& rows) {
  std::string t = html_table(headers, rows);
  // html_table may wrap its <table> (a scrolling block): mark the table itself.
  if (const size_t at = t.find("<table"); at != std::string::npos)
    t.replace(at, 6, "<table class=\"sortable\"");
  return t;
}

const char* sortable_tables_script() {
  return kSortScript;
}

void write_sweep_files(const SweepSpec& spec, const SweepResult& r) {
  const std::string dir = r.folder + "/";
  write_file_atomically(dir + "sweep.csv", csv_text(spec, r));
  write_file_atomically(dir + "sweep.json", json_text(spec, r));
  write_file_atomically(dir + "sweep.md", markdown_text(spec, r));
  write_file_atomically(dir + "sweep.html", html_text(spec, r));
}

}  // namespace kvsim
