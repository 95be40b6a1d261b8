#!/usr/bin/env bash
# Every check that needs a GPU, as one script for a session that is lent a GPU machine (the device tool runs
# it in the repository root; results go to $OUT, or ./gpu-results). Nothing here runs on a CPU-only machine:
# it stops at once, saying so. Record what it prints in benchmarks/README.md ("GPU" section) with the date, and
# copy $OUT/gpu_session.json (the figures the chapters quote, read by commlab.measure.recorded) over
# benchmarks/gpu_session.json.
#
#   bash benchmarks/gpu_session.sh            # about 3-5 minutes on one H200
#
# Which Python: this checkout's .venv when there is one; else a python3 that already has torch (a cluster or
# GPU image that brings its own torch, often with no network), with this checkout's src/ on PYTHONPATH; else
# `make install`.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu-results}
mkdir -p "$OUT"

if ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "gpu_session: no nvidia-smi on this machine: nothing to measure" | tee "$OUT/summary.txt"
    exit 0
fi
if [ -x .venv/bin/python ]; then
    PY=.venv/bin/python
elif python3 -c "import torch, numpy, matplotlib" 2>/dev/null; then
    PY=python3
    export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
    echo "gpu_session: using $(command -v python3) with its own torch and src/ on PYTHONPATH"
else
    make install >"$OUT/install.log" 2>&1 || { echo "gpu_session: make install failed"; exit 1; }
    PY=.venv/bin/python
fi
export PYTHONUNBUFFERED=1

run() {  # name, command...: run with a time limit, keep the output, say how it ended
    local name=$1; shift
    echo "== $name: $*"
    timeout "${GPU_SESSION_STEP_TIMEOUT_S:-300}" "$@" >"$OUT/$name.log" 2>&1
    local rc=$?
    tail -n 30 "$OUT/$name.log"
    echo "== $name: exit $rc"
}

{
    nvidia-smi --query-gpu=name,memory.total,pcie.link.gen.max,pcie.link.width.max,driver_version --format=csv
    nvidia-smi topo -m
    $PY -c "import torch, torch.distributed as d; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version(), 'nccl available', d.is_nccl_available())"
} >"$OUT/nvidia-smi.txt" 2>&1
cat "$OUT/nvidia-smi.txt"
run doctor       $PY -m commlab doctor
run topo         $PY -m commlab topo --json
run gpu-tests    $PY -m pytest -m gpu tests/dist tests/unit -p no:cacheprovider -q -rs --continue-on-collection-errors
run roofs        $PY benchmarks/roofs.py --json "$OUT/roofs.json"
run stream-order $PY benchmarks/nccl_stream_order.py --json "$OUT/stream-order.json"
run record       $PY -m commlab.measure.recorded "$OUT/gpu_session.json" "$OUT/roofs.json" "$OUT/stream-order.json"
run bench-nccl   $PY -m commlab bench all_reduce -b 8 -e 1G -f 4 --ranks 1 --backend nccl -n 20 -w 5
for op in all_gather reduce_scatter broadcast reduce all_to_all; do
    run "bench-nccl-$op" $PY -m commlab bench $op -b 1K -e 64M -f 16 --ranks 1 --backend nccl -n 5 -w 2
done
run bench-files  $PY -m commlab bench all_reduce -b 8 -e 64m -f 8 --ranks 1 --backend nccl -n 5 -w 2 \
    -J "$OUT/bench-nccl.json" --csv "$OUT/bench-nccl.csv" --plot "$OUT/bench-nccl.png"
run bench-gloo   $PY -m commlab bench all_reduce -b 8 -e 64M -f 4 --ranks 2 --backend gloo -n 5 -w 2
run nccl-tests-fit $PY -m commlab nccl-tests "$OUT/bench-nccl.log" --json
echo "gpu_session: logs in $OUT/"
