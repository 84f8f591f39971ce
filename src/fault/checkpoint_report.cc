#include "fault/checkpoint_report.h"

#include <ostream>
#include <sstream>

#include "core/units.h"
#include "fault/checkpoint_manifest.h"
#include "fault/reshard.h"
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

void WriteJson(const CheckpointManifest& manifest, std::ostream& out) {
  JsonWriter writer(/*pretty=*/true);
  writer.BeginObject();
  writer.Key("total_bytes").Fixed(manifest.total_bytes, 0);
  writer.Key("files").Int(manifest.files);
  writer.Key("devices_per_rank").Int(manifest.devices_per_rank);
  writer.Key("ranks").BeginArray();
  for (const RankManifest& row : manifest.ranks) {
    writer.BeginObject();
    writer.Key("rank").Int(row.rank);
    writer.Key("bytes").Fixed(row.saved_bytes, 0);
    writer.Key("model_state_bytes").Fixed(row.model_state_bytes, 0);
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

void WriteText(const PreparedRun& run, const CheckpointManifest& manifest, std::ostream& out) {
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
      << "  small_B  saved_GiB  grads_GiB (not saved)\n";
  for (const RankManifest& row : manifest.ranks) {
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
        << PadLeft(FormatGib(gradients), 11) << "\n";
  }
  out << "  small states    optimizer-step, lr-scheduler, rng-cpu, rng-cuda"
      << (run.config.parallel.tp > 1 ? ", rng-tp" : "")
      << (run.config.parallel.precision == TrainingPrecision::kFp16 ? ", loss-scaler" : "")
      << ", data-position (per data-parallel rank)\n";
  if (run.multimodal.vision) {
    out << "  vision encoder  its states are in weights_GiB and optim_GiB, on the devices that "
           "hold it (as stagecraft memory counts them)\n";
  }
  if (manifest.missing.empty()) {
    out << "  resume          exact: every state the next step reads is saved\n";
  } else {
    out << "  resume          NOT exact: the resumed run diverges from the uninterrupted one\n";
    for (const ManifestEntry& entry : manifest.missing) {
      out << "    missing " << entry.name << ": " << entry.diverges << "\n";
    }
  }
}

std::string Layout(int32_t tp, int32_t pp, int32_t dp) {
  return "tp " + std::to_string(tp) + " x pp " + std::to_string(pp) + " x dp " + std::to_string(dp);
}

void WriteReshard(const PreparedRun& before, const PreparedRun& after, const ReshardPlan& plan,
                  std::ostream& out) {
  out << "stagecraft checkpoint: " << before.label << " resumed on " << after.label << "\n";
  out << "  layouts         " << Layout(plan.old_tp, plan.old_pp, plan.old_dp) << " -> "
      << Layout(plan.new_tp, plan.new_pp, plan.new_dp) << "\n";
  out << "  coverage        "
      << (plan.covers_exactly_once ? "every layer's parameters read exactly once"
                                   : "BROKEN: a layer's ranges overlap or leave a gap")
      << " (" << plan.layers << " layers, " << FormatFixed(plan.params / 1e9, 3)
      << "e9 parameters)\n";
  out << "  reads           new shard stage/tp <- old shard stage/tp: its layers, the range of "
         "each layer's parameters, GiB (weights and optimizer state, "
      << FormatFixed(plan.bytes_per_param, 0) << " B per parameter)\n";
  for (const NewShard& shard : plan.shards) {
    bool first = true;
    for (const ShardRead& read : shard.reads) {
      const std::string target = std::to_string(shard.stage) + "/" + std::to_string(shard.tp);
      out << "    " << PadRight(first ? target : "", 6) << "<- " << read.old_stage << "/"
          << read.old_tp << "  layers " << read.first_layer << "-" << read.last_layer << "  ["
          << FormatFixed(read.begin_share, 4) << ", " << FormatFixed(read.end_share, 4) << ")  "
          << FormatGib(read.params * plan.bytes_per_param) << "\n";
      first = false;
    }
  }
  out << "  moved           " << FormatGib(plan.params * plan.bytes_per_param)
      << " GiB: each layer's weights and optimizer state read once per data-parallel group "
         "(the other replicas get the weights by broadcast); the load time needs a storage "
         "tier, not modelled yet\n";
}

void WriteReshardJson(const ReshardPlan& plan, std::ostream& out) {
  JsonWriter writer(/*pretty=*/true);
  writer.BeginObject();
  const auto layout = [&writer](const char* key, int32_t tp, int32_t pp, int32_t dp) {
    writer.Key(key).BeginObject();
    writer.Key("tp").Int(tp).Key("pp").Int(pp).Key("dp").Int(dp);
    writer.EndObject();
  };
  layout("from", plan.old_tp, plan.old_pp, plan.old_dp);
  layout("to", plan.new_tp, plan.new_pp, plan.new_dp);
  writer.Key("covers_exactly_once").Bool(plan.covers_exactly_once);
  writer.Key("params").Fixed(plan.params, 0);
  writer.Key("bytes").Fixed(plan.params * plan.bytes_per_param, 0);
  writer.Key("shards").BeginArray();
  for (const NewShard& shard : plan.shards) {
    writer.BeginObject();
    writer.Key("stage").Int(shard.stage).Key("tp").Int(shard.tp);
    writer.Key("reads").BeginArray();
    for (const ShardRead& read : shard.reads) {
      writer.BeginObject();
      writer.Key("old_stage").Int(read.old_stage).Key("old_tp").Int(read.old_tp);
      writer.Key("first_layer").Int(read.first_layer).Key("last_layer").Int(read.last_layer);
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

// --reshard-to: the other layout must hold the model (memory), then the reads.
Status RunReshard(const CheckpointSpec& spec, const PreparedRun& before, Transcript& transcript) {
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
  if (spec.json) {
    WriteReshardJson(plan.value(), transcript.out());
  } else {
    WriteReshard(before, after, plan.value(), transcript.out());
  }
  return Status::Ok();
}

}  // namespace

Status RunCheckpoint(const CheckpointSpec& spec, Transcript& transcript) {
  auto prepared = PrepareRun(spec.run);
  if (!prepared.ok()) return prepared.error();
  const PreparedRun& run = prepared.value();
  if (spec.reshard_to) {
    if (!spec.omit.empty()) {
      return Error{"--omit: checks the manifest of CONFIG; run it without --reshard-to"};
    }
    return RunReshard(spec, run, transcript);
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
  if (spec.json) {
    WriteJson(manifest.value(), transcript.out());
  } else {
    WriteText(run, manifest.value(), transcript.out());
  }
  if (!manifest.value().missing.empty()) {
    return MakeError(ErrorKind::kViolation,
                     "checkpoint: " + std::to_string(manifest.value().missing.size()) +
                         " needed state(s) left out (--omit): the resume is not exact");
  }
  return Status::Ok();
}

}  // namespace stagecraft
