#include "schedule/partition.h"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "core/suggest.h"

namespace stagecraft {
namespace {

// "1 layer", "6 layers".
std::string CountOf(int64_t count, const std::string& noun) {
  return std::to_string(count) + " " + noun + (count == 1 ? "" : "s");
}

Status CheckStageCount(int32_t num_layers, int32_t num_stages) {
  const std::string what =
      "cannot split " + CountOf(num_layers, "layer") + " into " + CountOf(num_stages, "stage");
  if (num_stages < 1) return Error{what + " (expected at least one stage)"};
  if (num_stages > num_layers) {
    return Error{what + " (expected at most one stage per layer; lower pp × vpp)"};
  }
  return Status::Ok();
}

// The cost of a stage [begin, end): its layers, plus (state-aware) the cuts on both sides.
class StageCostModel {
 public:
  // `cut_costs` is empty (cost-only) or holds one entry per layer (entry 0 unused).
  StageCostModel(const std::vector<Time>& layer_costs, const std::vector<Time>& cut_costs)
      : cut_costs_(cut_costs) {
    prefix_.reserve(layer_costs.size() + 1);
    prefix_.push_back(Time());
    for (Time cost : layer_costs) prefix_.push_back(prefix_.back() + cost);
  }

  int32_t num_layers() const { return static_cast<int32_t>(prefix_.size()) - 1; }

  Time Cost(int32_t begin, int32_t end) const {
    Time cost = prefix_[end] - prefix_[begin];
    if (cut_costs_.empty()) return cost;
    if (begin > 0) cost += cut_costs_[begin];
    if (end < num_layers()) cost += cut_costs_[end];
    return cost;
  }

 private:
  std::vector<Time> prefix_;  // prefix_[layer] = sum of the costs of layers [0, layer)
  const std::vector<Time>& cut_costs_;
};

// Exact min-max contiguous split by dynamic programming, O(L²·S). Among all optimal splits the
// one whose first_layer vector is lexicographically smallest is returned (every cut as early as
// the optimum allows, earliest stage first). REQUIRES: 1 <= num_stages <= num_layers.
Partition SplitMinMax(const StageCostModel& model, int32_t num_stages) {
  const int32_t num_layers = model.num_layers();
  // best[stages][begin]: the least possible largest stage cost when layers [begin, L) are split
  // into `stages` stages; Time::Max() where impossible (fewer layers than stages).
  std::vector<std::vector<Time>> best(num_stages + 1,
                                      std::vector<Time>(num_layers + 1, Time::Max()));
  best[0][num_layers] = Time();
  for (int32_t stages = 1; stages <= num_stages; ++stages) {
    for (int32_t begin = num_layers - stages; begin >= 0; --begin) {
      Time least = Time::Max();
      for (int32_t end = begin + 1; end <= num_layers - (stages - 1); ++end) {
        if (best[stages - 1][end] == Time::Max()) continue;
        least = std::min(least, std::max(model.Cost(begin, end), best[stages - 1][end]));
      }
      best[stages][begin] = least;
    }
  }
  const Time optimum = best[num_stages][0];
  Partition partition;
  partition.num_layers = num_layers;
  int32_t begin = 0;
  for (int32_t stage = 0; stage < num_stages; ++stage) {
    partition.first_layer.push_back(begin);
    const int32_t stages_after = num_stages - stage - 1;
    int32_t end = begin + 1;
    while (model.Cost(begin, end) > optimum || best[stages_after][end] > optimum) ++end;
    begin = end;
  }
  return partition;
}

// ---- Layout strings -----------------------------------------------------------------------

constexpr int32_t kMaxGroupDepth = 32;     // deeper nesting is surely a mistake; bounds recursion
constexpr int64_t kMaxRepeat = 1'000'000;  // far above any model's layer count

std::string At(int64_t column) { return "layout:" + std::to_string(column) + ": "; }

bool IsLayerLetter(char letter) { return letter == 'E' || letter == 't' || letter == 'L'; }

std::string DescribeLayer(char letter) {
  switch (letter) {
    case 'E':
      return "the embedding";
    case 't':
      return "a decoder layer";
    case 'L':
      return "the head";
    default:
      return "a '" + std::string(1, letter) + "' layer";
  }
}

// The model's layer list in layout form: "EtttL" → "Et*3L".
std::string RunLengths(std::string_view layer_kinds) {
  std::string text;
  for (size_t begin = 0; begin < layer_kinds.size();) {
    size_t end = begin;
    while (end < layer_kinds.size() && layer_kinds[end] == layer_kinds[begin]) ++end;
    text += layer_kinds[begin];
    if (end - begin > 1) text += "*" + std::to_string(end - begin);
    begin = end;
  }
  return text;
}

// One item of a parsed layout: a layer letter, a stage separator '|', or a group "(...)".
struct LayoutItem {
  char symbol = 't';   // 'E', 't', 'L', '|', or '(' for a group
  int32_t column = 0;  // 1-based, in the layout string
  int64_t repeat = 1;
  std::vector<LayoutItem> children;  // a group's items
};

// Recursive-descent parser for: sequence := item*; item := atom ('*' count)?;
// atom := 'E' | 't' | 'L' | '|' | '(' sequence ')'. Whitespace between tokens is ignored.
class LayoutParser {
 public:
  explicit LayoutParser(std::string_view text) : text_(text) {}

