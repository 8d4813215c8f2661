#pragma once
// The step graph the timing model walks: its ops, their dependencies, and
// whether its layers may be skipped when they repeat.
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "devices/device_family.hpp"
#include "models/step_ops.hpp"

namespace kvsim {

// The step's ops as a graph over the device's engines, built once (its
// shape does not depend on the batch). Vertex ids are global program order:
// pre ops, layer 0..L-1, post ops.
struct StepGraph {
  std::vector<OpKind> kind_of;
  std::vector<std::pair<size_t, size_t>> edges;
  size_t n_pre = 0, n_layer = 0, layers = 0;
};

StepGraph build_step_graph(const StepDependencies& deps, size_t layers, const DeviceFamily& family);

// A topological order of the graph, reversed (Boost's output); throws on a
// cycle.
std::vector<size_t> reverse_topological_order(const StepGraph& g);

// Whether price() may skip identical layers (see TimingModel::longest_path):
// every edge runs forward in program order (so program order is itself a
// topological order and layers are contiguous ranges), each layer reads only
// itself and the layer before (layer 0 also pre ops), and post ops read only
// pre ops, the last layer and themselves. preds: sorted predecessors by
// program order.
bool is_layered(const StepGraph& g, const std::vector<std::vector<uint32_t>>& preds);

}  // namespace kvsim
