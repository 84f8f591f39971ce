#include "run/multimodal_setup.h"

#include <algorithm>

#include "memory/model_states.h"
#include "run/run_setup.h"

namespace stagecraft {
namespace {

// Last end − first start of a finished run (its makespan).
Time Span(const Trace& trace) {
  if (trace.timings.empty()) return Time();
  Time first = Time::Max();
  Time last;
  for (const TaskTiming& timing : trace.timings) {
    first = std::min(first, timing.start);
    last = std::max(last, timing.end);
  }
  return last - first;
}

// CheckVisionSpec and CheckEngramSharding start their messages with the key; point at where
// the config wrote it.
Error Located(const PreparedRun& run, const Error& error) {
  const std::string& message = error.message;
  const size_t colon = message.find(": ");
  if (colon == std::string::npos || message.rfind("multimodal", 0) != 0) return error;
  return Error{run.locations.Where(message.substr(0, colon)) + message.substr(colon + 2)};
}

int64_t LanguageHidden(const ModelSpec& model) {
  return model.is_transformer() ? model.transformer.hidden : model.dims.hidden;
}

Status PlanVision(const PreparedRun& run, MultimodalPlan& plan) {
  const Config& c = run.config;
  const VisionSpec& vision = c.multimodal.vision;
  const ParallelSpec& parallel = c.parallel;
  const int64_t replicas = static_cast<int64_t>(parallel.dp) * parallel.cp * parallel.tp;
  const Status checked = CheckVisionSpec(vision, c.cluster, parallel.world_size(), replicas);
  if (!checked.ok()) return Located(run, checked.error());
  const int64_t per_sample =
      static_cast<int64_t>(vision.images_per_sample) * vision.image_tokens.max;
  if (per_sample > c.model.seq_len) {
    return Error{run.locations.Where("multimodal.vision.image_tokens") + "up to " +
                 std::to_string(vision.images_per_sample) + " images x " +
                 std::to_string(vision.image_tokens.max) +
                 " tokens = " + std::to_string(per_sample) +
                 " image tokens do not fit a sample of seq_len " + std::to_string(c.model.seq_len) +
                 " (expected fewer or smaller images, or a longer sequence)"};
  }
  plan.vision = true;
  plan.vision_work = ComputeVisionWork(
      vision, run.schedule.num_microbatches, c.model.micro_batch_size, LanguageHidden(c.model),
      c.cluster.effective_flops_per_s(), c.model.seq_len, parallel.cp);
  if (vision.placement == VisionPlacement::kDisaggregated) {
    plan.extra_devices = static_cast<int64_t>(vision.devices) * replicas;
  }
  return Status::Ok();
}

Status PlanEngram(const PreparedRun& run, MultimodalPlan& plan) {
  const Config& c = run.config;
  const EngramSharding& engram = c.multimodal.engram;
  int32_t total = 0;
  if (c.model.is_layer_list() && !c.model.is_transformer()) {
    plan.engram_layers.assign(static_cast<size_t>(run.partition.num_stages()), 0);
    for (int32_t stage = 0; stage < run.partition.num_stages(); ++stage) {
      for (int32_t layer = run.partition.begin(stage); layer < run.partition.end(stage); ++layer) {
        if (c.model.layers[layer].engram) ++plan.engram_layers[stage];
      }
      total += plan.engram_layers[stage];
    }
  }
  const Status checked = CheckEngramSharding(engram, c.parallel.dp * c.parallel.cp, total);
  if (!checked.ok()) return Located(run, checked.error());
  if (!c.cluster.given) {
    return Error{run.locations.Where("multimodal.engram") +
                 "the Engram all-to-alls need a cluster to run on; add one (cluster: {preset: "
                 "h800x2}, stagecraft list presets)"};
  }
  plan.engram = true;
  const int64_t tokens = static_cast<int64_t>(run.schedule.num_microbatches) *
                         c.model.tokens_per_microbatch() / c.parallel.cp;
  // The owners are a stage's data-parallel peers; with pp stages per node-sized pipeline a
  // node holds devices_per_node / pp of them.
  const int32_t per_node = std::max(1, c.cluster.devices_per_node / std::max(1, c.parallel.pp));
  plan.engram_traffic = EngramIterationTraffic(EngramSpec{}, engram, tokens, c.cluster, per_node);
  return Status::Ok();
}

}  // namespace

Result<MultimodalPlan> PlanMultimodal(const PreparedRun& run) {
  MultimodalPlan plan;
  const MultimodalSpec& multimodal = run.config.multimodal;
  if (!multimodal.vision.given && !multimodal.engram.given) return plan;
  if (!run.config.model.is_layer_list()) {
    return Error{run.locations.Where("multimodal") +
                 "the multimodal pieces need a model described by its layers or dimensions "
                 "(model.type: layers or transformer); this model is uniform"};
  }
  if (multimodal.vision.given) STAGECRAFT_RETURN_IF_ERROR(PlanVision(run, plan));
  if (multimodal.engram.given) STAGECRAFT_RETURN_IF_ERROR(PlanEngram(run, plan));
  return plan;
}

Result<VisionPlacementStats> ApplyMultimodal(const PreparedRun& run, TaskGraph& graph) {
  const MultimodalPlan& plan = run.multimodal;
  if (plan.engram) AddEngramExchanges(plan.engram_layers, plan.engram_traffic, graph);
  if (!plan.vision) return VisionPlacementStats{};
  const ParallelSpec& parallel = run.config.parallel;
  return PlaceVision(run.config.multimodal.vision, plan.vision_work, graph,
                     static_cast<int64_t>(parallel.dp) * parallel.cp * parallel.tp);
}

MultimodalInfo DescribeMultimodal(const PreparedRun& run, const TaskGraph& graph,
                                  const Trace& trace, const VisionPlacementStats& stats) {
  MultimodalInfo info;
  const MultimodalPlan& plan = run.multimodal;
  const Config& c = run.config;
  if (plan.vision) {
    const VisionSpec& vision = c.multimodal.vision;
    const VisionWork& work = plan.vision_work;
    info.vision = true;
    info.placement = VisionPlacementName(vision.placement);
    info.image_tokens = FormatImageTokens(vision.image_tokens);
    info.images = work.image_count;
    info.vision_flops = work.forward_flops + work.backward_flops;
    for (size_t mb = 0; mb < work.forward.size(); ++mb) {
      info.vision_forward += work.forward[mb];
      info.vision_backward += work.backward[mb];
    }
    info.vision_on_first_rank = stats.work_on_first_rank;
    info.encoder_devices = stats.encoder_devices;
    info.prologue = static_cast<int32_t>(stats.prologue.size());
    info.forward_in_bubbles = stats.forward_in_bubbles;
    info.backward_in_bubbles = stats.backward_in_bubbles;
    info.encoder_params = work.params;
    info.vision_cp = c.parallel.cp;
    info.vision_cp_imbalance = work.cp_imbalance;
    info.encoder_reduce = stats.encoder_reduce;
    double most = 0;
    for (double params : stats.params_per_rank) most = std::max(most, params);
    info.encoder_state_bytes = ShardedModelStates(most, c.parallel.precision, 0, 1).total();
  }
  if (plan.engram) {
    const EngramSharding& engram = c.multimodal.engram;
    info.engram = true;
    info.engram_owners = engram.owners;
    for (int32_t layers : plan.engram_layers) info.engram_layers += layers;
    info.engram_host_memory = engram.host_memory;
    info.engram_id_bytes = plan.engram_traffic.id_bytes;
    info.engram_row_bytes = plan.engram_traffic.row_bytes;
    info.engram_gradient_bytes = plan.engram_traffic.gradient_bytes;
    info.engram_owner_bytes =
        EngramOwnerBytes(EngramTables(engram, info.engram_layers), engram.owners);
    const EngramExposure exposure = MeasureEngramExposure(graph, trace);
    info.engram_fetch = exposure.fetch;
    info.engram_fetch_delay = exposure.fetch_delay;
    info.engram_gradient = exposure.gradient;
    // The same graph with the Engram all-to-alls taking no time: what they add to the step.
    TaskGraph without = graph;
    for (Task& task : without.tasks) {
      if (task.payload == PayloadKind::kEngramFetch ||
          task.payload == PayloadKind::kEngramGradient) {
        task.duration = Time();
      }
    }
    const Trace free = Simulate(without);
    if (!free.deadlock) info.engram_exposed = Span(trace) - Span(free);
  }
  return info;
}

}  // namespace stagecraft
