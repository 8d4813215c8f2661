#include "sim/serve/speculative_spec.hpp"

#include <fmt/format.h>

#include "models/drafter_shape.hpp"

namespace kvsim {
namespace {

// vLLM's method names (vllm/config/speculative.py SpeculativeMethod), and
// `deepseek_mtp`, the name vLLM gave MTP before it became `mtp`.
const std::vector<std::string> kMethodNames = {"mtp",    "deepseek_mtp", "eagle",
                                               "eagle3", "ngram",        "draft_model"};

SpeculativeMethod method_of(const std::string& name) {
  if (name == "eagle") return SpeculativeMethod::eagle;
  if (name == "eagle3") return SpeculativeMethod::eagle3;
  if (name == "ngram") return SpeculativeMethod::ngram;
  if (name == "draft_model") return SpeculativeMethod::draft_model;
  return SpeculativeMethod::mtp;
}

// A list of probabilities in [0, 1], each at its own node.
std::vector<double> probabilities(const config::Node& list) {
  std::vector<double> out;
  for (const config::Node& n : list.items()) {
    const auto v = n.as_double(0.0, 1.0);
    out.push_back(v.value_or(0.0));
  }
  return out;
}

AcceptanceModel read_acceptance(const config::Node& node, int64_t k) {
  config::MapReader r(node);
  const config::ParamValues v = config::read_params(r, speculative_acceptance_info());
  const config::Node per_position = r.child("per_position");
  const config::Node lengths = r.child("accepted_lengths");
  const int given =
      (v.has("rate") ? 1 : 0) + (per_position.defined() ? 1 : 0) + (lengths.defined() ? 1 : 0);
  AcceptanceModel model = AcceptanceModel::constant(0);
  if (given != 1) {
    node.error(given == 0 ? "gives no acceptance model" : "gives more than one acceptance model",
               "one of rate: A, per_position: [A1, ..., AK], accepted_lengths: [W0, ..., WK]");
  } else if (v.has("rate")) {
    model = AcceptanceModel::constant(v.number("rate"));
  } else if (per_position.defined()) {
    std::vector<double> rates = probabilities(per_position);
    const auto n = static_cast<int64_t>(rates.size());
    bool ok = n > 0;
    if (n == 0) per_position.error("is empty", "one rate per draft position, at most K");
    if (n > k) {
      per_position.error(fmt::format("lists {} positions, more than the {} drafts "
                                     "(num_speculative_tokens) a step proposes",
                                     n, k),
                         fmt::format("at most {} rates", k));
      ok = false;
    }
    for (size_t i = 1; i < rates.size() && ok; ++i)
      if (rates[i] > rates[i - 1]) {
        per_position.items()[i].error(
            fmt::format("{} is above the rate {} of the position before: a draft is accepted "
                        "only after every draft before it (vLLM's per-position rates never rise)",
                        rates[i], rates[i - 1]),
            "non-increasing rates");
        ok = false;
      }
    if (ok) model = AcceptanceModel::per_position(std::move(rates));
  } else {
    std::vector<double> weights;
    for (const config::Node& n : lengths.items())
      weights.push_back(n.as_double(0.0, 1e12).value_or(0));
    const auto n = static_cast<int64_t>(weights.size());
    double total = 0;
    for (const double w : weights) total += w;
    if (n > k + 1)
      lengths.error(fmt::format("weighs {} accepted counts (0..{}), more than 0..{} for {} drafts",
                                n, n - 1, k, k),
                    fmt::format("at most {} weights", k + 1));
    else if (!(total > 0))
      lengths.error("has no positive weight", "weights of 0, 1, ..., K accepted drafts, some > 0");
    else
      model = AcceptanceModel::lengths(std::move(weights));
  }
  r.finish();
  return model;
}

}  // namespace

config::ComponentInfo speculative_info() {
  using namespace config;
  return {"section",
          "speculative",
          "speculative decoding in the serving engine (vLLM's speculative_config): each running "
          "sequence proposes num_speculative_tokens drafts per step and the target verifies "
          "them in one pass; absent: off",
          {choice_param("method", std::nullopt, kMethodNames,
                        "the drafter: mtp (the model's num_nextn_predict_layers; deepseek_mtp "
                        "is vLLM's older name), eagle / eagle3 (a one-layer head), ngram "
                        "(prompt lookup: no device work), draft_model (a smaller model); "
                        "default: draft_model when `model` is given"),
           int_param("num_speculative_tokens", std::nullopt, 0, 16, "tokens",
                     "drafts K per sequence and step (0: speculation off)"),
           optional_param(string_param("model", std::nullopt,
                                       "draft_model: the draft model (a name under configs/models, "
                                       "a path or a Hugging Face folder); eagle / eagle3: the "
                                       "head's config instead of the one derived from the target")),
           section_param("acceptance", true, "{rate | per_position | accepted_lengths}",
                         "how many drafts the target accepts (speculative.acceptance)")}};
}

config::ComponentInfo speculative_acceptance_info() {
  using namespace config;
  return {"section",
          "speculative.acceptance",
          "the acceptance model, seeded: exactly one of its keys",
          {optional_param(number_param("rate", std::nullopt, 0.0, 1.0, "probability",
                                       "every draft accepted with this probability once the "
                                       "ones before it are")),
           section_param("per_position", false, "[A1, ..., An], n <= K",
                         "P(draft i accepted), as vLLM reports it per position "
                         "(non-increasing); drafts past the list are rejected"),
           section_param("accepted_lengths", false, "[W0, ..., Wn], n <= K",
                         "relative frequencies of 0, 1, ..., n accepted drafts per step "
                         "(an empirical distribution)")}};
}

SpeculativeConfig read_speculative_section(
    config::MapReader& top, const ModelSpec& target,
    const std::function<std::optional<ModelSpec>(const config::Node&)>& load_model) {
  SpeculativeConfig c;
  const config::Node node = top.child("speculative");
  if (!node.defined()) return c;
  config::MapReader r(node);
  const bool method_given = r.has("method");
  const bool model_given = r.has("model");
  config::ComponentInfo info = speculative_info();
  if (!method_given && model_given) info.params[0].default_value = std::string("draft_model");
  const config::ParamValues v = config::read_params(r, info);
  c.method_name = v.string("method");
  c.method = method_of(c.method_name);
  c.num_speculative_tokens = v.integer("num_speculative_tokens");
  c.acceptance = read_acceptance(r.child("acceptance"), c.num_speculative_tokens);
  const config::Node model_node = r.child("model");
  std::optional<ModelSpec> given;
  if (model_given) {
    if (c.method == SpeculativeMethod::mtp || c.method == SpeculativeMethod::ngram)
      model_node.error(fmt::format("a {} drafter has no model of its own", c.method_name),
                       "no `model`, or method draft_model | eagle | eagle3");
    else
      given = load_model(model_node);
  }
  r.finish();
  c.on = c.num_speculative_tokens > 0;
  switch (c.method) {
    case SpeculativeMethod::mtp:
      if (target.num_nextn_predict_layers < 1) {
        r.child("method").error(
            fmt::format("{} has no multi-token-prediction layers (num_nextn_predict_layers is 0 "
                        "in its config)",
                        target.name),
            "a model with num_nextn_predict_layers (DeepSeek-V3/R1), or method eagle | eagle3 | "
            "ngram | draft_model");
        return c;
      }
      c.drafter = mtp_drafter(target);
      break;
    case SpeculativeMethod::eagle:
    case SpeculativeMethod::eagle3:
      c.drafter = eagle_drafter(target, c.method == SpeculativeMethod::eagle3);
      if (given) c.drafter->model = *given;
      break;
    case SpeculativeMethod::draft_model:
      if (!model_given) {
        node.error("method draft_model needs the draft model",
                   "model: <a name under configs/models, a path or a Hugging Face folder>");
        return c;
      }
      if (given) c.drafter = draft_model_drafter(*given);
      break;
    case SpeculativeMethod::ngram:
      break;  // prompt lookup on the host: nothing on the device
  }
  if (given && given->vocab_size != target.vocab_size)
    model_node.error(fmt::format("{} has a vocabulary of {} tokens, {} has {}: the target cannot "
                                 "verify drafts of another vocabulary",
                                 given->name, given->vocab_size, target.name, target.vocab_size),
                     fmt::format("a draft model with vocab_size {}", target.vocab_size));
  return c;
}

}  // namespace kvsim
