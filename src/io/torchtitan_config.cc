// torchtitan's rules, ported from (pytorch/torchtitan):
//   torchtitan/config/job_config.py @ 000204a4a8bf3d0f31adc44fc29855fbb6ea13d8: the tables, keys
//     and defaults (activation_checkpoint.mode "selective" with option "2", training.seq_len
//     2048, data_parallel_shard_degree -1, pipeline_parallel_schedule "1F1B",
//     pipeline_parallel_microbatch_size 1; global_batch_size -1 = local x dp);
//   torchtitan/distributed/parallel_dims.py, ParallelDims._validate: dp_shard -1 takes the ranks
//     left over; dp_replicate x dp_shard x cp x tp x pp = WORLD_SIZE; with ep > 1 (etp = tp) ep
//     divisible by cp and dividing dp_shard x cp; seq_len_divisor: seq_len divisible by tp x 2cp;
//   torchtitan/distributed/pipeline_parallel.py (pipeline_llm,
//   fb3b230e2a050885057a1a02f167658b0cb6c5ac):
//     with pipeline_parallel_layers_per_stage, ceil((layers + first_stage_less_layers +
//     last_stage_less_layers) / layers_per_stage) stages, a multiple of pp, one per rank for the
//     single-stage schedules (1F1B, GPipe) and at least two for the others; without it, one or
//     two per rank; microbatches = local_batch_size / pipeline_parallel_microbatch_size;
//   torch/distributed/pipelining/schedules.py: the looped schedules need the microbatches
//     divisible by pp, DualPipeV at least 2 x pp of them;
//   torchtitan/models/llama3/__init__.py @ 8c6bf93e5c5874c1f89c3a8e5a22fa5724ddebe7: the llama3
//     flavors; torchtitan/models/llama3/model.py, FeedForward: the MLP width from
//     ffn_dim_multiplier and multiple_of; the tiktoken tokenizer's 128,256 tokens;
//   torchtitan/models/llama3/parallelize_llama.py: async TP needs torch.compile.
#include "io/torchtitan_config.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "core/suggest.h"
#include "io/toml.h"
#include "schedule/partition.h"

namespace stagecraft {
namespace {

// The tables whose keys are read, each key known (so a typo gets "did you mean").
const std::vector<std::pair<std::string, std::vector<std::string>>>& ReadTables() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> kTables = {
      {"model",
       {"name", "flavor", "tokenizer_path", "hf_assets_path", "converters",
        "print_after_conversion"}},
      {"training",
       {"dataset", "dataset_path", "local_batch_size", "batch_size", "global_batch_size", "seq_len",
        "max_norm", "steps", "enable_cpu_offload", "mixed_precision_param",
        "mixed_precision_reduce", "compile", "gc_freq", "gc_debug", "seed", "deterministic",
        "warmup_steps"}},
      {"parallelism",
       {"data_parallel_replicate_degree",
        "data_parallel_shard_degree",
        "fsdp_reshard_after_forward",
        "tensor_parallel_degree",
        "disable_loss_parallel",
        "enable_loss_parallel",
        "enable_async_tensor_parallel",
        "enable_compiled_autograd",
        "pipeline_parallel_degree",
        "pipeline_parallel_split_points",
        "pipeline_parallel_layers_per_stage",
        "pipeline_parallel_first_stage_less_layers",
        "pipeline_parallel_last_stage_less_layers",
        "pipeline_parallel_schedule",
        "pipeline_parallel_schedule_csv",
        "pipeline_parallel_microbatch_size",
        "pipeline_parallel_microbatches",
        "module_fqns_per_model_part",
        "context_parallel_degree",
        "context_parallel_rotate_method",
        "expert_parallel_degree",
        "expert_tensor_parallel_degree"}},
      {"activation_checkpoint",
       {"mode", "selective_ac_option", "per_op_sac_force_recompute_mm_shapes_by_fqns"}},
      {"compile", {"enable", "components"}},
  };
  return kTables;
}

// Tables torchtitan has whose keys change nothing stagecraft simulates (read, not checked).
const std::vector<std::string>& IgnoredTables() {
  static const std::vector<std::string> kTables = {
      "job",          "profiling",         "metrics",         "optimizer",
      "lr_scheduler", "checkpoint",        "float8",          "mx",
      "comm",         "memory_estimation", "fault_tolerance", "experimental",
      "validation",   "quantize",          "float8_linear"};
  return kTables;
}

// One table's values with typed access; errors name the file, line, table and key.
class TableValues {
 public:
  TableValues(const TomlTable* table, std::string source, std::string name)
      : table_(table), source_(std::move(source)), name_(std::move(name)) {}

  const TomlValue* Find(const std::string& key) const {
    if (table_ == nullptr) return nullptr;
    for (const auto& [name, value] : table_->keys) {
      if (name == key) return &value;
    }
    return nullptr;
  }

  Error Fail(const std::string& key, const std::string& message) const {
    const TomlValue* value = Find(key);
    const int32_t line = value != nullptr ? value->line : (table_ != nullptr ? table_->line : 0);
    const std::string where = line > 0 ? source_ + ":" + std::to_string(line) : source_;
    return Error{where + ": [" + name_ + "] " + key + " " + message};
  }

  Result<std::optional<int64_t>> Int(const std::string& key, int64_t low) const {
    const TomlValue* value = Find(key);
    if (value == nullptr) return std::optional<int64_t>();
    if (value->kind != TomlValue::Kind::kInteger) {
      return Fail(key, std::string("is ") + TomlKindName(value->kind) + " (expected an integer)");
    }
    if (value->integer < low || value->integer > (int64_t{1} << 30)) {
      return Fail(key, "= " + std::to_string(value->integer) + " (expected an integer from " +
                           std::to_string(low) + " to 2^30)");
    }
    return std::optional<int64_t>(value->integer);
  }

