/* case_json.c — cJSON parsing with source positions for the case loader
 * (see case_json.h for why).  Tested by tests/test_case_load.c (positions
 * after tricky strings, mutilated files). */
#include "harness/case_json.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SWA_JSON_MAX_MEMBERS 256

/* ---------------------------------------------------------------------------
 * paths and messages */

/* The marker of a pointer with more than its buffer holds: whole tokens,
 * then this, never a token cut in the middle (which names another key). */
#define CUT_MARK "/..."

static bool path_is_cut(const char *path)
{
    size_t len = strlen(path);
    return len >= strlen(CUT_MARK) && strcmp(path + len - strlen(CUT_MARK), CUT_MARK) == 0;
}

void swa_json_path_key(char *path, size_t n, const char *base, const char *key)
{
    size_t len = strlen(base);
    if (path != base)
        snprintf(path, n, "%s", base);
    if (len >= n || n < sizeof CUT_MARK + 1 || path_is_cut(path))
        return;
    size_t need = 1; /* '/' and the escaped key */
    for (const char *s = key; *s; s++)
        need += *s == '~' || *s == '/' ? 2 : 1;
    if (len + need + sizeof CUT_MARK > n) { /* room is kept for the marker */
        if (len + sizeof CUT_MARK <= n)
            memcpy(path + len, CUT_MARK, sizeof CUT_MARK);
        return;
    }
    char *out = path + len;
    *out++ = '/';
    for (const char *s = key; *s; s++) {
        if (*s == '~' || *s == '/') {
            *out++ = '~';
            *out++ = *s == '~' ? '0' : '1';
        } else {
            *out++ = *s;
        }
    }
    *out = '\0';
}

void swa_json_path_index(char *path, size_t n, const char *base, int index)
{
    char token[16];
    snprintf(token, sizeof token, "%d", index);
    swa_json_path_key(path, n, base, token);
}

/* A file's loader asks for one position per case (its line, for reports)
 * and the file may hold 100,000 cases: with the line-start table a position
 * costs a binary search, not a walk from the start of the file. */
void swa_json_line_col(const swa_json_doc *doc, size_t offset, int *line, int *column)
{
    if (offset > doc->length)
        offset = doc->length;
    if (doc->line_starts) {
        size_t lo = 0, hi = doc->num_lines; /* the last line starting at or before offset */
        while (hi - lo > 1) {
            size_t mid = lo + (hi - lo) / 2;
            if (doc->line_starts[mid] <= offset)
                lo = mid;
            else
                hi = mid;
        }
        *line = (int)(lo + 1);
        *column = (int)(offset - doc->line_starts[lo] + 1);
        return;
    }
    int l = 1, c = 1;
    for (size_t i = 0; i < offset; i++) {
        if (doc->text[i] == '\n') {
            l++;
            c = 1;
        } else {
            c++;
        }
    }
    *line = l;
    *column = c;
}

/* 0, or -1 out of memory (positions are then counted from the start). */
static int map_lines(swa_json_doc *doc)
{
    size_t lines = 1;
    for (const char *p = doc->text, *end = doc->text + doc->length; (p = memchr(p, '\n', (size_t)(end - p)));
         p++)
        lines++;
    doc->line_starts = malloc(lines * sizeof *doc->line_starts);
    if (!doc->line_starts)
        return -1;
    doc->line_starts[0] = 0;
    doc->num_lines = 1;
    for (size_t i = 0; i < doc->length; i++)
        if (doc->text[i] == '\n')
            doc->line_starts[doc->num_lines++] = i + 1;
    return 0;
}

