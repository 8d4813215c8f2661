#include "reports/run_charts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "reports/html_page.hpp"

namespace kvsim {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// One line over the run's buckets: `value` gives a bucket's y, or nullopt to
// leave the bucket out (no step in it, no lookup).
template <typename F>
ChartSeries bucket_series(const std::string& label, const RunSeries& run, F value) {
  ChartSeries s;
  s.label = label;
  const double width = run.bucket_width_s();
  const SeriesBucket* previous = nullptr;
  const auto& buckets = run.buckets();
  for (size_t i = 0; i < buckets.size(); ++i) {
    const std::optional<double> y = value(buckets[i], previous);
    if (buckets[i].any) previous = &buckets[i];
    if (!y) continue;
    s.x.push_back(static_cast<double>(i) * width);
    s.y.push_back(*y);
  }
  return s;
}

ChartSeries cumulative(ChartSeries s) {
  double sum = 0;
  for (double& y : s.y) {
    sum += y;
    y = sum;
  }
  return s;
}

}  // namespace

// A gauge: the bucket's maximum, or the last value before it when no row
// fell in it.
ChartSeries gauge_series(const std::string& label, const RunSeries& run, Gauge max_of,
                         Gauge last_of, double scale) {
  return bucket_series(
      label, run, [&](const SeriesBucket& b, const SeriesBucket* prev) -> std::optional<double> {
        if (b.any) return b.*max_of / scale;
        if (prev != nullptr) return (*prev).*last_of / scale;
        return std::nullopt;
      });
}

ChartSpec time_chart(std::string title, std::string y_label) {
  ChartSpec c;
  c.title = std::move(title);
  c.x_label = "simulated time (s)";
  c.y_label = std::move(y_label);
  return c;
}

ChartSpec kv_memory_chart(const std::vector<LabelledSeries>& runs,
                          std::optional<double> capacity_bytes) {
  ChartSpec c = time_chart("KV cache memory in use (per device)", "GiB");
  double end = 0;
  for (const auto& r : runs) {
    c.series.push_back(gauge_series(r.label, *r.series, &SeriesBucket::kv_used_max,
                                    &SeriesBucket::kv_used_last, kGiB));
    if (!c.series.back().x.empty()) end = std::max(end, c.series.back().x.back());
  }
  if (capacity_bytes && *capacity_bytes > 0) {
    const double cap = *capacity_bytes / kGiB;
    c.series.push_back({"pool capacity", {0.0, std::max(end, 1e-3)}, {cap, cap}, {}});
  }
  return c;
}

ChartSpec queue_chart(const std::vector<LabelledSeries>& runs) {
  ChartSpec c = time_chart("Queue length (peak within each interval)", "requests");
  c.kind = ChartSpec::Kind::steps;
  if (runs.size() == 1) {
    const RunSeries& r = *runs[0].series;
    c.series.push_back(
        gauge_series("running", r, &SeriesBucket::running_max, &SeriesBucket::running_last));
    c.series.push_back(
        gauge_series("waiting", r, &SeriesBucket::waiting_max, &SeriesBucket::waiting_last));
    ChartSeries swapped =
        gauge_series("swapped", r, &SeriesBucket::swapped_max, &SeriesBucket::swapped_last);
    if (std::any_of(swapped.y.begin(), swapped.y.end(), [](double v) { return v > 0; }))
      c.series.push_back(std::move(swapped));
  } else {
    c.title = "Waiting requests (peak within each interval)";
    for (const auto& r : runs)
      c.series.push_back(gauge_series(r.label, *r.series, &SeriesBucket::waiting_max,
                                      &SeriesBucket::waiting_last));
  }
  return c;
}

ChartSpec batch_size_chart(const std::vector<LabelledSeries>& runs) {
  ChartSpec c = time_chart("Batch size (mean sequences per step)", "sequences");
  for (const auto& r : runs)
    c.series.push_back(
        bucket_series(r.label, *r.series, [](const SeriesBucket& b, const SeriesBucket*) {
          return b.steps > 0 ? std::optional(b.step_seqs / b.steps) : std::nullopt;
        }));
  return c;
}

ChartSpec tokens_per_step_chart(const std::vector<LabelledSeries>& runs) {
  ChartSpec c = time_chart("Tokens per step (mean)", "tokens");
  for (const auto& r : runs)
    c.series.push_back(
        bucket_series(r.label, *r.series, [](const SeriesBucket& b, const SeriesBucket*) {
          return b.steps > 0 ? std::optional(b.step_tokens / b.steps) : std::nullopt;
        }));
  return c;
}

