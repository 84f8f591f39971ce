#include "io/torchtitan_registry.h"

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

#include "core/suggest.h"
#include "io/toml.h"
#include "io/torchtitan_config.h"
#include "io/torchtitan_python.h"

namespace stagecraft {
namespace {

using torchtitan_python::Bool;
using torchtitan_python::Int;
using torchtitan_python::Literal;
using torchtitan_python::PyValue;
using torchtitan_python::Statement;
using torchtitan_python::Statements;
using torchtitan_python::Str;

// The fields of each section read, and those known but changing nothing stagecraft simulates.
struct Section {
  const char* name;
  std::vector<std::string> read;
  std::vector<std::string> ignored;
};

const std::vector<Section>& Sections() {
  static const std::vector<Section> kSections = {
      {"training",
       {"num_tokens_per_microbatch_per_dp_rank", "num_tokens_per_train_step", "max_context_length",
        "disable_cuda_graphs", "mixed_precision_param", "enable_cpu_offload"},
       {"max_norm", "steps", "dtype", "mixed_precision_reduce", "gc_freq", "gc_debug"}},
      {"parallelism",
       {"data_parallel_replicate_degree", "data_parallel_shard_degree",
        "fsdp_reshard_after_forward", "enable_fsdp_symm_mem", "tensor_parallel_degree",
        "enable_sequence_parallel", "pipeline_parallel_degree", "module_fqns_per_model_part",
        "pipeline_parallel_first_stage_less_layers", "pipeline_parallel_last_stage_less_layers",
        "pipeline_parallel_layers_per_stage", "pipeline_parallel_schedule",
        "pipeline_parallel_schedule_csv", "num_pp_microbatches", "context_parallel_degree",
        "expert_parallel_degree"},
       {"spmd_backend", "context_parallel_load_balancer", "context_parallel_ptrr_mask_key"}},
      {"compile", {"enable", "enable_async_tensor_parallel", "components"}, {"backend"}},
  };
  return kSections;
}

// Trainer.Config's top-level fields that change nothing simulated.
const std::vector<std::string>& IgnoredFields() {
  static const std::vector<std::string> kFields = {
      "hf_assets_path", "profiler",  "metrics", "optimizer", "lr_scheduler", "dataloader",
      "checkpoint",     "validator", "debug",   "comm",      "loss",         "override"};
  return kFields;
}

std::string RemoveSpaces(std::string text) {
  text.erase(std::remove(text.begin(), text.end(), ' '), text.end());
  return text;
}

// What the function builds: the base's values, then the statements' in order.
struct Registry {
  std::map<std::string, std::map<std::string, PyValue>> fields;  // section -> field -> value
  std::string flavor;  // llama3 flavor from the base or model_registry("F")
  int32_t model_line = 0;
  bool fp8 = false;
  std::string fp8_recipe;        // Float8LinearConverter.Config(recipe_name="..."); "" = unset
  std::string ac = "selective";  // "selective", "full", "none"
  int32_t ac_line = 0;
  int32_t base_line = 0;
  bool has_base = false;
};

void Set(Registry& r, const std::string& section, const std::string& field, TomlValue value,
         int32_t line) {
  value.line = line;
  r.fields[section][field] = PyValue{std::move(value), false};
}

// The base functions of torchtitan/models/llama3/config_registry.py at b5bcd76 (and Trainer.Config
// for `Trainer.Config()`): the values they set that stagecraft reads.
bool ApplyBase(const std::string& name, int32_t line, Registry& r) {
  r.base_line = line;
  r.has_base = true;
  if (name == "Trainer.Config") return true;
  if (name == "llama3_8b") {
    r.flavor = "8B";
    Set(r, "training", "num_tokens_per_microbatch_per_dp_rank", Int(8192), line);
    Set(r, "training", "max_context_length", Int(8192), line);
    r.ac = "selective";
  } else if (name == "llama3_70b") {
    r.flavor = "70B";
    Set(r, "training", "num_tokens_per_microbatch_per_dp_rank", Int(8 * 8192), line);
    Set(r, "training", "max_context_length", Int(8192), line);
    Set(r, "parallelism", "tensor_parallel_degree", Int(8), line);
    r.ac = "full";
  } else if (name == "llama3_405b") {
    r.flavor = "405B";
    r.fp8 = true;  // Float8LinearConverter (filter_fqns ["lm_head"])
    Set(r, "training", "num_tokens_per_microbatch_per_dp_rank", Int(2 * 8192), line);
    Set(r, "training", "max_context_length", Int(8192), line);
    Set(r, "parallelism", "tensor_parallel_degree", Int(8), line);
    Set(r, "compile", "enable", Bool(true), line);
    Set(r, "compile", "enable_async_tensor_parallel", Bool(true), line);
    r.ac = "full";
  } else {
    return false;
  }
  r.model_line = line;
  r.ac_line = line;
  return true;
}

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  Error Fail(int32_t line, const std::string& message) const {
    return Error{source_ + (line > 0 ? ":" + std::to_string(line) : "") + ": " + message};
  }

