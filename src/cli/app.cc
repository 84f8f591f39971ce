#include "cli/app.h"

#include <CLI/CLI.hpp>

#include "analysis/metrics.h"
#include "cli/commands.h"
#include "core/suggest.h"

namespace stagecraft {
namespace {

constexpr const char* kTimeHelp = "(ns, us, ms, s; a bare number means ms)";

void AddRunFlags(CLI::App& command, RunFlags& flags) {
  command.add_option("config", flags.config_path,
                     "YAML config (doc/config.md); none = the bundled example");
  command
      .add_option("--schedule", flags.schedule, "schedule generator (stagecraft list schedules)")
      ->type_name("NAME");
  command.add_option("--pp", flags.pp, "pipeline-parallel ranks P")->type_name("P");
  command
      .add_option("--hf-config", flags.hf_config,
                  "take the model from a HuggingFace config.json (dense Llama-style models; "
                  "seq_len and micro_batch_size stay the config's)")
      ->type_name("FILE");
  command
      .add_option("--seq-len", flags.seq_len,
                  "tokens per sequence S (layer-list and transformer models)")
      ->type_name("S");
  command
      .add_option("--micro-batch-size", flags.micro_batch_size,
                  "sequences per microbatch B (layer-list and transformer models)")
      ->type_name("B");
  command.add_option("--tp", flags.tp, "tensor-parallel ranks per stage T (transformer models)")
      ->type_name("T");
  command.add_option("--dp", flags.dp, "data-parallel replicas D (transformer models)")
      ->type_name("D");
  command
      .add_option("--cp", flags.cp,
                  "context-parallel ranks C (transformer and CSA2 layer-list models)")
      ->type_name("C");
  command
      .add_option("--cp-sharding", flags.cp_sharding,
                  "CSA2 layer lists: how cp splits the sequence, zigzag (2C chunks, the indexer "
                  "balanced) or contiguous")
      ->type_name("SHARDING");
  command
      .add_option("--ep", flags.ep, "expert-parallel ranks E within dp (MoE transformer models)")
      ->type_name("E");
  command.add_option("--vpp", flags.vpp, "chunks (virtual stages) per rank V")->type_name("V");
  command.add_option("--microbatches", flags.microbatches, "microbatches per iteration M")
      ->type_name("M");
  command
      .add_option("--group-size", flags.group_size,
                  "interleaved-1f1b microbatch group size (default P)")
      ->type_name("G");
  command
      .add_option("--cost-forward", flags.cost_forward,
                  std::string("forward time of one microbatch on one rank; each of V chunks "
                              "costs T/V ") +
                      kTimeHelp)
      ->type_name("T");
  command
      .add_option("--cost-input-grad", flags.cost_input_grad,
                  std::string("input-gradient backward time, same unit ") + kTimeHelp)
      ->type_name("T");
  command
      .add_option("--cost-weight-grad", flags.cost_weight_grad,
                  std::string("weight-gradient backward time; full backward = input-grad + "
                              "weight-grad ") +
                      kTimeHelp)
      ->type_name("T");
  command
      .add_option("--cost-fb", flags.cost_fb,
                  std::string("cost of one overlapped F&B op (a forward and another "
                              "microbatch's full backward, DualPipe); default F + B, no gain ") +
                      kTimeHelp)
      ->type_name("T");
  command
      .add_option("--cost-p2p", flags.cost_p2p,
                  std::string("fixed time added to every transfer between two ranks ") + kTimeHelp)
      ->type_name("T");
  command.add_option("--p2p", flags.p2p, "point-to-point semantics: async (default) or rendezvous")
      ->type_name("MODE");
  command
      .add_option("--state-policy", flags.state_policy,
                  "shared-state movement: payload, direct, shadow or auto (layer-list models)")
      ->type_name("POLICY");
  command
      .add_option("--partition", flags.partition,
                  "layers to stages: state-aware, cost, counts or layout (layer-list models)")
      ->type_name("METHOD");
  command
      .add_option("--vision-placement", flags.vision_placement,
                  "the vision encoder: colocated, decoupled, disaggregated or bubble-fill "
                  "(configs with multimodal.vision)")
      ->type_name("PLACEMENT");
  command
      .add_option("--schedule-csv", flags.schedule_csv,
                  "load the schedule from a torch.distributed.pipelining compute-only CSV")
      ->type_name("FILE");
}

int UsageError(const std::string& message, std::ostream& err) {
  err << "stagecraft: error: " << EscapeBytes(message)
      << "\nRun 'stagecraft --help' or 'stagecraft COMMAND --help' for usage.\n";
  return kExitBadInput;
}

// The text between `prefix` and `suffix` in `message`, or "" when it is not there.
std::string Between(const std::string& message, const std::string& prefix,
                    const std::string& suffix) {
  if (message.rfind(prefix, 0) != 0) return "";
  const size_t end = suffix.empty() ? message.size() : message.find(suffix, prefix.size());
  if (end == std::string::npos) return "";
  return message.substr(prefix.size(), end - prefix.size());
}

// CLI11's parse errors in the project's words: the flag, the bad value, what was expected.
// `command` is the subcommand being parsed ("" before one was named).
std::string PhraseParseError(const CLI::ParseError& error, const std::string& command) {
  const std::string message = error.what();
  const std::string in = command.empty() ? "" : command + ": ";
  if (dynamic_cast<const CLI::ConversionError*>(&error) != nullptr) {
    // "Could not convert: --ranks = nan"
    const std::string rest = Between(message, "Could not convert: ", "");
    const size_t equals = rest.find(" = ");
    if (equals != std::string::npos) {
      return rest.substr(0, equals) + ": '" + rest.substr(equals + 3) +
             "' is not a number (expected a number, see 'stagecraft " + command + " --help')";
    }
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&error) != nullptr) {
    const size_t colon = message.find(": ");
    const std::string flag = message.substr(0, colon);
    if (message.find(": At Most ") != std::string::npos) {
      return flag + ": given more than once (expected it at most once)";
    }
    if (colon != std::string::npos && message.find(" missing", colon) != std::string::npos) {
      return flag + ": expected a value after it";
    }
  }
  if (dynamic_cast<const CLI::RequiredError*>(&error) != nullptr) {
    const std::string what = Between(message, "", " is required");
    if (!what.empty()) return in + "missing the " + what + " argument";
  }
  return in + message;
}

// Every long flag a command takes ("--pp", ...), for "did you mean".
std::vector<std::string> FlagsOf(const CLI::App& command) {
  std::vector<std::string> names;
  for (const CLI::Option* option : command.get_options()) {
    for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
  }
  return names;
}

// Arguments CLI11 did not recognise: an unknown flag gets "did you mean", a stray word is named.
std::string ExtraArgumentsMessage(const CLI::App& command, const std::vector<std::string>& extras) {
  const std::string& first = extras.front();
  if (first.rfind("-", 0) == 0) {
    const std::string flag = first.substr(0, first.find('='));
    const std::vector<std::string> flags = FlagsOf(command);
    return "unknown flag '" + flag + "' for '" + command.get_name() + "'" +
           DidYouMean(flag, flags) + " (stagecraft " + command.get_name() + " --help)";
  }
  return "unexpected argument '" + first + "' for '" + command.get_name() +
         "' (it takes at most one config file)";
}

// bench-schedules: the run flags, less those the sweep sets itself, and the sweep's own.
CLI::App* AddBenchCommand(CLI::App& app, RunFlags& flags, BenchFlags& bench_flags) {
  CLI::App* bench = app.add_subcommand(
      "bench-schedules",
      "simulate every schedule over microbatch counts (and pp values): table, CSV, SVG plots");
  AddRunFlags(*bench, flags);
  // Refused with a pointer to the sweep's own flags (RunBenchSchedules), so hidden from --help.
  for (const char* swept : {"--schedule", "--microbatches", "--schedule-csv"}) {
    bench->get_option(swept)->group("");
  }
  bench
      ->add_option("--microbatches-list", bench_flags.microbatches_list,
                   "microbatch counts, comma-separated (default 8,16,32,64,128,256)")
      ->type_name("M,...");
  bench
      ->add_option("--pp-list", bench_flags.pp_list,
                   "pipeline sizes, comma-separated (default: the config's pp, or --pp)")
      ->type_name("P,...");
  bench->add_option("--csv", bench_flags.csv_path, "write the table's rows as CSV to FILE")
      ->type_name("FILE");
  bench
      ->add_option("--svg-prefix", bench_flags.svg_prefix,
                   "write PREFIX-bubble.svg (bubble vs m) and PREFIX-pareto.svg (peak memory vs "
                   "bubble, Pareto front)")
      ->type_name("PREFIX");
  bench->footer(BenchSchedulesRule());
  return bench;
}

const std::vector<std::string> kCommands = {"simulate", "check",           "derive",
                                            "list",     "bench-schedules", "comm",
                                            "memory",   "multimodal",      "validate"};

CLI::App* AddCommCommand(CLI::App& app, CommFlags& flags) {
  CLI::App* comm = app.add_subcommand(
      "comm", "the cost of one collective on a preset cluster (alpha-beta, nccl-tests busbw)");
  comm->add_option("operation", flags.operation,
                   "allreduce | reducescatter | allgather | alltoall | broadcast | reduce | "
                   "sendrecv")
      ->required();
  comm->add_option("--bytes", flags.bytes, "size of the whole array, e.g. 1GiB (default 1GiB)")
      ->type_name("SIZE");
  comm->add_option("--ranks", flags.ranks, "ranks in the group, contiguous (default 8)")
      ->type_name("N");
  comm->add_option("--cluster", flags.cluster,
                   "preset DEVICE or DEVICExNODES, e.g. h100x2 (stagecraft list presets)")
      ->type_name("PRESET");
  comm->add_option("--algorithm", flags.algorithm,
                   "ring (default) | tree | hierarchical (all-reduce only)")
      ->type_name("A");
  comm->add_flag("--json", flags.json, "print one JSON object");
  return comm;
}

// `multimodal images`: the sample's images and the I/O criterion's rates.
void AddMultimodalImageFlags(CLI::App& multimodal, MultimodalFlags& flags) {
  multimodal.add_option("--images", flags.images, "images in the sample (images; default 16)")
      ->type_name("N");
  multimodal
      .add_option("--image-tokens", flags.image_tokens,
                  "tokens per image: fixed:N, uniform:A-B or choices:256x3,1024 (images)")
      ->type_name("DIST");
  multimodal.add_option("--seed", flags.seed, "seed of the image-token draw (images)")
      ->type_name("N");
  multimodal
      .add_option("--bytes-per-image-token", flags.bytes_per_image_token,
                  "storage bytes read per image token (images; default 5292, raw RGB)")
      ->type_name("B");
  multimodal
      .add_option("--io-bandwidth", flags.io_bandwidth,
                  "storage read bandwidth per rank, B_IO (images; default 2GB/s)")
      ->type_name("BW");
  multimodal
      .add_option("--gpu-flops", flags.gpu_flops,
                  "sustained FLOP/s per rank, B_GPU (images; default 400TFLOP/s)")
      ->type_name("RATE");
  multimodal
      .add_option("--flops-per-token", flags.flops_per_token,
                  "training FLOPs a rank spends per token, C (images; default 105GFLOP: the "
                  "whole V4.1 backbone, 3 x 35 GFLOP forward; divide by the pipeline and tensor "
                  "ranks that share a token)")
      ->type_name("FLOP");
}

// `multimodal contrastive-order`: the tower times and the cluster of the all-gathers.
void AddMultimodalOrderFlags(CLI::App& multimodal, MultimodalFlags& flags) {
  multimodal
      .add_option("--device", flags.device,
                  "device preset of the gathers' nodes (contrastive-order; default h800)")
      ->type_name("PRESET");
  multimodal.add_option("--vision-forward", flags.vision_forward, "Fwd(V) (default 30ms)")
      ->type_name("TIME");
  multimodal.add_option("--text-forward", flags.text_forward, "Fwd(T) (default 20ms)")
      ->type_name("TIME");
  multimodal.add_option("--vision-backward", flags.vision_backward, "Bwd(V) (default 2 x Fwd(V))")
      ->type_name("TIME");
  multimodal.add_option("--text-backward", flags.text_backward, "Bwd(T) (default 2 x Fwd(T))")
      ->type_name("TIME");
  multimodal.add_option("--loss", flags.loss, "each loss-gradient step, grad(T) and grad(V) (1ms)")
      ->type_name("TIME");
}

}  // namespace

int RunCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app{"stagecraft: plan, simulate and check pipeline-parallel training schedules"};
  app.allow_extras();
  app.footer(MetricDefinitions());
  RunFlags flags;
  OutputFlags output;
  bool derive_json = false;
  std::string list_what;

  CLI::App* simulate = app.add_subcommand("simulate", "simulate one training iteration");
  AddRunFlags(*simulate, flags);
  simulate->add_flag("--json", output.json, "print one JSON object instead of the table");
  simulate->add_flag("--timeline", output.timeline, "draw an ASCII timeline (small cases)");
  simulate->add_flag("--compare-policies", output.compare_policies,
                     "layer-list models: one row per shared-state policy (payload, direct, "
                     "shadow, auto)");
  simulate->add_flag("--compare-vision", output.compare_vision,
                     "configs with multimodal.vision: one row per vision-encoder placement "
                     "(colocated, decoupled, disaggregated, bubble-fill)");
  simulate->add_option("--trace", output.trace_path, "write a Chrome/Perfetto trace to FILE")
      ->type_name("FILE");
  simulate
      ->add_option("--write-schedule-csv", output.write_schedule_csv,
                   "write the simulated schedule as a compute-only CSV to FILE")
      ->type_name("FILE");

  CLI::App* check = app.add_subcommand("check",
                                       "validate a config or a schedule CSV: every "
                                       "violation, deadlocks in both p2p modes");
  AddRunFlags(*check, flags);

  CLI::App* derive = app.add_subcommand("derive", "closed-form bubble next to the simulated value");
  AddRunFlags(*derive, flags);
  derive->add_flag("--json", derive_json, "print one JSON object");

  CLI::App* list = app.add_subcommand(
      "list",
      "list the choices: schedules, placements, p2p, metrics, presets, collectives, vision");
  list->add_option("what", list_what,
                   "schedules | placements | p2p | metrics | presets | collectives | vision");

  BenchFlags bench_flags;
  CLI::App* bench = AddBenchCommand(app, flags, bench_flags);
  CommFlags comm_flags;
  CLI::App* comm = AddCommCommand(app, comm_flags);
  bool memory_json = false;
  CLI::App* memory = app.add_subcommand(
      "memory", "memory per device: model states, activations, shared state vs capacity");
  AddRunFlags(*memory, flags);
  memory->add_flag("--json", memory_json, "print one JSON object");
  MultimodalFlags multimodal_flags;
  CLI::App* multimodal = app.add_subcommand(
      "multimodal",
      "multimodal cost tables: contrastive losses, Engram tables, CP indexer balance");
  multimodal
      ->add_option("topic", multimodal_flags.topic,
                   "contrastive | contrastive-order | engram | cp | images")
      ->required();
  multimodal
      ->add_option("--ranks", multimodal_flags.ranks,
                   "D data-parallel ranks (contrastive), or cp (cp, images)")
      ->type_name("N");
  multimodal->add_option("--batch", multimodal_flags.batch, "pairs per rank b")->type_name("B");
  multimodal->add_option("--width", multimodal_flags.width, "embedding width e")->type_name("E");
  multimodal
      ->add_option("--tokens", multimodal_flags.tokens,
                   "tokens a rank looks up per iteration (engram; default 131072)")
      ->type_name("N");
  multimodal->add_option("--owners", multimodal_flags.owners, "Engram owner counts, e.g. 8,16")
      ->type_name("G,...");
  multimodal->add_option("--seq-len", multimodal_flags.seq_len, "sequence length (cp, images)")
      ->type_name("S");
  multimodal
      ->add_option("--compress-ratio", multimodal_flags.compress_ratio, "compression ratio m (cp)")
      ->type_name("M");
  AddMultimodalImageFlags(*multimodal, multimodal_flags);
  AddMultimodalOrderFlags(*multimodal, multimodal_flags);
  ValidateFlags validate_flags;
  CLI::App* validate = app.add_subcommand(
      "validate", "the cost model against published measured runs (doc/fidelity.md)");
  validate->add_option("paths", validate_flags.paths,
                       "suite files or folders (default bench/validation/runs)");
  validate
      ->add_option("--max-mape", validate_flags.max_mape,
                   "exit 1 when the mean absolute percentage error is above PCT")
      ->type_name("PCT");
  validate->add_option("--csv", validate_flags.csv_path, "write one line per run to FILE")
      ->type_name("FILE");
  for (CLI::App* command :
       {simulate, check, derive, list, bench, comm, memory, multimodal, validate}) {
    command->allow_extras();
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help, out, err);
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help, out, err);
  } catch (const CLI::ParseError& error) {
    const std::vector<CLI::App*> parsed = app.get_subcommands();
    return UsageError(PhraseParseError(error, parsed.empty() ? "" : parsed.back()->get_name()),
                      err);
  }
  const std::vector<CLI::App*> chosen = app.get_subcommands();
  if (chosen.empty()) {
    const std::vector<std::string> extras = app.remaining();
    if (extras.empty()) return UsageError("expected a command: " + JoinChoices(kCommands), err);
    return UsageError("unknown command '" + extras.front() + "'" +
                          DidYouMean(extras.front(), kCommands) + " (expected " +
                          JoinChoices(kCommands) + ")",
                      err);
  }
  if (!chosen.front()->remaining().empty()) {
    return UsageError(ExtraArgumentsMessage(*chosen.front(), chosen.front()->remaining()), err);
  }
  if (*simulate) return RunSimulate(flags, output, out, err);
  if (*check) return RunCheck(flags, out, err);
  if (*derive) return RunDerive(flags, derive_json, out, err);
  if (*bench) return RunBenchSchedules(flags, bench_flags, out, err);
  if (*comm) return RunComm(comm_flags, out, err);
  if (*memory) return RunMemory(flags, memory_json, out, err);
  if (*multimodal) return RunMultimodal(multimodal_flags, out, err);
  if (*validate) return RunValidate(validate_flags, out, err);
  return RunList(list_what, out, err);
}

}  // namespace stagecraft
