#include "cli/command_flags.h"

#include <algorithm>
#include <initializer_list>

namespace stagecraft {
namespace {

// The type of every flag that names an output file or folder (issue 35, D17): its value must
// name one, so an empty value (`--report ''`) and a flag taken for the value (`--report
// --json`) are refused here, before anything runs, for every output flag at once.
CLI::Validator OutputPath() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        if (value.empty()) {
          return "expected a file name after the flag, got an empty one (name the file to write)";
        }
        if (value.rfind("--", 0) == 0) {
          return "expected a file name after the flag, got the flag '" + value +
                 "' (name the file to write right after the flag)";
        }
        return "";
      },
      "");
}

// The commands that search or serve take a config with the model and cluster, and of the run
// flags only the named ones (the rest are what they choose).
void AddModelFlags(CLI::App& command, RunSpec& run, std::initializer_list<std::string> flags) {
  command.add_option("config", run.config_path,
                     "YAML config with the model and cluster (doc/config.md); none = the "
                     "bundled example");
  for (const RunOverride& row : RunOverrides()) {
    if (std::find(flags.begin(), flags.end(), row.flag) != flags.end()) {
      command.add_option(row.flag, run.*row.field, row.help)->type_name(row.type_name);
    }
  }
}

// `multimodal images`: the sample's images and the I/O criterion's rates.
void AddMultimodalImageFlags(CLI::App& images, MultimodalTablesSpec& flags) {
  images.add_option("--ranks", flags.ranks, "context-parallel ranks cp (default 8)")
      ->type_name("N");
  images.add_option("--seq-len", flags.seq_len, "tokens of the sample s (default 1048576)")
      ->type_name("S");
  images.add_option("--images", flags.images, "images in the sample (default 16)")->type_name("N");
  images
      .add_option("--image-tokens", flags.image_tokens,
                  "tokens per image: fixed:N, uniform:A-B or choices:256x3,1024 (default "
                  "uniform:64-1024)")
      ->type_name("DIST");
  images.add_option("--seed", flags.seed, "seed of the image-token draw (default 1)")
      ->type_name("N");
  images
      .add_option("--bytes-per-image-token", flags.bytes_per_image_token,
                  "storage bytes read per image token (default 5292, raw RGB)")
      ->type_name("B");
  images
      .add_option("--io-bandwidth", flags.io_bandwidth,
                  "storage read bandwidth per rank, B_IO (default 2GB/s)")
      ->type_name("BW");
  images
      .add_option("--gpu-flops", flags.gpu_flops,
                  "sustained FLOP/s per rank, B_GPU (default 400TFLOP/s)")
      ->type_name("RATE");
  images
      .add_option("--flops-per-token", flags.flops_per_token,
                  "training FLOPs a rank spends per token, C (default 105GFLOP: the whole V4.1 "
                  "backbone, 3 x 35 GFLOP forward; divide by the pipeline and tensor ranks that "
                  "share a token)")
      ->type_name("FLOP");
}

// `multimodal contrastive-order`: the tower times and the cluster of the all-gathers.
void AddMultimodalOrderFlags(CLI::App& order, MultimodalTablesSpec& flags) {
  order.add_option("--vision-forward", flags.vision_forward, "Fwd(V) (default 30ms)")
      ->type_name("TIME");
  order.add_option("--text-forward", flags.text_forward, "Fwd(T) (default 20ms)")
      ->type_name("TIME");
  order.add_option("--vision-backward", flags.vision_backward, "Bwd(V) (default 2 x Fwd(V))")
      ->type_name("TIME");
  order.add_option("--text-backward", flags.text_backward, "Bwd(T) (default 2 x Fwd(T))")
      ->type_name("TIME");
  order.add_option("--loss", flags.loss, "each loss-gradient step, grad(T) and grad(V) (1ms)")
      ->type_name("TIME");
}

