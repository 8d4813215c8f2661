// `kind: chat`: sessions of several turns. Turn k's prompt is the system
// prompt, then every earlier turn's user tokens and output tokens, then turn
// k's new user tokens: it carries its history exactly, so a prefix cache can
// reuse the previous turn's blocks. Turn k+1 arrives a think time after turn k
// COMPLETES (on_complete), as a chat client waits for the reply before the
// user types again; until then its arrival is unknown.
//
// Every length, think time and token of session s, turn t is a pure function
// of (seed, s, t): the stream holds only the sessions in flight and rebuilds
// a prompt from its keys, and the content of a session does not depend on the
// order in which the engine completes other sessions.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <stdexcept>

#include "workloads/workload_kinds.hpp"
#include "workloads/workload_params.hpp"

namespace kvsim::detail {
namespace {

constexpr int64_t kMaxSessions = 1'000'000'000;

const ChatWorkloadSpec& chat_of(const WorkloadSpec& spec) {
  return std::get<ChatWorkloadSpec>(spec.body);
}

struct ChatSession {
  uint64_t index = 0;          // 0-based; Request::session is index + 1 (0 = no session)
  int32_t turns = 0;           // turns drawn for the session
  int32_t next_turn = 0;       // the turn that arrives next
  int64_t history_tokens = 0;  // system prompt + earlier turns' user and output tokens
  TimeNs arrival = 0;          // of next_turn, once known
};

// Earliest first; ties by session index, so a waiting turn of an older
// session goes before a new session starting at the same instant.
bool arrives_later(const ChatSession& a, const ChatSession& b) {
  if (a.arrival != b.arrival) return a.arrival > b.arrival;
  return a.index > b.index;
}

class ChatSource final : public WorkloadSource {
 public:
  ChatSource(ChatWorkloadSpec spec, uint64_t seed, int64_t vocab_size)
      : spec_(std::move(spec)), seed_(seed), vocabulary_(static_cast<uint64_t>(vocab_size)) {
    // The system prompt is the same for every turn of every session:
    // generated once, copied into each prompt.
    append_tokens(system_prompt_, tokens(RandomStream::system_tokens, 0, 0),
                  spec_.system_prompt_tokens);
    start_next_session();
  }

  std::optional<TimeNs> next_arrival() const override {
    const ChatSession* next = next_session();
    if (next == nullptr) return std::nullopt;
    return next->arrival;
  }

  Request take() override {
    const ChatSession* next = next_session();
    if (next == nullptr) throw std::logic_error("take() on a chat source with no known arrival");
    ChatSession session = *next;
    if (starting_ && next == &*starting_) {
      start_next_session();
    } else {
      std::pop_heap(waiting_.begin(), waiting_.end(), arrives_later);
      waiting_.pop_back();
    }

    const uint64_t s = session.index;
    const int32_t t = session.next_turn;
    Request request;
    request.id = taken_++;
    request.arrival = session.arrival;
    request.session = s + 1;
    request.turn = t;
    request.prefix_group = spec_.system_prompt_tokens > 0 ? 0 : -1;
    const int64_t user = user_length(s, t);
    const int64_t output = output_length(s, t);
    request.prompt.reserve(static_cast<size_t>(session.history_tokens + user));
    request.prompt.insert(request.prompt.end(), system_prompt_.begin(), system_prompt_.end());
    for (int32_t j = 0; j < t; ++j) {
      append_tokens(request.prompt, tokens(RandomStream::user_tokens, s, j), user_length(s, j));
      append_tokens(request.prompt, tokens(RandomStream::output_tokens, s, j), output_length(s, j));
    }
    append_tokens(request.prompt, tokens(RandomStream::user_tokens, s, t), user);
    request.output.reserve(static_cast<size_t>(output));
    append_tokens(request.output, tokens(RandomStream::output_tokens, s, t), output);

    // Whether a next turn exists is known now (lengths do not depend on
    // timing): a session without one is dropped at once, so exhausted() turns
    // true as soon as nothing more can come.
    session.history_tokens += user + output;
    session.next_turn = t + 1;
    if (session.next_turn < session.turns && fits(session)) {
      request.session_continues = true;
      awaiting_.emplace(s, session);
    }
    return request;
  }

