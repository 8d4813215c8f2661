// The files of `kvsim search`: search.json (candidates with their verdict
// and reason, probes), search.csv (one row per probe), search.md (the
// reasoning for reviews) and search.html (Pareto chart, latency curves along
// the rate ladder, sortable tables).
#include <fmt/format.h>

#include "cli/studies/search.hpp"
#include "cli/studies/sweep_chart.hpp"
#include "reports/html_page.hpp"
#include "reports/output_dir.hpp"
#include "sim/core/metrics.hpp"

namespace kvsim {
namespace {

// No choice is made when a probe failed for a reason other than the SLO.
std::string undetermined_text(const SearchResult& r) {
  return fmt::format(
      "Undetermined: {} probes failed ({} environment, {} internal), so no configuration is "
      "chosen and none is ruled out; `kvsim search` again once they can run.",
      r.failed_environment + r.failed_internal, r.failed_environment, r.failed_internal);
}
using Json = nlohmann::ordered_json;

constexpr const char* kProbeMetrics[] = {"throughput.output_tokens_per_s",
                                         "latency_ms.ttft.p90",
                                         "latency_ms.ttft.p99",
                                         "latency_ms.tpot.p90",
                                         "latency_ms.tpot.p99",
                                         "requests.rejected"};

std::string slo_text(const SearchSlo& s) {
  std::string t;
  const auto add = [&](const std::optional<double>& v, const char* name) {
    if (v) t += fmt::format("{}{} <= {} ms", t.empty() ? "" : ", ", name, *v);
  };
  add(s.ttft_p99_ms, "TTFT p99");
  add(s.tpot_p99_ms, "TPOT p99");
  add(s.ttft_p90_ms, "TTFT p90");
  add(s.tpot_p90_ms, "TPOT p90");
  return t;
}

std::vector<std::string> candidate_headers() {
  return {"candidate",     "configuration",       "devices", "best rate/s", "instances",
          "total devices", "tokens/s per device", "verdict"};
}

std::vector<std::vector<std::string>> candidate_rows(const SearchResult& r) {
  std::vector<std::vector<std::string>> rows;
  for (size_t c = 0; c < r.candidates.size(); ++c) {
    const auto& x = r.candidates[c];
    const bool met = x.best_rate.has_value();
    rows.push_back(
        {fmt::format("{}", c), x.variant.label, x.devices > 0 ? fmt::format("{}", x.devices) : "",
         met ? format_set_value(*x.best_rate, false) : "",
         met ? fmt::format("{}", x.instances) : "", met ? fmt::format("{}", x.total_devices) : "",
         met ? fmt::format("{:.1f}", x.best_throughput_per_device) : "", x.reason});
  }
  return rows;
}

std::vector<std::string> probe_headers() {
  std::vector<std::string> h = {"candidate", "configuration", "rate_per_s", "status", "meets_slo"};
  for (const char* k : kProbeMetrics) h.push_back(k);
  h.push_back("why");
  return h;
}

std::vector<std::vector<std::string>> probe_rows(const SearchResult& r) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : r.probes) {
    std::vector<std::string> row = {
        fmt::format("{}", p.candidate), r.candidates[p.candidate].variant.label,
        format_set_value(p.rate, false), p.outcome.status, p.meets ? "yes" : "no"};
    for (const char* k : kProbeMetrics) row.push_back(metric_cell(p.outcome.metrics, k));
    row.push_back(p.why);
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string csv_text(const SearchResult& r) {
  std::string out;
  const auto line = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) {
      const bool quote = cells[i].find_first_of(",\"\n") != std::string::npos;
      std::string cell = cells[i];
      if (quote) {
        std::string q = "\"";
        for (const char ch : cell) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
        cell = q + "\"";
      }
      if (i > 0) out += ',';
      out += cell;
    }
    out += "\n";
  };
  line(probe_headers());
  for (const auto& row : probe_rows(r)) line(row);
  return out;
}

std::string json_text(const SweepSpec& spec, const SearchResult& r) {
  Json doc;
  doc["search"] = spec.name;
  doc["base"] = spec.base;
  doc["slo"] = slo_text(spec.search->slo);
  doc["objective"] = spec.search->objective;
  doc["target_rate_per_s"] = r.target_rate;
  doc["chosen"] = r.chosen ? Json(r.candidates[*r.chosen].variant.label) : Json(nullptr);
  if (!r.per_device.empty()) {
    Json per = Json::array();
    for (const auto& p : r.per_device) {
      Json j;
      j["device"] = p.device;
      j["chosen"] = p.chosen ? Json(r.candidates[*p.chosen].variant.label) : Json(nullptr);
      j["total_devices"] = p.chosen ? Json(r.candidates[*p.chosen].total_devices) : Json(nullptr);
      per.push_back(std::move(j));
    }
    doc["per_device"] = per;
  }
  doc["undetermined"] = r.undetermined();
  doc["failed_probes"] = {{"environment", r.failed_environment}, {"internal", r.failed_internal}};
  Json cands = Json::array();
  for (const auto& c : r.candidates) {
    Json j;
    j["configuration"] = c.variant.label;
    j["devices"] = c.devices;
    j["best_rate_per_s"] = c.best_rate ? Json(*c.best_rate) : Json(nullptr);
    j["instances"] = c.instances;
    j["total_devices"] = c.total_devices;
    j["throughput_per_device"] = c.best_throughput_per_device;
    j["reason"] = c.reason;
    cands.push_back(std::move(j));
  }
  doc["candidates"] = cands;
  Json front = Json::array();
  for (const auto& p : r.front) {
    const auto& probe = r.probes[p.index];
    front.push_back({{"configuration", r.candidates[probe.candidate].variant.label},
                     {"rate_per_s", probe.rate},
                     {"throughput_per_device", p.throughput_per_device},
                     {"ttft_p99_ms", p.latency_ms}});
  }
  doc["pareto_front"] = front;
  return doc.dump(2) + "\n";
}

