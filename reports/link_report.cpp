#include "reports/link_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "reports/html_page.hpp"
#include "sim/core/link_metrics.hpp"

namespace kvsim {
namespace {

// The links that carried something, busiest first (ties: by name, so the
// order is the same every run).
std::vector<const LinkMetrics*> busiest(const KvMovementMetrics& k) {
  std::vector<const LinkMetrics*> out;
  for (const LinkMetrics& l : k.links)
    if (l.transfers > 0) out.push_back(&l);
  std::sort(out.begin(), out.end(), [](const LinkMetrics* a, const LinkMetrics* b) {
    return a->busy != b->busy ? a->busy > b->busy : a->name < b->name;
  });
  return out;
}

std::string wait_phrase(const KvMovementMetrics& k) {
  return fmt::format(
      "requests waited for KV loads and stores {:.2f} ms p50, {:.2f} ms p99, "
      "{:.2f} ms max",
      k.request_wait_ms.p50, k.request_wait_ms.p99, k.request_wait_ms.max);
}

}  // namespace

std::string links_summary(const RunMetrics& m) {
  const KvMovementMetrics* k = m.find<KvMovementMetrics>();
  if (k == nullptr || k->links.empty()) return "";
  const std::vector<const LinkMetrics*> links = busiest(*k);
  std::string out =
      fmt::format("KV movement: {}; links (queueing delay per transfer in ms):\n", wait_phrase(*k));
  if (links.empty()) return out + "  no transfer crossed a link\n";
  out += fmt::format("  {:<34} {:>9} {:>11} {:>9} {:>6} {:>10} {:>10}\n", "link", "transfers",
                     "bytes", "busy s", "util", "delay p50", "delay p99");
  for (size_t i = 0; i < links.size() && i < kMaxSummaryLinks; ++i) {
    const LinkMetrics& l = *links[i];
    out += fmt::format("  {:<34} {:>9} {:>11} {:>9.3f} {:>6.3f} {:>10.3f} {:>10.3f}\n", l.name,
                       l.transfers, format_bytes(l.bytes), static_cast<double>(l.busy) / 1e9,
                       link_utilisation(l, m.sim.simulated_s), l.delay_p50_ms, l.delay_p99_ms);
  }
  if (links.size() > kMaxSummaryLinks)
    out += fmt::format("  ... {} more links in metrics.json (kv_movement.links)\n",
                       links.size() - kMaxSummaryLinks);
  return out;
}

std::string links_html(const RunMetrics& m) {
  const KvMovementMetrics* k = m.find<KvMovementMetrics>();
  if (k == nullptr || k->links.empty()) return "";
  std::string body = "<h2>Links</h2>\n";
  body += "<p>" + html_escape(wait_phrase(*k)) +
          ". Utilisation is a link's busy time (some transfer on the wire) over the "
          "simulated time; a transfer's queueing delay is its time taken less its time with "
          "the link to itself.</p>\n";
  std::vector<std::vector<std::string>> rows;
  for (const LinkMetrics* l : busiest(*k))
    rows.push_back({l->name, std::to_string(l->transfers), format_bytes(l->bytes),
                    fmt::format("{:.3f}", static_cast<double>(l->busy) / 1e9),
                    fmt::format("{:.3f}", link_utilisation(*l, m.sim.simulated_s)),
                    fmt::format("{:.3f}", l->delay_mean_ms), fmt::format("{:.3f}", l->delay_p50_ms),
                    fmt::format("{:.3f}", l->delay_p99_ms),
                    fmt::format("{:.3f}", l->delay_max_ms)});
  if (rows.empty()) return body + "<p>No transfer crossed a link.</p>\n";
  body += html_table({"link", "transfers", "bytes", "busy s", "utilisation", "delay mean ms",
                      "p50 ms", "p99 ms", "max ms"},
                     rows);
  return body;
}

}  // namespace kvsim
