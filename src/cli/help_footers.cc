#include "cli/help_footers.h"

namespace stagecraft {

const char* TopLevelHelpFooter() {
  return "Each command's flags and output: stagecraft COMMAND --help. The metrics simulate and\n"
         "derive print: stagecraft list metrics.";
}

const char* CheckHelpFooter() {
  return "Exit status: 0 clean, 1 violations found (each is listed), 2 bad input.\n"
         "Deadlocks are searched under every p2p mode (async, rendezvous, torch-pipelining)\n"
         "unless --p2p names one (stagecraft list p2p).";
}

const char* ListHelpFooter() {
  return "Each list is a table of names with a one-line description; the names are what\n"
         "--schedule, parallel.placement, --p2p, cluster.preset and --vision-placement accept.";
}

const char* CommHelpFooter() {
  return "time: the alpha-beta estimate (latency per step + bytes / link bandwidth) on the\n"
         "preset's links. algbw = bytes / time. busbw = algbw x the collective's factor for n\n"
         "ranks, as nccl-tests' PERFORMANCE.md defines it: all-reduce 2(n-1)/n; reduce-scatter,\n"
         "all-gather and all-to-all (n-1)/n; broadcast, reduce and send/recv 1. busbw is "
         "comparable\n"
         "with the link's bandwidth whatever n is.";
}

const char* KernelHelpFooter() {
  return "time: a GEMM's work, the slower of compute (its output tiles in waves over the SMs,\n"
         "each tile's K loop with its fill and drain, at the device's measured maximum matmul\n"
         "rate) and memory (its bytes at the achieved HBM bandwidth), plus the GEMM latency;\n"
         "attention at the implementation's measured share of the peak, and a memory-bound\n"
         "kernel at the achieved bandwidth, each at least the per-kernel floor. bound names\n"
         "what dominates. Isolated is what a kernel benchmark times; --in-step the GEMM rate a\n"
         "training step sustains. FLOPs count 2MNK a GEMM and FlashAttention's 4·b·h·s·s_kv·d\n"
         "forward (half causal, 2.5x backward). doc/fidelity.md (\"Kernels\") gives the sources\n"
         "and the kernel suite's error (stagecraft validate --kernels).";
}

const char* MemoryHelpFooter() {
  return "Columns, per device of each pipeline rank (GiB = 2^30 bytes; ZeRO: Rajbhandari et al.):\n"
         "  params_B    parameters of the rank's stages on one tensor-parallel rank, billions\n"
         "  params_GiB  parameter bytes (sharded over dp with ZeRO-3)\n"
         "  grads_GiB   gradient bytes (sharded over dp with ZeRO-2 and 3)\n"
         "  optim_GiB   optimizer state, Adam's moments and master weights (sharded with ZeRO-1+)\n"
         "  activ_GiB   peak activations of the microbatches in flight (recompute lowers it)\n"
         "  state_GiB   CSA2 shared state held for later stages (layer-list models)\n"
         "  total_GiB   their sum plus the framework reserve, against the device's capacity\n"
         "Exit status 1 when a device does not fit.";
}

const char* ValidateHelpFooter() {
  return "Each run's simulated iteration time against its published measurement; the error is\n"
         "the mean absolute percentage error (MAPE) over the runs (doc/fidelity.md).\n"
         "--kernels: each published kernel timing against `stagecraft kernel`, isolated.\n"
         "--leave-one-out: each source's runs with the sustained GEMM share chosen from the\n"
         "other sources' runs (the one constant the suite chooses).";
}

const char* PlanHelpFooter() {
  return "Every layout the engine can run (DP x TP x PP x CP x EP, virtual stages, micro-batch\n"
         "size, ZeRO/FSDP, recompute, schedule; doc/plan.md lists the rules and their sources) is\n"
         "screened with the cost model and the schedule's closed form; the best --simulate of\n"
         "them are simulated exactly and ranked by step time. A layout over the device memory\n"
         "is rejected, and every rejection is counted by reason. Exit status 1 when no layout\n"
         "fits.\n"
         "Each candidate sets the engine's own options (overlaps, sequence parallelism, ZeRO; CP\n"
         "and the loss: torchtitan's PyTorch context_parallel and cross_entropy); FP8, fused\n"
         "kernels, TP comm overlap, async TP and the precision pass from the config into every\n"
         "candidate unchanged, so set them there as the run will have them.";
}

const char* ExportHelpFooter() {
  return "The config's layout (tp, pp, dp, cp, ep, virtual stages, micro-batch size, schedule,\n"
         "recompute, ZeRO/FSDP and the split of its layers) is checked against the engine's "
         "rules,\n"
         "simulated as given and as the engine runs it (the engine's options, e.g. Megatron's\n"
         "overlaps), and written as the files `plan --export` writes; `simulate --from-ENGINE`\n"
         "reads them back to the same step. Exit status 1 when the engine's run does not fit the\n"
         "device (nothing is written); 2 for a layout the engine cannot run (doc/plan.md).";
}

const char* CheckpointHelpFooter() {
  return "Per device of each pipeline rank (GiB = 2^30 bytes): the weights and optimizer state\n"
         "(fp32 master, Adam m and v) as ZeRO / the distributed optimizer shard them, the small\n"
         "states (optimizer step, LR scheduler, CPU/CUDA/tensor-parallel RNG, loss scaler with\n"
         "fp16, data position) and the gradients, which are not saved. saved + grads = the model\n"
         "states of 'stagecraft memory'. --omit names entries to leave out; exit status 1 when\n"
         "the resume would then not be exact. --storage TIER adds save_s, the time the save\n"
         "blocks each rank, and simulates the iteration that ends in a save (its blocking part\n"
         "after the optimizer step on the rank's data-parallel stream; --trace FILE draws it);\n"
         "with --reshard-to it gives the load time (doc/fault-tolerance.md).";
}

const char* GoodputHelpFooter() {
  return "MTTF = 24 h / (rate per node-day x nodes) (Kokolis et al. 2024). Intervals: Young 1974\n"
         "sqrt(2 d M); Daly 2006 first-order sqrt(2 d (M + R)) and higher-order; the exact model\n"
         "(Daly 2006's complete cost function) gives the ETTR and its optimum, never below the\n"
         "persist. Times: ns, us, ms, s, min, h; a bare number is ms. Failure presets:\n"
         "llama3-405b (Llama 3 Table 5: 419 interruptions in 54 days on 2048 nodes), meta-rsc1\n"
         "(6.5 per 1000 node-days), opt-175b (OPT sec. 2.5: 105 restarts, ~60 days, 124 nodes).\n"
         "With a CONFIG, --storage prices the save from its checkpoint (tectonic, peer-memory,\n"
         "s3, local-nvme) and --tokens sets the length; the Monte Carlo takes --spares and\n"
         "--correlated.\n"
         "doc/fault-tolerance.md has the models and definitions.";
}

const char* ServeHelpFooter() {
  return "One serving layout (tp x pp GPUs per replica, replicas behind the router) under\n"
         "Poisson arrivals: the KV cache per token and per replica, each engine iteration's\n"
         "roofline (weights and KV reads against compute, TP all-reduces, PP hand-offs) and a\n"
         "request-level simulation with continuous batching, chunked prefill and preemption\n"
         "(doc/serving.md). Exit status 1 when the model does not fit the replica.";
}

const char* ServePlanHelpFooter() {
  return "Every tp (dividing the heads, within a node) x pp (dividing the layers) that fits the\n"
         "GPUs, its replicas filling them, colocated (each layout's highest rate meeting both\n"
         "P90 bounds, found by simulation: doubling, then bisection) and disaggregated (prefill-\n"
         "and decode-only instances, each phase's rate simulated, the best split of the GPUs),\n"
         "ranked by that rate per GPU (doc/serving.md). Exit status 1 when no layout meets the\n"
         "SLO; the message names the binding bound.";
}

}  // namespace stagecraft
