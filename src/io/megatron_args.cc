// ReadMegatronArgs: Megatron-LM's and Megatron-DeepSpeed's arguments, one row per argument in
// kArguments (its flag, the engines that take it, how its value parses and what it sets), read
// line by line; then the rules across arguments, by group (DeepSpeed's pipeline model,
// recomputation, the model's shape, MLA, MoE, the pipeline's layout, the batch) in the order
// their errors are reported.
#include "io/megatron_args.h"

#include <array>
#include <charconv>
#include <limits>
#include <sstream>
#include <vector>

#include "core/suggest.h"
#include "io/hf_config.h"
#include "schedule/partition.h"

namespace stagecraft {
namespace {

// What the lines say: the config being filled, and what settles only once every argument is read.
struct Arguments {
  Config config;
  bool deepspeed = false;                // MegatronDialect::kMegatronDeepSpeed
  int64_t global_batch = 0;              // --global-batch-size; 0 = not given
  int64_t layers_per_virtual_stage = 0;  // --num-layers-per-virtual-pipeline-stage; 0 = none
  bool grouped = false;                  // --group-query-attention
  bool latent = false;                   // --multi-latent-attention
  std::string latent_where;              // where a latent rank or head width was given
  int64_t moe_layers = -1;               // --moe-layer-freq's MoE layers; -1 = every layer
  std::string moe_layer_freq_where;      // where --moe-layer-freq was given
  int64_t first_stage_layers = 0;        // --decoder-first-pipeline-num-layers; 0 = not given
  int64_t last_stage_layers = 0;         // --decoder-last-pipeline-num-layers; 0 = not given
  // --no-pipeline-parallel (Megatron-DeepSpeed): the Megatron model, not DeepSpeed's pipe.
  bool no_pipeline_parallel = false;
  std::string recompute_method = "uniform";  // --recompute-method
  std::string recompute_method_where;
  int64_t recompute_num_layers = 0;  // --recompute-num-layers; 0 = not given
  std::string layout;                // --pipeline-model-parallel-layout, "" = not given
  std::string layout_where;

