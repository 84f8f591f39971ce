#include "commands/checkpoint_command.h"

#include <algorithm>
#include <optional>
#include <ostream>
#include <sstream>

#include "analysis/memory.h"
#include "commands/commands.h"
#include "core/units.h"
#include "fault/checkpoint_manifest.h"
#include "fault/checkpoint_save.h"
#include "fault/reshard.h"
#include "report/chrome_trace.h"
#include "report/json_writer.h"
#include "run/simulate.h"

namespace stagecraft {
namespace {

std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, ',')) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

// The saving iteration's figures (--storage), in seconds.
void WriteSaveJson(const std::string& tier, bool synchronous, const SavingIteration& saving,
                   JsonWriter& writer) {
  writer.Key("save").BeginObject();
  writer.Key("tier").String(tier);
  writer.Key("synchronous").Bool(synchronous);
  writer.Key("copy_s").Fixed(saving.costs.copy_s, 3);
  writer.Key("write_s").Fixed(saving.costs.write_s, 3);
  writer.Key("blocking_s").Fixed(saving.costs.blocking_s, 3);
  writer.Key("persist_s").Fixed(saving.costs.persist_s, 3);
  writer.Key("load_s").Fixed(saving.costs.load_s, 3);
  writer.Key("slowest_rank").Int(saving.slowest_rank);
  writer.Key("step_s").Fixed(static_cast<double>(saving.plain_step.ns()) / 1e9, 6);
  writer.Key("saving_step_s")
      .Fixed(static_cast<double>(saving.outcome.metrics.makespan.ns()) / 1e9, 6);
  writer.EndObject();
}

void WriteJson(const CheckpointManifest& manifest, const CheckpointSpec& spec,
               const SavingIteration* saving, std::ostream& out) {
  JsonWriter writer(/*pretty=*/true);
  writer.BeginObject();
  writer.Key("total_bytes").Fixed(manifest.total_bytes, 0);
  writer.Key("files").Int(manifest.files);
  writer.Key("devices_per_rank").Int(manifest.devices_per_rank);
  if (saving != nullptr) WriteSaveJson(*spec.storage, spec.sync_save, *saving, writer);
  writer.Key("ranks").BeginArray();
  for (size_t index = 0; index < manifest.ranks.size(); ++index) {
    const RankManifest& row = manifest.ranks[index];
    writer.BeginObject();
    writer.Key("rank").Int(row.rank);
    writer.Key("bytes").Fixed(row.saved_bytes, 0);
    writer.Key("model_state_bytes").Fixed(row.model_state_bytes, 0);
    if (saving != nullptr) writer.Key("save_s").Fixed(saving->rank_save_s[index], 3);
    writer.Key("entries").BeginObject();
    for (const ManifestEntry& entry : row.entries) {
      writer.Key(entry.name).Fixed(entry.saved ? entry.bytes : 0.0, 0);
    }
    writer.EndObject();
    writer.EndObject();
  }
  writer.EndArray();
  writer.Key("missing").BeginArray();
  for (const ManifestEntry& entry : manifest.missing) writer.String(entry.name);
  writer.EndArray();
  writer.EndObject();
  out << writer.text() << "\n";
}

// --storage: the save's costs and the saving iteration against the plain one.
void WriteSaveText(const CheckpointSpec& spec, const SavingIteration& saving, std::ostream& out) {
  const SaveCosts& costs = saving.costs;
  out << "  storage         " << *spec.storage
      << (spec.sync_save ? " (synchronous)" : " (asynchronous)")
      << ": each device's shard copied to host at "
      << FormatFixed(HostCopyBytesPerSecond() / 1e9, 1) << " GB/s"
      << (spec.sync_save ? " and its share written (save_s); " : " (save_s), then ")
      << FormatGib(costs.total_bytes) << " GiB written"
      << (spec.sync_save ? "" : " in the background") << " in " << FormatFixed(costs.write_s, 3)
      << " s; loaded in " << FormatFixed(costs.load_s, 3) << " s\n";
  const Time step = saving.plain_step;
  const Time saving_step = saving.outcome.metrics.makespan;
  const double slowest = *std::max_element(saving.rank_save_s.begin(), saving.rank_save_s.end());
  out << "  saving step     " << FormatFixed(saving_step.ms(), 3) << " ms against "
      << FormatFixed(step.ms(), 3) << " ms without the save (+"
      << FormatFixed((saving_step - step).ms(), 3) << " ms); the slowest, rank "
      << saving.slowest_rank << ", blocks " << FormatFixed(slowest, 3)
      << " s on its data-parallel stream after the optimizer step\n";
}

