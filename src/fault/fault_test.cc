// The fault-tolerance models against their published figures (source and tolerance on each
// test), the Monte Carlo against the exact model, and the checkpoint manifest against the
// memory command's model states.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "fault/checkpoint_interval.h"
#include "fault/checkpoint_manifest.h"
#include "fault/failure_rates.h"
#include "fault/goodput.h"
#include "fault/monte_carlo.h"
#include "fault/reshard.h"
#include "fault/storage.h"
#include "run/memory_verdict.h"
#include "run/simulate.h"
#include "testing/test_util.h"

namespace stagecraft {
namespace {

constexpr double kMinute = 60.0;
constexpr double kHour = 3600.0;

// Kokolis et al. 2024 (Meta, "Revisiting Reliability in Large-Scale ML Research Clusters"):
// from 6.5 failures per 1000 node-days, a job's MTTF is 1.8 h at 16,384 GPUs and 0.23 h at
// 131,072 (8 GPUs per node). Tolerance ±0.01 h, the paper's rounding.
TEST(FailureRatesTest, MetaMttfProjection) {
  auto preset = FindFailureRatePreset("meta-rsc1");
  ASSERT_TRUE(preset.ok());
  const double rate = preset.value().PerThousandNodeDays();
  EXPECT_NEAR(JobMttfHours(rate, 16384 / 8), 1.8, 0.01);
  EXPECT_NEAR(JobMttfHours(rate, 131072 / 8), 0.23, 0.01);
}

// Llama 3's Table 5 by cause: the five largest counts as published (148, 72, 54, 35, 32) and
// the rest of the 419 as "other" (78), in the goodput answer with the shares of the 419.
TEST(FailureRatesTest, Llama3CausesAddUpToItsInterruptions) {
  GoodputInputs inputs;
  inputs.gpus = 16384;
  inputs.checkpoint_blocking_s = 1;
  inputs.restart_s = 60;
  auto result = ComputeGoodput(inputs);
  ASSERT_TRUE(result.ok()) << result.error().message;
  const auto& causes = result.value().causes;
  ASSERT_EQ(causes.size(), 6u);
  EXPECT_EQ(causes.front().first, "faulty GPU");
  EXPECT_EQ(causes.front().second, 148);
  EXPECT_EQ(causes.back().first, "other");
  EXPECT_EQ(causes.back().second, 419 - 148 - 72 - 54 - 35 - 32);
  int64_t total = 0;
  for (const auto& cause : causes) total += cause.second;
  EXPECT_EQ(total, 419);
  // A rate given as a number has no causes.
  inputs.failures_per_1000_node_days = 6.5;
  auto plain = ComputeGoodput(inputs);
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain.value().causes.empty());
}

TEST(FailureRatesTest, UnknownPresetSuggests) {
  auto preset = FindFailureRatePreset("llama3-450b");
  ASSERT_FALSE(preset.ok());
  EXPECT_TRUE(Contains(preset.error().message, "did you mean 'llama3-405b'"))
      << preset.error().message;
}

// Young 1974: tau = sqrt(2 delta M); delta = 5 min, M = 24 h gives sqrt(2·5·1440) = 120 min.
TEST(CheckpointIntervalTest, YoungForm) {
  EXPECT_NEAR(YoungInterval(5 * kMinute, 24 * kHour), 120 * kMinute, 1e-9);
}

// Daly 2006, Figures 3-5 (Ts = 500 h, R = 10 min, delta = 5 min): the higher-order model
// predicts tau_opt = 117 min at M = 24 h, 57 min at M = 6 h and 9.1 min at M = 15 min.
// Tolerance: half a unit of the printed figure (0.5 min, 0.05 min).
TEST(CheckpointIntervalTest, DalyHigherOrderPaperExamples) {
  EXPECT_NEAR(DalyHigherOrderInterval(5 * kMinute, 24 * kHour) / kMinute, 117, 0.5);
  EXPECT_NEAR(DalyHigherOrderInterval(5 * kMinute, 6 * kHour) / kMinute, 57, 0.5);
  EXPECT_NEAR(DalyHigherOrderInterval(5 * kMinute, 15 * kMinute) / kMinute, 9.1, 0.05);
  // delta >= 2M: Daly's estimate is M itself.
  EXPECT_DOUBLE_EQ(DalyHigherOrderInterval(40 * kMinute, 15 * kMinute), 15 * kMinute);
}

// Daly 2006 §5: the higher-order estimate lies close to the complete cost function's optimum
// (his Fig. 2: relative error well under 1% for delta/M small). Checked on the paper's examples
// with M = 24 h and 6 h at 1%.
TEST(CheckpointIntervalTest, ExactOptimumNearDalyHigherOrder) {
  for (const double mttf : {24 * kHour, 6 * kHour}) {
    CheckpointCosts costs;
    costs.blocking_s = 5 * kMinute;
    costs.restart_s = 10 * kMinute;
    const double exact = ExactOptimalInterval(costs, mttf, 0);
    EXPECT_NEAR(exact / DalyHigherOrderInterval(costs.blocking_s, mttf), 1.0, 0.01) << mttf;
    // The optimum is a maximum of the ETTR.
    EXPECT_GT(ExactEttr(exact, costs, mttf), ExactEttr(exact * 1.2, costs, mttf));
    EXPECT_GT(ExactEttr(exact, costs, mttf), ExactEttr(exact * 0.8, costs, mttf));
  }
}

TEST(CheckpointIntervalTest, WasteSharesSumToOne) {
  CheckpointCosts costs{0.6, 51, 189};
  const WasteShares shares = ExactWasteShares(115, costs, 3 * kHour);
  EXPECT_NEAR(shares.productive + shares.checkpoint + shares.restart + shares.lost_work, 1.0,
              1e-12);
  EXPECT_GT(shares.lost_work, 0);
}

// Issue 35, D9: the restart share was e^(R/M) - 1, which charged each failure of the whole wall
// time (restarts' own failures included) a whole restart phase, counting failed restarts twice:
// 19,271 of the wall time at R = 9.87 M, and a negative lost-work share at a 1 ms save. The
// share is the restart phases' time per segment, (e^((tau + delta)/M) - 1) failures of the work
// each followed by M (e^(R/M) - 1) of restarting, over E.
TEST(CheckpointIntervalTest, WasteSharesAreSharesOfTheWallTime) {
  const struct {
    double tau, blocking, restart, mttf;
  } cases[] = {{115, 0.6, 189, 3 * kHour},
               {4.7, 0.001, 189, 3.09 * kHour},
               {0.5, 0.001, 189, 19.15},
               {1000, 10, 3600, 3600},
               {1e-6, 1e-9, 1e-9, 1e8 * kHour}};
  for (const auto& one : cases) {
    const CheckpointCosts costs{one.blocking, 0, one.restart};
    const WasteShares shares = ExactWasteShares(one.tau, costs, one.mttf);
    const double segment = ExpectedSegmentTime(one.tau, costs, one.mttf);
    const double restarting = std::expm1((one.tau + one.blocking) / one.mttf) * one.mttf *
                              std::expm1(one.restart / one.mttf);
    EXPECT_NEAR(shares.restart, restarting / segment, 1e-9) << one.restart / one.mttf;
    for (const double share :
         {shares.productive, shares.checkpoint, shares.restart, shares.lost_work}) {
      EXPECT_GE(share, 0.0) << one.restart / one.mttf;
      EXPECT_LE(share, 1.0) << one.restart / one.mttf;
    }
    EXPECT_NEAR(shares.productive + shares.checkpoint + shares.restart + shares.lost_work, 1.0,
                1e-9);
  }
}

// The Llama-3-scale case: the failure rate of Llama 3 405B's Table 5 (419 unexpected
// interruptions in 54 days on 16,384 H100), ByteCheckpoint-like costs (blocking 0.6 s, persist
// 51 s, load 129 s) and 60 s of detection and initialization: optimal interval ≈ 115 s (±1 s)
// and effective-time ratio ≈ 0.973 (±0.001).
GoodputInputs LlamaScaleInputs() {
  GoodputInputs inputs;
  inputs.gpus = 16384;
  inputs.failure_preset = FindFailureRatePreset("llama3-405b").value();
  inputs.checkpoint_blocking_s = 0.6;
  inputs.checkpoint_persist_s = 51;
  inputs.restart_s = 189;  // 60 s detection and initialization + 129 s load
  return inputs;
}

TEST(GoodputTest, LlamaScaleCase) {
  auto result = ComputeGoodput(LlamaScaleInputs());
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_NEAR(result.value().mttf_s / kHour, 54.0 * 24.0 / 419.0, 1e-9);
  EXPECT_NEAR(result.value().optimal_s, 115, 1.0);
  EXPECT_NEAR(result.value().ettr, 0.973, 0.001);
  // The async save (51 s) finishes well before the next one: the optimum is not clamped.
  EXPECT_GT(result.value().optimal_s, result.value().costs.persist_s);
}

// The Monte Carlo's mean within 1% of the exact model at 10,000 runs (exponential failures).
TEST(MonteCarloTest, MeanConvergesToExactModel) {
  MonteCarloSpec spec;
  spec.runs = 10000;
  spec.seed = 7;
  spec.work_s = 30 * 86400.0;
  spec.interval_s = 115;
  spec.costs = CheckpointCosts{0.6, 51, 189};
  spec.mttf_s = 54.0 * 24.0 / 419.0 * kHour;
  const MonteCarloResult simulated = SimulateFailures(spec);
  const double exact = ExactEttr(spec.interval_s, spec.costs, spec.mttf_s);
  EXPECT_NEAR(simulated.mean_ettr / exact, 1.0, 0.01);
  EXPECT_GT(simulated.stddev_ettr, 0);
  EXPECT_NEAR(simulated.mean_failures, spec.work_s / exact / spec.mttf_s,
              0.02 * spec.work_s / exact / spec.mttf_s);
}

TEST(MonteCarloTest, SeededAndDeterministic) {
  MonteCarloSpec spec;
  spec.runs = 200;
  spec.work_s = 86400.0;
  spec.interval_s = 600;
  spec.costs = CheckpointCosts{10, 0, 300};
  spec.mttf_s = 2 * kHour;
  const MonteCarloResult first = SimulateFailures(spec);
  const MonteCarloResult again = SimulateFailures(spec);
  EXPECT_EQ(first.mean_ettr, again.mean_ettr);
  spec.seed = 2;
  EXPECT_NE(SimulateFailures(spec).mean_ettr, first.mean_ettr);
  // Weibull k < 1 with the same mean: failures cluster, the count per run changes.
  spec.seed = 1;
  spec.weibull_shape = 0.7;
  EXPECT_NE(SimulateFailures(spec).mean_failures, first.mean_failures);
}

// The spares pool: without spares every failure waits for its own node's repair, exactly; with
// more spares than the run ever needs it waits for nothing and draws the same numbers as the
// model without a pool.
TEST(MonteCarloTest, SparesPool) {
  MonteCarloSpec spec;
  spec.runs = 300;
  spec.work_s = 7 * 86400.0;
  spec.interval_s = 115;
  spec.costs = CheckpointCosts{0.6, 51, 189};
  spec.mttf_s = 3 * kHour;
  const MonteCarloResult unlimited = SimulateFailures(spec);
  spec.spares = 0;
  spec.repair_s = kHour;
  const MonteCarloResult none = SimulateFailures(spec);
  EXPECT_NEAR(none.mean_wait_s / (none.mean_failures * kHour), 1.0, 1e-9);
  EXPECT_LT(none.mean_ettr, unlimited.mean_ettr);
  spec.spares = 1000000;
  const MonteCarloResult plenty = SimulateFailures(spec);
  EXPECT_EQ(plenty.mean_wait_s, 0.0);
  EXPECT_EQ(plenty.mean_ettr, unlimited.mean_ettr);
  // A failure that takes a group of 8 nodes with 4 spares always waits for repairs.
  spec.spares = 4;
  spec.correlated_share = 1.0;
  spec.correlated_nodes = 8;
  const MonteCarloResult grouped = SimulateFailures(spec);
  EXPECT_NEAR(grouped.mean_wait_s / (grouped.mean_failures * kHour), 1.0, 1e-9);
}

// A trace replayed by hand: interval 100 s, blocking 10 s (segments of 110 s), restart 50 s;
// failures at 1000 s (9 whole segments: 900 s of work), 1030 s (during the restart: nothing)
// and 2000 s (970 - 50 = 920 s: 8 segments, 800 s more): 1700 / 2000 = 0.85.
TEST(MonteCarloTest, TraceReplayByHand) {
  EXPECT_DOUBLE_EQ(ReplayTraceEttr({1000, 1030, 2000}, 100, CheckpointCosts{10, 0, 50}), 0.85);
}

TEST(MonteCarloTest, SplitMixReferenceValue) {
  // splitmix64.c seeded with 0: the first output is 0xe220a8397b1dcdaf.
  SplitMix64 random(0);
  EXPECT_EQ(random.Next(), 0xe220a8397b1dcdafULL);
}

// fp16 overflows skip steps through the precision module's loss scaler (PyTorch's GradScaler:
// every overflow skips its step), so the skipped share is the drawn overflow share.
TEST(GoodputTest, Fp16OverflowsSkipSteps) {
  GoodputInputs inputs = LlamaScaleInputs();
  inputs.fp16_overflow_probability = 0.002;
  auto result = ComputeGoodput(inputs);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_NEAR(result.value().skipped_step_share, 0.002, 0.0005);
}

TEST(GoodputTest, IntervalShorterThanTheSaveIsRefused) {
  GoodputInputs inputs = LlamaScaleInputs();
  inputs.interval_s = 30;
  auto result = ComputeGoodput(inputs);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().message.substr(0, 48),
            "--interval: 30s is shorter than the save it foll")
      << result.error().message;
}

