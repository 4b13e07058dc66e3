#!/usr/bin/env bash
# ci/gpu-real-libs.sh PACK_DIR OUT_DIR [RETURN_DIR] — on the GPU machine (no network), from a
# folder made by ci/pack-peers.sh: installs the carried wheels under /tmp/site,
# compiles the FlashInfer modules that are not in the pack yet (ci/flashinfer-aot.py,
# up to SWADIFF_T_COMPILE seconds, all cores), and runs the case library through
# the real-library adapters, writing
#   OUT/env.txt                      versions, GPU, what was compiled
#   OUT/probe-run-window.json        what FlashInfer's run() does with another window
#   OUT/NAME/{console.txt,report.json,junit.xml}   one swadiff run per adapter
# and, with RETURN_DIR, RETURN/results.tar.xz (all of OUT) and RETURN/aot.tar.xz.NN
# (every compiled module, in 15 MB pieces: cat them, unpack, carry them next time).
# The case folder is CASES (default PACK/cases: the library of the checkout that packed
# it, so that uncommitted case files of the tree the call runs in cannot stop the runs).
# Time limits (seconds): SWADIFF_T_COMPILE (300: no module is started after it, and the
# compile is stopped 60 s later), SWADIFF_T_RUN (200) per swadiff run, SWADIFF_T_SGLANG
# (default SWADIFF_T_RUN) for the sglang run, which runs beside the compile.
# SWADIFF_REAL_LIBS selects the runs: "sglang fi fi3" (default all three; fi = the
# fa2 / decode / seed-000 backends, fi3 = the fa3 ones), and "fipin": the backends that
# take fa2's split controls (paged_fa2, ragged_fa2, decode_tc) with the split pinned,
# SWADIFF_FLASHINFER_PLAN_EXTRA=SWADIFF_FI_PIN (default '{"fixed_split_size": 16}'), where the
# adapter declares them batch-invariant as FlashInfer documents (docs/invariance.md).
# SWADIFF_RUN_ARGS adds arguments to every swadiff run (e.g. "--invariance batch,pages");
# SWADIFF_AOT_ONLY (module keys KIND:DTYPE:HEAD_DIM:SWA:CAP, space-separated) compiles
# only those modules (ci/flashinfer-aot.py --only).
set -uo pipefail
pack=$(cd "${1:?usage: gpu-real-libs.sh PACK_DIR OUT_DIR}" && pwd)
out=${2:?usage: gpu-real-libs.sh PACK_DIR OUT_DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
site=/tmp/site
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }

mkdir -p "$site" /tmp/sw
tar xJf "$pack/peers.tar.xz" -C /tmp
tar xJf "$pack/swadiff.tar.xz" -C /tmp/sw
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" "$pack"/wheels/*.whl \
  || { echo "gpu-real-libs: the carried wheels did not install" >&2; exit 1; }
export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 LD_LIBRARY_PATH=/tmp/sw
export FLASHINFER_WORKSPACE_BASE=/tmp/fiws FLASHINFER_CUDA_ARCH_LIST=9.0a
aot=$site/flashinfer/data/aot
mkdir -p "$aot"
[ -d "$pack/aot" ] && cp -r "$pack/aot/." "$aot/"   # modules compiled since the pack was made
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 - <<'EOF'
import importlib.metadata as md, torch, triton
print("torch", torch.__version__, "triton", triton.__version__, "cuda", torch.version.cuda)
for n in ("flashinfer-python", "apache-tvm-ffi", "sglang"):
    try:
        print(n, md.version(n))
    except Exception as e:
        print(n, "metadata:", type(e).__name__, e)
import flashinfer
print("flashinfer.__version__", flashinfer.__version__, flashinfer.__file__)
EOF
  nvcc --version | tail -1
  echo "AOT modules carried: $(ls "$aot" | wc -l)"
} > "$out/env.txt" 2>&1
cat "$out/env.txt"

runs=${SWADIFF_REAL_LIBS:-sglang fi fi3}
cases=${CASES:-$pack/cases}
jobs=$(( $(nproc) / 2 ))