void WriteText(const PreparedRun& run, const CheckpointManifest& manifest,
               const CheckpointSpec& spec, const SavingIteration* saving, std::ostream& out) {
  out << "stagecraft checkpoint: " << run.label << "\n";
  out << "  layout          one shard per device (PyTorch DCP __RANK_0.distcp, Megatron "
         "dist-checkpointing): "
      << manifest.files - 1 << " files plus .metadata; " << manifest.devices_per_rank
      << " devices behind each row (tp x cp x dp)\n";
  out << "  total           " << FormatGib(manifest.total_bytes)
      << " GiB unique (replicated states written once)\n";
  bool engram = false;
  for (const RankManifest& row : manifest.ranks) {
    for (const ManifestEntry& entry : row.entries) engram |= entry.name == "engram-tables";
  }
  out << "  rank  weights_GiB  optim_GiB" << (engram ? "  engram_GiB" : "")
      << "  small_B  saved_GiB  grads_GiB (not saved)" << (saving != nullptr ? "  save_s" : "")
      << "\n";
  for (size_t index = 0; index < manifest.ranks.size(); ++index) {
    const RankManifest& row = manifest.ranks[index];
    double weights = 0;
    double optimizer = 0;
    double small = 0;
    double gradients = 0;
    double tables = 0;
    for (const ManifestEntry& entry : row.entries) {
      if (!entry.needed) {
        gradients += entry.bytes;
      } else if (!entry.saved) {
        continue;
      } else if (entry.name == "engram-tables") {
        tables += entry.bytes;
      } else if (entry.name == "weights") {
        weights += entry.bytes;
      } else if (entry.name == "master-weights" || entry.name == "adam-m" ||
                 entry.name == "adam-v") {
        optimizer += entry.bytes;
      } else {
        small += entry.bytes;
      }
    }
    out << PadLeft(std::to_string(row.rank), 6) << PadLeft(FormatGib(weights), 13)
        << PadLeft(FormatGib(optimizer), 11)
        << (engram ? PadLeft(FormatGib(tables), 12) : std::string())
        << PadLeft(FormatFixed(small, 0), 9) << PadLeft(FormatGib(row.saved_bytes), 11)
        << PadLeft(FormatGib(gradients), 11)
        << (saving != nullptr ? PadLeft(FormatFixed(saving->rank_save_s[index], 3), 20)
                              : std::string())
        << "\n";
  }
  out << "  small states    optimizer-step, lr-scheduler, rng-cpu, rng-cuda"
      << (run.config.parallel.tp > 1 ? ", rng-tp" : "")
      << (run.config.parallel.precision == TrainingPrecision::kFp16 ? ", loss-scaler" : "")
      << ", data-position (per data-parallel rank)\n";
  if (run.multimodal.vision) {
    out << "  vision encoder  its states are in weights_GiB and optim_GiB, on the devices that "
           "hold it (as stagecraft memory counts them)\n";
  }
  if (saving != nullptr) WriteSaveText(spec, *saving, out);
  if (manifest.missing.empty()) {
    out << "  resume          exact: every state the next step reads is saved\n";
  } else {
    out << "  resume          NOT exact: the resumed run diverges from the uninterrupted one\n";
    for (const ManifestEntry& entry : manifest.missing) {
      out << "    missing " << entry.name << ": " << entry.diverges << "\n";
    }
  }
}

std::string Layout(int32_t tp, int32_t pp, int32_t dp, int32_t cp, int32_t ep, bool moe) {
  return "tp " + std::to_string(tp) + " x pp " + std::to_string(pp) + " x dp " +
         std::to_string(dp) + (cp > 1 ? " x cp " + std::to_string(cp) : std::string()) +
         (moe ? " (ep " + std::to_string(ep) + ")" : std::string());
}

// "stage/tp", and "/ep" for a MoE model's shards.
std::string ShardName(int32_t stage, int32_t tp, int32_t ep, bool moe) {
  return std::to_string(stage) + "/" + std::to_string(tp) +
         (moe ? "/" + std::to_string(ep) : std::string());
}

// "dense", "replicated" or "experts A-B": the part of its layers a read takes.
std::string PartName(const ShardRead& read) {
  switch (read.part) {
    case ReadPart::kDense:
      return "dense";
    case ReadPart::kReplicated:
      return "replicated";
    case ReadPart::kExperts:
      return "experts " + std::to_string(read.first_expert) + "-" +
             std::to_string(read.last_expert);
  }
  return "?";
}

