/* mutants.h — the known bug classes of docs/bugs.md as named mutants.
 *
 * A mutant is switched on with `--mutant NAME`; it travels in the plan
 * (swa_*_plan.mutant) to where such a bug really lives: the host plan logic,
 * the wrapper's window mapping, or the kernel's mask/merge code (the host
 * emulation and the CUDA kernels implement each kernel-level mutant the same
 * way).  SWA_MUTANT_NONE costs nothing: CUDA kernels are instantiated with a
 * compile-time "mutants off" flag for normal runs.
 *
 * X(ENUM, "name", class, "backends", "what it does", "where it comes from") */
#ifndef SWADIFF_MUTANTS_H
#define SWADIFF_MUTANTS_H

#define SWA_MUTANT_LIST(X)                                                                              \
    X(NONE, "none", 0, "", "no mutation", "")                                                           \
    X(MASK_COMPILED_OUT, "mask_compiled_out", 1, "prefill",                                              \
      "plan without window_left, run with it: per-element window mask compiled out, the run-time "      \
      "window only drives the per-tile KV-start skip", "seed 000 (sglang paged SWA prefill)")          \
    X(AITER_S_EQ_L, "aiter_s_eq_l", 2, "decode_aiter",                                                   \
      "wrapper passes sliding_window = window_left (off by one: L keys instead of L+1)",               \
      "seed 003 (AITER PA v1 wrapper)")                                                                 \
    X(AITER_L0_SENTINEL, "aiter_l0_sentinel", 2, "decode_aiter",                                         \
      "window_left = 0 maps to sliding_window = 0, AITER's 'disabled' sentinel: full attention",       \
      "seed 003 (AITER PA v1 wrapper)")                                                                 \
    X(LEFT_BOUND_GT, "left_bound_gt", 3, "prefill,decode_fa2",                                           \
      "kernel left bound k > p-L instead of k >= p-L (one key too few)", "classic off-by-one")          \
    X(LEFT_BOUND_MINUS1, "left_bound_minus1", 3, "prefill,decode_fa2",                                   \
      "kernel left bound k >= p-L-1 (one key too many)", "classic off-by-one")                          \
    X(TOP_LEFT_ALIGN, "top_left_align", 4, "prefill",                                                    \
      "query row i at position p = i (top-left) instead of kv_len - qo_len + i", "FA2 < 2.1 causal")   \
    X(REQUEST_ANCHORED, "request_anchored", 5, "prefill",                                                \
      "window anchored at the request's first new token for every row", "per-request window bugs")     \
    X(SPLIT_CHUNK_SHORT, "split_chunk_short", 6, "decode_fa2",                                           \
      "split-KV chunks cover one page less than the window span", "split-KV planning")                 \
    X(SPLIT_LAST_CHUNK_DROPPED, "split_last_chunk_dropped", 6, "decode_fa2,prefill",                     \
      "chunk count rounded down: the last (partial) KV chunk is never computed", "split-KV planning")   \
    X(LAST_PAGE_LEN_OFF, "last_page_len_off", 7, "decode_fa2",                                           \
      "kv_len derived from last_page_len - 1: the newest key is dropped", "page-table arithmetic")      \
    X(WINDOW_PAGE_CROSS, "window_page_cross", 7, "decode_fa2",                                           \
      "first page of the window taken as ceil(start/page_size): keys of the page the window "          \
      "starts in are skipped", "page-table arithmetic")                                                 \
    X(SOFTCAP_BEFORE_MASK, "softcap_before_mask", 8, "decode_aiter",                                     \
      "mask applied before the soft cap: masked keys get logit -soft_cap and keep weight",             \
      "AITER PA v1 quirk")                                                                              \
    X(SOFTCAP_COMPILED_OUT, "softcap_compiled_out", 8, "prefill,decode_fa2",                             \
      "soft cap not applied", "variant flag lost")                                                      \
    X(LSE_WRONG_BASE, "lse_wrong_base", 9, "prefill,decode_fa2",                                         \
      "LSE written in natural log while declared base 2", "LSE conventions")                           \
    X(LSE_MERGE_DROPPED, "lse_merge_dropped", 9, "decode_fa2,prefill",                                   \
      "split-KV merge ignores partial LSEs (plain average of partial outputs)", "merge kernels")        \
    X(RETURN_LSE_IGNORED, "return_lse_ignored", 9, "decode_aiter",                                       \
      "return_lse silently ignored: no shadow dispatch, LSE left unwritten", "seed 003")               \
    X(GRAPH_CAPTURED_SCALARS, "graph_captured_scalars", 10, "decode_fa2",                                \
      "CUDA-graph replay launches with the grid of the captured batch", "seed 003 (CUDA graph)")       \
    X(GQA_MOD_MAPPING, "gqa_mod_mapping", 11, "prefill,decode_fa2,decode_aiter",                         \
      "qo head h reads kv head h % num_kv_heads instead of h / group", "GQA indexing")                 \
    X(FOREIGN_PAGE_READ, "foreign_page_read", 12, "decode_fa2,decode_aiter",                             \
      "page table indexed one entry too far: reads a page the request does not own", "paged KV")       \
    X(RIGHT_BOUND_DROPPED, "right_bound_dropped", 13, "prefill",                                       \
      "plan accepts window_right but the kernel never receives it: non-causal rows see every key "     \
      "right of p (the left bound still applies)", "FlashInfer window_right ignored (docs/bugs.md)")  \
    X(NONCAUSAL_SPAN_AS_CAUSAL, "noncausal_span_as_causal", 13, "prefill",                             \
      "KV end of a non-causal tile sized as causal (p_last + 1 instead of p_last + R + 1 or kv_len): " \
      "keys right of the tile's last row are never loaded", "FA2 non-causal local first tile (U3)")    \
    X(CHUNK_AS_WINDOW, "chunk_as_window", 14, "prefill,decode_fa2",                                    \
      "chunked local attention run as a sliding window of C keys: [p-C+1, p] instead of "              \
      "[floor(p/C)*C, p]", "chunked attention routed through window_left (U10)")                       \
    X(CHUNK_START_OFF_BY_ONE, "chunk_start_off_by_one", 14, "prefill,decode_fa2",                      \
      "chunk start taken as exclusive: keys (floor(p/C)*C, p], the chunk's first key is lost and a "   \
      "row at a chunk start sees nothing", "chunk-boundary arithmetic (U10)")                          \
    X(WINDOW_OFF_NOT_NORMALISED, "window_off_not_normalised", 15, "prefill,decode_fa2",                \
      "window_left = -1 reaches the kernel's window predicate as a number: k >= p + 1, every causal "  \
      "row empty", "sentinel used as a bound (FA4 (-1, 0), AOTriton; U2)")                              \
    X(EMPTY_ROW_NAN, "empty_row_nan", 15, "prefill,decode_fa2",                                        \
      "a row with no visible key is normalised by its zero sum: output 0 * (1/0) = NaN instead of 0", \
      "empty-row convention (flashinfer#4452, U2)")                                                     \
    X(GQA_PACKED_ROW_BOUND, "gqa_packed_row_bound", 11, "prefill",                                     \
      "tile KV start computed from the packed row index without / group_size: later tiles start "      \
      "too late and their early rows lose keys", "GQA packed rows in window bounds (U4)")             \
    X(WINDOW_MASK_SKIPPED_IN_EDGE_TILE, "window_mask_skipped_in_edge_tile", 16, "prefill,decode_fa2",     \
      "left-bound window mask not applied inside the first KV tile the loop loads (the one straddling "  \
      "the window start after the aligned-down KV-start skip): its out-of-window keys get weight",      \
      "V tile not masked past the window (vLLM #30887; docs/bugs.md)")                                 \
    X(KV_START_SKIP_DROPPED, "kv_start_skip_dropped", 16, "prefill,decode_fa2",                          \
      "KV loop starts at key 0 (no window skip), the per-element mask alone excludes: pages before "     \
      "the window are read, and evicted ones hold NaN (0 * NaN in P.V)",                                 \
      "evicted SWA pages read (sglang eviction, TRT-LLM BAD_PAGE_INDEX; U1, U11)")                     \
    X(PLAN_REUSED_ACROSS_WINDOWS, "plan_reused_across_windows", 17,                                      \
      "prefill,decode_fa2,decode_aiter,decode_auto",                                                     \
      "per-layer plan cache keyed by the batch without the window: every layer of an interleaved "      \
      "local/global model runs with the first layer's plan and window",                                  \
      "one wrapper per window, replay reusing the warm-up plan (FlashInfer/sglang; docs/bugs.md)")     \
    X(GRAPH_STALE_PARTIAL_OFFSETS, "graph_stale_partial_offsets", 10, "decode_fa2",                     \
      "CUDA-graph replay of a different batch refreshes the work list and page table but keeps the "    \
      "captured batch's per-request split-KV partial offsets: live requests' partials overlap",         \
      "stale per-request plan arrays on replay (FlashInfer #4016, sglang #31349, vLLM #28739)")       \
    X(PAGE_UNITS_TOKENS, "page_units_tokens", 7, "decode_fa2",                                          \
      "windowed decode skips the pages before the window counting them in tokens (first page = window " \
      "start, not window start / page_size): exact at page size 1, window keys lost at any other",      \
      "token slots used as page ids (sglang #32902, #38187; docs/bugs.md)")                             \
    X(SOFTCAP_TANH_OVERFLOW, "softcap_tanh_overflow", 8, "prefill,decode_fa2,decode_aiter",               \
      "soft cap's tanh written as (e^2x - 1)/(e^2x + 1) in fp32: logits over ~44 caps become NaN",       \
      "vLLM #56578 / #56579 (docs/bugs.md)")                                                            \
    X(HEAD_DIM_LOOP_TRUNCATED, "head_dim_loop_truncated", 18, "decode_aiter",                            \
      "P.V loop count head_dim / 128 (integer division of a warp tile): dims past the last full tile "  \
      "never written, head_dim 64 outputs 0", "PA v1 VHELOOP = 0 at small head_dim (vLLM #34378; U8)")  \
    X(FINITE_SENTINEL_EMPTY_ROW, "finite_sentinel_empty_row", 15, "prefill,decode_fa2",                  \
      "finite mask value -5e4 doubles as the emptiness test: a row whose max logit is <= -5e4 outputs " \
      "0 and LSE -inf although it sees keys", "FlashInfer #4267 / #4451 (docs/bugs.md)")      \
    X(OOB_WRITE, "oob_write", 0, "decode_fa2",                                                           \
      "writes past the end of the output on purpose (guard bytes / device fault isolation)",           \
      "robustness check")                                                                               \
    X(DEVICE_FAULT, "device_fault", 0, "decode_fa2",                                                     \
      "writes far outside every allocation: an illegal-address fault on a GPU (a SIGSEGV on the "      \
      "host); proves that one faulting case does not lose the others (not part of selftest)",          \
      "robustness check")

typedef enum {
#define SWA_MUTANT_ENUM(e, name, cls, backends, what, origin) SWA_MUTANT_##e,
    SWA_MUTANT_LIST(SWA_MUTANT_ENUM)
#undef SWA_MUTANT_ENUM
    SWA_MUTANT_COUNT
} swa_mutant;

typedef struct swa_mutant_info {
    swa_mutant id;
    const char *name;
    int bug_class;         /* docs/bugs.md class, 0 for none/robustness */
    const char *backends;  /* comma-separated backends it lives in */
    const char *what;
    const char *origin;
} swa_mutant_info;

#ifdef __cplusplus
extern "C" {
#endif
const swa_mutant_info *swa_mutant_get(swa_mutant m);
/* Returns SWA_MUTANT_COUNT when the name is unknown. */
swa_mutant swa_mutant_by_name(const char *name);
#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_MUTANTS_H */