// The contrastive shape: D ranks of b pairs with e-wide embeddings.
void AddContrastiveShapeFlags(CLI::App& topic, MultimodalTablesSpec& flags) {
  topic.add_option("--ranks", flags.ranks, "D data-parallel ranks (default 8)")->type_name("N");
  topic.add_option("--batch", flags.batch, "pairs per rank b (default 256)")->type_name("B");
  topic.add_option("--width", flags.width, "embedding width e (default 1024)")->type_name("E");
}

}  // namespace

void AddRunFlags(CLI::App& command, RunSpec& flags) {
  command.add_option("config", flags.config_path,
                     "YAML config (doc/config.md); none = the bundled example");
  for (const RunOverride& row : RunOverrides()) {
    command.add_option(row.flag, flags.*row.field, row.help)->type_name(row.type_name);
  }
}

void AddSimulateFlags(CLI::App* simulate, RunSpec& flags, OutputSpec& output) {
  AddRunFlags(*simulate, flags);
  simulate->add_flag("--json", output.json, "print one JSON object instead of the table");
  simulate->add_flag("--timeline", output.timeline,
                     "draw an ASCII timeline (small cases; a larger one prints why it is skipped)");
  simulate->add_flag("--compare-policies", output.compare_policies,
                     "layer-list models: one row per shared-state policy (payload, direct, "
                     "shadow, auto)");
  simulate->add_flag("--compare-vision", output.compare_vision,
                     "configs with multimodal.vision: one row per vision-encoder placement "
                     "(colocated, decoupled, disaggregated, bubble-fill)");
  simulate->add_option("--trace", output.trace_path, "write a Chrome/Perfetto trace to FILE")
      ->type_name("FILE")
      ->check(OutputPath());
  simulate
      ->add_option("--report", output.report_path,
                   "write a self-contained HTML report (timeline, memory, bubble split, "
                   "derivation) to FILE")
      ->type_name("FILE")
      ->check(OutputPath());
  simulate
      ->add_option("--write-schedule-csv", output.write_schedule_csv,
                   "write the simulated schedule as a compute-only CSV to FILE")
      ->type_name("FILE")
      ->check(OutputPath());
}

void AddDeriveFlags(CLI::App* derive, RunSpec& flags, bool& json) {
  AddRunFlags(*derive, flags);
  derive->add_flag("--json", json, "print one JSON object");
}

void AddListFlags(CLI::App* list, std::string& what) {
  list->add_option("what", what,
                   "schedules | placements | p2p | metrics | presets | collectives | vision");
}

void AddMemoryFlags(CLI::App* memory, RunSpec& flags, bool& json) {
  AddRunFlags(*memory, flags);
  memory->add_flag("--json", json, "print one JSON object");
}