// Inputs built without the command's parser are checked too: a count below its range (no
// division by zero nodes), NaN, a probability of 1, a trace out of order, a correlated share
// above 1 (with the job's nodes in the message).
TEST(GoodputTest, InputsOutOfRangeAreRefused) {
  const auto message = [](const GoodputInputs& inputs) {
    auto result = ComputeGoodput(inputs);
    return result.ok() ? std::string("ok") : result.error().message;
  };
  GoodputInputs inputs = LlamaScaleInputs();
  inputs.gpus_per_node = 0;
  EXPECT_EQ(message(inputs), "--gpus-per-node: 0 is out of range (expected 1 to 1000000)");
  inputs = LlamaScaleInputs();
  inputs.mtbf_hours = std::nan("");
  inputs.failure_preset.reset();
  EXPECT_EQ(message(inputs),
            "--mtbf-hours: nan is out of range (expected above 0, at most 100000000)");
  inputs = LlamaScaleInputs();
  inputs.fp16_overflow_probability = 1;
  EXPECT_TRUE(Contains(message(inputs), "--fp16-overflow-probability: 1 is out of range"));
  inputs = LlamaScaleInputs();
  inputs.failure_preset.reset();
  inputs.failure_trace_s = std::vector<double>{7200, 3600};
  EXPECT_TRUE(Contains(message(inputs), "failure 2 at 3600 s is not after the one before it"));
  inputs = LlamaScaleInputs();
  inputs.monte_carlo_runs = 10;
  inputs.spares = 4;
  inputs.repair_s = kHour;
  inputs.correlated = CorrelatedFailures{1.5, 8};
  EXPECT_TRUE(Contains(message(inputs),
                       "'1.5:8' out of range (expected a share up to 1 and a "
                       "whole number of nodes up to the job's 2048"));
}