int swa_json_fail(const swa_json_doc *doc, swa_load_error *err, size_t offset, const char *path,
                  const char *fmt, ...)
{
    if (!err)
        return -1;
    memset(err, 0, sizeof *err);
    snprintf(err->file, sizeof err->file, "%s", doc->file);
    swa_json_line_col(doc, offset, &err->line, &err->column);
    snprintf(err->path, sizeof err->path, "%s", path && *path ? path : "/");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---------------------------------------------------------------------------
 * the position walk */

typedef struct walker {
    swa_json_doc *doc;
    swa_load_error *err;
    size_t off;
    size_t capacity;
} walker;

static void skip_ws(walker *w)
{
    const char *t = w->doc->text;
    while (w->off < w->doc->length &&
           (t[w->off] == ' ' || t[w->off] == '\t' || t[w->off] == '\n' || t[w->off] == '\r'))
        w->off++;
}

static int peek(const walker *w) { return w->off < w->doc->length ? (unsigned char)w->doc->text[w->off] : -1; }

static int record(walker *w, const cJSON *item, size_t key_offset, size_t value_offset)
{
    if (w->doc->num_positions == w->capacity) {
        size_t cap = w->capacity ? w->capacity * 2 : 64;
        swa_json_pos *p = realloc(w->doc->positions, cap * sizeof *p);
        if (!p)
            return swa_json_fail(w->doc, w->err, value_offset, "", "out of memory while mapping positions");
        w->doc->positions = p;
        w->capacity = cap;
    }
    w->doc->positions[w->doc->num_positions++] = (swa_json_pos){item, key_offset, value_offset};
    return 0;
}

/* The walk follows a text cJSON accepted, so a mismatch means cJSON and this
 * walk disagree about JSON; report it rather than guess. */
static int lost(walker *w, const char *path)
{
    return swa_json_fail(w->doc, w->err, w->off, path, "internal error: position map lost track of the JSON text");
}

static int skip_string(walker *w, const char *path)
{
    const char *t = w->doc->text;
    if (peek(w) != '"')
        return lost(w, path);
    w->off++;
    while (w->off < w->doc->length) {
        unsigned char ch = (unsigned char)t[w->off];
        if (ch == '"') {
            w->off++;
            return 0;
        }
        if (ch < 0x20)
            return swa_json_fail(w->doc, w->err, w->off, path,
                                 "invalid JSON: raw control character 0x%02x inside a string (write it as an escape)", ch);
        w->off += ch == '\\' ? 2 : 1;
    }
    return lost(w, path);
}

/* JSON's number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
 * cJSON hands numbers to strtod, which also takes "01" and "1.". */
static int skip_number(walker *w, const char *path)
{
    const char *t = w->doc->text;
    size_t n = w->doc->length, start = w->off, i = w->off;
    bool ok = true;
    if (i < n && t[i] == '-')
        i++;
    if (i < n && t[i] == '0') {
        i++;
    } else if (i < n && t[i] >= '1' && t[i] <= '9') {
        while (i < n && t[i] >= '0' && t[i] <= '9')
            i++;
    } else {
        ok = false;
    }
    if (ok && i < n && t[i] == '.') {
        i++;
        if (!(i < n && t[i] >= '0' && t[i] <= '9'))
            ok = false;
        while (i < n && t[i] >= '0' && t[i] <= '9')
            i++;
    }
    if (ok && i < n && (t[i] == 'e' || t[i] == 'E')) {
        i++;
        if (i < n && (t[i] == '+' || t[i] == '-'))
            i++;
        if (!(i < n && t[i] >= '0' && t[i] <= '9'))
            ok = false;
        while (i < n && t[i] >= '0' && t[i] <= '9')
            i++;
    }
    /* whatever strtod swallowed beyond the grammar makes the token invalid */
    size_t end = i;
    while (end < n && (strchr("0123456789+-.eE", t[end]) != NULL))
        end++;
    if (!ok || end != i)
        return swa_json_fail(w->doc, w->err, start, path,
                             "invalid JSON number \"%.*s\" (JSON allows no leading zeros, no bare '.')",
                             (int)(end - start > 40 ? 40 : end - start), t + start);
    w->off = i;
    return 0;
}

static int walk_value(walker *w, const cJSON *item, size_t key_offset, const char *path, int depth);
static size_t unsorted_key_offset(const swa_json_doc *doc, const cJSON *item);

static int walk_object(walker *w, const cJSON *item, const char *path, int depth)
{
    char child_path[sizeof ((swa_load_error *)0)->path];
    w->off++; /* '{' */
    skip_ws(w);
    const cJSON *child = item->child;
    if (peek(w) == '}') {
        w->off++;
        return child ? lost(w, path) : 0;
    }
    for (int members = 0;; child = child->next, members++) {
        if (!child || peek(w) != '"' || !child->string)
            return lost(w, path);
        size_t key_offset = w->off;
        swa_json_path_key(child_path, sizeof child_path, path, child->string);
        /* no case-file object has more than a few dozen keys; the bound
         * keeps the duplicate check below cheap on hostile input */
        if (members == SWA_JSON_MAX_MEMBERS)
            return swa_json_fail(w->doc, w->err, key_offset, child_path,
                                 "expected at most %d keys in one object", SWA_JSON_MAX_MEMBERS);
        if (skip_string(w, child_path))
            return -1;
        /* duplicate keys: cJSON keeps both and lookups see only the first */
        for (const cJSON *prev = item->child; prev != child; prev = prev->next) {
            if (strcmp(prev->string, child->string) == 0) {
                int line, column;
                swa_json_line_col(w->doc, unsorted_key_offset(w->doc, prev), &line, &column);
                return swa_json_fail(w->doc, w->err, key_offset, child_path,
                                     "duplicate key \"%s\" (first at line %d, column %d)",
                                     child->string, line, column);
            }
        }
        skip_ws(w);
        if (peek(w) != ':')
            return lost(w, child_path);
        w->off++;
        skip_ws(w);
        if (walk_value(w, child, key_offset, child_path, depth + 1))
            return -1;
        skip_ws(w);
        if (peek(w) == ',') {
            w->off++;
            skip_ws(w);
            continue;
        }
        if (peek(w) == '}' && !child->next) {
            w->off++;
            return 0;
        }
        return lost(w, path);
    }
}

static int walk_array(walker *w, const cJSON *item, const char *path, int depth)
{
    char child_path[sizeof ((swa_load_error *)0)->path];
    w->off++; /* '[' */
    skip_ws(w);
    const cJSON *child = item->child;
    if (peek(w) == ']') {
        w->off++;
        return child ? lost(w, path) : 0;
    }
    for (int index = 0;; child = child->next, index++) {
        if (!child)
            return lost(w, path);
        swa_json_path_index(child_path, sizeof child_path, path, index);
        if (walk_value(w, child, SIZE_MAX, child_path, depth + 1))
            return -1;
        skip_ws(w);
        if (peek(w) == ',') {
            w->off++;
            skip_ws(w);
            continue;
        }
        if (peek(w) == ']' && !child->next) {
            w->off++;
            return 0;
        }
        return lost(w, path);
    }
}

static int skip_literal(walker *w, const char *word, const char *path)
{
    size_t n = strlen(word);
    if (w->doc->length - w->off < n || memcmp(w->doc->text + w->off, word, n) != 0)
        return lost(w, path);
    w->off += n;
    return 0;
}

static int walk_value(walker *w, const cJSON *item, size_t key_offset, const char *path, int depth)
{
    if (depth > CJSON_NESTING_LIMIT)
        return lost(w, path);
    if (record(w, item, key_offset, w->off))
        return -1;
    if (cJSON_IsObject(item))
        return peek(w) == '{' ? walk_object(w, item, path, depth) : lost(w, path);
    if (cJSON_IsArray(item))
        return peek(w) == '[' ? walk_array(w, item, path, depth) : lost(w, path);
    if (cJSON_IsString(item))
        return skip_string(w, path);
    if (cJSON_IsNumber(item))
        return skip_number(w, path);
    if (cJSON_IsTrue(item))
        return skip_literal(w, "true", path);
    if (cJSON_IsFalse(item))
        return skip_literal(w, "false", path);
    if (cJSON_IsNull(item))
        return skip_literal(w, "null", path);
    return lost(w, path);
}

static int compare_positions(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const swa_json_pos *)a)->item;
    uintptr_t y = (uintptr_t)((const swa_json_pos *)b)->item;
    return x < y ? -1 : x > y;
}

