// `kind: dialog` (SPEC 5, seed 002): one user talking to an on-device LLM.
// Turn 0 arrives at t = 0; turn t+1 arrives a think time after turn t
// completes (on_complete), as the user reads the reply before typing again.
// A turn's prompt is only its new user tokens: the conversation's history
// stays in the device's KV buffers between turns (Genie's dialog keeps
// n_past), so nothing is re-sent.
//
// Every length, think time and token of turn t is a pure function of
// (seed, t), so `kvsim compare` variants see the same conversation.
#include <fmt/format.h>

#include <stdexcept>

#include "workloads/workload_kinds.hpp"
#include "workloads/workload_params.hpp"

namespace kvsim::detail {
namespace {

constexpr int64_t kMaxTurns = 1'000'000;

const DialogWorkloadSpec& dialog_of(const WorkloadSpec& spec) {
  return std::get<DialogWorkloadSpec>(spec.body);
}

class DialogSource final : public WorkloadSource {
 public:
  DialogSource(DialogWorkloadSpec spec, uint64_t seed, int64_t vocab_size)
      : spec_(std::move(spec)), seed_(seed), vocabulary_(static_cast<uint64_t>(vocab_size)) {
    next_arrival_ = 0;
  }

  std::optional<TimeNs> next_arrival() const override { return next_arrival_; }

  Request take() override {
    if (!next_arrival_) throw std::logic_error("take() on a dialog source with no known arrival");
    const auto t = static_cast<int32_t>(taken_);
    Request request;
    request.id = taken_++;
    request.arrival = *next_arrival_;
    request.session = 1;
    request.turn = t;
    const int64_t prompt = dialog_prompt_length(spec_, seed_, t);
    const int64_t reply = dialog_reply_length(spec_, seed_, t);
    append_tokens(request.prompt, tokens(RandomStream::user_tokens, t), prompt);
    append_tokens(request.output, tokens(RandomStream::output_tokens, t), reply);
    next_arrival_.reset();  // known once this turn completes
    in_flight_ = true;
    return request;
  }

  void on_complete(const Request& request, TimeNs now) override {
    if (!in_flight_ || request.turn + 1 != static_cast<int32_t>(taken_)) {
      throw std::invalid_argument(
          fmt::format("on_complete: dialog turn {} completed, but turn {} is the one in flight",
                      request.turn, static_cast<int64_t>(taken_) - 1));
    }
    in_flight_ = false;
    if (static_cast<int64_t>(taken_) >= spec_.turns) return;
    TimeNs think = 0;  // no think_time: the next prompt follows the reply at once
    if (spec_.think_time)
      think = keyed_sample(*spec_.think_time, seed_, RandomStream::think_time, 0, taken_);
    next_arrival_ = now + think;
  }

  bool exhausted() const override {
    return !in_flight_ && !next_arrival_ && static_cast<int64_t>(taken_) >= spec_.turns;
  }
  size_t held_entries() const override { return 0; }
  uint64_t taken() const override { return taken_; }

 private:
  TokenStream tokens(RandomStream stream, int32_t t) const {
    return TokenStream(stream_key(seed_, stream, 0, static_cast<uint64_t>(t)), vocabulary_);
  }

