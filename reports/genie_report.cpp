#include "reports/genie_report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>

#include "reports/html_page.hpp"
#include "reports/run_report_sections.hpp"
#include "sim/cache/llama_backend.hpp"
#include "sim/core/llama_bench_metrics.hpp"
#include "sim/genie/genie_metrics.hpp"

namespace kvsim {
namespace {

std::vector<std::string> genie_bytes_row(const std::string& name, Bytes b) {
  return {name, std::to_string(b), format_bytes(b)};
}

// The Genie buffers' context and variants the scenario's policy gives (a
// run the genie engine recorded is of a policy with them; none: 0, []).
struct Buffers {
  int64_t ctx = 0;
  std::vector<int64_t> variants;
  int64_t ctx_size() const { return ctx; }
  const std::vector<int64_t>& ar_variants() const { return variants; }
};
Buffers report_buffers_of(const ScenarioSpec& s) {
  const DeviceBufferContract* b = s.policy().device_buffers();
  return b != nullptr ? Buffers{b->ctx_size(), b->ar_variants()} : Buffers{};
}

}  // namespace

// llama-bench's genie_markdown table (tools/llama-bench/llama-bench.cpp,
// ggml-org/llama.cpp 0104b151: markdown_printer): model, size (GiB of
// weights), params (B), backend, ngl, test, and t/s as "mean ± std".
// ngl the layers whose KV is on the accelerator.
std::string llama_bench_table(const ScenarioSpec& s, const RunMetrics& m,
                              const LlamaBenchMetrics& bench) {
  const DeviceBufferContract* b = s.policy().device_buffers();
  int64_t ngl = s.model.num_hidden_layers;
  if (b != nullptr) {
    const int64_t split = b->shape(s.model, s.kv.dtype_bytes()).llama.n_gpu_layers;
    if (split >= 0) ngl = std::min(split, ngl);
  }
  // llama-bench prints the ggml backend's name: HTP for Hexagon, else the
  // backend the scenario resolves (CANN, CUDA, CPU).
  std::string backend = s.device.kind;
  if (b != nullptr && s.device.kind != "htp") {
    if (const auto r =
            resolve_llama_backend(b->shape(s.model, s.kv.dtype_bytes()).llama.backend, s.device))
      backend = std::string(llama_backend_name(*r));
  }
  for (char& c : backend) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::string out = "\n| model | size | params | backend | ngl | test | t/s |\n";
  out += "| --- | ---: | ---: | --- | ---: | ---: | ---: |\n";
  for (const auto& t : bench.tests) {
    const BenchRate r = bench_rate(t);
    out += fmt::format("| {} | {:.2f} GiB | {:.2f} B | {} | {} | {} | {:.2f} ± {:.2f} |\n", m.model,
                       static_cast<double>(s.model.weight_bytes()) / (1024.0 * 1024.0 * 1024.0),
                       static_cast<double>(s.model.parameter_count()) / 1e9, backend, ngl, t.name,
                       r.mean, r.stdev);
  }
  out += "\n";
  return out;
}

std::string genie_summary_lines(const ScenarioSpec& s, const RunMetrics& m) {
  const auto& k = m.kv_cache;
  const GenieRunMetrics& g = m.parts.get_or_zero<GenieRunMetrics>();
  std::string out = fmt::format(
      "KV cache: Genie buffers {} (ctx_size {}, AR-1 holds {} tokens); peak used {}, mean {}\n",
      format_bytes(g.buffer_bytes), report_buffers_of(s).ctx_size(), k.capacity_tokens,
      format_bytes(k.peak_used_bytes), format_bytes(static_cast<Bytes>(k.mean_used_bytes)));
  out += fmt::format(
      "          moved {}, {} pointer updates, {} compactions, {} variant switches, {} rewinds, "
      "{} window-evicted tokens, {} context resets\n",
      format_bytes(k.bytes_moved), k.pointer_updates, g.compactions, g.variant_switches, g.rewinds,
      k.window_evicted_tokens, g.context_resets);
  out += fmt::format("          attention read {} columns, {} useful ({:.1f}%)\n",
                     g.attention_read_tokens, g.attention_useful_tokens,
                     g.attention_read_tokens > 0
                         ? 100.0 * static_cast<double>(g.attention_useful_tokens) /
                               static_cast<double>(g.attention_read_tokens)
                         : 0.0);
  out += fmt::format("memory: {} total, weights {}, KV buffers {}, VTCM {} (asked {})\n",
                     format_bytes(m.memory.device_bytes), format_bytes(m.memory.weights_bytes),
                     format_bytes(m.memory.kv_bytes), format_bytes(g.vtcm_bytes),
                     format_bytes(g.vtcm.requested_bytes));
  for (const auto& session : g.sessions) {
    out +=
        fmt::format("  VTCM session {}: asked {}, granted {}, waited {:.2f} ms, {} runs\n",
                    session.name, format_bytes(session.vtcm_requested_bytes),
                    format_bytes(session.vtcm_granted_bytes), session.vtcm_wait_ms, session.runs);
  }
  if (const auto* bench = m.parts.find<LlamaBenchMetrics>(); bench && !bench->tests.empty())
    out += llama_bench_table(s, m, *bench);
  return out;
}

std::string genie_report_markdown(const ScenarioSpec& s, const RunMetrics& m) {
  const auto& k = m.kv_cache;
  const GenieRunMetrics& g = m.parts.get_or_zero<GenieRunMetrics>();
  std::string out = "## Genie KV cache (seed 002)\n\n| item | value |\n| --- | ---: |\n";
  const auto row = [&out](const std::string& name, const std::string& value) {
    out += fmt::format("| {} | {} |\n", name, value);
  };
  row("policy", m.policy);
  row("ctx_size / AR variants", fmt::format("{} / {}", report_buffers_of(s).ctx_size(),
                                            fmt::join(report_buffers_of(s).ar_variants(), ", ")));
  row("buffer bytes", format_bytes(g.buffer_bytes));
  row("bytes moved by updates", format_bytes(k.bytes_moved));
  row("pointer updates", std::to_string(k.pointer_updates));
  row("compactions", std::to_string(g.compactions));
  row("tensor registrations", std::to_string(g.tensor_registrations));
  row("attention mask bytes", format_bytes(g.mask_bytes));
  row("variant switches", std::to_string(g.variant_switches));
  row("rewinds (speculative)", std::to_string(g.rewinds));
  row("window-evicted tokens", std::to_string(k.window_evicted_tokens));
  row("context resets", std::to_string(g.context_resets));
  row("attention columns read / useful",
      fmt::format("{} / {}", g.attention_read_tokens, g.attention_useful_tokens));
  row("session cache saved + restored", format_bytes(g.session_io_bytes));
  out +=
      "\n## VTCM sessions\n\n| session | asked | granted (smallest) | waited (ms) | runs |\n"
      "| --- | ---: | ---: | ---: | ---: |\n";
  for (const auto& session : g.sessions) {
    out +=
        fmt::format("| {} | {} | {} | {:.3f} | {} |\n", session.name,
                    format_bytes(session.vtcm_requested_bytes),
                    format_bytes(session.vtcm_granted_bytes), session.vtcm_wait_ms, session.runs);
  }
  return out + "\n";
}

// A dialog on an HTP has no block pool: Genie's fixed buffers, what the
// update mode moved, and who held how much VTCM (seed 002).
std::string genie_tables_html(const ScenarioSpec& s, const RunMetrics& m) {
  const auto& k = m.kv_cache;
  const GenieRunMetrics& g = m.parts.get_or_zero<GenieRunMetrics>();
  std::string body = "<h2>KV cache (Genie buffers)</h2>\n";
  const double useful_share = g.attention_read_tokens > 0
                                  ? static_cast<double>(g.attention_useful_tokens) /
                                        static_cast<double>(g.attention_read_tokens)
                                  : 0.0;
  body += html_table({"metric", "value"},
                     {{"ctx_size / tokens held at most",
                       fmt::format("{} / {}", report_buffers_of(s).ctx_size(), k.capacity_tokens)},
                      {"buffer bytes", format_bytes(g.buffer_bytes)},
                      {"peak used", format_bytes(k.peak_used_bytes)},
                      {"bytes moved", format_bytes(k.bytes_moved)},
                      {"pointer updates", std::to_string(k.pointer_updates)},
                      {"compactions", std::to_string(g.compactions)},
                      {"variant switches", std::to_string(g.variant_switches)},
                      {"rewinds", std::to_string(g.rewinds)},
                      {"window-evicted tokens", std::to_string(k.window_evicted_tokens)},
                      {"context resets", std::to_string(g.context_resets)},
                      {"attention columns read / useful",
                       fmt::format("{} / {} ({:.1f}%)", g.attention_read_tokens,
                                   g.attention_useful_tokens, 100.0 * useful_share)}});
  body += "<h2>VTCM sessions</h2>\n";
  std::vector<std::vector<std::string>> sessions;
  for (const auto& session : g.sessions) {
    sessions.push_back({session.name, format_bytes(session.vtcm_requested_bytes),
                        format_bytes(session.vtcm_granted_bytes),
                        fmt::format("{:.2f}", session.vtcm_wait_ms), std::to_string(session.runs)});
  }
  body += html_table({"session", "asked", "granted (smallest)", "waited ms", "runs"}, sessions);
  body += "<h2>Memory</h2>\n";
  body +=
      html_table({"item", "bytes", ""}, {genie_bytes_row("device memory", m.memory.device_bytes),
                                         genie_bytes_row("weights", m.memory.weights_bytes),
                                         genie_bytes_row("KV buffers", m.memory.kv_bytes),
                                         genie_bytes_row("VTCM (the LLM's grant)", g.vtcm_bytes)});
  return body;
}

namespace {

std::string genie_summary_geometry(const ScenarioSpec& s) {
  return fmt::format("ctx_size {}", report_buffers_of(s).ctx_size());
}

std::string genie_html_geometry(const ScenarioSpec& s) {
  return fmt::format("in Genie buffers of ctx_size {}", report_buffers_of(s).ctx_size());
}

std::string genie_markdown(const ScenarioSpec& s, const RunMetrics& m, const PoolSizing& sizing) {
  (void)sizing;
  return fmt::format("| Genie KV buffers | {} | {} |\n\n", m.memory.kv_bytes,
                     format_bytes(m.memory.kv_bytes)) +
         genie_report_markdown(s, m);
}

std::string genie_html_tables(const ScenarioSpec& s, const RunMetrics& m,
                              const PoolSizing& sizing) {
  (void)sizing;
  return genie_tables_html(s, m);
}

// A dialog: one turn's passes, KV updates and VTCM wait; what the update
// mode moved and how many pointers it set over the run; each turn's
// latency (a dialog has too few turns for a CDF to say anything).
std::vector<CaptionedChart> genie_charts(const RunMetrics& m, const LabelledSeries& run) {
  const std::vector<LabelledSeries> runs = {run};
  std::vector<CaptionedChart> out;
  if (!run.series->spans().empty())
    out.push_back({turn_timeline_chart(*run.series),
                   "One turn: the wait for VTCM, the AR-n prefill passes, the variant switch, "
                   "the decode passes and the KV update after each"});
  out.push_back({kv_memory_chart(runs, static_cast<double>(
                                           m.parts.get_or_zero<GenieRunMetrics>().buffer_bytes)),
                 "KV held in the Genie buffers against their size"});
  out.push_back({bytes_moved_chart(runs), fmt::format("Bytes moved by the {} updates", m.policy)});
  out.push_back({pointer_updates_chart(runs), "registerPointerOffset calls"});
  if (run.series->completed() > 0) {
    if (!enough_for_cdf(runs)) {
      ChartSpec turns = per_request_latency_chart(*run.series);
      out.push_back({turns, "TTFT and end-to-end latency of each turn"});
    } else {
      out.push_back({ttft_cdf_chart(runs), "TTFT of completed turns"});
    }
  }
  return out;
}

}  // namespace

EngineReport genie_engine_report() {
  return {"genie",
          "passes",
          genie_summary_geometry,
          genie_html_geometry,
          genie_summary_lines,
          genie_markdown,
          genie_html_tables,
          genie_charts};
}

}  // namespace kvsim