void AddValidateFlags(CLI::App* validate, ValidateSpec& flags) {
  validate->add_option("paths", flags.paths,
                       "suite files or folders (default bench/validation/runs, or "
                       "bench/validation/kernels with --kernels, bench/validation/serving with "
                       "--serving)");
  validate
      ->add_option("--max-mape", flags.max_mape,
                   "exit 1 when the mean absolute percentage error is above PCT")
      ->type_name("PCT");
  validate->add_flag("--json", flags.json,
                     "print one JSON object: runs, mape, within_10, sources, memory, decisions");
  validate->add_flag("--kernels", flags.kernels,
                     "the kernel suite instead: published per-shape kernel timings "
                     "(default bench/validation/kernels)");
  validate->add_flag("--serving", flags.serving,
                     "the serving suite instead: published measured serving figures rerun by "
                     "`serve` (default bench/validation/serving)");
  validate->add_flag("--leave-one-out", flags.leave_one_out,
                     "each source's error with the sustained GEMM share chosen from the other "
                     "sources' runs");
  validate->add_option("--csv", flags.csv_path, "write one line per run to FILE")
      ->type_name("FILE")
      ->check(OutputPath());
}
// bench-schedules: the run flags, less those the sweep sets itself, and the sweep's own.
void AddBenchFlags(CLI::App* bench, RunSpec& flags, BenchSpec& bench_flags) {
  AddRunFlags(*bench, flags);
  // Refused with a pointer to the sweep's own flags (RunBenchSchedules), so hidden from --help.
  for (const char* swept :
       {"--schedule", "--microbatches", "--global-batch-size", "--schedule-csv"}) {
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
      ->type_name("FILE")
      ->check(OutputPath());
  bench
      ->add_option("--svg-prefix", bench_flags.svg_prefix,
                   "write PREFIX-bubble.svg (bubble vs m) and PREFIX-pareto.svg (peak memory vs "
                   "bubble, Pareto front)")
      ->type_name("PREFIX")
      ->check(OutputPath());
}

void AddKernelFlags(CLI::App* kernel, KernelSpec& flags) {
  kernel->add_option("op", flags.op, "gemm | grouped-gemm | attention | memory")->required();
  kernel->add_option("extents", flags.dims, "gemm: M N K (C[M x N] = A[M x K] B[K x N])");
  kernel->add_option("--batch", flags.batch, "GEMM members (groups); attention's batch")
      ->type_name("B");
  kernel->add_option("--heads", flags.heads, "attention: query heads")->type_name("H");
  kernel->add_option("--kv-heads", flags.kv_heads, "attention: key/value heads (default --heads)")
      ->type_name("G");
  kernel->add_option("--head-dim", flags.head_dim, "attention: head dimension")->type_name("D");
  kernel->add_option("--seq", flags.seq, "attention: queries per sequence")->type_name("S");
  kernel->add_option("--seq-kv", flags.seq_kv, "attention: keys per sequence (default --seq)")
      ->type_name("S2");
  kernel->add_flag("--causal", flags.causal, "attention: causal mask");
  kernel->add_option("--pass", flags.pass, "attention: forward (default) | backward")
      ->type_name("P");
  kernel
      ->add_option("--impl", flags.impl,
                   "attention: flash2 | flash3 | cudnn | te | triton (default: te's choice)")
      ->type_name("I");
  kernel->add_option("--bytes", flags.bytes, "memory: bytes read plus written, e.g. 256MiB")
      ->type_name("SIZE");
  kernel->add_option("--dtype", flags.dtype, "bf16 (default) | fp16 | fp8 | fp32 (gemm)")
      ->type_name("T");
  kernel->add_option("--cluster", flags.cluster, "device preset (default h100; list presets)")
      ->type_name("PRESET");
  kernel->add_flag("--in-step", flags.in_step,
                   "gemm: at the rate a training step sustains (default: isolated, as a kernel "
                   "benchmark times it)");
  kernel->add_flag("--json", flags.json, "print one JSON object (time_us, tflops, bound, ...)");
}

void AddCommFlags(CLI::App* comm, CommSpec& flags) {
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
}

// `plan`: the model and cluster flags of a run, the planner's own.
void AddPlanFlags(CLI::App* command, PlanSpec& plan, PlanConstraintText& constraints,
                  std::string& engine, std::vector<std::string>& export_to, bool& json) {
  AddModelFlags(*command, plan.run, {"--hf-config", "--cluster", "--seq-len"});
  command->add_option("--gpus", plan.gpus, "the GPUs N every layout fills (required)")
      ->type_name("N");
  command
      ->add_option("--global-batch-size", plan.global_batch, "sequences per iteration B (required)")
      ->type_name("B");
  command
      ->add_option("--engine", engine,
                   "whose rules: megatron, torchtitan, deepspeed or any (default any)")
      ->type_name("ENGINE");
  command->add_option("--top", plan.top, "plans shown (default 10)")->type_name("K");
  command
      ->add_option("--simulate", plan.simulate,
                   "best screened candidates simulated exactly (default 50)")
      ->type_name("K");
  const struct {
    const char* flag;
    std::string* text;
    const char* help;
    const char* type;
  } constraint_flags[] = {
      {"--tp", &constraints.tp, "only these tensor-parallel sizes", "T"},
      {"--pp", &constraints.pp, "only these pipeline-parallel sizes", "P"},
      {"--vpp", &constraints.vpp, "only these chunks per rank", "V"},
      {"--cp", &constraints.cp, "only these context-parallel sizes", "C"},
      {"--ep", &constraints.ep, "only these expert-parallel sizes", "E"},
      {"--dp", &constraints.dp, "only these data-parallel sizes", "D"},
      {"--micro-batch-size", &constraints.micro_batch_size, "only these micro-batch sizes", "B"},
      {"--zero", &constraints.zero,
       "only these ZeRO stages, 0-3 (1: Megatron's distributed optimizer, 3: FSDP)", "Z"},
      {"--schedule", &constraints.schedule, "only these schedules (stagecraft list schedules)",
       "NAMES"},
      {"--recompute", &constraints.recompute,
       "only these recomputations: none, selective, selective-op, full", "MODES"}};
  for (const auto& row : constraint_flags) {
    command
        ->add_option(row.flag, *row.text,
                     std::string(row.help) + " (a value, a list A,B or a range A-B)")
        ->type_name(row.type);
  }
  command->add_option("--max-pp", plan.max_pp, "at most this many pipeline stages")->type_name("P");
  command
      ->add_option("--layout", plan.layout,
                   "rank your own layout among the plans, with what the best saves against it: "
                   "\"key value\" pairs of engine, tp, pp, vpp, cp, ep, dp, mbs, schedule, "
                   "recompute, zero (e.g. \"tp 8 pp 4 vpp 2\"; doc/plan.md)")
      ->type_name("SPEC");
  command
      ->add_option("--memory-headroom", plan.headroom,
                   "share of each device kept free, 0-0.9 (default 0)")
      ->type_name("FRACTION");
  command
      ->add_option("--export", export_to,
                   "write the best plan's launch files for ENGINE (megatron, torchtitan or "
                   "deepspeed) into the folder DIR (doc/plan.md)")
      ->expected(2)
      ->type_name("ENGINE DIR")
      ->check(OutputPath());
  command->add_flag("--json", json, "print one JSON object");
  command
      ->add_option("--jobs", plan.jobs,
                   "threads that prepare and simulate candidates (default 1; under mpirun the "
                   "processes split the work instead)")
      ->type_name("N");
  command
      ->add_option("--report", plan.report_path,
                   "write a self-contained HTML report (ranked plans, Pareto front, rejections) "
                   "to FILE")
      ->type_name("FILE")
      ->check(OutputPath());
  command
      ->add_option("--clusters", plan.sweep_clusters,
                   "a hardware sweep: plan once per cluster preset (DEVICExNODES, comma-"
                   "separated) and compare the best plans; each fills --gpus, or all its GPUs")
      ->delimiter(',')
      ->type_name("LIST");
}

// `export`: the run flags (the layout to write), the engine and the folder.
void AddExportFlags(CLI::App* command, ExportSpec& spec, std::string& engine) {
  AddRunFlags(*command, spec.run);
  command->add_option("--engine", engine, "megatron, torchtitan or deepspeed (required)")
      ->type_name("ENGINE");
  command->add_option("--out", spec.dir, "the folder to write into, which must exist (required)")
      ->type_name("DIR")
      ->check(OutputPath());
}

// `checkpoint`: the run flags, the manifest's own.
void AddCheckpointFlags(CLI::App* command, CheckpointSpec& spec) {
  AddRunFlags(*command, spec.run);
  command->add_option("--reshard-to", spec.reshard_to, "resume on the layout of OTHER.yaml")
      ->type_name("OTHER");
  command->add_option("--omit", spec.omit, "leave these entries out (resume-exactness check)")
      ->type_name("NAME,...");
  command
      ->add_option("--storage", spec.storage,
                   "the save's cost on this tier (tectonic, peer-memory, s3, local-nvme) and the "
                   "iteration that saves simulated; with --reshard-to, the load time")
      ->type_name("TIER");
  command->add_flag("--sync-save", spec.sync_save, "with --storage: the write blocks training");
  command
      ->add_option("--trace", spec.trace_path,
                   "with --storage: Chrome trace of the saving iteration to FILE")
      ->type_name("FILE")
      ->check(OutputPath());
  command->add_flag("--json", spec.json, "print one JSON object");
}

// `goodput`: failures, the checkpoint interval and the share of the run that trains.
void AddGoodputFlags(CLI::App* command, GoodputSpec& spec) {
  command->add_option("config", spec.config_path, "YAML config: the GPUs of the job (optional)");
  const auto option = [&](const char* flag, std::optional<std::string>& field, const char* type,
                          const char* help) {
    command->add_option(flag, field, help)->type_name(type);
  };
  option("--gpus", spec.gpus, "N", "GPUs of the job (default: the config's world)");
  option("--gpus-per-node", spec.gpus_per_node, "G", "GPUs per node (default 8 or the config's)");
  option("--failures-per-1000-node-days", spec.failures_per_1000_node_days, "R",
         "failure rate per node (Meta RSC-1: 6.5)");
  option("--mtbf-hours", spec.mtbf_hours, "H", "the job's own mean time between failures");
  option("--failure-trace", spec.failure_trace, "FILE",
         "the job's failure times, hours from its start, one a line");
  option("--failure-preset", spec.failure_preset, "NAME",
         "llama3-405b (default), meta-rsc1 or opt-175b");
  option("--checkpoint-blocking", spec.checkpoint_blocking, "T",
         "time a save stops training (required)");
  option("--checkpoint-persist", spec.checkpoint_persist, "T",
         "background write after it (async saves; default 0)");
  option("--restart", spec.restart, "T",
         "failure to training again: detection, scheduling, init, load (required)");
  option("--detection", spec.detection, "T", "instead of --restart, its parts: detection,");
  option("--reschedule", spec.reschedule, "T", "rescheduling onto healthy nodes,");
  option("--init", spec.init, "T", "initialization,");
  option("--load", spec.load, "T", "the checkpoint's load,");
  option("--warmup", spec.warmup, "T", "and warm-up steps");
  option("--interval", spec.interval, "T", "checkpoint interval (default: the optimum)");
  option("--days", spec.days, "D", "days of failure-free training (default 30)");
  option("--tokens", spec.tokens, "T", "with a CONFIG: tokens to train on, e.g. 15.6T");
  option("--monte-carlo", spec.monte_carlo, "RUNS", "simulate the run RUNS times");
  option("--seed", spec.seed, "S", "seed of the Monte Carlo and the overflow draw (default 1)");
  option("--weibull-shape", spec.weibull_shape, "K", "Weibull failure times (default 1)");
  option("--spares", spec.spares, "N", "Monte Carlo: hot spare nodes (default: always one)");
  option("--repair-time", spec.repair_time, "T", "Monte Carlo: a failed node's repair");
  option("--correlated", spec.correlated, "SHARE:NODES",
         "Monte Carlo: failures that take a group of nodes");
  option("--fp16-overflow-probability", spec.fp16_overflow, "P",
         "loss-scale overflows per step: skipped steps (default 0)");
  option("--storage", spec.storage, "TIER",
         "with a CONFIG: save costs from its checkpoint (tectonic, peer-memory, s3, local-nvme)");
  command->add_flag("--sync-save", spec.sync_save, "with --storage: the write blocks training");
  command->add_flag("--what-if", spec.what_if, "a table: failure rate x sync or async save");
  command->add_option("--plot", spec.plot_path, "write an SVG of waste vs the interval to FILE")
      ->type_name("FILE")
      ->check(OutputPath());
  command
      ->add_option("--report", spec.report_path,
                   "write a self-contained HTML report (goodput vs the interval, what-if) to FILE")
      ->type_name("FILE")
      ->check(OutputPath());
  command->add_flag("--json", spec.json, "print one JSON object");
}

// The engine's flags of `serve` and `serve-plan`: its formats, its batching and its limits.
void AddEngineFlags(CLI::App& command, EngineFlags& engine) {
  command
      .add_option("--engine", engine.engine,
                  "vllm | trtllm | sglang: that engine's defaults (limits, KV memory, block size, "
                  "admission, batching), which the flags below override (default: stagecraft's, "
                  "vLLM-like); trtllm-bench: TensorRT-LLM with the limits trtllm-bench sizes from "
                  "the model, layout and lengths (serve only)")
      ->type_name("E");
  command
      .add_option("--weight-dtype", engine.weight_dtype,
                  "bf16 | fp8 | int8 | int4 | fp4 (default: the config's weight_format or "
                  "quantization_config, else bf16)")
      ->type_name("T");
  command
      .add_option("--kv-dtype", engine.kv_dtype,
                  "bf16 | fp8 (default: the config's kv_cache_dtype, else bf16)")
      ->type_name("T");
  command
      .add_option("--batching", engine.batching,
                  "chunked (default: vLLM V1, Sarathi-Serve) | unchunked (TensorRT-LLM's "
                  "default: whole prompts beside the decodes) | prefill-first (vLLM V0: whole "
                  "prompts, then decodes)")
      ->type_name("B");
  command
      .add_option("--max-num-seqs", engine.max_num_seqs,
                  "sequences in one iteration per engine (vLLM's max_num_seqs, TensorRT-LLM's "
                  "max_batch_size; default 256)")
      ->type_name("N");
  command
      .add_option("--max-num-batched-tokens", engine.max_num_batched_tokens,
                  "tokens in one iteration per engine (vLLM's max_num_batched_tokens, "
                  "TensorRT-LLM's max_num_tokens; default 8192)")
      ->type_name("N");
  command
      .add_option("--kv-memory-fraction", engine.kv_memory_fraction,
                  "the KV cache's share of the memory left after weights and activations "
                  "(TensorRT-LLM's kv_cache_free_gpu_mem_fraction; default: the cache fills 90% "
                  "of the device, vLLM's gpu_memory_utilization)")
      ->type_name("F");
  command
      .add_option("--speculative-tokens", engine.speculative_tokens,
                  "speculative decoding: K draft tokens per step from an MTP module (one "
                  "decoder layer and the shared head), 1 to 16; needs --acceptance-rate")
      ->type_name("K");
  command
      .add_option("--acceptance-rate", engine.acceptance_rate,
                  "the probability in (0, 1] that a draft token is accepted, as measured for the "
                  "draft on the workload (not guessed); needs --speculative-tokens")
      ->type_name("A");
}

// `serve`: the model and cluster flags of a run, the serving layout and the workload.
void AddServeFlags(CLI::App* command, ServeSpec& serve) {
  AddModelFlags(*command, serve.run, {"--hf-config", "--cluster"});
  command
      ->add_option("--tp", serve.tp,
                   "tensor-parallel GPUs per stage (default: parallel.tp, else 1)")
      ->type_name("T");
  command
      ->add_option("--pp", serve.pp, "pipeline stages per replica (default: parallel.pp, else 1)")
      ->type_name("P");
  command
      ->add_option("--ep", serve.ep,
                   "expert-parallel GPUs per stage, a multiple of --tp: the routed experts split "
                   "E ways, the attention data-parallel over E/tp groups (vLLM's "
                   "--enable-expert-parallel; default: parallel.ep, else 1)")
      ->type_name("E");
  command->add_option("--replicas", serve.replicas, "replicas behind the router (default 1)")
      ->type_name("R");
  command
      ->add_option("--prefill-instances", serve.prefill_instances,
                   "disaggregated: prefill instances of the tp x pp layout (with "
                   "--decode-instances)")
      ->type_name("NP");
  command
      ->add_option("--decode-instances", serve.decode_instances,
                   "disaggregated: decode instances, fed by the prefill instances' KV transfers")
      ->type_name("ND");
  CLI::Option* rate =
      command->add_option("--rate", serve.rate_rps, "Poisson arrivals per second (default 1)")
          ->type_name("RPS");
  command
      ->add_option("--concurrency", serve.concurrency,
                   "a closed-loop client: N requests in flight, each completion sending the next "
                   "(benchmark_serving --max-concurrency; instead of --rate)")
      ->type_name("N")
      ->excludes(rate);
  command
      ->add_flag("--offline", serve.offline,
                 "every request at t = 0 (vLLM's benchmark_throughput; instead of --rate)")
      ->excludes(rate);
  command
      ->add_option("--arrival-cv", serve.arrival_cv,
                   "arrival gaps' coefficient of variation: 1 Poisson (default), else gamma")
      ->type_name("CV");
  command->add_option("--requests", serve.requests, "requests simulated (default 1000)")
      ->type_name("N");
  command->add_option("--seed", serve.seed, "seed of arrivals and lengths (default 1)")
      ->type_name("S");
  command->add_option("--prompt-tokens", serve.prompt_tokens, "N or A-B uniform (default 512)")
      ->type_name("LEN");
  command->add_option("--output-tokens", serve.output_tokens, "N or A-B uniform (default 64)")
      ->type_name("LEN");
  command
      ->add_option("--routing", serve.routing,
                   "round-robin (default) | least-outstanding | kv-aware (cached prefixes)")
      ->type_name("R");
  command
      ->add_option("--prefix-groups", serve.prefix_groups,
                   "requests share one of G prompt prefixes, cached per replica (default 0)")
      ->type_name("G");
  command
      ->add_option("--prefix-tokens", serve.prefix_tokens,
                   "tokens of each shared prefix, before the request's own --prompt-tokens")
      ->type_name("P");
  command
      ->add_option("--slo", serve.slo,
                   "per-request bounds (default ttft=0.4s,tpot=40ms); with ,percentile=50|90|99 "
                   "the run's percentiles are judged too")
      ->type_name("SLO");
  AddEngineFlags(*command, serve);
  command->add_flag("--eager", serve.eager,
                    "no CUDA graphs: an iteration lasts at least the host's issue of its kernels");
  command->add_option("--trace", serve.trace_path, "write a Chrome trace of the batches to FILE")
      ->type_name("FILE")
      ->check(OutputPath());
  command
      ->add_option("--report", serve.report_path,
                   "write a self-contained HTML report (latency CDFs against the SLO, KV cache "
                   "over time) to FILE")
      ->type_name("FILE")
      ->check(OutputPath());
  command
      ->add_option("--request-trace", serve.request_trace,
                   "the requests from a CSV of arrival_s,prompt_tokens,output_tokens (instead of "
                   "--rate, --requests and the lengths)")
      ->type_name("FILE");
  command->add_flag("--json", serve.json, "print one JSON object");
}

// `serve-plan`: the model and cluster flags of a run, the GPUs, the SLO and the workload.
void AddServePlanFlags(CLI::App* command, ServePlanSpec& plan) {
  AddModelFlags(*command, plan.run, {"--hf-config", "--cluster"});
  command->add_option("--gpus", plan.gpus, "the GPUs N the replicas fill (required)")
      ->type_name("N");
  command
      ->add_option("--slo", plan.slo,
                   "bounds at a percentile, e.g. ttft=0.4s,tpot=40ms,percentile=99 or "
                   "ttft_p90=0.4s,tpot_p90=40ms (required but with --offline)")
      ->type_name("SLO");
  command->add_option("--prompt-tokens", plan.prompt_tokens, "N or A-B uniform (default 512)")
      ->type_name("LEN");
  command->add_option("--output-tokens", plan.output_tokens, "N or A-B uniform (default 64)")
      ->type_name("LEN");
  command->add_option("--requests", plan.requests, "requests per rate probe (default 400)")
      ->type_name("N");
  command->add_option("--seed", plan.seed, "seed of arrivals and lengths (default 1)")
      ->type_name("S");
  command->add_option("--top", plan.top, "plans shown (default 10)")->type_name("K");
  command
      ->add_option("--concurrency", plan.concurrency,
                   "each layout at a closed loop of N requests in flight, ranked by output "
                   "tokens/s per GPU within the SLO (instead of the rate search)")
      ->type_name("N");
  command->add_flag("--offline", plan.offline,
                    "each layout with every request at t = 0, ranked by output tokens/s per GPU "
                    "(no SLO)");
  AddEngineFlags(*command, plan);
  command
      ->add_option("--svg", plan.svg_path,
                   "write the rates tried and their Pareto front (GPU-seconds per request vs P90 "
                   "TPOT) to FILE")
      ->type_name("FILE")
      ->check(OutputPath());
  command->add_flag("--json", plan.json, "print one JSON object");
  command
      ->add_option("--space", plan.space,
                   "search a published configuration space instead of one model's layouts: "
                   "'vidur' (Vidur's config explorer, 4,374 configurations; no --gpus or --slo)")
      ->type_name("NAME");
  command
      ->add_option("--space-traces", plan.space_traces,
                   "with --space: the directory of the traces' length tables NAME.csv (default "
                   "examples/vidur)")
      ->type_name("DIR");
  command
      ->add_option("--space-filter", plan.space_filter,
                   "with --space: only the configurations matching KEY=VALUE,... (model, trace, "
                   "cluster, scheduler, tp, pp, batch)")
      ->type_name("FILTER");
  command
      ->add_option("--delay-slo", plan.delay_slo,
                   "with --space: the P99 scheduling-delay bound of a capacity (default 5s, "
                   "Vidur's)")
      ->type_name("DURATION");
  command->add_option("--jobs", plan.jobs, "with --space: threads (default 1)")->type_name("N");
}

// `multimodal TOPIC`: one subcommand per table, each with only its own flags and --json.
void AddMultimodalFlags(CLI::App* multimodal, MultimodalTablesSpec& flags) {
  const auto topic = [&](const char* name, const char* description, const char* footer) {
    CLI::App* command = multimodal->add_subcommand(name, description);
    command->add_flag("--json", flags.json, "print one JSON object instead of the table");
    command->allow_extras();
    command->footer(footer);
    return command;
  };
  CLI::App* contrastive = topic(
      "contrastive", "memory and traffic of the global, local and SigLIP-ring contrastive losses",
      "Columns: the largest fp32 logit matrix a rank holds, the embedding bytes it receives "
      "and sends in the forward, and the communication steps.");
  AddContrastiveShapeFlags(*contrastive, flags);
  CLI::App* order =
      topic("contrastive-order", "one contrastive step, sequential vs overlapped all-gathers (ms)",
            "Per order: the step time, the compute in it and the all-gather time left exposed, "
            "then every task's start and end (ms).");
  AddContrastiveShapeFlags(*order, flags);
  order
      ->add_option("--device", flags.device,
                   "device preset of the gathers' nodes (default h800; stagecraft list presets)")
      ->type_name("PRESET");
  AddMultimodalOrderFlags(*order, flags);
  CLI::App* engram =
      topic("engram", "Engram table bytes and all-to-all times per owner count",
            "Per owner count G: the table bytes each owner holds and one Engram layer's fetch "
            "(ids + rows) and gradient all-to-alls, tables in device or in host memory (ms).");
  engram
      ->add_option("--tokens", flags.tokens,
                   "tokens a rank looks up per iteration (default 131072)")
      ->type_name("N");
  engram
      ->add_option("--owners", flags.owners,
                   "Engram owner counts, comma-separated (default 8,16,32,64,128)")
      ->type_name("G,...");
  engram
      ->add_option("--device", flags.device,
                   "device preset of the owners' nodes (default h800; stagecraft list presets)")
      ->type_name("PRESET");
  CLI::App* cp =
      topic("cp", "CSA2 indexer scan per context-parallel rank, contiguous vs zig-zag shards",
            "Each rank's indexer scan relative to the average (1.000 = balanced).");
  cp->add_option("--ranks", flags.ranks, "context-parallel ranks cp (default 8)")->type_name("N");
  cp->add_option("--seq-len", flags.seq_len, "sequence length s (default 1048576)")->type_name("S");
  cp->add_option("--compress-ratio", flags.compress_ratio, "compression ratio m (default 4)")
      ->type_name("M");
  CLI::App* images =
      topic("images", "a sample's images over context-parallel ranks, with the I/O criterion",
            "Per sharding (position, balanced, replicated): each rank's images, tokens, encoder "
            "TFLOP and bytes read; the criterion rho < (B_IO / B_GPU) * C holds when reading hides "
            "behind compute.");
  AddMultimodalImageFlags(*images, flags);
}

}  // namespace stagecraft