  Result<std::vector<LayoutItem>> Parse() {
    std::vector<LayoutItem> items;
    STAGECRAFT_RETURN_IF_ERROR(ParseSequence(0, &items));
    if (position_ < text_.size()) {  // stopped at a ')' with no '(' open
      return Error{At(Column()) + "unbalanced parentheses: ')' closes no '('; remove it"};
    }
    return items;
  }

 private:
  int32_t Column() const { return static_cast<int32_t>(position_) + 1; }

  void SkipSpaces() {
    while (position_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[position_]))) {
      ++position_;
    }
  }

  Status ParseSequence(int32_t depth, std::vector<LayoutItem>* items) {
    for (SkipSpaces(); position_ < text_.size() && text_[position_] != ')'; SkipSpaces()) {
      LayoutItem item;
      STAGECRAFT_RETURN_IF_ERROR(ParseAtom(depth, &item));
      STAGECRAFT_RETURN_IF_ERROR(ParseRepeat(&item));
      items->push_back(std::move(item));
    }
    return Status::Ok();
  }

  Status ParseAtom(int32_t depth, LayoutItem* item) {
    const char symbol = text_[position_];
    item->symbol = symbol;
    item->column = Column();
    ++position_;
    if (IsLayerLetter(symbol) || symbol == '|') return Status::Ok();
    if (symbol == '(') return ParseGroup(depth + 1, item);
    if (symbol == '*') {
      return Error{At(item->column) +
                   "bad repeat count: '*' must follow a layer letter or a group, e.g. 't*4' or "
                   "'(tt|)*2'"};
    }
    std::string message = At(item->column) + "unknown letter '" + std::string(1, symbol) +
                          "' (expected " + JoinChoices({"E", "t", "L", "|", "(", ")"}) + ")";
    const std::vector<std::string> letters = {"E", "t", "L"};
    for (const std::string& letter : letters) {
      if (std::tolower(static_cast<unsigned char>(symbol)) ==
          std::tolower(static_cast<unsigned char>(letter[0]))) {
        message += DidYouMean(std::string(1, symbol), letters);
      }
    }
    return Error{message};
  }

  Status ParseGroup(int32_t depth, LayoutItem* group) {
    if (depth > kMaxGroupDepth) {
      return Error{At(group->column) + "groups nested deeper than " +
                   std::to_string(kMaxGroupDepth) + " levels"};
    }
    STAGECRAFT_RETURN_IF_ERROR(ParseSequence(depth, &group->children));
    if (position_ == text_.size()) {
      return Error{At(group->column) +
                   "unbalanced parentheses: this '(' is never closed (expected ')')"};
    }
    if (group->children.empty()) {
      return Error{At(group->column) + "empty group '()' (expected layers inside, e.g. '(tt|)*2')"};
    }
    ++position_;  // the ')'
    return Status::Ok();
  }