  TransformerSpec& transformer() { return config.model.transformer; }
  ParallelSpec& parallel() { return config.parallel; }
};

// One `--flag [value]` line as read: `where` is "source:line: ", `number` the value parsed as a
// whole number, `dense_layers` and `moe_layers` the dense prefix of --moe-layer-freq (-1: none).
struct ArgLine {
  std::string where;
  std::string flag;
  std::string value;
  int64_t number = 0;
  int64_t dense_layers = -1;
  int64_t moe_layers = -1;
};

// The engines that take an argument: both dialects, or one of them (MegatronDialect).
enum class Engines : uint8_t { kBoth, kMegatronLm, kDeepSpeed };

struct MegatronArgument;
// How a value parses into its ArgLine; the error names the line and the flag.
using Parse = Status (*)(const MegatronArgument& argument, ArgLine& line);
// What a read argument sets.
using Apply = void (*)(const ArgLine& line, Arguments& args);

// One argument stagecraft reads, as `plan --export megatron` (and `deepspeed`) writes it.
struct MegatronArgument {
  const char* flag;
  Engines engines;
  Parse parse;                              // nullptr: a switch, which takes no value
  Apply apply;                              // nullptr: checked, but changes nothing simulated
  std::array<const char*, 4> choices = {};  // ParseChoice: the values accepted, in order
};

// A whole number from `low` to 2^31 - 1.
Status ParseWholeNumber(ArgLine& line, int64_t low) {
  const char* end = line.value.data() + line.value.size();
  const auto [stop, error] = std::from_chars(line.value.data(), end, line.number);
  if (error != std::errc() || stop != end || line.number < low ||
      line.number > std::numeric_limits<int32_t>::max()) {
    return Error{line.where + line.flag + " '" + EscapeBytes(line.value) +
                 "' is not a whole number >= " + std::to_string(low)};
  }
  return Status::Ok();
}

Status ParseCount(const MegatronArgument&, ArgLine& line) { return ParseWholeNumber(line, 1); }

Status ParseCountOrZero(const MegatronArgument&, ArgLine& line) {
  return ParseWholeNumber(line, 0);
}

// A count of decoder layers: at most kMaxTransformerLayers.
Status ParseLayerCount(const MegatronArgument& argument, ArgLine& line) {
  STAGECRAFT_RETURN_IF_ERROR(ParseCount(argument, line));
  if (line.number <= kMaxTransformerLayers) return Status::Ok();
  return Error{line.where + "--num-layers " + std::to_string(line.number) +
               " is above the limit of " + std::to_string(kMaxTransformerLayers) +
               " layers (more than any published model; expected a real layer count)"};
}

Status ParseChoice(const MegatronArgument& argument, ArgLine& line) {
  std::string expected;
  for (const char* name : argument.choices) {
    if (name == nullptr) break;
    if (line.value == name) return Status::Ok();
    expected += std::string(expected.empty() ? "" : ", ") + name;
  }
  return Error{line.where + line.flag + " '" + EscapeBytes(line.value) + "' (expected " + expected +
               ")"};
}

// Any text: a path or a name that changes nothing simulated, or a layout read once all is known.
Status ParseText(const MegatronArgument&, ArgLine&) { return Status::Ok(); }

// Megatron's moe_freq_type (arguments.py): an int N (every N-th layer MoE) or a Python list
// expression. stagecraft models a dense prefix: 1, or [0]*K+[1]*N (in parentheses or not), K
// dense layers then N MoE layers.
Status ParseMoeLayerFreq(const MegatronArgument&, ArgLine& line) {
  std::string spelled = line.value;
  if (spelled.size() >= 2 && spelled.front() == '(' && spelled.back() == ')') {
    spelled = spelled.substr(1, spelled.size() - 2);
  }
  if (spelled == "1") return Status::Ok();
  const auto count = [](const std::string& digits, int64_t* out) {
    const char* end = digits.data() + digits.size();
    const auto [stop, error] = std::from_chars(digits.data(), end, *out);
    return error == std::errc() && stop == end && *out >= 0 && *out <= kMaxTransformerLayers;
  };
  const size_t plus = spelled.find("+[1]*");
  if (spelled.rfind("[0]*", 0) == 0 && plus != std::string::npos &&
      count(spelled.substr(4, plus - 4), &line.dense_layers) &&
      count(spelled.substr(plus + 5), &line.moe_layers)) {
    return Status::Ok();
  }
  return Error{line.where + "--moe-layer-freq '" + EscapeBytes(line.value) +
               "' (expected 1 or ([0]*K+[1]*N): stagecraft models K dense layers, then MoE "
               "layers, as `plan --export megatron` writes them)"};
}

void ApplyMoeLayerFreq(const ArgLine& line, Arguments& args) {
  args.moe_layer_freq_where = line.where;
  if (line.moe_layers < 0) return;  // 1: every layer (or as an earlier line said)
  args.transformer().dense_layers = static_cast<int32_t>(line.dense_layers);
  args.moe_layers = line.moe_layers;
}

// A latent-attention rank or head width, read only with --multi-latent-attention.
void NoteLatentWhere(const ArgLine& line, Arguments& args) { args.latent_where = line.where; }

// A parsed whole number as the int32_t fields hold it (ParseWholeNumber caps it at 2^31 - 1).
int32_t Narrow(int64_t number) { return static_cast<int32_t>(number); }

// Every argument read, switches first; the order is the one "did you mean" searches.
constexpr MegatronArgument kArguments[] = {
    {"--group-query-attention", Engines::kBoth, nullptr,
     [](const ArgLine&, Arguments& args) { args.grouped = true; }},
    {"--swiglu", Engines::kBoth, nullptr,
     [](const ArgLine&, Arguments& args) { args.transformer().swiglu = true; }},
    {"--disable-bias-linear", Engines::kBoth, nullptr,
     [](const ArgLine&, Arguments& args) { args.transformer().bias = false; }},
    {"--untie-embeddings-and-output-weights", Engines::kBoth, nullptr,
     [](const ArgLine&, Arguments& args) { args.transformer().tied_embeddings = false; }},
    {"--mock-data", Engines::kBoth, nullptr, nullptr},
    {"--sequence-parallel", Engines::kBoth, nullptr,
     [](const ArgLine&, Arguments& args) { args.parallel().sequence_parallel = true; }},
    {"--multi-latent-attention", Engines::kBoth, nullptr,
     [](const ArgLine&, Arguments& args) { args.latent = true; }},
    {"--moe-grouped-gemm", Engines::kBoth, nullptr, nullptr},
    {"--use-distributed-optimizer", Engines::kMegatronLm, nullptr,
     [](const ArgLine&, Arguments& args) { args.parallel().distributed_optimizer = true; }},
    {"--overlap-param-gather", Engines::kMegatronLm, nullptr,
     [](const ArgLine&, Arguments& args) { args.parallel().overlap_param_gather = true; }},
    {"--overlap-grad-reduce", Engines::kMegatronLm, nullptr,
     [](const ArgLine&, Arguments& args) { args.parallel().overlap_grad_reduce = true; }},
    {"--bf16", Engines::kBoth, nullptr, nullptr},
    {"--use-flash-attn", Engines::kBoth, nullptr,
     [](const ArgLine&, Arguments& args) { args.transformer().causal = true; }},
    {"--deepspeed", Engines::kDeepSpeed, nullptr, nullptr},
    {"--no-pipeline-parallel", Engines::kDeepSpeed, nullptr,
     [](const ArgLine&, Arguments& args) { args.no_pipeline_parallel = true; }},
    // The model's shape.
    {"--num-layers", Engines::kBoth, ParseLayerCount,
     [](const ArgLine& line, Arguments& args) { args.transformer().layers = Narrow(line.number); }},
    {"--hidden-size", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.transformer().hidden = line.number; }},
    {"--num-attention-heads", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.transformer().heads = line.number; }},
    {"--num-query-groups", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.transformer().kv_heads = line.number; }},
    {"--kv-channels", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.transformer().head_dim = line.number; }},
    {"--ffn-hidden-size", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.transformer().ffn_hidden = line.number; }},
    // Mixture of experts; the shared experts' width becomes a count once all is read.
    {"--num-experts", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.transformer().experts = line.number; }},
    {"--moe-router-topk", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) {
       args.transformer().experts_per_token = line.number;
     }},
    {"--moe-ffn-hidden-size", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.transformer().expert_ffn = line.number; }},
    {"--moe-shared-expert-intermediate-size", Engines::kBoth, ParseCountOrZero,
     [](const ArgLine& line, Arguments& args) { args.transformer().shared_experts = line.number; }},
    {"--moe-layer-freq", Engines::kBoth, ParseMoeLayerFreq, ApplyMoeLayerFreq},
    // The dispatch stagecraft models is the all-to-all over the expert-parallel group.
    {"--moe-token-dispatcher-type", Engines::kBoth, ParseChoice, nullptr, {"alltoall"}},
    // Multi-head latent attention.
    {"--q-lora-rank", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) {
       args.transformer().q_lora_rank = line.number;
       NoteLatentWhere(line, args);
     }},
    {"--kv-lora-rank", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) {
       args.transformer().kv_lora_rank = line.number;
       NoteLatentWhere(line, args);
     }},
    {"--qk-head-dim", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) {
       args.transformer().qk_nope_dim = line.number;
       NoteLatentWhere(line, args);
     }},
    {"--qk-pos-emb-head-dim", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) {
       args.transformer().qk_rope_dim = line.number;
       NoteLatentWhere(line, args);
     }},
    {"--v-head-dim", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) {
       args.transformer().v_head_dim = line.number;
       NoteLatentWhere(line, args);
     }},
    // The norm and the positions.
    {"--normalization", Engines::kBoth, ParseChoice, nullptr, {"LayerNorm", "RMSNorm"}},
    {"--position-embedding-type",
     Engines::kBoth,
     ParseChoice,
     [](const ArgLine& line, Arguments& args) {
       args.transformer().learned_positions = line.value == "learned_absolute";
     },
     {"learned_absolute", "rope"}},
    // The sequence, the vocabulary and the batch.
    {"--seq-length", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.config.model.seq_len = Narrow(line.number); }},
    {"--max-position-embeddings", Engines::kBoth, ParseCount, nullptr},
    {"--tokenizer-type", Engines::kBoth, ParseText, nullptr},
    {"--vocab-size", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.transformer().vocab = line.number; }},
    {"--micro-batch-size", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) {
       args.config.model.micro_batch_size = Narrow(line.number);
     }},
    {"--global-batch-size", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.global_batch = line.number; }},
    // Parallelism and the pipeline's layout.
    {"--tensor-model-parallel-size", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.parallel().tp = Narrow(line.number); }},
    {"--pipeline-model-parallel-size", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.parallel().pp = Narrow(line.number); }},
    {"--num-layers-per-virtual-pipeline-stage", Engines::kMegatronLm, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.layers_per_virtual_stage = line.number; }},
    {"--context-parallel-size", Engines::kMegatronLm, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.parallel().cp = Narrow(line.number); }},
    {"--expert-model-parallel-size", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.parallel().ep = Narrow(line.number); }},
    // Recomputation.
    {"--recompute-granularity",
     Engines::kBoth,
     ParseChoice,
     [](const ArgLine& line, Arguments& args) {
       args.parallel().recompute = line.value == "full" ? Recompute::kFull : Recompute::kSelective;
     },
     {"selective", "full"}},
    {"--recompute-method",
     Engines::kBoth,
     ParseChoice,
     [](const ArgLine& line, Arguments& args) {
       args.recompute_method = line.value;
       args.recompute_method_where = line.where;
     },
     {"uniform", "block"}},
    {"--recompute-num-layers", Engines::kBoth, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.recompute_num_layers = line.number; }},
    {"--decoder-first-pipeline-num-layers", Engines::kMegatronLm, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.first_stage_layers = line.number; }},
    {"--decoder-last-pipeline-num-layers", Engines::kMegatronLm, ParseCount,
     [](const ArgLine& line, Arguments& args) { args.last_stage_layers = line.number; }},
    {"--pipeline-model-parallel-layout", Engines::kMegatronLm, ParseText,
     [](const ArgLine& line, Arguments& args) {
       args.layout = line.value;
       args.layout_where = line.where;
     }},
    // Megatron-DeepSpeed's own.
    {"--deepspeed_config", Engines::kDeepSpeed, ParseText, nullptr},
    {"--zero-stage",
     Engines::kDeepSpeed,
     ParseChoice,
     [](const ArgLine& line, Arguments& args) { args.parallel().zero_stage = line.value[0] - '0'; },
     {"0", "1", "2", "3"}},
};

