// `kind: rag` (SPEC 5, seed 003): retrieval-augmented prompts
//   sys_prompt SEP doc_a SEP doc_b ... SEP question
// where SEP is the reserved separator kChunkSeparator (workloads/rag_prompt.hpp,
// seed 003's "##"), the documents are drawn without repetition from a corpus
// by Zipf popularity and put in random order, so the same document shows up
// at different positions in different requests (what defeats prefix caching
// and what chunk_lru is for).
//
// Content is real: a document's length and token ids are functions of (seed,
// document id) only, the system prompt's of the seed, a question's and a
// reply's of (seed, request index). Every token except the separator is drawn
// from [1, vocab): the separator (token 0) never appears by accident.
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "workloads/distribution_impl.hpp"
#include "workloads/rag_prompt.hpp"
#include "workloads/single_shot_source.hpp"
#include "workloads/workload_kinds.hpp"
#include "workloads/workload_params.hpp"

namespace kvsim::detail {
namespace {

constexpr int64_t kMaxCorpus = 100'000'000;
constexpr int64_t kMaxDocsPerRequest = 4096;

// Streams of this kind, numbered apart from the other kinds' (rng.hpp).
constexpr auto kDocRank = static_cast<RandomStream>(501);       // which documents a request gets
constexpr auto kDocCount = static_cast<RandomStream>(502);      // how many
constexpr auto kDocLength = static_cast<RandomStream>(503);     // a document's length
constexpr auto kDocTokens = static_cast<RandomStream>(504);     // a document's token ids
constexpr auto kSystemTokens = static_cast<RandomStream>(505);  // the system prompt's token ids
constexpr auto kQuestionLength = static_cast<RandomStream>(506);
constexpr auto kQuestionTokens = static_cast<RandomStream>(507);
constexpr auto kReplyTokens = static_cast<RandomStream>(508);

const RagWorkloadSpec& rag_of(const WorkloadSpec& spec) {
  return std::get<RagWorkloadSpec>(spec.body);
}

// Token ids in [1, vocab): id 0 is the separator.
void append_content(std::vector<int32_t>& out, uint64_t key, int64_t count, int64_t vocab) {
  const auto range = static_cast<uint64_t>(vocab - 1);
  for (int64_t i = 0; i < count; ++i)
    out.push_back(static_cast<int32_t>(1 + mix64(key ^ mix64(static_cast<uint64_t>(i))) % range));
}

void append_separator(std::vector<int32_t>& out) {
  out.insert(out.end(), kChunkSeparator.begin(), kChunkSeparator.end());
}

class RagSource final : public SingleShotSource {
 public:
  RagSource(RagWorkloadSpec spec, uint64_t seed, int64_t vocab_size)
      : SingleShotSource("rag", spec.requests, spec.arrival, seed, vocab_size),
        spec_(std::move(spec)) {
    if (vocab_size < 2)
      throw std::invalid_argument("kind: rag needs a vocabulary of at least 2 tokens");
  }

  // The documents of request `index` in prompt order: distinct, drawn by
  // popularity, then shuffled (Fisher-Yates) so order carries no popularity.
  std::vector<int64_t> documents_of(uint64_t index) const {
    const int64_t k = std::min(draw(*spec_.docs_per_request, kDocCount, index), spec_.corpus);
    Rng rng = Rng::keyed(seed(), kDocRank, index);
    std::vector<int64_t> docs;
    docs.reserve(static_cast<size_t>(k));
    auto taken = [&docs](int64_t d) {
      return std::find(docs.begin(), docs.end(), d) != docs.end();
    };
    // Rejection keeps the Zipf law among distinct documents; a steep law
    // over a small corpus can stall it, so after enough tries the most
    // popular documents not yet taken fill the rest (deterministically).
    for (int64_t tries = 0; static_cast<int64_t>(docs.size()) < k && tries < 64 * k; ++tries) {
      const int64_t d = spec_.doc_rank->sample(rng);
      if (!taken(d)) docs.push_back(d);
    }
    for (int64_t d = 0; static_cast<int64_t>(docs.size()) < k; ++d)
      if (!taken(d)) docs.push_back(d);
    for (size_t i = docs.size(); i > 1; --i)
      std::swap(docs[i - 1],
                docs[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(i) - 1))]);
    return docs;
  }

 private:
  // sys_prompt SEP doc SEP ... SEP question; the reply after it.
  void build(Request& request) const override {
    const uint64_t index = request.id;
    if (spec_.sys_prompt_tokens > 0) {
      append_content(request.prompt.mutable_ids(), stream_key(seed(), kSystemTokens, 0),
                     spec_.sys_prompt_tokens, vocab_size());
      append_separator(request.prompt.mutable_ids());
    }
    for (const int64_t doc : documents_of(index)) {
      const auto key = static_cast<uint64_t>(doc);
      append_content(request.prompt.mutable_ids(), stream_key(seed(), kDocTokens, key),
                     draw(*spec_.chunk_tokens, kDocLength, key), vocab_size());
      append_separator(request.prompt.mutable_ids());
    }
    append_content(request.prompt.mutable_ids(), stream_key(seed(), kQuestionTokens, index),
                   draw(*spec_.question_tokens, kQuestionLength, index), vocab_size());
    append_content(request.output.mutable_ids(), stream_key(seed(), kReplyTokens, index),
                   draw(*spec_.output_tokens, RandomStream::output_length, index), vocab_size());
  }

  RagWorkloadSpec spec_;
};

