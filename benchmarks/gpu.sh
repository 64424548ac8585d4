#!/usr/bin/env bash
# The GPU figures in one run, within 5 minutes, on a machine with an NVIDIA GPU:
#
#   1. a Python with the project and onnxruntime-gpu ($PYTHON, ./.venv or
#      ../main/.venv when they have them; otherwise it makes .venv-gpu and pip
#      installs '.[test,bench]' 'onnxruntime-gpu[cuda,cudnn]'); when the CUDA
#      provider cannot load its libraries, the nvidia-* wheels of that
#      onnxruntime-gpu go into .gpu-wheels (LD_LIBRARY_PATH), not into the venv;
#   2. bench_infer.py --providers cuda: the CUDA provider with IO binding (from
#      page-locked host buffers), max_batch swept 1..64, frames/s and p99;
#   3. bench_nvdec.py: NVDEC through VideoSource(hwaccel="cuda") against CPU
#      decode on a 1080p clip;
#   4. the suite's GPU tests (pytest -m gpu);
#
# and writes one table, $OUT/gpu-table.md (default benchmarks/gpu-out/), also
# printed. Every step has a time budget within the 5 minutes; a step that
# fails or runs out of time leaves its row saying so, the others still run.
#
#     bash benchmarks/gpu.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT_DIR="${OUT:-benchmarks/gpu-out}"
mkdir -p "$OUT_DIR"
LOG="$OUT_DIR/gpu.log"
: >"$LOG"
START=$SECONDS
DEADLINE=$((START + 290))

log() { echo "[gpu.sh $((SECONDS - START))s] $*" | tee -a "$LOG"; }

# step NAME BUDGET_S CMD...: run with a timeout that never passes the deadline.
step() {
    local name=$1 budget=$2
    shift 2
    local left=$((DEADLINE - SECONDS))
    ((left < budget)) && budget=$left
    if ((budget < 10)); then
        log "$name: skipped, no time left"
        echo "timeout" >"$OUT_DIR/$name.status"
        return 124
    fi
    log "$name: start (budget ${budget}s)"
    timeout --kill-after=5 "$budget" "$@" >>"$LOG" 2>&1
    local rc=$?
    log "$name: exit $rc"
    echo "$rc" >"$OUT_DIR/$name.status"
    return $rc
}

has_deps() { "$1" -c 'import fusion, adapters, onnxruntime, av, cv2, pytest' >/dev/null 2>&1; }
cuda_reason() {
    "$PY" -c 'from fusion.workers._sessions import probe_provider as p; print(p("CUDAExecutionProvider") or "ok")' 2>>"$LOG"
}

export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
PY="${PYTHON:-}"
if [[ -z "$PY" ]]; then
    for candidate in .venv/bin/python ../main/.venv/bin/python .venv-gpu/bin/python; do
        if [[ -x "$candidate" ]] && has_deps "$candidate"; then
            PY=$candidate
            break
        fi
    done
fi
if [[ -z "$PY" ]]; then
    # Nothing usable: a venv of our own, with the project and the CUDA/cuDNN wheels.
    log "setup: making .venv-gpu (pip install '.[test,bench]' 'onnxruntime-gpu[cuda,cudnn]')"
    python3 -m venv .venv-gpu >>"$LOG" 2>&1
    step setup 150 .venv-gpu/bin/pip install -q -e '.[test,bench]' 'onnxruntime-gpu[cuda,cudnn]'
    PY=.venv-gpu/bin/python
