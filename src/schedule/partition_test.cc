#include "schedule/partition.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace stagecraft {
namespace {

std::vector<Time> Costs(const std::vector<int64_t>& nanoseconds) {
  std::vector<Time> costs;
  for (int64_t ns : nanoseconds) costs.push_back(Time::Nanoseconds(ns));
  return costs;
}

Partition Make(std::vector<int32_t> first_layer, int32_t num_layers) {
  Partition partition;
  partition.first_layer = std::move(first_layer);
  partition.num_layers = num_layers;
  return partition;
}

// The objective, computed independently of the implementation: the largest stage cost, where a
// stage costs its layers plus (when `cut_costs` is non-empty) the cuts on both of its sides.
Time MaxStageCost(const Partition& partition, const std::vector<Time>& layer_costs,
                  const std::vector<Time>& cut_costs) {
  Time largest;
  for (int32_t stage = 0; stage < partition.num_stages(); ++stage) {
    Time cost;
    for (int32_t layer = partition.begin(stage); layer < partition.end(stage); ++layer) {
      cost += layer_costs[layer];
    }
    if (!cut_costs.empty() && stage > 0) cost += cut_costs[partition.begin(stage)];
    if (!cut_costs.empty() && stage + 1 < partition.num_stages()) {
      cost += cut_costs[partition.end(stage)];
    }
    largest = std::max(largest, cost);
  }
  return largest;
}

// Every split, visited in lexicographic order of first_layer; the first one reaching the least
// objective wins, which is the documented tie-breaking rule.
Partition BruteForce(const std::vector<Time>& layer_costs, const std::vector<Time>& cut_costs,
                     int32_t num_stages) {
  const int32_t num_layers = static_cast<int32_t>(layer_costs.size());
  std::vector<int32_t> first_layer(num_stages);
  for (int32_t stage = 0; stage < num_stages; ++stage) first_layer[stage] = stage;
  Partition best;
  Time best_cost = Time::Max();
  while (true) {
    const Partition candidate = Make(first_layer, num_layers);
    const Time cost = MaxStageCost(candidate, layer_costs, cut_costs);
    if (cost < best_cost) {
      best = candidate;
      best_cost = cost;
    }
    int32_t stage = num_stages - 1;  // advance to the next combination of cut positions
    while (stage > 0 && first_layer[stage] == num_layers - (num_stages - stage)) --stage;
    if (stage == 0) return best;
    ++first_layer[stage];
    for (int32_t later = stage + 1; later < num_stages; ++later) {
      first_layer[later] = first_layer[later - 1] + 1;
    }
  }
}

// Small integer costs make ties common, which exercises the tie-breaking rule.
std::vector<Time> RandomCosts(std::mt19937& random, int32_t count, int64_t max_ns) {
  std::vector<Time> costs;
  for (int32_t index = 0; index < count; ++index) {
    costs.push_back(Time::Nanoseconds(static_cast<int64_t>(random() % (max_ns + 1))));
  }
  return costs;
}

Partition ValueOf(const Result<Partition>& partition) {
  EXPECT_TRUE(partition.ok()) << partition.error().message;
  return partition.ok() ? partition.value() : Partition();
}

std::string ErrorOf(const Result<Partition>& partition) {
  EXPECT_FALSE(partition.ok());
  return partition.ok() ? "" : partition.error().message;
}

constexpr std::string_view kEightLayers = "EttttttL";  // layout form: Et*6L

TEST(PartitionTest, StageOfFindsTheStageHoldingEachLayer) {
  const Partition partition = Make({0, 1, 4}, 6);
  const std::vector<int32_t> expected = {0, 1, 1, 1, 2, 2};
  for (int32_t layer = 0; layer < 6; ++layer) {
    EXPECT_EQ(partition.StageOf(layer), expected[layer]) << "layer " << layer;
  }
}

TEST(PartitionByCostTest, HandCasesWithKnownOptimum) {
  EXPECT_EQ(ValueOf(PartitionByCost(Costs({1, 1, 1, 1}), 2)), Make({0, 2}, 4));
  EXPECT_EQ(ValueOf(PartitionByCost(Costs({2, 1, 1, 2}), 3)), Make({0, 1, 3}, 4));
  EXPECT_EQ(ValueOf(PartitionByCost(Costs({1, 2, 3, 4, 5, 6, 7, 8, 9}), 3)),
            Make({0, 5, 7}, 9));  // 15 | 13 | 17: no split does better than 17
  EXPECT_EQ(ValueOf(PartitionByCost(Costs({5, 5, 5}), 1)), Make({0}, 3));
  EXPECT_EQ(ValueOf(PartitionByCost(Costs({5, 5, 5}), 3)), Make({0, 1, 2}, 3));
}

// Among optimal splits, the lexicographically smallest first_layer wins: cuts as early as
// possible, the earliest stage first.
TEST(PartitionByCostTest, TiesGoToTheEarliestCuts) {
  EXPECT_EQ(ValueOf(PartitionByCost(Costs({1, 2, 1}), 2)), Make({0, 1}, 3));  // 1|3 vs 3|1
  EXPECT_EQ(ValueOf(PartitionByCost(Costs({0, 0, 0, 5}), 2)), Make({0, 1}, 4));
  EXPECT_EQ(ValueOf(PartitionByCost(Costs({9, 1, 1, 1, 1}), 3)), Make({0, 1, 2}, 5));
}

TEST(PartitionByCostTest, StageCountErrors) {
  EXPECT_EQ(ErrorOf(PartitionByCost(Costs({1, 1, 1, 1, 1, 1}), 8)),
            "cannot split 6 layers into 8 stages (expected at most one stage per layer; lower pp "
            "× vpp)");
  EXPECT_EQ(ErrorOf(PartitionByCost(Costs({1, 1}), 0)),
            "cannot split 2 layers into 0 stages (expected at least one stage)");
  EXPECT_EQ(ErrorOf(PartitionByCost(Costs({1}), 2)),
            "cannot split 1 layer into 2 stages (expected at most one stage per layer; lower pp × "
            "vpp)");
  EXPECT_FALSE(PartitionByCost({}, 1).ok());
}

TEST(PartitionByCostTest, MatchesBruteForceOnRandomInputs) {
  std::mt19937 random(20240611);
  for (int32_t trial = 0; trial < 400; ++trial) {
    const int32_t num_layers = 1 + static_cast<int32_t>(random() % 10);
    const int32_t num_stages = 1 + static_cast<int32_t>(random() % std::min(num_layers, 4));
    const std::vector<Time> layer_costs = RandomCosts(random, num_layers, trial % 2 ? 3 : 1000);
    EXPECT_EQ(ValueOf(PartitionByCost(layer_costs, num_stages)),
              BruteForce(layer_costs, {}, num_stages))
        << "trial " << trial;
  }
}

TEST(PartitionStateAwareTest, ExpensiveCutMovesAway) {
  // Cost-only cuts before layer 2 (2 | 2); that cut costs 10 on both sides, the cut before
  // layer 3 costs nothing: 3 | 1 wins over 1+1 | 3+1.
  const std::vector<Time> layer_costs = Costs({1, 1, 1, 1});
  const std::vector<Time> cut_costs = Costs({0, 1, 10, 0});
  EXPECT_EQ(ValueOf(PartitionByCost(layer_costs, 2)), Make({0, 2}, 4));
  EXPECT_EQ(ValueOf(PartitionStateAware(layer_costs, cut_costs, 2)), Make({0, 3}, 4));
}

TEST(PartitionStateAwareTest, ZeroCutCostsGiveTheCostOnlyPartition) {
  std::mt19937 random(7);
  for (int32_t trial = 0; trial < 50; ++trial) {
    const int32_t num_layers = 1 + static_cast<int32_t>(random() % 40);
    const int32_t num_stages = 1 + static_cast<int32_t>(random() % num_layers);
    const std::vector<Time> layer_costs = RandomCosts(random, num_layers, 50);
    const std::vector<Time> zero_cuts(num_layers);
    EXPECT_EQ(ValueOf(PartitionStateAware(layer_costs, zero_cuts, num_stages)),
              ValueOf(PartitionByCost(layer_costs, num_stages)))
        << "trial " << trial;
  }
}

TEST(PartitionStateAwareTest, MatchesBruteForceOnRandomInputs) {
  std::mt19937 random(31337);
  for (int32_t trial = 0; trial < 400; ++trial) {
    const int32_t num_layers = 1 + static_cast<int32_t>(random() % 10);
    const int32_t num_stages = 1 + static_cast<int32_t>(random() % std::min(num_layers, 4));
    const int64_t max_ns = trial % 2 ? 3 : 1000;
    const std::vector<Time> layer_costs = RandomCosts(random, num_layers, max_ns);
    const std::vector<Time> cut_costs = RandomCosts(random, num_layers, max_ns);
    EXPECT_EQ(ValueOf(PartitionStateAware(layer_costs, cut_costs, num_stages)),
              BruteForce(layer_costs, cut_costs, num_stages))
        << "trial " << trial;
  }
}

// Evaluated in the state-aware objective, the state-aware partition is never worse than the
// cost-only one.
TEST(PartitionStateAwareTest, NeverWorseThanCostOnly) {
  std::mt19937 random(99);
  for (int32_t trial = 0; trial < 200; ++trial) {
    const int32_t num_layers = 1 + static_cast<int32_t>(random() % 64);
    const int32_t num_stages = 1 + static_cast<int32_t>(random() % std::min(num_layers, 8));
    const std::vector<Time> layer_costs = RandomCosts(random, num_layers, 1000);
    const std::vector<Time> cut_costs = RandomCosts(random, num_layers, 400);
    const Partition state_aware = ValueOf(PartitionStateAware(layer_costs, cut_costs, num_stages));
    const Partition cost_only = ValueOf(PartitionByCost(layer_costs, num_stages));
    EXPECT_LE(MaxStageCost(state_aware, layer_costs, cut_costs),
              MaxStageCost(cost_only, layer_costs, cut_costs))
        << "trial " << trial;
  }
}

TEST(PartitionStateAwareTest, Errors) {
  EXPECT_EQ(ErrorOf(PartitionStateAware(Costs({1, 1, 1}), Costs({0, 1}), 2)),
            "state-aware partition: 2 cut costs for 3 layers (expected one per layer: entry c is "
            "the cut just before layer c, entry 0 unused)");
  EXPECT_EQ(ErrorOf(PartitionStateAware(Costs({1, 1, 1}), Costs({0, 1, 1}), 4)),
            "cannot split 3 layers into 4 stages (expected at most one stage per layer; lower pp "
            "× vpp)");
  EXPECT_FALSE(PartitionStateAware(Costs({1, 1, 1}), Costs({0, 1, 1}), -1).ok());
}

// A few hundred layers stay fast (O(L²·S)).
TEST(PartitionStateAwareTest, LargeModelStaysBalanced) {
  std::vector<Time> layer_costs(300, Time::Nanoseconds(10));
  const std::vector<Time> cut_costs(300, Time::Nanoseconds(1));
  const Partition partition = ValueOf(PartitionStateAware(layer_costs, cut_costs, 30));
  EXPECT_EQ(partition.num_stages(), 30);
  EXPECT_LE(MaxStageCost(partition, layer_costs, cut_costs), Time::Nanoseconds(102));
}

TEST(PartitionFromCountsTest, BuildsStagesFromCounts) {
  EXPECT_EQ(ValueOf(PartitionFromCounts({3, 2, 3}, 8)), Make({0, 3, 5}, 8));
  EXPECT_EQ(ValueOf(PartitionFromCounts({8}, 8)), Make({0}, 8));
}

TEST(PartitionFromCountsTest, Errors) {
  EXPECT_EQ(ErrorOf(PartitionFromCounts({3, 0, 5}, 8)),
            "stage 1 has 0 layers (expected at least 1 layer per stage)");
  EXPECT_EQ(ErrorOf(PartitionFromCounts({3, -2, 7}, 8)),
            "stage 1 has -2 layers (expected at least 1 layer per stage)");
  EXPECT_EQ(ErrorOf(PartitionFromCounts({3, 3}, 8)),
            "the layer counts sum to 6, expected 8 (the model's number of layers); add 2 layers "
            "to some stage");
  EXPECT_EQ(ErrorOf(PartitionFromCounts({4, 5}, 8)),
            "the layer counts sum to 9, expected 8 (the model's number of layers); remove 1 layer "
            "from some stage");
  EXPECT_EQ(ErrorOf(PartitionFromCounts({}, 8)),
            "no layer counts given (expected one count per stage, summing to 8)");
}

TEST(PartitionFromLayoutTest, SplitsAtSeparators) {
  EXPECT_EQ(ValueOf(PartitionFromLayout("Et*3|t*3L", kEightLayers)), Make({0, 4}, 8));
  EXPECT_EQ(ValueOf(PartitionFromLayout(" E t * 3 |\tt*3 L ", kEightLayers)), Make({0, 4}, 8));
  EXPECT_EQ(ValueOf(PartitionFromLayout("EttttttL", kEightLayers)), Make({0}, 8));
  EXPECT_EQ(ValueOf(PartitionFromLayout("E|t*6|L", kEightLayers)), Make({0, 1, 7}, 8));
}

TEST(PartitionFromLayoutTest, GroupsRepeatAndNest) {
  EXPECT_EQ(ValueOf(PartitionFromLayout("E(t|)*6L", kEightLayers)), Make({0, 2, 3, 4, 5, 6, 7}, 8));
  EXPECT_EQ(ValueOf(PartitionFromLayout("Et|(tt|)*2tL", kEightLayers)), Make({0, 2, 4, 6}, 8));
  EXPECT_EQ(ValueOf(PartitionFromLayout("E((t)*2|)*3L", kEightLayers)), Make({0, 3, 5, 7}, 8));
  EXPECT_EQ(ValueOf(PartitionFromLayout("E( (t*1 ( t ) ) * 2 | ) * 1 t | t L", kEightLayers)),
            Make({0, 5, 6}, 8));
  EXPECT_EQ(ValueOf(PartitionFromLayout("(E)t*6(L)", kEightLayers)), Make({0}, 8));
}

// An explicit layout and the same counts give the same partition.
TEST(PartitionFromLayoutTest, RoundTripsWithCounts) {
  std::mt19937 random(5);
  const std::string layer_kinds = "E" + std::string(30, 't') + "L";
  for (int32_t trial = 0; trial < 100; ++trial) {
    std::vector<int32_t> counts;
    std::string layout;
    for (int32_t begin = 0; begin < 32;) {
      const int32_t count = std::min<int32_t>(1 + static_cast<int32_t>(random() % 6), 32 - begin);
      if (!counts.empty()) layout += "|";
      for (int32_t layer = begin; layer < begin + count; ++layer) layout += layer_kinds[layer];
      counts.push_back(count);
      begin += count;
    }
    EXPECT_EQ(ValueOf(PartitionFromLayout(layout, layer_kinds)),
              ValueOf(PartitionFromCounts(counts, 32)))
        << layout;
  }
}

TEST(PartitionFromLayoutTest, SyntaxErrorsNameTheColumn) {
  EXPECT_EQ(ErrorOf(PartitionFromLayout("Etx", kEightLayers)),
            "layout:3: unknown letter 'x' (expected 'E', 't', 'L', '|', '(' or ')')");
  EXPECT_EQ(ErrorOf(PartitionFromLayout("ET*6L", kEightLayers)),
            "layout:2: unknown letter 'T' (expected 'E', 't', 'L', '|', '(' or ')'); did you "
            "mean 't'?");
  EXPECT_EQ(ErrorOf(PartitionFromLayout("Et*0L", kEightLayers)),
            "layout:4: bad repeat count: found '0' after '*' (expected a whole number from 1 to "
            "1000000, e.g. 't*4')");
  EXPECT_EQ(ErrorOf(PartitionFromLayout("Et* L", kEightLayers)),
            "layout:5: bad repeat count: found no number after '*' (expected a whole number from "
            "1 to 1000000, e.g. 't*4')");
  EXPECT_EQ(ErrorOf(PartitionFromLayout("Et*99999999999999999999L", kEightLayers)).substr(0, 41),
            "layout:4: bad repeat count: found '999999");
  EXPECT_EQ(ErrorOf(PartitionFromLayout("*E", kEightLayers)),
            "layout:1: bad repeat count: '*' must follow a layer letter or a group, e.g. 't*4' "
            "or '(tt|)*2'");
  EXPECT_EQ(ErrorOf(PartitionFromLayout("Et|*2", kEightLayers)),
            "layout:4: bad repeat count: '|' cannot repeat (it would make empty stages); repeat "
            "a group instead, e.g. '(t|)*4'");
}

TEST(PartitionFromLayoutTest, ParenthesisErrors) {
  EXPECT_EQ(ErrorOf(PartitionFromLayout("E(t|(t)*6L", kEightLayers)),
            "layout:2: unbalanced parentheses: this '(' is never closed (expected ')')");
  EXPECT_EQ(ErrorOf(PartitionFromLayout("Et*6)L", kEightLayers)),
            "layout:5: unbalanced parentheses: ')' closes no '('; remove it");
  EXPECT_EQ(ErrorOf(PartitionFromLayout("E()t*6L", kEightLayers)),
            "layout:2: empty group '()' (expected layers inside, e.g. '(tt|)*2')");
  EXPECT_EQ(
      ErrorOf(PartitionFromLayout(std::string(40, '(') + "t" + std::string(40, ')'), kEightLayers)),
      "layout:33: groups nested deeper than 32 levels");
}

TEST(PartitionFromLayoutTest, EmptyStageErrors) {
  EXPECT_EQ(ErrorOf(PartitionFromLayout("E|t||t*5L", kEightLayers)),
            "layout:5: stage 2 is empty (expected at least one layer between two '|')");
  EXPECT_EQ(ErrorOf(PartitionFromLayout("|Et*6L", kEightLayers)),
            "layout:1: stage 0 is empty (expected at least one layer between two '|')");
  EXPECT_EQ(ErrorOf(PartitionFromLayout("Et*6L|", kEightLayers)),
            "layout:6: stage 1 is empty (expected at least one layer between two '|')");
  EXPECT_EQ(ErrorOf(PartitionFromLayout("E(t|)*6|L", kEightLayers)),
            "layout:8: stage 6 is empty (expected at least one layer between two '|')");
}

TEST(PartitionFromLayoutTest, MismatchWithTheModelErrors) {
  EXPECT_EQ(ErrorOf(PartitionFromLayout("Et*4L|tL", kEightLayers)),
            "layout:5: expected 't' (layer 5 is a decoder layer), found 'L'");
  EXPECT_EQ(ErrorOf(PartitionFromLayout("tt*6L", kEightLayers)),
            "layout:1: expected 'E' (layer 0 is the embedding), found 't'");
  EXPECT_EQ(ErrorOf(PartitionFromLayout("Et*3|t*4L", kEightLayers)),
            "layout:6: expected 'L' (layer 7 is the head), found 't'");
  EXPECT_EQ(ErrorOf(PartitionFromLayout("Et*6L|L", kEightLayers)),
            "layout:7: the layout spells more layers than the model's 8 (the model's layers are "
            "'Et*6L'); remove this 'L'");
  EXPECT_EQ(ErrorOf(PartitionFromLayout("Et*3|t*2", kEightLayers)),
            "layout:9: the layout spells 6 layers, fewer than the model's 8 (expected 't' next: "
            "layer 6 is a decoder layer; the model's layers are 'Et*6L')");
  EXPECT_EQ(ErrorOf(PartitionFromLayout("", kEightLayers)),
            "layout:1: the layout spells 0 layers, fewer than the model's 8 (expected 'E' next: "
            "layer 0 is the embedding; the model's layers are 'Et*6L')");
  // A huge repeat stops at the first layer past the model instead of expanding.
  EXPECT_EQ(ErrorOf(PartitionFromLayout("E(t|)*1000000L", kEightLayers)),
            "layout:3: expected 'L' (layer 7 is the head), found 't'");
}

// Every way to give `decoders` decoders to `chunks` chunks (the first and the last may take none:
// they hold the embedding and the head), as layer counts with those two.
void EveryTransformerSplit(int32_t decoders, int32_t chunks, std::vector<int32_t>& counts,
                           std::vector<std::vector<int32_t>>& out) {
  const auto chunk = static_cast<int32_t>(counts.size());
  if (chunk == chunks - 1) {
    if (chunks == 1 || decoders >= 0) {
      counts.push_back(decoders);
      std::vector<int32_t> with_ends = counts;
      with_ends.front() += 1;
      with_ends.back() += 1;
      out.push_back(with_ends);
      counts.pop_back();
    }
    return;
  }
  const int32_t least = chunk == 0 ? 0 : 1;
  for (int32_t taken = least; taken <= decoders; ++taken) {
    counts.push_back(taken);
    EveryTransformerSplit(decoders - taken, chunks, counts, out);
    counts.pop_back();
  }
}

// Exact under both placements: chunk c on rank c mod pp, and the V (vpp 2: rank r holds chunks
// r and 2pp - 1 - r, torch's DualPipeV and ZBVZeroBubble).
TEST(BalancedTransformerCountsTest, NoSplitHasASlowerSlowestRankThanItsOwn) {
  std::mt19937 random(20261202);
  std::uniform_int_distribution<int64_t> extra(0, 3000);
  for (const Placement placement : {Placement::kLoop, Placement::kV}) {
    for (int32_t pp = 1; pp <= 3; ++pp) {
      for (int32_t vpp = placement == Placement::kV ? 2 : 1; vpp <= 2; ++vpp) {
        for (int32_t decoders = 1; decoders <= 9; ++decoders) {
          const Time decoder = Time::Nanoseconds(1000);
          const Time embedding = Time::Nanoseconds(extra(random));
          const Time head = Time::Nanoseconds(extra(random));
          const int32_t chunks = pp * vpp;
          std::vector<std::vector<int32_t>> splits;
          std::vector<int32_t> scratch;
          EveryTransformerSplit(decoders, chunks, scratch, splits);
          const std::vector<int32_t> counts =
              BalancedTransformerCounts(decoders, pp, vpp, decoder, embedding, head, placement);
          SCOPED_TRACE(std::string(placement == Placement::kV ? "V " : "loop ") + "pp " +
                       std::to_string(pp) + " vpp " + std::to_string(vpp) + " decoders " +
                       std::to_string(decoders));
          if (splits.empty()) {  // fewer decoders than the middle chunks need
            EXPECT_TRUE(counts.empty());
            continue;
          }
          ASSERT_EQ(counts.size(), static_cast<size_t>(chunks));
          int32_t layers = 0;
          for (int32_t count : counts) {
            EXPECT_GE(count, 1);
            layers += count;
          }
          EXPECT_EQ(layers, decoders + 2);
          const auto slowest = [&](const std::vector<int32_t>& split) {
            return SlowestTransformerRank(split, pp, decoder, embedding, head, placement);
          };
          Time best = slowest(splits.front());
          for (const auto& split : splits) best = std::min(best, slowest(split));
          EXPECT_EQ(slowest(counts), best);
        }
      }
    }
  }
}

// The V puts the first and the last chunk on rank 0: with pp 2 and a heavy head, rank 0 (chunks
// 0 and 3, the embedding and the head) takes fewer decoders than rank 1 (chunks 1 and 2).
TEST(BalancedTransformerCountsTest, TheVPutsBothEndsOnRankZero) {
  const Time d = Time::Nanoseconds(1000);
  EXPECT_EQ(RankOfChunk(3, 2, 2, Placement::kV), 0);
  EXPECT_EQ(RankOfChunk(2, 2, 2, Placement::kV), 1);
  EXPECT_EQ(RankOfChunk(3, 2, 2, Placement::kLoop), 1);
  const std::vector<int32_t> counts = BalancedTransformerCounts(
      8, 2, 2, d, Time::Nanoseconds(0), Time::Nanoseconds(2000), Placement::kV);
  // rank 0: the embedding, the head (2 decoders' time) and 3 decoders; rank 1: 5 decoders.
  EXPECT_EQ(counts[0] - 1 + counts[3] - 1, 3);
  EXPECT_EQ(counts[1] + counts[2], 5);
  EXPECT_EQ(SlowestTransformerRank(counts, 2, d, Time(), Time::Nanoseconds(2000), Placement::kV),
            Time::Nanoseconds(5000));
}

TEST(BalancedTransformerCountsTest, GivesTheHeadsRankFewerDecodersUnderVirtualStages) {
  // 80 decoders, pp 8 x vpp 5, a head worth two decoders: the even split (2 per chunk) leaves
  // rank 7 with 10 decoders and the head (12 decoders' time); the balanced one gives it 8 and
  // the two it sheds to ranks 1 and 2 (11 each), the head alone on the last chunk.
  const Time d = Time::Nanoseconds(1000);
  const Time e = Time::Nanoseconds(100);
  const Time h = Time::Nanoseconds(2000);
  EXPECT_EQ(SlowestTransformerRank(EvenTransformerCounts(80, 40), 8, d, e, h),
            Time::Nanoseconds(12000));
  const std::vector<int32_t> counts = BalancedTransformerCounts(80, 8, 5, d, e, h);
  EXPECT_EQ(SlowestTransformerRank(counts, 8, d, e, h), Time::Nanoseconds(11000));
  EXPECT_EQ(TransformerLayoutString(counts), "Et*2|(t*3|)*2(t*2|)*36L");
}

TEST(TransformerLayoutStringTest, GroupsEqualMiddleChunksAndReadsBack) {
  std::vector<int32_t> counts(16, 5);
  counts.front() = 5;  // the embedding and 4 decoders
  counts.back() = 7;   // 6 decoders and the head
  EXPECT_EQ(TransformerLayoutString(counts), "Et*4|(t*5|)*14t*6L");
  const std::string letters = "E" + std::string(80, 't') + "L";
  auto read = PartitionFromLayout(TransformerLayoutString(counts), letters);
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read.value(), PartitionFromCounts(counts, 82).value());
  EXPECT_EQ(TransformerLayoutString({1, 2, 1}), "E|t*2|L");
  EXPECT_EQ(TransformerLayoutString({1, 2, 2, 3}), "E|(t*2|)*2t*2L");
  EXPECT_EQ(TransformerLayoutString({4}), "Et*2L");
}

