#pragma once
// `kvsim capacity` rows for kind: htp devices. A phone runs
// one user's dialog in Genie's fixed buffers (seed 002), not a paged pool, so
// an HTP row carries, at each context (= ctx_size):
//   buffer_bytes per update mode (shift_concat, pointer_shift, smart_mask),
//     genie_buffer_bytes() with the default AR variants [1, 32, 128] and
//     pointer_shift's default headroom (a 2x row);
//   whether weights + buffers fit the NPU session's address space, per mode,
//     and the shortfall (and the NPU sessions a split would need) when not.
// The paged columns keep their keys with these meanings: block_bytes and
// num_blocks 0 (no blocks), capacity_tokens = ctx_size - 1 (what an AR-1 pass
// holds), max_concurrent_seqs 1 (one user), max_context_tokens =
// min(ctx_size - 1, max_position_embeddings).
#include <string>
#include <vector>

#include "cli/studies/capacity_plan.hpp"
#include "devices/device_spec.hpp"
#include "models/model_spec.hpp"

namespace kvsim {

// The update modes an HTP row sizes, in column order.
inline const std::vector<std::string> kHtpCapacityModes = {"shift_concat", "pointer_shift",
                                                           "smart_mask"};

// Turns a row already filled with the device, model, dtype and context into
// an HTP row (a device with an htp: section, devices/family_htp.cpp).
void fill_htp_capacity_row(CapacityRow& row, const DeviceSpec& device, const ModelSpec& model);

// The Markdown table of the HTP rows (empty when there are none).
std::string capacity_genie_markdown(const std::vector<CapacityRow>& rows);

}  // namespace kvsim
