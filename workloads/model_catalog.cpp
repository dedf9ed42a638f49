#include "workloads/model_catalog.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <optional>
#include <utility>

#include "workloads/enum_names.hpp"

#ifndef CLUSTERSIM_MODEL_DIR
#error "CLUSTERSIM_MODEL_DIR must be defined by the build (workloads/CMakeLists.txt)"
#endif

namespace clustersim::workloads {
namespace {

// Upper bound for every model dimension: far above any published model (the largest
// catalog entry has hidden 16,384, vocab 128,256), small enough that products of two
// dimensions stay exact in int64 and double.
constexpr std::int64_t kMaxDim = std::int64_t{1} << 30;

struct IntField {
  const char* key;
  std::int64_t ModelSpec::*member;
  std::int64_t min = 1;
};
// Required in a complete model description.
constexpr IntField kRequiredInts[] = {{"layers", &ModelSpec::layers}, {"hidden", &ModelSpec::hidden},
                                      {"ffn", &ModelSpec::ffn},       {"heads", &ModelSpec::heads},
                                      {"kv_heads", &ModelSpec::kv_heads}, {"vocab", &ModelSpec::vocab}};
// Optional: head_dim defaults to hidden / heads (Megatron's kv_channels default);
// max_position_embeddings is required only with learned positions (checked in finish());
// v_head_dim defaults to head_dim; the MLA and MoE fields default to 0 (absent), the MoE layer
// interval to 1 (every layer after first_dense_layers).
constexpr IntField kOptionalInts[] = {
    {"head_dim", &ModelSpec::head_dim},
    {"max_position_embeddings", &ModelSpec::max_position_embeddings},
    {"v_head_dim", &ModelSpec::v_head_dim},
    {"q_lora_rank", &ModelSpec::q_lora_rank},
    {"kv_lora_rank", &ModelSpec::kv_lora_rank},
    {"rope_head_dim", &ModelSpec::rope_head_dim},
    {"experts", &ModelSpec::experts},
    {"top_k", &ModelSpec::top_k},
    {"expert_ffn", &ModelSpec::expert_ffn},
    {"shared_expert_ffn", &ModelSpec::shared_expert_ffn},
    {"first_dense_layers", &ModelSpec::first_dense_layers, 0},
    {"moe_layer_interval", &ModelSpec::moe_layer_interval},
    {"router_groups", &ModelSpec::router_groups},
    {"router_group_topk", &ModelSpec::router_group_topk},
    {"mtp_layers", &ModelSpec::mtp_layers, 0}};

bool valid_catalog_name(const std::string& name) {
  if (name.empty()) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
  });
}

std::string catalog_path(const std::string& name) { return model_catalog_dir() + "/" + name + ".yaml"; }

std::string catalog_listing() {
  std::string out;
  for (const auto& name : catalog_model_names()) out += (out.empty() ? "" : ", ") + name;
  return out;
}

// Returns the catalog file of `name`, or an empty string when there is none.
std::string find_catalog_file(const std::string& name) {
  if (!valid_catalog_name(name)) return {};
  const std::string path = catalog_path(name);
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) ? path : std::string{};
}

std::string unknown_model_reason(const std::string& name) {
  return "unknown model '" + name + "' (catalog: " + catalog_listing() + ")";
}

// Accumulates model fields from one or more mappings (catalog file, then job overrides) and
// remembers which mapping gave each field, so that errors point at the line that set it.
class ModelReader {
 public:
  // Marks every model key known in `map` and rejects the others (before any value is read, so
  // that a misspelt key is not reported as a missing one). `extra` are keys of the job's
  // model mapping that are not dimensions.
  static void reject_unknown_keys(YamlMap& map, std::initializer_list<const char*> extra) {
    for (const auto& field : kRequiredInts) map.has(field.key);
    for (const auto& field : kOptionalInts) map.has(field.key);
    for (const char* key :
         {"activation", "norm", "position", "tied_embeddings", "bias", "attention", "qk_layernorm"}) {
      map.has(key);
    }
    for (const char* key : extra) map.has(key);
    map.finish();
  }

  void read(YamlMap& map, bool complete) {
    for (const auto& field : kRequiredInts) {
      if (complete || map.has(field.key)) read_int(map, field);
    }
    for (const auto& field : kOptionalInts) {
      if (map.has(field.key)) read_int(map, field);
    }
    if (complete || map.has("activation")) {
      spec_.activation = read_enum(map, "activation", kActivationNames);
      note(map, "activation");
    }
    if (complete || map.has("norm")) {
      spec_.norm = read_enum(map, "norm", kNormNames);
      note(map, "norm");
    }
    if (complete || map.has("position")) {
      spec_.position = read_enum(map, "position", kPositionNames);
      note(map, "position");
    }
    if (complete || map.has("tied_embeddings")) {
      spec_.tied_embeddings = map.get_bool("tied_embeddings");
      note(map, "tied_embeddings");
    }
    if (complete || map.has("bias")) {
      spec_.bias = map.get_bool("bias");
      note(map, "bias");
    }
    if (map.has("attention")) {
      spec_.attention = read_enum(map, "attention", kAttentionNames);
      note(map, "attention");
    }
    if (map.has("qk_layernorm")) {
      spec_.qk_layernorm = map.get_bool("qk_layernorm");
      note(map, "qk_layernorm");
    }
    last_.emplace(map);
    ++layer_;
  }