  Status ParseRepeat(LayoutItem* item) {
    SkipSpaces();
    if (position_ == text_.size() || text_[position_] != '*') return Status::Ok();
    const int32_t star_column = Column();
    if (item->symbol == '|') {
      return Error{At(star_column) +
                   "bad repeat count: '|' cannot repeat (it would make empty stages); repeat a "
                   "group instead, e.g. '(t|)*4'"};
    }
    ++position_;
    SkipSpaces();
    const int32_t count_column = Column();
    int64_t count = 0;
    size_t digits = 0;
    for (; position_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[position_]));
         ++position_, ++digits) {
      count = std::min(count * 10 + (text_[position_] - '0'), kMaxRepeat + 1);
    }
    if (digits == 0 || count < 1 || count > kMaxRepeat) {
      const std::string found =
          digits == 0 ? "no number"
                      : "'" + std::string(text_.substr(position_ - digits, digits)) + "'";
      return Error{At(count_column) + "bad repeat count: found " + found +
                   " after '*' (expected a whole number from 1 to " + std::to_string(kMaxRepeat) +
                   ", e.g. 't*4')"};
    }
    item->repeat = count;
    return Status::Ok();
  }

  std::string_view text_;
  size_t position_ = 0;
};

// Walks the expanded layout one layer or separator at a time, checking it against the model's
// layer list; stops at the first mismatch, so expansion never outgrows the model.
class LayoutChecker {
 public:
  explicit LayoutChecker(std::string_view layer_kinds) : layer_kinds_(layer_kinds) {
    partition_.num_layers = static_cast<int32_t>(layer_kinds.size());
  }

  Status Expand(const std::vector<LayoutItem>& items) {
    for (const LayoutItem& item : items) {
      for (int64_t copy = 0; copy < item.repeat; ++copy) {
        if (item.symbol == '(') {
          STAGECRAFT_RETURN_IF_ERROR(Expand(item.children));
        } else if (item.symbol == '|') {
          STAGECRAFT_RETURN_IF_ERROR(Separator(item.column));
        } else {
          STAGECRAFT_RETURN_IF_ERROR(Layer(item.symbol, item.column));
        }
      }
    }
    return Status::Ok();
  }

  // `end_column` is one past the layout's last character.
  Result<Partition> Finish(int32_t end_column) {
    if (next_layer_ < partition_.num_layers) {
      const char expected = layer_kinds_[next_layer_];
      return Error{At(end_column) + "the layout spells " + CountOf(next_layer_, "layer") +
                   ", fewer than the model's " + std::to_string(partition_.num_layers) +
                   " (expected '" + std::string(1, expected) + "' next: layer " +
                   std::to_string(next_layer_) + " is " + DescribeLayer(expected) +
                   "; the model's layers are '" + RunLengths(layer_kinds_) + "')"};
    }
    if (!stage_has_layer_) return EmptyStage(last_separator_column_);
    return partition_;
  }

 private:
  Status Layer(char letter, int32_t column) {
    if (next_layer_ == partition_.num_layers) {
      return Error{At(column) + "the layout spells more layers than the model's " +
                   std::to_string(partition_.num_layers) + " (the model's layers are '" +
                   RunLengths(layer_kinds_) + "'); remove this '" + std::string(1, letter) + "'"};
    }
    const char expected = layer_kinds_[next_layer_];
    if (letter != expected) {
      return Error{At(column) + "expected '" + std::string(1, expected) + "' (layer " +
                   std::to_string(next_layer_) + " is " + DescribeLayer(expected) + "), found '" +
                   std::string(1, letter) + "'"};
    }
    if (!stage_has_layer_) partition_.first_layer.push_back(next_layer_);
    stage_has_layer_ = true;
    ++next_layer_;
    return Status::Ok();
  }

