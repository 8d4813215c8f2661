#pragma once
// `kind: rag` (SPEC 5, seed 003): sys_prompt + "##" + chunk_1 + ... + "##" +
// question, chunks drawn from a corpus by Zipf popularity in random order.
#include <cstdint>
#include <memory>

#include "workloads/arrival.hpp"
#include "workloads/distribution.hpp"

namespace kvsim {

struct RagWorkloadSpec {
  int64_t requests = 0;
  std::shared_ptr<const ArrivalProcess> arrival;
  int64_t sys_prompt_tokens =
      0;                // shared by every request; 0: none (the prompt starts with a chunk)
  int64_t corpus = 0;   // documents; document 0 is the most popular
  double zipf_s = 1.0;  // popularity exponent: document d has weight 1/(d+1)^s
  std::shared_ptr<const ClampedDistribution> doc_rank;          // zipf over [0, corpus)
  std::shared_ptr<const ClampedDistribution> docs_per_request;  // distinct documents retrieved
  std::shared_ptr<const ClampedDistribution> chunk_tokens;      // a document's length
  std::shared_ptr<const ClampedDistribution> question_tokens;
  std::shared_ptr<const ClampedDistribution> output_tokens;
};

}  // namespace kvsim