void parse_docs(const config::Node& node, RagWorkloadSpec& rag) {
  if (!node.defined()) {
    node.error("is required but missing",
               "{corpus: 1000, zipf: 1.1, per_request: 4, chunk_tokens: {dist: uniform, min: "
               "256, max: 1024}}");
    return;
  }
  config::MapReader docs(node);
  if (!docs.valid()) return;
  const config::ComponentInfo info = rag_docs_info();
  const config::ParamValues values = config::read_params(docs, info);
  rag.corpus = values.integer("corpus");
  // zipf: required, > 0 (its own reader)
  const config::ParamSpec& zipf = info.at("zipf");
  rag.zipf_s = 1.0;
  if (const config::Node s = docs.child(zipf.key); s.defined()) {
    if (auto v = s.as_double(zipf.min, zipf.max)) {
      if (*v <= 0) s.error(fmt::format("must be greater than 0, got {}", *v), "(0, 20]");
      rag.zipf_s = *v;
    }
  } else {
    node.context().diagnostics.error(node.location(), s.path(), "is required but missing",
                                     "a Zipf exponent such as 1.1");
  }
  // per_request: distinct documents per prompt (a number or a distribution)
  rag.docs_per_request = read_distribution(
      docs, "per_request", {QuantityKind::tokens, 1, "a RAG prompt retrieves at least 1 document"});
  // chunk_tokens: a document's length in tokens (fixed per document)
  rag.chunk_tokens = read_distribution(
      docs, "chunk_tokens", {QuantityKind::tokens, 1, "a document has at least 1 token"});
  docs.finish();
  if (rag.docs_per_request && rag.corpus > 0) {
    const int64_t most = rag.docs_per_request->upper_bound();
    if (most > std::min(rag.corpus, kMaxDocsPerRequest)) {
      const config::Node where = node.child_at("per_request");
      where.error(fmt::format("up to {} distinct documents per prompt but the corpus has {}", most,
                              rag.corpus),
                  fmt::format("at most min(corpus, {})", kMaxDocsPerRequest));
    }
  }
  if (rag.corpus > 0 && rag.zipf_s > 0) {
    rag.doc_rank = std::make_shared<const ClampedDistribution>(
        make_zipf(0, rag.corpus - 1, rag.zipf_s), 0, rag.corpus - 1);
  }
}

}  // namespace

config::ComponentInfo rag_docs_info() {
  using namespace config;
  return {"section",
          "workload.docs",
          "kind: rag: the corpus retrieval draws documents from (seed 003)",
          {int_param("corpus", std::nullopt, 1, kMaxCorpus, "documents",
                     "how many documents retrieval draws from"),
           own_reader(optional_param(number_param(
               "zipf", std::nullopt, 0.0, 20.0, "",
               "popularity exponent s > 0 (required); document d has weight 1/(d+1)^s"))),
           distribution_param("per_request", true, "documents",
                              "distinct documents per prompt (at most min(corpus, 4096))"),
           distribution_param("chunk_tokens", true, "tokens",
                              "a document's length (fixed per document)")}};
}

config::ComponentInfo rag_workload_info() {
  using namespace config;
  ComponentInfo info{"workload", "rag",
                     "sys_prompt SEP doc SEP ... SEP question, documents by Zipf popularity in "
                     "random order (seed 003)",
                     single_shot_params()};
  info.params.push_back(int_param("sys_prompt_tokens", 0, 0, kMaxTokensPerValue, "tokens",
                                  "the system prompt every request starts with (0: none)"));
  info.params.push_back(section_param("docs", true, "{corpus, zipf, per_request, chunk_tokens}",
                                      "the corpus and how prompts draw from it"));
  info.params.push_back(distribution_param("question_tokens", true, "tokens",
                                           "the user question after the last separator (>= 1)"));
  info.params.push_back(
      distribution_param("output_tokens", true, "tokens", "tokens each request generates (>= 1)"));
  return info;
}

void parse_rag_workload(config::MapReader& reader, WorkloadSpec& spec) {
  RagWorkloadSpec rag;
  const config::ParamValues values = config::read_params(reader, rag_workload_info());
  // requests, arrival: as every single-shot kind reads them
  read_requests_and_arrival(reader, values, rag);
  rag.sys_prompt_tokens = values.integer("sys_prompt_tokens");
  // docs: {corpus, zipf, per_request, chunk_tokens}
  parse_docs(reader.child("docs"), rag);
  // question_tokens: the user question after the last separator (>= 1)
  rag.question_tokens = read_distribution(
      reader, "question_tokens", {QuantityKind::tokens, 1, "a question has at least 1 token"});
  // output_tokens: tokens each request generates (>= 1)
  rag.output_tokens = read_distribution(reader, "output_tokens", output_length_rules());
  spec.body = std::move(rag);
}

std::unique_ptr<WorkloadSource> make_rag_source(const WorkloadSpec& spec, uint64_t seed,
                                                int64_t vocab_size) {
  return std::make_unique<RagSource>(rag_of(spec), seed, vocab_size);
}

WorkloadBounds rag_bounds(const WorkloadSpec& spec) {
  const RagWorkloadSpec& r = rag_of(spec);
  const int64_t sep = kChunkSeparatorLength;
  const int64_t sys = r.sys_prompt_tokens > 0 ? r.sys_prompt_tokens + sep : 0;
  const int64_t docs = r.docs_per_request->upper_bound() * (r.chunk_tokens->upper_bound() + sep);
  return {sys + docs + r.question_tokens->upper_bound(), r.output_tokens->upper_bound()};
}

std::vector<int64_t> rag_documents_of(const WorkloadSpec& spec, uint64_t seed, uint64_t index) {
  return RagSource(rag_of(spec), seed, 2).documents_of(index);
}

}  // namespace kvsim::detail