// torchtitan's generate_llm_fqn_per_model_part (torchtitan/distributed/pipeline_parallel.py),
// counted: the effective layers (decoders + both weights) split evenly, the first stages taking
// the remainder, and each end holding its weight fewer decoders.
TEST(TorchtitanTransformerCountsTest, SplitsAsTorchtitanDoes) {
  // Llama 3.1 405B over 8 stages with torchtitan's default weights (1, 1): 128 effective
  // layers, 16 a stage; the two ends hold 15 decoders (and the embedding, the head).
  EXPECT_EQ(TorchtitanTransformerCounts(126, 8, 1, 1).value(),
            (std::vector<int32_t>{16, 16, 16, 16, 16, 16, 16, 16}));
  // 80 decoders, weights (1, 1): 82 effective layers, 10 a stage and 2 extra for stages 0 and 1;
  // stage 0 holds 10 decoders, stage 1 11, the last 9.
  EXPECT_EQ(TorchtitanTransformerCounts(80, 8, 1, 1).value(),
            (std::vector<int32_t>{11, 11, 10, 10, 10, 10, 10, 10}));
  // Weights (0, 0): the decoders alone split, the remainder to the first stages.
  EXPECT_EQ(TorchtitanTransformerCounts(80, 8, 0, 0).value(),
            (std::vector<int32_t>{11, 10, 10, 10, 10, 10, 10, 11}));
  EXPECT_EQ(TorchtitanTransformerCounts(126, 8, 0, 0).value(),
            (std::vector<int32_t>{17, 16, 16, 16, 16, 16, 15, 16}));
  // torchtitan's docstring example: 3 layers over 2 stages, both weights 2: 7 effective layers,
  // stage 0 takes 4 (2 decoders), stage 1 takes 3 (1 decoder).
  EXPECT_EQ(TorchtitanTransformerCounts(3, 2, 2, 2).value(), (std::vector<int32_t>{3, 2}));
  EXPECT_EQ(TorchtitanTransformerCounts(5, 1, 1, 1).value(), (std::vector<int32_t>{7}));
  // A weight may take all of a stage's layers: 12 decoders and an input weight of 4 over 4
  // stages are 4 effective layers a stage, and stage 0 holds the embedding alone.
  EXPECT_EQ(TorchtitanTransformerCounts(12, 4, 4, 0).value(), (std::vector<int32_t>{1, 4, 4, 5}));
  // torchtitan's ValueErrors: more stages than effective layers, a weight above the layers per
  // stage (5 > 17 / 4).
  EXPECT_FALSE(TorchtitanTransformerCounts(4, 8, 0, 0).ok());
  EXPECT_FALSE(TorchtitanTransformerCounts(2, 2, 3, 0).ok());
  EXPECT_FALSE(TorchtitanTransformerCounts(12, 4, 5, 0).ok());
}