// --reshard-to with --storage: each new shard's load, read by its replicas at their share of
// the tier's read rate (fault/storage.h DeviceReadBytesPerSecond).
struct ReshardLoad {
  std::string tier;
  double device_read_bytes_per_s = 0;
  int64_t replicas = 1;  // devices reading each new shard (dp x cp / ep of the new layout)
  std::vector<double> shard_load_s;  // [shard of plan.shards]
  size_t slowest = 0;                // index into plan.shards
};

ReshardLoad EstimateReshardLoad(const ReshardPlan& plan, const PreparedRun& after,
                                const StorageTier& tier) {
  const ParallelSpec& parallel = after.config.parallel;
  ReshardLoad load;
  load.tier = tier.name;
  const int64_t devices =
      static_cast<int64_t>(parallel.pp) * parallel.tp * parallel.dp * parallel.cp;
  // A MoE shard (tp, ep) is held by the dp x cp / ep devices of its expert-parallel rank.
  load.replicas = std::max<int64_t>(
      1, static_cast<int64_t>(parallel.dp) * parallel.cp / (plan.moe ? plan.new_ep : 1));
  load.device_read_bytes_per_s = DeviceReadBytesPerSecond(tier, after.config.cluster, devices);
  for (const NewShard& shard : plan.shards) {
    const double rate = load.device_read_bytes_per_s * static_cast<double>(load.replicas);
    load.shard_load_s.push_back(rate > 0 ? shard.params * plan.bytes_per_param / rate : 0.0);
    if (load.shard_load_s.back() > load.shard_load_s[load.slowest]) {
      load.slowest = load.shard_load_s.size() - 1;
    }
  }
  return load;
}

void WriteReshard(const PreparedRun& before, const PreparedRun& after, const ReshardPlan& plan,
                  const ReshardLoad* load, std::ostream& out) {
  out << "stagecraft checkpoint: " << before.label << " resumed on " << after.label << "\n";
  out << "  layouts         "
      << Layout(plan.old_tp, plan.old_pp, plan.old_dp, plan.old_cp, plan.old_ep, plan.moe) << " -> "
      << Layout(plan.new_tp, plan.new_pp, plan.new_dp, plan.new_cp, plan.new_ep, plan.moe) << "\n";
  out << "  coverage        "
      << (plan.covers_exactly_once ? "every layer's parameters read exactly once"
                                   : "BROKEN: a layer's ranges overlap or leave a gap")
      << " (" << plan.layers << " layers, " << FormatFixed(plan.params / 1e9, 3)
      << "e9 parameters)\n";
  const std::string shard_kind = plan.moe ? "stage/tp/ep" : "stage/tp";
  out << "  reads           new shard " << shard_kind << " <- old shard " << shard_kind
      << ": its layers, "
      << (plan.moe || plan.replicated
              ? "the part read (dense: sliced by tp; replicated: whole on every tp rank; routed "
                "experts), the range of each part's or expert's parameters"
              : "the range of each layer's parameters")
      << ", GiB (weights and optimizer state, " << FormatFixed(plan.bytes_per_param, 0)
      << " B per parameter)\n";
  for (const NewShard& shard : plan.shards) {
    bool first = true;
    for (const ShardRead& read : shard.reads) {
      const std::string target = ShardName(shard.stage, shard.tp, shard.ep, plan.moe);
      const std::string part =
          !plan.moe && !plan.replicated ? std::string() : "  " + PartName(read);
      out << "    " << PadRight(first ? target : "", plan.moe ? 8 : 6) << "<- "
          << ShardName(read.old_stage, read.old_tp, read.old_ep, plan.moe) << "  layers "
          << read.first_layer << "-" << read.last_layer << part << "  ["
          << FormatFixed(read.begin_share, 4) << ", " << FormatFixed(read.end_share, 4) << ")  "
          << FormatGib(read.params * plan.bytes_per_param) << "\n";
      first = false;
    }
  }
  out << "  moved           " << FormatGib(plan.params * plan.bytes_per_param)
      << " GiB: each layer's weights and optimizer state read once per data-parallel group "
         "(the other replicas get the weights by broadcast)"
      << (load == nullptr ? "; --storage TIER gives the load time" : "") << "\n";
  if (load != nullptr && !plan.shards.empty()) {
    const NewShard& slowest = plan.shards[load->slowest];
    out << "  load            " << load->tier << ": each new shard read by its " << load->replicas
        << " replica(s) (dp x cp" << (plan.moe ? " / ep" : "") << ") at "
        << FormatFixed(load->device_read_bytes_per_s / 1e9, 3) << " GB/s each; the slowest, "
        << ShardName(slowest.stage, slowest.tp, slowest.ep, plan.moe) << ", reads "
        << FormatGib(slowest.params * plan.bytes_per_param) << " GiB in "
        << FormatFixed(load->shard_load_s[load->slowest], 3) << " s\n";
  }
}

