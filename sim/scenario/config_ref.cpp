#include "sim/scenario/config_ref.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <vector>

#include "base/diagnostics.hpp"
#include "models/model_resolve.hpp"
#include "sim/scenario/scenario.hpp"

namespace kvsim {
namespace fs = std::filesystem;
namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

bool looks_like_config_path(const std::string& text) {
  return text.find('/') != std::string::npos || text.ends_with(".yaml") || text.ends_with(".json");
}

std::string path_beside(const std::string& text, const std::string& relative_to) {
  std::error_code ec;
  const fs::path path(text);
  if (!path.is_relative() || relative_to.empty()) return text;
  const fs::path folder = fs::path(relative_to).parent_path();
  if (folder.empty()) return text;
  const fs::path beside = (folder / path).lexically_normal();
  if (!fs::exists(beside, ec)) return text;
  const std::string out = beside.string();
  return out.find('/') == std::string::npos ? "./" + out : out;
}

ConfigRef locate_config(const std::string& text, const std::string& kind,
                        const std::string& configs_dir, const std::string& relative_to) {
  ConfigRef out;
  const bool models = kind == "models";
  const std::string what = kind.substr(0, kind.size() - 1);  // "devices" -> "device"
  // error_code forms throughout: a text the filesystem cannot even look up
  // (too long, say) is a file that does not exist.
  std::error_code ec;
  if (looks_like_config_path(text)) {
    fs::path path(path_beside(text, relative_to));
    const bool folder = fs::is_directory(path, ec);
    if (models && folder) path /= "config.json";  // a Hugging Face checkout
    if (fs::is_regular_file(path, ec)) {
      out.path = path.string();
      out.by_path = true;
      return out;
    }
    // "Qwen/Qwen3-8B": a repository name, when no such file is there.
    if (models && !folder) {
      const ModelLookup found = find_model(text, configs_dir);
      if (!found.path.empty()) {
        out.path = found.path;
        out.weights = found.weights;
        return out;
      }
    }
    out.problem = models && folder ? fmt::format("the folder '{}' holds no config.json", text)
                                   : fmt::format("no {} file '{}'", what, text);
    out.allowed = fmt::format("a {} YAML or JSON file{}, or a name: {}", what,
                              models ? ", a Hugging Face folder with config.json" : "",
                              joined(list_config_names(configs_dir, kind)));
    return out;
  }
  if (models) {
    const ModelLookup found = find_model(text, configs_dir);
    out.path = found.path;
    out.weights = found.weights;
  } else {
    for (const char* ext : {".yaml", ".json"}) {
      const fs::path p = fs::path(configs_dir) / kind / (text + ext);
      if (out.path.empty() && fs::is_regular_file(p, ec)) out.path = p.string();
    }
  }
  if (!out.path.empty()) return out;
  const auto names = list_config_names(configs_dir, kind);
  const std::string near = config::closest_match(text, names);
  out.problem = near.empty()
                    ? fmt::format("no {} named '{}'", what, text)
                    : fmt::format("no {} named '{}', did you mean '{}'?", what, text, near);
  out.allowed = names.empty() ? fmt::format("a path to a {} file", what) : joined(names);
  return out;
}

}  // namespace kvsim
