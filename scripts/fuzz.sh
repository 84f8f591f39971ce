#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang, ASan + UBSan) in build-fuzz/ and runs each for a
# fixed time on a seed corpus made from examples/ and tests/golden/. A crash, hang or sanitizer
# report fails the script and leaves the input in build-fuzz/artifacts/ (turn it into an error
# golden and fix the bug, CONTRIBUTING.md).
#   scripts/fuzz.sh                     every target, FUZZ_SECONDS (default 60) each
#   FUZZ_RUNS=1000000 scripts/fuzz.sh   a fixed number of executions per target instead
#   scripts/fuzz.sh fuzz_csv ...        only the targets named
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
./scripts/install-deps.sh fuzz
dir=build-fuzz
CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++ -DSTAGECRAFT_BUILD_FUZZ=ON -DSTAGECRAFT_BUILD_TESTS=OFF \
  -DSTAGECRAFT_BUILD_BENCH=OFF >/dev/null
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(fuzz_config fuzz_schedule_csv fuzz_hf_config fuzz_torchtitan fuzz_cli fuzz_kernel_set
    fuzz_megatron_args fuzz_deepspeed fuzz_layout)
fi
cmake --build "$dir" --target "${targets[@]}"

# Seed corpora: the project's own inputs.
corpus="$root/$dir/corpus"
rm -rf "$corpus"
mkdir -p "$corpus"/{fuzz_config,fuzz_schedule_csv,fuzz_hf_config,fuzz_torchtitan,fuzz_cli,fuzz_kernel_set} \
  "$corpus/fuzz_megatron_args" "$corpus/fuzz_deepspeed" "$corpus/fuzz_layout" \
  "$root/$dir/artifacts"
