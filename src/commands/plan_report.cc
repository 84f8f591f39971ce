// The planner's answer as text: the ranked table and the JSON object of the interface.
#include "commands/plan_report.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "core/units.h"
#include "hardware/presets.h"
#include "plan/export.h"
#include "plan/plan.h"
#include "plan/work_split.h"
#include "report/html.h"
#include "report/json_writer.h"
#include "report/summary.h"
#include "report/svg_plot.h"
#include "run/validated_runs.h"
#include "schedule/partition.h"

namespace stagecraft {
namespace {

// Rejections, most frequent first (ties by name), so the dominant reasons lead.
std::vector<std::pair<std::string, int64_t>> ByCount(const std::map<std::string, int64_t>& map) {
  std::vector<std::pair<std::string, int64_t>> rows(map.begin(), map.end());
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return rows;
}

std::string Layout(const Candidate& c) {
  return std::to_string(c.tp) + "x" + std::to_string(c.pp) + "x" + std::to_string(c.dp) + "x" +
         std::to_string(c.cp) + "x" + std::to_string(c.ep);
}

std::string FitsWord(const MemoryInfo& memory) {
  return !memory.capacity_known ? "?" : memory.fits ? "yes" : "OVER";
}

// How well the model did on the validated runs nearest to a planned layout (simulate's line).
ValidationInfo PlanValidation(const Config& config, const Candidate& c) {
  ValidatedRun run;
  run.device = config.cluster.device;
  run.gpus = c.tp * c.pp * c.dp * c.cp;
  run.params = config.model.is_transformer()
                   ? TransformerParams(config.model.transformer, config.model.seq_len)
                   : 0;
  run.micro_batch = c.micro_batch_size;
  run.tp = c.tp;
  run.pp = c.pp;
  run.cp = c.cp;
  run.ep = c.ep;
  run.fp8 = config.parallel.fp8;
  return ValidationFor(config, run);
}

void PlanObject(JsonWriter& json, const PlannedLayout& plan, const Config& config) {
  const Candidate& c = plan.candidate;
  json.BeginObject();
  json.Key("engine").String(EngineName(c.engine));
  json.Key("tp").Int(c.tp);
  json.Key("pp").Int(c.pp);
  json.Key("dp").Int(c.dp);
  json.Key("cp").Int(c.cp);
  json.Key("ep").Int(c.ep);
  json.Key("vpp").Int(c.vpp);
  json.Key("micro_batch_size").Int(c.micro_batch_size);
  json.Key("microbatches").Int(c.microbatches);
  json.Key("schedule").String(c.schedule);
  if (c.layer_list) {
    json.Key("partition").String(PartitionMethodName(c.partition));
    json.Key("state_policy").String(StatePolicyName(c.state_policy));
  }
  if (c.first_stage_layers > 0) {
    json.Key("first_stage_layers").Int(c.first_stage_layers);
    json.Key("last_stage_layers").Int(c.last_stage_layers);
  }
  if (!c.layout_counts.empty()) json.Key("layout").String(TransformerLayoutString(c.layout_counts));
  if (c.engine == Engine::kTorchtitan && c.pp > 1 && (c.first_less != 1 || c.last_less != 1)) {
    json.Key("first_stage_less_layers").Int(c.first_less);
    json.Key("last_stage_less_layers").Int(c.last_less);
  }
  json.Key("recompute").String(RecomputeName(c.recompute));
  if (c.recompute_num_layers > 0) json.Key("recompute_num_layers").Int(c.recompute_num_layers);
  if (c.recompute_num_layers > 0 && c.recompute_uniform) {
    json.Key("recompute_method").String(RecomputeMethodName(RecomputeMethod::kUniform));
  }
  json.Key("zero_stage").Int(c.zero_stage);
  json.Key("step_ms").Fixed(plan.step.ms(), 6);
  json.Key("screen_step_ms").Fixed(plan.screen_step.ms(), 6);
  json.Key("tokens_per_s").Fixed(plan.tokens_per_s, 3);
  json.Key("mfu").Fixed(plan.mfu, 6);
  json.Key("tflops_per_gpu").Fixed(plan.tflops_per_gpu, 3);
  json.Key("bubble_pipeline").Fixed(plan.bubble_pipeline, 6);
  json.Key("bubble_exposed").Fixed(plan.bubble_exposed, 6);
  json.Key("peak_memory_bytes").Fixed(plan.memory.peak_bytes, 0);
  json.Key("capacity_bytes").Int(plan.memory.capacity_bytes);
  if (plan.memory.capacity_known) {
    json.Key("fits").Bool(plan.memory.fits);
  } else {
    json.Key("fits").Raw("null");
  }
  ValidationJson(json.Key("validation"), PlanValidation(config, c));
  json.EndObject();
}

}  // namespace

std::string PlanReportHtml(const PlanResult& result) {
  HtmlPage page("stagecraft plan: " + result.label, result.model + " on " + result.cluster);
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> classes;
  int rank = 0;
  for (const PlannedLayout& plan : result.plans) {
    const Candidate& c = plan.candidate;
    rows.push_back({std::to_string(++rank), EngineName(c.engine), Layout(c), std::to_string(c.vpp),
                    std::to_string(c.micro_batch_size), std::to_string(c.microbatches),
                    c.ScheduleText(result.config.model.transformer.layers), c.RecomputeText(),
                    std::to_string(c.zero_stage), FormatMs(plan.step),
                    FormatFixed(plan.tokens_per_s, 0), FormatFixed(plan.mfu, 3),
                    FormatFixed(plan.bubble_pipeline, 3), FormatFixed(plan.bubble_exposed, 3),
                    FormatGib(plan.memory.peak_bytes), FitsWord(plan.memory)});
    classes.push_back(plan.memory.capacity_known && !plan.memory.fits ? "over" : "");
  }
  std::string ranked =
      HtmlFacts({{"candidates asked", std::to_string(result.candidates)},
                 {"screened (the rules allow them)", std::to_string(result.screened)},
                 {"simulated exactly", std::to_string(result.simulated)},
                 {"fitting after simulation", std::to_string(result.all_fitting.size())}});
  ranked += result.plans.empty()
                ? "<p>No layout fits; the rejections say why.</p>"
                : HtmlTable({"rank", "engine", "tp x pp x dp x cp x ep", "vpp", "mbs", "m",
                             "schedule", "recompute", "zero", "step (ms)", "tokens/s", "mfu",
                             "bubble", "exposed", "memory (GiB)", "fits"},
                            rows, classes);
  page.Add({"plans", "Ranked plans", ranked});

  // One series per schedule, so the front says which schedules reach it.
  std::map<std::string, Series> by_schedule;
  for (const PlannedLayout& plan : result.all_fitting) {
    Series& series = by_schedule[plan.candidate.schedule];
    series.name = plan.candidate.schedule;
    series.data = {{"schedule", plan.candidate.schedule}};
    series.points.push_back(PlotPoint{plan.memory.peak_bytes / 1073741824.0, plan.step.ms() / 1000,
                                      plan.candidate.Describe() + ": " + FormatMs(plan.step) +
                                          " ms, " + FormatGib(plan.memory.peak_bytes) + " GiB",
                                      false});
  }
  std::vector<Series> series;
  for (auto& [name, one] : by_schedule) series.push_back(std::move(one));
  std::string front =
      "<p class=\"note\">Every fitting plan simulated exactly: its step time "
      "against the fullest device's memory; the dashed line joins the plans no "
      "other beats on both.</p>";
  front += series.empty()
               ? "<p>No fitting plan to draw.</p>"
               : FormatScatterPlot(series, PlotOptions{"Step time vs peak memory",
                                                       "peak memory per device (GiB)", "step (s)"});
  page.Add({"pareto", "Pareto front", front});

  std::vector<std::vector<std::string>> rejected;
  for (const auto& [reason, count] : ByCount(result.rejected)) {
    rejected.push_back({reason, std::to_string(count)});
  }
  page.Add({"rejections", "Rejections by reason",
            rejected.empty() ? "<p>None.</p>" : HtmlTable({"reason", "candidates"}, rejected)});
  std::string rests = "<ul>";
  for (const std::string& assumption : result.assumptions) {
    rests += "<li>" + XmlEscape(assumption) + "</li>";
  }
  rests +=
      "</ul><p class=\"note\">bubble: the pipeline's share of device time; exposed: "
      "collectives, p2p and shared state left exposed (doc/metrics.md); zero: 1 = "
      "Megatron's distributed optimizer, 3 = FSDP.</p>";
  page.Add({"assumptions", "What the figures rest on", rests});
  return page.Render();
}

namespace {

// What the user's layout spends beyond rank 1, term by term (the text and the JSON print it).
struct LayoutVsBest {
  Time step, bubble, exposed, recompute;
  double peak_memory_bytes = 0;
  Time rest() const { return step - bubble - exposed - recompute; }
};

LayoutVsBest VersusBest(const PlannedLayout& mine, const PlannedLayout& best) {
  return {mine.step - best.step, mine.BubbleTime() - best.BubbleTime(),
          mine.ExposedTime() - best.ExposedTime(), mine.RecomputeTime() - best.RecomputeTime(),
          mine.memory.peak_bytes - best.memory.peak_bytes};
}

// --layout's ranking: where the user's layout ranks, and what the best plan saves against it,
// term by term (positive: the user's layout spends more).
std::string LayoutText(const PlanResult& result) {
  const LayoutRanking& layout = *result.layout;
  std::string text = "\n  your layout: " + layout.candidate.Describe() + "\n";
  if (!layout.broken.empty()) {
    return text + "    breaks the engine's rules: " + layout.broken + " (doc/plan.md)\n";
  }
  if (!layout.simulated) return text + "    failed in simulation: " + layout.failure + "\n";
  const PlannedLayout& mine = layout.planned;
  text +=
      "    step " + FormatMs(mine.step) + " ms, memory " + FormatMemoryVerdict(mine.memory) + "\n";
  if (!layout.fits) {
    return text + "    not ranked: over the device memory" +
           (result.plans.empty() ? std::string() : " (the best plan fits)") + "\n";
  }
  text += "    rank " + std::to_string(layout.rank) + " of " + std::to_string(layout.ranked) +
          " fitting plans simulated\n";
  if (result.all_fitting.empty()) return text;
  const LayoutVsBest d = VersusBest(mine, result.all_fitting.front());
  const auto ms = [](Time t) { return (t.ns() >= 0 ? "+" : "") + FormatMs(t) + " ms"; };
  text += "    against rank 1: step " + ms(d.step) + " = bubble " + ms(d.bubble) +
          ", exposed communication " + ms(d.exposed) + ", recomputation " + ms(d.recompute) +
          ", the rest " + ms(d.rest()) + "; peak memory " + (d.peak_memory_bytes >= 0 ? "+" : "-") +
          FormatGib(std::abs(d.peak_memory_bytes)) + " GiB\n";
  return text;
}

// The same as JSON keys of the plan's object: layout_given, layout_rank (0: not ranked),
// layout_step_ms, layout_vs_best (bubble_ms, exposed_comm_ms, recompute_ms, peak_memory_bytes,
// step_ms).
void LayoutJson(JsonWriter& json, const PlanResult& result) {
  const LayoutRanking& layout = *result.layout;
  json.Key("layout_given").String(layout.candidate.Describe());
  if (!layout.broken.empty()) json.Key("layout_broken_rule").String(layout.broken);
  if (!layout.failure.empty()) json.Key("layout_failure").String(layout.failure);
  json.Key("layout_fits").Bool(layout.simulated && layout.fits);
  json.Key("layout_rank").Int(layout.rank);
  json.Key("layout_ranked").Int(layout.ranked);
  if (!layout.simulated) return;
  const PlannedLayout& mine = layout.planned;
  json.Key("layout_step_ms").Raw(FormatMs(mine.step));
  if (result.all_fitting.empty()) return;
  const LayoutVsBest d = VersusBest(mine, result.all_fitting.front());
  json.Key("layout_vs_best").BeginObject();
  json.Key("step_ms").Raw(FormatMs(d.step));
  json.Key("bubble_ms").Raw(FormatMs(d.bubble));
  json.Key("exposed_comm_ms").Raw(FormatMs(d.exposed));
  json.Key("recompute_ms").Raw(FormatMs(d.recompute));
  json.Key("peak_memory_bytes").Int(std::llround(d.peak_memory_bytes));
  json.EndObject();
}

}  // namespace

std::string FormatPlanTable(const PlanResult& result) {
  std::string text = "stagecraft plan: " + result.label + "\n";
  text += "  model " + result.model + " on " + result.cluster + "\n";
  text += "  candidates " + std::to_string(result.candidates) + " asked, " +
          std::to_string(result.screened) + " screened" +
          (result.derived > 0 ? " (" + std::to_string(result.derived) +
                                    " derived: block recomputation and uneven splits)"
                              : std::string()) +
          ", " + std::to_string(result.simulated) + " simulated\n";
  for (const std::string& assumption : result.assumptions)
    text += "  rests on: " + assumption + "\n";
  text += "\n";
  // The schedule column fits its longest entry (a layer list's names its partition and policy).
  size_t schedule_width = 18;
  for (const PlannedLayout& plan : result.plans) {
    schedule_width =
        std::max(schedule_width,
                 plan.candidate.ScheduleText(result.config.model.transformer.layers).size() + 1);
  }
  text += "  rank  engine      tp x pp x dp x cp x ep  vpp  mbs     m  " +
          PadRight("schedule", schedule_width) +
          "recompute     zero       step_ms   tokens/s     mfu  bubble  exposed  memory_fullest  "
          "fits\n";
  int rank = 0;
  for (const PlannedLayout& plan : result.plans) {
    const Candidate& c = plan.candidate;
    ++rank;
    text += PadLeft(std::to_string(rank), 6) + "  " + PadRight(EngineName(c.engine), 10) +
            PadLeft(Layout(c), 24) + PadLeft(std::to_string(c.vpp), 5) +
            PadLeft(std::to_string(c.micro_batch_size), 5) +
            PadLeft(std::to_string(c.microbatches), 6) + "  " +
            PadRight(c.ScheduleText(result.config.model.transformer.layers), schedule_width) +
            PadRight(c.RecomputeText(), 13) + PadLeft(std::to_string(c.zero_stage), 5) +
            PadLeft(FormatMs(plan.step), 14) + PadLeft(FormatFixed(plan.tokens_per_s, 0), 11) +
            PadLeft(FormatFixed(plan.mfu, 3), 8) +
            PadLeft(FormatFixed(plan.bubble_pipeline, 3), 8) +
            PadLeft(FormatFixed(plan.bubble_exposed, 3), 9) +
            PadLeft(FormatGib(plan.memory.peak_bytes) + " GiB", 16) +
            PadLeft(FitsWord(plan.memory), 6) + "\n";
  }
  if (result.plans.empty()) text += "  (no layout fits)\n";
  if (!result.plans.empty()) {
    text += "\n  rank 1, against the validated runs nearest to it:\n" +
            ValidationText(PlanValidation(result.config, result.plans.front().candidate));
  }
  if (result.layout) text += LayoutText(result);
  text += "\n  rejected (candidates by reason):\n";
  for (const auto& [reason, count] : ByCount(result.rejected)) {
    text += "    " + PadLeft(std::to_string(count), 7) + "  " + reason + "\n";
  }
  text +=
      "\n  bubble: the pipeline's share of device time; exposed: collectives, p2p and shared "
      "state left exposed (doc/metrics.md); zero: 1 = Megatron's distributed optimizer, 3 = "
      "FSDP\n";
  return text;
}

std::string FormatPlanJson(const PlanResult& result) {
  JsonWriter json(/*pretty=*/true);
  json.BeginObject();
  json.Key("config").String(result.label);
  json.Key("model").String(result.model);
  json.Key("cluster").String(result.cluster);
  json.Key("candidates").Int(result.candidates);
  json.Key("screened").Int(result.screened);
  json.Key("derived").Int(result.derived);
  json.Key("simulated").Int(result.simulated);
  json.Key("rejected").BeginObject();
  for (const auto& [reason, count] : result.rejected) json.Key(reason).Int(count);
  json.EndObject();
  json.Key("assumptions").BeginArray();
  for (const std::string& assumption : result.assumptions) json.String(assumption);
  json.EndArray();
  json.Key("plans").BeginArray();
  for (const PlannedLayout& plan : result.plans) PlanObject(json, plan, result.config);
  json.EndArray();
  if (result.layout) LayoutJson(json, result);
  json.EndObject();
  return json.text() + "\n";
}

}  // namespace stagecraft