ChartSpec prefix_hit_rate_chart(const std::vector<LabelledSeries>& runs) {
  ChartSpec c = time_chart("Prefix-cache hit rate (tokens found / asked)", "hit rate");
  for (const auto& r : runs) {
    int64_t q0 = 0, h0 = 0;
    c.series.push_back(
        bucket_series(r.label, *r.series,
                      [&](const SeriesBucket& b, const SeriesBucket*) -> std::optional<double> {
                        if (!b.any || b.prefix_query_last <= q0) return std::nullopt;
                        const double rate = static_cast<double>(b.prefix_hit_last - h0) /
                                            static_cast<double>(b.prefix_query_last - q0);
                        q0 = b.prefix_query_last;
                        h0 = b.prefix_hit_last;
                        return rate;
                      }));
  }
  return c;
}

ChartSpec bytes_moved_chart(const std::vector<LabelledSeries>& runs) {
  ChartSpec c = time_chart("KV bytes moved by cache updates (cumulative)", "GiB");
  for (const auto& r : runs)
    c.series.push_back(cumulative(
        bucket_series(r.label, *r.series, [](const SeriesBucket& b, const SeriesBucket*) {
          return std::optional(b.bytes_moved / kGiB);
        })));
  return c;
}

ChartSpec pointer_updates_chart(const std::vector<LabelledSeries>& runs) {
  ChartSpec c = time_chart("Pointer updates (cumulative)", "updates");
  for (const auto& r : runs)
    c.series.push_back(cumulative(
        bucket_series(r.label, *r.series, [](const SeriesBucket& b, const SeriesBucket*) {
          return std::optional(b.pointer_updates);
        })));
  return c;
}

ChartSpec ttft_cdf_chart(const std::vector<LabelledSeries>& runs) {
  ChartSpec c;
  c.title = "TTFT CDF";
  c.x_label = "time to first token (ms)";
  c.y_label = "fraction of requests";
  for (const auto& r : runs) {
    ChartSeries s;
    s.label = r.label;
    r.series->ttft_ms().cdf(s.x, s.y);
    c.series.push_back(std::move(s));
  }
  return c;
}

ChartSpec tpot_cdf_chart(const std::vector<LabelledSeries>& runs) {
  ChartSpec c;
  c.title = "TPOT CDF";
  c.x_label = "time per output token (ms)";
  c.y_label = "fraction of requests";
  for (const auto& r : runs) {
    ChartSeries s;
    s.label = r.label;
    r.series->tpot_ms().cdf(s.x, s.y);
    c.series.push_back(std::move(s));
  }
  return c;
}

ChartSpec per_request_latency_chart(const RunSeries& run) {
  ChartSpec c;
  c.title = "Latency of each request, in completion order";
  c.x_label = "request (turn) number";
  c.y_label = "ms";
  ChartSeries ttft{"TTFT", {}, {}, {}}, e2e{"end to end", {}, {}, {}};
  const auto& points = run.request_points();
  for (size_t i = 0; i < points.size(); ++i) {
    ttft.x.push_back(static_cast<double>(i + 1));
    ttft.y.push_back(points[i].ttft_ms);
    e2e.x.push_back(static_cast<double>(i + 1));
    e2e.y.push_back(points[i].e2e_ms);
  }
  c.series = {ttft, e2e};
  return c;
}

ChartSpec per_request_ttft_chart(const std::vector<LabelledSeries>& runs) {
  ChartSpec c;
  c.title = "TTFT of each request, in completion order";
  c.x_label = "request (turn) number";
  c.y_label = "ms";
  for (const auto& r : runs) {
    ChartSeries s{r.label, {}, {}, {}};
    const auto& points = r.series->request_points();
    for (size_t i = 0; i < points.size(); ++i) {
      s.x.push_back(static_cast<double>(i + 1));
      s.y.push_back(points[i].ttft_ms);
    }
    c.series.push_back(std::move(s));
  }
  return c;
}

bool enough_for_cdf(const std::vector<LabelledSeries>& runs) {
  constexpr uint64_t kFewest = 30;
  return std::all_of(runs.begin(), runs.end(),
                     [](const LabelledSeries& r) { return r.series->completed() >= kFewest; });
}