fi
REASON=$(cuda_reason)
if [[ "$REASON" != "ok" ]]; then
    # The CUDA provider cannot load its libraries: fetch the nvidia-* wheels this
    # onnxruntime-gpu was built for into a private directory (never into an existing
    # environment) and put their libraries on the loader path.
    log "setup: CUDA provider unavailable ($REASON); installing its nvidia-* wheels into .gpu-wheels"
    WHEELS=$("$PY" -c 'from fusion.workers._sessions import _gpu_extras; print(" ".join(_gpu_extras()))')
    if [[ -n "$WHEELS" ]] && step setup 150 "$PY" -m pip install -q --target .gpu-wheels $WHEELS; then
        LIBS=$(find "$PWD/.gpu-wheels/nvidia" -maxdepth 3 -type d -name lib 2>/dev/null | paste -sd:)
        export LD_LIBRARY_PATH="$LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        log "setup: after the wheels: $(cuda_reason)"
    else
        log "setup: could not install the wheels; the rows below say which library is missing"
    fi
fi
log "python: $PY"

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader \
    >"$OUT_DIR/gpu.txt" 2>>"$LOG" || echo "nvidia-smi failed: no NVIDIA driver?" >"$OUT_DIR/gpu.txt"
log "gpu: $(head -n 1 "$OUT_DIR/gpu.txt")"

step infer 120 "$PY" benchmarks/bench_infer.py --providers cuda --only-sweep \
    --batches 1,2,4,8,16,32,64 --frames 240 --json "$OUT_DIR/infer.json"
step nvdec 60 "$PY" benchmarks/bench_nvdec.py --frames 240 --repeat 2 --json "$OUT_DIR/nvdec.json"
step tests 90 "$PY" -m pytest -q -m gpu -p no:cacheprovider --junitxml "$OUT_DIR/gpu-tests.xml" tests

"$PY" - "$OUT_DIR" <<'EOF' | tee "$OUT_DIR/gpu-table.md"
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

out = Path(sys.argv[1])


def status(name: str) -> str:
    path = out / f"{name}.status"
    code = path.read_text().strip() if path.exists() else "not run"
    return {"0": "ok", "124": "timed out", "timeout": "skipped (time)"}.get(code, f"exit {code}")


def load(name: str):
    path = out / name
    return json.loads(path.read_text()) if path.exists() else None


rows = [("GPU", (out / "gpu.txt").read_text().strip() if (out / "gpu.txt").exists() else "-", "")]
infer = load("infer.json")
if infer:
    for r in infer:
        note = f"{r['provider']}, host buffers {r['host_buffers']}, batches {r['batch_sizes']}"
        if r["provider_failures"]:
            note += f"; {'; '.join(r['provider_failures'])}"
        rows.append((
            f"bench_infer cuda, max_batch {r['max_batch']}",
            f"{r['fps']:.1f} frames/s, p99 {r['p99_ms']:.1f} ms",
            note,
        ))
else:
    rows.append(("bench_infer --providers cuda", "-", status("infer")))
nvdec = load("nvdec.json")
if nvdec:
    rows.append((
        "NVDEC 1080p H.264 -> RGB (VideoSource)",
        f"{nvdec['cuda_fps']:.1f} frames/s vs CPU {nvdec['cpu_fps']:.1f} "
        f"({nvdec['cuda_fps'] / nvdec['cpu_fps']:.2f}x)",
        nvdec["report"],
    ))
else:
    rows.append(("NVDEC vs CPU decode", "-", status("nvdec")))
junit = out / "gpu-tests.xml"
if junit.exists():
    suite = ET.parse(junit).getroot()
    suite = suite.find("testsuite") if suite.tag == "testsuites" else suite
    a = suite.attrib
    rows.append((
        "pytest -m gpu",
        f"{a.get('tests')} tests: {a.get('failures')} failed, {a.get('errors')} errors, "
        f"{a.get('skipped')} skipped",
        status("tests"),
    ))
else:
    rows.append(("pytest -m gpu", "-", status("tests")))
print("| measure | figure | note |")
print("|---|---|---|")
for measure, figure, note in rows:
    print(f"| {measure} | {figure} | {str(note).replace('|', '/')} |")
EOF
log "table: $OUT_DIR/gpu-table.md (log: $LOG), $((SECONDS - START)) s in all"
