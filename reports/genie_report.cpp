#include "reports/genie_report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kvsim {

std::string genie_summary_lines(const ScenarioSpec& s, const RunMetrics& m) {
  const auto& k = m.kv_cache;
  std::string out = fmt::format(
      "KV cache: Genie buffers {} (ctx_size {}, AR-1 holds {} tokens); peak used {}, mean {}\n",
      format_bytes(k.buffer_bytes), s.cache.ctx_size, k.capacity_tokens,
      format_bytes(k.peak_used_bytes), format_bytes(static_cast<Bytes>(k.mean_used_bytes)));
  out += fmt::format(
      "          moved {}, {} pointer updates, {} compactions, {} variant switches, {} rewinds, "
      "{} window-evicted tokens, {} context resets\n",
      format_bytes(k.bytes_moved), k.pointer_updates, k.compactions, k.variant_switches, k.rewinds,
      k.window_evicted_tokens, k.context_resets);
  out += fmt::format("          attention read {} columns, {} useful ({:.1f}%)\n",
                     k.attention_read_tokens, k.attention_useful_tokens,
                     k.attention_read_tokens > 0
                         ? 100.0 * static_cast<double>(k.attention_useful_tokens) /
                               static_cast<double>(k.attention_read_tokens)
                         : 0.0);
  out += fmt::format("memory: {} total, weights {}, KV buffers {}, VTCM {} (asked {})\n",
                     format_bytes(m.memory.device_bytes), format_bytes(m.memory.weights_bytes),
                     format_bytes(m.memory.kv_bytes), format_bytes(m.memory.vtcm_bytes),
                     format_bytes(m.vtcm.requested_bytes));
  for (const auto& session : m.sessions) {
    out +=
        fmt::format("  VTCM session {}: asked {}, granted {}, waited {:.2f} ms, {} runs\n",
                    session.name, format_bytes(session.vtcm_requested_bytes),
                    format_bytes(session.vtcm_granted_bytes), session.vtcm_wait_ms, session.runs);
  }
  return out;
}

std::string genie_report_markdown(const ScenarioSpec& s, const RunMetrics& m) {
  const auto& k = m.kv_cache;
  std::string out = "## Genie KV cache (seed 002)\n\n| item | value |\n| --- | ---: |\n";
  const auto row = [&out](const std::string& name, const std::string& value) {
    out += fmt::format("| {} | {} |\n", name, value);
  };
  row("policy", m.policy);
  row("ctx_size / AR variants",
      fmt::format("{} / {}", s.cache.ctx_size, fmt::join(s.cache.ar_variants, ", ")));
  row("buffer bytes", format_bytes(k.buffer_bytes));
  row("bytes moved by updates", format_bytes(k.bytes_moved));
  row("pointer updates", std::to_string(k.pointer_updates));
  row("compactions", std::to_string(k.compactions));
  row("variant switches", std::to_string(k.variant_switches));
  row("rewinds (speculative)", std::to_string(k.rewinds));
  row("window-evicted tokens", std::to_string(k.window_evicted_tokens));
  row("context resets", std::to_string(k.context_resets));
  row("attention columns read / useful",
      fmt::format("{} / {}", k.attention_read_tokens, k.attention_useful_tokens));
  row("session cache saved + restored", format_bytes(k.session_io_bytes));
  out +=
      "\n## VTCM sessions\n\n| session | asked | granted (smallest) | waited (ms) | runs |\n"
      "| --- | ---: | ---: | ---: | ---: |\n";
  for (const auto& session : m.sessions) {
    out +=
        fmt::format("| {} | {} | {} | {:.3f} | {} |\n", session.name,
                    format_bytes(session.vtcm_requested_bytes),
                    format_bytes(session.vtcm_granted_bytes), session.vtcm_wait_ms, session.runs);
  }
  return out + "\n";
}

}  // namespace kvsim
