// `stagecraft goodput` as text and as JSON (fault/goodput.h); its flags are parsed in
// goodput_flags.cc.
#include "commands/goodput_command.h"

#include <ostream>
#include <sstream>

#include "core/units.h"
#include "fault/goodput.h"
#include "fault/what_if.h"
#include "report/html.h"
#include "report/json_writer.h"

namespace stagecraft {
namespace {

std::string Seconds(double seconds) { return FormatFixed(seconds, 1) + " s"; }

// A cause's share of the preset's failures.
double CauseShare(const GoodputResult& result, int64_t count) {
  int64_t total = 0;
  for (const auto& cause : result.causes) total += cause.second;
  return total > 0 ? static_cast<double>(count) / static_cast<double>(total) : 0;
}

// The job's size as the answer's first line says it ("16384 GPUs (2048 nodes of 8)"); a job of
// unknown size when its own MTBF was given without --gpus (nothing printed depends on it).
std::string JobSize(const GoodputResult& result) {
  if (result.gpus == 0) return "a job of unknown size (its own MTBF given; no answer needs it)";
  return std::to_string(result.gpus) + " GPUs (" + std::to_string(result.nodes) + " nodes of " +
         std::to_string(result.gpus_per_node) + ")";
}

void WriteJson(const GoodputResult& result, std::ostream& out) {
  JsonWriter writer(/*pretty=*/true);
  writer.BeginObject();
  if (result.gpus > 0) {
    writer.Key("gpus").Int(result.gpus);
    writer.Key("nodes").Int(result.nodes);
  } else {
    writer.Key("gpus").Raw("null");  // unknown: --mtbf-hours without --gpus
    writer.Key("nodes").Raw("null");
  }
  writer.Key("failure_rate_source").String(result.rate_source);
  writer.Key("failures_per_1000_node_days").Fixed(result.per_1000_node_days, 4);
  writer.Key("mttf_hours").Fixed(result.mttf_s / 3600.0, 4);
  if (!result.causes.empty()) {
    writer.Key("failure_causes").BeginArray();
    for (const auto& [cause, count] : result.causes) {
      writer.BeginObject().Key("cause").String(cause).Key("failures").Int(count);
      writer.Key("share").Fixed(CauseShare(result, count), 4).EndObject();
    }
    writer.EndArray();
  }
  writer.Key("checkpoint_blocking_s").Fixed(result.costs.blocking_s, 3);
  writer.Key("checkpoint_persist_s").Fixed(result.costs.persist_s, 3);
  writer.Key("restart_s").Fixed(result.costs.restart_s, 3);
  if (result.storage) {
    writer.Key("storage").BeginObject();
    writer.Key("tier").String(result.storage_tier);
    writer.Key("checkpoint_bytes").Fixed(result.storage->total_bytes, 0);
    writer.Key("device_bytes").Fixed(result.storage->device_bytes, 0);
    writer.Key("copy_s").Fixed(result.storage->copy_s, 3);
    writer.Key("write_s").Fixed(result.storage->write_s, 3);
    writer.Key("load_s").Fixed(result.storage->load_s, 3);
    writer.EndObject();
  }
  writer.Key("young_interval_s").Fixed(result.young_s, 3);
  writer.Key("daly_first_order_interval_s").Fixed(result.daly_first_s, 3);
  writer.Key("daly_interval_s").Fixed(result.daly_higher_s, 3);
  writer.Key("optimal_interval_s").Fixed(result.optimal_s, 3);
  writer.Key("interval_s").Fixed(result.interval_s, 3);
  writer.Key("ettr").Fixed(result.ettr, 6);
  if (!result.trace_s.empty()) writer.Key("trace_ettr").Fixed(result.trace_ettr, 6);
  writer.Key("waste").BeginObject();
  writer.Key("checkpoint").Fixed(result.shares.checkpoint, 6);
  writer.Key("restart").Fixed(result.shares.restart, 6);
  writer.Key("lost_work").Fixed(result.shares.lost_work, 6);
  writer.EndObject();
  writer.Key("skipped_step_share").Fixed(result.skipped_step_share, 6);
  if (result.mfu > 0) {
    writer.Key("mfu").Fixed(result.mfu, 6);
    writer.Key("program_goodput").Fixed(result.mfu * (1.0 - result.skipped_step_share), 6);
    writer.Key("step_s").Fixed(result.step_s, 6);
  }
  writer.Key("days").Fixed(result.days, 3);
  writer.Key("wall_days").Fixed(result.wall_days, 3);
  writer.Key("expected_failures").Fixed(result.failures, 1);
  if (result.monte_carlo) {
    const MonteCarloResult& simulated = *result.monte_carlo;
    writer.Key("monte_carlo").BeginObject();
    writer.Key("runs").Int(simulated.runs);
    writer.Key("weibull_shape").Fixed(result.weibull_shape, 3);
    writer.Key("mean_ettr").Fixed(simulated.mean_ettr, 6);
    writer.Key("stddev_ettr").Fixed(simulated.stddev_ettr, 6);
    writer.Key("mean_failures").Fixed(simulated.mean_failures, 2);
    if (result.spares >= 0) {
      writer.Key("spares").Int(result.spares);
      writer.Key("repair_hours").Fixed(result.repair_s / 3600.0, 3);
      writer.Key("mean_wait_hours").Fixed(simulated.mean_wait_s / 3600.0, 3);
    }
    writer.EndObject();
  }
  writer.EndObject();
  out << writer.text() << "\n";
}

void WriteSpares(const GoodputResult& result, const MonteCarloResult& simulated,
                 std::ostream& out) {
  out << "  spares          " << result.spares << " hot spare nodes, repair "
      << FormatFixed(result.repair_s / 3600.0, 2) << " h";
  if (result.correlated_share > 0) {
    out << ", " << FormatFixed(result.correlated_share, 3) << " of the failures take "
        << result.correlated_nodes << " nodes";
  }
  out << ": " << FormatFixed(simulated.mean_wait_s / 3600.0, 2)
      << " h per run waiting for repaired nodes\n";
}

void WriteText(const GoodputResult& result, std::ostream& out) {
  out << "stagecraft goodput: " << JobSize(result) << "\n";
  out << "  failures        ";
  if (result.per_1000_node_days > 0) {
    out << FormatFixed(result.per_1000_node_days, 3) << " per 1000 node-days ("
        << result.rate_source << ")";
  } else {
    out << "the job's MTBF (" << result.rate_source << ")";
  }
  out << ": MTTF " << FormatFixed(result.mttf_s / 3600.0, 3) << " h\n";
  if (!result.causes.empty()) {
    out << "  causes          ";
    for (size_t index = 0; index < result.causes.size(); ++index) {
      out << (index ? ", " : "") << result.causes[index].first << " "
          << FormatFixed(100 * CauseShare(result, result.causes[index].second), 1) << "%";
    }
    out << " (the source's; every failure costs the same restart here)\n";
  }
  if (!result.trace_s.empty()) {
    out << "  trace replay    ettr " << FormatFixed(result.trace_ettr, 4) << " at "
        << FormatFixed(result.interval_s, 1) << " s over the trace's "
        << FormatFixed(result.trace_s.back() / 3600.0, 1)
        << " h (the exact model at its MTTF: " << FormatFixed(result.ettr, 4) << ")\n";
  }
  const CheckpointCosts& costs = result.costs;
  if (result.storage) {
    const SaveCosts& save = *result.storage;
    out << "  storage         " << result.storage_tier << ": " << FormatGib(save.total_bytes)
        << " GiB per checkpoint, written"
        << (save.read_bytes_per_s == save.write_bytes_per_s ? " and read" : "") << " at "
        << FormatFixed(save.write_bytes_per_s / 1e12, 3) << " TB/s ("
        << FormatFixed(save.write_s, 3) << " s)"
        << (save.read_bytes_per_s == save.write_bytes_per_s
                ? std::string()
                : ", read at " + FormatFixed(save.read_bytes_per_s / 1e12, 3) + " TB/s")
        << "; the fullest device's " << FormatGib(save.device_bytes) << " GiB copied to host at "
        << FormatFixed(HostCopyBytesPerSecond() / 1e9, 1) << " GB/s ("
        << FormatFixed(save.copy_s, 3) << " s); the load adds " << FormatFixed(save.load_s, 3)
        << " s to --restart\n";
  }
  out << "  checkpoint      blocking " << FormatFixed(costs.blocking_s, 3) << " s, persist "
      << FormatFixed(costs.persist_s, 3) << " s"
      << (costs.persist_s > 0 ? " (asynchronous)" : " (synchronous)") << "; restart "
      << FormatFixed(costs.restart_s, 3) << " s";
  for (size_t part = 0; part < result.restart_parts.size(); ++part) {
    out << (part == 0 ? " (" : " + ") << result.restart_parts[part].first << " "
        << FormatFixed(result.restart_parts[part].second, 1);
  }
  out << (result.restart_parts.empty() ? "\n" : ")\n");
  out << "  interval        Young " << Seconds(result.young_s) << ", Daly first-order "
      << Seconds(result.daly_first_s) << ", Daly higher-order " << Seconds(result.daly_higher_s)
      << ", exact optimum " << Seconds(result.optimal_s) << "\n";
  out << "  ettr            " << FormatFixed(result.ettr, 4) << " at " << Seconds(result.interval_s)
      << (result.interval_given ? " (--interval)" : " (the optimum)") << "\n";
  out << "  wall time       checkpoint " << FormatFixed(result.shares.checkpoint, 4) << ", restart "
      << FormatFixed(result.shares.restart, 4) << ", lost work "
      << FormatFixed(result.shares.lost_work, 4) << "\n";
  out << "  goodput         scheduling 1.0000 (queueing not modelled), runtime "
      << FormatFixed(result.ettr, 4) << ", program ";
  if (result.mfu > 0) {
    out << FormatFixed(result.mfu * (1.0 - result.skipped_step_share), 4) << " (MFU "
        << FormatFixed(result.mfu, 4) << " of the simulated step x unskipped steps "
        << FormatFixed(1.0 - result.skipped_step_share, 4) << ")\n";
  } else {
    out << FormatFixed(1.0 - result.skipped_step_share, 4) << " (skipped fp16 steps "
        << FormatFixed(result.skipped_step_share, 4) << "; MFU not included)\n";
  }
  if (result.tokens > 0) {
    out << "  tokens          " << FormatFixed(result.tokens / 1e12, 3) << "e12 at "
        << FormatFixed(result.tokens_per_step, 0) << " per step of "
        << FormatFixed(result.step_s, 3) << " s (simulated)\n";
  }
  out << "  run             " << FormatFixed(result.days, 1) << " days of training take "
      << FormatFixed(result.wall_days, 2) << " days, " << FormatFixed(result.failures, 1)
      << " failures expected\n";
  if (result.monte_carlo) {
    const MonteCarloResult& simulated = *result.monte_carlo;
    out << "  monte carlo     " << simulated.runs << " runs"
        << (result.weibull_shape == 1.0
                ? std::string(" (exponential)")
                : " (Weibull k " + FormatFixed(result.weibull_shape, 2) + ")")
        << ": mean ettr " << FormatFixed(simulated.mean_ettr, 4) << " (sd "
        << FormatFixed(simulated.stddev_ettr, 4) << "), " << FormatFixed(simulated.mean_failures, 1)
        << " failures per run\n";
    if (result.spares >= 0) WriteSpares(result, simulated, out);
  }
}

// The HTML report: the verdict, goodput and waste against the interval, the what-if table
// and the answer as text (what it rests on).
std::string GoodputReportHtml(const GoodputResult& result) {
  std::ostringstream text;
  WriteText(result, text);
  const std::string mttf = "MTTF " + FormatFixed(result.mttf_s / 3600.0, 3) + " h";
  HtmlPage page(result.gpus > 0 ? "stagecraft goodput: " + std::to_string(result.gpus) + " GPUs"
                                : "stagecraft goodput: a job of unknown size",
                result.gpus > 0 ? std::to_string(result.nodes) + " nodes of " +
                                      std::to_string(result.gpus_per_node) + " GPUs, " + mttf
                                : mttf);
  std::string summary = HtmlFacts({
      {"ETTR at the interval", FormatFixed(result.ettr, 4) + " at " +
                                   FormatFixed(result.interval_s, 1) + " s" +
                                   (result.interval_given ? " (--interval)" : " (the optimum)")},
      {"intervals", "Young " + FormatFixed(result.young_s, 1) + " s, Daly first-order " +
                        FormatFixed(result.daly_first_s, 1) + " s, Daly higher-order " +
                        FormatFixed(result.daly_higher_s, 1) + " s, exact optimum " +
                        FormatFixed(result.optimal_s, 1) + " s"},
      {"wall time lost to", "checkpoints " + FormatFixed(result.shares.checkpoint, 4) +
                                ", restarts " + FormatFixed(result.shares.restart, 4) +
                                ", lost work " + FormatFixed(result.shares.lost_work, 4)},
      {"run", FormatFixed(result.days, 1) + " days of training take " +
                  FormatFixed(result.wall_days, 2) + " days, " + FormatFixed(result.failures, 1) +
                  " failures expected"},
  });
  page.Add({"summary", "Summary", summary});
  page.Add({"goodput", "Goodput against the checkpoint interval",
            "<p class=\"note\">The exact model's share of wall time that trains (ETTR) at each "
            "interval, and its complement on log axes, with the optimum marked.</p>" +
                FormatGoodputPlot(result) + FormatIntervalPlot(result)});
  page.Add({"what-if", "What if the failure rate or the save changes",
            HtmlPre(FormatWhatIfTable(result))});
  page.Add({"assumptions", "What the figures rest on",
            "<p class=\"note\">The answer as `stagecraft goodput` prints it.</p>" +
                HtmlPre(text.str())});
  return page.Render();
}

}  // namespace

Status RunGoodput(const GoodputSpec& spec, Transcript& transcript) {
  auto inputs = ParseGoodputFlags(spec);
  if (!inputs.ok()) return inputs.error();
  auto result = ComputeGoodput(inputs.value());
  if (!result.ok()) return result.error();
  if (!spec.report_path.empty()) {
    const Status written = spec.files.write(spec.report_path, GoodputReportHtml(result.value()));
    if (!written.ok()) return Error{"--report: " + written.error().message};
  }
  if (spec.json) {
    if (spec.what_if) return Error{"--what-if: a table for the text output; drop --json"};
    WriteJson(result.value(), transcript.out());
  } else {
    WriteText(result.value(), transcript.out());
    if (spec.what_if) transcript.out() << FormatWhatIfTable(result.value());
  }
  if (!spec.plot_path.empty()) {
    const Status written = spec.files.write(spec.plot_path, FormatIntervalPlot(result.value()));
    if (!written.ok()) return Error{"--plot: " + written.error().message};
  }
  return Status::Ok();
}

}  // namespace stagecraft