  Status Read(const std::vector<Statement>& statements) {
    bool in_function = false;
    bool returned = false;
    for (const Statement& s : statements) {
      const std::string& t = s.text;
      if (s.raw.rfind("from ", 0) == 0 || s.raw.rfind("import ", 0) == 0) {
        continue;
      }
      if (s.raw.rfind("def ", 0) == 0) {
        if (in_function) {
          return Fail(s.line, "a second function '" + EscapeBytes(s.raw) +
                                  "' (expected one function per file, the --config name)");
        }
        in_function = true;
        continue;
      }
      if (!in_function) {
        return Fail(s.line, "'" + EscapeBytes(s.raw) +
                                "' outside the function (expected imports, then one def)");
      }
      if (returned) return Fail(s.line, "a statement after `return config` is never run");
      if (t == "return config") {
        returned = true;
        continue;
      }
      STAGECRAFT_RETURN_IF_ERROR(Assignment(s));
    }
    if (!in_function) {
      return Fail(0,
                  "no function (expected `def NAME():` returning the Trainer.Config, the "
                  "name launch-registry.sh passes as --config)");
    }
    if (!registry_.has_base) {
      return Fail(0,
                  "no `config = BASE()` (expected a base such as llama3_70b() or "
                  "Trainer.Config())");
    }
    if (!returned) return Fail(0, "the function never returns config (expected `return config`)");
    return Status::Ok();
  }

  const Registry& registry() const { return registry_; }

 private:
  Status Assignment(const Statement& s) {
    const std::string& t = s.text;
    if (const std::string words = torchtitan_python::SideBySide(t); !words.empty()) {
      return Fail(s.line, "'" + EchoInput(s.raw) + "' is not valid Python: '" + EchoInput(words) +
                              "' is two names or numbers side by side, a syntax error in "
                              "Python (expected one token; did you mean '" +
                              EchoInput(RemoveSpaces(words)) + "'?)");
    }
    const size_t equals = t.find('=');
    if (equals == std::string::npos || equals == 0 || t[equals + 1] == '=') {
      return Unread(s);
    }
    const std::string target = t.substr(0, equals);
    const std::string value = t.substr(equals + 1);
    if (target == "config") {
      if (registry_.has_base) return Fail(s.line, "config is assigned twice (expected one base)");
      if (value.size() < 3 || value.substr(value.size() - 2) != "()") return Unread(s);
      const std::string base = value.substr(0, value.size() - 2);
      if (!ApplyBase(base, s.line, registry_)) {
        const std::vector<std::string> bases = {"llama3_8b", "llama3_70b", "llama3_405b",
                                                "Trainer.Config"};
        return Fail(s.line, "base '" + EscapeBytes(base) + "()' is not one stagecraft knows" +
                                DidYouMean(base, bases) + " (expected " + JoinChoices(bases) +
                                ": torchtitan/models/llama3/config_registry.py)");
      }
      return Status::Ok();
    }
    if (!registry_.has_base) {
      return Fail(s.line, "'" + EscapeBytes(s.raw) + "' before `config = BASE()`");
    }
    if (target.rfind("config.", 0) != 0) return Unread(s);
    const std::string path = target.substr(7);
    const size_t dot = path.find('.');
    if (dot == std::string::npos) return WholeField(s, path, value);
    return Field(s, path.substr(0, dot), path.substr(dot + 1), value);
  }

