#include "tools/validation/case_job.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "sim/spec_error.hpp"
#include "sim/units.hpp"
#include "sim/yaml_spec.hpp"
#include "tools/validation/recipe_families.hpp"
#include "workloads/model_catalog.hpp"

namespace clustersim::tools::validation {
namespace {

std::string yaml_scalar(const std::string& v);

void state_int(DraftJob& j, const std::string& section, const std::string& key,
               const std::optional<Stated<std::int64_t>>& v) {
  if (v) j.state(section, key, std::to_string(v->value), v->line);
}

void state_text(DraftJob& j, const std::string& section, const std::string& key,
                const std::optional<Stated<std::string>>& v) {
  if (v) j.state(section, key, v->value, v->line);
}

void state_bool(DraftJob& j, const std::string& section, const std::string& key,
                const std::optional<Stated<bool>>& v) {
  if (v) j.state(section, key, v->value ? "true" : "false", v->line);
}

void state_platform(const ReferenceSet& set, const ReferenceCase& rc, const MeasuredPoint& p,
                    DraftJob& j) {
  const CaseConfig& c = rc.config;
  if (c.platform) {
    j.state("cluster", "platform", c.platform->value, c.platform->line);
  } else if (!p.gpu_tag.empty()) {
    j.fill("cluster", "platform", platform_for_gpu(p.gpu_tag), "GPU-CATALOG", p.line);
  } else if (c.gpu) {
    const std::string platform = platform_for_gpu(c.gpu->value);
    if (platform.empty()) {
      throw SpecError(set.file, c.gpu->line, rc.id + ".config.gpu",
                      "no catalog platform for GPU '" + c.gpu->value +
                          "' (known: H100-SXM, H200-SXM, B200, GB200, B300, GB300); give "
                          "config.platform");
    }
    j.fill("cluster", "platform", platform, "GPU-CATALOG", c.gpu->line);
  }
}

// Everything the case states, under the job's key names.
void state_case(const ReferenceSet& set, const ReferenceCase& rc, const MeasuredPoint& p,
                std::int64_t gpus, DraftJob& j) {
  const CaseConfig& c = rc.config;
  j.state("cluster", "gpus", std::to_string(gpus), p.gpus != 0 ? p.line : c.gpus_line);
  state_platform(set, rc, p, j);
  state_int(j, "parallelism", "tp", c.tp);
  state_int(j, "parallelism", "pp", c.pp);
  state_int(j, "parallelism", "dp", c.dp);
  state_int(j, "parallelism", "cp", c.cp);
  state_int(j, "parallelism", "vp", c.vp);
  state_int(j, "parallelism", "ep", c.ep);
  state_int(j, "parallelism", "zero_stage", c.zero);
  state_bool(j, "parallelism", "sequence_parallel", c.sequence_parallel);
  state_bool(j, "parallelism", "tp_comm_overlap", c.tp_comm_overlap);
  state_text(j, "parallelism", "optimizer_offload", c.optimizer_offload);
  if (c.pipeline && c.pipeline->value == "1f1b") j.state("parallelism", "schedule", "1f1b", c.pipeline->line);
  if (p.seq != 0) {
    j.state("training", "seq_length", std::to_string(p.seq), p.line);
  } else {
    state_int(j, "training", "seq_length", c.seq);
  }
  state_int(j, "training", "micro_batch_size", c.mbs);
  if (c.gbs) {
    std::string why;
    const auto gbs = eval_batch_expression(c.gbs->value, gpus, &why);
    if (!gbs) throw SpecError(set.file, c.gbs->line, rc.id + ".config.gbs", why);
    j.state("training", "global_batch_size", std::to_string(*gbs), c.gbs->line);
  }
  state_text(j, "training", "precision", c.precision);
  state_text(j, "training", "recompute", c.recompute);
  state_text(j, "training", "elementwise", c.elementwise);
  state_text(j, "training", "cross_entropy", c.cross_entropy);
  state_bool(j, "parallelism", "zero_init", c.zero_init);
  for (const CaseJobKey& k : c.job) {
    const std::string field = rc.id + ".config.job." + k.section + "." + k.key;
    if (j.find(k.section, k.key) != nullptr) {
      throw SpecError(set.file, k.line, field, "also stated by another config key");
    }
    j.state_yaml(k.section, k.key, k.yaml, k.line);
  }
}

// grad_accum: the global batch is micro batch x dp x accumulation; checked against a stated
// global batch, or used to derive it.
void apply_grad_accum(const ReferenceSet& set, const ReferenceCase& rc, std::int64_t gpus,
                      DraftJob& j) {
  const auto& ga = rc.config.grad_accum;
  if (!ga) return;
  const std::int64_t mbs = j.get_int("training", "micro_batch_size", 0);
  const std::int64_t mp = j.get_int("parallelism", "tp", 1) * j.get_int("parallelism", "pp", 1) *
                          j.get_int("parallelism", "cp", 1);
  const std::int64_t dp = j.get_int("parallelism", "dp", mp > 0 ? gpus / mp : 0);
  const std::int64_t derived = mbs * dp * ga->value;
  const JobField* gbs = j.find("training", "global_batch_size");
  if (gbs == nullptr) {
    j.state("training", "global_batch_size", std::to_string(derived), ga->line);
  } else if (std::stoll(gbs->value) != derived) {
    throw SpecError(set.file, ga->line, rc.id + ".config.grad_accum",
                    "global batch " + gbs->value + " != mbs*dp*grad_accum = " +
                        std::to_string(mbs) + "*" + std::to_string(dp) + "*" +
                        std::to_string(ga->value) + " at " + count_noun(gpus, "GPU", "GPUs"));
  }
}

std::string yaml_scalar(const std::string& v) {
  // A YAML flow mapping (a recipe default such as tp_comm_overlap_cfg) is written as it is.
  if (v.size() >= 2 && v.front() == '{' && v.back() == '}') return v;
  const bool plain = !v.empty() && std::all_of(v.begin(), v.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.' || c == '-' ||
           c == '+' || c == '/';
  });
  if (plain) return v;
  std::string out = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// A job field's line: `key: value`, the value quoted as a YAML scalar unless it is YAML text.
std::string field_line(const JobField& f) {
  return "  " + f.key + ": " + (f.yaml ? f.value : yaml_scalar(f.value));
}

void emit_line(CaseJob& job, const std::string& text, int line) {
  job.yaml += text + "\n";
  job.line_map.push_back(line);
}

void emit(const ReferenceCase& rc, const ReferenceModel& model, CaseJob& job) {
  emit_line(job, "model:", model.line);
  for (const auto& f : job.fields) {
    if (f.section == "model") emit_line(job, field_line(f), f.line);
  }
  for (const auto& f : model.fields) emit_line(job, "  " + f.key + ": " + yaml_scalar(f.value), f.line);
  for (const char* section : {"cluster", "parallelism", "training"}) {
    const bool any = std::any_of(job.fields.begin(), job.fields.end(),
                                 [&](const JobField& f) { return f.section == section; });
    emit_line(job, std::string(section) + (any ? ":" : ": {}"), rc.line);
    for (const auto& f : job.fields) {
      if (f.section == section) emit_line(job, field_line(f), f.line);
    }
  }
}

}  // namespace

void DraftJob::state(const std::string& section, const std::string& key, const std::string& value,
                     int line) {
  fields_.push_back({section, key, value, line, ""});
}

void DraftJob::state_yaml(const std::string& section, const std::string& key,
                          const std::string& yaml, int line) {
  fields_.push_back({section, key, yaml, line, "", true});
}

bool DraftJob::fill(const std::string& section, const std::string& key, const std::string& value,
                    const std::string& cite, int line) {
  if (find(section, key) != nullptr) return false;
  fields_.push_back({section, key, value, line, cite});
  return true;
}

const JobField* DraftJob::find(const std::string& section, const std::string& key) const {
  for (const auto& f : fields_) {
    if (f.section == section && f.key == key) return &f;
  }
  return nullptr;
}

std::int64_t DraftJob::get_int(const std::string& section, const std::string& key,
                               std::int64_t fallback) const {
  const JobField* f = find(section, key);
  if (f == nullptr) return fallback;
  std::size_t used = 0;
  const std::int64_t v = std::stoll(f->value, &used);
  if (used != f->value.size()) throw std::invalid_argument(key + " is not an integer");
  return v;
}

std::vector<std::string> CaseJob::defaults() const {
  std::vector<std::string> out;
  for (const auto& f : fields) {
    if (!f.cite.empty()) out.push_back(f.key + "=" + f.value + " [" + f.cite + "]");
  }
  return out;
}

std::int64_t point_gpus(const ReferenceCase& rc, const MeasuredPoint& point) {
  if (point.gpus != 0) return point.gpus;
  return rc.config.gpus.size() == 1 ? rc.config.gpus.front() : 0;
}

CaseJob build_case_job(const ReferenceSet& set, const ReferenceCase& rc,
                       const MeasuredPoint& point) {
  const std::int64_t gpus = point_gpus(rc, point);
  if (gpus == 0) {
    throw SpecError(set.file, rc.config.line, rc.id + ".config.gpus",
                    "no GPU count: give config.gpus or measured.by_gpus");
  }
  const RecipeFamily& family = family_of(set, rc);
  const ReferenceModel* model = set.find_model(rc.config.model.value);
  DraftJob draft;
  const auto names = workloads::catalog_model_names();
  const bool has_catalog_key = std::any_of(model->fields.begin(), model->fields.end(),
                                           [](const ModelField& f) { return f.key == "catalog"; });
  if (!has_catalog_key && std::find(names.begin(), names.end(), model->name) != names.end()) {
    draft.fill("model", "catalog", model->name, "MODEL-CATALOG", model->line);
  }
  state_case(set, rc, point, gpus, draft);
  family.apply(FamilyInput{set, rc, point, gpus}, draft);
  apply_grad_accum(set, rc, gpus, draft);
  const auto& pipe = rc.config.pipeline;
  if (pipe && pipe->value == "interleaved" && draft.get_int("parallelism", "vp", 1) < 2) {
    throw SpecError(set.file, pipe->line, rc.id + ".config.pipeline",
                    "interleaved, but vp is unstated and recipe family '" + family.name +
                        "' has no default for this layout: state vp");
  }
  CaseJob job;
  job.family = family.name;
  job.fields = draft.fields();
  emit(rc, *model, job);
  return job;
}

Job load_case_job(const ReferenceSet& set, const ReferenceCase& rc, const CaseJob& job) {
  try {
    return parse_job(YamlMap::load_string(job.yaml, set.file));
  } catch (const SpecError& e) {
    if (e.file() != set.file) throw;
    const bool mapped = e.line() >= 1 && static_cast<std::size_t>(e.line()) <= job.line_map.size();
    const int line = mapped ? job.line_map[static_cast<std::size_t>(e.line() - 1)] : rc.line;
    throw SpecError(set.file, line, e.field(),
                    e.reason() + " [job of case " + rc.id + ", recipe family " + job.family + "]");
  }
}

std::optional<std::int64_t> eval_batch_expression(const std::string& text, std::int64_t gpus,
                                                  std::string* why) {
  std::int64_t num = 1;
  std::int64_t den = 1;
  char op = '*';
  std::size_t i = 0;
  bool expect_operand = true;
  auto fail = [&](const std::string& reason) -> std::optional<std::int64_t> {
    *why = "'" + text + "': " + reason +
           " (expected an integer or a product/quotient of integers and 'gpus', e.g. 16*gpus)";
    return std::nullopt;
  };
  while (i < text.size()) {
    const char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      ++i;
      continue;
    }
    if (!expect_operand) {
      if (c != '*' && c != '/') return fail("expected '*' or '/' at position " + std::to_string(i));
      op = c;
      expect_operand = true;
      ++i;
      continue;
    }
    std::int64_t value = 0;
    if (text.compare(i, 4, "gpus") == 0) {
      value = gpus;
      i += 4;
    } else if (std::isdigit(static_cast<unsigned char>(c)) != 0) {
      while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) != 0) {
        if (value > (std::int64_t{1} << 40)) return fail("number too large");
        value = value * 10 + (text[i++] - '0');
      }
    } else {
      return fail("unexpected '" + std::string(1, c) + "'");
    }
    if (value <= 0) return fail("operands must be positive");
    std::int64_t& target = op == '*' ? num : den;
    if (target > std::numeric_limits<std::int64_t>::max() / value) return fail("too large");
    target *= value;
    const std::int64_t g = std::gcd(num, den);
    num /= g;
    den /= g;
    expect_operand = false;
  }
  if (expect_operand) return fail("incomplete expression");
  if (den != 1) return fail("is not an integer at " + count_noun(gpus, "GPU", "GPUs"));
  return num;
}

}  // namespace clustersim::tools::validation