bool TakenBy(const MegatronArgument& argument, bool deepspeed) {
  return argument.engines == Engines::kBoth ||
         argument.engines == (deepspeed ? Engines::kDeepSpeed : Engines::kMegatronLm);
}

// The error for a flag the dialect does not take: Megatron-LM's own under Megatron-DeepSpeed
// says why, anything else gets "did you mean".
Error UnknownArgument(const ArgLine& line, const MegatronArgument* found, bool deepspeed) {
  std::vector<std::string> known;
  for (const bool switches : {true, false}) {
    for (const MegatronArgument& argument : kArguments) {
      if (TakenBy(argument, deepspeed) && (argument.parse == nullptr) == switches) {
        known.push_back(argument.flag);
      }
    }
  }
  const bool elsewhere = deepspeed && found != nullptr && found->engines == Engines::kMegatronLm;
  const std::string engine = deepspeed ? "Megatron-DeepSpeed" : "Megatron";
  const std::string exporter = deepspeed ? "deepspeed" : "megatron";
  return Error{line.where + "unknown " + engine + " argument '" + EscapeBytes(line.flag) + "'" +
               (elsewhere ? " (Megatron-LM's; DeepSpeed's pipeline engine has no interleaving, "
                            "context parallelism or distributed optimizer: ZeRO is "
                            "--zero-stage)"
                          : DidYouMean(line.flag, known) +
                                " (stagecraft reads the arguments `plan --export " + exporter +
                                "` writes)")};
}