  Status Separator(int32_t column) {
    if (!stage_has_layer_) return EmptyStage(column);
    stage_has_layer_ = false;
    ++stage_;
    last_separator_column_ = column;
    return Status::Ok();
  }

  Error EmptyStage(int32_t column) const {
    return Error{At(column) + "stage " + std::to_string(stage_) +
                 " is empty (expected at least one layer between two '|')"};
  }

  std::string_view layer_kinds_;
  Partition partition_;
  int32_t next_layer_ = 0;
  int32_t stage_ = 0;
  bool stage_has_layer_ = false;
  int32_t last_separator_column_ = 1;
};

}  // namespace

int32_t Partition::StageOf(int32_t layer) const {
  const auto after = std::upper_bound(first_layer.begin(), first_layer.end(), layer);
  return static_cast<int32_t>(after - first_layer.begin()) - 1;
}

Result<Partition> PartitionByCost(const std::vector<Time>& layer_costs, int32_t num_stages) {
  const int32_t num_layers = static_cast<int32_t>(layer_costs.size());
  STAGECRAFT_RETURN_IF_ERROR(CheckStageCount(num_layers, num_stages));
  const std::vector<Time> no_cut_costs;
  return SplitMinMax(StageCostModel(layer_costs, no_cut_costs), num_stages);
}

Result<Partition> PartitionStateAware(const std::vector<Time>& layer_costs,
                                      const std::vector<Time>& cut_costs, int32_t num_stages) {
  const int32_t num_layers = static_cast<int32_t>(layer_costs.size());
  STAGECRAFT_RETURN_IF_ERROR(CheckStageCount(num_layers, num_stages));
  if (cut_costs.size() != layer_costs.size()) {
    return Error{
        "state-aware partition: " + CountOf(static_cast<int64_t>(cut_costs.size()), "cut cost") +
        " for " + CountOf(num_layers, "layer") +
        " (expected one per layer: entry c is the cut just before layer c, entry 0 "
        "unused)"};
  }
  return SplitMinMax(StageCostModel(layer_costs, cut_costs), num_stages);
}

std::vector<int32_t> EvenTransformerCounts(int32_t decoders, int32_t stages) {
  std::vector<int32_t> counts(static_cast<size_t>(stages), decoders / stages);
  std::vector<int32_t> order;  // the middle stages first; extra < stages, so each at most once
  for (int32_t stage = 1; stage + 1 < stages; ++stage) order.push_back(stage);
  order.push_back(0);
  if (stages > 1) order.push_back(stages - 1);
  for (int32_t index = 0; index < decoders % stages; ++index) {
    ++counts[static_cast<size_t>(order[static_cast<size_t>(index)])];
  }
  counts.front() += 1;  // the embedding
  counts.back() += 1;   // the head
  return counts;
}

namespace {

// partition_balanced's cut points over `weights` into `parts` (parts + 1 boundaries, the first 0
// and the last the item count): for each prefix of i items in j parts, the least spread (the
// heaviest part less the lightest) over the last cut k, a later k winning a tie, with the
// heaviest and the lightest part of the best kept beside it.
std::vector<size_t> BalancedCuts(const std::vector<int32_t>& weights, size_t parts) {
  const size_t n = weights.size();
  const double inf = std::numeric_limits<double>::infinity();
  const size_t width = parts + 1;
  std::vector<double> heaviest((n + 1) * width, inf);
  std::vector<double> lightest((n + 1) * width, inf);
  std::vector<double> spread((n + 1) * width, inf);
  std::vector<size_t> cut((n + 1) * width, 0);
  std::vector<double> prefix(n + 1, 0.0);
  for (size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + weights[i];
  heaviest[0] = 0;
  spread[0] = 0;
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= std::min(i, parts); ++j) {
      for (size_t k = 0; k < i; ++k) {
        const double part = prefix[i] - prefix[k];
        const double most = std::max(heaviest[k * width + j - 1], part);
        const double least = std::min(lightest[k * width + j - 1], part);
        if (spread[i * width + j] >= most - least) {
          spread[i * width + j] = most - least;
          heaviest[i * width + j] = most;
          lightest[i * width + j] = least;
          cut[i * width + j] = k;
        }
      }
    }
  }
  std::vector<size_t> cuts(parts + 1, n);
  for (size_t j = parts; j >= 1; --j) cuts[j - 1] = cut[cuts[j] * width + j];
  return cuts;
}

}  // namespace

