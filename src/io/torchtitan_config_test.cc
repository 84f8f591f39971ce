#include "io/torchtitan_config.h"

#include <gtest/gtest.h>

#include <string>

#include "core/suggest.h"
#include "io/torchtitan_registry.h"

namespace stagecraft {
namespace {

Config Cluster(int32_t nodes) {
  Config config;
  config.cluster.given = true;
  config.cluster.nodes = nodes;
  config.cluster.devices_per_node = 8;
  return config;
}

// torchtitan's llama3 flavors (torchtitan/models/llama3/__init__.py) with FeedForward's width:
// the published Llama 3 MLP widths 14,336, 28,672 and 53,248.
TEST(TorchtitanConfigTest, FlavorsGiveLlama3Dimensions) {
  const std::string text =
      "[model]\nname = \"llama3\"\nflavor = \"70B\"\n[training]\nlocal_batch_size = 16\n"
      "global_batch_size = 32\nseq_len = 8192\n[parallelism]\npipeline_parallel_degree = 4\n"
      "tensor_parallel_degree = 8\npipeline_parallel_schedule = \"Interleaved1F1B\"\n"
      "[activation_checkpoint]\nmode = \"full\"\n";
  auto config = ReadTorchtitanConfig(text, "t.toml", Cluster(8), false);
  ASSERT_TRUE(config.ok()) << config.error().message;
  const Config& c = config.value();
  EXPECT_EQ(c.model.transformer.layers, 80);
  EXPECT_EQ(c.model.transformer.ffn_hidden, 28672);
  EXPECT_EQ(Llama3FlavorOf(c.model.transformer), "70B");
  // 64 GPUs = dp_shard (the rest, 2) x tp 8 x pp 4; the global batch over 2 ranks is the local
  // batch of 16, split into microbatches of 1; no layers_per_stage: two stages per rank.
  EXPECT_EQ(c.parallel.dp, 2);
  EXPECT_EQ(c.parallel.vpp, 2);
  EXPECT_EQ(c.parallel.microbatches, 16);
  EXPECT_EQ(c.parallel.engine, TrainingEngine::kTorchtitan);
  EXPECT_EQ(c.parallel.zero_stage, 3);
  EXPECT_TRUE(c.parallel.sequence_parallel);
  EXPECT_EQ(c.parallel.recompute, Recompute::kFull);
  EXPECT_FALSE(c.parallel.fused_kernels);  // compile is off by default
  EXPECT_EQ(c.schedule.name, "interleaved-1f1b");
  TransformerSpec eight;
  eight.layers = 32;
  eight.hidden = 4096;
  eight.heads = 32;
  eight.kv_heads = 8;
  eight.ffn_hidden = 14336;
  eight.vocab = 128256;
  EXPECT_EQ(Llama3FlavorOf(eight), "8B");
  eight.ffn_hidden = 14335;
  EXPECT_EQ(Llama3FlavorOf(eight), "");
}

TEST(TorchtitanConfigTest, LayersPerStageCountsTheEmbeddingAndHead) {
  // 32 layers + 1 + 1 over 4 layers per stage: ceil(34 / 4) = 9 stages, not a multiple of pp 4.
  const std::string text =
      "[model]\nflavor = \"8B\"\n[training]\nlocal_batch_size = 8\nseq_len = 2048\n"
      "[parallelism]\npipeline_parallel_degree = 4\n"
      "pipeline_parallel_schedule = \"Interleaved1F1B\"\npipeline_parallel_layers_per_stage = 4\n"
      "[activation_checkpoint]\nmode = \"none\"\n";
  auto config = ReadTorchtitanConfig(text, "t.toml", Cluster(1), false);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().message,
            "t.toml:9: [parallelism] pipeline_parallel_layers_per_stage = 4 makes 9 stages of (32 "
            "layers + 1 + 1) (expected a multiple of pp 4, at least two per rank for "
            "Interleaved1F1B; torchtitan's pipeline_parallel.py)");
  auto even = ReadTorchtitanConfig(text + "[parallelism]\n", "t.toml", Cluster(1), false);
  EXPECT_FALSE(even.ok());  // a second [parallelism] table
}

// [float8] recipe_name (torchtitan/config/job_config.py): unset is tensorwise (torchao's
// Float8LinearConfig()); rowwise and rowwise_with_gw_hp are read; Megatron's names are not
// torchao's and are refused. Without the float8 converter the table is not read.
TEST(TorchtitanConfigTest, Float8RecipeName) {
  const std::string base =
      "[model]\nname = \"llama3\"\nflavor = \"8B\"\nconverters = [\"float8\"]\n"
      "[training]\nlocal_batch_size = 1\nseq_len = 8192\n";
  auto unset = ReadTorchtitanConfig(base, "t.toml", Cluster(1), false);
  ASSERT_TRUE(unset.ok()) << unset.error().message;
  EXPECT_TRUE(unset.value().parallel.fp8);
  EXPECT_EQ(unset.value().parallel.fp8_recipe, Fp8Recipe::kTensorwise);
  auto rowwise = ReadTorchtitanConfig(base + "[float8]\nrecipe_name = \"rowwise_with_gw_hp\"\n",
                                      "t.toml", Cluster(1), false);
  ASSERT_TRUE(rowwise.ok()) << rowwise.error().message;
  EXPECT_EQ(rowwise.value().parallel.fp8_recipe, Fp8Recipe::kRowwiseWithGwHp);
  auto blockwise = ReadTorchtitanConfig(base + "[float8]\nrecipe_name = \"blockwise\"\n", "t.toml",
                                        Cluster(1), false);
  ASSERT_FALSE(blockwise.ok());
  EXPECT_NE(blockwise.error().message.find("torchao's float8 recipes"), std::string::npos)
      << blockwise.error().message;
}

// DDP (replicate only) keeps the parameters whole; HSDP (replicate and shard) is refused.
TEST(TorchtitanConfigTest, ReplicateIsDdpAndHsdpIsRefused) {
  const std::string head =
      "[model]\nflavor = \"8B\"\n[training]\nlocal_batch_size = 2\nseq_len = 4096\n"
      "[activation_checkpoint]\nmode = \"none\"\n[parallelism]\n"
      "data_parallel_replicate_degree = 8\n";
  auto ddp =
      ReadTorchtitanConfig(head + "data_parallel_shard_degree = 1\n", "t.toml", Cluster(1), false);
  ASSERT_TRUE(ddp.ok()) << ddp.error().message;
  EXPECT_EQ(ddp.value().parallel.dp, 8);
  EXPECT_EQ(ddp.value().parallel.zero_stage, 0);
  EXPECT_EQ(ddp.value().parallel.microbatches, 1);
  EXPECT_EQ(ddp.value().model.micro_batch_size, 2);
  auto hsdp =
      ReadTorchtitanConfig(head + "data_parallel_shard_degree = 2\n", "t.toml", Cluster(2), false);
  ASSERT_FALSE(hsdp.ok());
  EXPECT_EQ(hsdp.error().message,
            "t.toml:9: [parallelism] data_parallel_replicate_degree with "
            "data_parallel_shard_degree x context_parallel_degree > 1 is HSDP, which stagecraft "
            "does not read yet (expected replicate 1, or shard and cp 1: DDP)");
}

// torchtitan's layer policy (selective with a number N, its default "2"): a process-wide counter
// checkpoints every Nth transformer block (activation_checkpoint.py at v0.2.0, _apply_layer_sac),
// floor(32 / N) of Llama 3 8B's blocks without pipeline parallelism; refused with it.
TEST(TorchtitanConfigTest, EveryNthLayerIsCheckpointedWithoutPipelineParallelism) {
  const auto read = [](const std::string& extra) {
    return ReadTorchtitanConfig(
        "[model]\nflavor = \"8B\"\n[training]\nlocal_batch_size = 4\n"
        "seq_len = 8192\n" +
            extra,
        "t.toml", Cluster(1), false);
  };
  auto by_default = read("");
  ASSERT_TRUE(by_default.ok()) << by_default.error().message;
  EXPECT_EQ(by_default.value().parallel.recompute, Recompute::kFull);
  EXPECT_EQ(by_default.value().parallel.recompute_num_layers, 16);
  auto third = read("[activation_checkpoint]\nmode = \"selective\"\nselective_ac_option = \"3\"\n");
  ASSERT_TRUE(third.ok()) << third.error().message;
  EXPECT_EQ(third.value().parallel.recompute_num_layers, 10);
  auto every = read("[activation_checkpoint]\nselective_ac_option = \"0\"\n");
  ASSERT_TRUE(every.ok()) << every.error().message;
  EXPECT_EQ(every.value().parallel.recompute, Recompute::kFull);
  EXPECT_EQ(every.value().parallel.recompute_num_layers, 0);  // all of them
  auto none = read("[activation_checkpoint]\nselective_ac_option = \"40\"\n");
  ASSERT_TRUE(none.ok()) << none.error().message;
  EXPECT_EQ(none.value().parallel.recompute, Recompute::kNone);
  auto piped = read("[parallelism]\npipeline_parallel_degree = 2\n");
  ASSERT_FALSE(piped.ok());
  EXPECT_NE(piped.error().message.find("read without pipeline parallelism only"), std::string::npos)
      << piped.error().message;
  auto word = read("[activation_checkpoint]\nselective_ac_option = \"two\"\n");
  ASSERT_FALSE(word.ok());
  EXPECT_NE(word.error().message.find("expected 'op' or a number N"), std::string::npos)
      << word.error().message;
}

// module_fqns_per_model_part (pipeline_llm takes it in place of torchtitan's splitter): each
// stage's modules give its layers, the embedding and the head counted as one each, and the
// stages per rank.
TEST(TorchtitanConfigTest, ModuleListsGiveEachStagesLayers) {
  Config six = Cluster(1);  // a model of 6 layers, given (--hf-config)
  six.model.transformer.layers = 6;
  six.model.transformer.hidden = 512;
  six.model.transformer.heads = 8;
  six.model.transformer.ffn_hidden = 1024;
  six.model.transformer.vocab = 1000;
  const std::string head =
      "[model]\nname = \"llama3\"\n[training]\nlocal_batch_size = 8\nseq_len = 2048\n"
      "[parallelism]\npipeline_parallel_degree = 2\ndata_parallel_shard_degree = 1\n"
      "tensor_parallel_degree = 4\n";
  const std::string ac = "[activation_checkpoint]\nmode = \"none\"\n";
  // Four stages over pp 2 for the looped schedule.
  const std::string good =
      head +
      "pipeline_parallel_schedule = \"Interleaved1F1B\"\nmodule_fqns_per_model_part = [\n"
      "  [\"tok_embeddings\"], [\"layers.0\", \"layers.1\", \"layers.2\"],\n"
      "  [\"layers.4\", \"layers.3\"], [\"layers.5\", \"norm\", \"output\"]]\n" +
      ac;
  auto config = ReadTorchtitanConfig(good, "t.toml", six, true);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config.value().parallel.vpp, 2);
  EXPECT_EQ(config.value().parallel.layer_counts, (std::vector<int32_t>{1, 3, 2, 2}));