# The kernel suite's files, cut to the fuzzer's input length, and the reader's golden cases.
for file in bench/validation/kernels/*.csv; do
  head -c 4096 "$file" >"$corpus/fuzz_kernel_set/$(basename "$file")"
done
cp tests/golden/data/kernels/*.csv "$corpus/fuzz_kernel_set/"
cp examples/*.yaml tests/golden/data/*.yaml "$corpus/fuzz_config/"
cp examples/*.csv tests/golden/data/*.csv "$corpus/fuzz_schedule_csv/" 2>/dev/null || true
cp tests/golden/data/hf/*.json "$corpus/fuzz_hf_config/"
printf '[model]\nflavor = "8B"\n[training]\nlocal_batch_size = 1\nseq_len = 8192\n[parallelism]\ntensor_parallel_degree = 2\n[activation_checkpoint]\nmode = "none"\n' > "$corpus/fuzz_torchtitan/8b.toml"
# 8B over pp 2 x 2 stages, each stage's modules listed (module_fqns_per_model_part).
{
  printf '[model]\nflavor = "8B"\n[training]\nlocal_batch_size = 4\nseq_len = 8192\n'
  printf '[parallelism]\npipeline_parallel_degree = 2\ntensor_parallel_degree = 4\n'
  printf 'pipeline_parallel_schedule = "Interleaved1F1B"\nmodule_fqns_per_model_part = [\n'
  for stage in 0 1 2 3; do
    printf '  ['
    [ $stage -eq 0 ] && printf '"tok_embeddings", '
    for layer in $(seq $((stage * 8)) $((stage * 8 + 7))); do printf '"layers.%d", ' $layer; done
    [ $stage -eq 3 ] && printf '"norm", "output"'
    printf '],\n'
  done
  printf ']\n[activation_checkpoint]\nmode = "full"\n'
} > "$corpus/fuzz_torchtitan/modules.toml"
printf 'from torchtitan.models.llama3.config_registry import llama3_8b\n\n\ndef run():\n    config = llama3_8b()\n    config.training.disable_cuda_graphs = True\n    config.parallelism = ParallelismConfig(\n        pipeline_parallel_degree=2,\n        num_pp_microbatches=4,\n        pipeline_parallel_schedule="Interleaved1F1B",\n    )\n    config.activation_checkpoint = None\n    return config\n' > "$corpus/fuzz_torchtitan/registry.py"
# fuzz_megatron_args: a dense layout with a layout string, a MoE + MLA model (DeepSeek-V3's
# arguments, as `plan --export megatron` writes them) and a Megatron-DeepSpeed one ('#D').
printf -- '--num-layers 32\n--hidden-size 4096\n--num-attention-heads 32\n--group-query-attention\n--num-query-groups 8\n--ffn-hidden-size 14336\n--swiglu\n--seq-length 8192\n--vocab-size 128256\n--micro-batch-size 1\n--global-batch-size 64\n--tensor-model-parallel-size 2\n--pipeline-model-parallel-size 2\n--pipeline-model-parallel-layout Et*15|t*16|tL\n--recompute-granularity full\n--recompute-method block\n--recompute-num-layers 2\n--use-distributed-optimizer\n' > "$corpus/fuzz_megatron_args/dense.txt"
printf -- '--num-layers 61\n--hidden-size 7168\n--num-attention-heads 128\n--multi-latent-attention\n--q-lora-rank 1536\n--kv-lora-rank 512\n--qk-head-dim 128\n--qk-pos-emb-head-dim 64\n--v-head-dim 128\n--ffn-hidden-size 18432\n--num-experts 256\n--moe-layer-freq ([0]*3+[1]*58)\n--moe-router-topk 8\n--moe-ffn-hidden-size 2048\n--moe-shared-expert-intermediate-size 2048\n--moe-grouped-gemm\n--moe-token-dispatcher-type alltoall\n--seq-length 4096\n--vocab-size 129280\n--micro-batch-size 1\n--global-batch-size 64\n--pipeline-model-parallel-size 8\n--expert-model-parallel-size 8\n' > "$corpus/fuzz_megatron_args/moe-mla.txt"
printf -- '#D\n--num-layers 70\n--hidden-size 14336\n--num-attention-heads 112\n--seq-length 2048\n--vocab-size 250880\n--micro-batch-size 2\n--global-batch-size 2048\n--tensor-model-parallel-size 4\n--pipeline-model-parallel-size 2\n--zero-stage 1\n--deepspeed\n' > "$corpus/fuzz_megatron_args/deepspeed.txt"
# fuzz_deepspeed: a ds_config.json and the Megatron-DeepSpeed arguments beside it, as
# `plan --export deepspeed` writes them (pipeline with ZeRO-1; no pipeline with ZeRO-3).
printf '{"train_batch_size": 64, "train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 16, "zero_optimization": {"stage": 1}, "bf16": {"enabled": true}}\n---\n--num-layers 32\n--hidden-size 4096\n--num-attention-heads 32\n--seq-length 4096\n--vocab-size 50304\n--micro-batch-size 1\n--global-batch-size 64\n--tensor-model-parallel-size 2\n--pipeline-model-parallel-size 2\n--zero-stage 1\n--deepspeed\n' > "$corpus/fuzz_deepspeed/pipe-zero1.txt"
printf '{"train_batch_size": 32, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2, "zero_optimization": {"stage": 3, "overlap_comm": true}, "bf16": {"enabled": true}}\n---\n--num-layers 24\n--hidden-size 2048\n--num-attention-heads 16\n--seq-length 2048\n--vocab-size 50304\n--micro-batch-size 2\n--global-batch-size 32\n--no-pipeline-parallel\n--zero-stage 3\n--deepspeed\n' > "$corpus/fuzz_deepspeed/zero3.txt"
# fuzz_layout: pipeline layouts over 64 decoders ('P', then '?' selects 64) and --layout texts.
printf 'P?Et*32|t*32L' > "$corpus/fuzz_layout/even.txt"
printf 'P?E(t*16|)*3t*16L' > "$corpus/fuzz_layout/group.txt"
printf 'tp 8 pp 4 vpp 2 mbs 1 schedule interleaved-1f1b' > "$corpus/fuzz_layout/megatron.txt"
printf 'engine torchtitan, tp 4, pp 2, cp 2, zero 3, recompute full' > "$corpus/fuzz_layout/titan.txt"
# fuzz_cli: each golden's command, one argument per line, up to the first shell operator.
index=0
for test in tests/golden/*/*.test; do
  command=$(sed -n 's/^command: stagecraft //p' "$test" | head -n 1)
  [ -n "$command" ] || continue
  command=${command%%[|;&>]*}
  index=$((index + 1))
  (set -f; printf '%s\n' $command >"$corpus/fuzz_cli/seed-$index")
done

runs=(-max_total_time="${FUZZ_SECONDS:-60}")
if [ -n "${FUZZ_RUNS:-}" ]; then runs=(-runs="$FUZZ_RUNS"); fi
for target in "${targets[@]}"; do
  work="$root"
  max_len=4096
  if [ "$target" = fuzz_cli ]; then
    work="$root/tests/golden/errors"  # '../data/...' in the seeds resolves
    max_len=256
  fi
  echo "fuzz: $target"
  (cd "$work" && "$root/$dir/fuzz/$target" "${runs[@]}" -max_len="$max_len" -timeout=10 \
     -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$root/$dir/artifacts/$target-" \
     "$corpus/$target" 2>&1 | grep -E "^(#[0-9]+ +(DONE|INITED)|stat::number_of_executed_units|stat::average_exec_per_sec|==[0-9]+==|SUMMARY|.*(crash|leak|timeout|deadly))" || true)
  if ls "$root/$dir/artifacts/$target-"* >/dev/null 2>&1; then
    echo "fuzz: $target found an input that fails: $(ls "$root/$dir/artifacts/$target-"*)" >&2
    exit 1
  fi
done
echo "fuzz: ok"