  void on_complete(const Request& request, TimeNs now) override {
    if (request.session == 0) return;
    const auto it = awaiting_.find(request.session - 1);
    // The last turn of a session has no follow-up: nothing to do.
    if (it == awaiting_.end()) return;
    ChatSession session = it->second;
    if (request.turn + 1 != session.next_turn) {
      throw std::invalid_argument(
          fmt::format("on_complete: session {} turn {} completed, but turn {} is the one in flight",
                      request.session, request.turn, session.next_turn - 1));
    }
    awaiting_.erase(it);
    session.arrival = now + keyed_sample(*spec_.think_time, seed_, RandomStream::think_time,
                                         session.index, static_cast<uint64_t>(session.next_turn));
    waiting_.push_back(session);
    std::push_heap(waiting_.begin(), waiting_.end(), arrives_later);
  }

  bool exhausted() const override { return !starting_ && waiting_.empty() && awaiting_.empty(); }
  size_t held_entries() const override { return waiting_.size() + awaiting_.size(); }
  uint64_t taken() const override { return taken_; }

 private:
  int64_t user_length(uint64_t s, int32_t t) const {
    return keyed_sample(*spec_.user_tokens, seed_, RandomStream::user_length, s,
                        static_cast<uint64_t>(t));
  }
  int64_t output_length(uint64_t s, int32_t t) const {
    return keyed_sample(*spec_.output_tokens, seed_, RandomStream::output_length, s,
                        static_cast<uint64_t>(t));
  }
  TokenStream tokens(RandomStream stream, uint64_t s, int32_t t) const {
    return TokenStream(stream_key(seed_, stream, s, static_cast<uint64_t>(t)), vocabulary_);
  }
  // Whether the session's next turn (prompt + output) fits max_context_tokens.
  bool fits(const ChatSession& session) const {
    if (!spec_.max_context_tokens) return true;
    const int64_t needed = session.history_tokens + user_length(session.index, session.next_turn) +
                           output_length(session.index, session.next_turn);
    return needed <= *spec_.max_context_tokens;
  }

  // The earliest known arrival: the next session start or a waiting turn.
  const ChatSession* next_session() const {
    const ChatSession* best = starting_ ? &*starting_ : nullptr;
    if (!waiting_.empty() && (best == nullptr || arrives_later(*best, waiting_.front())))
      best = &waiting_.front();
    return best;
  }

  // Draws the next session's start. Session start times come from the
  // arrival process whether or not a session's first turn fits, so
  // max_context_tokens never moves the other sessions.
  void start_next_session() {
    starting_.reset();
    while (next_index_ < static_cast<uint64_t>(spec_.sessions)) {
      const uint64_t s = next_index_++;
      if (s > 0) {
        Rng arrival_rng = Rng::keyed(seed_, RandomStream::arrival, s);
        last_start_ = spec_.arrival->next_arrival(last_start_, s, arrival_rng);
      }
      ChatSession session;
      session.index = s;
      session.turns =
          static_cast<int32_t>(keyed_sample(*spec_.turns, seed_, RandomStream::session_turns, s));
      session.history_tokens = spec_.system_prompt_tokens;
      session.arrival = last_start_;
      if (fits(session)) {
        starting_ = session;
        return;
      }
    }
  }

