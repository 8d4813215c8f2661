#include "cli/studies/capacity_genie.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "reports/html_page.hpp"
#include "sim/policies/policy_registry.hpp"

namespace kvsim {

void fill_htp_capacity_row(CapacityRow& row, const DeviceSpec& device, const ModelSpec& model) {
  row.htp = true;
  const Bytes dtype = kv_dtype_bytes(row.kv_dtype);
  // Each mode at ctx_size = context, its other keys at their declared defaults.
  config::ParamValues at_context;
  at_context.set("ctx_size", row.context, true);
  const Bytes limit = device.htp ? device.htp->address_space_bytes : 0;
  row.address_space_bytes = limit;
  row.block_bytes = 0;
  row.num_blocks = 0;
  row.capacity_tokens = std::max<int64_t>(0, row.context - 1);
  row.max_concurrent_seqs = 1;
  row.max_context_tokens = std::min(row.capacity_tokens, model.max_position_embeddings);
  row.htp_buffers.clear();
  std::vector<std::string> over;
  Bytes smallest_total = 0;
  for (const std::string& mode : kHtpCapacityModes) {
    HtpModeCapacity c;
    c.mode = mode;
    c.buffer_bytes =
        make_policy_spec(mode, at_context)->device_buffers()->buffer_bytes(model, dtype);
    const Bytes total = row.weights_bytes + c.buffer_bytes;
    c.fits = limit <= 0 || total <= limit;
    c.shortfall_bytes = c.fits ? 0 : total - limit;
    if (!c.fits) over.push_back(fmt::format("{} by {}", mode, format_bytes(c.shortfall_bytes)));
    smallest_total = smallest_total == 0 ? total : std::min(smallest_total, total);
    row.htp_buffers.push_back(c);
  }
  // The row fits when at least one mode does (shift_concat and smart_mask
  // need the least: one ctx_size row per buffer).
  row.fits = limit <= 0 || smallest_total <= limit;
  row.shortfall_bytes = row.fits ? 0 : smallest_total - limit;
  row.npu_sessions_needed =
      limit <= 0 ? 1 : std::max<int64_t>(1, (smallest_total + limit - 1) / limit);
  if (row.budget_bytes > 0 && smallest_total > row.budget_bytes) {
    // The phone's LPDDR (memory x memory_fraction) binds before any split.
    row.fits = false;
    row.shortfall_bytes = smallest_total - row.budget_bytes;
    row.note = fmt::format(
        "does not fit the phone's memory: weights {} + KV buffers {} exceed {} by {}",
        format_bytes(row.weights_bytes), format_bytes(smallest_total - row.weights_bytes),
        format_bytes(row.budget_bytes), format_bytes(row.shortfall_bytes));
  } else if (!row.fits) {
    row.note = fmt::format(
        "does not fit the NPU address space {}: weights {} + KV buffers {} exceed it by {} "
        "(a split over {} NPU sessions holds it: htp.npu_sessions)",
        format_bytes(limit), format_bytes(row.weights_bytes),
        format_bytes(smallest_total - row.weights_bytes), format_bytes(row.shortfall_bytes),
        row.npu_sessions_needed);
  } else if (!over.empty()) {
    std::string list;
    for (const auto& o : over) list += (list.empty() ? "" : ", ") + o;
    row.note = "over the address space: " + list;
  } else if (row.context > model.max_position_embeddings) {
    row.note = fmt::format("context exceeds the model's max_position_embeddings {}",
                           model.max_position_embeddings);
  }
}

std::string capacity_genie_markdown(const std::vector<CapacityRow>& rows) {
  std::vector<std::vector<std::string>> cells;
  for (const auto& r : rows) {
    if (!r.htp) continue;
    std::vector<std::string> line = {r.device,
                                     r.model,
                                     r.kv_dtype,
                                     std::to_string(r.context),
                                     format_bytes(r.weights_bytes),
                                     format_bytes(r.kv_bytes_per_token)};
    for (const auto& c : r.htp_buffers)
      line.push_back(format_bytes(c.buffer_bytes) + (c.fits ? "" : " (over)"));
    line.push_back(format_bytes(r.address_space_bytes));
    line.push_back(r.fits ? r.note : "**" + r.note + "**");
    cells.push_back(std::move(line));
  }
  if (cells.empty()) return "";
  return "On-device (kind: htp) rows: Genie's fixed KV buffers per update mode at ctx_size = "
         "context (seed 002: 2 x layers x kv_heads x head_dim x columns x dtype, columns = "
         "ctx_size, 2 x ctx_size for pointer_shift, plus the AR-128 output buffer); weights + "
         "buffers must fit one NPU session's address space.\n\n" +
         markdown_table(
             {"device", "model", "kv", "ctx_size", "weights", "KV/token", "shift_concat buffers",
              "pointer_shift buffers", "smart_mask buffers", "address space", "note"},
             cells);
}

}  // namespace kvsim
