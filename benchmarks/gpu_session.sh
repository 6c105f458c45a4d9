#!/usr/bin/env bash
# benchmarks/gpu_session.sh TREE... : the GPU checks of one or more numpile source trees, on a
# machine with an NVIDIA GPU whose python3 has CuPy, Triton and pytest but no network.
#
# numpile runs from each tree's packages/*/src (no install). Wheels of the dependencies the
# machine lacks (bytecode, optree, platformdirs) are installed from .whl/ if it exists. Each
# tree runs the commands in its file GPU_COMMANDS (one shell command a line; default: the
# GPU tests and the quick GPU benchmark), each under a time limit, with its output in
# $OUT/<tree name>.log (OUT defaults to /tmp/gpu-session). Trees run one after another, so
# timings of different trees are comparable within one run.
#
#     bash benchmarks/gpu_session.sh .            # this checkout
#     bash benchmarks/gpu_session.sh .dev/base .dev/branch
set -u
out=${OUT:-/tmp/gpu-session}
mkdir -p "$out"
limit=${GPU_SESSION_LIMIT:-120}
if ls .whl/*.whl > /dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/gpu-session-site .whl/*.whl || exit 1
fi
{
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    python3 -c "import cupy, triton, numpy; print('cupy', cupy.__version__, 'triton',
triton.__version__, 'numpy', numpy.__version__, 'cuda runtime',
cupy.cuda.runtime.runtimeGetVersion())"
    nproc; uptime
} > "$out/machine.txt" 2>&1
default_commands='python3 -m pytest -q -x -m gpu integration_tests/test_gpu.py packages/runtime/tests/test_runtime_cuda.py
python3 -m benchmarks.gpu --quick'
for tree in "$@"; do
    name=$(basename "$(realpath "$tree")")
    path=/tmp/gpu-session-site
    for src in "$tree"/packages/*/src; do path=$path:$(realpath "$src"); done
    commands=$default_commands
    [ -f "$tree/GPU_COMMANDS" ] && commands=$(cat "$tree/GPU_COMMANDS")
    echo "== $name: $(date -u +%T)" | tee -a "$out/summary.txt"
    while IFS= read -r command; do
        [ -z "$command" ] && continue
        start=$(date +%s)
        echo "\$ $command" >> "$out/$name.log"
        (cd "$tree" && PYTHONPATH=$path PYTHONUNBUFFERED=1 NUMPILE_CACHE_DIR=/tmp/gpu-cache-$name \
            timeout "$limit" bash -c "$command") >> "$out/$name.log" 2>&1
        rc=$?
        echo "$name rc=$rc $(( $(date +%s) - start ))s: $command" | tee -a "$out/summary.txt"
    done <<< "$commands"
done