static const swa_json_pos *find_position(const swa_json_doc *doc, const cJSON *item)
{
    swa_json_pos key = {item, 0, 0};
    if (!doc->positions)
        return NULL;
    return bsearch(&key, doc->positions, doc->num_positions, sizeof key, compare_positions);
}

size_t swa_json_value_offset(const swa_json_doc *doc, const cJSON *item)
{
    const swa_json_pos *p = find_position(doc, item);
    return p ? p->value_offset : 0;
}

size_t swa_json_key_offset(const swa_json_doc *doc, const cJSON *item)
{
    const swa_json_pos *p = find_position(doc, item);
    if (!p)
        return 0;
    return p->key_offset == SIZE_MAX ? p->value_offset : p->key_offset;
}

/* The walk's duplicate check needs key offsets of earlier siblings before
 * the map is sorted; a linear search over what is recorded so far does it. */
static size_t unsorted_key_offset(const swa_json_doc *doc, const cJSON *item)
{
    for (size_t i = doc->num_positions; i-- > 0;)
        if (doc->positions[i].item == item)
            return doc->positions[i].key_offset;
    return 0;
}

/* ---------------------------------------------------------------------------
 * Syntax check.  cJSON's error offset is often far from the mistake (a
 * trailing comma is reported at the end of the file, an unterminated string
 * at its first character), so a small recognizer of the JSON grammar runs
 * first and reports the first mistake where a reader would look for it. */

