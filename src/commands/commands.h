// The commands as the run library tells them: each takes its spec and writes what it says into a
// Transcript (the answer and the diagnostics, in order); a failure comes back as an Error whose
// kind the command line maps to an exit code (cli/app.cc). An error with an empty message was
// already said in the transcript. Files are read and written through the spec's `files`.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "commands/transcript.h"
#include "core/progress.h"
#include "core/result.h"
#include "run/run_setup.h"
#include "run/simulate.h"

namespace stagecraft {

// What `simulate` shows besides the summary.
struct OutputSpec {
  bool json = false;                       // --json
  bool timeline = false;                   // --timeline
  std::optional<std::string> trace_path;   // --trace FILE (unset: no trace)
  std::optional<std::string> report_path;  // --report FILE.html (unset: no report)
  std::string write_schedule_csv;          // --write-schedule-csv FILE
  bool compare_policies = false;           // --compare-policies
  bool compare_vision = false;             // --compare-vision
  ProgressSink progress;                   // a long run's phases; nullptr: none (cli/app.cc)
};

// SimulatePrepared as the text commands tell it: the notes to `err` first; on failure the
// error (FormatError) too, and an error with the same kind and no message (already said).
Status SimulateRun(const PreparedRun& run, RunOutcome& result, std::ostream& err,
                   const ProgressSink& progress = nullptr);

Status RunSimulate(const RunSpec& flags, const OutputSpec& output, Transcript& transcript);
// Violations come back as kViolation, or kDeadlock when one of them is a deadlock.
Status RunCheck(const RunSpec& flags, Transcript& transcript);
Status RunDerive(const RunSpec& flags, bool json, Transcript& transcript);
// derive for a CSA2 layer list: per-cut payloads, state bytes closed form, per-layer FLOPs and
// parameters, KV cache per token, ship vs shadow (a transformer's is DeriveTransformer, derive.h).
Status DeriveLayerModel(const PreparedRun& run, bool json, std::ostream& out, std::ostream& err);
// Layer-list models: the state-aware and cost-only partitions, and every state policy, each
// the spec with one more edit, prepared and simulated as `simulate` does (the configured
// variant's row is the headline run); one table row per variant.
Result<std::string> ComparePartitions(const RunSpec& spec);
Result<std::string> ComparePolicies(const RunSpec& spec);
// Every vision-encoder placement of a multimodal run (`base`, the spec prepared): step time,
// bubble, the encoder's work on the first stage's rank, memory, and the Engram traffic left
// exposed (`--compare-vision`).
Result<std::string> CompareVision(const RunSpec& spec, const PreparedRun& base);

Status RunList(const std::string& what, Transcript& transcript);

// bench-schedules: the sweep's own flags (the run flags come in RunSpec).
struct BenchSpec {
  std::optional<std::string> microbatches_list;  // --microbatches-list 8,16,...; unset = 8..256
  std::optional<std::string> pp_list;            // --pp-list 4,8; unset = the config's (or --pp)
  std::string csv_path;                          // --csv FILE; "" = no CSV
  std::string svg_prefix;                        // --svg-prefix P: P-bubble.svg, P-pareto.svg
  // The points simulated (core/progress.h); nullptr: none (cli/app.cc).
  ProgressSink progress;
};

// Every registered schedule x microbatch counts x pp values, each prepared and simulated as
// `simulate` would; prints one table. Exit 1 when a point's schedule is broken or deadlocks.
Status RunBenchSchedules(const RunSpec& flags, const BenchSpec& bench, Transcript& transcript);
// The applicability rule (which vpp a schedule runs at, which points are skipped), for --help.
const char* BenchSchedulesRule();

// validate: the cost model against published measured runs (validate.cc).
struct ValidateSpec {
  std::vector<std::string> paths;  // files or folders of *.yaml; none = bench/validation/runs
  std::optional<double> max_mape;  // --max-mape PCT: exit 1 above it
  std::string csv_path;            // --csv FILE: one line per run
  bool json = false;               // --json: one object (run counts, MAPE, per source, memory)
  bool kernels = false;  // --kernels: the kernel suite (bench/validation/kernels/*.csv) instead
  bool serving = false;  // --serving: the serving suite (bench/validation/serving/*.yaml) instead
  // --leave-one-out: each source's error with the constants the suite chooses (each generation's
  // sustained GEMM share) chosen from the other sources' runs.
  bool leave_one_out = false;
};
Status RunValidate(const ValidateSpec& flags, Transcript& transcript);
// validate --kernels (validate_kernels.cc); RunValidate hands over to it.
Status RunValidateKernels(const ValidateSpec& flags, Transcript& transcript);
// validate --serving (validate_serving.cc).
Status RunValidateServing(const ValidateSpec& flags, Transcript& transcript);

// comm: one collective's α-β cost on a preset cluster (comm_report.cc).
struct CommSpec {
  std::string operation;           // allreduce, reducescatter, ...
  std::string bytes = "1GiB";      // --bytes SIZE (the whole array, nccl-tests' size)
  std::string ranks = "8";         // --ranks N (parsed by RunComm)
  std::string cluster = "h100";    // --cluster PRESET (DEVICE or DEVICExNODES)
  std::string algorithm = "ring";  // --algorithm ring|tree|hierarchical
  bool json = false;
};
Status RunComm(const CommSpec& flags, Transcript& transcript);

// kernel: one kernel timed as the simulator times it (kernel_report.cc). Values stay text until
// RunKernel reads them, so each error names its flag; an unset optional is a flag not given.
struct KernelSpec {
  std::string op;                       // gemm | grouped-gemm | attention | memory
  std::vector<std::string> dims;        // gemm: M N K
  std::optional<std::string> batch;     // --batch: GEMM members (groups), attention's batch
  std::optional<std::string> heads;     // --heads (attention)
  std::optional<std::string> kv_heads;  // --kv-heads (attention; default --heads)
  std::optional<std::string> head_dim;  // --head-dim (attention)
  std::optional<std::string> seq;       // --seq: queries (attention)
  std::optional<std::string> seq_kv;    // --seq-kv: keys (attention; default --seq)
  std::optional<std::string> pass;      // --pass forward|backward (attention)
  std::optional<std::string> impl;      // --impl flash2|flash3|cudnn|te|triton (attention)
  std::optional<std::string> bytes;     // --bytes SIZE (memory)
  bool causal = false;                  // --causal (attention)
  std::string dtype = "bf16";           // --dtype bf16|fp16|fp8 (gemm also fp32)
  std::string cluster = "h100";         // --cluster PRESET
  bool in_step = false;                 // --in-step: the step's sustained GEMM rate
  bool json = false;
};
Status RunKernel(const KernelSpec& flags, Transcript& transcript);

// multimodal: the multimodal cost formulas as tables (multimodal_tables.cc).
struct MultimodalTablesSpec {
  std::string topic;     // the subcommand: contrastive | contrastive-order | engram | cp | images
  bool json = false;     // --json: one JSON object instead of the table
  int32_t ranks = 8;     // --ranks: D (contrastive, contrastive-order) or cp (cp, images)
  int64_t batch = 256;   // --batch: pairs per rank
  int64_t width = 1024;  // --width: embedding width
  std::string owners = "8,16,32,64,128";  // --owners: Engram owner counts
  int64_t tokens = 131072;     // --tokens: a rank's local batch (engram; V4.1 example: 32 × 4096)
  int64_t seq_len = 1048576;   // --seq-len: tokens of a sample (cp, images)
  int32_t compress_ratio = 4;  // --compress-ratio (cp)
  // images: a sample's images over cp ranks and the I/O criterion.
  int32_t images = 16;                           // --images: images in the sample
  std::string image_tokens = "uniform:64-1024";  // --image-tokens: tokens per image (drawn)
  uint64_t seed = 1;                             // --seed of the draw
  double bytes_per_image_token = 5292;   // --bytes-per-image-token: 9 × 14×14 px × 3 B (raw RGB)
  std::string io_bandwidth = "2GB/s";    // --io-bandwidth: B_IO, storage reads per rank (assumed)
  std::string gpu_flops = "400TFLOP/s";  // --gpu-flops: B_GPU, sustained (989.5 peak × 40%)
  std::string flops_per_token = "105GFLOP";  // --flops-per-token: C, 3 × 35 GFLOP (fwd + bwd)
  // contrastive-order: one contrastive step, sequential and overlapped.
  std::string device = "h800";          // --device: preset whose nodes carry the all-gathers
  std::string vision_forward = "30ms";  // --vision-forward: Fwd(V)
  std::string text_forward = "20ms";    // --text-forward: Fwd(T)
  std::string vision_backward;          // --vision-backward: Bwd(V); "" = 2 × Fwd(V)
  std::string text_backward;            // --text-backward: Bwd(T); "" = 2 × Fwd(T)
  std::string loss = "1ms";             // --loss: each of the two loss-gradient steps
};
Status RunMultimodal(const MultimodalTablesSpec& flags, Transcript& transcript);
// `multimodal images` (multimodal_images.cc).
Status RunMultimodalImages(const MultimodalTablesSpec& flags, Transcript& transcript);
// The topics, each a subcommand of `multimodal`, in the order help lists them.
const std::vector<std::string>& MultimodalTopics();

// memory: per-device model states, activations and shared state against the capacity
// (memory_report.cc). A device that does not fit is kInfeasible (exit 1).
Status RunMemory(const RunSpec& flags, bool json, Transcript& transcript);

}  // namespace stagecraft