void WriteReshardJson(const ReshardPlan& plan, const ReshardLoad* load, std::ostream& out) {
  JsonWriter writer(/*pretty=*/true);
  writer.BeginObject();
  // cp only when a layout has context parallelism, ep for MoE models.
  const bool cp = plan.old_cp > 1 || plan.new_cp > 1;
  const auto layout = [&](const char* key, int32_t tp, int32_t pp, int32_t dp, int32_t cp_ranks,
                          int32_t ep) {
    writer.Key(key).BeginObject();
    writer.Key("tp").Int(tp).Key("pp").Int(pp).Key("dp").Int(dp);
    if (cp) writer.Key("cp").Int(cp_ranks);
    if (plan.moe) writer.Key("ep").Int(ep);
    writer.EndObject();
  };
  layout("from", plan.old_tp, plan.old_pp, plan.old_dp, plan.old_cp, plan.old_ep);
  layout("to", plan.new_tp, plan.new_pp, plan.new_dp, plan.new_cp, plan.new_ep);
  writer.Key("covers_exactly_once").Bool(plan.covers_exactly_once);
  writer.Key("params").Fixed(plan.params, 0);
  writer.Key("bytes").Fixed(plan.params * plan.bytes_per_param, 0);
  if (load != nullptr) {
    writer.Key("storage").String(load->tier);
    writer.Key("load_s").Fixed(load->shard_load_s.empty() ? 0.0 : load->shard_load_s[load->slowest],
                               3);
  }
  writer.Key("shards").BeginArray();
  for (size_t index = 0; index < plan.shards.size(); ++index) {
    const NewShard& shard = plan.shards[index];
    writer.BeginObject();
    writer.Key("stage").Int(shard.stage).Key("tp").Int(shard.tp);
    if (plan.moe) writer.Key("ep").Int(shard.ep);
    if (load != nullptr) writer.Key("load_s").Fixed(load->shard_load_s[index], 3);
    writer.Key("reads").BeginArray();
    for (const ShardRead& read : shard.reads) {
      writer.BeginObject();
      writer.Key("old_stage").Int(read.old_stage).Key("old_tp").Int(read.old_tp);
      if (plan.moe) writer.Key("old_ep").Int(read.old_ep);
      if (plan.moe || plan.replicated) {
        writer.Key("part").String(read.part == ReadPart::kExperts ? "experts" : PartName(read));
      }
      writer.Key("first_layer").Int(read.first_layer).Key("last_layer").Int(read.last_layer);
      if (plan.moe) {
        writer.Key("first_expert").Int(read.first_expert);
        writer.Key("last_expert").Int(read.last_expert);
      }
      writer.Key("begin").Fixed(read.begin_share, 6).Key("end").Fixed(read.end_share, 6);
      writer.Key("bytes").Fixed(read.params * plan.bytes_per_param, 0);
      writer.EndObject();
    }
    writer.EndArray();
    writer.EndObject();
  }
  writer.EndArray();
  writer.EndObject();
  out << writer.text() << "\n";
}

// --reshard-to: the other layout must hold the model (memory), then the reads (and with
// --storage, the load from `tier`).
Status RunReshard(const CheckpointSpec& spec, const std::optional<StorageTier>& tier,
                  const PreparedRun& before, Transcript& transcript) {
  RunSpec other;
  other.config_path = *spec.reshard_to;
  auto prepared = PrepareRun(other);
  if (!prepared.ok()) return prepared.error();
  const PreparedRun& after = prepared.value();
  RunOutcome simulated;
  STAGECRAFT_RETURN_IF_ERROR(SimulateRun(after, simulated, transcript.err()));
  const MemoryReport memory = ComputeMemory(after, simulated);
  if (!memory.verdict.fits) {
    return MakeError(ErrorKind::kInfeasible,
                     "--reshard-to: " + after.label +
                         " cannot hold the model: " + OverCapacityMessage(after, memory.verdict));
  }
  auto plan = PlanReshard(before, after);
  if (!plan.ok()) return plan.error();
  std::optional<ReshardLoad> load;
  if (tier) load = EstimateReshardLoad(plan.value(), after, *tier);
  const ReshardLoad* load_ptr = load ? &*load : nullptr;
  if (spec.json) {
    WriteReshardJson(plan.value(), load_ptr, transcript.out());
  } else {
    WriteReshard(before, after, plan.value(), load_ptr, transcript.out());
  }
  return Status::Ok();
}