typedef struct syntax {
    const swa_json_doc *doc;
    size_t off;
    size_t error_offset;
    char message[200];
    char path[sizeof ((swa_load_error *)0)->path]; /* of the failing value */
    bool failed;
} syntax;

static bool syntax_fail(syntax *s, size_t offset, const char *path, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static bool syntax_fail(syntax *s, size_t offset, const char *path, const char *fmt, ...)
{
    if (!s->failed) {
        s->failed = true;
        snprintf(s->path, sizeof s->path, "%s", path);
        s->error_offset = offset;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(s->message, sizeof s->message, fmt, ap);
        va_end(ap);
    }
    return false;
}

static int syntax_peek(const syntax *s) { return s->off < s->doc->length ? (unsigned char)s->doc->text[s->off] : -1; }

static void syntax_ws(syntax *s)
{
    int c;
    while ((c = syntax_peek(s)) == ' ' || c == '\t' || c == '\n' || c == '\r')
        s->off++;
}

/* "'x'" or "end of file" for the character at the current offset. */
static const char *syntax_seen(const syntax *s, char *buf, size_t n)
{
    int c = syntax_peek(s);
    if (c < 0)
        snprintf(buf, n, "end of file");
    else if (c >= 0x20 && c < 0x7f)
        snprintf(buf, n, "'%c'", c);
    else
        snprintf(buf, n, "byte 0x%02x", c);
    return buf;
}

/* The length of the UTF-8 sequence at t[0..avail) (RFC 3629: no overlong
 * forms, no surrogates, nothing past U+10FFFF), 0 when it is not one. */
static size_t utf8_sequence(const unsigned char *t, size_t avail)
{
    size_t len = t[0] >= 0xf0 ? 4 : t[0] >= 0xe0 ? 3 : t[0] >= 0xc0 ? 2 : 0;
    if (t[0] < 0xc2 || t[0] > 0xf4 || avail < len)
        return 0;
    for (size_t k = 1; k < len; k++)
        if ((t[k] & 0xc0) != 0x80)
            return 0;
    if ((t[0] == 0xe0 && t[1] < 0xa0) || (t[0] == 0xed && t[1] >= 0xa0) || (t[0] == 0xf0 && t[1] < 0x90) ||
        (t[0] == 0xf4 && t[1] >= 0x90))
        return 0;
    return len;
}

static unsigned hex4(const char *h)
{
    unsigned v = 0;
    for (int k = 0; k < 4; k++)
        v = v * 16 + (unsigned)(h[k] <= '9' ? h[k] - '0' : (h[k] | 0x20) - 'a' + 10);
    return v;
}

static bool syntax_string(syntax *s, const char *path)
{
    size_t open = s->off;
    const char *t = s->doc->text;
    s->off++;
    while (s->off < s->doc->length) {
        unsigned char c = (unsigned char)t[s->off];
        if (c == '"') {
            s->off++;
            return true;
        }
        if (c < 0x20) {
            if (c == '\n')
                return syntax_fail(s, open, path, "invalid JSON: string not closed on its line (a missing '\"'?)");
            return syntax_fail(s, s->off, path, "invalid JSON: raw control character 0x%02x inside a string (write it as an escape)", c);
        }
        if (c == '\\') {
            char e = s->off + 1 < s->doc->length ? t[s->off + 1] : '\0';
            if (e == 'u') {
                for (int k = 2; k < 6; k++) {
                    char h = s->off + (size_t)k < s->doc->length ? t[s->off + (size_t)k] : '\0';
                    if (!((h >= '0' && h <= '9') || (h >= 'a' && h <= 'f') || (h >= 'A' && h <= 'F')))
                        return syntax_fail(s, s->off, path, "invalid JSON: expected 4 hex digits after \\u");
                }
                /* valid JSON, but cJSON stores C strings: the name, key or
                 * enum value would silently end at the NUL ("fp16\u0000x"
                 * read as "fp16", a description cut short) */
                if (memcmp(t + s->off + 2, "0000", 4) == 0)
                    return syntax_fail(s, s->off, path, "expected a string without NUL characters, got the escape "
                                       "\\u0000 (case files are read as C strings: the text would end there)");
                /* a UTF-16 surrogate pair is one character; half of one is
                 * none (cJSON refused it as "unexpected '\\'" at /) */
                unsigned unit = hex4(t + s->off + 2);
                if (unit >= 0xdc00 && unit <= 0xdfff)
                    return syntax_fail(s, s->off, path, "invalid JSON: the escape \\u%.4s is the second half of a "
                                       "UTF-16 surrogate pair with no first half (\\ud800 to \\udbff) before it",
                                       t + s->off + 2);
                if (unit >= 0xd800 && unit <= 0xdbff) {
                    const char *low = t + s->off + 6;
                    bool paired = s->off + 12 <= s->doc->length && low[0] == '\\' && low[1] == 'u';
                    for (int k = 2; paired && k < 6; k++)
                        paired = strchr("0123456789abcdefABCDEF", low[k]) != NULL;
                    if (!paired || hex4(low + 2) < 0xdc00 || hex4(low + 2) > 0xdfff)
                        return syntax_fail(s, s->off, path, "invalid JSON: the escape \\u%.4s is the first half of a "
                                           "UTF-16 surrogate pair, and no second half (\\udc00 to \\udfff) follows it",
                                           t + s->off + 2);
                    s->off += 12;
                    continue;
                }
                s->off += 6;
                continue;
            }
            if (!e || !strchr("\"\\/bfnrt", e))
                return syntax_fail(s, s->off, path, "invalid JSON: unknown escape in a string (expected one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)");
            s->off += 2;
            continue;
        }
        if (c >= 0x80) { /* the reports carry these strings: HTML, JSON and XML need UTF-8 */
            size_t len = utf8_sequence((const unsigned char *)t + s->off, s->doc->length - s->off);
            if (!len)
                return syntax_fail(s, s->off, path, "invalid UTF-8 in a string (byte 0x%02x): case files are UTF-8 "
                                   "text (save the file as UTF-8, or write the character as \\uXXXX)", c);
            s->off += len;
            continue;
        }
        s->off++;
    }
    return syntax_fail(s, open, path, "invalid JSON: string never closed (a missing '\"'?)");
}

static bool syntax_value(syntax *s, int depth, const char *path);

static bool syntax_container(syntax *s, int depth, bool object, const char *path)
{
    size_t open = s->off;
    int line, column;
    char seen[32];
    char close = object ? '}' : ']';
    char child[sizeof ((swa_load_error *)0)->path];
    s->off++;
    syntax_ws(s);
    if (syntax_peek(s) == close) {
        s->off++;
        return true;
    }
    for (int index = 0;; index++) {
        swa_json_path_index(child, sizeof child, path, index);
        if (object) {
            if (syntax_peek(s) != '"')
                return syntax_fail(s, s->off, path, "invalid JSON: expected a key in double quotes, got %s",
                                   syntax_seen(s, seen, sizeof seen));
            size_t key = s->off;
            /* the raw key text (escapes as written) names the member well
             * enough for a message, also one about the key itself */
            size_t key_end = key + 1;
            while (key_end < s->doc->length && s->doc->text[key_end] != '"' && s->doc->text[key_end] != '\n')
                key_end += s->doc->text[key_end] == '\\' ? 2 : 1;
            if (key_end > s->doc->length)
                key_end = s->doc->length;
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)(key_end - key - 1 < 127 ? key_end - key - 1 : 127),
                     s->doc->text + key + 1);
            swa_json_path_key(child, sizeof child, path, name);
            if (!syntax_string(s, child))
                return false;
            syntax_ws(s);
            if (syntax_peek(s) != ':')
                return syntax_fail(s, s->off, path, "invalid JSON: expected ':' after the key, got %s",
                                   syntax_seen(s, seen, sizeof seen));
            s->off++;
            syntax_ws(s);
        }
        if (!syntax_value(s, depth + 1, child))
            return false;
        syntax_ws(s);
        int c = syntax_peek(s);
        if (c == close) {
            s->off++;
            return true;
        }
        if (c == ',') {
            size_t comma = s->off;
            s->off++;
            syntax_ws(s);
            if (syntax_peek(s) == close)
                return syntax_fail(s, comma, path, "invalid JSON: trailing ',' before '%c'", close);
            continue;
        }
        swa_json_line_col(s->doc, open, &line, &column);
        if (c < 0)
            return syntax_fail(s, s->off, path, "invalid JSON: unexpected end of file; the '%c' at line %d, column %d "
                               "is never closed", object ? '{' : '[', line, column);
        return syntax_fail(s, s->off, child, "invalid JSON: expected ',' or '%c' after %s, got %s", close,
                           object ? "a member" : "a list element", syntax_seen(s, seen, sizeof seen));
    }
}