// The manifest of a 405B-class layout (TP 8, PP 16, DP 128, distributed optimizer) against the
// model states `stagecraft memory` reports, device by device: the saved weights and optimizer
// state plus the unsaved gradients are memory's states exactly (relative 1e-12), and the unique
// total is 14 bytes per parameter (bf16 weights 2 + fp32 master, m, v 12) to 0.1% (the small
// states), the same as counted row by row.
TEST(CheckpointManifestTest, Llama405bSumsToMemoryStates) {
  RunSpec flags;
  flags.config_path = std::string(STAGECRAFT_TESTS_DIR) + "/golden/data/llama-3-405b.yaml";
  auto run = PrepareRun(flags);
  ASSERT_TRUE(run.ok()) << run.error().message;
  auto simulated = SimulatePrepared(run.value());
  ASSERT_TRUE(simulated.ok()) << simulated.error().message;
  const MemoryReport memory = ComputeMemory(run.value(), simulated.value());
  auto manifest = BuildManifest(run.value(), memory, {});
  ASSERT_TRUE(manifest.ok()) << manifest.error().message;
  ASSERT_EQ(manifest.value().ranks.size(), 16u);
  for (size_t rank = 0; rank < memory.ranks.size(); ++rank) {
    double states = 0;
    for (const ManifestEntry& entry : manifest.value().ranks[rank].entries) {
      if (entry.name == "weights" || entry.name == "master-weights" || entry.name == "adam-m" ||
          entry.name == "adam-v" || entry.name == "gradients") {
        states += entry.bytes;
      }
    }
    EXPECT_NEAR(states / memory.ranks[rank].states.total(), 1.0, 1e-12) << rank;
  }
  // The unique total, counted the other way: per stage, the weights once per tensor-parallel rank
  // (replicated over dp) and the optimizer state (sharded over dp) and small states once per
  // device. The two agree but for the final norm's weights, which no stage holds.
  double by_rows = 0;
  for (const RankManifest& row : manifest.value().ranks) {
    for (const ManifestEntry& entry : row.entries) {
      if (!entry.saved) continue;
      by_rows += entry.bytes * (entry.name == "weights" ? 8.0 : 8.0 * 128.0);
    }
  }
  EXPECT_NEAR(manifest.value().total_bytes / by_rows, 1.0, 1e-6);
  EXPECT_NEAR(manifest.value().total_bytes / (14.0 * run.value().parallel_plan.params), 1.0, 0.001);
  EXPECT_EQ(manifest.value().files, 16384 + 1);
  EXPECT_TRUE(manifest.value().missing.empty());
  // Leaving out the tensor-parallel RNG makes the resume inexact, and says why.
  auto without = BuildManifest(run.value(), memory, {"rng-tp"});
  ASSERT_TRUE(without.ok());
  ASSERT_EQ(without.value().missing.size(), 1u);
  EXPECT_TRUE(Contains(without.value().missing[0].diverges, "dropout"));
}