// The flags that go with --storage, checked before anything runs; the tier --storage names.
Result<std::optional<StorageTier>> CheckSaveFlags(const CheckpointSpec& spec) {
  if (spec.sync_save && !spec.storage) {
    return Error{
        "--sync-save: chooses how --storage saves; add --storage TIER (e.g. --storage "
        "tectonic --sync-save)"};
  }
  if (spec.trace_path && spec.trace_path->empty()) {
    return Error{"--trace: needs a file name (e.g. --trace save.json)"};
  }
  if (spec.trace_path && !spec.storage) {
    return Error{
        "--trace: draws the iteration that ends in a save; add --storage TIER (e.g. "
        "--storage tectonic --trace save.json)"};
  }
  if (spec.reshard_to && (spec.sync_save || spec.trace_path)) {
    return Error{std::string(spec.sync_save ? "--sync-save" : "--trace") +
                 ": prices the save of CONFIG; with --reshard-to, --storage gives the load only"};
  }
  if (!spec.storage) return std::optional<StorageTier>();
  auto tier = FindStorageTier(*spec.storage);
  if (!tier.ok()) return tier.error();
  return std::optional<StorageTier>(tier.value());
}

// --storage: the saving iteration simulated, its trace written when asked.
Result<SavingIteration> SimulateSave(const CheckpointSpec& spec, const StorageTier& tier,
                                     const PreparedRun& run, const RunOutcome& plain,
                                     const CheckpointManifest& manifest) {
  auto saving = SimulateSavingIteration(run, plain, manifest, tier, spec.sync_save);
  if (!saving.ok()) return saving.error();
  if (spec.trace_path) {
    const RunOutcome& outcome = saving.value().outcome;
    const MemoryTimeline memory =
        ComputeMemoryTimeline(run.schedule, run.stage_costs, outcome.graph, outcome.trace);
    const Status written = spec.run.files.write(
        *spec.trace_path, FormatChromeTrace(outcome.graph, outcome.trace, &memory));
    if (!written.ok()) return Error{"--trace: " + written.error().message};
  }
  return saving;
}

}  // namespace

Status RunCheckpoint(const CheckpointSpec& spec, Transcript& transcript) {
  auto tier = CheckSaveFlags(spec);
  if (!tier.ok()) return tier.error();
  RunSpec run_spec = spec.run;
  run_spec.trace = spec.trace_path.has_value();  // the saving iteration's trace
  auto prepared = PrepareRun(run_spec);
  if (!prepared.ok()) return prepared.error();
  const PreparedRun& run = prepared.value();
  if (spec.reshard_to) {
    if (!spec.omit.empty()) {
      return Error{"--omit: checks the manifest of CONFIG; run it without --reshard-to"};
    }
    return RunReshard(spec, tier.value(), run, transcript);
  }
  RunOutcome simulated;
  STAGECRAFT_RETURN_IF_ERROR(SimulateRun(run, simulated, transcript.err()));
  const MemoryReport memory = ComputeMemory(run, simulated);
  if (!memory.verdict.states_known || memory.ranks.empty()) {
    return Error{"checkpoint: the model states of " + run.label +
                 " are not derived (model.type transformer or layers is needed; a uniform "
                 "model has no parameters to save)"};
  }
  auto manifest = BuildManifest(run, memory, SplitCommas(spec.omit));
  if (!manifest.ok()) return manifest.error();
  std::optional<SavingIteration> saving;
  if (tier.value()) {
    auto simulated_save = SimulateSave(spec, *tier.value(), run, simulated, manifest.value());
    if (!simulated_save.ok()) return simulated_save.error();
    saving = std::move(simulated_save.value());
  }
  const SavingIteration* save = saving ? &*saving : nullptr;
  if (spec.json) {
    WriteJson(manifest.value(), spec, save, transcript.out());
  } else {
    WriteText(run, manifest.value(), spec, save, transcript.out());
  }
  if (!manifest.value().missing.empty()) {
    return MakeError(ErrorKind::kViolation,
                     "checkpoint: " + std::to_string(manifest.value().missing.size()) +
                         " needed state(s) left out (--omit): the resume is not exact");
  }
  return Status::Ok();
}

}  // namespace stagecraft