  const std::vector<std::pair<std::string, std::string>> bad = {
      {"[[\"layers.0\", \"tok_embeddings\"], [\"layers.1\", \"layers.2\", \"layers.3\"], "
       "[\"layers.4\"], [\"tok_embeddings\", \"layers.5\", \"norm\", \"output\"]]",
       "stage 3 names 'tok_embeddings' again (expected each module once)"},
      {"[[\"tok_embeddings\", \"norm\"], [\"layers.0\"], [\"layers.1\"], "
       "[\"layers.2\", \"layers.3\", \"layers.4\", \"layers.5\", \"output\"]]",
       "stage 0 holds 'norm' (expected it on the last stage"},
      {"[[\"tok_embeddings\", \"layers.0\"], [\"layers.2\"], [\"layers.1\", \"layers.3\"], "
       "[\"layers.4\", \"layers.5\", \"norm\", \"output\"]]",
       "stage 1 holds layers 2-2 in 1 module (expected layers 1 onward without a gap"},
      {"[[\"tok_embeddings\", \"layers.0\"], [\"layers.1\"], [\"layers.2\", \"layer.3\"], "
       "[\"layers.4\", \"layers.5\", \"norm\", \"output\"]]",
       "stage 2 names 'layer.3'; did you mean 'layers.N'?"},
      {"[[\"tok_embeddings\", \"layers.0\"], [\"layers.1\"], [\"layers.2\"], "
       "[\"layers.3\", \"layers.4\", \"norm\", \"output\"]]",
       "holds 5 of the model's 6 layers (expected layers.0 to layers.5, each once)"},
      {"[[\"tok_embeddings\", \"layers.0\"], [\"layers.1\", \"layers.2\"], "
       "[\"layers.3\", \"layers.4\", \"layers.5\", \"norm\", \"output\"]]",
       "gives 3 stages (expected a multiple of pp 2"},
      {"[[\"tok_embeddings\", \"layers.0\"], [], [\"layers.1\"], "
       "[\"layers.2\", \"layers.3\", \"layers.4\", \"layers.5\", \"norm\", \"output\"]]",
       "stage 1 holds no module (expected at least one)"},
      {"[[\"tok_embeddings\", \"layers.0\"], [\"layers.1\", \"layers.6\"], [\"layers.2\"], "
       "[\"layers.3\", \"norm\", \"output\"]]",
       "stage 1 names 'layers.6' of a model with 6 layers"},
  };
  for (const auto& [lists, message] : bad) {
    const std::string text = head +
                             "pipeline_parallel_schedule = \"Interleaved1F1B\"\n"
                             "module_fqns_per_model_part = " +
                             lists + "\n" + ac;
    auto read = ReadTorchtitanConfig(text, "t.toml", six, true);
    ASSERT_FALSE(read.ok()) << lists;
    EXPECT_NE(read.error().message.find("t.toml:11: [parallelism] module_fqns_per_model_part"),
              std::string::npos)
        << read.error().message;
    EXPECT_NE(read.error().message.find(message), std::string::npos) << read.error().message;
  }
  // One stage a rank for 1F1B; four stages are two a rank.
  auto single = ReadTorchtitanConfig(
      head +
          "pipeline_parallel_schedule = \"1F1B\"\nmodule_fqns_per_model_part = "
          "[[\"tok_embeddings\", \"layers.0\"], [\"layers.1\", \"layers.2\"], "
          "[\"layers.3\"], [\"layers.4\", \"layers.5\", \"norm\", \"output\"]]\n" +
          ac,
      "t.toml", six, true);
  ASSERT_FALSE(single.ok());
  EXPECT_NE(
      single.error().message.find("gives 4 stages over pp 2 (expected one per rank for 1F1B)"),
      std::string::npos)
      << single.error().message;
}