// Resharding TP 8 x PP 16 -> TP 4 x PP 8 (the acceptance case): every layer's parameters are
// read exactly once, each new shard reads what it holds, and with TP halving each new
// tensor-parallel rank reads two whole old ones.
TEST(ReshardTest, Llama405bTp8Pp16ToTp4Pp8) {
  RunSpec before;
  before.config_path = std::string(STAGECRAFT_TESTS_DIR) + "/golden/data/llama-3-405b.yaml";
  RunSpec after;
  after.config_path = std::string(STAGECRAFT_TESTS_DIR) + "/golden/data/llama-3-405b-tp4-pp8.yaml";
  auto old_run = PrepareRun(before);
  auto new_run = PrepareRun(after);
  ASSERT_TRUE(old_run.ok() && new_run.ok());
  auto plan = PlanReshard(old_run.value(), new_run.value());
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_TRUE(plan.value().covers_exactly_once);
  ASSERT_EQ(plan.value().shards.size(), 8u * 4u);
  double read = 0;
  for (const NewShard& shard : plan.value().shards) {
    double from_reads = 0;
    std::vector<int32_t> old_tp_ranks;
    for (const ShardRead& source : shard.reads) {
      from_reads += source.params;
      old_tp_ranks.push_back(source.old_tp);
    }
    EXPECT_DOUBLE_EQ(from_reads, shard.params);
    for (const int32_t old_tp : old_tp_ranks) {
      EXPECT_TRUE(old_tp == 2 * shard.tp || old_tp == 2 * shard.tp + 1) << old_tp;
    }
    read += shard.params;
  }
  EXPECT_DOUBLE_EQ(read, plan.value().params);
  // The model's total counts the final norm's `hidden` weights, which no stage's parameters
  // (parallel_plan's rank_params, memory's states) hold; the layers hold the rest exactly (each
  // layer's count rounded to a whole parameter).
  const double hidden = old_run.value().config.model.transformer.hidden;
  EXPECT_NEAR(plan.value().params, old_run.value().parallel_plan.params - hidden, 64);
}