std::vector<int32_t> DeepSpeedTransformerCounts(int32_t decoders, int32_t stages) {
  if (stages <= 1 || decoders % stages == 0) return EvenTransformerCounts(decoders, stages);
  // The planner asks for the same few splits many times: each is worked out once.
  static std::mutex mutex;
  static std::map<std::pair<int32_t, int32_t>, std::vector<int32_t>> known;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_pair(decoders, stages);
  if (const auto found = known.find(key); found != known.end()) return found->second;
  // The specs: the fp16 cast and the embedding; the decoders; the final norm, the head and the
  // fp32 cast (MoE's aux-loss helper before them joins the last stage as they do).
  std::vector<int32_t> weights = {0, 0};
  weights.insert(weights.end(), static_cast<size_t>(decoders), 1);
  weights.insert(weights.end(), 3, 0);
  const std::vector<size_t> cuts = BalancedCuts(weights, static_cast<size_t>(stages));
  std::vector<int32_t> counts(static_cast<size_t>(stages), 0);
  for (size_t stage = 0; stage < counts.size(); ++stage) {
    for (size_t item = cuts[stage]; item < cuts[stage + 1]; ++item) counts[stage] += weights[item];
  }
  // With at least as many decoders as stages no part is left without one (a part of weight 0
  // would widen the spread), so the embedding and the head sit with the first and last decoders.
  counts.front() += 1;
  counts.back() += 1;
  known.emplace(key, counts);
  return counts;
}

Result<Partition> PartitionFromCounts(const std::vector<int32_t>& counts, int32_t num_layers) {
  if (counts.empty()) {
    return Error{"no layer counts given (expected one count per stage, summing to " +
                 std::to_string(num_layers) + ")"};
  }
  Partition partition;
  partition.num_layers = num_layers;
  int64_t sum = 0;
  for (size_t stage = 0; stage < counts.size(); ++stage) {
    if (counts[stage] < 1) {
      return Error{"stage " + std::to_string(stage) + " has " + std::to_string(counts[stage]) +
                   " layers (expected at least 1 layer per stage)"};
    }
    partition.first_layer.push_back(static_cast<int32_t>(std::min<int64_t>(sum, num_layers)));
    sum += counts[stage];
  }
  if (sum != num_layers) {
    const int64_t difference = num_layers - sum;
    const std::string fix = difference > 0 ? "add " + CountOf(difference, "layer") + " to"
                                           : "remove " + CountOf(-difference, "layer") + " from";
    return Error{"the layer counts sum to " + std::to_string(sum) + ", expected " +
                 std::to_string(num_layers) + " (the model's number of layers); " + fix +
                 " some stage"};
  }
  return partition;
}

Result<Partition> PartitionFromLayout(std::string_view layout, std::string_view layer_kinds) {
  Result<std::vector<LayoutItem>> items = LayoutParser(layout).Parse();
  if (!items.ok()) return items.error();
  LayoutChecker checker(layer_kinds);
  STAGECRAFT_RETURN_IF_ERROR(checker.Expand(items.value()));
  return checker.Finish(static_cast<int32_t>(layout.size()) + 1);
}

