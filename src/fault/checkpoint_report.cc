#include "fault/checkpoint_report.h"

#include <ostream>
#include <sstream>

#include "core/units.h"
#include "fault/checkpoint_manifest.h"
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
  out << "  rank  weights_GiB  optim_GiB  small_B  saved_GiB  grads_GiB (not saved)\n";
  for (const RankManifest& row : manifest.ranks) {
    double weights = 0;
    double optimizer = 0;
    double small = 0;
    double gradients = 0;
    for (const ManifestEntry& entry : row.entries) {
      if (!entry.needed) {
        gradients += entry.bytes;
      } else if (!entry.saved) {
        continue;
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
        << PadLeft(FormatGib(optimizer), 11) << PadLeft(FormatFixed(small, 0), 9)
        << PadLeft(FormatGib(row.saved_bytes), 11) << PadLeft(FormatGib(gradients), 11) << "\n";
  }
  out << "  small states    optimizer-step, lr-scheduler, rng-cpu, rng-cuda"
      << (run.config.parallel.tp > 1 ? ", rng-tp" : "")
      << (run.config.parallel.precision == TrainingPrecision::kFp16 ? ", loss-scaler" : "")
      << ", data-position (per data-parallel rank)\n";
  if (manifest.missing.empty()) {
    out << "  resume          exact: every state the next step reads is saved\n";
  } else {
    out << "  resume          NOT exact: the resumed run diverges from the uninterrupted one\n";
    for (const ManifestEntry& entry : manifest.missing) {
      out << "    missing " << entry.name << ": " << entry.diverges << "\n";
    }
  }
}

}  // namespace

Status RunCheckpoint(const CheckpointSpec& spec, Transcript& transcript) {
  if (spec.reshard_to) {
    return Error{
        "--reshard-to: resharding is not built yet (doc/fault-tolerance.md, "
        "'Not modelled'); run 'stagecraft checkpoint' on each layout instead"};
  }
  auto prepared = PrepareRun(spec.run);
  if (!prepared.ok()) return prepared.error();
  const PreparedRun& run = prepared.value();
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