// torchtitan's Python config registry (io/torchtitan_registry.h).

std::string Function(const std::string& body) {
  return "# a comment\nfrom torchtitan.models.llama3.config_registry import llama3_70b\n"
         "from torchtitan.trainer import Trainer\n\n\ndef my_run() -> Trainer.Config:\n" +
         body + "    return config\n";
}

// The base function's values are what a function that starts from it inherits:
// torchtitan/models/llama3/config_registry.py's llama3_70b (b5bcd76) runs 8 x 8192 tokens a
// microbatch at context 8192, TP 8, full activation checkpointing.
TEST(TorchtitanRegistryTest, ABaseFunctionGivesItsValues) {
  auto config =
      ReadTorchtitanRegistry(Function("    config = llama3_70b()\n"), "run.py", Cluster(8), false);
  ASSERT_TRUE(config.ok()) << config.error().message;
  const Config& c = config.value();
  EXPECT_EQ(c.model.transformer.layers, 80);
  EXPECT_EQ(c.model.seq_len, 8192);
  EXPECT_EQ(c.model.micro_batch_size, 8);
  EXPECT_EQ(c.parallel.tp, 8);
  EXPECT_EQ(c.parallel.dp, 8);  // data_parallel_shard_degree -1: 64 GPUs / tp 8
  EXPECT_EQ(c.parallel.pp, 1);
  EXPECT_EQ(c.parallel.recompute, Recompute::kFull);
  EXPECT_FALSE(c.parallel.fused_kernels);
  EXPECT_FALSE(c.parallel.fp8);
}