static bool syntax_number(syntax *s, const char *path)
{
    const char *t = s->doc->text;
    size_t n = s->doc->length, start = s->off, i = s->off;
    bool ok = true;
    if (i < n && t[i] == '-')
        i++;
    if (i < n && t[i] == '0')
        i++;
    else if (i < n && t[i] >= '1' && t[i] <= '9')
        while (i < n && t[i] >= '0' && t[i] <= '9')
            i++;
    else
        ok = false;
    if (ok && i < n && t[i] == '.') {
        i++;
        ok = i < n && t[i] >= '0' && t[i] <= '9';
        while (i < n && t[i] >= '0' && t[i] <= '9')
            i++;
    }
    if (ok && i < n && (t[i] == 'e' || t[i] == 'E')) {
        i++;
        if (i < n && (t[i] == '+' || t[i] == '-'))
            i++;
        ok = i < n && t[i] >= '0' && t[i] <= '9';
        while (i < n && t[i] >= '0' && t[i] <= '9')
            i++;
    }
    size_t end = i;
    while (end < n && strchr("0123456789+-.eE", t[end]))
        end++;
    if (!ok || end != i)
        return syntax_fail(s, start, path, "invalid JSON number \"%.*s\" (JSON allows no leading zeros, no bare '.')",
                           (int)(end - start > 40 ? 40 : end - start), t + start);
    s->off = i;
    return true;
}

