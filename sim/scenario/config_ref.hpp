#pragma once
// Where a device or model given as text lives (SPEC 4b), the one lookup for
// every place a user names one: a scenario's `device:` and `model:`, `--set`,
// `capacity --device/--model`, `compare --vary model=...`, a sweep's `set:`
// and `grid:`. The text is
//   - a name under configs/<kind>/ (NAME.yaml or NAME.json; a model also by
//     its Hugging Face repository name, models/model_resolve.hpp), or
//   - a YAML or JSON file, or a Hugging Face checkout's folder (the folder
//     that holds config.json), relative paths looked for beside
//     `relative_to` first (the file that names them), then from the working
//     directory.
// A text with a '/' that is no file or folder is still tried as a model's
// repository name ("Qwen/Qwen3-8B").
#include <string>

namespace kvsim {

struct ConfigRef {
  std::string path;      // the file to read; empty when nothing was found
  std::string weights;   // a model name's weights format ("w8a8"), else empty
  bool by_path = false;  // the text named a file or a folder, not a name
  // When nothing was found: what is wrong and what is allowed (the names
  // under configs/<kind>/, with "did you mean" for a near one).
  std::string problem, allowed;
};

// Whether `text` is written as a path (a '/', or a .yaml or .json ending)
// rather than a name.
bool looks_like_config_path(const std::string& text);

// A relative path as the file `relative_to` means it: beside that file when
// something is there, else as written (from the working directory). The
// result keeps a '/' (./NAME), so it still reads as a path.
std::string path_beside(const std::string& text, const std::string& relative_to);

// `kind` is "devices" or "models". Never throws.
ConfigRef locate_config(const std::string& text, const std::string& kind,
                        const std::string& configs_dir, const std::string& relative_to = {});

}  // namespace kvsim