  DialogWorkloadSpec spec_;
  uint64_t seed_;
  FastModulo vocabulary_;  // built once: each one costs a 128-bit divide
  uint64_t taken_ = 0;
  bool in_flight_ = false;
  std::optional<TimeNs> next_arrival_;
};

}  // namespace

int64_t dialog_prompt_length(const DialogWorkloadSpec& spec, uint64_t seed, int32_t turn) {
  return keyed_sample(*spec.prompt_tokens, seed, RandomStream::user_length, 0,
                      static_cast<uint64_t>(turn));
}

int64_t dialog_reply_length(const DialogWorkloadSpec& spec, uint64_t seed, int32_t turn) {
  return keyed_sample(*spec.reply_tokens, seed, RandomStream::output_length, 0,
                      static_cast<uint64_t>(turn));
}

config::ComponentInfo dialog_workload_info() {
  using namespace config;
  return {"workload",
          "dialog",
          "one user's turns on a phone NPU; the history stays in the device cache (seed 002)",
          {int_param("turns", std::nullopt, 1, kMaxTurns, "turns",
                     "how many turns the user takes (prompt, then reply)"),
           distribution_param("prompt_tokens", true, "tokens", "new user tokens per turn (>= 1)"),
           distribution_param("reply_tokens", true, "tokens",
                              "tokens the model generates per turn (>= 1)"),
           distribution_param("think_time", false, "time",
                              "from a reply's last token to the next prompt (absent: 0)"),
           section_param("speculative", false,
                         "{draft_tokens, acceptance_rate, drafter, draft_cost_per_token}",
                         "speculative decoding: drafts verified in one AR-n pass"),
           section_param("session_cache", false, "{restore, tokens, save}",
                         "restore a saved conversation first, save the cache last")}};
}

config::ComponentInfo speculative_info() {
  using namespace config;
  return {
      "section",
      "workload.speculative",
      "kind: dialog: each verify pass feeds the last token plus the drafts (seed 002)",
      {int_param("draft_tokens", std::nullopt, 1, 1024, "tokens", "drafted tokens per pass"),
       number_param("acceptance_rate", std::nullopt, 0.0, 1.0, "probability",
                    "chance the target accepts each draft, until the first rejection"),
       choice_param("drafter", "eagle_head", {"eagle_head", "prompt_lookup"},
                    "eagle_head: a one-layer EAGLE draft head priced as an AR-1 pass of one "
                    "target layer plus its LM head on the device; prompt_lookup: n-gram "
                    "drafts, free"),
       optional_param(duration_param("draft_cost_per_token", std::nullopt, 0, kNsPerS,
                                     "time to draft one token, replacing the drafter's own "
                                     "price (absent: the drafter's)")),
       own_reader(optional_param(int_list_param(
           "selected", std::nullopt, 0, 1, "entries",
           "tree drafts: 1 marks the verify pass's entries on the path the target walks (the "
           "first, the fed token, always; at most draft_tokens + 1 entries); each pass keeps "
           "the path's accepted prefix through dispatchUpdate's keep-mask (absent: a chain)")))}};
}

config::ComponentInfo session_cache_info() {
  using namespace config;
  return {"section",
          "workload.session_cache",
          "kind: dialog: Genie's dumpCache/loadCache at storage bandwidth (seed 002)",
          {bool_param("restore", false, "restore a saved conversation before the first turn"),
           own_reader(int_param("tokens", 0, 0, kMaxTokensPerValue, "tokens",
                                "tokens of the restored conversation (required, >= 1, with "
                                "restore: true)")),
           bool_param("save", false, "save the cache after the last turn")}};
}

void parse_dialog_workload(config::MapReader& reader, WorkloadSpec& spec) {
  auto& diagnostics = reader.node().context().diagnostics;
  const size_t errors_before = diagnostics.size();
  const config::ParamValues values = config::read_params(reader, dialog_workload_info());
  DialogWorkloadSpec dialog;
  dialog.turns = values.integer("turns");
  // prompt_tokens: new user tokens per turn (>= 1)
  dialog.prompt_tokens = read_distribution(
      reader, "prompt_tokens", {QuantityKind::tokens, 1, "a turn has at least 1 prompt token"});
  // reply_tokens: tokens the model generates per turn (>= 1)
  dialog.reply_tokens = read_distribution(reader, "reply_tokens", output_length_rules());
  // think_time: from a reply's last token to the next prompt (durations); default 0
  // (absent: the next prompt follows the reply at once)
  if (reader.has("think_time"))
    dialog.think_time = read_distribution(reader, "think_time", {QuantityKind::duration, 0, ""});
  else
    reader.ignore({"think_time"});
  // speculative: {draft_tokens, acceptance_rate, drafter, draft_cost_per_token}
  if (const config::Node node = reader.child("speculative"); node.defined()) {
    config::MapReader s(node);
    const config::ParamValues v = config::read_params(s, speculative_info());
    SpeculativeSpec spec_s;
    spec_s.draft_tokens = v.integer("draft_tokens");
    spec_s.acceptance_rate = v.number("acceptance_rate");
    spec_s.drafter =
        v.string("drafter") == "prompt_lookup" ? Drafter::prompt_lookup : Drafter::eagle_head;
    if (v.has("draft_cost_per_token"))
      spec_s.draft_cost_per_token = v.integer("draft_cost_per_token");
    // selected: the tree's path among the verify pass's entries (seed 002
    // dispatchUpdate keep-mask); no longer than the pass's update.
    if (const config::Node sel = s.child("selected"); sel.defined()) {
      for (const config::Node& item : sel.items())
        if (const auto bit = item.as_int(0, 1)) spec_s.selected.push_back(*bit);
      const auto entries = static_cast<int64_t>(spec_s.selected.size());
      if (entries > spec_s.draft_tokens + 1)
        sel.error(fmt::format("{} entries are longer than the update of a verify pass ({} drafts "
                              "+ the fed token = {} entries)",
                              entries, spec_s.draft_tokens, spec_s.draft_tokens + 1),
                  fmt::format("1..{} entries of 0 or 1", spec_s.draft_tokens + 1));
      else if (entries == 0 || spec_s.selected.front() != 1)
        sel.error("must start with 1: the fed token's entry is always kept",
                  "a list of 0 and 1 starting with 1");
    }
    s.finish();
    dialog.speculative = spec_s;
  }
  // session_cache: {restore, tokens, save}
  if (const config::Node node = reader.child("session_cache"); node.defined()) {
    config::MapReader c(node);
    const config::ComponentInfo info = session_cache_info();
    const config::ParamValues v = config::read_params(c, info);
    dialog.session_cache.restore = v.boolean("restore");
    // tokens: required (>= 1) with restore: true, meaningless without it
    const config::ParamSpec& t = info.at("tokens");
    const auto most = static_cast<int64_t>(t.max);
    if (dialog.session_cache.restore) {
      dialog.session_cache.tokens = c.integer(t.key, std::nullopt, 1, most);
    } else {
      dialog.session_cache.tokens = c.integer(t.key, info.default_of<int64_t>(t.key), 0, most);
      if (dialog.session_cache.tokens > 0)
        c.child(t.key).error("is set but restore is false", "restore: true, or drop tokens");
    }
    dialog.session_cache.save = v.boolean("save");
    c.finish();
  }
  if (diagnostics.size() != errors_before) return;
  spec.body = std::move(dialog);
}

std::unique_ptr<WorkloadSource> make_dialog_source(const WorkloadSpec& spec, uint64_t seed,
                                                   int64_t vocab_size) {
  return std::make_unique<DialogSource>(dialog_of(spec), seed, vocab_size);
}

WorkloadBounds dialog_bounds(const WorkloadSpec& spec) {
  const DialogWorkloadSpec& d = dialog_of(spec);
  // The prompt of one turn (the history is in the device cache, not
  // re-sent); +1 for the previous reply's last token, which no pass has fed
  // through the model yet and the next turn's prefill carries.
  return {d.prompt_tokens->upper_bound() + (d.turns > 1 ? 1 : 0), d.reply_tokens->upper_bound()};
}

}  // namespace kvsim::detail
