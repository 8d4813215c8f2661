#pragma once
// A model as users have it: a Hugging Face checkout's folder holding
// config.json (Llama-3-8B's shape: 32 layers, 8 KV heads of 128), for the
// tests of every command that takes a model.
#include <filesystem>
#include <fstream>
#include <string>

namespace kvsim::testing {

inline std::string write_hf_llama_folder(const std::filesystem::path& parent,
                                         const std::string& name = "my-llama") {
  std::filesystem::create_directories(parent / name);
  std::ofstream(parent / name / "config.json")
      << R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
"intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 8192,
"torch_dtype": "bfloat16", "rope_theta": 500000.0})";
  return (parent / name).string();
}

}  // namespace kvsim::testing