// One line: blank lines and `#` comments are skipped, anything else is one `--flag [value]`.
Status ReadLine(const std::string& text, const std::string& where, Arguments& args) {
  ArgLine line;
  line.where = where;
  std::istringstream words(text);
  std::string extra;
  if (!(words >> line.flag) || line.flag[0] == '#') return Status::Ok();
  words >> line.value;
  if (words >> extra) {
    return Error{where + "'" + EscapeBytes(text) +
                 "' holds more than one argument (expected "
                 "one '--flag [value]' per line)"};
  }
  const MegatronArgument* found = nullptr;
  for (const MegatronArgument& argument : kArguments) {
    if (line.flag == argument.flag) {
      found = &argument;
      break;
    }
  }
  if (found == nullptr || !TakenBy(*found, args.deepspeed)) {
    return UnknownArgument(line, found, args.deepspeed);
  }
  if (found->parse == nullptr && !line.value.empty()) {
    return Error{where + line.flag + " takes no value, got '" + EscapeBytes(line.value) + "'"};
  }
  if (found->parse != nullptr) {
    if (line.value.empty()) return Error{where + line.flag + " needs a value"};
    STAGECRAFT_RETURN_IF_ERROR(found->parse(*found, line));
  }
  if (found->apply != nullptr) found->apply(line, args);
  return Status::Ok();
}