std::string summary_line(const SweepSpec& spec, const SearchResult& r) {
  return fmt::format("SLO {}; target {}/s; objective {}; {} candidates, {} probes run.",
                     slo_text(spec.search->slo), format_set_value(r.target_rate, false),
                     spec.search->objective, r.candidates.size(), r.probes.size());
}

std::string markdown_text(const SweepSpec& spec, const SearchResult& r) {
  std::string md = "# Search " + spec.name + "\n\n" + summary_line(spec, r) + "\n\n";
  md += r.chosen           ? "**Chosen:** " + r.candidates[*r.chosen].variant.label + "\n\n"
        : r.undetermined() ? undetermined_text(r) + "\n\n"
                           : std::string("**No configuration meets the SLO.**\n\n");
  for (const auto& p : r.per_device)
    md += fmt::format("- {}: {}\n", p.device, per_device_text(r, p));
  if (!r.per_device.empty()) md += "\n";
  md +=
      "Instances split the target rate evenly (no router is modelled). A candidate that "
      "does not load is not run; one that misses the SLO at a rate is not run higher.\n\n";
  md += "## Candidates\n\n" + markdown_table(candidate_headers(), candidate_rows(r));
  md += "\n## Probes\n\n" + markdown_table(probe_headers(), probe_rows(r));
  md += "\n## Pareto front (throughput per device vs TTFT p99, probes meeting the SLO)\n\n";
  for (const auto& p : r.front) {
    const auto& probe = r.probes[p.index];
    md += fmt::format("- {} at {}/s: {:.1f} tokens/s per device, TTFT p99 {:.1f} ms\n",
                      r.candidates[probe.candidate].variant.label,
                      format_set_value(probe.rate, false), p.throughput_per_device, p.latency_ms);
  }
  return md;
}

std::string html_text(const SweepSpec& spec, const SearchResult& r) {
  std::string body = "<h1>Search " + html_escape(spec.name) + "</h1>\n<p>" +
                     html_escape(summary_line(spec, r)) + "</p>\n";
  body += r.chosen ? "<p><strong>Chosen:</strong> " +
                         html_escape(r.candidates[*r.chosen].variant.label) + "</p>\n"
          : r.undetermined()
              ? "<p>" + html_escape(undetermined_text(r)) + "</p>\n"
              : std::string("<p><strong>No configuration meets the SLO.</strong></p>\n");
  XySeries met{"probes meeting the SLO", {}, {}, false}, front{"Pareto front", {}, {}, true};
  for (const auto& p : r.probes) {
    const auto ttft = metric_value(p.outcome.metrics, "latency_ms.ttft.p99");
    if (!p.meets || !ttft) continue;
    met.x.push_back(throughput_per_device(p.outcome));
    met.y.push_back(*ttft);
  }
  for (const auto& p : r.front) {
    front.x.push_back(p.throughput_per_device);
    front.y.push_back(p.latency_ms);
  }
  body += render_xy_svg({"Throughput per device vs TTFT p99",
                         "output tokens/s per device",
                         "TTFT p99 (ms)",
                         {met, front}});
  for (const char* key : {"latency_ms.ttft.p99", "latency_ms.tpot.p99"}) {
    std::vector<XySeries> curves;
    for (size_t c = 0; c < r.candidates.size(); ++c) {
      XySeries s{r.candidates[c].variant.label, {}, {}, true};
      for (const auto& p : r.probes) {
        if (p.candidate != c || p.outcome.metrics.is_null()) continue;
        s.x.push_back(
            metric_value(p.outcome.metrics, "throughput.output_tokens_per_s").value_or(0));
        s.y.push_back(metric_value(p.outcome.metrics, key).value_or(0));
      }
      if (!s.x.empty()) curves.push_back(std::move(s));
    }
    body += render_xy_svg({fmt::format("{} vs throughput along the rate ladder", key),
                           "output tokens/s", key, std::move(curves)});
  }
  body += "<h2>Candidates</h2>\n" + sortable_table_html(candidate_headers(), candidate_rows(r));
  body += "<h2>Probes</h2>\n" + sortable_table_html(probe_headers(), probe_rows(r));
  return html_document("kvsim search " + spec.name, body, {sortable_tables_script()});
}

}  // namespace

std::string per_device_text(const SearchResult& r, const SearchResult::PerDevice& p) {
  if (p.chosen)
    return fmt::format("{} ({} devices)", r.candidates[*p.chosen].variant.label,
                       r.candidates[*p.chosen].total_devices);
  return r.undetermined() ? "undetermined" : "none meets the SLO";
}

void write_search_files(const SweepSpec& spec, const SearchResult& r) {
  const std::string dir = r.folder + "/";
  write_file_atomically(dir + "search.csv", csv_text(r));
  write_file_atomically(dir + "search.json", json_text(spec, r));
  write_file_atomically(dir + "search.md", markdown_text(spec, r));
  write_file_atomically(dir + "search.html", html_text(spec, r));
}

}  // namespace kvsim
