#include "plan/export.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "core/suggest.h"
#include "io/torchtitan_config.h"
#include "schedule/partition.h"

namespace stagecraft {
namespace {

std::string Str(int64_t value) { return std::to_string(value); }

// Megatron-LM's pretrain_gpt.py arguments for the model and the layout, in the order its
// argument groups list them (megatron/training/arguments.py).
std::vector<std::pair<std::string, std::string>> MegatronArgs(const Config& config,
                                                              const Candidate& c,
                                                              int64_t global_batch) {
  const TransformerSpec& t = config.model.transformer;
  std::vector<std::pair<std::string, std::string>> args = {
      {"--num-layers", Str(t.layers)},
      {"--hidden-size", Str(t.hidden)},
      {"--num-attention-heads", Str(t.heads)},
  };
  if (t.kv_heads > 0 && t.kv_heads != t.heads) {
    args.push_back({"--group-query-attention", ""});
    args.push_back({"--num-query-groups", Str(t.kv_heads)});
  }
  if (t.head_dim > 0 && t.head_dim != t.hidden / t.heads)
    args.push_back({"--kv-channels", Str(t.head_dim)});
  if (t.mla()) {
    // Multi-head latent attention (DeepSeek-V2/V3; Megatron's MLATransformerConfig, arguments.py's
    // MLA group): the query's low rank (0 = a full projection), the KV latent, the heads' no-RoPE
    // and RoPE widths and the value width.
    args.push_back({"--multi-latent-attention", ""});
    if (t.q_lora_rank > 0) args.push_back({"--q-lora-rank", Str(t.q_lora_rank)});
    args.push_back({"--kv-lora-rank", Str(t.kv_lora_rank)});
    args.push_back({"--qk-head-dim", Str(t.qk_nope_dim)});
    args.push_back({"--qk-pos-emb-head-dim", Str(t.qk_rope_dim)});
    args.push_back({"--v-head-dim", Str(t.v_head_dim)});
  }
  args.push_back({"--ffn-hidden-size", Str(t.ffn_or_default())});
  if (t.moe()) {
    args.push_back({"--num-experts", Str(t.experts)});
    // The dense first layers (DeepSeek-V3's 3 of 61) as Megatron's list expression; the others
    // MoE (the launcher never globs the arguments, so its brackets and stars pass as written).
    if (t.dense_layers > 0) {
      args.push_back({"--moe-layer-freq", "([0]*" + Str(t.dense_layers) + "+[1]*" +
                                              Str(t.layers - t.dense_layers) + ")"});
    }
    args.push_back({"--moe-router-topk", Str(t.experts_per_token)});
    args.push_back({"--moe-ffn-hidden-size", Str(t.expert_ffn)});
    if (t.shared_experts > 0) {
      args.push_back(
          {"--moe-shared-expert-intermediate-size", Str(t.shared_experts * t.expert_ffn)});
    }
    // What stagecraft costs: the experts as one grouped GEMM, the tokens dispatched and combined
    // by an all-to-all over the expert-parallel group.
    args.push_back({"--moe-grouped-gemm", ""});
    args.push_back({"--moe-token-dispatcher-type", "alltoall"});
  }
  if (t.swiglu) args.push_back({"--swiglu", ""});
  args.push_back({"--normalization", t.bias ? "LayerNorm" : "RMSNorm"});
  if (!t.bias) args.push_back({"--disable-bias-linear", ""});
  args.push_back({"--position-embedding-type", t.learned_positions ? "learned_absolute" : "rope"});
  if (!t.tied_embeddings) args.push_back({"--untie-embeddings-and-output-weights", ""});
  args.push_back({"--seq-length", Str(config.model.seq_len)});
  args.push_back({"--max-position-embeddings", Str(config.model.seq_len)});
  args.push_back({"--tokenizer-type", "NullTokenizer"});
  args.push_back({"--vocab-size", Str(t.vocab)});
  args.push_back({"--mock-data", ""});
  args.push_back({"--micro-batch-size", Str(c.micro_batch_size)});
  args.push_back({"--global-batch-size", Str(global_batch)});
  args.push_back({"--tensor-model-parallel-size", Str(c.tp)});
  args.push_back({"--pipeline-model-parallel-size", Str(c.pp)});
  const bool layout =
      c.engine == Engine::kMegatron && (c.first_stage_layers > 0 || !c.layout_counts.empty());
  if (layout) {
    // The uneven split as Megatron's layout string (megatron/core/transformer/
    // pipeline_parallel_layer_layout.py): the chunks in virtual-stage order, the embedding with
    // the first and the loss with the last; the number of chunks over pp is the virtual
    // pipeline size, so --num-layers-per-virtual-pipeline-stage is not given with it
    // (arguments.py). `simulate --from-megatron` also reads a first/last split as
    // --decoder-first/last-pipeline-num-layers.
    args.push_back({"--pipeline-model-parallel-layout",
                    TransformerLayoutString(c.StageCounts(static_cast<int32_t>(t.layers)))});
  } else if (c.vpp > 1) {
    args.push_back({"--num-layers-per-virtual-pipeline-stage", Str(t.layers / (c.pp * c.vpp))});
  }
  args.push_back({"--context-parallel-size", Str(c.cp)});
  if (c.ep > 1) args.push_back({"--expert-model-parallel-size", Str(c.ep)});
  if (c.tp > 1) args.push_back({"--sequence-parallel", ""});
  if (c.recompute == Recompute::kSelective) {
    args.push_back({"--recompute-granularity", "selective"});
  } else if (c.recompute == Recompute::kFull) {
    args.push_back({"--recompute-granularity", "full"});
    if (c.recompute_num_layers > 0) {
      // block: Megatron's, or Megatron-DeepSpeed's without its pipe; uniform: groups of N (the
      // pipe model's activation_checkpoint_interval).
      args.push_back({"--recompute-method", c.recompute_uniform ? "uniform" : "block"});
      args.push_back({"--recompute-num-layers", Str(c.recompute_num_layers)});
    } else {
      args.push_back({"--recompute-method", "uniform"});
      args.push_back({"--recompute-num-layers", "1"});
    }
  }
  if (c.zero_stage == 1) {
    args.push_back({"--use-distributed-optimizer", ""});
    args.push_back({"--overlap-param-gather", ""});
  }
  if (c.dp * c.cp > 1) args.push_back({"--overlap-grad-reduce", ""});
  args.push_back({"--bf16", ""});
  if (t.causal) args.push_back({"--use-flash-attn", ""});
  return args;
}

std::string Header(const Config& config, const Candidate& c, const char* comment) {
  return std::string(comment) + " stagecraft plan: " + config.model.name + ", " + c.Describe() +
         "\n" + comment + " on " + config.cluster.device + " nodes of " +
         Str(config.cluster.devices_per_node) + " GPUs (" +
         Str(int64_t{c.tp} * c.pp * c.dp * c.cp) + " GPUs in all); " +
         (c.engine == Engine::kTorchtitan
              ? "set your dataset and tokenizer in the job config.\n"
              : "the data comes from --mock-data: put your tokenizer and data in.\n");
}

int32_t Nodes(const Config& config, const Candidate& c) {
  const int64_t gpus = int64_t{c.tp} * c.pp * c.dp * c.cp;
  const int64_t per_node = std::max(1, config.cluster.devices_per_node);
  return static_cast<int32_t>((gpus + per_node - 1) / per_node);
}

std::string TorchrunLauncher(const Config& config, const Candidate& c, const std::string& script,
                             const std::string& arguments, const std::string& environment = "") {
  const bool megatron = c.engine != Engine::kTorchtitan;
  return "#!/usr/bin/env bash\n" + Header(config, c, "#") +
         "# Run on every node: NODE_RANK, MASTER_ADDR and MASTER_PORT name this node and node 0.\n"
         "set -euo pipefail\n"
         "here=$(cd \"$(dirname \"$0\")\" && pwd)\n" +
         (megatron ? "export CUDA_DEVICE_MAX_CONNECTIONS=1  # Megatron's TP/SP overlap needs one "
                     "queue\n"
                     "set -f  # the arguments are split on spaces, never globbed (a layout's '*')\n"
                   : "") +
         environment + "torchrun --nnodes " + Str(Nodes(config, c)) + " --nproc-per-node " +
         Str(config.cluster.devices_per_node) +
         " --node-rank \"${NODE_RANK:-0}\" \\\n"
         "  --master-addr \"${MASTER_ADDR:-localhost}\" --master-port \"${MASTER_PORT:-6000}\" \\\n"
         "  " +
         script + " " + arguments + " \"$@\"\n";
}

std::string SlurmScript(const Config& config, const Candidate& c) {
  return "#!/usr/bin/env bash\n" + Header(config, c, "#") +
         "#SBATCH --nodes=" + Str(Nodes(config, c)) +
         "\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=" +
         Str(config.cluster.devices_per_node) +
         "\n#SBATCH --exclusive\n"
         "set -euo pipefail\n"
         "export MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\n"
         "export MASTER_PORT=6000\n"
         "srun --kill-on-bad-exit=1 bash -c 'NODE_RANK=$SLURM_NODEID \"$0\"' \"$(dirname "
         "\"$0\")/launch.sh\"\n";
}

const char* TorchtitanSchedule(const std::string& schedule) {
  if (schedule == "gpipe") return "GPipe";
  if (schedule == "interleaved-1f1b") return "Interleaved1F1B";
  if (schedule == "looped-bfs") return "LoopedBFS";
  if (schedule == "dualpipev") return "DualPipeV";
  if (schedule == "1f1b") return "1F1B";
  return nullptr;
}

// The schedule class torchtitan's config names: the plan's, or with a schedule CSV (torch's
// _PipelineScheduleRuntime runs its actions) one whose stages per rank and placement are the
// CSV's, since pipeline_llm and pipeline_module_split take those from the named class.
std::string TorchtitanScheduleName(const Candidate& c, const ScheduleCsv* csv) {
  if (csv == nullptr) return TorchtitanSchedule(c.schedule);
  return csv->v_shape ? "ZBVZeroBubble" : c.vpp > 1 ? "Interleaved1F1B" : "1F1B";
}

// torchtitan's stage split as the exports write it: the less-layers weights the plan ran
// (Candidate::first_less, last_less) and the pipeline_parallel_layers_per_stage that
// makes pp x vpp stages with them (pipeline_parallel.py: ceil((layers + first + last) /
// layers_per_stage) stages); or, where no layers_per_stage makes that many stages or the plan
// runs a split of its own (Candidate::layout_counts), module_fqns_per_model_part: each stage's
// modules, which pipeline_llm takes in place of its splitter.
struct StageSplit {
  int64_t per_stage = 0;
  int32_t first_less = 1;
  int32_t last_less = 1;
  std::vector<std::vector<std::string>> modules;  // non-empty: write these
};
StageSplit TorchtitanStageSplit(const Candidate& c, int32_t layers) {
  const int64_t stages = int64_t{c.pp} * c.vpp;
  StageSplit split;
  split.first_less = c.first_less;
  split.last_less = c.last_less;
  const int64_t effective = int64_t{layers} + split.first_less + split.last_less;
  const int64_t per = (effective + stages - 1) / stages;
  if ((effective + per - 1) / per == stages) split.per_stage = per;
  if (split.per_stage > 0 && c.layout_counts.empty()) return split;
  const std::vector<int32_t> counts = c.StageCounts(layers);
  int32_t layer = 0;
  for (size_t stage = 0; stage < counts.size(); ++stage) {
    std::vector<std::string> names;
    if (stage == 0) names.emplace_back("tok_embeddings");
    const int32_t decoders =
        counts[stage] - (stage == 0 ? 1 : 0) - (stage + 1 == counts.size() ? 1 : 0);
    for (int32_t i = 0; i < decoders; ++i) names.push_back("layers." + std::to_string(layer++));
    if (stage + 1 == counts.size()) {
      names.emplace_back("norm");
      names.emplace_back("output");
    }
    split.modules.push_back(std::move(names));
  }
  return split;
}

// `modules` as a list of lists, one stage a line after `indent`: [["tok_embeddings", ...], ...].
std::string ModuleLists(const std::vector<std::vector<std::string>>& modules,
                        const std::string& indent) {
  std::string text = "[\n";
  for (const std::vector<std::string>& names : modules) {
    text += indent + "[";
    for (size_t i = 0; i < names.size(); ++i) text += (i > 0 ? ", \"" : "\"") + names[i] + "\"";
    text += "],\n";
  }
  return text + indent.substr(0, indent.size() >= 4 ? indent.size() - 4 : 0) + "]";
}

std::string TorchtitanToml(const Config& config, const Candidate& c, int64_t global_batch,
                           const ScheduleCsv* csv) {
  const TransformerSpec& t = config.model.transformer;
  std::ostringstream toml;
  toml << Header(config, c, "#")
       << "# torchtitan's TOML job config (0.2 releases: --job.config_file); the model flavor's\n"
          "# dimensions: layers "
       << t.layers << ", dim " << t.hidden << ", heads " << t.heads << ", kv heads "
       << t.kv_heads_or_heads() << ", ffn " << t.ffn_or_default() << ", vocab " << t.vocab << ".\n";
  const std::string flavor = Llama3FlavorOf(t);
  if (flavor.empty())
    toml << "# Add [model] name and flavor: torchtitan's flavor with these dimensions.\n";
  toml << "# Without pipeline parallelism the local batch runs as one forward and the rest of the\n"
       << "# global batch is gradient accumulation; with it, the local batch is split into\n"
       << "# microbatches of pipeline_parallel_microbatch_size.\n"
       << "\n[job]\ndescription = \"stagecraft plan " << config.model.name << "\"\n\n";
  if (!flavor.empty() || config.parallel.fp8) {
    toml << "[model]\n";
    if (!flavor.empty()) toml << "name = \"llama3\"\nflavor = \"" << flavor << "\"\n";
    if (config.parallel.fp8) toml << "converters = [\"float8\"]\n";
    toml << "\n";
  }
  toml << "[training]\nlocal_batch_size = "
       << (c.pp > 1 ? int64_t{c.micro_batch_size} * c.microbatches : int64_t{c.micro_batch_size})
       << "\nglobal_batch_size = " << global_batch << "\nseq_len = " << config.model.seq_len
       << "\nmixed_precision_param = \"bfloat16\"\n\n"
       << "[parallelism]\ndata_parallel_replicate_degree = 1\ndata_parallel_shard_degree = " << c.dp
       << "\ntensor_parallel_degree = " << c.tp << "\ncontext_parallel_degree = " << c.cp
       << "\nexpert_parallel_degree = " << c.ep << "\npipeline_parallel_degree = " << c.pp << "\n";
  if (c.cp > 1) {
    // torchtitan's default where the config names none.
    const CpRotate rotate = config.parallel.cp_rotate == CpRotate::kNone
                                ? CpRotate::kAllGather
                                : config.parallel.cp_rotate;
    toml << "context_parallel_rotate_method = \"" << kCpRotateNames.Name(rotate) << "\"\n";
  }
  if (config.parallel.async_tp && c.tp > 1) toml << "enable_async_tensor_parallel = true\n";
  if (c.pp > 1) {
    // torchtitan's pipeline_parallel.py makes ceil((layers + first + last less layers) /
    // layers_per_stage) stages and splits them with those weights, the split the plan simulated
    // (Candidate::StageCounts).
    const StageSplit split = TorchtitanStageSplit(c, static_cast<int32_t>(t.layers));
    toml << "pipeline_parallel_schedule = \"" << TorchtitanScheduleName(c, csv) << "\"\n";
    if (csv != nullptr) {
      toml << "# The plan's schedule, " << c.schedule
           << ", is not one torch ships: its actions, rank by rank (launch.sh runs from this\n"
              "# folder, whose schedule.csv torchtitan opens from the working directory).\n"
              "pipeline_parallel_schedule_csv = \"schedule.csv\"\n";
    }
    toml << "pipeline_parallel_microbatch_size = " << c.micro_batch_size << "\n";
    if (!split.modules.empty()) {
      toml << "# Each stage's modules: the split the plan ran (" << t.layers << " layers over "
           << int64_t{c.pp} * c.vpp << " stages).\n"
           << "module_fqns_per_model_part = " << ModuleLists(split.modules, "    ") << "\n";
    } else {
      toml << "pipeline_parallel_layers_per_stage = " << split.per_stage << "\n"
           << "pipeline_parallel_first_stage_less_layers = " << split.first_less << "\n"
           << "pipeline_parallel_last_stage_less_layers = " << split.last_less << "\n";
    }
  }
  toml << "\n[activation_checkpoint]\nmode = \""
       << (c.recompute == Recompute::kNone   ? "none"
           : c.recompute == Recompute::kFull ? "full"
                                             : "selective")
       << "\"\n";
  if (c.recompute == Recompute::kSelectiveOp) toml << "selective_ac_option = \"op\"\n";
  // The plan costs fused kernels (config.parallel.fused_kernels): torchtitan compiles for them.
  if (config.parallel.fused_kernels)
    toml << "\n[compile]\nenable = true\ncomponents = [\"model\", \"loss\"]\n";
  return toml.str();
}

// The current generation (pytorch/torchtitan main at b5bcd76c, 2026-08-21: torchtitan/config/
// manager.py, --module/--config): a Python function returning the Trainer.Config, started from
// the llama3 registry function of the model's flavor, every value the plan rests on set
// explicitly. io/torchtitan_registry.h reads it back.
std::string TorchtitanRegistryPy(const Config& config, const Candidate& c, int64_t global_batch,
                                 const ScheduleCsv* csv) {
  const TransformerSpec& t = config.model.transformer;
  const std::string flavor = Llama3FlavorOf(t);
  const int64_t seq = config.model.seq_len;
  const bool compiles = config.parallel.fused_kernels;
  std::string base = "llama3_" + flavor;  // the registry function: llama3_8b, _70b, _405b
  for (char& ch : base) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  std::ostringstream py;
  py << Header(config, c, "#")
     << "# torchtitan's Python config registry (main after the 0.2 releases; read at b5bcd76c): "
        "launch-registry.sh\n# runs `-m torchtitan.train --module stagecraft_plan --config "
        "stagecraft_plan` with this folder on PYTHONPATH.\n# The model's dimensions: layers "
     << t.layers << ", dim " << t.hidden << ", heads " << t.heads << ", kv heads "
     << t.kv_heads_or_heads() << ", ffn " << t.ffn_or_default() << ", vocab " << t.vocab << ".\n";
  if (flavor.empty()) {
    py << "# It is not one of torchtitan's llama3 flavors: set config.model_spec to its ModelSpec "
          "and\n# read this back with --hf-config.\n";
    if (config.parallel.fp8) {
      py << "# The plan runs float8 linears: give that ModelSpec a Float8LinearConverter (the\n"
            "# read-back cannot see it there, and simulates bf16).\n";
    }
  }
  py << "\n";
  if (config.parallel.fp8 && !flavor.empty()) {
    py << "from torchtitan.components.quantization import Float8LinearConverter\n";
  }
  py << "from torchtitan.distributed.activation_checkpoint import FullAC, SelectiveAC\n";
  if (!flavor.empty()) {
    py << "from torchtitan.models.llama3 import model_registry\n"
       << "from torchtitan.models.llama3.config_registry import " << base << "\n";
  }
  py << "from torchtitan.trainer import Trainer\n\n\n"
     << "def stagecraft_plan() -> Trainer.Config:\n";
  if (flavor.empty()) {
    py << "    config = Trainer.Config()\n";
  } else {
    py << "    config = " << base << "()\n    config.model_spec = model_registry(\"" << flavor
       << "\"";
    if (config.parallel.fp8) {
      py << ", converters=[Float8LinearConverter.Config(filter_fqns=[\"lm_head\"], "
            "model_compile_enabled="
         << (compiles ? "True" : "False") << ")]";
    }
    py << ")\n";
  }
  const auto set = [&py](const std::string& field, const std::string& value) {
    py << "    config." << field << " = " << value << "\n";
  };
  const auto flag = [](bool value) { return std::string(value ? "True" : "False"); };
  set("training.max_context_length", Str(seq));
  set("training.num_tokens_per_microbatch_per_dp_rank", Str(int64_t{c.micro_batch_size} * seq));
  set("training.num_tokens_per_train_step", Str(global_batch * seq));
  set("training.mixed_precision_param", "\"bfloat16\"");
  if (c.pp > 1) {
    py << "    # CUDA graphs refuse pipeline parallelism (torchtitan/trainer.py).\n";
    set("training.disable_cuda_graphs", "True");
  }
  set("parallelism.data_parallel_replicate_degree", "1");
  set("parallelism.data_parallel_shard_degree", Str(c.dp));
  set("parallelism.tensor_parallel_degree", Str(c.tp));
  set("parallelism.context_parallel_degree", Str(c.cp));
  set("parallelism.expert_parallel_degree", Str(c.ep));
  set("parallelism.pipeline_parallel_degree", Str(c.pp));
  if (c.pp > 1) {
    const int64_t stages = int64_t{c.pp} * c.vpp;
    const StageSplit split = TorchtitanStageSplit(c, static_cast<int32_t>(t.layers));
    set("parallelism.pipeline_parallel_schedule", "\"" + TorchtitanScheduleName(c, csv) + "\"");
    if (csv != nullptr) {
      py << "    # The plan's schedule, " << c.schedule
         << ", is not one torch ships: its actions in schedule.csv (opened from the\n"
            "    # working directory; launch-registry.sh runs from this folder).\n";
      set("parallelism.pipeline_parallel_schedule_csv", "\"schedule.csv\"");
    }
    set("parallelism.num_pp_microbatches", Str(c.microbatches));
    if (!split.modules.empty()) {
      py << "    # Each stage's modules: the split the plan ran (" << t.layers << " layers over "
         << stages << " stages).\n";
      set("parallelism.module_fqns_per_model_part", ModuleLists(split.modules, "        "));
    } else {
      set("parallelism.pipeline_parallel_first_stage_less_layers", Str(split.first_less));
      set("parallelism.pipeline_parallel_last_stage_less_layers", Str(split.last_less));
      set("parallelism.pipeline_parallel_layers_per_stage", Str(split.per_stage));
    }
  }
  set("activation_checkpoint", c.recompute == Recompute::kNone   ? "None"
                               : c.recompute == Recompute::kFull ? "FullAC.Config()"
                                                                 : "SelectiveAC.Config()");
  set("compile.enable", flag(compiles));
  if (compiles) set("compile.components", "[\"model\", \"loss\"]");
  set("compile.enable_async_tensor_parallel", flag(config.parallel.async_tp && c.tp > 1));
  py << "    return config\n";
  return py.str();
}

std::string DeepSpeedJson(const Candidate& c, int64_t global_batch) {
  std::ostringstream json;
  json << "{\n  \"train_batch_size\": " << global_batch
       << ",\n  \"train_micro_batch_size_per_gpu\": " << c.micro_batch_size
       << ",\n  \"gradient_accumulation_steps\": " << c.microbatches
       << ",\n  \"bf16\": {\"enabled\": true},\n  \"zero_optimization\": {\"stage\": "
       << c.zero_stage << (c.zero_stage >= 2 ? ", \"overlap_comm\": true" : "")
       << "},\n  \"gradient_clipping\": 1.0,\n  \"steps_per_print\": 10\n}\n";
  return json.str();
}

}  // namespace

bool TorchtitanShipsSchedule(const std::string& schedule) {
  return TorchtitanSchedule(schedule) != nullptr;
}

Result<std::vector<ExportedFile>> ExportPlan(const Config& config, const Candidate& candidate,
                                             int64_t global_batch, Engine engine,
                                             const ScheduleCsv* csv) {
  if (engine == Engine::kAny)
    return Error{"--export: name one engine (megatron, torchtitan or deepspeed)"};
  if (candidate.engine != engine) {
    return Error{std::string("--export ") + EngineName(engine) + ": the plan is " +
                 EngineName(candidate.engine) + "'s; plan with --engine " + EngineName(engine)};
  }
  const TransformerSpec& t = config.model.transformer;
  if (engine != Engine::kMegatron && (t.mla() || (t.moe() && t.dense_layers > 0))) {
    return Error{std::string("--export ") + EngineName(engine) +
                 ": multi-latent attention and MoE models with dense first layers are exported "
                 "for Megatron only (their " +
                 EngineName(engine) + " arguments are not written); plan with --engine megatron"};
  }
  std::vector<ExportedFile> files;
  switch (engine) {
    case Engine::kMegatron: {
      std::string lines = Header(config, candidate, "#");
      for (const auto& [flag, value] : MegatronArgs(config, candidate, global_batch)) {
        lines += flag + (value.empty() ? "" : " " + value) + "\n";
      }
      files.push_back({"megatron-args.txt", lines});
      files.push_back(
          {"launch.sh", TorchrunLauncher(config, candidate, "pretrain_gpt.py",
                                         "$(grep -v '^#' \"$here/megatron-args.txt\")")});
      files.push_back({"slurm.sbatch", SlurmScript(config, candidate)});
      break;
    }
    case Engine::kTorchtitan: {
      if (candidate.pp > 1 && csv == nullptr && TorchtitanSchedule(candidate.schedule) == nullptr) {
        return Error{"export torchtitan: torch ships no schedule '" + candidate.schedule +
                     "' (expected one of torch's, or its actions as a schedule CSV)"};
      }
      if (candidate.pp == 1) csv = nullptr;
      // torchtitan opens the CSV from the working directory: the launchers run from here.
      const std::string from_here =
          csv != nullptr
              ? "cd \"$here\"  # torchtitan opens schedule.csv from the working directory\n"
              : "";
      files.push_back({"torchtitan.toml", TorchtitanToml(config, candidate, global_batch, csv)});
      if (csv != nullptr) files.push_back({"schedule.csv", csv->text});
      files.push_back({"launch.sh",
                       TorchrunLauncher(config, candidate, "-m torchtitan.train",
                                        "--job.config_file \"$here/torchtitan.toml\"", from_here)});
      files.push_back({"slurm.sbatch", SlurmScript(config, candidate)});
      // At main, EP borrows TP ranks (parallel_dims.py), a layout stagecraft does not model:
      // a plan with both is written only in the 0.2 generation, where experts are TP-split.
      if (candidate.ep > 1 && candidate.tp > 1) break;
      files.push_back(
          {"stagecraft_plan.py", TorchtitanRegistryPy(config, candidate, global_batch, csv)});
      files.push_back({"launch-registry.sh",
                       TorchrunLauncher(config, candidate, "-m torchtitan.train",
                                        "--module stagecraft_plan --config stagecraft_plan",
                                        "export PYTHONPATH=\"$here${PYTHONPATH:+:$PYTHONPATH}\"\n" +
                                            from_here)});
      break;
    }
    case Engine::kDeepSpeed: {
      files.push_back({"ds_config.json", DeepSpeedJson(candidate, global_batch)});
      std::string lines = Header(config, candidate, "#");
      for (const auto& [flag, value] : MegatronArgs(config, candidate, global_batch)) {
        // Megatron-DeepSpeed takes Megatron's model and layout arguments, its own for ZeRO.
        if (flag == "--use-distributed-optimizer" || flag == "--overlap-param-gather" ||
            flag == "--overlap-grad-reduce" || flag == "--context-parallel-size" ||
            flag == "--sequence-parallel") {  // the plan runs DeepSpeed's TP without it
          continue;
        }
        lines += flag + (value.empty() ? "" : " " + value) + "\n";
      }
      lines += "--deepspeed\n--deepspeed_config ds_config.json\n--zero-stage " +
               Str(candidate.zero_stage) + "\n";
      // Without pipeline stages, Megatron's own model rather than DeepSpeed's pipe model
      // (pretrain_gpt.py): the pipe engine asserts ZeRO < 2 and has no block recomputation.
      if (candidate.pp == 1) lines += "--no-pipeline-parallel\n";
      files.push_back({"megatron-deepspeed-args.txt", lines});
      files.push_back(
          {"launch.sh", TorchrunLauncher(config, candidate, "pretrain_gpt.py",
                                         "$(grep -v '^#' \"$here/megatron-deepspeed-args.txt\")")});
      files.push_back({"slurm.sbatch", SlurmScript(config, candidate)});
      break;
    }
    case Engine::kAny:
      break;
  }
  return files;
}

}  // namespace stagecraft