  Status WholeField(const Statement& s, const std::string& field, const std::string& value) {
    if (field == "model_spec") return ModelSpec(s, value);
    if (field == "activation_checkpoint") {
      registry_.ac_line = s.line;
      if (value == "None")
        registry_.ac = "none";
      else if (value == "FullAC.Config()")
        registry_.ac = "full";
      else if (value == "SelectiveAC.Config()")
        registry_.ac = "selective";
      else {
        return Fail(s.line, "activation_checkpoint = " + EscapeBytes(value) +
                                " is not read (expected FullAC.Config(), SelectiveAC.Config() or "
                                "None; MemoryBudgetAC is not modelled)");
      }
      return Status::Ok();
    }
    for (const Section& section : Sections()) {
      if (field != section.name) continue;
      // config.SECTION = SectionConfig(FIELD=VALUE, ...): the section's defaults, then these.
      const size_t open = value.find('(');
      if (open == std::string::npos || value.back() != ')') return Unread(s);
      registry_.fields[field].clear();
      const std::string inner = value.substr(open + 1, value.size() - open - 2);
      size_t start = 0;
      int depth = 0;
      std::string item;
      for (size_t pos = 0; pos <= inner.size(); ++pos) {
        const char c = pos < inner.size() ? inner[pos] : ',';
        if (c == '[' || c == '(') ++depth;
        if (c == ']' || c == ')') --depth;
        if (c == ',' && depth == 0) {
          item = inner.substr(start, pos - start);
          start = pos + 1;
          if (item.empty()) continue;
          const size_t eq = item.find('=');
          if (eq == std::string::npos) return Unread(s);
          STAGECRAFT_RETURN_IF_ERROR(Field(s, field, item.substr(0, eq), item.substr(eq + 1)));
        }
      }
      return Status::Ok();
    }
    if (std::find(IgnoredFields().begin(), IgnoredFields().end(), field) != IgnoredFields().end()) {
      return Status::Ok();
    }
    std::vector<std::string> known = {"model_spec", "activation_checkpoint"};
    for (const Section& section : Sections()) known.push_back(section.name);
    known.insert(known.end(), IgnoredFields().begin(), IgnoredFields().end());
    return Fail(s.line, "unknown field config." + EscapeBytes(field) + DidYouMean(field, known) +
                            " (Trainer.Config's fields, torchtitan/trainer.py)");
  }

  Status ModelSpec(const Statement& s, const std::string& value) {
    const std::string prefix = "model_registry(";
    if (value.rfind(prefix, 0) != 0 || value.back() != ')') {
      return Fail(s.line, "model_spec = " + EscapeBytes(value) +
                              " is not read (expected model_registry(\"8B\"), \"70B\" or \"405B\" "
                              "of llama3, or no model_spec with the model given by --hf-config)");
    }
    const std::string inner = value.substr(prefix.size(), value.size() - prefix.size() - 1);
    const size_t comma = inner.find(',');
    auto flavor = Literal(inner.substr(0, comma));
    if (!flavor || flavor->none || flavor->value.kind != TomlValue::Kind::kString) return Unread(s);
    registry_.flavor = flavor->value.text;
    registry_.model_line = s.line;
    registry_.fp8 = false;
    if (comma != std::string::npos) {
      const std::string rest = inner.substr(comma + 1);
      if (rest.rfind("converters=[", 0) != 0) return Unread(s);
      if (rest.find("MXFP8") != std::string::npos || rest.find("NVFP4") != std::string::npos) {
        return Fail(s.line,
                    "MXFP8 and NVFP4 converters are not modelled (expected "
                    "Float8LinearConverter or none)");
      }
      registry_.fp8 = rest.find("Float8LinearConverter.Config(") != std::string::npos;
      if (!registry_.fp8 && rest != "converters=[]") return Unread(s);
      // The recipe, read as the 0.2 job config's [float8] recipe_name (checked there).
      const std::string key = "recipe_name=\"";
      const size_t recipe = rest.find(key);
      registry_.fp8_recipe.clear();
      if (recipe != std::string::npos) {
        const size_t end = rest.find('"', recipe + key.size());
        if (end == std::string::npos) return Unread(s);
        registry_.fp8_recipe = rest.substr(recipe + key.size(), end - recipe - key.size());
      }
    }
    return Status::Ok();
  }