Result<std::vector<int32_t>> TorchtitanTransformerCounts(int32_t decoders, int32_t stages,
                                                         int32_t input_weight,
                                                         int32_t output_weight) {
  if (stages == 1) return std::vector<int32_t>{decoders + 2};
  const int64_t effective = int64_t{decoders} + input_weight + output_weight;
  if (stages > effective) {
    return Error{"number of stages (" + std::to_string(stages) +
                 ") cannot be greater than effective layers (" + std::to_string(effective) + ": " +
                 std::to_string(decoders) + " layers + weights " + std::to_string(input_weight) +
                 " and " + std::to_string(output_weight) + ")"};
  }
  const int64_t per_stage = effective / stages;
  const int64_t extra = effective % stages;
  for (const auto& [name, weight] : {std::pair<const char*, int32_t>{"input", input_weight},
                                     std::pair<const char*, int32_t>{"output", output_weight}}) {
    if (weight > per_stage) {
      return Error{std::string(name) + "_weight (" + std::to_string(weight) +
                   ") exceeds minimum layers per stage (" + std::to_string(per_stage) + ")"};
    }
  }
  std::vector<int32_t> counts;
  for (int32_t stage = 0; stage < stages; ++stage) {
    int64_t held = per_stage + (stage < extra ? 1 : 0);
    if (stage == 0) held += 1 - input_weight;  // the embedding counts as a layer of its own
    if (stage == stages - 1) held += 1 - output_weight;  // and the head
    counts.push_back(static_cast<int32_t>(held));
  }
  return counts;
}

namespace {

// Hands `units` equal units of `unit` cost to the bins, each to the bin least loaded after taking
// it; ties go to the bin first in `order` (a permutation of the bins' indices). Greedy is exact
// here: with equal units, no assignment has a smaller largest load.
void WaterFill(std::vector<int64_t>& load, std::vector<int32_t>& count,
               const std::vector<int32_t>& order, int64_t units, int64_t unit) {
  std::vector<int32_t> rank_of(order.size());
  for (size_t position = 0; position < order.size(); ++position) {
    rank_of[static_cast<size_t>(order[position])] = static_cast<int32_t>(position);
  }
  using Entry = std::pair<int64_t, int32_t>;  // (load after one more unit, position in `order`)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> next;
  for (size_t bin = 0; bin < load.size(); ++bin) next.push({load[bin] + unit, rank_of[bin]});
  for (int64_t given = 0; given < units; ++given) {
    const auto [after, position] = next.top();
    next.pop();
    const auto bin = static_cast<size_t>(order[static_cast<size_t>(position)]);
    load[bin] = after;
    ++count[bin];
    next.push({after + unit, position});
  }
}

}  // namespace

int32_t RankOfChunk(int32_t chunk, int32_t pp, int32_t vpp, Placement placement) {
  if (placement == Placement::kV && vpp == 2) return chunk < pp ? chunk : 2 * pp - 1 - chunk;
  return chunk % pp;
}

std::vector<int32_t> BalancedTransformerCounts(int32_t decoders, int32_t pp, int32_t vpp,
                                               Time decoder, Time embedding, Time head,
                                               Placement placement) {
  const int32_t chunks = pp * vpp;
  std::vector<int64_t> extra(static_cast<size_t>(chunks), 0);
  extra.front() += embedding.ns();
  extra.back() += head.ns();
  // Each chunk but the first (the embedding) and the last (the head) needs a decoder.
  const auto needs = [&](int32_t chunk) { return chunk != 0 && chunk != chunks - 1 ? 1 : 0; };
  std::vector<int64_t> rank_load(static_cast<size_t>(pp), 0);
  std::vector<int32_t> rank_decoders(static_cast<size_t>(pp), 0);
  std::vector<std::vector<int32_t>> rank_chunks(static_cast<size_t>(pp));  // in chunk order
  int64_t left = decoders;
  for (int32_t chunk = 0; chunk < chunks; ++chunk) {
    const auto rank = static_cast<size_t>(RankOfChunk(chunk, pp, vpp, placement));
    rank_load[rank] += extra[static_cast<size_t>(chunk)] + needs(chunk) * decoder.ns();
    rank_decoders[rank] += needs(chunk);
    rank_chunks[rank].push_back(chunk);
    left -= needs(chunk);
  }
  if (left < 0) return {};
  std::vector<int32_t> order;  // the middle ranks first, then the first and the last
  for (int32_t rank = 1; rank + 1 < pp; ++rank) order.push_back(rank);
  order.push_back(0);
  if (pp > 1) order.push_back(pp - 1);
  WaterFill(rank_load, rank_decoders, order, left, decoder.ns());

  std::vector<int32_t> counts(static_cast<size_t>(chunks), 0);
  for (int32_t rank = 0; rank < pp; ++rank) {
    const std::vector<int32_t>& own = rank_chunks[static_cast<size_t>(rank)];
    std::vector<int64_t> load;
    std::vector<int32_t> held;
    std::vector<int32_t> in_order;
    int64_t spare = rank_decoders[static_cast<size_t>(rank)];
    for (size_t v = 0; v < own.size(); ++v) {
      const int32_t chunk = own[v];
      load.push_back(extra[static_cast<size_t>(chunk)] + needs(chunk) * decoder.ns());
      held.push_back(needs(chunk));
      in_order.push_back(static_cast<int32_t>(v));
      spare -= needs(chunk);
    }
    WaterFill(load, held, in_order, spare, decoder.ns());
    for (size_t v = 0; v < own.size(); ++v) counts[static_cast<size_t>(own[v])] = held[v];
  }
  counts.front() += 1;  // the embedding
  counts.back() += 1;   // the head
  return counts;
}

