#include "sim/numerics/reuse_quality_probe.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>

#include "kernels/llama2_chunk_reuse.hpp"
#include "sim/core/metrics.hpp"
#include "sim/serve/sequence.hpp"
#include "workloads/rag_prompt.hpp"

namespace kvsim {
namespace {

// Token ids [1, vocab) of the run's model folded into [3, V) of the
// checkpoint's (0 <unk>, 1 BOS, 2 EOS in llama2.c's vocabulary); the
// separator's id 0 stays 0, so the segments stay where they were.
int32_t fold_token(int32_t id, int32_t vocab) {
  if (id == kChunkSeparatorToken) return kChunkSeparatorToken;
  return 3 + static_cast<int32_t>(static_cast<uint32_t>(id) % static_cast<uint32_t>(vocab - 3));
}

struct ProbePrompt {
  std::vector<std::vector<int32_t>> units;  // each segment before the question, with its separator
  std::vector<int32_t> question;
  int64_t kept = 0, original = 0;
};

// Every segment cut to its first ceil(scale x length) tokens (at least one),
// the scale chosen so the whole prompt fits `budget` positions.
ProbePrompt probe_prompt(const int32_t* ids, int64_t length, int64_t budget, int32_t vocab) {
  const std::vector<PromptSegment> segments = split_chunked_prompt(ids, length);
  const auto seps = static_cast<int64_t>(segments.size() - 1) * kChunkSeparatorLength;
  int64_t content = 0;
  for (const PromptSegment& s : segments) content += s.length;
  const int64_t room = budget - seps - 1 - static_cast<int64_t>(segments.size());  // BOS, rounding
  const double scale =
      content <= room ? 1.0 : static_cast<double>(std::max<int64_t>(room, 0)) / content;
  ProbePrompt p;
  p.original = length;
  for (size_t i = 0; i < segments.size(); ++i) {
    const int64_t keep = std::max<int64_t>(
        1, static_cast<int64_t>(std::floor(scale * static_cast<double>(segments[i].length))));
    std::vector<int32_t> unit;
    if (i == 0) unit.push_back(1);  // BOS
    for (int64_t t = 0; t < std::min(keep, segments[i].length); ++t)
      unit.push_back(fold_token(ids[segments[i].begin + t], vocab));
    if (i + 1 < segments.size()) {
      unit.insert(unit.end(), kChunkSeparator.begin(), kChunkSeparator.end());
      p.units.push_back(std::move(unit));
    } else {
      p.question = std::move(unit);
    }
  }
  for (const auto& u : p.units) p.kept += static_cast<int64_t>(u.size());
  p.kept += static_cast<int64_t>(p.question.size());
  return p;
}

void write_reuse_quality(const RunMetrics& m, nlohmann::ordered_json& doc) {
  const ReuseQualityMetrics* q = m.find<ReuseQualityMetrics>();
  if (q == nullptr || !doc.contains("numerics")) return;
  nlohmann::ordered_json o;
  o["checkpoint"] = q->checkpoint;
  o["requests"] = q->requests;
  o["prompt_scale"] = q->prompt_scale;
  o["kv_max_abs_diff"] = q->kv_max_abs_diff;
  o["kv_mean_abs_diff"] = q->kv_mean_abs_diff;
  o["logits_max_abs_diff"] = q->logits_max_abs_diff;
  o["logits_mean_abs_diff"] = q->logits_mean_abs_diff;
  o["generated"] = q->generated;
  o["top1_agreement"] = q->top1_agreement;
  o["recomputed_tokens"] = q->recomputed_tokens;
  MetricsObject(doc).after("numerics").put("reuse_quality", std::move(o));
}

}  // namespace

MetricsSection reuse_quality_metrics_section() {
  return {"reuse_quality", write_reuse_quality};
}

ReuseQualityProbe::ReuseQualityProbe(const std::string& checkpoint, int64_t requests,
                                     int64_t generated, const ReusePath& path)
    : weights_(kernels::load_llama2_checkpoint(checkpoint)),
      checkpoint_name_(std::filesystem::path(checkpoint).filename().string()),
      requests_(requests),
      generated_(generated),
      path_(path) {}

void ReuseQualityProbe::on_release(const Sequence& seq) {
  if (sums_.requests >= requests_) return;
  if (!probed_.insert(seq.request.id).second) return;  // released before (preempted)
  const TokenView tokens = seq.tokens();
  const kernels::Llama2Config& c = weights_.config;
  const ProbePrompt p =
      probe_prompt(tokens.prompt_ids(), tokens.prompt_len, c.seq_len - generated_, c.vocab_size);
  if (p.question.empty()) return;  // nothing after the last separator: no first logits
  kernels::ChunkReuseOptions o;
  o.block_size = path_.block_size;
  o.virtual_pos_start = path_.virtual_pos_start;
  o.attention = path_.attention;
  o.recompute_ratio = path_.recompute_ratio;
  o.generated_tokens = generated_;
  kernels::ChunkReuseResult r;
  try {
    if (path_.chunks) {
      r = kernels::chunk_reuse_logits(weights_, p.units, p.question, o);
    } else {
      std::vector<int32_t> prompt;
      for (const auto& u : p.units) prompt.insert(prompt.end(), u.begin(), u.end());
      prompt.insert(prompt.end(), p.question.begin(), p.question.end());
      // The hit, in the probe prompt's proportion (at least one token computed).
      const double scale = static_cast<double>(p.kept) / static_cast<double>(p.original);
      const auto cached = std::min<int64_t>(
          static_cast<int64_t>(std::floor(scale * static_cast<double>(seq.cached_tokens))),
          static_cast<int64_t>(prompt.size()) - 1);
      r = kernels::prefix_reuse_logits(weights_, prompt, cached, o);
    }
  } catch (const std::invalid_argument&) {
    return;  // more segments than the model's positions even cut down: not probed
  }
  ReuseQualityMetrics& s = sums_;
  ++s.requests;
  s.prompt_scale += static_cast<double>(p.kept) / static_cast<double>(p.original);
  s.kv_max_abs_diff = std::max(s.kv_max_abs_diff, r.kv_max_abs_diff);
  s.kv_mean_abs_diff += r.kv_mean_abs_diff;
  s.logits_max_abs_diff = std::max(s.logits_max_abs_diff, r.max_abs_diff);
  s.logits_mean_abs_diff += r.mean_abs_diff;
  s.generated += r.generated;
  s.recomputed_tokens += r.recomputed_tokens;
  agreements_ += r.top1_agreements;
}

void ReuseQualityProbe::report(RunMetrics& metrics) const {
  ReuseQualityMetrics q = sums_;
  q.checkpoint = checkpoint_name_;
  const double n = std::max<int64_t>(q.requests, 1);
  q.prompt_scale /= n;
  q.kv_mean_abs_diff /= n;
  q.logits_mean_abs_diff /= n;
  q.top1_agreement = q.generated > 0 ? static_cast<double>(agreements_) / q.generated : 0.0;
  metrics.part<ReuseQualityMetrics>() = q;
}

}  // namespace kvsim