static bool syntax_value(syntax *s, int depth, const char *path)
{
    char seen[32];
    if (depth > CJSON_NESTING_LIMIT) {
        /* the pointer of a value this deep is a thousand tokens: its first
         * few say where the nesting is, the place says where it passed the
         * limit */
        char shown[80];
        size_t keep = strlen(path);
        if (keep >= sizeof shown)
            for (size_t i = keep = 0; path[i]; i++)
                if (path[i] == '/' && i + sizeof CUT_MARK <= sizeof shown)
                    keep = i;
        snprintf(shown, sizeof shown, "%.*s%s", (int)keep, path, strlen(path) > keep ? CUT_MARK : "");
        return syntax_fail(s, s->off, shown, "invalid JSON: lists and objects nested deeper than %d levels "
                           "(swadiff's limit; a case file needs a handful)", CJSON_NESTING_LIMIT);
    }
    int c = syntax_peek(s);
    if (c == '{' || c == '[')
        return syntax_container(s, depth, c == '{', path);
    if (c == '"')
        return syntax_string(s, path);
    if (c == '-' || (c >= '0' && c <= '9'))
        return syntax_number(s, path);
    static const char *const words[] = {"true", "false", "null"};
    for (int i = 0; i < 3; i++) {
        size_t len = strlen(words[i]);
        if (c == words[i][0]) {
            if (s->doc->length - s->off >= len && memcmp(s->doc->text + s->off, words[i], len) == 0) {
                s->off += len;
                return true;
            }
            return syntax_fail(s, s->off, path, "invalid JSON: expected %s", words[i]);
        }
    }
    if (c == '\'')
        return syntax_fail(s, s->off, path, "invalid JSON: strings take double quotes, not single quotes");
    return syntax_fail(s, s->off, path, "invalid JSON: expected a value (object, list, string, number, true, false "
                       "or null), got %s", syntax_seen(s, seen, sizeof seen));
}