// The same layout written in both generations reads to the same config: tokens per microbatch
// and num_pp_microbatches mean the 0.2 local batch and microbatch size.
TEST(TorchtitanRegistryTest, BothGenerationsReadAlike) {
  const std::string toml =
      "[model]\nname = \"llama3\"\nflavor = \"70B\"\n[training]\nlocal_batch_size = 16\n"
      "global_batch_size = 32\nseq_len = 8192\n[parallelism]\npipeline_parallel_degree = 4\n"
      "tensor_parallel_degree = 8\npipeline_parallel_schedule = \"Interleaved1F1B\"\n"
      "pipeline_parallel_microbatch_size = 2\n[activation_checkpoint]\nmode = \"selective\"\n"
      "selective_ac_option = \"op\"\n[compile]\nenable = true\n";
  const std::string py = Function(
      "    config = llama3_70b()\n"
      "    config.training.num_tokens_per_microbatch_per_dp_rank = 2 * 8192\n"
      "    config.training.num_tokens_per_train_step = 32 * 8192\n"
      "    config.training.disable_cuda_graphs = True\n"
      "    config.parallelism = ParallelismConfig(\n"
      "        tensor_parallel_degree=8,\n"
      "        pipeline_parallel_degree=4,  # four ranks\n"
      "        pipeline_parallel_schedule=\"Interleaved1F1B\",\n"
      "        num_pp_microbatches=8,\n"
      "    )\n"
      "    config.activation_checkpoint = SelectiveAC.Config()\n"
      "    config.compile.enable = True\n"
      "    config.optimizer = default_adamw(lr=1.5e-4)\n"
      "    config.training.steps = 1_000\n");
  auto a = ReadTorchtitanConfig(toml, "t.toml", Cluster(8), false);
  auto b = ReadTorchtitanRegistry(py, "run.py", Cluster(8), false);
  ASSERT_TRUE(a.ok()) << a.error().message;
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(b.value().parallel.microbatches, 8);
  EXPECT_EQ(b.value().model.micro_batch_size, 2);
  EXPECT_EQ(b.value().parallel.dp, 2);
  EXPECT_EQ(b.value().parallel.vpp, 2);
  EXPECT_EQ(b.value().parallel.recompute, Recompute::kSelectiveOp);
  EXPECT_TRUE(b.value().parallel.fused_kernels);
  EXPECT_EQ(b.value().schedule.name, a.value().schedule.name);
  EXPECT_EQ(b.value().parallel.microbatches, a.value().parallel.microbatches);
  EXPECT_EQ(b.value().model.micro_batch_size, a.value().model.micro_batch_size);
  EXPECT_EQ(b.value().parallel.recompute, a.value().parallel.recompute);
  EXPECT_EQ(b.value().parallel.layer_counts, a.value().parallel.layer_counts);
  // Both compile the loss with the model (components default to model and loss).
  EXPECT_EQ(a.value().parallel.cross_entropy_fusion, CrossEntropyFusion::kTorchCompiled);
  EXPECT_EQ(b.value().parallel.cross_entropy_fusion, CrossEntropyFusion::kTorchCompiled);
}