namespace stagecraft {

namespace {

// The planner once per cluster of the sweep. An MPI job's ranks split each cluster's work.
Status RunSweep(const PlanSpec& spec, bool json, Transcript& transcript) {
  if (spec.export_engine || !spec.report_path.empty()) {
    return Error{
        "--clusters: a sweep has one best plan per cluster; --export and --report take "
        "one (plan the chosen cluster alone with --cluster)"};
  }
  if (spec.run.cluster) {
    return Error{"--clusters with --cluster: give the clusters to compare in --clusters alone"};
  }
  if (spec.global_batch < 1) {
    return Error{
        "plan: --global-batch-size B is required (sequences per iteration, e.g. "
        "--global-batch-size 512)"};
  }
  std::vector<SweepRow> rows;
  for (const std::string& name : spec.sweep_clusters) {
    auto cluster = ClusterFromPreset(name);
    if (!cluster.ok()) return Error{"--clusters: " + cluster.error().message};
    SweepRow row;
    row.cluster = name;
    row.gpus = spec.gpus > 0 ? spec.gpus : cluster.value().num_devices();
    rows.push_back(std::move(row));
  }
  for (size_t index = 0; index < rows.size(); ++index) {
    PlanSpec one = spec;
    one.sweep_clusters.clear();
    one.run.cluster = rows[index].cluster;
    one.gpus = rows[index].gpus;
    if (spec.progress) {
      const std::string prefix = "[cluster " + std::to_string(index + 1) + "/" +
                                 std::to_string(rows.size()) + " " + rows[index].cluster + "] ";
      one.progress = [&spec, prefix](const std::string& line) {
        spec.progress(line.empty() ? line : prefix + line);
      };
    }
    rows[index].result = PlanLayouts(one);
  }
  if (spec.split != nullptr && !spec.split->prints()) return Status::Ok();
  transcript.out() << (json ? FormatSweepJson(spec, rows) : FormatSweepTable(spec, rows));
  for (const SweepRow& row : rows) {
    if (row.result.ok() && !row.result.value().plans.empty()) return Status::Ok();
  }
  return MakeError(ErrorKind::kInfeasible,
                   "plan --clusters: no cluster of the sweep has a layout that fits (the rows "
                   "above say why)");
}

}  // namespace

std::string FormatSweepTable(const PlanSpec& spec, const std::vector<SweepRow>& rows) {
  std::string model;
  for (const SweepRow& row : rows) {
    if (row.result.ok()) model = row.result.value().model;
  }
  std::string text = "stagecraft plan --clusters: " + (model.empty() ? "?" : model) + ", " +
                     std::to_string(spec.global_batch) + " sequences per iteration, engine " +
                     EngineName(spec.engine) + "\n";
  text +=
      "  the planner once per cluster (each its own search: doc/plan.md); the best plan of "
      "each\n\n";
  // The schedule column fits its longest entry (a layout string, a layer list's partition and
  // policy).
  size_t schedule_width = 18;
  for (const SweepRow& row : rows) {
    if (!row.result.ok() || row.result.value().plans.empty()) continue;
    const PlanResult& result = row.result.value();
    schedule_width = std::max(
        schedule_width,
        result.plans.front().candidate.ScheduleText(result.config.model.transformer.layers).size() +
            1);
  }
  text += "  cluster       gpus  best: engine tp x pp x dp x cp x ep  vpp  mbs  " +
          PadRight("schedule", schedule_width) +
          "recompute      step_ms    tokens/s  tokens/s/gpu     mfu  memory_fullest  fits  "
          "screened\n";
  const SweepRow* fastest_per_gpu = nullptr;
  for (const SweepRow& row : rows) {
    text += "  " + PadRight(row.cluster, 12) + PadLeft(std::to_string(row.gpus), 6) + "  ";
    if (!row.result.ok()) {
      text += "(" + row.result.error().message + ")\n";
      continue;
    }
    const PlanResult& result = row.result.value();
    if (result.plans.empty()) {
      text += "(no layout fits; " + std::to_string(result.screened) + " screened)\n";
      continue;
    }
    const PlannedLayout& best = result.plans.front();
    const Candidate& c = best.candidate;
    const double per_gpu = best.tokens_per_s / row.gpus;
    if (fastest_per_gpu == nullptr ||
        per_gpu >
            fastest_per_gpu->result.value().plans.front().tokens_per_s / fastest_per_gpu->gpus) {
      fastest_per_gpu = &row;
    }
    text += PadRight(EngineName(c.engine), 10) + PadLeft(Layout(c), 24) +
            PadLeft(std::to_string(c.vpp), 5) + PadLeft(std::to_string(c.micro_batch_size), 5) +
            "  " +
            PadRight(c.ScheduleText(result.config.model.transformer.layers), schedule_width) +
            PadRight(c.RecomputeText(), 10) + PadLeft(FormatMs(best.step), 13) +
            PadLeft(FormatFixed(best.tokens_per_s, 0), 12) + PadLeft(FormatFixed(per_gpu, 1), 14) +
            PadLeft(FormatFixed(best.mfu, 3), 8) +
            PadLeft(FormatGib(best.memory.peak_bytes) + " GiB", 16) +
            PadLeft(FitsWord(best.memory), 6) + PadLeft(std::to_string(result.screened), 10) + "\n";
  }
  if (fastest_per_gpu != nullptr) {
    text += "\n  most tokens per GPU: " + fastest_per_gpu->cluster + "\n";
  }
  return text;
}

std::string FormatSweepJson(const PlanSpec& spec, const std::vector<SweepRow>& rows) {
  JsonWriter json(/*pretty=*/true);
  json.BeginObject();
  json.Key("global_batch_size").Int(spec.global_batch);
  json.Key("engine").String(EngineName(spec.engine));
  json.Key("sweep").BeginArray();
  for (const SweepRow& row : rows) {
    json.BeginObject();
    json.Key("cluster").String(row.cluster);
    json.Key("gpus").Int(row.gpus);
    if (!row.result.ok()) {
      json.Key("error").String(row.result.error().message);
    } else {
      const PlanResult& result = row.result.value();
      json.Key("candidates").Int(result.candidates);
      json.Key("screened").Int(result.screened);
      json.Key("simulated").Int(result.simulated);
      json.Key("best");
      if (result.plans.empty()) {
        json.Raw("null");
      } else {
        PlanObject(json, result.plans.front(), result.config);
      }
    }
    json.EndObject();
  }
  json.EndArray();
  json.EndObject();
  return json.text() + "\n";
}

Status RunPlan(const PlanSpec& given, bool json, Transcript& transcript) {
  PlanSpec spec = given;
  if (!spec.sweep_clusters.empty()) {
    auto mpi = MpiSplitFromEnvironment();
    if (!mpi.ok()) return mpi.error();
    if (mpi.value()) spec.split = mpi.value().get();
    return RunSweep(spec, json, transcript);
  }
  if (spec.export_engine) {
    if (*spec.export_engine == Engine::kAny) {
      return Error{"--export: name one engine (megatron, torchtitan or deepspeed)"};
    }
    if (spec.engine == Engine::kAny) spec.engine = *spec.export_engine;
    if (spec.engine != *spec.export_engine) {
      return Error{std::string("--export ") + EngineName(*spec.export_engine) + " with --engine " +
                   EngineName(spec.engine) + ": plan under the engine you export to (drop " +
                   "--engine or give the same one)"};
    }
    if (spec.export_dir.empty()) return Error{"--export: needs a folder (--export ENGINE DIR)"};
  }
  // Under mpirun the processes split the work; only rank 0 answers (the others stay quiet,
  // their exit code the same).
  auto mpi = MpiSplitFromEnvironment();
  if (!mpi.ok()) return mpi.error();
  if (mpi.value()) spec.split = mpi.value().get();
  if (spec.split != nullptr && !spec.split->prints()) {
    auto quiet = PlanLayouts(spec);
    if (!quiet.ok()) return MakeError(quiet.error().kind, "");
    return quiet.value().plans.empty() ? MakeError(ErrorKind::kInfeasible, "") : Status::Ok();
  }
  auto result = PlanLayouts(spec);
  if (!result.ok()) return result.error();
  transcript.out() << (json ? FormatPlanJson(result.value()) : FormatPlanTable(result.value()));
  // The report and the export are one output: written together, all or none.
  std::vector<FileToWrite> outputs;
  if (!spec.report_path.empty()) {
    outputs.push_back({spec.report_path, PlanReportHtml(result.value())});
  }
  if (!result.value().plans.empty() && spec.export_engine) {
    const PlannedLayout& best = result.value().plans.front();
    // A schedule torch ships no class for goes to torchtitan as its actions (a CSV;
    // TorchtitanScheduleCsv says when).
    std::optional<ScheduleCsv> csv;
    if (*spec.export_engine == Engine::kTorchtitan) {
      auto prepared = PrepareRun(CandidateRun(spec.run, best.candidate));
      if (!prepared.ok()) return prepared.error();
      csv = TorchtitanScheduleCsv(best.candidate, prepared.value());
    }
    auto files = ExportPlan(result.value().config, best.candidate, spec.global_batch,
                            *spec.export_engine, csv ? &*csv : nullptr);
    if (!files.ok()) return files.error();
    for (const ExportedFile& file : files.value()) {
      outputs.push_back({spec.export_dir + "/" + file.name, file.text});
    }
  }
  if (!outputs.empty()) {
    const Status written = spec.run.files.write_all(outputs);
    if (!written.ok()) {
      const bool exported = outputs.size() > (spec.report_path.empty() ? 0u : 1u);
      const std::string flags = spec.report_path.empty() ? "--export"
                                : exported               ? "--report, --export"
                                                         : "--report";
      return Error{flags + ": " + written.error().message};
    }
    for (size_t index = spec.report_path.empty() ? 0 : 1; index < outputs.size(); ++index) {
      transcript.err() << "stagecraft: wrote " << outputs[index].path << "\n";
    }
  }
  if (!result.value().plans.empty()) return Status::Ok();
  // What could change it, from what rejected the candidates: memory only where memory did.
  bool memory = false;
  for (const auto& [reason, count] : result.value().rejected) {
    memory = memory || (count > 0 && reason.rfind("over memory", 0) == 0);
  }
  std::string hint = memory ? "more GPUs or a smaller global batch"
                            : "another global batch or fewer constraints (--tp, --pp, ...)";
  if (spec.engine != Engine::kAny) hint += ", another --engine";
  if (memory && spec.headroom > 0) hint += ", less --memory-headroom";
  return MakeError(ErrorKind::kInfeasible,
                   "no layout of " + result.value().model + " on " + std::to_string(spec.gpus) +
                       " GPUs fits (the rejections above say why; to try: " + hint + ")");
}

}  // namespace stagecraft
