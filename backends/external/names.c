/* names.c — the one rule for plug-in, adapter and backend names
 * ([A-Za-z0-9_.-]{1,63}) and how a bad one is quoted in an error: escaped
 * (\xNN), cut after SWA_EXT_NAME_SHOWN bytes with its length.  A leaf: the
 * registry (external.c), the plug-in loader and the adapter client all use
 * it, and it uses none of them. */
#include "backends/external/external_internal.h"
#include <stdio.h>
#include <string.h>

size_t swa_external_quote(const char *s, char *buf, size_t n)
{
    size_t len = strlen(s), used = 0, shown = len > SWA_EXT_NAME_SHOWN ? SWA_EXT_NAME_SHOWN : len;
    used += (size_t)snprintf(buf, n, "\"");
    for (size_t i = 0; i < shown; i++) {
        unsigned char ch = (unsigned char)s[i];
        const char *fmt = ch == '"' || ch == '\\' ? "\\%c" : ch < 0x20 || ch > 0x7e ? "\\x%02x" : "%c";
        used += (size_t)snprintf(buf + used, used < n ? n - used : 0, fmt, ch);
    }
    if (shown < len)
        used += (size_t)snprintf(buf + used, used < n ? n - used : 0, "...\" (%zu bytes)", len);
    else
        used += (size_t)snprintf(buf + used, used < n ? n - used : 0, "\"");
    return used;
}

const char *swa_external_bad_name(const char *what, const char *name, char *buf, size_t n)
{
    char quoted[4 * SWA_EXT_NAME_SHOWN + 40];
    size_t len = name ? strlen(name) : 0;
    if (!len) {
        snprintf(buf, n, "%s is empty (expected 1 to %d of the characters A-Z a-z 0-9 _ . -)", what,
                 SWA_EXT_NAME_MAX);
        return buf;
    }
    swa_external_quote(name, quoted, sizeof quoted);
    if (len > SWA_EXT_NAME_MAX) {
        snprintf(buf, n, "%s %s is too long (expected 1 to %d of the characters A-Z a-z 0-9 _ . -)", what, quoted,
                 SWA_EXT_NAME_MAX);
        return buf;
    }
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
              c == '.')) {
            snprintf(buf, n, "%s %s has a character other than A-Z a-z 0-9 _ . - at byte %zu (the name is "
                     "matched by --backend NS:BACKEND and printed in reports)", what, quoted, i + 1);
            return buf;
        }
    }
    return NULL;
}
