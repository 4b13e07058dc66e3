#!/usr/bin/env bash
# followup.sh PACK OUT — the second GPU call of 2026-12-02: the FlashInfer failures of the
# first call again, with --dump (inputs, reference and FlashInfer's outputs as .npy, to
# localize them here), once as planned and once with split-KV off
# (SWADIFF_FLASHINFER_PLAN_EXTRA), and decode_tc on the head_dim 96 case once its fa2
# module is compiled.  Reads the pack of ci/pack-peers.sh plus PACK/aot-extra.tar.xz.
set -uo pipefail
pack=$1 out=$2
mkdir -p "$out" /tmp/sw
tar xJf "$pack/peers.tar.xz" -C /tmp && tar xJf "$pack/swadiff.tar.xz" -C /tmp/sw
aot=/tmp/site/flashinfer/data/aot; mkdir -p "$aot"; tar xJf "$pack/aot-extra.tar.xz" -C "$aot"
python3 -m pip install -q --no-index --no-deps --target /tmp/site "$pack"/wheels/*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 LD_LIBRARY_PATH=/tmp/sw FLASHINFER_WORKSPACE_BASE=/tmp/fiws
export FLASHINFER_CUDA_ARCH_LIST=9.0a
echo "modules: $(ls $aot | wc -l)"
mkdir -p "$out"/{seed000,fails,nosplit,hd96}
python3 "$pack/ci/flashinfer-aot.py" "$aot" --kinds fa2 --only fa2:fp16:96:True:False --jobs 16 > "$out/compile96.txt" 2>&1 &
cpid=$!
export FLASHINFER_DISABLE_JIT=1
fi="flashinfer_wrappers=python3 $pack/adapters/flashinfer_wrappers.py"
sw() { timeout 60 /tmp/sw/swadiff run --device host --jobs 4 --adapter "$fi" "$@"; }
ids=(-f 'window_right/first_tile_fa2:window_right=-1' -f 'empty_rows/qo_over_kv_split:*' -f 'page_units/decode:*'
     -f 'poison/decode:*' -f 'coverage_paths/auto_head_dim_96')
sw cases/seed000_paged_prefill.json --backend 'flashinfer_wrappers:paged_fa2*' --report "$out/seed000" \
   --dump "$out/seed000/dump" > "$out/seed000/console.txt" 2>&1; tail -2 "$out/seed000/console.txt"
sw cases "${ids[@]}" --backend 'flashinfer_wrappers:paged_fa2,flashinfer_wrappers:ragged_fa2,flashinfer_wrappers:decode*' \
   --report "$out/fails" --dump "$out/fails/dump" > "$out/fails/console.txt" 2>&1; tail -2 "$out/fails/console.txt"
SWADIFF_FLASHINFER_PLAN_EXTRA='{"disable_split_kv": true}' sw cases "${ids[@]}" \
   --backend 'flashinfer_wrappers:paged_fa2,flashinfer_wrappers:ragged_fa2,flashinfer_wrappers:decode*' \
   --report "$out/nosplit" > "$out/nosplit/console.txt" 2>&1; tail -2 "$out/nosplit/console.txt"
wait $cpid; grep -v INFO "$out/compile96.txt" | tail -3
sw cases -f 'coverage_paths/auto_head_dim_96' --backend 'flashinfer_wrappers:decode*,flashinfer_wrappers:paged_fa2' \
   --report "$out/hd96" > "$out/hd96/console.txt" 2>&1; tail -2 "$out/hd96/console.txt"
rm -f "$out"/*/report.html "$out"/*/results.jsonl