  Status Field(const Statement& s, const std::string& section, const std::string& field,
               const std::string& value) {
    const Section* found = nullptr;
    std::vector<std::string> names;
    for (const Section& candidate : Sections()) {
      names.push_back(candidate.name);
      if (section == candidate.name) found = &candidate;
    }
    if (found == nullptr) {
      if (std::find(IgnoredFields().begin(), IgnoredFields().end(), section) !=
          IgnoredFields().end()) {
        return Status::Ok();
      }
      return Fail(s.line, "config." + EscapeBytes(section) + " is not a section stagecraft reads" +
                              DidYouMean(section, names) + " (expected " + JoinChoices(names) +
                              ", or one that changes nothing simulated such as optimizer)");
    }
    const bool read = std::find(found->read.begin(), found->read.end(), field) != found->read.end();
    const bool ignored =
        std::find(found->ignored.begin(), found->ignored.end(), field) != found->ignored.end();
    if (!read && !ignored) {
      std::vector<std::string> known = found->read;
      known.insert(known.end(), found->ignored.begin(), found->ignored.end());
      return Fail(s.line, "unknown field config." + section + "." + EscapeBytes(field) +
                              DidYouMean(field, known) + " (torchtitan/config/configs.py)");
    }
    auto literal = Literal(value);
    if (!literal) {
      return Fail(s.line, "config." + section + "." + field + " = " + EchoInput(value) +
                              " (expected a literal: an integer, True/False, None, a string or "
                              "a list of strings)");
    }
    if (ignored) return Status::Ok();
    literal->value.line = s.line;
    registry_.fields[section][field] = *literal;
    return Status::Ok();
  }

  Error Unread(const Statement& s) const {
    return Fail(s.line, "'" + EscapeBytes(s.raw) +
                            "' is not a statement stagecraft reads (expected config.SECTION.FIELD "
                            "= VALUE, config = BASE(), config.model_spec = model_registry(...), "
                            "config.activation_checkpoint = ..., or return config)");
  }