// OPT-175B (Zhang et al. 2022, §2.4-2.5): 35 manual and about 70 automatic restarts from
// hardware failures in about 2 months (60 days) on 992 A100 (124 nodes): 105 / 7,440
// node-days = 14.11 per 1000 node-days. The logbook's "~2 machines go down every day" of 128
// (metaseq chronicles, final_update.md) is 15.6: the preset agrees with it within 10%.
TEST(FailureRatesTest, Opt175bFromItsCounts) {
  auto preset = FindFailureRatePreset("opt-175b");
  ASSERT_TRUE(preset.ok());
  const double rate = preset.value().PerThousandNodeDays();
  EXPECT_NEAR(rate, 105.0 / (60.0 * 124.0) * 1000.0, 1e-9);
  const double logbook = 2.0 / 128.0 * 1000.0;
  EXPECT_NEAR(rate / logbook, 1.0, 0.10);
}

// A tier's job-wide rates: local NVMe scales with the devices (one Samsung PM1743 per GPU: 6.6
// GB/s write, 13 GB/s read), S3 with the nodes (8,003 MB/s each), Tectonic is one 2 TB/s pool.
TEST(StorageTest, JobRatesScaleWithTheTiersBound) {
  ClusterSpec cluster;  // 8 devices per node
  const auto rates = [&](const char* name, int64_t nodes) {
    return JobStorageRates(FindStorageTier(name).value(), cluster, nodes);
  };
  EXPECT_DOUBLE_EQ(rates("local-nvme", 2).first, 16 * 6.6e9);
  EXPECT_DOUBLE_EQ(rates("local-nvme", 2).second, 16 * 13e9);
  EXPECT_DOUBLE_EQ(rates("s3", 4).first, 4 * 8.003e9);
  EXPECT_DOUBLE_EQ(rates("s3", 4).second, 4 * 8.003e9);
  EXPECT_DOUBLE_EQ(rates("tectonic", 2048).first, 2e12);
  EXPECT_DOUBLE_EQ(DeviceReadBytesPerSecond(FindStorageTier("local-nvme").value(), cluster, 16),
                   13e9);
}

