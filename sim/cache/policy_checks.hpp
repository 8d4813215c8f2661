#pragma once
// The checks each cache policy runs once the whole scenario is read
// (DESIGN practice 5: checks that need several values), listed beside the
// policy's parameters in policy_registry.cpp and called through
// run_cache_policy_checks(), never by name. Each problem points at the key
// the user most likely has to change.
#include "base/reader.hpp"

namespace kvsim {

struct ScenarioSpec;

// chunk_lru (seed 003): the two pools share the device
// (chunk_lru_policy_checks.cpp).
void chunk_lru_policy_checks(const ScenarioSpec& s, config::LoadContext& ctx);

// Every Genie update mode (seed 002): each AR variant leaves a cache dim
// (genie_policy_checks.cpp).
void genie_buffer_checks(const ScenarioSpec& s, config::LoadContext& ctx);
// pointer_shift: the buffer checks, and a headroom that takes a pass.
void pointer_shift_policy_checks(const ScenarioSpec& s, config::LoadContext& ctx);

// sliding_window: a window, no prefix caching over paged, its base's
// checks, and a window that fits the smallest cache dim of a Genie base
// (sliding_window_policy_checks.cpp).
void sliding_window_policy_checks(const ScenarioSpec& s, config::LoadContext& ctx);
// llama_cells: the Genie buffer checks, plus its types and context shift
// (llama_cells_policy_checks.cpp).
void llama_cells_policy_checks(const ScenarioSpec& s, config::LoadContext& ctx);

}  // namespace kvsim