  std::string source_;
  Registry registry_;
};

// The value of section.field as set, or nullptr (the default applies).
const PyValue* Get(const Registry& r, const std::string& section, const std::string& field) {
  auto s = r.fields.find(section);
  if (s == r.fields.end()) return nullptr;
  auto f = s->second.find(field);
  return f == s->second.end() ? nullptr : &f->second;
}

// An error at the line `at` was set on, else at `fallback` (0: the file).
Error Fail(const std::string& source, const PyValue* at, int32_t fallback,
           const std::string& message) {
  const int32_t line = at != nullptr ? at->value.line : fallback;
  return Error{source + (line > 0 ? ":" + std::to_string(line) : "") + ": " + message};
}

// The line section.field was set on, else the base function's.
int32_t LineOf(const Registry& r, const char* section, const char* field) {
  const PyValue* v = Get(r, section, field);
  return v != nullptr ? v->value.line : r.base_line;
}

// The values the translation needs, typed, with the defaults of torchtitan's configs.py; the
// rest pass through to the 0.2 reader.
struct TrainerValues {
  int64_t seq_len = 2048;             // training.max_context_length
  int64_t microbatch_tokens = 16384;  // training.num_tokens_per_microbatch_per_dp_rank
  int64_t step_tokens = -1;           // training.num_tokens_per_train_step; -1 = derived
  int64_t microbatches = 1;           // parallelism.num_pp_microbatches
  int64_t pp = 1;                     // parallelism.pipeline_parallel_degree
  int64_t tp = 1;                     // parallelism.tensor_parallel_degree
  int64_t ep = 1;                     // parallelism.expert_parallel_degree
  bool no_cuda_graphs = false;        // training.disable_cuda_graphs
  bool sequence_parallel = true;      // parallelism.enable_sequence_parallel
  bool symm_mem = false;              // parallelism.enable_fsdp_symm_mem
  bool compile = false;               // compile.enable
  bool async_tp = false;              // compile.enable_async_tensor_parallel
  std::vector<std::string> components = {"model", "loss"};  // compile.components
  bool compiles_model = false;  // compile on with "model" in its components
};

// The integers read, each from `low` to 2^40, then the booleans, in the order their errors are
// reported.
struct IntegerField {
  const char* section;
  const char* field;
  int64_t low;
  int64_t TrainerValues::*out;
};
struct BooleanField {
  const char* section;
  const char* field;
  bool TrainerValues::*out;
};
constexpr IntegerField kIntegerFields[] = {
    {"training", "max_context_length", 1, &TrainerValues::seq_len},
    {"training", "num_tokens_per_microbatch_per_dp_rank", 1, &TrainerValues::microbatch_tokens},
    {"training", "num_tokens_per_train_step", -1, &TrainerValues::step_tokens},
    {"parallelism", "num_pp_microbatches", 1, &TrainerValues::microbatches},
    {"parallelism", "pipeline_parallel_degree", 1, &TrainerValues::pp},
    {"parallelism", "tensor_parallel_degree", 1, &TrainerValues::tp},
    {"parallelism", "expert_parallel_degree", 1, &TrainerValues::ep}};
constexpr BooleanField kBooleanFields[] = {
    {"training", "disable_cuda_graphs", &TrainerValues::no_cuda_graphs},
    {"parallelism", "enable_sequence_parallel", &TrainerValues::sequence_parallel},
    {"parallelism", "enable_fsdp_symm_mem", &TrainerValues::symm_mem},
    {"compile", "enable", &TrainerValues::compile},
    {"compile", "enable_async_tensor_parallel", &TrainerValues::async_tp}};

Result<TrainerValues> ReadValues(const Registry& r, const std::string& source) {
  TrainerValues values;
  for (const auto& [section, field, low, out] : kIntegerFields) {
    const PyValue* v = Get(r, section, field);
    if (v == nullptr) continue;
    if (v->none || v->value.kind != TomlValue::Kind::kInteger || v->value.integer < low ||
        v->value.integer > (int64_t{1} << 40)) {
      return Fail(source, v, 0,
                  std::string("config.") + section + "." + field + " (expected an integer from " +
                      std::to_string(low) + ")");
    }
    values.*out = v->value.integer;
  }
  for (const auto& [section, field, out] : kBooleanFields) {
    const PyValue* v = Get(r, section, field);
    if (v == nullptr) continue;
    if (v->none || v->value.kind != TomlValue::Kind::kBool) {
      return Fail(source, v, 0,
                  std::string("config.") + section + "." + field + " (expected True or False)");
    }
    values.*out = v->value.boolean;
  }
  return values;
}

// The trainer's rules on the batch, CUDA graphs and the layout (trainer.py, parallel_dims.py),
// and what stagecraft does not model.
Status CheckTrainer(const Registry& r, const std::string& source, const TrainerValues& v) {
  const int64_t s = v.seq_len;
  if (v.microbatch_tokens % s != 0) {
    return Fail(
        source, Get(r, "training", "num_tokens_per_microbatch_per_dp_rank"), r.base_line,
        "training.num_tokens_per_microbatch_per_dp_rank " + std::to_string(v.microbatch_tokens) +
            " is not a whole number of sequences of "
            "max_context_length " +
            std::to_string(s) + " (expected a multiple: stagecraft simulates whole sequences)");
  }
  if (v.step_tokens == 0 || (v.step_tokens > 0 && v.step_tokens % s != 0)) {
    return Fail(source, Get(r, "training", "num_tokens_per_train_step"), 0,
                "training.num_tokens_per_train_step " + std::to_string(v.step_tokens) +
                    " is not a whole number of sequences of " + std::to_string(s) +
                    " tokens (expected -1 or a multiple of max_context_length)");
  }
  if (v.pp > 1 && !v.no_cuda_graphs) {
    return Fail(source, Get(r, "parallelism", "pipeline_parallel_degree"), 0,
                "pipeline parallelism with CUDA graphs on: torchtitan's trainer.py refuses it "
                "(expected config.training.disable_cuda_graphs = True)");
  }
  if (!v.sequence_parallel && v.tp > 1) {
    return Fail(source, Get(r, "parallelism", "enable_sequence_parallel"), 0,
                "parallelism.enable_sequence_parallel = False is not modelled (expected True, "
                "torchtitan's default: stagecraft's torchtitan TP shards the sequence)");
  }
  if (v.symm_mem) {
    return Fail(source, Get(r, "parallelism", "enable_fsdp_symm_mem"), 0,
                "parallelism.enable_fsdp_symm_mem = True is not modelled (expected False)");
  }
  if (v.ep > 1 && v.tp > 1) {
    return Fail(source, Get(r, "parallelism", "expert_parallel_degree"), 0,
                "expert_parallel_degree > 1 with tensor_parallel_degree > 1: at this generation "
                "EP borrows TP ranks (parallel_dims.py, efsdp = dp_shard x cp x tp / ep), a "
                "layout stagecraft does not model (expected tp 1, or the 0.2 TOML)");
  }
  return Status::Ok();
}

// compile.components, and async TP's need of the model compiled (CompileConfig).
Status ReadCompile(const Registry& r, const std::string& source, TrainerValues& v) {
  if (const PyValue* at = Get(r, "compile", "components"); at != nullptr) {
    if (at->none || at->value.kind != TomlValue::Kind::kStringArray) {
      return Fail(source, at, 0, "config.compile.components (expected a list of strings)");
    }
    v.components = at->value.strings;
  }
  v.compiles_model = v.compile && std::find(v.components.begin(), v.components.end(), "model") !=
                                      v.components.end();
  if (v.async_tp && !v.compiles_model) {
    return Fail(source, Get(r, "compile", "enable_async_tensor_parallel"), r.base_line,
                "compile.enable_async_tensor_parallel needs compile.enable = True and \"model\" "
                "in compile.components (torchtitan's CompileConfig raises without them)");
  }
  return Status::Ok();
}

// The pipeline's microbatches, checked under this generation's name.
Status CheckMicrobatches(const Registry& r, const std::string& source, const TrainerValues& v) {
  std::string schedule = "1F1B";
  if (const PyValue* at = Get(r, "parallelism", "pipeline_parallel_schedule");
      at != nullptr && at->value.kind == TomlValue::Kind::kString) {
    schedule = at->value.text;
  }
  const int64_t n = v.microbatches;
  if (v.pp <= 1) return Status::Ok();
  const PyValue* at = Get(r, "parallelism", "num_pp_microbatches");
  const std::string count = "parallelism.num_pp_microbatches " + std::to_string(n);
  if (n < v.pp) {
    return Fail(source, at, 0,
                count + " is fewer than the " + std::to_string(v.pp) +
                    " pipeline ranks (expected at least pipeline_parallel_degree)");
  }
  if (schedule == "DualPipeV" && n < 2 * v.pp) {
    return Fail(source, at, 0,
                count + ": DualPipeV needs at least 2 x pp = " + std::to_string(2 * v.pp));
  }
  if ((schedule == "Interleaved1F1B" || schedule == "LoopedBFS") && n % v.pp != 0) {
    return Fail(source, at, 0,
                count + " is not a multiple of pp " + std::to_string(v.pp) +
                    " (torch's looped schedules require it)");
  }
  return Status::Ok();
}

// The 0.2 job config being written: its tables in the order first used, each value at the line
// it was set on (the base function's line where it was not).
class JobConfig {
 public:
  explicit JobConfig(int32_t base_line) : base_line_(base_line) {
    document_.tables.push_back(TomlTable{});
  }