// Each rank's blocking time in the saving iteration: asynchronous, its own bytes over the host
// copy; synchronous, plus its share of the write, so that balanced ranks take the whole write's
// time and a rank with 3/4 of the bytes 1.5 times it (2 ranks).
TEST(StorageTest, RankBlockingIsEachRanksOwnShare) {
  CheckpointManifest manifest;
  manifest.ranks.resize(2);
  manifest.ranks[0].rank = 0;
  manifest.ranks[1].rank = 1;
  manifest.ranks[0].saved_bytes = 1e9;
  manifest.ranks[1].saved_bytes = 3e9;
  manifest.total_bytes = 4e9;
  const ClusterSpec cluster;
  const StorageTier tier = FindStorageTier("tectonic").value();
  const SaveCosts sync = EstimateSaveCosts(manifest, cluster, 1, tier, true);
  const std::vector<double> blocking = RankBlockingSeconds(manifest, sync, cluster, tier, true);
  const double copy = HostCopyBytesPerSecond();
  EXPECT_DOUBLE_EQ(blocking[0], 1e9 / copy + 0.5 * sync.write_s);
  EXPECT_DOUBLE_EQ(blocking[1], 3e9 / copy + 1.5 * sync.write_s);
  const SaveCosts async = EstimateSaveCosts(manifest, cluster, 1, tier, false);
  const std::vector<double> copies = RankBlockingSeconds(manifest, async, cluster, tier, false);
  EXPECT_DOUBLE_EQ(copies[1], 3e9 / copy);
  EXPECT_DOUBLE_EQ(copies[1], async.blocking_s);  // the fullest rank is the job's blocking time
}