ChartSpec turn_timeline_chart(const RunSeries& run) {
  // The turn to show: the first that waited for VTCM, else the second (it
  // starts from a cache the first left), else the first.
  const auto& spans = run.spans();
  int32_t turn = -1;
  for (const auto& s : spans)
    if (s.track == "vtcm_wait" && s.end_s > s.start_s) {
      turn = s.turn;
      break;
    }
  if (turn < 0) {
    const bool has_second =
        std::any_of(spans.begin(), spans.end(), [](const auto& s) { return s.turn == 1; });
    turn = has_second ? 1 : 0;
  }
  // Rows in the order a turn goes through them.
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"vtcm_wait", "VTCM wait"}, {"pass", "prefill"},        {"pass", "decode"},
      {"pass", "verify"},         {"kv_update", "KV update"}, {"kv_update", "variant switch"}};
  // From the turn's first span to the end of its 8th decode pass: the
  // prefill, the switch to AR-1 and the rhythm of decode and update, at a
  // scale where each can be seen (the rest of the turn repeats it).
  constexpr int kDecodePassesShown = 8;
  double t0 = -1, t1 = 0;
  int decodes = 0;
  for (const auto& s : spans) {
    if (s.turn != turn) continue;
    if (t0 < 0 || s.start_s < t0) t0 = s.start_s;
    if (decodes >= kDecodePassesShown) continue;
    t1 = std::max(t1, s.end_s);
    if (s.track == "pass" && s.name != "prefill") ++decodes;
  }
  ChartSpec c;
  c.kind = ChartSpec::Kind::spans;
  c.title = fmt::format("Turn {}: VTCM, passes and KV updates (up to its {}th decode pass)", turn,
                        kDecodePassesShown);
  c.x_label = "ms since the turn asked for VTCM";
  c.y_label = "";
  c.height = 280;
  // Spans closer than a pixel apart are drawn as one bar.
  const double join = std::max(0.0, (t1 - t0) * 1e3 / 1000.0);
  for (const auto& [track, name] : rows) {
    ChartSeries row;
    row.label = name;
    if (track == "vtcm_wait") row.label = "VTCM wait";
    for (const auto& s : spans) {
      if (s.turn != turn || s.track != track || s.name != name || s.start_s > t1) continue;
      const double a = (s.start_s - t0) * 1e3, b = (s.end_s - t0) * 1e3;
      if (!row.x.empty() && a - row.x_end.back() <= join) {
        row.x_end.back() = std::max(row.x_end.back(), b);
        continue;
      }
      row.x.push_back(a);
      row.x_end.push_back(std::max(std::min(b, (t1 - t0) * 1e3), a + join));
    }
    if (track == "vtcm_wait" || !row.x.empty()) {
      if (name == "prefill" || name == "decode" || name == "verify") row.label = name + " passes";
      c.series.push_back(std::move(row));
    }
  }
  return c;
}

ChartSpec bar_chart(const std::string& title, const std::string& y_label,
                    const std::vector<std::pair<std::string, double>>& bars) {
  ChartSpec c;
  c.kind = ChartSpec::Kind::bars;
  c.title = title;
  c.y_label = y_label;
  ChartSeries s;
  for (const auto& [label, value] : bars) {
    c.bar_labels.push_back(label);
    s.y.push_back(value);
  }
  c.series.push_back(std::move(s));
  return c;
}

bool chart_has_signal(const ChartSpec& chart) {
  for (const auto& s : chart.series) {
    if (std::any_of(s.y.begin(), s.y.end(), [](double v) { return v != 0; })) return true;
    if (!s.x_end.empty()) return true;
  }
  return false;
}

std::string render_figures_html(const std::vector<CaptionedChart>& charts,
                                ChartRenderer* renderer) {
  ChartRenderer own(renderer ? std::string() : find_gnuplot().value_or(std::string()));
  ChartRenderer& r = renderer ? *renderer : own;
  if (!r.available()) return html_charts_missing_note();
  std::vector<ChartSpec> specs;
  for (const auto& [chart, caption] : charts) specs.push_back(chart);
  const auto svgs = r.render(specs);
  std::string out = "<div class=\"charts\">\n";
  for (size_t k = 0; k < charts.size(); ++k)
    if (svgs[k]) out += html_figure(*svgs[k], charts[k].second);
  return out + "</div>\n";
}

}  // namespace kvsim