/* Returns true when the text is one JSON value (whitespace around it). */
static bool syntax_check(const swa_json_doc *doc, size_t *error_offset, char *message, size_t n, char *path,
                         size_t path_n)
{
    syntax s = {.doc = doc};
    if (doc->length >= 3 && memcmp(doc->text, "\xef\xbb\xbf", 3) == 0) {
        *error_offset = 0;
        snprintf(message, n, "invalid JSON: the file starts with a UTF-8 byte order mark; save it without one");
        snprintf(path, path_n, "%s", "");
        return false;
    }
    syntax_ws(&s);
    if (syntax_value(&s, 0, "")) {
        syntax_ws(&s);
        if (s.off < doc->length)
            syntax_fail(&s, s.off, "", "invalid JSON: trailing characters after the top-level value");
    }
    if (!s.failed)
        return true;
    *error_offset = s.error_offset;
    snprintf(message, n, "%s", s.message);
    snprintf(path, path_n, "%s", s.path);
    return false;
}

/* ---------------------------------------------------------------------------
 * open / close */

static void describe_parse_error(const swa_json_doc *doc, size_t offset, char *buf, size_t n)
{
    if (offset >= doc->length) {
        snprintf(buf, n, "invalid JSON: unexpected end of file (an unclosed '{', '[' or string?)");
        return;
    }
    unsigned char ch = (unsigned char)doc->text[offset];
    if (ch >= 0x20 && ch < 0x7f)
        snprintf(buf, n, "invalid JSON: unexpected '%c'", ch);
    else
        snprintf(buf, n, "invalid JSON: unexpected byte 0x%02x", ch);
}

int swa_json_doc_open(swa_json_doc *doc, const char *file, const char *text, size_t length,
                      swa_load_error *err)
{
    memset(doc, 0, sizeof *doc);
    doc->file = file;
    doc->text = text;
    doc->length = length;

    const char *nul = memchr(text, '\0', length);
    if (nul)
        return swa_json_fail(doc, err, (size_t)(nul - text), "", "invalid JSON: NUL byte in the file");

    size_t error_offset;
    char message[200], path[sizeof err->path];
    if (!syntax_check(doc, &error_offset, message, sizeof message, path, sizeof path))
        return swa_json_fail(doc, err, error_offset, path, "%s", message);

    /* A NUL-terminated copy: cJSON's length-limited parser still peeks one
     * byte ahead in places, and the copy costs nothing for case files. */
    char *copy = malloc(length + 1);
    if (!copy)
        return swa_json_fail(doc, err, 0, "", "out of memory reading the file");
    memcpy(copy, text, length);
    copy[length] = '\0';

    const char *end = NULL;
    doc->root = cJSON_ParseWithLengthOpts(copy, length + 1, &end, false);
    if (!doc->root) {
        size_t offset = end && end >= copy ? (size_t)(end - copy) : 0;
        char msg[128];
        describe_parse_error(doc, offset, msg, sizeof msg);
        free(copy);
        return swa_json_fail(doc, err, offset, "", "%s", msg);
    }
    free(copy);

    walker w = {doc, err, 0, 0};
    skip_ws(&w);
    if (walk_value(&w, doc->root, SIZE_MAX, "", 0)) {
        swa_json_doc_close(doc);
        return -1;
    }
    skip_ws(&w);
    if (w.off < doc->length) {
        size_t off = w.off;
        swa_json_doc_close(doc);
        doc->file = file;
        doc->text = text;
        doc->length = length;
        return swa_json_fail(doc, err, off, "", "invalid JSON: trailing characters after the top-level value");
    }
    qsort(doc->positions, doc->num_positions, sizeof *doc->positions, compare_positions);
    (void)map_lines(doc); /* without it, positions are slower, not wrong */
    return 0;
}

void swa_json_doc_close(swa_json_doc *doc)
{
    cJSON_Delete(doc->root);
    free(doc->positions);
    free(doc->line_starts);
    memset(doc, 0, sizeof *doc);
}
