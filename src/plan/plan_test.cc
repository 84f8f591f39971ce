#include "plan/plan.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "analysis/closed_form.h"
#include "plan/plan_rules.h"
#include "run/simulate.h"
#include "testing/models.h"

namespace stagecraft {
namespace {

// Llama-3-70B's shape: 80 layers, 64 heads, 8 KV heads, MLP 28672, seq 8192, on 8-GPU nodes.
PlanShape Llama70b() {
  PlanShape shape;
  shape.layers = 80;
  shape.heads = 64;
  shape.kv_heads = 8;
  shape.ffn = 28672;
  shape.seq_len = 8192;
  shape.gpus_per_node = 8;
  return shape;
}

PlanSpec Spec(Engine engine) {
  PlanSpec spec;
  spec.gpus = 64;
  spec.global_batch = 512;  // 4M tokens at 8192
  spec.engine = engine;
  return spec;
}

// Megatron plans of tests/golden/data/llama-3-70b.yaml on nodes of 8 H100, the best `simulate`
// of the screen simulated and all kept.
PlanSpec MegatronLlama70b(int32_t gpus, int64_t global_batch, int32_t simulate) {
  PlanSpec spec;
  spec.run.config_path =
      (std::filesystem::path(STAGECRAFT_TESTS_DIR) / "golden" / "data" / "llama-3-70b.yaml")
          .string();
  spec.run.cluster = "h100x8";
  spec.gpus = gpus;
  spec.global_batch = global_batch;
  spec.engine = Engine::kMegatron;
  spec.simulate = simulate;
  spec.top = simulate;
  return spec;
}

TEST(PlanRulesTest, EveryLegalMegatronCandidateObeysMegatronsChecks) {
  const Enumeration e = EnumerateCandidates(Spec(Engine::kMegatron), Llama70b());
  ASSERT_FALSE(e.legal.empty());
  int64_t rejected = 0;
  for (const auto& [reason, count] : e.rejected) rejected += count;
  EXPECT_EQ(e.asked, static_cast<int64_t>(e.legal.size()) + rejected);
  for (const Candidate& c : e.legal) {
    EXPECT_EQ(c.tp * c.pp * c.dp * c.cp, 64) << c.Describe();
    EXPECT_LE(c.tp, 8) << c.Describe();
    EXPECT_EQ(8 % c.tp, 0) << c.Describe();
    if (80 % (c.pp * c.vpp) != 0) {
      // Only through --pipeline-model-parallel-layout, every chunk holding a layer.
      ASSERT_EQ(c.layout_counts.size(), static_cast<size_t>(c.pp * c.vpp)) << c.Describe();
      int32_t layers = 0;
      for (int32_t count : c.layout_counts) {
        EXPECT_GE(count, 1) << c.Describe();
        layers += count;
      }
      EXPECT_EQ(layers, 82) << c.Describe();  // the decoders, the embedding and the head
    } else {
      EXPECT_TRUE(c.layout_counts.empty()) << c.Describe();
    }
    EXPECT_EQ(int64_t{c.dp} * c.micro_batch_size * c.microbatches, 512) << c.Describe();
    EXPECT_TRUE(c.schedule == "1f1b" || c.schedule == "interleaved-1f1b") << c.Describe();
    if (c.schedule == "interleaved-1f1b") {
      EXPECT_GE(c.vpp, 2);
      EXPECT_EQ(c.microbatches % c.pp, 0) << c.Describe();
    }
    EXPECT_NE(c.recompute, Recompute::kSelectiveOp);
    EXPECT_LE(c.zero_stage, 1);
  }
  EXPECT_GT(e.rejected.at("tp crosses a node"), 0);
  EXPECT_GT(e.rejected.at("fewer layers than pipeline stages"), 0);
  EXPECT_EQ(e.rejected.count("pp does not divide the layers"), 0u);
}

TEST(PlanRulesTest, DeepSpeedRunsOneScheduleAndNoZero23UnderPipelines) {
  const Enumeration e = EnumerateCandidates(Spec(Engine::kDeepSpeed), Llama70b());
  ASSERT_FALSE(e.legal.empty());
  std::set<std::string> schedules;
  for (const Candidate& c : e.legal) {
    schedules.insert(c.schedule);
    EXPECT_EQ(c.cp, 1);
    EXPECT_EQ(c.vpp, 1);
    if (c.pp > 1) {
      EXPECT_LE(c.zero_stage, 1) << c.Describe();
    }
    EXPECT_TRUE(c.recompute == Recompute::kNone || c.recompute == Recompute::kFull);
  }
  EXPECT_EQ(schedules, std::set<std::string>{"1f1b"});
  EXPECT_GT(e.rejected.at("deepspeed: ZeRO-2/3 with pipeline parallelism"), 0);
}

TEST(PlanRulesTest, AnyIsTheUnionOfTheEngines) {
  int64_t sum = 0;
  for (Engine engine : {Engine::kMegatron, Engine::kTorchtitan, Engine::kDeepSpeed}) {
    sum += EnumerateCandidates(Spec(engine), Llama70b()).asked;
  }
  EXPECT_EQ(EnumerateCandidates(Spec(Engine::kAny), Llama70b()).asked, sum);
}

TEST(PlanRulesTest, ConstraintsNarrowTheSpace) {
  PlanSpec spec = Spec(Engine::kMegatron);
  spec.constraints.tp.values = {4};
  spec.max_pp = 2;
  const Enumeration e = EnumerateCandidates(spec, Llama70b());
  ASSERT_FALSE(e.legal.empty());
  for (const Candidate& c : e.legal) {
    EXPECT_EQ(c.tp, 4);
    EXPECT_LE(c.pp, 2);
  }
}

TEST(CandidateTest, ApplyToSetsAnEvenSplitAndTheEnginesOptions) {
  Config config;
  config.model.transformer.layers = 80;
  Candidate c;
  c.engine = Engine::kMegatron;
  c.tp = 8;
  c.pp = 4;
  c.vpp = 2;
  c.dp = 2;
  c.microbatches = 32;
  c.schedule = "interleaved-1f1b";
  c.zero_stage = 1;
  c.ApplyTo(config);
  EXPECT_EQ(config.parallel.layer_counts, (std::vector<int32_t>{11, 10, 10, 10, 10, 10, 10, 11}));
  EXPECT_TRUE(config.parallel.distributed_optimizer);
  EXPECT_TRUE(config.parallel.overlap_grad_reduce);
  EXPECT_TRUE(config.parallel.sequence_parallel);
  EXPECT_EQ(config.parallel.zero_stage, 0);
  EXPECT_EQ(config.parallel.engine, TrainingEngine::kMegatronLm);
}

// Each engine's candidates are costed with its host time per kernel: DeepSpeed's with
// Megatron-DeepSpeed's (what `--export deepspeed` launches), measured; `any` keeps the config's.
TEST(CandidateTest, EachEngineNamesItsHostTime) {
  Candidate c;
  c.tp = 2;
  c.pp = 2;
  c.dp = 2;
  c.microbatches = 8;
  c.schedule = "1f1b";
  for (const auto& [engine, expected] : std::vector<std::pair<Engine, TrainingEngine>>{
           {Engine::kMegatron, TrainingEngine::kMegatronLm},
           {Engine::kTorchtitan, TrainingEngine::kTorchtitan},
           {Engine::kDeepSpeed, TrainingEngine::kMegatronDeepSpeed},
           {Engine::kAny, TrainingEngine::kUnstated}}) {
    Config config;
    config.model.transformer.layers = 8;
    c.engine = engine;
    c.zero_stage = engine == Engine::kTorchtitan ? 3 : 0;
    c.ApplyTo(config);
    EXPECT_EQ(config.parallel.engine, expected) << EngineName(engine);
  }
}

// Each engine's own CP and loss: torchtitan runs PyTorch's context_parallel (rotate allgather
// unless the config names alltoall) and PyTorch's cross_entropy, compiled where it compiles;
// Megatron keeps its ring (or all-gather) and its own loss.
TEST(CandidateTest, EachEngineRunsItsOwnContextParallelismAndLoss) {
  Config config;
  config.model.transformer.layers = 32;
  config.parallel.cp_all_gather = true;
  Candidate c;
  c.engine = Engine::kTorchtitan;
  c.cp = 4;
  c.dp = 2;
  c.schedule = "1f1b";
  c.zero_stage = 3;
  Config titan = config;
  c.ApplyTo(titan);
  EXPECT_EQ(titan.parallel.cp_rotate, CpRotate::kAllGather);
  EXPECT_FALSE(titan.parallel.cp_all_gather);
  EXPECT_EQ(titan.parallel.cross_entropy_fusion, CrossEntropyFusion::kTorchCompiled);
  Config alltoall = config;
  alltoall.parallel.cp_rotate = CpRotate::kAllToAll;
  alltoall.parallel.fused_kernels = false;
  c.ApplyTo(alltoall);
  EXPECT_EQ(alltoall.parallel.cp_rotate, CpRotate::kAllToAll);
  EXPECT_EQ(alltoall.parallel.cross_entropy_fusion, CrossEntropyFusion::kTorch);
  c.engine = Engine::kMegatron;
  c.zero_stage = 1;
  c.ApplyTo(titan);
  EXPECT_EQ(titan.parallel.cp_rotate, CpRotate::kNone);
  EXPECT_EQ(titan.parallel.cross_entropy_fusion, CrossEntropyFusion::kNone);
  Config megatron = config;
  c.ApplyTo(megatron);
  EXPECT_TRUE(megatron.parallel.cp_all_gather);
  EXPECT_EQ(megatron.parallel.cp_rotate, CpRotate::kNone);
}

TEST(CandidateTest, AnUnevenSplitGivesTheMiddleStagesOneMore) {
  Config config;
  config.model.transformer.layers = 126;  // Llama 3.1 405B
  Candidate c;
  c.engine = Engine::kTorchtitan;
  c.pp = 8;
  c.schedule = "1f1b";
  c.ApplyTo(config);
  // 126 = 8 x 15 + 6: stages 1-6 take 16 decoders, 0 and 7 take 15 and the embedding / head.
  EXPECT_EQ(config.parallel.layer_counts, (std::vector<int32_t>{16, 16, 16, 16, 16, 16, 16, 16}));
}

TEST(PlanRulesTest, TorchtitanSplitsUnevenlyMegatronThroughALayout) {
  PlanShape shape = Llama70b();
  shape.layers = 126;
  shape.heads = 128;
  shape.ffn = 53248;
  PlanSpec spec = Spec(Engine::kTorchtitan);
  spec.gpus = 512;
  spec.global_batch = 256;
  spec.constraints.tp.values = {8};
  bool pp8 = false;
  for (const Candidate& c : EnumerateCandidates(spec, shape).legal) pp8 = pp8 || c.pp == 8;
  EXPECT_TRUE(pp8);
  spec.engine = Engine::kMegatron;
  pp8 = false;
  for (const Candidate& c : EnumerateCandidates(spec, shape).legal) {
    if (c.pp != 8) continue;
    pp8 = true;
    EXPECT_EQ(c.layout_counts.size(), static_cast<size_t>(8 * c.vpp)) << c.Describe();
  }
  EXPECT_TRUE(pp8);
}

TEST(CandidateTest, AnUnevenMegatronSplitGivesTheEndsTheirLayers) {
  Config config;
  config.model.transformer.layers = 80;
  Candidate c;
  c.engine = Engine::kMegatron;
  c.pp = 8;
  c.schedule = "1f1b";
  c.first_stage_layers = 5;
  c.last_stage_layers = 9;
  c.ApplyTo(config);
  // 80 - 5 - 9 = 66 decoders over the 6 middle stages; the embedding and the head ride along.
  EXPECT_EQ(config.parallel.layer_counts, (std::vector<int32_t>{6, 11, 11, 11, 11, 11, 11, 10}));
  EXPECT_EQ(c.ScheduleText(80), "1f1b 5/11/9");
}

TEST(CandidateTest, AMegatronLayoutGivesEachChunkItsLayers) {
  Config config;
  config.model.transformer.layers = 80;
  Candidate c;
  c.engine = Engine::kMegatron;
  c.pp = 8;
  c.vpp = 6;
  c.schedule = "interleaved-1f1b";
  // A head worth two decoders: rank 7 takes 8 decoders (10 decoders' time with the head), ranks
  // 1 and 2 take 11 and the others 10 (the least slowest rank: 82.1 decoders' time over 8).
  c.layout_counts = BalancedTransformerCounts(80, 8, 6, Time::Nanoseconds(1000),
                                              Time::Nanoseconds(100), Time::Nanoseconds(2000));
  ASSERT_EQ(c.layout_counts.size(), 48u);
  c.ApplyTo(config);
  EXPECT_EQ(config.parallel.partition, PartitionMethod::kCounts);
  EXPECT_EQ(config.parallel.layer_counts, c.layout_counts);
  EXPECT_EQ(c.StageCounts(80), c.layout_counts);
  EXPECT_EQ(c.ScheduleText(80), "interleaved-1f1b Et|(t*2|)*30t|(t*2|)*3(t|)*12L");
  EXPECT_NE(c.Describe().find(" layout Et|(t*2|)*30t|(t*2|)*3(t|)*12L"), std::string::npos);
}

// Megatron's uneven split, derived by the screen: Llama 3 70B on 64 H100, one chunk a rank.
// The head and its cross entropy make the even split's last stage the slowest; the best plan
// (an uneven split) is faster than the same layout split evenly (its twin, simulated in the
// second round), and the two ends' decoders leave the middle stages an even share.
TEST(PlanTest, DerivesAnUnevenSplitFasterThanTheEvenOne) {
  PlanSpec spec = MegatronLlama70b(64, 512, 30);
  spec.constraints.vpp.values = {1};
  auto planned = PlanLayouts(spec);
  ASSERT_TRUE(planned.ok()) << planned.error().message;
  const PlanResult& result = planned.value();
  ASSERT_FALSE(result.plans.empty());
  const Candidate& best = result.plans.front().candidate;
  ASSERT_GT(best.first_stage_layers, 0) << best.Describe();
  ASSERT_GE(best.pp, 3);
  EXPECT_EQ((80 - best.first_stage_layers - best.last_stage_layers) % (best.pp - 2), 0);
  EXPECT_LT(best.last_stage_layers, 80 / best.pp);  // the head's stage takes fewer decoders
  bool even_twin = false;
  for (const PlannedLayout& plan : result.all_fitting) {
    const Candidate& twin = plan.candidate;
    if (twin.first_stage_layers != 0 || twin.LayoutKey() != best.LayoutKey()) continue;
    even_twin = true;
    EXPECT_GT(plan.step, result.plans.front().step);
  }
  EXPECT_TRUE(even_twin);
}

// A layout's stage splits are variants of one layout (Candidate::LayoutKey): the first round
// simulates each layout once, so the simulated set is made of distinct layouts, and the plans
// shown list each once, at its fastest split; the fastest layouts' other splits are simulated
// in a second round (the even twin above).
TEST(PlanTest, SimulatesAndShowsDistinctLayoutsNotTheirSplits) {
  Candidate uneven;
  uneven.pp = 8;
  uneven.first_stage_layers = 5;
  uneven.last_stage_layers = 9;
  Candidate layout_string = uneven;
  layout_string.first_stage_layers = 0;
  layout_string.last_stage_layers = 0;
  layout_string.layout_counts = {6, 11, 11, 11, 11, 11, 11, 10};
  Candidate even = layout_string;
  even.layout_counts.clear();
  EXPECT_EQ(uneven.LayoutKey(), even.LayoutKey());
  EXPECT_EQ(layout_string.LayoutKey(), even.LayoutKey());
  EXPECT_NE(uneven.Describe(), even.Describe());
  Candidate other = even;
  other.recompute = Recompute::kSelective;
  EXPECT_NE(other.LayoutKey(), even.LayoutKey());

  const PlanSpec spec = MegatronLlama70b(64, 512, 20);
  auto planned = PlanLayouts(spec);
  ASSERT_TRUE(planned.ok()) << planned.error().message;
  const PlanResult& result = planned.value();
  std::set<std::string> shown;
  for (const PlannedLayout& plan : result.plans) {
    EXPECT_TRUE(shown.insert(plan.candidate.LayoutKey()).second) << plan.candidate.Describe();
  }
  std::map<std::string, int32_t> splits;  // layout -> its simulated splits
  for (const PlannedLayout& plan : result.all_fitting) ++splits[plan.candidate.LayoutKey()];
  EXPECT_EQ(shown.size(), std::min<size_t>(20, splits.size()));
  EXPECT_GE(splits.size(), 20u);  // 20 distinct layouts asked, and that many fit
  int32_t with_twins = 0;
  for (const auto& [layout, count] : splits) with_twins += count > 1 ? 1 : 0;
  EXPECT_GT(with_twins, 0);  // the second round's variants
  EXPECT_LE(with_twins, 5);  // of the 5 fastest only
}

// torchtitan's less-layers weights, derived by the screen: Llama 3 70B on 64 H100 at TP 8 under
// torchtitan's rules, the best 30 layouts simulated with every split of each (variant_layouts).
// Where a pipeline layout's stages balance better with other weights than torchtitan's default
// (1, 1), the derived candidate runs torchtitan's own split with them. The screen weighs a stage
// by three costs (a decoder, the embedding, the head), which the exact simulation does not follow
// to the last tenth of a percent (under interleaving and ZB-H2 the ranks also wait on the levels
// of chunks, or the deferred weight gradients fill the bubbles unevenly): some derived splits are
// faster than their twins with the default weights (19 of 19 in this search, 2026-12-06; 9 of 27
// when the best 150 candidates were simulated as they came) and none may be slower by more than
// 0.5%; the exact simulation ranks them.
TEST(PlanTest, DerivesTorchtitansLessLayersWhereTheyBalanceTheStages) {
  PlanSpec spec = MegatronLlama70b(64, 512, 30);
  spec.engine = Engine::kTorchtitan;
  spec.constraints.tp.values = {8};
  spec.variant_layouts = 30;  // every simulated layout's other splits too
  auto planned = PlanLayouts(spec);
  ASSERT_TRUE(planned.ok()) << planned.error().message;
  const PlanResult& result = planned.value();
  int32_t weighted = 0;
  int32_t twins = 0;
  int32_t faster = 0;
  for (const PlannedLayout& plan : result.all_fitting) {
    const Candidate& c = plan.candidate;
    if (c.first_less == 1 && c.last_less == 1) continue;
    ++weighted;
    EXPECT_EQ(c.StageCounts(80),
              TorchtitanTransformerCounts(80, c.pp * c.vpp, c.first_less, c.last_less).value())
        << c.Describe();
    for (const PlannedLayout& other : result.all_fitting) {
      Candidate twin = other.candidate;
      if (twin.first_less != 1 || twin.last_less != 1) continue;
      twin.first_less = c.first_less;
      twin.last_less = c.last_less;
      if (twin.Describe() != c.Describe()) continue;
      ++twins;
      if (plan.step < other.step) ++faster;
      EXPECT_LE(static_cast<double>(plan.step.ns()), 1.005 * static_cast<double>(other.step.ns()))
          << c.Describe();
    }
  }
  EXPECT_GT(weighted, 0);
  EXPECT_GT(twins, 0);
  EXPECT_GT(faster, 0);
}

// torchtitan's splits beyond its two weights (module_fqns_per_model_part): a model whose head
// outweighs many decoders (hidden 1024, a 256k vocabulary), where no weight of at most 3 takes
// enough decoders off the last stage. The screen derives the exact balance under the schedule's
// placement (BalancedTransformerCounts), each derived layout runs its own split, and where the
// slowest rank is the measure (one stage a rank, or DualPipeV's V) every derived layout that was
// simulated is no slower than its simulated twins with torchtitan's weights. (Under the looped
// schedules with virtual stages the ranks also wait on each level's slowest chunk, so a balance
// of the ranks can simulate slower: LengthensTheChain drops the worst of them, and the exact
// simulation ranks the rest.)
TEST(PlanTest, DerivesTorchtitanSplitsItsWeightsCannotMake) {
  PlanSpec spec;
  spec.run.config_path = "heavy-head.yaml";
  spec.run.config_text =
      "model:\n  name: heavy-head\n  type: transformer\n  seq_len: 4096\n"
      "  micro_batch_size: 1\n  transformer:\n    layers: 24\n    hidden: 1024\n"
      "    heads: 16\n    kv_heads: 8\n    ffn_hidden: 4096\n    vocab: 262144\n"
      "    swiglu: true\n    causal: true\n    tied_embeddings: false\n    bias: false\n"
      "    learned_positions: false\ncluster:\n  preset: h100x1\n";
  spec.gpus = 4;
  spec.global_batch = 16;
  spec.engine = Engine::kTorchtitan;
  spec.constraints.tp.values = {1};
  spec.simulate = 400;
  spec.top = 400;
  spec.variant_layouts = 400;  // every simulated layout's other splits too
  auto planned = PlanLayouts(spec);
  ASSERT_TRUE(planned.ok()) << planned.error().message;
  const PlanResult& result = planned.value();
  int32_t derived = 0;
  int32_t compared = 0;
  for (const PlannedLayout& plan : result.all_fitting) {
    const Candidate& c = plan.candidate;
    if (c.layout_counts.empty()) continue;
    ++derived;
    EXPECT_EQ(c.StageCounts(24), c.layout_counts);
    EXPECT_LT(c.layout_counts.back(), 24 / (c.pp * c.vpp)) << c.Describe();  // the head's stage
    for (const PlannedLayout& other : result.all_fitting) {
      Candidate twin = other.candidate;
      if (!twin.layout_counts.empty()) continue;
      twin.layout_counts = c.layout_counts;
      twin.first_less = c.first_less;
      twin.last_less = c.last_less;
      if (twin.Describe() != c.Describe()) continue;
      if (c.vpp > 1 && c.schedule != "dualpipev") continue;
      // The zero-bubble generators choose their order under a per-stage activation limit, which
      // counts the head's loss (its logits held from F to B): a split that balances the ranks'
      // time also moves that limit, so the exact simulation, not the balance, ranks them.
      if (c.schedule.rfind("zb-", 0) == 0) continue;
      ++compared;
      EXPECT_LE(plan.step, other.step) << c.Describe() << " against " << other.candidate.Describe();
    }
  }
  EXPECT_GT(derived, 0);
  EXPECT_GT(compared, 0);
}

// A candidate applied to a run whose model comes from --hf-config: the candidate's edit splits
// the HF model's 32 layers (it once ran before the import and split none: "the layer counts sum
// to 2, expected 34", which `plan --export torchtitan` met for pp 1 plans).
TEST(PlanTest, ACandidateSplitsTheLayersOfAnHfModel) {
  const std::filesystem::path data =
      std::filesystem::path(STAGECRAFT_TESTS_DIR) / "golden" / "data";
  RunSpec run;
  run.config_path = (data / "hf-run.yaml").string();
  run.hf_config = (data / "hf" / "llama-3-8b.json").string();
  for (const int32_t pp : {1, 2}) {
    Candidate c;
    c.engine = Engine::kTorchtitan;
    c.tp = 8;
    c.pp = pp;
    c.dp = 2 / pp;
    c.micro_batch_size = 1;
    c.microbatches = 8;
    c.schedule = "1f1b";
    c.recompute = Recompute::kFull;
    c.zero_stage = 3;
    auto prepared = PrepareRun(CandidateRun(run, c));
    ASSERT_TRUE(prepared.ok()) << "pp " << pp << ": " << prepared.error().message;
    const std::vector<int32_t>& counts = prepared.value().config.parallel.layer_counts;
    EXPECT_EQ(counts.size(), static_cast<size_t>(pp));
    int32_t layers = 0;
    for (int32_t count : counts) layers += count;
    EXPECT_EQ(layers, 34) << "pp " << pp;  // 32 decoders, the embedding and the head
  }
}

// Megatron's block recomputation, derived by the screen: Llama 3 70B at 32,768 tokens on 32 H100
// fits only with recomputation. The best plan recomputes N of a chunk's layers (1 <= N < L), it
// fits, it is faster than every plan that recomputes all layers, and the same layout with one
// layer fewer (N - 1, or none) does not fit: N is the fewest that fit.
TEST(PlanTest, DerivesTheFewestBlockRecomputedLayersThatFit) {
  PlanSpec spec = MegatronLlama70b(32, 256, 20);
  spec.run.seq_len = "32768";
  auto planned = PlanLayouts(spec);
  ASSERT_TRUE(planned.ok()) << planned.error().message;
  const PlanResult& result = planned.value();
  EXPECT_GT(result.derived, 0);
  ASSERT_FALSE(result.plans.empty());
  const PlannedLayout& best = result.plans.front();
  const Candidate& c = best.candidate;
  ASSERT_EQ(c.recompute, Recompute::kFull);
  const int32_t chunk_layers = 80 / (c.pp * c.vpp);
  ASSERT_GE(c.recompute_num_layers, 1);
  ASSERT_LT(c.recompute_num_layers, chunk_layers);
  EXPECT_TRUE(best.memory.fits);
  for (const PlannedLayout& plan : result.all_fitting) {
    if (plan.candidate.recompute == Recompute::kFull && plan.candidate.recompute_num_layers == 0) {
      EXPECT_GT(plan.step, best.step) << plan.candidate.Describe();
    }
  }
  Candidate fewer = c;
  fewer.recompute_num_layers = c.recompute_num_layers - 1;
  if (fewer.recompute_num_layers == 0) fewer.recompute = Recompute::kNone;
  RunSpec run = spec.run;
  run.edit = [fewer](Config& config) {
    fewer.ApplyTo(config);
    return Status::Ok();
  };
  auto outcome = SimulateSpec(run);
  ASSERT_TRUE(outcome.ok()) << outcome.error().message;
  EXPECT_FALSE(outcome.value().info.memory.fits) << fewer.Describe();
}

// A CSA2 layer list (V4.1-Flash's 40 decoders between an embedding and a head): tp must divide
// the 64 query heads, the 8 output groups and the experts' width 2304; the shared KV head does
// not constrain it. The candidates follow no engine (kAny); with one stage they carry one
// partition and one state policy (nothing to split, no state between stages), with more every
// partition and policy of the space.
TEST(PlanRulesTest, LayerListCandidatesSplitWhatTheLayerListSplits) {
  ModelSpec model;
  model.layers = V41FlashLayers();
  PlanShape shape = LayerListShape(model);
  EXPECT_TRUE(shape.layer_list);
  EXPECT_EQ(shape.layers, 42);
  EXPECT_EQ(shape.heads, 64);
  EXPECT_EQ(shape.kv_heads, 64);
  EXPECT_EQ(shape.output_groups, 8);
  EXPECT_EQ(shape.ffn, 2304);
  EXPECT_EQ(shape.experts, 384);
  shape.seq_len = 4096;
  shape.gpus_per_node = 8;
  PlanSpec spec = Spec(Engine::kAny);
  const Enumeration enumeration = EnumerateCandidates(spec, shape);
  ASSERT_FALSE(enumeration.legal.empty());
  std::set<std::pair<int, int>> staged;
  for (const Candidate& c : enumeration.legal) {
    EXPECT_EQ(c.engine, Engine::kAny);
    EXPECT_TRUE(c.layer_list);
    EXPECT_EQ(8 % c.tp, 0) << c.Describe();
    EXPECT_EQ(2304 % c.tp, 0) << c.Describe();
    EXPECT_LE(c.pp * c.vpp, 42) << c.Describe();
    EXPECT_EQ(384 % c.ep, 0) << c.Describe();
    if (c.pp == 1) {
      EXPECT_EQ(c.partition, PartitionMethod::kStateAware) << c.Describe();
      EXPECT_EQ(c.state_policy, StatePolicy::kPayload) << c.Describe();
    } else {
      staged.insert({static_cast<int>(c.partition), static_cast<int>(c.state_policy)});
    }
  }
  EXPECT_EQ(staged.size(), 8u);  // {state-aware, cost} x {payload, direct, shadow, auto}
  EXPECT_GT(enumeration.rejected.count("tp does not divide the output groups") +
                enumeration.rejected.count("tp crosses a node"),
            0u);
}

// The best plan of a small CSA2 model replays exactly: `simulate` with its layout applied gives
// the plan's step time and memory verdict.
TEST(PlanTest, PlansACsa2LayerListAndItsBestReplays) {
  PlanSpec spec;
  spec.run.config_path =
      (std::filesystem::path(STAGECRAFT_TESTS_DIR) / ".." / "examples" / "csa2-small.yaml")
          .string();
  spec.run.cluster = "h100";
  spec.gpus = 8;
  spec.global_batch = 32;
  spec.simulate = 10;
  auto planned = PlanLayouts(spec);
  ASSERT_TRUE(planned.ok()) << planned.error().message;
  const PlanResult& result = planned.value();
  ASSERT_FALSE(result.plans.empty());
  const PlannedLayout& best = result.plans.front();
  EXPECT_TRUE(best.candidate.layer_list);
  RunSpec run = spec.run;
  const Candidate c = best.candidate;
  run.edit = [c](Config& config) {
    c.ApplyTo(config);
    return Status::Ok();
  };
  auto outcome = SimulateSpec(run);
  ASSERT_TRUE(outcome.ok()) << outcome.error().message;
  EXPECT_EQ(outcome.value().metrics.makespan, best.step);
  EXPECT_EQ(outcome.value().info.memory.fits, best.memory.fits);
  EXPECT_EQ(outcome.value().info.memory.peak_bytes, best.memory.peak_bytes);
  for (size_t rank = 1; rank < result.plans.size(); ++rank) {
    EXPECT_GE(result.plans[rank].step, result.plans[rank - 1].step);
  }
  // No engine runs a layer list: naming one, or an export, is bad input.
  spec.engine = Engine::kMegatron;
  auto refused = PlanLayouts(spec);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("--engine any"), std::string::npos);
}

// A layer list's exact simulation runs in two rounds: the best `simulate` layouts of the screen,
// one partition and state policy each, then every other variant of the fastest of them. With
// --simulate 3 on 4 GPUs: at most 3 distinct layouts are simulated, and the best layout (a
// pipeline) is simulated under all 2 partitions x 4 policies.
TEST(PlanTest, ALayerListSimulatesLayoutsThenTheVariantsOfTheFastest) {
  PlanSpec spec;
  spec.run.config_path =
      (std::filesystem::path(STAGECRAFT_TESTS_DIR) / ".." / "examples" / "csa2-small.yaml")
          .string();
  spec.gpus = 4;
  spec.global_batch = 32;
  spec.simulate = 3;
  spec.top = 100;
  auto planned = PlanLayouts(spec);
  ASSERT_TRUE(planned.ok()) << planned.error().message;
  const PlanResult& result = planned.value();
  ASSERT_FALSE(result.all_fitting.empty());
  std::map<std::string, std::set<std::pair<int, int>>> layouts;
  for (const PlannedLayout& plan : result.all_fitting) {
    Candidate c = plan.candidate;
    c.partition = PartitionMethod::kStateAware;
    c.state_policy = StatePolicy::kPayload;
    layouts[c.Describe()].insert({static_cast<int>(plan.candidate.partition),
                                  static_cast<int>(plan.candidate.state_policy)});
  }
  EXPECT_LE(layouts.size(), 3u);
  EXPECT_GT(result.simulated, 3);
  const Candidate& best = result.plans.front().candidate;
  ASSERT_GT(best.pp, 1) << best.Describe();
  Candidate key = best;
  key.partition = PartitionMethod::kStateAware;
  key.state_policy = StatePolicy::kPayload;
  EXPECT_EQ(layouts[key.Describe()].size(), 8u) << best.Describe();
}

// torchtitan's schedules without a closed form (run from a CSV) are screened by a compute-only
// run of the generated schedule (ScheduleProbe) and reach the exact simulation: Llama 3 70B on 64
// H100 at 32 x 8192 tokens, where the pipeline's idle time matters. Each of the five is among
// the simulated plans, and its screened step is as near the simulated one as the closed forms'
// are (within 20%: the screen leaves out the transfers; on this run ZB-H1's closed form lands
// within 6% of its simulated steps, the interleaved schedule's within 23%).
TEST(PlanTest, ScreensTheSchedulesWithoutAClosedForm) {
  PlanSpec spec = MegatronLlama70b(64, 32, 600);
  spec.engine = Engine::kTorchtitan;
  spec.jobs = 2;
  auto planned = PlanLayouts(spec);
  ASSERT_TRUE(planned.ok()) << planned.error().message;
  std::map<std::string, int> seen;
  for (const PlannedLayout& plan : planned.value().all_fitting) {
    const std::string& schedule = plan.candidate.schedule;
    if (HasClosedForm(schedule) || plan.candidate.pp == 1) continue;
    ++seen[schedule];
    const double ratio = static_cast<double>(plan.step.ns()) / plan.screen_step.ns();
    EXPECT_GT(ratio, 0.8) << plan.candidate.Describe();
    EXPECT_LT(ratio, 1.2) << plan.candidate.Describe();
    EXPECT_EQ(plan.candidate.vpp, schedule.front() == 'v' || schedule == "zb-v" ? 2 : 1);
  }
  for (const char* schedule : {"zb-1p", "zb-2p", "zb-v", "v-half", "v-min"}) {
    EXPECT_GT(seen[schedule], 0) << schedule;
  }
}

}  // namespace
}  // namespace stagecraft