// Resharding beyond dense transformers. A MoE model (fault-moe.yaml: pp 2 x tp 2, 8 experts over
// ep 4) onto pp 4 x tp 1 with ep 2: every layer's dense part and every expert is read exactly
// once, each expert from the old expert-parallel rank that holds it, the dense parts by
// expert-parallel rank 0 only; the parameters are the model's less the final norm.
TEST(ReshardTest, MoeExpertsComeFromTheirOldOwner) {
  RunSpec before;
  before.config_path = std::string(STAGECRAFT_TESTS_DIR) + "/golden/data/fault-moe.yaml";
  RunSpec after;
  after.config_path = std::string(STAGECRAFT_TESTS_DIR) + "/golden/data/fault-moe-ep2.yaml";
  auto old_run = PrepareRun(before);
  auto new_run = PrepareRun(after);
  ASSERT_TRUE(old_run.ok() && new_run.ok());
  auto plan = PlanReshard(old_run.value(), new_run.value());
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_TRUE(plan.value().moe);
  EXPECT_TRUE(plan.value().covers_exactly_once);
  ASSERT_EQ(plan.value().shards.size(), 4u * 1u * 2u);
  for (const NewShard& shard : plan.value().shards) {
    for (const ShardRead& read : shard.reads) {
      if (read.first_expert < 0) {
        EXPECT_EQ(shard.ep, 0);
        EXPECT_EQ(read.old_ep, 0);
        continue;
      }
      // Old ep 4 holds experts 2e, 2e+1; new ep 2 holds 4e'..4e'+3.
      EXPECT_EQ(read.first_expert / 2, read.old_ep);
      EXPECT_EQ(read.last_expert / 2, read.old_ep);
      EXPECT_EQ(read.first_expert / 4, shard.ep);
    }
  }
  const double hidden = old_run.value().config.model.transformer.hidden;
  EXPECT_NEAR(plan.value().params, old_run.value().parallel_plan.params - hidden, 64);
}

// Context parallelism: cp ranks hold the same parameters, like dp replicas, so pp 2 x tp 2 x
// cp 2 x dp 2 onto pp 1 x tp 4 reads each layer once, each new tp rank one old tp half.
TEST(ReshardTest, ContextParallelRanksAreReplicas) {
  RunSpec before;
  before.config_path = std::string(STAGECRAFT_TESTS_DIR) + "/golden/data/fault-cp.yaml";
  RunSpec after;
  after.config_path = std::string(STAGECRAFT_TESTS_DIR) + "/golden/data/fault-cp-tp4.yaml";
  auto old_run = PrepareRun(before);
  auto new_run = PrepareRun(after);
  ASSERT_TRUE(old_run.ok() && new_run.ok());
  auto plan = PlanReshard(old_run.value(), new_run.value());
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_TRUE(plan.value().covers_exactly_once);
  EXPECT_EQ(plan.value().old_cp, 2);
  EXPECT_EQ(plan.value().new_cp, 1);
  ASSERT_EQ(plan.value().shards.size(), 4u);
  for (const NewShard& shard : plan.value().shards) {
    for (const ShardRead& read : shard.reads) EXPECT_EQ(read.old_tp, shard.tp / 2);
  }
}

// A CSA2 layer list (fault-csa2.yaml: pp 2 x tp 2, 16 experts over ep 2) onto pp 4 x tp 1 with
// ep 4: the dense parts, the replicated parts (read whole, from old tp rank 0, by new tp rank 0
// of ep rank 0 only) and every expert read exactly once; the parameters are parallel_plan's
// (each part rounded to a whole parameter).
TEST(ReshardTest, Csa2LayerListWithReplicatedParts) {
  RunSpec before;
  before.config_path = std::string(STAGECRAFT_TESTS_DIR) + "/golden/data/fault-csa2.yaml";
  RunSpec after;
  after.config_path = std::string(STAGECRAFT_TESTS_DIR) + "/golden/data/fault-csa2-tp1.yaml";
  auto old_run = PrepareRun(before);
  auto new_run = PrepareRun(after);
  ASSERT_TRUE(old_run.ok() && new_run.ok());
  auto plan = PlanReshard(old_run.value(), new_run.value());
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_TRUE(plan.value().covers_exactly_once);
  EXPECT_TRUE(plan.value().replicated);
  EXPECT_TRUE(plan.value().moe);
  int replicated_reads = 0;
  for (const NewShard& shard : plan.value().shards) {
    for (const ShardRead& read : shard.reads) {
      if (read.part != ReadPart::kReplicated) continue;
      ++replicated_reads;
      EXPECT_EQ(shard.tp, 0);
      EXPECT_EQ(shard.ep, 0);
      EXPECT_EQ(read.old_tp, 0);
      EXPECT_EQ(read.begin_share, 0.0);
      EXPECT_EQ(read.end_share, 1.0);
    }
  }
  EXPECT_GT(replicated_reads, 0);
  EXPECT_NEAR(plan.value().params, old_run.value().parallel_plan.params, 64);
}

}  // namespace
}  // namespace stagecraft
