#include "commands/validated_serving.h"

#include <cmath>
#include <sstream>

#include "core/units.h"
#include "model/transformer.h"
#include "run/validated_runs.h"

namespace stagecraft {

const char* ServedFiguresCsv();  // generated from bench/validation/serving-results.csv

namespace {

// The validate --serving --csv columns: source,run,metric,kind,measured,predicted,error,
// speed_bias, then kServedFigureColumns.
constexpr size_t kColumns = 16;

std::string Billions(double params) { return FormatFixed(params / 1e9, 1) + "B"; }

const char* ClientName(Workload::Client client) {
  switch (client) {
    case Workload::Client::kOpen:
      return "open";
    case Workload::Client::kClosed:
      return "closed";
    case Workload::Client::kOffline:
      return "offline";
  }
  return "open";
}

}  // namespace

std::string ServedFigureFields(const ServedFigure& figure) {
  return figure.device + "," + FormatFixed(figure.params / 1e9, 3) + "," +
         std::to_string(figure.gpus) + "," + std::to_string(figure.tp) + "," +
         std::to_string(figure.pp) + "," + std::to_string(figure.ep) + "," +
         (figure.fp8 ? "1" : "0") + "," + figure.client;
}

ServedFigure ServedFeaturesOf(const ModelSpec& model, const ClusterSpec& cluster,
                              const ServeSetup& setup) {
  ServedFigure figure;
  figure.device = cluster.given ? cluster.device : "none";
  figure.params = model.is_transformer() ? TransformerParams(model.transformer, model.seq_len) : 0;
  const int64_t instances = setup.disaggregated()
                                ? int64_t{setup.prefill_instances} + setup.decode_instances
                                : setup.shape.replicas;
  figure.gpus = static_cast<int32_t>(
      std::min<int64_t>(setup.shape.gpus_per_replica() * instances, int64_t{1} << 30));
  figure.tp = setup.shape.tp;
  figure.pp = setup.shape.pp;
  figure.ep = setup.shape.ep;
  figure.fp8 = setup.engine.fp8_compute;
  figure.client = ClientName(setup.workload.client);
  return figure;
}

Result<std::vector<ServedFigure>> ParseServedFigures(const std::string& csv) {
  auto table =
      ParseResultsTable(csv, kColumns, {6, 9, 10, 11, 12, 13, 14}, "validated serving figures",
                        "stagecraft validate --serving --csv bench/validation/serving-results.csv");
  if (!table.ok()) return table.error();
  std::vector<ServedFigure> figures;
  for (const ResultsRow& row : table.value()) {
    const std::vector<double>& values = row.numbers;
    ServedFigure figure;
    figure.run = row.fields[1];
    figure.kind = row.fields[3];
    figure.device = row.fields[8];
    figure.error = values[0];
    figure.params = values[1] * 1e9;
    figure.gpus = static_cast<int32_t>(values[2]);
    figure.tp = static_cast<int32_t>(values[3]);
    figure.pp = static_cast<int32_t>(values[4]);
    figure.ep = static_cast<int32_t>(values[5]);
    figure.fp8 = values[6] != 0;
    figure.client = row.fields[15];
    figures.push_back(std::move(figure));
  }
  return figures;
}

const std::vector<ServedFigure>& ServedFigures() {
  static const std::vector<ServedFigure> kFigures = [] {
    auto parsed = ParseServedFigures(ServedFiguresCsv());
    return parsed.ok() ? std::move(parsed).value() : std::vector<ServedFigure>{};
  }();
  return kFigures;
}

ValidationInfo NearestServedFigures(const ServedFigure& deployment,
                                    const std::vector<ServedFigure>& suite) {
  ValidationInfo info;
  info.given = true;
  info.noun = "figure";
  info.doc = "doc/serving.md";
  if (deployment.params <= 0) {
    info.basis = "no validated serving figures of layer-list models (the suite is transformers)";
    info.outside = "a layer-list model";
    return info;
  }
  const std::string generation = DeviceGeneration(deployment.device);
  std::vector<const ServedFigure*> same;
  for (const ServedFigure& figure : suite) {
    if (DeviceGeneration(figure.device) == generation) same.push_back(&figure);
  }
  if (same.empty()) {
    info.outside = "device " + deployment.device +
                   " (no validated serving figures on its "
                   "generation)";
    info.basis = "no validated serving figure on " + generation;
    return info;
  }
  double most_gpus = 0;
  double least_params = same.front()->params;
  double most_params = 0;
  for (const ServedFigure* figure : same) {
    most_gpus = std::max(most_gpus, static_cast<double>(figure->gpus));
    least_params = std::min(least_params, figure->params);
    most_params = std::max(most_params, figure->params);
  }
  if (deployment.gpus > most_gpus) {
    info.outside = std::to_string(deployment.gpus) + " GPUs (most validated on " + generation +
                   ": " + FormatFixed(most_gpus, 0) + ")";
  } else if (deployment.params > 1.5 * most_params || deployment.params < least_params / 1.5) {
    info.outside = Billions(deployment.params) + " parameters (validated on " + generation + ": " +
                   Billions(least_params) + " to " + Billions(most_params) + ")";
  }
  info.in_range = info.outside.empty();
  const auto near_size = [&](const ServedFigure& f) {
    return f.params <= 4 * deployment.params && 4 * f.params >= deployment.params;
  };
  const auto same_ep = [&](const ServedFigure& f) { return (f.ep > 1) == (deployment.ep > 1); };
  const struct { bool ep, size; } tiers[] = {{true, true}, {false, true}, {false, false}};
  std::vector<const ServedFigure*> nearest;
  for (const auto& tier : tiers) {
    nearest.clear();
    for (const ServedFigure* figure : same) {
      if (figure->client != deployment.client) continue;
      if (tier.ep && !same_ep(*figure)) continue;
      if (tier.size && !near_size(*figure)) continue;
      nearest.push_back(figure);
    }
    if (nearest.empty()) continue;
    info.basis =
        generation + ", " + deployment.client + " client" +
        (tier.ep ? (deployment.ep > 1 ? ", expert parallel" : ", no expert parallelism") : "") +
        (tier.size ? ", " + Billions(deployment.params / 4) + "-" +
                         Billions(4 * deployment.params) + " parameters"
                   : "");
    break;
  }
  if (nearest.empty()) {
    info.basis = "no validated serving figure on " + generation + " with the " + deployment.client +
                 " client";
    return info;
  }
  info.similar_runs = static_cast<int32_t>(nearest.size());
  double absolute = 0;
  for (const ServedFigure* figure : nearest) {
    absolute += std::abs(figure->error);
    if (std::abs(figure->error) > std::abs(info.worst)) info.worst = figure->error;
  }
  info.mape = absolute / static_cast<double>(nearest.size());
  return info;
}

}  // namespace stagecraft