  void Put(const std::string& name, const std::string& key, TomlValue value, int32_t line) {
    value.line = line > 0 ? line : base_line_;
    Table(name).keys.emplace_back(key, std::move(value));
  }

  const TomlDocument& document() const { return document_; }

 private:
  TomlTable& Table(const std::string& name) {
    for (TomlTable& t : document_.tables) {
      if (t.name == name) return t;
    }
    document_.tables.push_back(TomlTable{name, base_line_, {}});
    return document_.tables.back();
  }

  TomlDocument document_;
  int32_t base_line_;
};

// The model's table: the llama3 flavor and its float8 converter; none when the model is given.
Status PutModel(const Registry& r, const std::string& source, bool model_given, JobConfig& job) {
  if (!r.flavor.empty()) {
    job.Put("model", "name", Str("llama3"), r.model_line);
    job.Put("model", "flavor", Str(r.flavor), r.model_line);
  } else if (!model_given) {
    return Error{source +
                 ": no model_spec names the model (expected config.model_spec = "
                 "model_registry(\"8B\"|\"70B\"|\"405B\"), a llama3 base, or the model "
                 "given by --hf-config FILE or a config)"};
  }
  if (r.fp8) {
    TomlValue converters;
    converters.kind = TomlValue::Kind::kStringArray;
    converters.strings = {"float8"};
    job.Put("model", "converters", converters, r.model_line);
    if (!r.fp8_recipe.empty()) job.Put("float8", "recipe_name", Str(r.fp8_recipe), r.model_line);
  }
  return Status::Ok();
}

// The batch in sequences, and the parallelism keys both generations name alike.
void PutTrainingAndLayout(const Registry& r, const TrainerValues& v, JobConfig& job) {
  const int64_t s = v.seq_len;
  const int64_t mbs = v.microbatch_tokens / s;
  const int64_t local = v.pp > 1 ? mbs * v.microbatches : mbs;
  job.Put("training", "seq_len", Int(s), LineOf(r, "training", "max_context_length"));
  job.Put("training", "local_batch_size", Int(local),
          LineOf(r, "training", "num_tokens_per_microbatch_per_dp_rank"));
  if (v.step_tokens > 0) {
    job.Put("training", "global_batch_size", Int(v.step_tokens / s),
            LineOf(r, "training", "num_tokens_per_train_step"));
  }
  for (const char* key : {"mixed_precision_param", "enable_cpu_offload"}) {
    if (const PyValue* at = Get(r, "training", key); at != nullptr && !at->none) {
      job.Put("training", key, at->value, at->value.line);
    }
  }
  for (const char* key :
       {"data_parallel_replicate_degree", "data_parallel_shard_degree",
        "fsdp_reshard_after_forward", "tensor_parallel_degree", "pipeline_parallel_degree",
        "pipeline_parallel_first_stage_less_layers", "pipeline_parallel_last_stage_less_layers",
        "pipeline_parallel_layers_per_stage", "pipeline_parallel_schedule",
        "pipeline_parallel_schedule_csv", "context_parallel_degree", "expert_parallel_degree",
        "module_fqns_per_model_part"}) {
    const PyValue* at = Get(r, "parallelism", key);
    if (at == nullptr || at->none) continue;
    job.Put("parallelism", key, at->value, at->value.line);
  }
  if (v.pp > 1) {
    job.Put("parallelism", "pipeline_parallel_microbatch_size", Int(mbs),
            LineOf(r, "parallelism", "num_pp_microbatches"));
  }
}

// Async TP, the activation checkpointing and what compiles.
void PutEngineOptions(const Registry& r, const TrainerValues& v, JobConfig& job) {
  job.Put("parallelism", "enable_async_tensor_parallel", Bool(v.async_tp),
          LineOf(r, "compile", "enable_async_tensor_parallel"));
  job.Put("activation_checkpoint", "mode", Str(r.ac), r.ac_line);
  if (r.ac == "selective") {
    // This generation's SelectiveAC is the per-op policy (activation_checkpoint.py).
    job.Put("activation_checkpoint", "selective_ac_option", Str("op"), r.ac_line);
  }
  job.Put("compile", "enable", Bool(v.compiles_model), LineOf(r, "compile", "enable"));
  TomlValue compiled;  // whether the loss compiles too (the TOML reader's cross_entropy_fusion)
  compiled.kind = TomlValue::Kind::kStringArray;
  compiled.strings = v.components;
  job.Put("compile", "components", compiled, LineOf(r, "compile", "components"));
}

}  // namespace

Result<Config> ReadTorchtitanRegistry(const std::string& text, const std::string& source,
                                      Config base, bool model_given) {
  auto statements = Statements(text, source);
  if (!statements.ok()) return statements.error();
  Reader reader(source);
  STAGECRAFT_RETURN_IF_ERROR(reader.Read(statements.value()));
  const Registry& r = reader.registry();
  auto values = ReadValues(r, source);
  if (!values.ok()) return values.error();
  TrainerValues& v = values.value();
  STAGECRAFT_RETURN_IF_ERROR(CheckTrainer(r, source, v));
  STAGECRAFT_RETURN_IF_ERROR(ReadCompile(r, source, v));
  STAGECRAFT_RETURN_IF_ERROR(CheckMicrobatches(r, source, v));
  // The 0.2 job config these values mean.
  JobConfig job(r.base_line);
  STAGECRAFT_RETURN_IF_ERROR(PutModel(r, source, model_given, job));
  PutTrainingAndLayout(r, v, job);
  PutEngineOptions(r, v, job);
  return ReadTorchtitanDocument(job.document(), source, std::move(base), model_given);
}

}  // namespace stagecraft