// Context parallelism is PyTorch's context_parallel with the config's rotate method (default
// allgather); the loss is PyTorch's cross_entropy, eager without compile or when
// compile.components leaves it out.
TEST(TorchtitanConfigTest, CpRotateMethodAndLoss) {
  const std::string head =
      "[model]\nflavor = \"8B\"\n[training]\nlocal_batch_size = 1\nseq_len = 8192\n"
      "[parallelism]\ncontext_parallel_degree = 4\n";
  auto plain = ReadTorchtitanConfig(head, "t.toml", Cluster(1), false);
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_EQ(plain.value().parallel.cp, 4);
  EXPECT_EQ(plain.value().parallel.cp_rotate, CpRotate::kAllGather);
  EXPECT_FALSE(plain.value().parallel.cp_all_gather);
  EXPECT_EQ(plain.value().parallel.cross_entropy_fusion, CrossEntropyFusion::kTorch);
  auto alltoall = ReadTorchtitanConfig(
      head +
          "context_parallel_rotate_method = \"alltoall\"\n[compile]\nenable = true\n"
          "components = [\"model\"]\n",
      "t.toml", Cluster(1), false);
  ASSERT_TRUE(alltoall.ok()) << alltoall.error().message;
  EXPECT_EQ(alltoall.value().parallel.cp_rotate, CpRotate::kAllToAll);
  EXPECT_EQ(alltoall.value().parallel.cross_entropy_fusion, CrossEntropyFusion::kTorch);
  auto bad = ReadTorchtitanConfig(head + "context_parallel_rotate_method = \"ring\"\n", "t.toml",
                                  Cluster(1), false);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("context_parallel_rotate_method"), std::string::npos);
  EXPECT_NE(bad.error().message.find("expected 'allgather' or 'alltoall'"), std::string::npos);
  auto no_cp = ReadTorchtitanConfig(
      "[model]\nflavor = \"8B\"\n[training]\nlocal_batch_size = 1\nseq_len = 8192\n", "t.toml",
      Cluster(1), false);
  ASSERT_TRUE(no_cp.ok()) << no_cp.error().message;
  EXPECT_EQ(no_cp.value().parallel.cp_rotate, CpRotate::kNone);
}

