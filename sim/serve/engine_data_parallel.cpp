// A serving engine joins a data-parallel group (parallel.data with a MoE
// model, sim/cluster/cluster_run.cpp makes the groups).
#include <memory>

#include "sim/serve/serving_dp_rank.hpp"

namespace kvsim {

bool ServingEngine::join_data_parallel(DataParallelGroup* group, size_t rank) {
  if (group != nullptr && chain_ == nullptr) {
    dp_rank_obj_ = std::make_unique<DpRank>(*this);
    dp_ = group;
    dp_rank_ = rank;
    group->attach(rank, dp_rank_obj_.get());
    return true;
  }
  return false;
}

}  // namespace kvsim