  Result<std::optional<std::string>> String(const std::string& key) const {
    const TomlValue* value = Find(key);
    if (value == nullptr) return std::optional<std::string>();
    if (value->kind != TomlValue::Kind::kString) {
      return Fail(key, std::string("is ") + TomlKindName(value->kind) + " (expected a string)");
    }
    return std::optional<std::string>(value->text);
  }

  Result<std::optional<bool>> Bool(const std::string& key) const {
    const TomlValue* value = Find(key);
    if (value == nullptr) return std::optional<bool>();
    if (value->kind != TomlValue::Kind::kBool) {
      return Fail(key,
                  std::string("is ") + TomlKindName(value->kind) + " (expected true or false)");
    }
    return std::optional<bool>(value->boolean);
  }

  // An array of arrays of strings; nullopt when the key is absent.
  Result<std::optional<std::vector<std::vector<std::string>>>> NameLists(
      const std::string& key) const {
    const TomlValue* value = Find(key);
    if (value == nullptr) return std::optional<std::vector<std::vector<std::string>>>();
    if (value->kind == TomlValue::Kind::kStringArrays) {
      return std::optional<std::vector<std::vector<std::string>>>(value->arrays);
    }
    if (value->kind == TomlValue::Kind::kStringArray && value->strings.empty()) {
      return std::optional<std::vector<std::vector<std::string>>>(
          std::vector<std::vector<std::string>>());
    }
    return Fail(key, std::string("is ") + TomlKindName(value->kind) +
                         " (expected an array of arrays of module names, one per stage)");
  }

  // An array of strings, or one string of comma-separated names (torchtitan takes both).
  Result<std::vector<std::string>> Names(const std::string& key) const {
    const TomlValue* value = Find(key);
    std::vector<std::string> names;
    if (value == nullptr) return names;
    if (value->kind == TomlValue::Kind::kStringArray) return value->strings;
    if (value->kind != TomlValue::Kind::kString) {
      return Fail(
          key, std::string("is ") + TomlKindName(value->kind) + " (expected an array of strings)");
    }
    std::string name;
    for (char c : value->text + ",") {
      if (c != ',') {
        if (c != ' ') name += c;
        continue;
      }
      if (!name.empty()) names.push_back(name);
      name.clear();
    }
    return names;
  }

