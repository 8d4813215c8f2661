#include "workloads/conversation_history.hpp"

namespace kvsim {
namespace {

class ConversationHistory final : public WorkloadSource {
 public:
  explicit ConversationHistory(std::unique_ptr<WorkloadSource> turns) : turns_(std::move(turns)) {}

  std::optional<TimeNs> next_arrival() const override { return turns_->next_arrival(); }
  Request take() override {
    Request r = turns_->take();
    // llama-bench clears the cache before a run (llama_memory_clear): what
    // came before is not part of it.
    if (r.clear_context) history_.clear();
    std::vector<int32_t> prompt = history_;
    prompt.insert(prompt.end(), r.prompt.begin(), r.prompt.end());
    r.prompt = std::move(prompt);
    return r;
  }
  void on_complete(const Request& request, TimeNs now) override {
    // The next turn follows this one's prompt (the whole conversation) and reply.
    history_.assign(request.prompt.begin(), request.prompt.end());
    history_.insert(history_.end(), request.output.begin(), request.output.end());
    // llama-bench decodes no sampled token: a run's last token is never fed.
    if (request.bench && !request.output.empty()) history_.pop_back();
    turns_->on_complete(request, now);
  }
  bool exhausted() const override { return turns_->exhausted(); }
  int64_t skipped_records() const override { return turns_->skipped_records(); }
  size_t held_entries() const override { return turns_->held_entries(); }
  uint64_t taken() const override { return turns_->taken(); }

 private:
  std::unique_ptr<WorkloadSource> turns_;
  std::vector<int32_t> history_;
};

}  // namespace

std::unique_ptr<WorkloadSource> with_conversation_history(std::unique_ptr<WorkloadSource> turns) {
  return std::make_unique<ConversationHistory>(std::move(turns));
}

}  // namespace kvsim