Status ReadLines(const std::string& text, const std::string& source, Arguments& args) {
  std::istringstream lines(text);
  std::string line;
  int line_number = 0;
  while (std::getline(lines, line)) {
    ++line_number;
    const std::string where = source + ":" + std::to_string(line_number) + ": ";
    STAGECRAFT_RETURN_IF_ERROR(ReadLine(line, where, args));
  }
  return Status::Ok();
}

// Megatron-DeepSpeed builds DeepSpeed's pipeline model (GPTModelPipe) unless
// --no-pipeline-parallel (pretrain_gpt.py, model_provider). That model checkpoints through
// the pipeline engine's activation_checkpoint_interval, taken from the uniform method only
// ("deepspeed's pipeline doesn't support the block recompute method", gpt_model.py: with
// block it checkpoints nothing), and DeepSpeed's PipelineEngine asserts ZeRO stage < 2
// (deepspeed/runtime/pipe/engine.py). stagecraft reads --no-pipeline-parallel with pp 1, as
// `plan --export deepspeed` writes it (arguments.py's own check of that is commented out).
Status CheckDeepSpeedPipeline(const Arguments& args, const std::string& source) {
  const ParallelSpec& p = args.config.parallel;
  if (args.no_pipeline_parallel && p.pp != 1) {
    return Error{source +
                 ": --no-pipeline-parallel is read with --pipeline-model-parallel-size "
                 "1 only (as `plan --export deepspeed` writes it); drop it to run "
                 "DeepSpeed's pipeline engine"};
  }
  if (!args.no_pipeline_parallel && p.zero_stage >= 2) {
    return Error{source + ": --zero-stage " + std::to_string(p.zero_stage) +
                 " with DeepSpeed's pipeline model: its PipelineEngine asserts ZeRO stage < 2 "
                 "(deepspeed/runtime/pipe/engine.py); add --no-pipeline-parallel (pp 1) or use "
                 "--zero-stage 0 or 1"};
  }
  if (!args.no_pipeline_parallel && p.recompute == Recompute::kFull &&
      args.recompute_method == "block") {
    return Error{args.recompute_method_where +
                 "--recompute-method block with DeepSpeed's pipeline model checkpoints nothing "
                 "(Megatron-DeepSpeed's gpt_model.py takes the interval from the uniform method "
                 "only); add --no-pipeline-parallel (pp 1, Megatron's block method) or use "
                 "--recompute-method uniform"};
  }
  return Status::Ok();
}

