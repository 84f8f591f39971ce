#include "io/torchtitan_registry.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <vector>

#include "core/suggest.h"
#include "io/toml.h"
#include "io/torchtitan_config.h"

namespace stagecraft {
namespace {

// A value as the subset writes it, with the line it was set on (0: the base function's default).
struct PyValue {
  TomlValue value;
  bool none = false;
};

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

TomlValue Int(int64_t value) {
  TomlValue v;
  v.kind = TomlValue::Kind::kInteger;
  v.integer = value;
  return v;
}
TomlValue Bool(bool value) {
  TomlValue v;
  v.kind = TomlValue::Kind::kBool;
  v.boolean = value;
  return v;
}
TomlValue Str(std::string value) {
  TomlValue v;
  v.text = std::move(value);
  return v;
}

// What the function builds: the base's values, then the statements' in order.
struct Registry {
  std::map<std::string, std::map<std::string, PyValue>> fields;  // section -> field -> value
  std::string flavor;  // llama3 flavor from the base or model_registry("F")
  int32_t model_line = 0;
  bool fp8 = false;
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

std::string Trim(const std::string& text) {
  size_t begin = 0;
  size_t end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return text.substr(begin, end - begin);
}

// Drops spaces outside string literals ("a = 1" and "a=1" read alike).
std::string Squeeze(const std::string& text) {
  std::string out;
  char quote = 0;
  for (char c : text) {
    if (quote != 0) {
      out += c;
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
      out += c;
    } else if (!std::isspace(static_cast<unsigned char>(c))) {
      out += c;
    }
  }
  return out;
}

// One statement per logical line: comments dropped, lines joined while brackets are open.
struct Statement {
  std::string text;  // squeezed
  std::string raw;   // as written (first line), for messages
  int32_t line = 0;
};

Result<std::vector<Statement>> Statements(const std::string& text, const std::string& source) {
  std::vector<Statement> statements;
  Statement current;
  int depth = 0;
  int32_t line = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t end = std::min(text.find('\n', pos), text.size());
    std::string content = text.substr(pos, end - pos);
    pos = end + 1;
    ++line;
    char quote = 0;
    std::string kept;
    for (char c : content) {
      if (quote == 0 && c == '#') break;
      if (quote != 0 && c == quote)
        quote = 0;
      else if (quote == 0 && (c == '"' || c == '\''))
        quote = c;
      else if (quote == 0 && (c == '(' || c == '[' || c == '{'))
        ++depth;
      else if (quote == 0 && (c == ')' || c == ']' || c == '}'))
        --depth;
      kept += c;
    }
    if (quote != 0) {
      return Error{source + ":" + std::to_string(line) +
                   ": a string left open at the end of the line (expected its closing quote)"};
    }
    if (depth < 0) {
      return Error{source + ":" + std::to_string(line) + ": a closing bracket with none open"};
    }
    if (current.text.empty() && Trim(kept).empty()) continue;
    if (current.text.empty()) {
      current.line = line;
      current.raw = Trim(kept);
    }
    current.text += Squeeze(kept);
    if (depth == 0) {
      statements.push_back(current);
      current = Statement{};
    }
    if (end == text.size()) break;
  }
  if (depth != 0) {
    return Error{source + ":" + std::to_string(current.line) +
                 ": a bracket opened here is never closed (expected the statement to end)"};
  }
  return statements;
}

// The items of a list's inside, split at the commas outside strings and brackets.
std::vector<std::string> ListItems(const std::string& inner) {
  std::vector<std::string> items;
  std::string item;
  char quote = 0;
  int depth = 0;
  for (char c : inner + ",") {
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '[' || c == '(') {
      ++depth;
    } else if (c == ']' || c == ')') {
      --depth;
    } else if (c == ',' && depth == 0) {
      if (!item.empty()) items.push_back(item);
      item.clear();
      continue;
    }
    item += c;
  }
  return items;
}

// A literal: an integer (a product of integers, `_` separators), True/False, None, a string, a
// list of strings or a list of lists of strings (module_fqns_per_model_part).
std::optional<PyValue> Literal(const std::string& text) {
  PyValue out;
  if (text == "None") {
    out.none = true;
    return out;
  }
  if (text == "True" || text == "False") {
    out.value = Bool(text == "True");
    return out;
  }
  if (text.size() >= 2 && (text.front() == '"' || text.front() == '\'') &&
      text.back() == text.front()) {
    out.value = Str(text.substr(1, text.size() - 2));
    return out;
  }
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
    const std::vector<std::string> items = ListItems(text.substr(1, text.size() - 2));
    const bool nested = !items.empty() && items.front().front() == '[';
    out.value.kind = nested ? TomlValue::Kind::kStringArrays : TomlValue::Kind::kStringArray;
    for (const std::string& item : items) {
      auto element = Literal(item);
      if (!element || element->none) return std::nullopt;
      if (nested && element->value.kind == TomlValue::Kind::kStringArray) {
        out.value.arrays.push_back(element->value.strings);
      } else if (!nested && element->value.kind == TomlValue::Kind::kString) {
        out.value.strings.push_back(element->value.text);
      } else {
        return std::nullopt;
      }
    }
    return out;
  }
  const bool negative = !text.empty() && text[0] == '-';
  const std::string digits = negative ? text.substr(1) : text;
  int64_t product = 1;
  size_t start = 0;
  while (true) {
    size_t star = digits.find('*', start);
    if (star == std::string::npos) star = digits.size();
    const std::string factor = digits.substr(start, star - start);
    if (factor.empty() || factor.size() > 12) return std::nullopt;
    int64_t number = 0;
    for (char c : factor) {
      if (c == '_') continue;
      if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
      number = number * 10 + (c - '0');
    }
    // Both factors below 2^40: the product is checked before it could overflow.
    if (number != 0 && product > (int64_t{1} << 40) / number) return std::nullopt;
    product *= number;
    if (star == digits.size()) break;
    start = star + 1;
  }
  out.value = Int(negative ? -product : product);
  return out;
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
      if (t == "returnconfig") {
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
      return Fail(s.line, "config." + section + "." + field + " = " + EscapeBytes(value) +
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

}  // namespace

Result<Config> ReadTorchtitanRegistry(const std::string& text, const std::string& source,
                                      Config base, bool model_given) {
  auto statements = Statements(text, source);
  if (!statements.ok()) return statements.error();
  Reader reader(source);
  STAGECRAFT_RETURN_IF_ERROR(reader.Read(statements.value()));
  const Registry& r = reader.registry();
  const auto fail = [&](const PyValue* at, int32_t fallback, const std::string& message) {
    const int32_t line = at != nullptr ? at->value.line : fallback;
    return Error{source + (line > 0 ? ":" + std::to_string(line) : "") + ": " + message};
  };
  // Typed reads of the values the translation needs; the rest pass through to the 0.2 reader.
  const auto integer = [&](const char* section, const char* field, int64_t fallback,
                           int64_t low) -> Result<int64_t> {
    const PyValue* v = Get(r, section, field);
    if (v == nullptr) return fallback;
    if (v->none || v->value.kind != TomlValue::Kind::kInteger || v->value.integer < low ||
        v->value.integer > (int64_t{1} << 40)) {
      return fail(v, 0,
                  std::string("config.") + section + "." + field + " (expected an integer from " +
                      std::to_string(low) + ")");
    }
    return v->value.integer;
  };
  const auto boolean = [&](const char* section, const char* field, bool fallback) -> Result<bool> {
    const PyValue* v = Get(r, section, field);
    if (v == nullptr) return fallback;
    if (v->none || v->value.kind != TomlValue::Kind::kBool) {
      return fail(v, 0,
                  std::string("config.") + section + "." + field + " (expected True or False)");
    }
    return v->value.boolean;
  };
  auto seq = integer("training", "max_context_length", 2048, 1);
  if (!seq.ok()) return seq.error();
  auto mb_tokens = integer("training", "num_tokens_per_microbatch_per_dp_rank", 16384, 1);
  if (!mb_tokens.ok()) return mb_tokens.error();
  auto step_tokens = integer("training", "num_tokens_per_train_step", -1, -1);
  if (!step_tokens.ok()) return step_tokens.error();
  auto microbatches = integer("parallelism", "num_pp_microbatches", 1, 1);
  if (!microbatches.ok()) return microbatches.error();
  auto pp = integer("parallelism", "pipeline_parallel_degree", 1, 1);
  if (!pp.ok()) return pp.error();
  auto tp = integer("parallelism", "tensor_parallel_degree", 1, 1);
  if (!tp.ok()) return tp.error();
  auto ep = integer("parallelism", "expert_parallel_degree", 1, 1);
  if (!ep.ok()) return ep.error();
  auto no_graphs = boolean("training", "disable_cuda_graphs", false);
  if (!no_graphs.ok()) return no_graphs.error();
  auto sequence_parallel = boolean("parallelism", "enable_sequence_parallel", true);
  if (!sequence_parallel.ok()) return sequence_parallel.error();
  auto symm_mem = boolean("parallelism", "enable_fsdp_symm_mem", false);
  if (!symm_mem.ok()) return symm_mem.error();
  auto compile = boolean("compile", "enable", false);
  if (!compile.ok()) return compile.error();
  auto async_tp = boolean("compile", "enable_async_tensor_parallel", false);
  if (!async_tp.ok()) return async_tp.error();

  const int64_t s = seq.value();
  if (mb_tokens.value() % s != 0) {
    return fail(
        Get(r, "training", "num_tokens_per_microbatch_per_dp_rank"), r.base_line,
        "training.num_tokens_per_microbatch_per_dp_rank " + std::to_string(mb_tokens.value()) +
            " is not a whole number of sequences of "
            "max_context_length " +
            std::to_string(s) + " (expected a multiple: stagecraft simulates whole sequences)");
  }
  if (step_tokens.value() == 0 || (step_tokens.value() > 0 && step_tokens.value() % s != 0)) {
    return fail(Get(r, "training", "num_tokens_per_train_step"), 0,
                "training.num_tokens_per_train_step " + std::to_string(step_tokens.value()) +
                    " is not a whole number of sequences of " + std::to_string(s) +
                    " tokens (expected -1 or a multiple of max_context_length)");
  }
  if (pp.value() > 1 && !no_graphs.value()) {
    return fail(Get(r, "parallelism", "pipeline_parallel_degree"), 0,
                "pipeline parallelism with CUDA graphs on: torchtitan's trainer.py refuses it "
                "(expected config.training.disable_cuda_graphs = True)");
  }
  if (!sequence_parallel.value() && tp.value() > 1) {
    return fail(Get(r, "parallelism", "enable_sequence_parallel"), 0,
                "parallelism.enable_sequence_parallel = False is not modelled (expected True, "
                "torchtitan's default: stagecraft's torchtitan TP shards the sequence)");
  }
  if (symm_mem.value()) {
    return fail(Get(r, "parallelism", "enable_fsdp_symm_mem"), 0,
                "parallelism.enable_fsdp_symm_mem = True is not modelled (expected False)");
  }
  if (ep.value() > 1 && tp.value() > 1) {
    return fail(Get(r, "parallelism", "expert_parallel_degree"), 0,
                "expert_parallel_degree > 1 with tensor_parallel_degree > 1: at this generation "
                "EP borrows TP ranks (parallel_dims.py, efsdp = dp_shard x cp x tp / ep), a "
                "layout stagecraft does not model (expected tp 1, or the 0.2 TOML)");
  }
  std::vector<std::string> components = {"model", "loss"};
  if (const PyValue* v = Get(r, "compile", "components"); v != nullptr) {
    if (v->none || v->value.kind != TomlValue::Kind::kStringArray) {
      return fail(v, 0, "config.compile.components (expected a list of strings)");
    }
    components = v->value.strings;
  }
  const bool compiles_model = compile.value() && std::find(components.begin(), components.end(),
                                                           "model") != components.end();
  if (async_tp.value() && !compiles_model) {
    return fail(Get(r, "compile", "enable_async_tensor_parallel"), r.base_line,
                "compile.enable_async_tensor_parallel needs compile.enable = True and \"model\" "
                "in compile.components (torchtitan's CompileConfig raises without them)");
  }
  // The pipeline's microbatches, checked under this generation's name.
  std::string schedule = "1F1B";
  if (const PyValue* v = Get(r, "parallelism", "pipeline_parallel_schedule");
      v != nullptr && v->value.kind == TomlValue::Kind::kString) {
    schedule = v->value.text;
  }
  const int64_t n = microbatches.value();
  if (pp.value() > 1) {
    const PyValue* at = Get(r, "parallelism", "num_pp_microbatches");
    const std::string count = "parallelism.num_pp_microbatches " + std::to_string(n);
    if (n < pp.value()) {
      return fail(at, 0,
                  count + " is fewer than the " + std::to_string(pp.value()) +
                      " pipeline ranks (expected at least pipeline_parallel_degree)");
    }
    if (schedule == "DualPipeV" && n < 2 * pp.value()) {
      return fail(at, 0,
                  count + ": DualPipeV needs at least 2 x pp = " + std::to_string(2 * pp.value()));
    }
    if ((schedule == "Interleaved1F1B" || schedule == "LoopedBFS") && n % pp.value() != 0) {
      return fail(at, 0,
                  count + " is not a multiple of pp " + std::to_string(pp.value()) +
                      " (torch's looped schedules require it)");
    }
  }

  // The 0.2 job config these values mean.
  TomlDocument document;
  document.tables.push_back(TomlTable{});
  const auto table = [&](const std::string& name) -> TomlTable& {
    for (TomlTable& t : document.tables) {
      if (t.name == name) return t;
    }
    document.tables.push_back(TomlTable{name, r.base_line, {}});
    return document.tables.back();
  };
  const auto put = [&](const std::string& name, const std::string& key, TomlValue value,
                       int32_t line) {
    value.line = line > 0 ? line : r.base_line;
    table(name).keys.emplace_back(key, std::move(value));
  };
  const auto line_of = [&](const char* section, const char* field) {
    const PyValue* v = Get(r, section, field);
    return v != nullptr ? v->value.line : r.base_line;
  };
  if (!r.flavor.empty()) {
    put("model", "name", Str("llama3"), r.model_line);
    put("model", "flavor", Str(r.flavor), r.model_line);
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
    put("model", "converters", converters, r.model_line);
  }
  const int64_t mbs = mb_tokens.value() / s;
  const int64_t local = pp.value() > 1 ? mbs * n : mbs;
  put("training", "seq_len", Int(s), line_of("training", "max_context_length"));
  put("training", "local_batch_size", Int(local),
      line_of("training", "num_tokens_per_microbatch_per_dp_rank"));
  if (step_tokens.value() > 0) {
    put("training", "global_batch_size", Int(step_tokens.value() / s),
        line_of("training", "num_tokens_per_train_step"));
  }
  for (const char* key : {"mixed_precision_param", "enable_cpu_offload"}) {
    if (const PyValue* v = Get(r, "training", key); v != nullptr && !v->none) {
      put("training", key, v->value, v->value.line);
    }
  }
  for (const char* key :
       {"data_parallel_replicate_degree", "data_parallel_shard_degree",
        "fsdp_reshard_after_forward", "tensor_parallel_degree", "pipeline_parallel_degree",
        "pipeline_parallel_first_stage_less_layers", "pipeline_parallel_last_stage_less_layers",
        "pipeline_parallel_layers_per_stage", "pipeline_parallel_schedule",
        "pipeline_parallel_schedule_csv", "context_parallel_degree", "expert_parallel_degree",
        "module_fqns_per_model_part"}) {
    const PyValue* v = Get(r, "parallelism", key);
    if (v == nullptr || v->none) continue;
    put("parallelism", key, v->value, v->value.line);
  }
  if (pp.value() > 1) {
    put("parallelism", "pipeline_parallel_microbatch_size", Int(mbs),
        line_of("parallelism", "num_pp_microbatches"));
  }
  put("parallelism", "enable_async_tensor_parallel", Bool(async_tp.value()),
      line_of("compile", "enable_async_tensor_parallel"));
  put("activation_checkpoint", "mode", Str(r.ac), r.ac_line);
  if (r.ac == "selective") {
    // This generation's SelectiveAC is the per-op policy (activation_checkpoint.py).
    put("activation_checkpoint", "selective_ac_option", Str("op"), r.ac_line);
  }
  put("compile", "enable", Bool(compiles_model), line_of("compile", "enable"));
  TomlValue compiled;  // whether the loss compiles too (the TOML reader's cross_entropy_fusion)
  compiled.kind = TomlValue::Kind::kStringArray;
  compiled.strings = components;
  put("compile", "components", compiled, line_of("compile", "components"));
  return ReadTorchtitanDocument(document, source, std::move(base), model_given);
}

}  // namespace stagecraft