// llama3_405b brings float8, compile and async TP; model_registry without converters drops
// float8; async TP without compile is CompileConfig's error.
TEST(TorchtitanRegistryTest, The405bBaseBringsFloat8AndAsyncTp) {
  auto base = ReadTorchtitanRegistry(
      Function("    config = llama3_405b()\n    config.parallelism.data_parallel_shard_degree = "
               "32\n"),
      "run.py", Cluster(32), false);
  ASSERT_TRUE(base.ok()) << base.error().message;
  EXPECT_TRUE(base.value().parallel.fp8);
  EXPECT_TRUE(base.value().parallel.async_tp);
  EXPECT_TRUE(base.value().parallel.fused_kernels);
  EXPECT_EQ(base.value().model.transformer.layers, 126);
  auto bf16 = ReadTorchtitanRegistry(
      Function("    config = llama3_405b()\n    config.model_spec = model_registry(\"405B\")\n"),
      "run.py", Cluster(32), false);
  ASSERT_TRUE(bf16.ok()) << bf16.error().message;
  EXPECT_FALSE(bf16.value().parallel.fp8);
  auto no_converters = ReadTorchtitanRegistry(
      Function("    config = llama3_405b()\n    config.model_spec = model_registry(\"405B\", "
               "converters=[])\n"),
      "run.py", Cluster(32), false);
  ASSERT_TRUE(no_converters.ok()) << no_converters.error().message;
  EXPECT_FALSE(no_converters.value().parallel.fp8);
  auto eager = ReadTorchtitanRegistry(
      Function("    config = llama3_405b()\n    config.compile.enable = False\n"), "run.py",
      Cluster(32), false);
  ASSERT_FALSE(eager.ok());
  EXPECT_NE(eager.error().message.find("enable_async_tensor_parallel needs compile.enable"),
            std::string::npos)
      << eager.error().message;
}