// Megatron's full recomputation: 'uniform' with N recomputes every layer in groups of N, each
// keeping its input; 'block' with N the first N layers of each pipeline chunk
// (megatron/core/transformer/transformer_block.py, _checkpointed_forward). Megatron-DeepSpeed's
// pipeline model takes the uniform N as its activation_checkpoint_interval.
Status SettleRecompute(Arguments& args, const std::string& source) {
  if (args.deepspeed) STAGECRAFT_RETURN_IF_ERROR(CheckDeepSpeedPipeline(args, source));
  ParallelSpec& p = args.parallel();
  if (args.recompute_num_layers > 0) {
    if (args.recompute_method == "block") {
      p.recompute_num_layers = static_cast<int32_t>(args.recompute_num_layers);
    } else if (args.recompute_num_layers > 1) {
      p.recompute_num_layers = static_cast<int32_t>(args.recompute_num_layers);
      p.recompute_method = RecomputeMethod::kUniform;
    }
  }
  return Status::Ok();
}

// The arguments every run needs, then grouped-query and multi-head latent attention
// (Megatron's MLATransformerConfig): the ranks and head widths without --multi-latent-attention
// are ignored by Megatron's GPT model, so reading them would simulate attention the run does not
// have.
Status SettleAttention(Arguments& args, const std::string& source) {
  TransformerSpec& t = args.transformer();
  if (t.layers == 0 || t.hidden == 0 || t.heads == 0 || t.vocab == 0 || args.global_batch == 0) {
    return Error{source +
                 ": needs --num-layers, --hidden-size, --num-attention-heads, --vocab-size and "
                 "--global-batch-size (the arguments `plan --export " +
                 std::string(args.deepspeed ? "deepspeed" : "megatron") + "` writes)"};
  }
  if (!args.grouped) t.kv_heads = 0;
  if (args.latent &&
      (t.kv_lora_rank == 0 || t.qk_nope_dim == 0 || t.qk_rope_dim == 0 || t.v_head_dim == 0)) {
    return Error{source +
                 ": --multi-latent-attention needs --kv-lora-rank, --qk-head-dim, "
                 "--qk-pos-emb-head-dim and --v-head-dim (--q-lora-rank is optional: 0 = a full "
                 "query projection)"};
  }
  if (!args.latent && !args.latent_where.empty()) {
    return Error{args.latent_where +
                 "a latent-attention rank or head width without --multi-latent-attention "
                 "(add it, or drop the MLA arguments)"};
  }
  return Status::Ok();
}

// --moe-layer-freq against the layers; the shared experts' width as a count of experts.
Status SettleExperts(Arguments& args, const std::string& source) {
  TransformerSpec& t = args.transformer();
  if (!args.moe_layer_freq_where.empty()) {
    if (t.experts == 0) {
      return Error{args.moe_layer_freq_where + "--moe-layer-freq without --num-experts"};
    }
    if (args.moe_layers >= 0 && t.dense_layers + args.moe_layers != t.layers) {
      return Error{args.moe_layer_freq_where + "--moe-layer-freq lists " +
                   std::to_string(t.dense_layers + args.moe_layers) + " layers, --num-layers is " +
                   std::to_string(t.layers) + " (expected one entry a layer)"};
    }
  }
  if (t.shared_experts > 0) {
    if (t.expert_ffn == 0 || t.shared_experts % t.expert_ffn != 0) {
      return Error{source +
                   ": --moe-shared-expert-intermediate-size must be a multiple of "
                   "--moe-ffn-hidden-size"};
    }
    t.shared_experts /= t.expert_ffn;
  }
  return Status::Ok();
}

