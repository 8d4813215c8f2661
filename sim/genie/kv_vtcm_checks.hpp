#pragma once
// The scenario's cross-checks of `htp.kv_vtcm` (kv_vtcm_placement.hpp):
// the placement must fit the LLM's VTCM window and the model, the graph's
// need must fit the window, and the device must say how fast VTCM reads.
#include "base/reader.hpp"

namespace kvsim {

struct InstanceSpec;

void kv_vtcm_checks(const InstanceSpec& s, config::LoadContext& ctx);

}  // namespace kvsim
