#!/usr/bin/env bash
# Every check that needs a GPU, as one script for a session that is lent a GPU machine (the device tool runs
# it in the repository root; results go to $OUT, or ./gpu-results). Nothing here runs on a CPU-only machine:
# it stops at once, saying so. Record what it prints in benchmarks/README.md ("GPU" section) with the date.
#
#   bash benchmarks/gpu_session.sh            # about 5-8 minutes on one H200, most of it the install
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu-results}
mkdir -p "$OUT"
PY=.venv/bin/python

if ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "gpu_session: no nvidia-smi on this machine: nothing to measure" | tee "$OUT/summary.txt"
    exit 0
fi
[ -x "$PY" ] || make install >"$OUT/install.log" 2>&1 || { echo "gpu_session: make install failed"; exit 1; }

run() {  # name, command...: run with a time limit, keep the output, say how it ended
    local name=$1; shift
    echo "== $name: $*"
    timeout 300 "$@" >"$OUT/$name.log" 2>&1
    local rc=$?
    tail -n 25 "$OUT/$name.log"
    echo "== $name: exit $rc"
}

{
    nvidia-smi --query-gpu=name,memory.total,pcie.link.gen.max,pcie.link.width.max,driver_version --format=csv
    nvidia-smi topo -m
} >"$OUT/nvidia-smi.txt" 2>&1
run doctor     .venv/bin/commlab doctor
run topo       .venv/bin/commlab topo --json
run gpu-tests  $PY -m pytest -m gpu tests/dist tests/unit -p no:cacheprovider -q -rs
run roofs      $PY benchmarks/roofs.py
run bench-nccl .venv/bin/commlab bench all_reduce -b 8 -e 1G -f 4 --ranks 1 --backend nccl -n 20 -w 5
run bench-gloo .venv/bin/commlab bench all_reduce -b 8 -e 64M -f 4 --ranks 2 --backend gloo -n 5 -w 2
echo "gpu_session: logs in $OUT/"