// The virtual pipeline from --num-layers-per-virtual-pipeline-stage, which the layout excludes.
Status SettleVirtualStages(Arguments& args, const std::string& source) {
  ParallelSpec& p = args.parallel();
  const TransformerSpec& t = args.transformer();
  p.vpp = 1;
  if (!args.layout.empty() && (args.layers_per_virtual_stage > 0 || args.first_stage_layers > 0 ||
                               args.last_stage_layers > 0)) {
    // megatron/training/arguments.py (no more than one of the virtual-stage arguments and the
    // layout) and transformer_config.py (the layout with no other pipeline layout argument).
    return Error{
        args.layout_where +
        "--pipeline-model-parallel-layout cannot be set with "
        "--num-layers-per-virtual-pipeline-stage or --decoder-first/last-pipeline-num-"
        "layers (Megatron's arguments.py and transformer_config.py; expected one of them)"};
  }
  if (args.layers_per_virtual_stage > 0) {
    if (t.layers % (int64_t{p.pp} * args.layers_per_virtual_stage) != 0) {
      return Error{source + ": --num-layers-per-virtual-pipeline-stage " +
                   std::to_string(args.layers_per_virtual_stage) + " does not split " +
                   std::to_string(t.layers) + " layers over " + std::to_string(p.pp) + " stages"};
    }
    p.vpp = static_cast<int32_t>(t.layers / (p.pp * args.layers_per_virtual_stage));
  }
  return Status::Ok();
}

// Megatron's syntax (megatron/core/transformer/pipeline_parallel_layer_layout.py,
// parse_str_to_list): commas are cosmetic; 'E' the embedding, 't' a decoder, 'L' the loss,
// 'm' an MTP layer; X*N and (...)*N repeat; '|' separates the pp x vpp stages, listed
// virtual stage by virtual stage (stage vpp_rank x pp + pp_rank), as stagecraft's loop
// placement numbers them. The flattened layout spells E, the decoders, L
// (validate_layer_layout). On success args.layout holds it without its commas.
Status SettleLayout(Arguments& args) {
  ParallelSpec& p = args.parallel();
  std::string spelled;
  for (char c : args.layout) {
    if (c != ',') spelled += c;
  }
  if (spelled.find('m') != std::string::npos) {
    return Error{args.layout_where + "--pipeline-model-parallel-layout '" +
                 EscapeBytes(args.layout) +
                 "' places MTP layers ('m'), which stagecraft does not model (expected 'E', 't', "
                 "'L', '|', '*N' and '(...)*N')"};
  }
  std::string letters =
      "E" + std::string(static_cast<size_t>(args.transformer().layers), 't') + "L";
  auto partition = PartitionFromLayout(spelled, letters);
  if (!partition.ok()) {
    return Error{args.layout_where + "--pipeline-model-parallel-layout " +
                 partition.error().message};
  }
  const int32_t stages = partition.value().num_stages();
  if (stages % p.pp != 0) {
    return Error{args.layout_where + "--pipeline-model-parallel-layout has " +
                 std::to_string(stages) + " stages, not a multiple of pp " + std::to_string(p.pp) +
                 " (Megatron's arguments.py: the layout's length divided "
                 "by pp is the virtual pipeline size)"};
  }
  p.vpp = stages / p.pp;
  args.layout = spelled;
  return Status::Ok();
}

// dp from the cluster's GPUs, the microbatches from the global batch.
Status SettleBatch(Arguments& args, const std::string& source) {
  const Config& config = args.config;
  ParallelSpec& p = args.parallel();
  const int64_t world =
      config.cluster.given ? int64_t{config.cluster.nodes} * config.cluster.devices_per_node : 0;
  const int64_t model_ranks = int64_t{p.tp} * p.pp * p.cp;
  if (world == 0 || world % model_ranks != 0) {
    return Error{source + ": tp x pp x cp = " + std::to_string(model_ranks) +
                 " must divide the cluster's GPUs (give --cluster DEVICExNODES with the plan's "
                 "nodes)"};
  }
  p.dp = static_cast<int32_t>(world / model_ranks);
  const int64_t per_step = int64_t{p.dp} * config.model.micro_batch_size;
  if (args.global_batch % per_step != 0) {
    return Error{source + ": --global-batch-size " + std::to_string(args.global_batch) +
                 " is not divisible by dp x micro-batch size = " + std::to_string(per_step)};
  }
  p.microbatches = static_cast<int32_t>(args.global_batch / per_step);
  return Status::Ok();
}