run_adapter() {  # NAME COMMAND BACKEND-GLOB [SECONDS]
  local name=$1 cmd=$2 glob=$3 limit=${4:-${SWADIFF_T_RUN:-200}}
  mkdir -p "$out/$name"
  stamp "run $name ($glob, at most $limit s)"
  # shellcheck disable=SC2086  # SWADIFF_RUN_ARGS is a list of words
  timeout "$limit" /tmp/sw/swadiff run $cases --device host --jobs 4 --adapter "$cmd" \
    --backend "$glob" --adapter-timeout 150 ${SWADIFF_RUN_ARGS:-} --report "$out/$name" > "$out/$name/console.txt" 2>&1
  echo "exit $?" >> "$out/$name/console.txt"
  rm -f "$out/$name/report.html" "$out/$name/results.jsonl"
  tail -3 "$out/$name/console.txt"
}

# the compile runs beside the sglang run (which needs the GPU and few cores)
kinds=""
case " $runs " in *" fi "*|*" fipin "*) kinds="fa2,decode" ;; esac
case " $runs " in *" fi3 "*) kinds="${kinds:+$kinds,}fa3" ;; esac
if [ -n "$kinds" ]; then
  stamp "compile $kinds"
  timeout $(( ${SWADIFF_T_COMPILE:-300} + 60 )) python3 "$pack/ci/flashinfer-aot.py" "$aot" --kinds "$kinds" \
    --jobs 2 --parallel $(( jobs > 1 ? jobs : 1 )) --deadline "${SWADIFF_T_COMPILE:-300}" \
    $(for k in ${SWADIFF_AOT_ONLY:-}; do printf -- '--only %s ' "$k"; done) > "$out/compile.txt" 2>&1 &
  compile_pid=$!
fi
case " $runs " in *" sglang "*)
  run_adapter sglang "sglang_triton=python3 $pack/adapters/sglang_triton.py" 'sglang_triton:*' \
    "${SWADIFF_T_SGLANG:-${SWADIFF_T_RUN:-200}}" ;;
esac
if [ -n "$kinds" ]; then
  wait "$compile_pid"; echo "compile exit $?" >> "$out/compile.txt"
  stamp "compiled: $(grep -c '^built' "$out/compile.txt") built, $(ls "$aot" | wc -l) in the AOT folder"
  grep -v '^built\|^present' "$out/compile.txt" | grep -v INFO | tail -5
fi
export FLASHINFER_DISABLE_JIT=1   # from here on a missing module is an error naming it
fi_cmd="flashinfer_wrappers=python3 $pack/adapters/flashinfer_wrappers.py"
case " $runs " in *" fi "*|*" fi3 "*|*" fipin "*)
  stamp "probe"
  timeout 45 python3 "$pack/adapters/flashinfer_wrappers.py" --probe-run-window > "$out/probe-run-window.json" 2> "$out/probe-stderr.txt"
  cat "$out/probe-run-window.json" ;;
esac
case " $runs " in *" fi "*)
  run_adapter flashinfer "$fi_cmd" 'flashinfer_wrappers:paged_fa2*,flashinfer_wrappers:ragged_fa2,flashinfer_wrappers:decode*' ;;
esac
case " $runs " in *" fi3 "*)
  run_adapter flashinfer-fa3 "$fi_cmd" 'flashinfer_wrappers:*_fa3' ;;
esac
case " $runs " in *" fipin "*)
  pin=${SWADIFF_FI_PIN:-'{"fixed_split_size": 16}'}
  echo "$pin" > "$out/fipin-plan-extra.json"
  SWADIFF_FLASHINFER_PLAN_EXTRA=$pin run_adapter flashinfer-pinned "$fi_cmd" \
    'flashinfer_wrappers:paged_fa2,flashinfer_wrappers:ragged_fa2,flashinfer_wrappers:decode_tc' ;;
esac
stamp "done"
if [ -n "${3:-}" ]; then  # RETURN_DIR: two files come back, the results and the modules
  mkdir -p "$3"
  tar cf - -C "$out" . | xz -T0 -6 > "$3/results.tar.xz"
  tar cf - -C "$aot" . | xz -T0 -6 | split -b 15M -d - "$3/aot.tar.xz."
  ls -l "$3"
fi
