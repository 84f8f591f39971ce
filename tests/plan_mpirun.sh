#!/bin/sh
# `mpirun -n 2 stagecraft plan ...` gives the same bytes as one process (issue 12, Part D).
#   plan_mpirun.sh STAGECRAFT MPIEXEC
set -eu
stagecraft=$1
mpiexec=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Open MPI refuses root unless told; CI containers run as root.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
args="plan --hf-config tests/golden/data/hf/llama-3-8b.json --cluster h100x2 --gpus 16 --global-batch-size 128 --seq-len 8192 --engine any --top 10 --simulate 20"
$stagecraft $args --json > "$out/one.json"
"$mpiexec" --oversubscribe -n 2 $stagecraft $args --json > "$out/mpi.json"
$stagecraft $args > "$out/one.txt"
"$mpiexec" --oversubscribe -n 2 $stagecraft $args > "$out/mpi.txt"
cmp "$out/one.json" "$out/mpi.json"
cmp "$out/one.txt" "$out/mpi.txt"
# A hardware sweep (--clusters): each cluster's planning split over the processes.
sweep="plan --hf-config tests/golden/data/hf/llama-3-8b.json --clusters h100x1,a100x2 --global-batch-size 64 --seq-len 8192 --simulate 10"
$stagecraft $sweep --json > "$out/sweep-one.json"
"$mpiexec" --oversubscribe -n 2 $stagecraft $sweep --json > "$out/sweep-mpi.json"
cmp "$out/sweep-one.json" "$out/sweep-mpi.json"
echo "mpirun -n 2: byte-identical to one process ($(wc -c < "$out/one.json") bytes of JSON, $(wc -c < "$out/one.txt") of text, $(wc -c < "$out/sweep-one.json") of a sweep's JSON)"
