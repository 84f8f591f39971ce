#!/usr/bin/env bash
# stagecraft plan: llama-3-70b, torchtitan tp 1 pp 1 vpp 1 dp 16 cp 4 ep 1 mbs 1 m 32 1f1b recompute none zero 3
# on h100 nodes of 8 GPUs (64 GPUs in all); set your dataset and tokenizer in the job config.
# Run on every node: NODE_RANK, MASTER_ADDR and MASTER_PORT name this node and node 0.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
torchrun --nnodes 8 --nproc-per-node 8 --node-rank "${NODE_RANK:-0}" \
  --master-addr "${MASTER_ADDR:-localhost}" --master-port "${MASTER_PORT:-6000}" \
  -m torchtitan.train --job.config_file "$here/torchtitan.toml" "$@"
