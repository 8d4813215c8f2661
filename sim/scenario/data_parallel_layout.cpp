#include "sim/scenario/data_parallel_layout.hpp"

#include <fmt/format.h>

#include <string>

namespace kvsim {
namespace {

std::string divisors_of(int64_t n) {
  std::string out;
  for (int64_t d = 1; d <= n; ++d) {
    if (n % d != 0) continue;
    if (!out.empty()) out += ", ";
    out += std::to_string(d);
    if (out.size() > 120) return out + ", ...";
  }
  return out;
}

bool has_moe_layers(const ModelSpec& m) {
  for (int64_t layer = 0; layer < m.num_hidden_layers; ++layer)
    if (m.is_moe_layer(layer)) return true;
  return false;
}

}  // namespace

void read_data_parallel_layout(InstanceSpec& s, std::optional<int64_t> devices, bool tensor_given,
                               bool expert_given, config::LoadContext& ctx) {
  auto at = [&](const std::string& key) { return ctx.location_of(key); };
  const int64_t pp = std::max<int64_t>(s.pp, 1);
  if (devices) {
    // The dies split into `data` equal ranks (vLLM gives every DP rank the
    // same tensor x pipeline group).
    if (*devices % s.dp != 0) {
      ctx.diagnostics.error(at("parallel.data"), "parallel.data",
                            fmt::format("{} data-parallel ranks do not divide the {} devices of "
                                        "parallel.devices",
                                        s.dp, *devices),
                            fmt::format("a divisor of {}: {}", *devices, divisors_of(*devices)));
      return;
    }
    const int64_t per_rank = *devices / s.dp;
    if (!tensor_given) {
      if (per_rank % pp != 0 || per_rank / pp > 64) {
        ctx.diagnostics.error(
            at("parallel.devices"), "parallel.devices",
            fmt::format("{} devices per data-parallel rank do not make {} pipeline stages of "
                        "at most 64",
                        per_rank, pp),
            "data x tensor x pipeline devices");
        return;
      }
      s.tp = per_rank / pp;
    } else if (s.dp * s.tp * pp != *devices) {
      ctx.diagnostics.error(
          at("parallel.tensor"), "parallel.tensor",
          fmt::format("{} data x {} tensor x {} pipeline is {} devices, not the "
                      "{} of parallel.devices",
                      s.dp, s.tp, pp, s.dp * s.tp * pp, *devices),
          fmt::format("{} (parallel.devices / parallel.data), or leave it out", per_rank / pp));
      return;
    }
  }
  s.devices = s.dp * s.tp * pp;
  if (s.dp == 1) return;
  // vLLM with enable_expert_parallel: the MoE layers' group is every rank
  // of every data-parallel replica (EP = DP x TP).
  const int64_t group = s.dp * s.tp;
  if (!has_moe_layers(s.model)) {
    if (expert_given && s.ep != 1)
      ctx.diagnostics.error(at("parallel.expert"), "parallel.expert",
                            fmt::format("model '{}' has no experts", s.model.name), "1");
    s.ep = 1;
    return;
  }
  if (!expert_given) {
    s.ep = group;
  } else if (s.ep != group) {
    ctx.diagnostics.error(at("parallel.expert"), "parallel.expert",
                          fmt::format("{} data-parallel ranks of tensor {} make an expert group "
                                      "of {} ranks (vLLM's enable_expert_parallel), not {}",
                                      s.dp, s.tp, group, s.ep),
                          fmt::format("{}, or leave it out", group));
  }
}

void data_parallel_checks(InstanceSpec& s, config::LoadContext& ctx) {
  auto at = [&](const std::string& key) { return ctx.location_of(key); };
  const int64_t node = s.device.max_tensor_parallel;
  if (s.pp > 1)
    ctx.diagnostics.error(at("parallel.pipeline"), "parallel.pipeline",
                          "pipeline stages under data-parallel ranks are not modelled", "1");
  if (!s.kv_tiers.empty())
    ctx.diagnostics.error(at("kv_tiers"), "kv_tiers",
                          "the data-parallel step barrier does not run tier loads", "no kv_tiers");
  // Ranks fill nodes in order: a rank's tensor group must not straddle two.
  if (s.devices > node && node % s.tp != 0)
    ctx.diagnostics.error(at("parallel.tensor"), "parallel.tensor",
                          fmt::format("{} devices per rank do not fill nodes of {} ({}) evenly, "
                                      "so a rank would span two nodes",
                                      s.tp, node, s.device.name),
                          fmt::format("a divisor of {}", node));
  if (s.ep > node) {
    s.ep_ranks_per_node = node;
    if (s.device.network_link_bandwidth <= 0)
      ctx.diagnostics.error(at("parallel.data"), "parallel.data",
                            fmt::format("{} ranks of the expert group span nodes of {} but {} "
                                        "gives no network_link_bandwidth for the all-to-all",
                                        s.ep, node, s.device.name),
                            fmt::format("at most {} devices, or a device file with "
                                        "network_link_bandwidth",
                                        node));
  }
}

}  // namespace kvsim