  ChatWorkloadSpec spec_;
  uint64_t seed_;
  FastModulo vocabulary_;  // built once: each one costs a 128-bit divide
  std::vector<int32_t> system_prompt_;
  uint64_t taken_ = 0;
  uint64_t next_index_ = 0;                   // next session to draw
  TimeNs last_start_ = 0;                     // start of session next_index_ - 1 (session 0 at 0)
  std::optional<ChatSession> starting_;       // the next session to start, if any
  std::vector<ChatSession> waiting_;          // min-heap: next turn's arrival is known
  std::map<uint64_t, ChatSession> awaiting_;  // turn in flight, next turn unknown until done
};

}  // namespace

config::ComponentInfo chat_workload_info() {
  using namespace config;
  return {
      "workload",
      "chat",
      "sessions of several turns; each prompt carries the whole history",
      {int_param("sessions", std::nullopt, 1, kMaxSessions, "sessions",
                 "how many chat sessions start"),
       section_param("arrival", true, "{process: ..., ...}",
                     "when sessions start (poisson, gamma or constant; not closed)"),
       distribution_param("turns", true, "turns", "turns per session (>= 1)"),
       int_param("system_prompt_tokens", 0, 0, kMaxTokensPerValue, "tokens",
                 "shared by every session (a real shared prefix); 0 for none"),
       distribution_param("user_tokens", true, "tokens", "new user tokens of each turn (>= 1)"),
       distribution_param("output_tokens", true, "tokens", "tokens each turn generates (>= 1)"),
       distribution_param("think_time", true, "time",
                          "from a turn's completion to the next turn's arrival"),
       optional_param(int_param("max_context_tokens", std::nullopt, 1, kMaxTokensPerValue, "tokens",
                                "a session ends before a turn whose prompt + output exceeds "
                                "it"))}};
}

void parse_chat_workload(config::MapReader& reader, WorkloadSpec& spec) {
  auto& diagnostics = reader.node().context().diagnostics;
  const size_t errors_before = diagnostics.size();
  const config::ParamValues values = config::read_params(reader, chat_workload_info());
  ChatWorkloadSpec chat;
  chat.sessions = values.integer("sessions");
  // arrival: when sessions start {process: poisson | gamma | constant, rate_per_s, cv}
  chat.arrival = read_arrival(reader, "arrival");
  // turns: turns per session (>= 1)
  chat.turns = read_distribution(reader, "turns",
                                 {QuantityKind::tokens, 1, "a session has at least 1 turn"});
  chat.system_prompt_tokens = values.integer("system_prompt_tokens");
  // user_tokens: new user tokens of each turn (>= 1)
  chat.user_tokens = read_distribution(
      reader, "user_tokens", {QuantityKind::tokens, 1, "a turn adds at least 1 user token"});
  // output_tokens: tokens each turn generates (>= 1)
  chat.output_tokens = read_distribution(reader, "output_tokens", output_length_rules());
  // think_time: from a turn's completion to the next turn's arrival (durations with units)
  chat.think_time = read_distribution(reader, "think_time", {QuantityKind::duration, 0, ""});
  // max_context_tokens: optional; a session ends before a turn whose prompt + output exceeds it
  if (values.has("max_context_tokens")) {
    const config::Node max_context = reader.child("max_context_tokens");
    chat.max_context_tokens = values.integer("max_context_tokens");
    if (diagnostics.size() == errors_before) {
      // Cross-field check: at least the smallest first turn must fit, or no
      // session ever produces a request.
      const int64_t smallest = chat.system_prompt_tokens + chat.user_tokens->lower_bound() +
                               chat.output_tokens->lower_bound();
      if (smallest > *chat.max_context_tokens) {
        max_context.error(
            fmt::format("no turn fits: the smallest first turn needs {} tokens (system prompt {} "
                        "+ user {} + output {})",
                        smallest, chat.system_prompt_tokens, chat.user_tokens->lower_bound(),
                        chat.output_tokens->lower_bound()),
            fmt::format("max_context_tokens >= {}", smallest));
      }
    }
  }
  spec.body = std::move(chat);
}

std::unique_ptr<WorkloadSource> make_chat_source(const WorkloadSpec& spec, uint64_t seed,
                                                 int64_t vocab_size) {
  return std::make_unique<ChatSource>(chat_of(spec), seed, vocab_size);
}

WorkloadBounds chat_bounds(const WorkloadSpec& spec) {
  const ChatWorkloadSpec& c = chat_of(spec);
  // Each value is at most 2^26 tokens and turns at most 2^26: no overflow.
  const int64_t turns = c.turns->upper_bound();
  const int64_t user = c.user_tokens->upper_bound();
  const int64_t output = c.output_tokens->upper_bound();
  int64_t max_prompt = c.system_prompt_tokens + (turns - 1) * (user + output) + user;
  int64_t max_output = output;
  if (c.max_context_tokens) {
    max_prompt = std::min(max_prompt, *c.max_context_tokens - c.output_tokens->lower_bound());
    max_output = std::min(
        max_output, *c.max_context_tokens - c.system_prompt_tokens - c.user_tokens->lower_bound());
  }
  return {max_prompt, max_output};
}

}  // namespace kvsim::detail