 private:
  const TomlTable* table_;
  std::string source_;
  std::string name_;
};

#define STAGECRAFT_ASSIGN_OR_RETURN(lhs, expr)         \
  auto lhs##_result = (expr);                          \
  if (!lhs##_result.ok()) return lhs##_result.error(); \
  auto lhs = std::move(lhs##_result).value()

Status CheckTables(const TomlDocument& document, const std::string& source) {
  std::vector<std::string> known;
  for (const auto& [name, keys] : ReadTables()) known.push_back(name);
  known.insert(known.end(), IgnoredTables().begin(), IgnoredTables().end());
  for (const TomlTable& table : document.tables) {
    if (table.name.empty()) {
      if (!table.keys.empty()) {
        return Error{source + ":" + std::to_string(table.keys.front().second.line) + ": key '" +
                     table.keys.front().first +
                     "' outside a table (expected it under a [table] header such as "
                     "[training])"};
      }
      continue;
    }
    if (std::find(known.begin(), known.end(), table.name) == known.end()) {
      return Error{source + ":" + std::to_string(table.line) + ": unknown table [" +
                   EscapeBytes(table.name) + "]" + DidYouMean(table.name, known) +
                   " (torchtitan's job config tables, torchtitan/config/job_config.py)"};
    }
    if (table.name == "experimental") {
      for (const auto& [key, value] : table.keys) {
        if (key.rfind("pipeline_parallel", 0) == 0 || key.rfind("context_parallel", 0) == 0 ||
            key == "enable_async_tensor_parallel") {
          return Error{source + ":" + std::to_string(value.line) + ": [experimental] " + key +
                       " moved to [parallelism] in torchtitan 0.2 (expected it there)"};
        }
      }
    }
    for (const auto& [name, keys] : ReadTables()) {
      if (name != table.name) continue;
      for (const auto& [key, value] : table.keys) {
        if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
        return Error{source + ":" + std::to_string(value.line) + ": unknown key '" +
                     EscapeBytes(key) + "' in [" + name + "]" + DidYouMean(key, keys) +
                     " (torchtitan/config/job_config.py)"};
      }
    }
  }
  return Status::Ok();
}

TableValues Table(const TomlDocument& document, const std::string& source,
                  const std::string& name) {
  return TableValues(document.Find(name), source, name);
}

struct Flavor {
  const char* name;
  int32_t layers;
  int64_t dim;
  int64_t heads;
  int64_t kv_heads;
  int64_t multiplier_tenths;  // ffn_dim_multiplier x 10
  int64_t multiple_of;
};

// torchtitan's FeedForward width: 2/3 of 4 x dim, times the multiplier, rounded up.
int64_t FlavorFfn(const Flavor& flavor) {
  int64_t hidden = 2 * (4 * flavor.dim) / 3;
  hidden = flavor.multiplier_tenths * hidden / 10;
  return flavor.multiple_of * ((hidden + flavor.multiple_of - 1) / flavor.multiple_of);
}

const std::vector<Flavor>& Llama3Flavors() {
  static const std::vector<Flavor> kFlavors = {{"8B", 32, 4096, 32, 8, 13, 1024},
                                               {"70B", 80, 8192, 64, 8, 13, 4096},
                                               {"405B", 126, 16384, 128, 8, 12, 4096}};
  return kFlavors;
}

constexpr int64_t kLlama3Vocab = 128256;  // the tiktoken tokenizer of Llama 3

// The model: the base's (checked against a known flavor) or the flavor's.
Status ReadModel(const TomlDocument& document, const std::string& source, bool model_given,
                 ModelSpec& model) {
  const TableValues table = Table(document, source, "model");
  STAGECRAFT_ASSIGN_OR_RETURN(name, table.String("name"));
  STAGECRAFT_ASSIGN_OR_RETURN(flavor_name, table.String("flavor"));
  const Flavor* flavor = nullptr;
  std::vector<std::string> flavors;
  for (const Flavor& candidate : Llama3Flavors()) {
    flavors.push_back(candidate.name);
    if (name.value_or("llama3") == "llama3" && flavor_name && *flavor_name == candidate.name) {
      flavor = &candidate;
    }
  }
  if (model_given) {
    if (!model.is_transformer()) {
      return Error{source +
                   ": the model given is not a transformer (expected --hf-config FILE "
                   "or a config with model.type: transformer)"};
    }
    if (flavor == nullptr) return Status::Ok();
    const TransformerSpec& t = model.transformer;
    if (t.layers != flavor->layers || t.hidden != flavor->dim || t.heads != flavor->heads ||
        t.kv_heads_or_heads() != flavor->kv_heads || t.ffn_or_default() != FlavorFfn(*flavor)) {
      return table.Fail("flavor", "'" + *flavor_name + "' is llama3's " +
                                      std::to_string(flavor->layers) + " layers of dim " +
                                      std::to_string(flavor->dim) + ", not the model given (" +
                                      std::to_string(t.layers) + " layers of " +
                                      std::to_string(t.hidden) +
                                      "); expected the flavor of the model you simulate");
    }
    return Status::Ok();
  }
  if (flavor == nullptr) {
    const std::string what = flavor_name ? "'" + EscapeBytes(*flavor_name) + "'" : "no flavor";
    return Error{source + ": " + what + (name ? " of model '" + EscapeBytes(*name) + "'" : "") +
                 " names no dimensions stagecraft knows (llama3 flavors " + JoinChoices(flavors) +
                 DidYouMean(flavor_name.value_or(""), flavors) +
                 "); give the model with --hf-config FILE or a config"};
  }
  TransformerSpec t;
  t.layers = flavor->layers;
  t.hidden = flavor->dim;
  t.heads = flavor->heads;
  t.kv_heads = flavor->kv_heads;
  t.ffn_hidden = FlavorFfn(*flavor);
  t.vocab = kLlama3Vocab;
  t.swiglu = true;
  t.causal = true;
  t.tied_embeddings = false;
  t.bias = false;
  t.learned_positions = false;
  ModelSpec flavored;
  flavored.seq_len = model.seq_len;
  flavored.micro_batch_size = model.micro_batch_size;
  flavored.name = "llama3 " + *flavor_name;
  flavored.transformer = t;
  model = flavored;
  return Status::Ok();
}

struct Layout {
  int64_t replicate = 1;
  int64_t shard = -1;
  int64_t tp = 1;
  int64_t pp = 1;
  int64_t cp = 1;
  int64_t ep = 1;
};

Result<Layout> ReadLayout(const TableValues& p, int64_t world, int32_t seq_len) {
  Layout l;
  STAGECRAFT_ASSIGN_OR_RETURN(replicate, p.Int("data_parallel_replicate_degree", 1));
  STAGECRAFT_ASSIGN_OR_RETURN(shard, p.Int("data_parallel_shard_degree", -1));
  STAGECRAFT_ASSIGN_OR_RETURN(tp, p.Int("tensor_parallel_degree", 1));
  STAGECRAFT_ASSIGN_OR_RETURN(pp, p.Int("pipeline_parallel_degree", 1));
  STAGECRAFT_ASSIGN_OR_RETURN(cp, p.Int("context_parallel_degree", 1));
  STAGECRAFT_ASSIGN_OR_RETURN(ep, p.Int("expert_parallel_degree", 1));
  STAGECRAFT_ASSIGN_OR_RETURN(etp, p.Int("expert_tensor_parallel_degree", 1));
  l.replicate = replicate.value_or(1);
  l.shard = shard.value_or(-1);
  l.tp = tp.value_or(1);
  l.pp = pp.value_or(1);
  l.cp = cp.value_or(1);
  l.ep = ep.value_or(1);
  if (l.shard == 0) {
    return p.Fail("data_parallel_shard_degree", "= 0 (expected -1, the ranks left over, or >= 1)");
  }
  int64_t others = 1;
  for (const int64_t degree : {l.replicate, l.cp, l.tp, l.pp}) {
    others *= degree;  // each degree <= 2^30 and the product so far <= world: no overflow
    if (others > world) {
      return p.Fail("data_parallel_shard_degree",
                    "has no ranks left: replicate " + std::to_string(l.replicate) + " x cp " +
                        std::to_string(l.cp) + " x tp " + std::to_string(l.tp) + " x pp " +
                        std::to_string(l.pp) + " exceed the cluster's " + std::to_string(world) +
                        " GPUs (torchtitan's parallel_dims.py; give --cluster DEVICExNODES with "
                        "the run's nodes, or other degrees)");
    }
  }
  if (l.shard < 0) {
    if (world % others != 0) {
      return p.Fail(
          "data_parallel_shard_degree",
          "-1 takes the ranks left over, but replicate x cp x tp x pp = " + std::to_string(others) +
              " does not divide the cluster's " + std::to_string(world) +
              " GPUs (torchtitan's parallel_dims.py; give --cluster DEVICExNODES with "
              "the run's nodes, or other degrees)");
    }
    l.shard = world / others;
  }
  if (l.replicate * l.shard * l.cp * l.tp * l.pp != world) {
    return p.Fail("data_parallel_shard_degree",
                  "x replicate x cp x tp x pp = " + std::to_string(l.shard * others) +
                      " is not the cluster's " + std::to_string(world) +
                      " GPUs (torchtitan's parallel_dims.py asserts it equals WORLD_SIZE; give "
                      "--cluster DEVICExNODES with the run's nodes)");
  }
  if (l.replicate > 1 && l.shard * l.cp > 1) {
    return p.Fail("data_parallel_replicate_degree",
                  "with data_parallel_shard_degree x context_parallel_degree > 1 is HSDP, which "
                  "stagecraft does not read yet (expected replicate 1, or shard and cp 1: DDP)");
  }
  if (l.ep > 1 && (etp.value_or(1) != 1 && etp.value_or(1) != l.tp)) {
    return p.Fail("expert_tensor_parallel_degree", "must be 1 or the tp degree (parallel_dims.py)");
  }
  if (l.ep > 1 && (l.ep % l.cp != 0 || (l.shard * l.cp) % l.ep != 0)) {
    return p.Fail("expert_parallel_degree",
                  "= " + std::to_string(l.ep) + " must be a multiple of cp (" +
                      std::to_string(l.cp) + ") dividing dp_shard x cp (" +
                      std::to_string(l.shard * l.cp) + ") (parallel_dims.py)");
  }
  if (seq_len % (l.tp * 2 * l.cp) != 0) {
    return p.Fail("tensor_parallel_degree",
                  "x 2 x context_parallel_degree = " + std::to_string(l.tp * 2 * l.cp) +
                      " does not divide seq_len " + std::to_string(seq_len) +
                      " (parallel_dims.py, seq_len_divisor: sequence parallelism splits the "
                      "sequence over tp, context parallelism into 2 x cp chunks)");
  }
  return l;
}

struct ScheduleName {
  const char* torchtitan;
  const char* stagecraft;
  bool single_stage;  // PipelineScheduleSingle: one stage per rank
  bool v_shaped;      // two stages per rank in a V
};

const std::vector<ScheduleName>& Schedules() {
  static const std::vector<ScheduleName> kSchedules = {
      {"1F1B", "1f1b", true, false},
      {"GPipe", "gpipe", true, false},
      {"Interleaved1F1B", "interleaved-1f1b", false, false},
      {"LoopedBFS", "looped-bfs", false, false},
      {"DualPipeV", "dualpipev", false, true},
      {"ZBVZeroBubble", "zb-v", false, true},
  };
  return kSchedules;
}

// The schedule by torchtitan's name; split points are refused.
Result<const ScheduleName*> ReadSchedule(const TableValues& p) {
  STAGECRAFT_ASSIGN_OR_RETURN(name, p.String("pipeline_parallel_schedule"));
  STAGECRAFT_ASSIGN_OR_RETURN(split_points, p.Names("pipeline_parallel_split_points"));
  if (!split_points.empty()) {
    return p.Fail("pipeline_parallel_split_points",
                  "are not read (expected pipeline_parallel_layers_per_stage, or none: "
                  "torchtitan's even split)");
  }
  const std::string wanted = name.value_or("1F1B");
  std::vector<std::string> names;
  for (const ScheduleName& schedule : Schedules()) {
    if (wanted == schedule.torchtitan) return &schedule;
    names.push_back(schedule.torchtitan);
  }
  return p.Fail("pipeline_parallel_schedule", "'" + EscapeBytes(wanted) + "' is not read" +
                                                  DidYouMean(wanted, names) + " (expected " +
                                                  JoinChoices(names) + ")");
}

// torchtitan's module_fqns_per_model_part (pipeline_llm takes it in place of its splitter;
// pipeline_module_split keeps each stage's modules of the model): the layers of each stage, the
// embedding and the head counted as a layer each (as EvenTransformerCounts). Read as a Llama's
// modules: "tok_embeddings" on the first stage, "norm" and "output" on the last, and "layers.N"
// for each decoder exactly once, each stage's a run that follows the stage before it (the
// stages run in their order, a stage's layers in the model's); nullopt when not given.
Result<std::optional<std::vector<int32_t>>> ModuleCounts(const TableValues& p, int32_t layers) {
  const std::string key = "module_fqns_per_model_part";
  STAGECRAFT_ASSIGN_OR_RETURN(lists, p.NameLists(key));
  if (!lists) return std::optional<std::vector<int32_t>>();
  if (lists->empty()) return p.Fail(key, "is empty (expected one array of module names a stage)");
  const auto stages = static_cast<int32_t>(lists->size());
  const std::vector<std::string> named = {"tok_embeddings", "norm", "output", "layers.N"};
  std::vector<int32_t> counts;
  std::vector<int32_t> stage_of(static_cast<size_t>(layers), -1);
  std::vector<std::string> seen_named;
  int32_t next = 0;  // the first decoder the next stage must hold
  for (int32_t stage = 0; stage < stages; ++stage) {
    const std::vector<std::string>& names = (*lists)[static_cast<size_t>(stage)];
    const std::string where = "stage " + std::to_string(stage) + " ";
    if (names.empty()) return p.Fail(key, where + "holds no module (expected at least one)");
    int32_t low = layers;
    int32_t high = -1;
    int32_t count = 0;
    for (const std::string& name : names) {
      if (name == "tok_embeddings" || name == "norm" || name == "output") {
        const bool first = name == "tok_embeddings";
        if (std::find(seen_named.begin(), seen_named.end(), name) != seen_named.end()) {
          return p.Fail(key, where + "names '" + name + "' again (expected each module once)");
        }
        seen_named.push_back(name);
        if (first ? stage != 0 : stage != stages - 1) {
          return p.Fail(key, where + "holds '" + name + "' (expected it on the " +
                                 (first ? "first" : "last") + " stage: the model runs " +
                                 (first ? "the embedding before the decoders"
                                        : "the final norm and the output after them") +
                                 ")");
        }
        continue;
      }
      const std::string prefix = "layers.";
      const std::string digits =
          name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : std::string();
      const bool number =
          !digits.empty() && digits.size() <= 9 &&
          std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
          (digits.size() == 1 || digits[0] != '0');
      if (!number) {
        return p.Fail(key, where + "names '" + EscapeBytes(name) + "'" + DidYouMean(name, named) +
                               " (expected tok_embeddings, layers.N, norm or output: a Llama's "
                               "modules)");
      }
      const int32_t layer = std::stoi(digits);
      if (layer >= layers) {
        return p.Fail(key, where + "names '" + name + "' of a model with " +
                               std::to_string(layers) + " layers (expected layers.0 to layers." +
                               std::to_string(layers - 1) + ")");
      }
      if (stage_of[static_cast<size_t>(layer)] >= 0) {
        return p.Fail(key, where + "names '" + name + "', which stage " +
                               std::to_string(stage_of[static_cast<size_t>(layer)]) +
                               " holds already (expected each layer once)");
      }
      stage_of[static_cast<size_t>(layer)] = stage;
      low = std::min(low, layer);
      high = std::max(high, layer);
      ++count;
    }
    if (count > 0 && (low != next || high - low + 1 != count)) {
      return p.Fail(key, where + "holds layers " + std::to_string(low) + "-" +
                             std::to_string(high) + " in " + std::to_string(count) +
                             (count == 1 ? " module" : " modules") + " (expected layers " +
                             std::to_string(next) +
                             " onward without a gap: the stages run the "
                             "decoders in order)");
    }
    next += count;
    const int32_t ends = (stage == 0 ? 1 : 0) + (stage == stages - 1 ? 1 : 0);
    if (count == 0 && ends == 0) {
      return p.Fail(key,
                    where + "holds no decoder (expected at least one layer on a middle stage)");
    }
    counts.push_back(count + ends);
  }
  for (const char* needed : {"tok_embeddings", "norm", "output"}) {
    if (std::find(seen_named.begin(), seen_named.end(), needed) == seen_named.end()) {
      return p.Fail(key, std::string("leaves out '") + needed + "' (expected it on the " +
                             (needed == std::string("tok_embeddings") ? "first" : "last") +
                             " stage)");
    }
  }
  if (next != layers) {
    return p.Fail(key, "holds " + std::to_string(next) + " of the model's " +
                           std::to_string(layers) + " layers (expected layers.0 to layers." +
                           std::to_string(layers - 1) + ", each once)");
  }
  return std::optional<std::vector<int32_t>>(std::move(counts));
}

// Stages per rank as torchtitan's pipeline_llm counts them, or as `modules`
// (module_fqns_per_model_part, ModuleCounts) gives them.
Result<int64_t> StagesPerRank(const TableValues& p, int32_t layers, int64_t pp,
                              const ScheduleName& schedule,
                              const std::optional<std::vector<int32_t>>& modules) {
  STAGECRAFT_ASSIGN_OR_RETURN(per_stage, p.Int("pipeline_parallel_layers_per_stage", 1));
  STAGECRAFT_ASSIGN_OR_RETURN(first_less, p.Int("pipeline_parallel_first_stage_less_layers", 0));
  STAGECRAFT_ASSIGN_OR_RETURN(last_less, p.Int("pipeline_parallel_last_stage_less_layers", 0));
  int64_t per_rank = schedule.single_stage ? 1 : 2;
  if (per_stage) {
    const int64_t first = first_less.value_or(1);
    const int64_t last = last_less.value_or(1);
    const int64_t stages = (layers + first + last + *per_stage - 1) / *per_stage;
    if (stages % pp != 0 || (schedule.single_stage ? stages != pp : stages < 2 * pp)) {
      return p.Fail("pipeline_parallel_layers_per_stage",
                    "= " + std::to_string(*per_stage) + " makes " + std::to_string(stages) +
                        " stages of (" + std::to_string(layers) + " layers + " +
                        std::to_string(first) + " + " + std::to_string(last) +
                        ") (expected a multiple of pp " + std::to_string(pp) + ", " +
                        (schedule.single_stage ? "one" : "at least two") + " per rank for " +
                        schedule.torchtitan + "; torchtitan's pipeline_parallel.py)");
    }
    per_rank = stages / pp;
  }
  if (modules) {
    // pipeline_module_split asserts the stages divide over the ranks, two a rank in a V; with
    // one stage a rank torch runs the single-stage schedules.
    const auto stages = static_cast<int64_t>(modules->size());
    const std::string what = "gives " + std::to_string(stages) + " stages";
    if (stages % pp != 0) {
      return p.Fail("module_fqns_per_model_part",
                    what + " (expected a multiple of pp " + std::to_string(pp) +
                        "; torchtitan's pipeline_module_split asserts it)");
    }
    if (schedule.v_shaped && stages != 2 * pp) {
      return p.Fail("module_fqns_per_model_part", what + " over pp " + std::to_string(pp) +
                                                      " (expected 2 x pp: " + schedule.torchtitan +
                                                      " runs two stages a rank in a V)");
    }
    if (schedule.single_stage ? stages != pp : stages < 2 * pp) {
      return p.Fail("module_fqns_per_model_part",
                    what + " over pp " + std::to_string(pp) + " (expected " +
                        (schedule.single_stage ? "one" : "at least two") + " per rank for " +
                        schedule.torchtitan + ")");
    }
    return stages / pp;
  }
  if (schedule.v_shaped && per_rank != 2) {
    return p.Fail("pipeline_parallel_schedule",
                  std::string(schedule.torchtitan) +
                      " runs two stages per rank in a V (expected "
                      "pipeline_parallel_layers_per_stage for 2 x pp stages)");
  }
  if (layers < pp * per_rank) {
    return p.Fail("pipeline_parallel_degree",
                  "x stages per rank = " + std::to_string(pp * per_rank) + " stages for " +
                      std::to_string(layers) + " layers (expected at most one stage per layer)");
  }
  return per_rank;
}

// The microbatch size: pipeline_parallel_microbatch_size, or the local batch over the older
// pipeline_parallel_microbatches.
Result<int64_t> MicrobatchSize(const TableValues& p, int64_t local_batch) {
  STAGECRAFT_ASSIGN_OR_RETURN(microbatch_size, p.Int("pipeline_parallel_microbatch_size", 1));
  STAGECRAFT_ASSIGN_OR_RETURN(microbatches, p.Int("pipeline_parallel_microbatches", 1));
  if (!microbatches) return microbatch_size.value_or(1);
  if (microbatch_size) {
    return p.Fail("pipeline_parallel_microbatches",
                  "and pipeline_parallel_microbatch_size both given (expected one of them)");
  }
  if (local_batch % *microbatches != 0) {
    return p.Fail("pipeline_parallel_microbatches", "= " + std::to_string(*microbatches) +
                                                        " does not divide the local batch " +
                                                        std::to_string(local_batch));
  }
  return local_batch / *microbatches;
}

// The schedule, its stages per rank and the microbatches; fills the parallel spec.
Status ReadPipeline(const TableValues& p, const TransformerSpec& t, int64_t local_batch,
                    int64_t accumulation, const std::optional<std::vector<int32_t>>& modules,
                    ParallelSpec& parallel, ModelSpec& model, ScheduleSpec& schedule) {
  STAGECRAFT_ASSIGN_OR_RETURN(found, ReadSchedule(p));
  const int64_t pp = parallel.pp;
  STAGECRAFT_ASSIGN_OR_RETURN(per_rank, StagesPerRank(p, t.layers, pp, *found, modules));
  STAGECRAFT_ASSIGN_OR_RETURN(mbs, MicrobatchSize(p, local_batch));
  if (local_batch % mbs != 0) {
    return p.Fail("pipeline_parallel_microbatch_size",
                  "= " + std::to_string(mbs) + " does not divide the local batch " +
                      std::to_string(local_batch) + " (expected a divisor)");
  }
  const int64_t n = local_batch / mbs;
  if (accumulation > 1) {
    return p.Fail("pipeline_parallel_degree",
                  "> 1 with gradient accumulation (global batch / (local batch x dp) = " +
                      std::to_string(accumulation) +
                      ") runs one pipeline flush per step, which stagecraft does not read yet "
                      "(expected local_batch_size = global_batch_size / dp)");
  }
  if (!found->single_stage && !found->v_shaped && n % pp != 0) {
    return p.Fail("pipeline_parallel_microbatch_size",
                  "gives " + std::to_string(n) + " microbatches, not a multiple of pp " +
                      std::to_string(pp) + " (torch's looped schedules require it)");
  }
  if (found->torchtitan == std::string("DualPipeV") && n < 2 * pp) {
    return p.Fail("pipeline_parallel_microbatch_size",
                  "gives " + std::to_string(n) +
                      " microbatches (DualPipeV needs at least 2 x pp = " + std::to_string(2 * pp) +
                      ")");
  }
  if (n < pp) {
    return p.Fail("pipeline_parallel_microbatch_size",
                  "gives " + std::to_string(n) + " microbatches, fewer than the " +
                      std::to_string(pp) + " pipeline ranks (expected a smaller size)");
  }
  parallel.vpp = static_cast<int32_t>(per_rank);
  parallel.microbatches = static_cast<int32_t>(n);
  model.micro_batch_size = static_cast<int32_t>(mbs);
  schedule.name = found->stagecraft;
  // With a schedule CSV torch's _PipelineScheduleRuntime runs its actions; the named class still
  // gives the stages per rank and their placement (pipeline_llm, pipeline_module_split). The
  // path is as written: the run reads it from the job config's folder (run/run_setup.cc).
  STAGECRAFT_ASSIGN_OR_RETURN(csv, p.String("pipeline_parallel_schedule_csv"));
  schedule.csv = csv.value_or("");
  return Status::Ok();
}

// The activation checkpointing into p.recompute and p.recompute_num_layers. "selective" with a
// number N is torchtitan's layer policy (torchtitan/distributed/activation_checkpoint.py at v0.2.0,
// _apply_layer_sac): one process-wide counter over the transformer blocks, a block checkpointed
// (recomputed whole) when the count is a multiple of N, every block when N is 0. Without pipeline
// parallelism the process holds the whole model, so floor(layers / N) of its blocks recompute
// (recompute_num_layers, costed as that share of the layers; none when N > layers). Under
// pipeline parallelism the counter runs over a rank's chunks, so chunks recompute different
// counts: refused.
Status ReadRecompute(const TableValues& ac, int32_t layers, ParallelSpec& p) {
  STAGECRAFT_ASSIGN_OR_RETURN(mode, ac.String("mode"));
  STAGECRAFT_ASSIGN_OR_RETURN(option, ac.String("selective_ac_option"));
  p.recompute_num_layers = 0;
  const std::string m = mode.value_or("selective");
  if (m == "none" || m == "full") {
    p.recompute = m == "none" ? Recompute::kNone : Recompute::kFull;
    return Status::Ok();
  }
  if (m != "selective") {
    return ac.Fail("mode", "'" + EscapeBytes(m) + "'" +
                               DidYouMean(m, {"none", "selective", "full"}) +
                               " (expected 'none', 'selective' or 'full')");
  }
  const std::string o = option.value_or("2");
  if (o == "op") {
    p.recompute = Recompute::kSelectiveOp;
    return Status::Ok();
  }
  const std::string what =
      std::string(option ? ""
                  : mode ? "'selective' with torchtitan's default option "
                         : "absent: torchtitan's default 'selective' with option ") +
      "'" + EscapeBytes(o) + "'";
  int64_t every = 0;
  const bool number = !o.empty() && o.size() <= 9 &&
                      std::all_of(o.begin(), o.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!number) {
    return ac.Fail(option ? "selective_ac_option" : "mode",
                   what + " (expected 'op' or a number N: every Nth layer checkpointed)");
  }
  for (char c : o) every = every * 10 + (c - '0');
  if (every <= 1) {  // 0 and 1: every block
    p.recompute = Recompute::kFull;
    return Status::Ok();
  }
  if (p.pp > 1) {
    return ac.Fail(option ? "selective_ac_option" : "mode",
                   what +
                       " (every Nth layer checkpointed) is read without pipeline parallelism "
                       "only: torchtitan's counter runs over a rank's chunks, which then "
                       "recompute different counts (expected selective_ac_option 'op', or mode "
                       "'full' or 'none')");
  }
  const int64_t recomputed = layers / every;
  p.recompute = recomputed > 0 ? Recompute::kFull : Recompute::kNone;
  p.recompute_num_layers =
      recomputed > 0 && recomputed < layers ? static_cast<int32_t>(recomputed) : 0;
  return Status::Ok();
}

// FSDP's resharding, compile (fused kernels), async TP, float8; what is not modelled is an error.
Status ReadEngineOptions(const TableValues& model, const TableValues& training,
                         const TableValues& parallelism, const TableValues& compile,
                         ParallelSpec& p) {
  STAGECRAFT_ASSIGN_OR_RETURN(reshard, parallelism.String("fsdp_reshard_after_forward"));
  const std::string r = reshard.value_or("default");
  if (r != "default" && r != "always" && r != "never") {
    return parallelism.Fail("fsdp_reshard_after_forward",
                            "'" + EscapeBytes(r) + "' (expected 'default', 'always' or 'never')");
  }
  p.reshard_after_forward = r == "always"  ? ReshardAfterForward::kYes
                            : r == "never" ? ReshardAfterForward::kNo
                                           : ReshardAfterForward::kDefault;
  // Context parallelism is PyTorch's context_parallel, with torchtitan's rotate method (default
  // "allgather": config_manager.py at 9dec370; torch's _cp_options.rotate_method likewise).
  STAGECRAFT_ASSIGN_OR_RETURN(rotate, parallelism.String("context_parallel_rotate_method"));
  const std::string method = rotate.value_or("allgather");
  const auto& rotations = CpRotateChoices();
  const auto chosen = std::find_if(rotations.begin(), rotations.end(),
                                   [&](const auto& choice) { return choice.first == method; });
  if (chosen == rotations.end()) {
    return parallelism.Fail("context_parallel_rotate_method",
                            "'" + EscapeBytes(method) + "' (expected 'allgather' or 'alltoall')");
  }
  p.cp_all_gather = false;
  p.cp_rotate = p.cp <= 1 ? CpRotate::kNone : chosen->second;
  STAGECRAFT_ASSIGN_OR_RETURN(old_compile, training.Bool("compile"));
  STAGECRAFT_ASSIGN_OR_RETURN(compile_enable, compile.Bool("enable"));
  p.fused_kernels = compile_enable.value_or(old_compile.value_or(false));
  // The loss is PyTorch's cross_entropy on the logits cast to fp32 (torchtitan's
  // cross_entropy_loss, components/loss.py), compiled with the model where compile is on and
  // compile.components (default ["model", "loss"]) names it: build_cross_entropy_loss at
  // e7c0cae and later. torchtitan of 2024 (train.py at 9dec370) left it eager under compile;
  // a config of that generation says cross_entropy_fusion: torch.
  STAGECRAFT_ASSIGN_OR_RETURN(components, compile.Names("components"));
  const bool loss_compiled =
      p.fused_kernels && (components.empty() || std::find(components.begin(), components.end(),
                                                          "loss") != components.end());
  p.cross_entropy_fusion =
      loss_compiled ? CrossEntropyFusion::kTorchCompiled : CrossEntropyFusion::kTorch;
  STAGECRAFT_ASSIGN_OR_RETURN(async_tp, parallelism.Bool("enable_async_tensor_parallel"));
  p.async_tp = async_tp.value_or(false);
  if (p.async_tp && !p.fused_kernels) {
    return parallelism.Fail("enable_async_tensor_parallel",
                            "needs torch.compile (expected [compile] enable = true; "
                            "parallelize_llama.py raises without it)");
  }
  STAGECRAFT_ASSIGN_OR_RETURN(converters, model.Names("converters"));
  p.fp8 = false;
  for (const std::string& converter : converters) {
    if (converter == "float8") {
      p.fp8 = true;
    } else {
      return model.Fail("converters", "'" + EscapeBytes(converter) +
                                          "' is not read (expected \"float8\" or none)");
    }
  }
  STAGECRAFT_ASSIGN_OR_RETURN(precision, training.String("mixed_precision_param"));
  if (precision.value_or("bfloat16") != "bfloat16") {
    return training.Fail("mixed_precision_param",
                         "'" + EscapeBytes(*precision) + "' is not read (expected \"bfloat16\")");
  }
  STAGECRAFT_ASSIGN_OR_RETURN(offload, training.Bool("enable_cpu_offload"));
  if (offload.value_or(false)) {
    return training.Fail("enable_cpu_offload", "is not modelled (expected false)");
  }
  return Status::Ok();
}

}  // namespace

std::string Llama3FlavorOf(const TransformerSpec& t) {
  for (const Flavor& flavor : Llama3Flavors()) {
    if (t.layers == flavor.layers && t.hidden == flavor.dim && t.heads == flavor.heads &&
        t.kv_heads_or_heads() == flavor.kv_heads && t.ffn_or_default() == FlavorFfn(flavor) &&
        t.vocab == kLlama3Vocab && !t.moe() && !t.mla()) {
      return flavor.name;
    }
  }
  return "";
}

Result<Config> ReadTorchtitanConfig(const std::string& text, const std::string& source, Config base,
                                    bool model_given) {
  auto parsed = ParseToml(text, source);
  if (!parsed.ok()) return parsed.error();
  return ReadTorchtitanDocument(parsed.value(), source, std::move(base), model_given);
}

Result<Config> ReadTorchtitanDocument(const TomlDocument& document, const std::string& source,
                                      Config base, bool model_given) {
  STAGECRAFT_RETURN_IF_ERROR(CheckTables(document, source));
  Config config = std::move(base);
  const TableValues model = Table(document, source, "model");
  const TableValues training = Table(document, source, "training");
  const TableValues parallelism = Table(document, source, "parallelism");
  const TableValues ac = Table(document, source, "activation_checkpoint");
  const TableValues compile = Table(document, source, "compile");
  STAGECRAFT_RETURN_IF_ERROR(ReadModel(document, source, model_given, config.model));
  const TransformerSpec& t = config.model.transformer;
  STAGECRAFT_ASSIGN_OR_RETURN(seq_len, training.Int("seq_len", 1));
  config.model.seq_len = static_cast<int32_t>(seq_len.value_or(2048));
  if (!config.cluster.given) {
    return Error{source +
                 ": torchtitan's layout fills the cluster's GPUs (WORLD_SIZE); give "
                 "--cluster DEVICExNODES with the run's nodes"};
  }
  const int64_t world = int64_t{config.cluster.nodes} * config.cluster.devices_per_node;
  STAGECRAFT_ASSIGN_OR_RETURN(layout, ReadLayout(parallelism, world, config.model.seq_len));
  STAGECRAFT_ASSIGN_OR_RETURN(local_batch, training.Int("local_batch_size", 1));
  STAGECRAFT_ASSIGN_OR_RETURN(old_batch, training.Int("batch_size", 1));
  STAGECRAFT_ASSIGN_OR_RETURN(global_batch, training.Int("global_batch_size", -1));
  if (local_batch && old_batch) {
    return training.Fail("batch_size",
                         "and local_batch_size both given (expected local_batch_size)");
  }
  const int64_t local = local_batch.value_or(old_batch.value_or(8));
  const int64_t dp = layout.replicate * layout.shard;
  const int64_t global = global_batch.value_or(-1) < 0 ? local * dp : *global_batch;
  if (global == 0 || global % (local * dp) != 0) {
    return training.Fail("global_batch_size", "= " + std::to_string(global) +
                                                  " is not a multiple of local_batch_size x dp = " +
                                                  std::to_string(local * dp) +
                                                  " (torchtitan's train.py asserts it)");
  }
  const int64_t accumulation = global / (local * dp);
  ParallelSpec& p = config.parallel;
  p.tp = static_cast<int32_t>(layout.tp);
  p.pp = static_cast<int32_t>(layout.pp);
  p.cp = static_cast<int32_t>(layout.cp);
  p.ep = static_cast<int32_t>(layout.ep);
  p.dp = static_cast<int32_t>(dp);
  config.schedule.name = "1f1b";
  config.schedule.group_size = 0;
  p.vpp = 1;
  STAGECRAFT_ASSIGN_OR_RETURN(modules, ModuleCounts(parallelism, t.layers));
  if (modules && p.pp == 1 && modules->size() != 1) {
    return parallelism.Fail("module_fqns_per_model_part",
                            "gives " + std::to_string(modules->size()) +
                                " stages without pipeline parallelism (expected "
                                "pipeline_parallel_degree > 1, or none)");
  }
  if (p.pp > 1) {
    STAGECRAFT_RETURN_IF_ERROR(ReadPipeline(parallelism, t, local, accumulation, modules, p,
                                            config.model, config.schedule));
  } else {
    config.model.micro_batch_size = static_cast<int32_t>(local);
    p.microbatches = static_cast<int32_t>(accumulation);
  }
  STAGECRAFT_RETURN_IF_ERROR(ReadRecompute(ac, t.layers, p));
  // The layout torchtitan runs (pipeline_parallel.py, generate_llm_fqn_per_model_part): its
  // splitter with the first and last stage's less-layers weights (default 1 each), as the
  // planner's torchtitan candidates run it (plan/plan.cc, Candidate::StageCounts).
  p.partition = PartitionMethod::kCounts;
  p.layout.clear();
  p.layer_counts = EvenTransformerCounts(t.layers, p.pp * p.vpp);
  if (modules && p.pp > 1) {
    p.layer_counts = *modules;
  } else if (p.pp * p.vpp > 1) {
    STAGECRAFT_ASSIGN_OR_RETURN(first_less,
                                parallelism.Int("pipeline_parallel_first_stage_less_layers", 0));
    STAGECRAFT_ASSIGN_OR_RETURN(last_less,
                                parallelism.Int("pipeline_parallel_last_stage_less_layers", 0));
    auto counts = TorchtitanTransformerCounts(t.layers, p.pp * p.vpp,
                                              static_cast<int32_t>(first_less.value_or(1)),
                                              static_cast<int32_t>(last_less.value_or(1)));
    if (!counts.ok()) {
      return parallelism.Fail(
          "pipeline_parallel_first_stage_less_layers",
          "and pipeline_parallel_last_stage_less_layers: " + counts.error().message +
              " (torchtitan's pipeline_parallel.py, "
              "generate_llm_fqn_per_model_part)");
    }
    p.layer_counts = std::move(counts).value();
  }
  p.placement = Placement::kLoop;
  p.sequence_parallel = p.tp > 1;  // torchtitan's TP always shards the sequence
  p.distributed_optimizer = false;
  p.overlap_grad_reduce = false;
  p.overlap_param_gather = false;
  p.grad_buckets = GradBuckets::kNone;
  p.zero_stage = layout.shard * layout.cp > 1 ? 3 : 0;  // FSDP2 over dp_shard x cp
  STAGECRAFT_RETURN_IF_ERROR(ReadEngineOptions(model, training, parallelism, compile, p));
  config.model.name = config.model.name.empty() ? source : config.model.name;
  return config;
}

}  // namespace stagecraft