Time SlowestTransformerRank(const std::vector<int32_t>& counts, int32_t pp, Time decoder,
                            Time embedding, Time head, Placement placement) {
  std::vector<int64_t> rank_load(static_cast<size_t>(pp), 0);
  const auto chunks = static_cast<int32_t>(counts.size());
  const int32_t vpp = std::max(1, chunks / std::max(1, pp));
  for (int32_t chunk = 0; chunk < chunks; ++chunk) {
    int64_t load = int64_t{counts[static_cast<size_t>(chunk)]} * decoder.ns();
    if (chunk == 0) load += embedding.ns() - decoder.ns();
    if (chunk == chunks - 1) load += head.ns() - decoder.ns();
    rank_load[static_cast<size_t>(RankOfChunk(chunk, pp, vpp, placement))] += load;
  }
  return Time::Nanoseconds(*std::max_element(rank_load.begin(), rank_load.end()));
}

Time TransformerLevelChain(const std::vector<int32_t>& counts, int32_t pp, Time decoder,
                           Time embedding, Time head) {
  const auto chunks = static_cast<int32_t>(counts.size());
  int64_t chain = 0;
  for (int32_t first = 0; first < chunks; first += pp) {
    int64_t slowest = 0;
    for (int32_t chunk = first; chunk < std::min(chunks, first + pp); ++chunk) {
      int64_t load = int64_t{counts[static_cast<size_t>(chunk)]} * decoder.ns();
      if (chunk == 0) load += embedding.ns() - decoder.ns();
      if (chunk == chunks - 1) load += head.ns() - decoder.ns();
      slowest = std::max(slowest, load);
    }
    chain += slowest;
  }
  return Time::Nanoseconds(chain);
}

std::string TransformerLayoutString(const std::vector<int32_t>& counts) {
  const size_t chunks = counts.size();
  std::vector<std::string> terms;
  for (size_t chunk = 0; chunk < chunks; ++chunk) {
    const int32_t decoders = counts[chunk] - (chunk == 0 ? 1 : 0) - (chunk + 1 == chunks ? 1 : 0);
    std::string term = chunk == 0 ? "E" : "";
    if (decoders == 1) term += "t";
    if (decoders > 1) term += "t*" + std::to_string(decoders);
    if (chunk + 1 == chunks) term += "L";
    terms.push_back(std::move(term));
  }
  std::string layout;
  for (size_t chunk = 0; chunk < chunks;) {
    size_t run = 1;
    while (chunk + run < chunks && terms[chunk + run] == terms[chunk]) ++run;
    if (run >= 2) {  // middle chunks only: the first and the last are unique
      layout += "(" + terms[chunk] + "|)*" + std::to_string(run);
    } else {
      layout += terms[chunk];
      if (chunk + 1 < chunks) layout += "|";
    }
    chunk += run;
  }
  return layout;
}

}  // namespace stagecraft