// Megatron's default layout, as plan/plan.cc's candidates run; DeepSpeed's pipeline model
// splits the decoders itself, any count over any pp (DeepSpeedTransformerCounts). Megatron's
// uneven split (megatron/core/transformer/transformer_config.py): the first and the last stage
// take what is given, the middle stages the rest evenly. Read for vpp 1 and both ends given, as
// `plan --export megatron` writes it.
Status SettleLayerCounts(Arguments& args, const std::string& source) {
  ParallelSpec& p = args.parallel();
  const TransformerSpec& t = args.transformer();
  p.partition = PartitionMethod::kCounts;
  p.layer_counts = args.deepspeed && p.pp > 1 && t.layers >= p.pp
                       ? DeepSpeedTransformerCounts(static_cast<int32_t>(t.layers), p.pp)
                       : EvenTransformerCounts(t.layers, p.pp * p.vpp);
  if (args.first_stage_layers == 0 && args.last_stage_layers == 0) return Status::Ok();
  if (args.first_stage_layers == 0 || args.last_stage_layers == 0 || p.vpp != 1 || p.pp < 3) {
    return Error{source +
                 ": --decoder-first-pipeline-num-layers and --decoder-last-pipeline-num-layers "
                 "are read together, with pp >= 3 and no virtual pipeline (as `plan --export "
                 "megatron` writes them)"};
  }
  const int64_t middle = t.layers - args.first_stage_layers - args.last_stage_layers;
  if (middle < p.pp - 2 || middle % (p.pp - 2) != 0) {
    return Error{source + ": " + std::to_string(middle) +
                 " decoders left for the middle stages do not split evenly over " +
                 std::to_string(p.pp - 2) +
                 " stages (Megatron's rule for --decoder-first/last-pipeline-num-layers)"};
  }
  p.layer_counts.assign(static_cast<size_t>(p.pp), static_cast<int32_t>(middle / (p.pp - 2)));
  p.layer_counts.front() = static_cast<int32_t>(args.first_stage_layers) + 1;  // and the embedding
  p.layer_counts.back() = static_cast<int32_t>(args.last_stage_layers) + 1;    // and the head
  return Status::Ok();
}

// The pipeline: virtual stages, the layout, dp and the microbatches, the schedule and the split.
Status SettlePipeline(Arguments& args, const std::string& source) {
  STAGECRAFT_RETURN_IF_ERROR(SettleVirtualStages(args, source));
  const bool layout_read = !args.layout.empty();
  if (layout_read) STAGECRAFT_RETURN_IF_ERROR(SettleLayout(args));
  STAGECRAFT_RETURN_IF_ERROR(SettleBatch(args, source));
  ParallelSpec& p = args.parallel();
  args.config.schedule.name = p.vpp > 1 ? "interleaved-1f1b" : "1f1b";
  args.config.schedule.group_size = 0;
  STAGECRAFT_RETURN_IF_ERROR(SettleLayerCounts(args, source));
  if (layout_read) {
    p.partition = PartitionMethod::kLayout;
    p.layout = args.layout;
    p.layer_counts.clear();
  }
  return Status::Ok();
}

}  // namespace

Result<Config> ReadMegatronArgs(const std::string& text, const std::string& source, Config base,
                                MegatronDialect dialect) {
  Arguments args;
  args.deepspeed = dialect == MegatronDialect::kMegatronDeepSpeed;
  args.config = std::move(base);
  args.config.model = ModelSpec();
  TransformerSpec& t = args.transformer();
  t.causal = false;
  t.bias = true;
  t.learned_positions = true;
  t.tied_embeddings = true;
  ParallelSpec& p = args.parallel();
  p = ParallelSpec();
  p.pp = 1;
  p.microbatches = 1;
  STAGECRAFT_RETURN_IF_ERROR(ReadLines(text, source, args));
  STAGECRAFT_RETURN_IF_ERROR(SettleRecompute(args, source));
  STAGECRAFT_RETURN_IF_ERROR(SettleAttention(args, source));
  STAGECRAFT_RETURN_IF_ERROR(SettleExperts(args, source));
  args.config.model.name = args.deepspeed ? "megatron-deepspeed-args" : "megatron-args";
  STAGECRAFT_RETURN_IF_ERROR(SettlePipeline(args, source));
  return std::move(args.config);
}

}  // namespace stagecraft
