#include "tools/validation/reference_set.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "sim/spec_error.hpp"
#include "sim/yaml_spec.hpp"
#include "tools/validation/job_keys.hpp"
#include "tools/validation/recipe_families.hpp"
#include "tools/validation/yaml_block.hpp"

namespace clustersim::tools::validation {
namespace {

constexpr std::int64_t kMaxGpus = std::int64_t{1} << 20;
constexpr std::int64_t kMaxSeq = std::int64_t{1} << 24;

// GPU tags a metric name may start with ("h200_tflops"): the GPUs of the platform catalog.
const std::vector<std::string>& gpu_tags() {
  static const std::vector<std::string> kTags = {"h100", "h200", "b200", "gb200", "b300", "gb300"};
  return kTags;
}

template <typename T>
std::optional<Stated<T>> stated(Block& b, const std::string& key, T value) {
  return Stated<T>{std::move(value), b.key_line(key)};
}

std::optional<Stated<std::int64_t>> opt_int(Block& b, const std::string& key, std::int64_t min,
                                             std::int64_t max) {
  if (!b.map.has(key)) return std::nullopt;
  return stated(b, key, b.map.get_int(key, min, max));
}

std::optional<Stated<std::string>> opt_enum(Block& b, const std::string& key,
                                            const std::vector<std::string>& allowed) {
  if (!b.map.has(key)) return std::nullopt;
  return stated(b, key, b.map.get_enum(key, allowed));
}

std::optional<Stated<std::string>> opt_string(Block& b, const std::string& key) {
  if (!b.map.has(key)) return std::nullopt;
  return stated(b, key, b.map.get_string(key));
}

std::optional<Stated<bool>> opt_bool(Block& b, const std::string& key) {
  if (!b.map.has(key)) return std::nullopt;
  return stated(b, key, b.map.get_bool(key));
}

std::int64_t parse_key_int(const Block& b, const std::string& key, std::int64_t max) {
  std::size_t used = 0;
  std::int64_t v = 0;
  try {
    v = std::stoll(key, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != key.size() || v < 1 || v > max) {
    throw SpecError(b.map.file(), b.key_line(key), b.field(key),
                    "expected a positive integer key, got '" + key + "'");
  }
  return v;
}

CaseConfig read_config(Block c) {
  CaseConfig cfg;
  cfg.line = c.map.line();
  cfg.model = {c.map.get_string("model"), c.key_line("model")};
  cfg.gpu = opt_string(c, "gpu");
  cfg.platform = opt_string(c, "platform");
  if (c.map.has("gpus")) {
    cfg.gpus_line = c.key_line("gpus");
    if (c.map.is_scalar("gpus")) {
      cfg.gpus.push_back(c.map.get_int("gpus", 1, kMaxGpus));
    } else {
      cfg.gpus = c.map.get_int_list("gpus", 1, kMaxGpus);
      if (cfg.gpus.empty()) throw c.map.error("gpus", "empty list");
      std::set<std::int64_t> seen;
      for (const std::int64_t g : cfg.gpus) {
        if (!seen.insert(g).second) throw c.map.error("gpus", std::to_string(g) + " is given twice (each count is one point)");
      }
    }
  }
  cfg.tp = opt_int(c, "tp", 1, kMaxGpus);
  cfg.pp = opt_int(c, "pp", 1, kMaxGpus);
  cfg.dp = opt_int(c, "dp", 1, kMaxGpus);
  cfg.cp = opt_int(c, "cp", 1, kMaxGpus);
  cfg.vp = opt_int(c, "vp", 1, kMaxGpus);
  cfg.ep = opt_int(c, "ep", 1, kMaxGpus);
  cfg.mbs = opt_int(c, "mbs", 1, kMaxGpus);
  cfg.grad_accum = opt_int(c, "grad_accum", 1, kMaxGpus);
  cfg.seq = opt_int(c, "seq", 1, kMaxSeq);
  cfg.zero = opt_int(c, "zero", 0, 3);
  cfg.gbs = opt_string(c, "gbs");
  cfg.precision = opt_enum(c, "precision", {"bf16", "fp8"});
  cfg.pipeline = opt_enum(c, "pipeline", {"1f1b", "interleaved"});
  cfg.recompute = opt_enum(c, "activation_checkpointing", {"none", "selective", "full"});
  cfg.optimizer_offload = opt_enum(c, "optimizer_offload", {"none", "cpu"});
  cfg.elementwise = opt_enum(c, "elementwise", {"fused", "eager"});
  cfg.cross_entropy = opt_enum(c, "cross_entropy", {"unfused", "fused", "chunked", "eager"});
  cfg.zero_init = opt_bool(c, "zero_init");
  cfg.sequence_parallel = opt_bool(c, "sequence_parallel");
  cfg.tp_comm_overlap = opt_bool(c, "tp_comm_overlap");
  if (c.map.has("job")) cfg.job = read_job_keys(c.child("job"));
  c.map.finish();
  return cfg;
}

// The figures of one measurement mapping (top of `measured:` or one `by_gpus` entry).
struct Figures {
  std::optional<Stated<double>> step_s, mfu, tflops;
  std::vector<std::pair<std::string, Stated<double>>> tagged_tflops;  // ("h200", 461)
};

bool is_tagged(const std::string& key, const std::string& suffix, std::string* tag) {
  for (const auto& t : gpu_tags()) {
    if (key == t + suffix) {
      *tag = t;
      return true;
    }
  }
  return false;
}

// Reads step_s, mfu, tflops_per_gpu and <gpu>_tflops; other keys are left to the caller.
Figures read_figures(Block& b) {
  Figures f;
  if (b.map.has("step_s")) f.step_s = stated(b, "step_s", b.map.get_double("step_s", 1e-9, 1e7));
  if (b.map.has("mfu")) f.mfu = stated(b, "mfu", b.map.get_double("mfu", 1e-6, 1.0));
  if (b.map.has("tflops_per_gpu")) {
    f.tflops = stated(b, "tflops_per_gpu", b.map.get_double("tflops_per_gpu", 1e-6, 1e6));
  }
  for (const auto& key : b.map.keys()) {
    std::string tag;
    if (is_tagged(key, "_tflops", &tag)) {
      f.tagged_tflops.emplace_back(tag, Stated<double>{b.map.get_double(key, 1e-6, 1e6),
                                                       b.key_line(key)});
    }
  }
  return f;
}

// One point per figure to compare: step time if given, else MFU, else TFLOP/s; plus one point
// per GPU-tagged TFLOP/s figure.
void add_points(const Figures& f, std::int64_t gpus, std::int64_t seq,
                std::vector<MeasuredPoint>& out) {
  auto add = [&](Metric m, const Stated<double>& v, const std::string& tag) {
    MeasuredPoint p;
    if (tag.empty() && f.mfu) p.stated_mfu = f.mfu->value;
    p.gpus = gpus;
    p.seq = seq;
    p.gpu_tag = tag;
    p.metric = m;
    p.value = v.value;
    p.line = v.line;
    out.push_back(p);
  };
  if (f.step_s) {
    add(Metric::StepTime, *f.step_s, "");
  } else if (f.mfu) {
    add(Metric::Mfu, *f.mfu, "");
  } else if (f.tflops) {
    add(Metric::TflopsPerGpu, *f.tflops, "");
  }
  for (const auto& [tag, v] : f.tagged_tflops) add(Metric::TflopsPerGpu, v, tag);
}

std::vector<std::string> read_columns(Block& m) {
  if (!m.map.has("columns")) return default_by_seq_columns();
  const YAML::Node list = m.raw("columns");
  if (!list.IsSequence() || list.size() == 0) {
    throw m.map.error("columns", "expected a non-empty list of column names");
  }
  std::vector<std::string> cols;
  for (std::size_t i = 0; i < list.size(); ++i) {
    std::string tag;
    const std::string name = list[i].IsScalar() ? list[i].Scalar() : "";
    if (name != "attention_share" && !is_tagged(name, "_tflops", &tag) &&
        !is_tagged(name, "_peak_gib", &tag)) {
      throw SpecError(m.map.file(), node_line(list[i]), m.field("columns"),
                      "unknown column '" + name +
                          "' (known: attention_share, <gpu>_tflops, <gpu>_peak_gib with <gpu> "
                          "one of h100, h200, b200, gb200, b300, gb300)");
    }
    cols.push_back(name);
  }
  return cols;
}

double row_number(const Block& b, const YAML::Node& item, const std::string& field) {
  double v = 0.0;
  if (!item.IsScalar() || !YAML::convert<double>::decode(item, v) || !(v > 0.0)) {
    throw SpecError(b.map.file(), node_line(item), field, "expected a positive number");
  }
  return v;
}

// by_seq: {SEQ: [v1, v2, ...]} with one value per column.
void read_by_seq(Block& m, std::vector<MeasuredPoint>& out) {
  const std::vector<std::string> cols = read_columns(m);
  Block rows = m.child("by_seq");
  for (const auto& key : rows.map.keys()) {
    const std::int64_t seq = parse_key_int(rows, key, kMaxSeq);
    const YAML::Node row = rows.raw(key);
    rows.map.has(key);
    if (!row.IsSequence() || row.size() != cols.size()) {
      throw SpecError(rows.map.file(), rows.key_line(key), rows.field(key),
                      "expected a list of " + std::to_string(cols.size()) + " numbers (columns)");
    }
    for (std::size_t i = 0; i < cols.size(); ++i) {
      std::string tag;
      if (!is_tagged(cols[i], "_tflops", &tag)) continue;
      MeasuredPoint p;
      p.seq = seq;
      p.gpu_tag = tag;
      p.metric = Metric::TflopsPerGpu;
      p.value = row_number(rows, row[i], rows.field(key) + "[" + std::to_string(i) + "]");
      p.line = node_line(row[i]);
      for (std::size_t j = 0; j < cols.size(); ++j) {
        if (cols[j] == tag + "_peak_gib") p.peak_memory_gib = row_number(rows, row[j], rows.field(key));
      }
      out.push_back(p);
    }
  }
  rows.map.finish();
}

// One bucket mapping ({h200: 447, b200: 834}): TFLOP/s per GPU tag.
std::vector<std::pair<std::string, Stated<double>>> read_bucket(Block& m, const std::string& key) {
  std::vector<std::pair<std::string, Stated<double>>> out;
  if (!m.map.has(key)) return out;
  Block b = m.child(key);
  for (const auto& k : b.map.keys()) {
    std::string tag;
    if (!is_tagged(k, "", &tag)) {
      throw SpecError(b.map.file(), b.key_line(k), b.field(k),
                      "unknown GPU '" + k + "' (known: h100, h200, b200, gb200, b300, gb300)");
    }
    out.emplace_back(tag, Stated<double>{b.map.get_double(k, 1e-6, 1e6), b.key_line(k)});
  }
  b.map.finish();
  return out;
}

// attention_bucket / rest_bucket: S3's step decomposition of the step figure <gpu>_tflops of the
// same GPU (MeasuredBuckets); both buckets of a GPU or neither, and a step figure to decompose.
void read_buckets(Block& m, std::vector<MeasuredPoint>& points) {
  const auto attention = read_bucket(m, "attention_bucket");
  const auto rest = read_bucket(m, "rest_bucket");
  auto missing = [&](const std::string& given, const std::string& other, const std::string& tag,
                     int line) {
    return SpecError(m.map.file(), line, m.field(given + "." + tag),
                     "needs " + other + "." + tag + " too: the two buckets split one step");
  };
  for (const auto& [tag, v] : rest) {
    const bool paired = std::any_of(attention.begin(), attention.end(),
                                    [&](const auto& a) { return a.first == tag; });
    if (!paired) throw missing("rest_bucket", "attention_bucket", tag, v.line);
  }
  for (const auto& [tag, v] : attention) {
    const auto r = std::find_if(rest.begin(), rest.end(), [&](const auto& x) { return x.first == tag; });
    if (r == rest.end()) throw missing("attention_bucket", "rest_bucket", tag, v.line);
    std::vector<MeasuredPoint*> steps;
    for (auto& p : points) {
      if (p.gpu_tag == tag && p.seq == 0) steps.push_back(&p);
    }
    if (steps.size() != 1) {
      throw SpecError(m.map.file(), v.line, m.field("attention_bucket." + tag),
                      "decomposes one " + tag + "_tflops step figure of the case, found " +
                          std::to_string(steps.size()));
    }
    steps.front()->buckets = MeasuredBuckets{v.value, r->second.value, v.line};
  }
}

void read_measured(Block m, ReferenceCase& rc) {
  const Figures top = read_figures(m);
  for (const std::int64_t g : rc.config.gpus.empty() ? std::vector<std::int64_t>{0}
                                                     : rc.config.gpus) {
    add_points(top, g, 0, rc.points);
  }
  if (m.map.has("by_gpus")) {
    Block by = m.child("by_gpus");
    for (const auto& key : by.map.keys()) {
      const std::int64_t gpus = parse_key_int(by, key, kMaxGpus);
      const auto& stated = rc.config.gpus;
      if (!stated.empty() && std::find(stated.begin(), stated.end(), gpus) == stated.end()) {
        throw by.map.error(key, "config.gpus does not list " + key + " GPUs (give the count in one place, or both alike)");
      }
      Block entry = by.child(key);
      const Figures f = read_figures(entry);
      entry.map.finish();
      const std::size_t before = rc.points.size();
      add_points(f, gpus, 0, rc.points);
      if (rc.points.size() == before) throw entry.map.error("", "no step_s, mfu or tflops_per_gpu");
    }
    by.map.finish();
  }
  if (m.map.has("by_seq")) read_by_seq(m, rc.points);
  read_buckets(m, rc.points);
  for (const auto& key : m.map.keys()) {
    std::string tag;
    if (is_tagged(key, "_peak_gib", &tag)) m.map.get_double(key, 1e-6, 1e6);
  }
  if (m.map.has("peak_memory_metric")) {
    const std::string metric = m.map.get_string("peak_memory_metric");
    if (metric != "device" && metric != "max_memory_reserved") {
      throw m.map.error("peak_memory_metric",
                        "unknown metric '" + metric + "' (known: device, max_memory_reserved)");
    }
    for (auto& p : rc.points) p.peak_memory_metric = metric;
  }
  m.map.finish();
  if (rc.points.empty()) {
    throw m.map.error("", "nothing to compare: give step_s, mfu, tflops_per_gpu, <gpu>_tflops, "
                          "by_gpus or by_seq");
  }
  // Figures with no count of their own (by_seq, buckets) take config.gpus' one count: without
  // one they were measured at no stated count (a malformed file, refused here rather than
  // reported as a point at 0 GPUs). Top-level figures take every count config.gpus lists.
  if (rc.config.gpus.size() != 1 &&
      std::any_of(rc.points.begin(), rc.points.end(), [](const MeasuredPoint& p) { return p.gpus == 0; })) {
    throw m.map.error("", "figures outside by_gpus need the one GPU count they were measured at: "
                          "give config.gpus a single count, or put them under measured.by_gpus");
  }
}

void read_case(Block c, ReferenceSet& set, std::set<std::string>& ids) {
  ReferenceCase rc;
  rc.line = c.map.line();
  rc.id = c.map.get_string("id");
  if (rc.id.empty()) throw c.map.error("id", "empty case id");
  // validate --plot names a file after the id: keep it one plain name inside the folder.
  const bool plain = std::all_of(rc.id.begin(), rc.id.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.';
  });
  if (!plain || rc.id.front() == '.') {
    throw c.map.error("id", "case id '" + rc.id + "': letters, digits, '_', '-' and '.' only, not first '.'");
  }
  if (!ids.insert(rc.id).second) throw c.map.error("id", "duplicate case id '" + rc.id + "'");
  rc.source = c.map.get_string("source");
  rc.recipe = opt_string(c, "recipe");
  if (rc.recipe) {
    const auto& families = recipe_families();
    if (std::none_of(families.begin(), families.end(), [&](const RecipeFamily& f) { return f.name == rc.recipe->value; })) {
      (void)family_of(set, rc);  // the file's error, before anything is simulated: names the known families
    }
  }
  rc.config = read_config(c.child("config"));
  if (set.find_model(rc.config.model.value) == nullptr) {
    throw SpecError(set.file, rc.config.model.line, c.field("config.model"),
                    "model '" + rc.config.model.value + "' is not in this file's models:");
  }
  read_measured(c.child("measured"), rc);
  // Read and checked (known keys, positive numbers) though validate does not compare them:
  // tests/energy checks S0's against the energy model.
  const std::pair<const char*, std::vector<const char*>> extras[] = {
      {"energy", {"joules_per_token"}}, {"cost", {"usd_per_gpu_hour", "usd_per_million_tokens"}}};
  for (const auto& [extra, keys] : extras) {
    if (!c.map.has(extra)) continue;
    YamlMap figures = c.map.get_map(extra);
    for (const char* key : keys) {
      if (figures.has(key)) figures.get_double(key, 1e-9, 1e9);
    }
    figures.finish();
    rc.not_compared.push_back(std::string(extra) + ": not compared by validate");
  }
  if (c.map.has("note")) c.map.get_string("note");
  c.map.finish();
  set.cases.push_back(std::move(rc));
}

void read_models(Block m, ReferenceSet& set) {
  for (const auto& name : m.map.keys()) {
    const YAML::Node entry = m.raw(name);
    m.map.has(name);
    if (!entry.IsMap()) throw m.map.error(name, "expected a mapping of model fields");
    ReferenceModel model{name, m.key_line(name), {}};
    for (auto it = entry.begin(); it != entry.end(); ++it) {
      if (!it->second.IsScalar()) {
        throw SpecError(set.file, node_line(it->first), m.field(name + "." + it->first.Scalar()),
                        "expected a scalar value");
      }
      model.fields.push_back({it->first.Scalar(), it->second.Scalar(), node_line(it->first)});
    }
    set.models.push_back(std::move(model));
  }
  m.map.finish();
}

}  // namespace

const char* to_string(Metric metric) {
  switch (metric) {
    case Metric::StepTime: return "step_s";
    case Metric::Mfu: return "mfu";
    case Metric::TflopsPerGpu: return "tflops_per_gpu";
  }
  return "?";
}

const std::vector<std::string>& default_by_seq_columns() {
  static const std::vector<std::string> kColumns = {"attention_share", "h200_tflops",
                                                    "b200_tflops", "h200_peak_gib",
                                                    "b200_peak_gib"};
  return kColumns;
}

const ReferenceModel* ReferenceSet::find_model(const std::string& name) const {
  for (const auto& m : models) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

ReferenceSet parse_reference_set(const std::string& text, const std::string& origin) {
  const YAML::Node root = YamlMap::parse_document(text, origin);
  Block top{YamlMap(root, origin, ""), root};
  ReferenceSet set;
  set.file = origin;
  read_models(top.child("models"), set);
  std::set<std::string> ids;
  const YAML::Node cases = top.raw("cases");
  std::vector<YamlMap> case_maps = top.map.get_map_list("cases");
  if (case_maps.empty()) throw top.map.error("cases", "no cases");
  for (std::size_t i = 0; i < case_maps.size(); ++i) {
    read_case(Block{case_maps[i], cases[i]}, set, ids);
  }
  // Reference data validate does not use (docs/validation.md): accepted as they are.
  for (const char* other : {"collectives", "hardware", "economics"}) top.map.has(other);
  top.map.finish();
  return set;
}

ReferenceSet load_reference_set(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw SpecError(path, 0, "", "cannot open file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parse_reference_set(buffer.str(), path);
}

}  // namespace clustersim::tools::validation
