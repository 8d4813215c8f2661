#include "models/model_resolve.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>
#include <stdexcept>

#include "base/diagnostics.hpp"

namespace kvsim {
namespace {

namespace fs = std::filesystem;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() > tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Suffixes of fine-tuned variants that keep the base model's config keys.
constexpr std::array<const char*, 5> kTuningSuffixes = {"-instruct", "-chat", "-it", "-hf",
                                                        "-base"};

// The file for `stem` under `dir`, trying .yaml then .json; records both.
std::optional<std::string> file_for(const fs::path& dir, const std::string& stem,
                                    std::vector<std::string>& tried) {
  std::error_code ec;
  for (const char* ext : {".yaml", ".json"}) {
    const fs::path p = dir / (stem + ext);
    if (std::find(tried.begin(), tried.end(), p.string()) != tried.end()) continue;
    tried.push_back(p.string());
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> split_weights_suffix(const std::string& name, std::string* stem) {
  const std::string l = lower(name);
  for (const std::string& w : kWeightsDtypeNames) {
    for (const char sep : {'-', '_', '@'}) {
      const std::string tail = std::string(1, sep) + w;
      if (ends_with(l, tail)) {
        if (stem != nullptr) *stem = name.substr(0, name.size() - tail.size());
        return w;
      }
    }
  }
  return std::nullopt;
}

ModelLookup find_model(const std::string& name, const std::string& configs_dir) {
  ModelLookup out;
  const fs::path dir = fs::path(configs_dir) / "models";
  auto hit = [&](const std::string& stem) {
    if (stem.empty()) return false;
    if (auto p = file_for(dir, stem, out.tried)) {
      out.path = *p;
      return true;
    }
    return false;
  };
  // 1. as written, then lower case
  if (hit(name) || hit(lower(name))) return out;
  // 2. without the organisation
  std::string n = lower(name);
  if (const size_t slash = n.rfind('/'); slash != std::string::npos) n = n.substr(slash + 1);
  if (hit(n)) return out;
  // 3. a trailing weights format
  std::string stem;
  if (auto w = split_weights_suffix(n, &stem)) {
    out.weights = *w;
    n = stem;
    if (hit(n)) return out;
  }
  // 4. fine-tuning suffixes, repeatedly (Llama-2-7b-chat-hf)
  for (bool stripped = true; stripped;) {
    stripped = false;
    for (const char* s : kTuningSuffixes) {
      if (ends_with(n, s)) {
        n = n.substr(0, n.size() - std::string(s).size());
        stripped = true;
        if (hit(n)) return out;
      }
    }
  }
  // 5. Meta's older repository names
  if (n.rfind("meta-", 0) == 0 && hit(n.substr(5))) return out;
  return out;
}

ModelSpec with_weights_format(ModelSpec model, const std::string& weights,
                              const std::string& display_name) {
  if (std::find(kWeightsDtypeNames.begin(), kWeightsDtypeNames.end(), weights) ==
      kWeightsDtypeNames.end()) {
    std::string allowed;
    for (const auto& w : kWeightsDtypeNames) allowed += (allowed.empty() ? "" : ", ") + w;
    throw std::invalid_argument(
        fmt::format("weights format '{}' is not one of {}", weights, allowed));
  }
  model.weights_dtype = weights;
  model.quant = WeightQuant{};
  if (!display_name.empty()) model.name = display_name;
  return model;
}

ModelSpec load_model_by_name(const std::string& name, const std::string& weights,
                             const std::string& configs_dir) {
  const ModelLookup found = find_model(name, configs_dir);
  if (found.path.empty()) {
    std::string tried;
    for (const auto& t : found.tried) tried += (tried.empty() ? "" : ", ") + t;
    throw std::runtime_error(
        fmt::format("no shape file for model '{}' (looked for {}); add one with the model's "
                    "config.json keys (hidden_size, num_hidden_layers, num_attention_heads, "
                    "num_key_value_heads, intermediate_size, vocab_size, "
                    "max_position_embeddings) and a source",
                    name, tried));
  }
  config::LoadContext ctx;
  ModelSpec m = load_model_file(found.path, ctx);
  ctx.diagnostics.throw_if_any();
  const std::string w = !weights.empty() ? lower(weights) : found.weights;
  if (w.empty()) return m;
  return with_weights_format(std::move(m), w, name);
}

}  // namespace kvsim