  // Applies derived defaults and the constraints between model fields.
  ModelSpec finish(std::string name) {
    spec_.name = std::move(name);
    if (spec_.head_dim == 0) {
      if (spec_.hidden % spec_.heads != 0) {
        const std::string k = blame({"heads", "hidden"});
        throw at(k).error(k, "hidden (" + std::to_string(spec_.hidden) +
                                             ") is not divisible by heads (" +
                                             std::to_string(spec_.heads) + "); give head_dim");
      }
      spec_.head_dim = spec_.hidden / spec_.heads;
    }
    if (spec_.heads % spec_.kv_heads != 0) {
      const std::string k = blame({"kv_heads", "heads"});
      throw at(k).error(k, "heads (" + std::to_string(spec_.heads) +
                                                 ") must be a multiple of kv_heads (" +
                                                 std::to_string(spec_.kv_heads) + ")");
    }
    if (spec_.position == PositionKind::Learned && spec_.max_position_embeddings == 0) {
      throw at("position").error("position",
                                 "position: learned needs max_position_embeddings (rows of the "
                                 "position table)");
    }
    if (spec_.v_head_dim == 0) spec_.v_head_dim = spec_.head_dim;
    check_mla();
    check_moe();
    return spec_;
  }

 private:
  // MLA (DeepSeek-V2/V3): compressed keys/values with a decoupled RoPE part of the head.
  void check_mla() {
    const bool mla = spec_.attention == AttentionKind::Mla;
    for (const char* key : {"q_lora_rank", "kv_lora_rank", "rope_head_dim"}) {
      if (!mla && origin_.count(key) != 0) {
        const std::string k = blame({key, "attention"});  // the job's attention over the catalog's ranks
        throw at(k).error(k, std::string(key) + " is only meaningful with attention: mla");
      }
    }
    if (!mla) return;
    if (spec_.qk_layernorm) {
      const std::string k = blame({"qk_layernorm", "attention"});
      throw at(k).error(k, "qk_layernorm is the per-head query and key norm of GQA/MHA attention; MLA's "
                           "latent norms (Megatron-core's qk_layernorm with MLA) are always modelled");
    }
    if (spec_.kv_lora_rank == 0 || spec_.rope_head_dim == 0 || origin_.count("head_dim") == 0) {
      throw at("attention").error("attention",
                                  "attention: mla needs head_dim, kv_lora_rank and rope_head_dim");
    }
    if (spec_.rope_head_dim >= spec_.head_dim) {
      const std::string k = blame({"rope_head_dim", "head_dim"});
      throw at(k).error(k, "rope_head_dim (" + std::to_string(spec_.rope_head_dim) +
                               ") must be smaller than head_dim (" +
                               std::to_string(spec_.head_dim) + ")");
    }
    if (spec_.kv_heads != spec_.heads) {
      const std::string k = blame({"kv_heads", "heads"});
      throw at(k).error(k, "MLA expands keys and values per head: kv_heads "
                                             "must equal heads");
    }
  }

  void check_moe() {
    if (spec_.experts == 0) {
      for (const char* key : {"top_k", "expert_ffn", "shared_expert_ffn", "first_dense_layers",
                              "moe_layer_interval", "router_groups", "router_group_topk"}) {
        if (origin_.count(key) != 0) throw at(key).error(key, "needs experts (a MoE model)");
      }
      return;
    }
    if (spec_.top_k == 0 || spec_.expert_ffn == 0) {
      throw at("experts").error("experts", "a MoE model needs top_k and expert_ffn");
    }
    if (spec_.top_k > spec_.experts) {
      const std::string k = blame({"top_k", "experts"});
      throw at(k).error(k, "top_k (" + std::to_string(spec_.top_k) +
                                           ") exceeds experts (" + std::to_string(spec_.experts) + ")");
    }
    if (spec_.first_dense_layers >= spec_.layers) {
      const std::string k = blame({"first_dense_layers", "layers"});
      throw at(k).error(k, "first_dense_layers (" + std::to_string(spec_.first_dense_layers) +
                               ") leaves no MoE layer of " + std::to_string(spec_.layers));
    }
    if (spec_.layers - spec_.first_dense_layers < spec_.moe_layer_interval) {
      const std::string k = blame({"moe_layer_interval", "layers", "first_dense_layers"});
      throw at(k).error(k, "moe_layer_interval (" + std::to_string(spec_.moe_layer_interval) +
                               ") leaves no MoE layer among the " +
                               std::to_string(spec_.layers - spec_.first_dense_layers) +
                               " layers after first_dense_layers");
    }
    check_router_groups();
  }

