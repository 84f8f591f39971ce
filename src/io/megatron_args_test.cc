#include "io/megatron_args.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "hardware/presets.h"
#include "io/megatron_args_table.h"
#include "schedule/partition.h"

namespace stagecraft {
namespace {

using Args = std::vector<std::pair<std::string, std::string>>;

// A layout as the planner's candidates set it in a config (plan/plan.cc, Candidate::ApplyTo).
struct Layout {
  MegatronDialect dialect = MegatronDialect::kMegatronLm;
  int32_t tp = 1;
  int32_t pp = 1;
  int32_t vpp = 1;
  int32_t dp = 1;
  int32_t cp = 1;
  int32_t ep = 1;
  int32_t micro_batch_size = 1;
  int64_t global_batch = 0;
  Recompute recompute = Recompute::kNone;
  int32_t recompute_num_layers = 0;  // with kFull
  bool uniform = false;              // with kFull and recompute_num_layers
  int32_t zero_stage = 0;
  std::vector<int32_t> counts;  // empty: the engine's own split
};

struct RoundTrip {
  std::string name;
  Config config;
  MegatronWriteContext context;
};

Config RunOf(const TransformerSpec& t, int32_t seq_len, const Layout& l) {
  Config config;
  config.model.transformer = t;
  config.model.seq_len = seq_len;
  config.model.micro_batch_size = l.micro_batch_size;
  config.cluster.given = true;
  config.cluster.devices_per_node = 8;
  config.cluster.nodes = l.tp * l.pp * l.dp * l.cp / 8;
  const bool deepspeed = l.dialect == MegatronDialect::kMegatronDeepSpeed;
  ParallelSpec& p = config.parallel;
  p = ParallelSpec();
  p.tp = l.tp;
  p.pp = l.pp;
  p.vpp = l.vpp;
  p.dp = l.dp;
  p.cp = l.cp;
  p.ep = l.ep;
  p.microbatches = static_cast<int32_t>(l.global_batch / (int64_t{l.dp} * l.micro_batch_size));
  p.recompute = l.recompute;
  p.recompute_num_layers = l.recompute == Recompute::kFull ? l.recompute_num_layers : 0;
  p.recompute_method = l.uniform ? RecomputeMethod::kUniform : RecomputeMethod::kBlock;
  p.partition = PartitionMethod::kCounts;
  p.layer_counts = !l.counts.empty()       ? l.counts
                   : deepspeed && l.pp > 1 ? DeepSpeedTransformerCounts(t.layers, l.pp)
                                           : EvenTransformerCounts(t.layers, l.pp * l.vpp);
  p.sequence_parallel = l.tp > 1 && !deepspeed;
  p.distributed_optimizer = !deepspeed && l.zero_stage == 1;
  p.overlap_param_gather = p.distributed_optimizer;
  p.overlap_grad_reduce = !deepspeed && l.dp * l.cp > 1;
  p.zero_stage = deepspeed ? l.zero_stage : 0;
  return config;
}

TransformerSpec Gpt() {
  TransformerSpec t;
  t.layers = 24;
  t.hidden = 2048;
  t.heads = 16;
  t.vocab = 50257;
  return t;
}

TransformerSpec Llama() {
  TransformerSpec t;
  t.layers = 32;
  t.hidden = 4096;
  t.heads = 32;
  t.kv_heads = 8;
  t.ffn_hidden = 14336;
  t.vocab = 128256;
  t.swiglu = true;
  t.causal = true;
  t.bias = false;
  t.learned_positions = false;
  t.tied_embeddings = false;
  return t;
}

// DeepSeek-V3's shape (its config.json): MLA, 3 dense layers of 61, 256 experts and one shared.
TransformerSpec DeepSeekV3() {
  TransformerSpec t = Llama();
  t.layers = 61;
  t.hidden = 7168;
  t.heads = 128;
  t.kv_heads = 0;
  t.ffn_hidden = 18432;
  t.vocab = 129280;
  t.q_lora_rank = 1536;
  t.kv_lora_rank = 512;
  t.qk_nope_dim = 128;
  t.qk_rope_dim = 64;
  t.v_head_dim = 128;
  t.experts = 256;
  t.experts_per_token = 8;
  t.expert_ffn = 2048;
  t.shared_experts = 1;
  t.dense_layers = 3;
  return t;
}

// "tp 2 pp 4 dp 2 mbs 2 batch 64 recompute full:2 zero 1 counts 8,9,9,8 deepspeed": recompute
// is selective, full (every layer), full:N (block) or uniform:N.
Layout LayoutOf(const std::string& text) {
  Layout l;
  std::istringstream words(text);
  std::string key;
  std::string value;
  const std::map<std::string, int32_t*> numbers = {{"tp", &l.tp},
                                                   {"pp", &l.pp},
                                                   {"vpp", &l.vpp},
                                                   {"dp", &l.dp},
                                                   {"cp", &l.cp},
                                                   {"ep", &l.ep},
                                                   {"mbs", &l.micro_batch_size},
                                                   {"zero", &l.zero_stage}};
  while (words >> key) {
    if (key == "deepspeed") {
      l.dialect = MegatronDialect::kMegatronDeepSpeed;
      continue;
    }
    words >> value;
    if (numbers.count(key) > 0) {
      *numbers.at(key) = std::stoi(value);
    } else if (key == "batch") {
      l.global_batch = std::stoll(value);
    } else if (key == "recompute") {
      const size_t colon = value.find(':');
      const std::string mode = value.substr(0, colon);
      l.recompute = mode == "selective" ? Recompute::kSelective : Recompute::kFull;
      l.uniform = mode == "uniform";
      if (colon != std::string::npos) l.recompute_num_layers = std::stoi(value.substr(colon + 1));
    } else if (key == "counts") {
      std::istringstream counts(value);
      std::string count;
      while (std::getline(counts, count, ',')) l.counts.push_back(std::stoi(count));
    } else {
      ADD_FAILURE() << "unknown layout key " << key;
    }
  }
  return l;
}

std::vector<RoundTrip> Cases() {
  std::vector<RoundTrip> cases;
  const auto add = [&cases](std::string name, const TransformerSpec& t, int32_t seq_len,
                            const std::string& layout) {
    const Layout l = LayoutOf(layout);
    cases.push_back({std::move(name), RunOf(t, seq_len, l), {l.global_batch, l.dialect}});
  };
  add("dense GPT", Gpt(), 2048, "tp 2 pp 2 dp 2 mbs 2 batch 64 recompute selective");
  TransformerSpec head_dim = Gpt();
  head_dim.head_dim = 64;
  head_dim.ffn_hidden = 5000;
  add("GPT with its own head width", head_dim, 1024, "dp 8 batch 32");
  add("GQA with the distributed optimizer and cp", Llama(), 8192,
      "tp 4 pp 2 dp 2 cp 2 batch 64 zero 1");
  // 61 layers over pp 8: Megatron runs them only as a layout string.
  add("MLA and MoE with dense first layers", DeepSeekV3(), 4096,
      "tp 2 pp 8 dp 4 ep 4 batch 256 recompute full");
  TransformerSpec every_moe = DeepSeekV3();
  every_moe.dense_layers = 0;
  every_moe.q_lora_rank = 0;
  every_moe.shared_experts = 0;
  every_moe.layers = 64;
  add("MoE on every layer, full query projection", every_moe, 4096, "pp 8 dp 8 ep 8 batch 512");
  add("interleaved", Llama(), 8192, "tp 8 pp 4 vpp 2 dp 2 batch 128 zero 1");
  add("uneven layout", Llama(), 8192, "tp 8 pp 4 batch 32 counts 8,9,9,8");
  add("interleaved uneven layout", Llama(), 8192, "tp 8 pp 2 vpp 2 batch 32 counts 6,9,9,10");
  add("full block recompute", Llama(), 4096, "tp 8 pp 4 batch 16 recompute full:2");
  add("full uniform recompute", Llama(), 4096, "tp 8 pp 4 batch 16 recompute uniform:3");
  add("Megatron-DeepSpeed pipe with ZeRO-1", Gpt(), 2048,
      "deepspeed tp 2 pp 4 dp 2 batch 64 recompute uniform:2 zero 1");
  add("Megatron-DeepSpeed without its pipe, ZeRO-3", Llama(), 4096,
      "deepspeed tp 4 dp 4 batch 64 recompute full:4 zero 3");
  // FP8 through Transformer Engine: --fp8-format hybrid and the recipe by Megatron's name.
  add("FP8 blockwise", Llama(), 8192, "tp 8 pp 4 batch 32");
  cases.back().config.parallel.fp8 = true;
  cases.back().config.parallel.fp8_recipe = Fp8Recipe::kBlockwise;
  return cases;
}

std::string Text(const Args& args) {
  std::string text = "# written by WriteMegatronArgs\n";
  for (const auto& [flag, value] : args) text += flag + (value.empty() ? "" : " " + value) + "\n";
  return text;
}

// The layers of each chunk a config runs: its counts, or its layout string's.
std::vector<int32_t> ChunkCounts(const Config& config) {
  const ParallelSpec& p = config.parallel;
  if (p.partition != PartitionMethod::kLayout) return p.layer_counts;
  const std::string letters =
      "E" + std::string(static_cast<size_t>(config.model.transformer.layers), 't') + "L";
  auto partition = PartitionFromLayout(p.layout, letters);
  EXPECT_TRUE(partition.ok()) << p.layout;
  return partition.ok() ? partition.value().layer_counts() : std::vector<int32_t>();
}

void ExpectSameRun(const Config& want, const Config& got) {
  const TransformerSpec& w = want.model.transformer;
  const TransformerSpec& g = got.model.transformer;
  EXPECT_EQ(g.layers, w.layers);
  EXPECT_EQ(g.hidden, w.hidden);
  EXPECT_EQ(g.heads, w.heads);
  EXPECT_EQ(g.kv_heads_or_heads(), w.kv_heads_or_heads());
  EXPECT_EQ(g.head_dim_or_default(), w.head_dim_or_default());
  EXPECT_EQ(g.ffn_or_default(), w.ffn_or_default());
  EXPECT_EQ(g.vocab, w.vocab);
  EXPECT_EQ(g.swiglu, w.swiglu);
  EXPECT_EQ(g.causal, w.causal);
  EXPECT_EQ(g.bias, w.bias);
  EXPECT_EQ(g.learned_positions, w.learned_positions);
  EXPECT_EQ(g.tied_embeddings, w.tied_embeddings);
  EXPECT_EQ(g.experts, w.experts);
  EXPECT_EQ(g.experts_per_token, w.experts_per_token);
  EXPECT_EQ(g.expert_ffn, w.expert_ffn);
  EXPECT_EQ(g.shared_experts, w.shared_experts);
  EXPECT_EQ(g.dense_layers, w.dense_layers);
  EXPECT_EQ(g.q_lora_rank, w.q_lora_rank);
  EXPECT_EQ(g.kv_lora_rank, w.kv_lora_rank);
  EXPECT_EQ(g.qk_nope_dim, w.qk_nope_dim);
  EXPECT_EQ(g.qk_rope_dim, w.qk_rope_dim);
  EXPECT_EQ(g.v_head_dim, w.v_head_dim);
  EXPECT_EQ(got.model.seq_len, want.model.seq_len);
  EXPECT_EQ(got.model.micro_batch_size, want.model.micro_batch_size);
  const ParallelSpec& wp = want.parallel;
  const ParallelSpec& gp = got.parallel;
  EXPECT_EQ(gp.tp, wp.tp);
  EXPECT_EQ(gp.pp, wp.pp);
  EXPECT_EQ(gp.vpp, wp.vpp);
  EXPECT_EQ(gp.dp, wp.dp);
  EXPECT_EQ(gp.cp, wp.cp);
  EXPECT_EQ(gp.ep, wp.ep);
  EXPECT_EQ(gp.microbatches, wp.microbatches);
  EXPECT_EQ(gp.sequence_parallel, wp.sequence_parallel);
  EXPECT_EQ(gp.recompute, wp.recompute);
  EXPECT_EQ(gp.recompute_num_layers, wp.recompute_num_layers);
  if (wp.recompute_num_layers > 1) {
    EXPECT_EQ(gp.recompute_method, wp.recompute_method);
  }
  EXPECT_EQ(gp.distributed_optimizer, wp.distributed_optimizer);
  EXPECT_EQ(gp.overlap_param_gather, wp.overlap_param_gather);
  EXPECT_EQ(gp.overlap_grad_reduce, wp.overlap_grad_reduce);
  EXPECT_EQ(gp.zero_stage, wp.zero_stage);
  EXPECT_EQ(ChunkCounts(got), ChunkCounts(want));
}

// Each config written, read back, and written again: the same run, the same arguments.
TEST(MegatronArgsTest, WrittenArgumentsReadBackToTheSameRun) {
  for (const RoundTrip& c : Cases()) {
    SCOPED_TRACE(c.name);
    const Args args = WriteMegatronArgs(c.config, c.context);
    Config base;
    base.cluster = c.config.cluster;
    auto read = ReadMegatronArgs(Text(args), "args.txt", base, c.context.dialect);
    ASSERT_TRUE(read.ok()) << read.error().message << "\n" << Text(args);
    ExpectSameRun(c.config, read.value());
    // The dialect names the engine, for its host time per kernel (model/engine_host.h).
    EXPECT_EQ(read.value().parallel.engine, c.context.dialect == MegatronDialect::kMegatronDeepSpeed
                                                ? TrainingEngine::kMegatronDeepSpeed
                                                : TrainingEngine::kMegatronLm);
    EXPECT_EQ(WriteMegatronArgs(read.value(), c.context), args);
  }
}

// --fp8-format turns FP8 on with Megatron's default recipe, delayed; --fp8-recipe names another;
// a recipe without a format is refused (the config's rule for fp8_recipe without fp8).
TEST(MegatronArgsTest, Fp8FormatAndRecipe) {
  const std::string base =
      "--num-layers 2\n--hidden-size 1024\n--num-attention-heads 16\n--seq-length 2048\n"
      "--max-position-embeddings 2048\n--micro-batch-size 1\n--global-batch-size 8\n"
      "--vocab-size 32000\n";
  Config cluster;
  cluster.cluster = ClusterFromPreset("h100").value();
  auto delayed = ReadMegatronArgs(base + "--fp8-format hybrid\n", "a.txt", cluster);
  ASSERT_TRUE(delayed.ok()) << delayed.error().message;
  EXPECT_TRUE(delayed.value().parallel.fp8);
  EXPECT_EQ(delayed.value().parallel.fp8_recipe, Fp8Recipe::kDelayed);
  auto tensorwise =
      ReadMegatronArgs(base + "--fp8-recipe tensorwise\n--fp8-format e4m3\n", "a.txt", cluster);
  ASSERT_TRUE(tensorwise.ok()) << tensorwise.error().message;
  EXPECT_EQ(tensorwise.value().parallel.fp8_recipe, Fp8Recipe::kTensorwise);
  auto alone = ReadMegatronArgs(base + "--fp8-recipe blockwise\n", "a.txt", cluster);
  ASSERT_FALSE(alone.ok());
  EXPECT_NE(alone.error().message.find("no --fp8-format"), std::string::npos);
  auto rowwise =
      ReadMegatronArgs(base + "--fp8-format hybrid\n--fp8-recipe rowwise\n", "a.txt", cluster);
  ASSERT_FALSE(rowwise.ok());
}

// What the exports hold for a few of them: the layout string, the interleaving, the dialect.
TEST(MegatronArgsTest, WritesTheLayoutAndTheDialectsOwnArguments) {
  std::map<std::string, Args> written;
  for (const RoundTrip& c : Cases()) written[c.name] = WriteMegatronArgs(c.config, c.context);
  const auto value = [&written](const std::string& name, const std::string& flag) {
    for (const auto& [f, v] : written[name]) {
      if (f == flag) return v;
    }
    return std::string("(absent)");
  };
  EXPECT_EQ(value("uneven layout", "--pipeline-model-parallel-layout"), "Et*7|(t*9|)*2t*7L");
  EXPECT_EQ(value("uneven layout", "--num-layers-per-virtual-pipeline-stage"), "(absent)");
  EXPECT_EQ(value("interleaved", "--num-layers-per-virtual-pipeline-stage"), "4");
  EXPECT_EQ(value("interleaved", "--pipeline-model-parallel-layout"), "(absent)");
  EXPECT_EQ(value("MLA and MoE with dense first layers", "--moe-layer-freq"), "([0]*3+[1]*58)");
  EXPECT_EQ(value("MLA and MoE with dense first layers", "--moe-shared-expert-intermediate-size"),
            "2048");
  EXPECT_NE(value("MLA and MoE with dense first layers", "--pipeline-model-parallel-layout"),
            "(absent)");
  EXPECT_EQ(value("full block recompute", "--recompute-method"), "block");
  EXPECT_EQ(value("dense GPT", "--recompute-granularity"), "selective");
  EXPECT_EQ(value("dense GPT", "--normalization"), "LayerNorm");
  const Args& pipe = written["Megatron-DeepSpeed pipe with ZeRO-1"];
  ASSERT_GE(pipe.size(), 3u);
  EXPECT_EQ(pipe[pipe.size() - 3], (std::pair<std::string, std::string>("--deepspeed", "")));
  EXPECT_EQ(pipe.back(), (std::pair<std::string, std::string>("--zero-stage", "1")));
  EXPECT_EQ(value("Megatron-DeepSpeed pipe with ZeRO-1", "--context-parallel-size"), "(absent)");
  EXPECT_EQ(value("Megatron-DeepSpeed without its pipe, ZeRO-3", "--no-pipeline-parallel"), "");
  EXPECT_EQ(value("dense GPT", "--zero-stage"), "(absent)");
}

// A flag is never written that the reader refuses: every row with a write is its flag's only row,
// is written by some case above in a dialect that takes it, and parses what it writes.
TEST(MegatronArgsTest, EveryWrittenArgumentIsRead) {
  using megatron_args::ArgLine;
  using megatron_args::MegatronArgument;
  std::set<std::string> written;
  for (const RoundTrip& c : Cases()) {
    for (const auto& [flag, value] : WriteMegatronArgs(c.config, c.context)) {
      SCOPED_TRACE(c.name + ": " + flag);
      written.insert(flag);
      const MegatronArgument* row = megatron_args::FindArgument(flag);
      ASSERT_NE(row, nullptr);
      EXPECT_TRUE(megatron_args::TakenBy(*row, c.context.dialect));
      EXPECT_EQ(row->parse == nullptr, value.empty());
      if (row->parse == nullptr) continue;
      ArgLine line;
      line.flag = flag;
      line.value = value;
      const Status parsed = row->parse(*row, line);
      EXPECT_TRUE(parsed.ok()) << (parsed.ok() ? "" : parsed.error().message);
    }
  }
  for (const MegatronArgument& row : megatron_args::ArgumentTable()) {
    EXPECT_EQ(megatron_args::FindArgument(row.flag), &row) << row.flag << " has two rows";
    if (row.write != nullptr) {
      EXPECT_EQ(written.count(row.flag), 1u) << row.flag << " is written by no case";
    }
  }
}

}  // namespace
}  // namespace stagecraft
