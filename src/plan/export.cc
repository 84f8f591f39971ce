#include "plan/export.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "core/suggest.h"
#include "io/deepspeed_config.h"
#include "io/megatron_args.h"
#include "io/torchtitan_config.h"
#include "schedule/partition.h"

namespace stagecraft {
namespace {

std::string Str(int64_t value) { return std::to_string(value); }

// torchao's float8 recipes other than its default, tensorwise: torchtitan's float8.recipe_name.
bool TorchaoRecipe(Fp8Recipe recipe) {
  return recipe == Fp8Recipe::kRowwise || recipe == Fp8Recipe::kRowwiseWithGwHp;
}

// A comment line for a recipe torchtitan's float8 converter does not run, `indent` before it.
std::string NotTorchaoRecipe(Fp8Recipe recipe, const std::string& indent = "") {
  return indent + "# The plan costs fp8_recipe " + Fp8RecipeName(recipe) +
         ", which torchtitan's float8 converter does not have\n" + indent +
         "# (torchao's recipes: tensorwise, rowwise, rowwise_with_gw_hp); this config runs "
         "tensorwise.\n";
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

// `config` with `c`'s layout: what the engine's files are written from.
Config RunConfig(const Config& config, const Candidate& c) {
  Config run = config;
  c.ApplyTo(run);
  return run;
}

// Megatron-LM's (or Megatron-DeepSpeed's) pretrain_gpt.py arguments that run `c`, one a line
// after the header: the rows io/megatron_args.h reads back, written from the config `c` makes.
std::string MegatronArgsText(const Config& config, const Candidate& c, int64_t global_batch,
                             MegatronDialect dialect) {
  const Config run = RunConfig(config, c);
  std::string lines = Header(config, c, "#");
  for (const auto& [flag, value] : WriteMegatronArgs(run, {global_batch, dialect})) {
    lines += flag + (value.empty() ? "" : " " + value) + "\n";
  }
  return lines;
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

// torchtitan's TOML job config. Unlike Megatron's arguments and ds_config.json (one row per key
// shared with their readers: io/megatron_args_table.h, io/deepspeed_config.cc), it is written by
// hand: torchtitan's reader takes its keys in groups across tables (the layout, the pipeline's
// keys only with pp > 1, the model from a flavor or the config given) and through the Python
// registry's translation (io/torchtitan_registry.cc), and this file's comments, conditional
// tables, less-layers weights and schedule CSV rest on the candidate. Sharing rows needs those
// reads taken key by key and a write context for the candidate's split (issue 33, item 5).
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
  // torchao's recipe where it is not the default (tensorwise); one torchao's float8 converter
  // does not have is said.
  if (config.parallel.fp8 && TorchaoRecipe(config.parallel.fp8_recipe)) {
    toml << "\n[float8]\nrecipe_name = \"" << Fp8RecipeName(config.parallel.fp8_recipe) << "\"\n";
  } else if (config.parallel.fp8 && config.parallel.fp8_recipe != Fp8Recipe::kTensorwise) {
    toml << "\n" << NotTorchaoRecipe(config.parallel.fp8_recipe);
  }
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
         << (compiles ? "True" : "False");
      if (TorchaoRecipe(config.parallel.fp8_recipe)) {
        py << ", recipe_name=\"" << Fp8RecipeName(config.parallel.fp8_recipe) << "\"";
      }
      py << ")]";
    }
    py << ")\n";
    const Fp8Recipe recipe = config.parallel.fp8_recipe;
    if (config.parallel.fp8 && recipe != Fp8Recipe::kTensorwise && !TorchaoRecipe(recipe)) {
      py << NotTorchaoRecipe(recipe, "    ");
    }
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
      files.push_back({"megatron-args.txt", MegatronArgsText(config, candidate, global_batch,
                                                             MegatronDialect::kMegatronLm)});
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
      files.push_back(
          {"ds_config.json", WriteDeepSpeedJson(RunConfig(config, candidate), global_batch)});
      // Megatron-DeepSpeed takes Megatron's model and layout arguments, its own for ZeRO.
      files.push_back(
          {"megatron-deepspeed-args.txt",
           MegatronArgsText(config, candidate, global_batch, MegatronDialect::kMegatronDeepSpeed)});
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