  // Megatron-core's group-limited routing: num_groups divides the experts, group_topk of them
  // hold at least top_k experts (TransformerConfig and the router's group_limited_topk).
  void check_router_groups() {
    const std::int64_t g = spec_.router_groups, m = spec_.router_group_topk;
    if (g == 0 && m == 0) return;
    if (g == 0) throw at("router_group_topk").error("router_group_topk", "needs router_groups");
    if (m == 0) throw at("router_groups").error("router_groups", "needs router_group_topk");
    if (spec_.experts % g != 0) {
      const std::string k = blame({"router_groups", "experts"});
      throw at(k).error(k, "router_groups (" + std::to_string(g) + ") must divide experts (" +
                                                           std::to_string(spec_.experts) + ")");
    }
    if (m > g || m * (spec_.experts / g) < spec_.top_k) {
      const std::string k = blame({"router_group_topk", "router_groups", "top_k", "experts"});
      throw at(k).error(
          k, "router_group_topk (" + std::to_string(m) + ") must be at most router_groups (" +
                 std::to_string(g) + "), and its groups must hold top_k (" +
                                   std::to_string(spec_.top_k) + ") experts");
    }
  }

  void read_int(YamlMap& map, const IntField& field) {
    spec_.*field.member = map.get_int(field.key, field.min, kMaxDim);
    note(map, field.key);
  }
  void note(const YamlMap& map, const std::string& key) {
    origin_.insert_or_assign(key, Origin{map, layer_});
  }
  // Of the fields a constraint ties together, the one set last (the job's override over the
  // catalog file), else the first: the line the user changed is the one to report.
  std::string blame(std::initializer_list<const char*> keys) const {
    std::string best = *keys.begin();
    int best_layer = -1;
    for (const char* key : keys) {
      const auto it = origin_.find(key);
      if (it != origin_.end() && it->second.layer > best_layer) {
        best = key;
        best_layer = it->second.layer;
      }
    }
    return best;
  }
  const YamlMap& at(const std::string& key) const {
    auto it = origin_.find(key);
    return it != origin_.end() ? it->second.map : *last_;
  }

  struct Origin {
    YamlMap map;  ///< the mapping that set the field
    int layer;    ///< 0: the catalog file (or the only mapping), 1: the job's overrides
  };
  ModelSpec spec_;
  std::map<std::string, Origin> origin_;
  std::optional<YamlMap> last_;
  int layer_ = 0;
};

ModelSpec read_catalog_file(const std::string& path, const std::string& name) {
  YamlMap file = YamlMap::load_file(path);
  ModelReader::reject_unknown_keys(file, {});
  ModelReader reader;
  reader.read(file, true);
  return reader.finish(name);
}

}  // namespace

const std::string& model_catalog_dir() {
  static const std::string kDir = CLUSTERSIM_MODEL_DIR;
  return kDir;
}

std::vector<std::string> catalog_model_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(model_catalog_dir(), ec)) {
    if (entry.path().extension() == ".yaml") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

ModelSpec load_catalog_model(const std::string& name) {
  const std::string path = find_catalog_file(name);
  if (path.empty()) throw SpecError("<catalog>", 0, "model", unknown_model_reason(name));
  return read_catalog_file(path, name);
}

ModelSpec parse_model_section(YamlMap& root) {
  if (!root.has("model")) throw root.error("", "missing required field 'model'");
  if (root.is_scalar("model")) {
    const std::string name = root.get_string("model");
    const std::string path = find_catalog_file(name);
    if (path.empty()) throw root.error("model", unknown_model_reason(name));
    return read_catalog_file(path, name);
  }
  if (!root.is_map("model")) {
    throw root.error("model", "expected a catalog model's name (model: llama3_70b) or a mapping "
                              "(model: {catalog: llama3_70b, layers: 16}, or every field inline)");
  }
  YamlMap map = root.get_map("model");
  ModelReader::reject_unknown_keys(map, {"catalog", "name"});
  ModelReader reader;
  std::string name = "inline";
  if (map.has("catalog")) {
    const std::string base = map.get_string("catalog");
    const std::string path = find_catalog_file(base);
    if (path.empty()) throw map.error("catalog", unknown_model_reason(base));
    YamlMap file = YamlMap::load_file(path);
    ModelReader::reject_unknown_keys(file, {});
    reader.read(file, true);
    reader.read(map, false);
    name = base + "+overrides";
  } else {
    reader.read(map, true);
  }
  if (map.has("name")) {
    name = map.get_string("name");
    // The name heads the text report's job line and the outputs: one printable line.
    const bool printable = !name.empty() && std::none_of(name.begin(), name.end(), [](char c) {
      return std::iscntrl(static_cast<unsigned char>(c)) != 0;
    });
    if (!printable) throw map.error("name", "a model name is one non-empty line without control characters");
  }
  return reader.finish(name);
}

}  // namespace clustersim::workloads
