/* fuzz_case_load.c — libFuzzer target over case loading, validation and
 * sweep expansion (harness/case_*.c).  Any input must either load or be
 * rejected with a located message; never crash, leak or trip a sanitizer.
 *
 *   tests/fuzz/run-fuzz.sh 60     # builds with clang and runs both targets */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "harness/case_load.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    swa_case_list list = {0};
    swa_load_error err;
    memset(&err, 0, sizeof err);
    if (swa_case_parse("fuzz.json", (const char *)data, size, &list, &err) != 0) {
        char msg[2048];
        swa_load_error_format(&err, msg, sizeof msg);
        /* a rejection must say where */
        if (strncmp(msg, "fuzz.json:", 10) != 0)
            __builtin_trap();
    } else {
        for (int i = 0; i < list.count; i++) {
            const swa_case *c = &list.cases[i];
            if (c->num_requests < 1 || c->num_qo_heads % c->num_kv_heads || c->window_left < -1)
                __builtin_trap();
            /* kv_len >= 1 always; kv_len < qo_len only without a decode
             * backend (prefill's empty rows; decode rows are qo_len 1) */
            bool decode = (c->backends & SWA_BACKEND_DECODE_MASK) != 0;
            for (int r = 0; r < c->num_requests; r++)
                if (c->qo_len[r] < 1 || c->kv_len[r] < 1 || (decode && c->kv_len[r] < c->qo_len[r]))
                    __builtin_trap();
        }
    }
    swa_case_list_free(&list);
    return 0;
}