// DeepSpeed's type:transformer split of GPTModelPipe's specs (2 leading specs of weight 0, the
// decoders of weight 1, 3 trailing ones; MoE's fourth changes no split of up to 129 decoders over
// up to 33 stages, checked against partition_balanced). The expected counts are what
// deepspeed/runtime/utils.py partition_balanced (DeepSpeed edaa722) returns for those weights,
// with the embedding and the head added to the first and last stage: BLOOM-176B's 70 layers over
// 12 stages give ten stages of 6 decoders and two of 5; where the stages divide the decoders,
// the even split.
TEST(DeepSpeedTransformerCountsTest, MatchesPartitionBalanced) {
  EXPECT_EQ(DeepSpeedTransformerCounts(70, 12),
            (std::vector<int32_t>{7, 6, 6, 6, 6, 6, 6, 6, 6, 6, 5, 6}));
  EXPECT_EQ(DeepSpeedTransformerCounts(126, 16),
            (std::vector<int32_t>{9, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7, 8}));
  EXPECT_EQ(DeepSpeedTransformerCounts(126, 8),
            (std::vector<int32_t>{17, 16, 16, 16, 16, 16, 15, 16}));
  EXPECT_EQ(DeepSpeedTransformerCounts(30, 4), (std::vector<int32_t>{9, 8, 7, 8}));
  EXPECT_EQ(DeepSpeedTransformerCounts(80, 6), (std::vector<int32_t>{15, 14, 13, 13, 13, 14}));
  EXPECT_EQ(DeepSpeedTransformerCounts(61, 8), (std::vector<int32_t>{9, 8, 8, 8, 8, 7, 7, 8}));
  EXPECT_EQ(DeepSpeedTransformerCounts(24, 5), (std::vector<int32_t>{6, 5, 5, 5, 5}));
  EXPECT_EQ(DeepSpeedTransformerCounts(5, 4), (std::vector<int32_t>{3, 1, 1, 2}));
  EXPECT_EQ(DeepSpeedTransformerCounts(27, 4), (std::vector<int32_t>{8, 7, 7, 7}));  // MoE's too
  EXPECT_EQ(DeepSpeedTransformerCounts(32, 4), EvenTransformerCounts(32, 4));
  EXPECT_EQ(DeepSpeedTransformerCounts(7, 7), EvenTransformerCounts(7, 7));
  EXPECT_EQ(DeepSpeedTransformerCounts(9, 1), EvenTransformerCounts(9, 1));
}

}  // namespace
}  // namespace stagecraft