// Each error names the file and line and what was expected.
// A list of lists of module names reads as the TOML array of arrays does; a name torchtitan's
// Llama lacks is an error naming the line.
TEST(TorchtitanRegistryTest, ReadsModuleLists) {
  const auto layers = [](int first, int last) {
    std::string names;
    for (int layer = first; layer <= last; ++layer) {
      names += (layer > first ? ", " : "") + std::string("'layers.") + std::to_string(layer) + "'";
    }
    return names;
  };
  const auto body = [&](const std::string& tail) {
    return Function(
        "    config = llama3_70b()\n"
        "    config.training.disable_cuda_graphs = True\n"
        "    config.parallelism.pipeline_parallel_degree = 2\n"
        "    config.parallelism.pipeline_parallel_schedule = \"Interleaved1F1B\"\n"
        "    config.parallelism.num_pp_microbatches = 8\n"
        "    config.parallelism.module_fqns_per_model_part = [\n"
        "        [\"tok_embeddings\", " +
        layers(0, 9) + "],\n        [" + layers(10, 39) + "],\n        [" + layers(40, 79) +
        "],\n        [" + tail + "],\n    ]\n");
  };
  auto config = ReadTorchtitanRegistry(body("\"norm\", \"output\""), "run.py", Cluster(16), false);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config.value().parallel.vpp, 2);
  EXPECT_EQ(config.value().parallel.layer_counts, (std::vector<int32_t>{11, 30, 40, 1}));
  auto typo = ReadTorchtitanRegistry(body("\"norm\", \"outptu\""), "run.py", Cluster(16), false);
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.error().message.find("stage 3 names 'outptu'; did you mean 'output'?"),
            std::string::npos)
      << typo.error().message;
}

// Issue 35, D1: a module list nested 20,000 deep (a 40 KB file) was a stack overflow, the
// literal reader recursing once per '[' and copying its text each time. Lists deeper than the
// two levels torchtitan's settings take are refused before their items are split.
TEST(TorchtitanRegistryTest, DeepListIsAnErrorNotACrash) {
  const std::string deep(20000, '[');
  auto config =
      ReadTorchtitanRegistry(Function("    config = llama3_70b()\n"
                                      "    config.parallelism.module_fqns_per_model_part = " +
                                      deep + std::string(20000, ']') + "\n"),
                             "run.py", Cluster(16), false);
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.error().message.find("expected a literal"), std::string::npos)
      << config.error().message;
  EXPECT_LT(config.error().message.size(), 2 * kMaxMessageBytes);
}

TEST(TorchtitanRegistryTest, ErrorsNameTheLine) {
  struct Case {
    std::string body;
    std::string expected;
  };
  const Case cases[] = {
      {"    config = llama3_70b()\n    config.parallelism.pipeline_parallel_degree = 2\n",
       "run.py:8: pipeline parallelism with CUDA graphs on"},
      {"    config = llama3_70b()\n    config.parallelism.tensor_paralel_degree = 4\n",
       "run.py:8: unknown field config.parallelism.tensor_paralel_degree; did you mean "
       "'tensor_parallel_degree'?"},
      {"    config = llama3_7b()\n", "run.py:7: base 'llama3_7b()' is not one stagecraft knows"},
      {"    config = llama3_70b()\n    config.training.num_tokens_per_microbatch_per_dp_rank = "
       "1000\n",
       "run.py:8: training.num_tokens_per_microbatch_per_dp_rank 1000 is not a whole number"},
      {"    config = llama3_70b()\n    print(config)\n",
       "run.py:8: 'print(config)' is not a "
       "statement stagecraft reads"},
      {"    config = llama3_70b()\n    config.activation_checkpoint = MemoryBudgetAC.Config()\n",
       "run.py:8: activation_checkpoint = MemoryBudgetAC.Config() is not read"},
      {"    config = llama3_70b()\n    config.parallelism.expert_parallel_degree = 2\n",
       "run.py:8: expert_parallel_degree > 1 with tensor_parallel_degree > 1"},
      {"    config = llama3_70b()\n    config.training.disable_cuda_graphs = True\n"
       "    config.parallelism.pipeline_parallel_degree = 4\n"
       "    config.parallelism.num_pp_microbatches = 2\n",
       "run.py:10: parallelism.num_pp_microbatches 2 is fewer than the 4 pipeline ranks"},
      {"    config = llama3_70b()\n    config.parallelism.tensor_parallel_degree = \"8\n",
       "run.py:8: a string left open"},
      {"    config = llama3_70b()\n    config.parallelism = ParallelismConfig(\n",
       "run.py:8: a bracket opened here is never closed"},
  };
  for (const Case& c : cases) {
    auto config = ReadTorchtitanRegistry(Function(c.body), "run.py", Cluster(8), false);
    ASSERT_FALSE(config.ok()) << c.body;
    EXPECT_EQ(config.error().message.rfind(c.expected, 0), 0u)
        << "got: " << config.error().message << "\nexpected to start with: " << c.expected;
  }
  auto no_return =
      ReadTorchtitanRegistry("def f():\n    config = llama3_70b()\n", "run.py", Cluster(8), false);
  ASSERT_FALSE(no_return.ok());
  EXPECT_EQ(no_return.error().message,
            "run.py: the function never returns config (expected `return config`)");
  auto no_model = ReadTorchtitanRegistry(
      "def f():\n    config = Trainer.Config()\n    return "
      "config\n",
      "run.py", Cluster(8), false);
  ASSERT_FALSE(no_model.ok());
  EXPECT_NE(no_model.error().message.find("no model_spec names the model"), std::string::npos);
}

// Python's tokenizer, not a squeeze of every space (issue 35, D14): two names or numbers side by
// side are a syntax error; integers and strings are read only as Python writes them.
TEST(TorchtitanRegistryTest, TokensAreReadAsPythonReadsThem) {
  const std::string base = "    config = llama3_70b()\n";
  struct Case {
    std::string body;
    std::string expected;
  };
  const Case cases[] = {
      {base + "    config.parallelism.tensor_parallel_degree = 1 6\n",
       "run.py:8: 'config.parallelism.tensor_parallel_degree = 1 6' is not valid Python: '1 6' is "
       "two names or numbers side by side, a syntax error in Python (expected one token; did you "
       "mean '16'?)"},
      {base + "    ret urn config\n",
       "run.py:8: 'ret urn config' is not valid Python: 'ret urn' is two names"},
      {base + "    config.parallelism.tensor_parallel_degree = (\n        8\n        8)\n",
       "run.py:8: 'config.parallelism.tensor_parallel_degree = (' is not valid Python: '8 8'"},
      {base + "    config.parallelism.tensor_parallel_degree = 08\n",
       "run.py:8: config.parallelism.tensor_parallel_degree = 08 (expected a literal"},
      {base + "    config.parallelism.tensor_parallel_degree = 1__6\n",
       "run.py:8: config.parallelism.tensor_parallel_degree = 1__6 (expected a literal"},
      {base + "    config.parallelism.pipeline_parallel_schedule = \"1F\"\"1B\"\n",
       "run.py:8: config.parallelism.pipeline_parallel_schedule = \"1F\"\"1B\" (expected a "
       "literal"},
  };
  for (const Case& c : cases) {
    auto config = ReadTorchtitanRegistry(Function(c.body), "run.py", Cluster(8), false);
    ASSERT_FALSE(config.ok()) << c.body;
    EXPECT_EQ(config.error().message.rfind(c.expected, 0), 0u)
        << "got: " << config.error().message << "\nexpected to start with: " << c.expected;
  }
  // Spaces between tokens still read as none, and Python's separators stay legal.
  auto spaced = ReadTorchtitanRegistry(
      Function(base + "    config.parallelism.tensor_parallel_degree  =  4 * 2\n"
                      "    config.training.max_context_length = 8_192\n"),
      "run.py", Cluster(8), false);
  EXPECT_TRUE(spaced.ok()) << spaced.error().message;
}

}  // namespace
}  // namespace stagecraft
