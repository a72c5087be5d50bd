/* The indexer's fast lane (tapes/fastlane.py) in compiled code: a block of a Bub tape's lines at a
 * time, without a Python object per line.
 *
 * A line is taken only when this code is sure of what orjson.loads and the Python lane would make
 * of it: valid JSON (strict UTF-8, escapes, numbers, depth), one of the plain kinds, an id, a date
 * in the form Bub writes (and, once the tape has overflowed, an error, as the full path counts it). Anything else (an anchor, an error, a key spelt with an escape, a
 * repeated key, an exponent, a date in another form, a line too long) stops the scan at that
 * line, which the Python lane then reads: so this code may refuse what it likes, but must never
 * take a line the Python lane would not, nor read one differently. tests/tapes/test_blocklane.py
 * holds it to that.
 *
 * A Lane keeps the lines it took as columns (drain()) and their counts since the last
 * settle() (sums and extremes, as fastlane.Counted keeps them).
 *
 * An anchor line in the form Bub writes stops the scan too, but read (anchor()): its id, name,
 * date, context flag and where its state is, as fastlane.anchor reads them from orjson's value.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <datetime.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

typedef const unsigned char *cur;

enum { K_MESSAGE, K_TOOL_CALL, K_TOOL_RESULT, K_EVENT, K_SYSTEM, K_ERROR, K_NONE };
static const char *const KINDS[] = {"message", "tool_call", "tool_result", "event", "system", "error"};

#define MAX_DEPTH 200                /* orjson's own limit is 1,024; deeper lines go to Python */
#define MAX_NAMES 4096               /* distinct roles, event names and models in one lane */
#define SCAN_PARSE_LIMIT (4 << 20)   /* sources.model.SCAN_PARSE_LIMIT */
#define IN_CONTEXT 13                /* packing: READABLE | CONTEXT | HAS_ID */
#define OUT_OF_CONTEXT 9             /* packing: READABLE | HAS_ID */
#define ERROR 2                      /* packing: ERROR */
#define TOKEN_LIMIT (((int64_t)1) << 40) /* python_json.count: a plausible token count */

/* ---- JSON, validated as strictly as orjson reads it (where unsure: refuse) --------------------- */

static cur ws(cur p, cur e) {
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) p++;
    return p;
}

static int hex4(cur p, cur e, unsigned *out) {
    unsigned v = 0;
    if (e - p < 4) return 0;
    for (int i = 0; i < 4; i++) {
        unsigned char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= c - '0';
        else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
        else return 0;
    }
    *out = v;
    return 1;
}

/* The bytes of one UTF-8 character at p (Unicode's table 3-7: no overlong forms, no surrogates,
 * nothing past U+10FFFF), or 0. */
static int utf8_char(cur p, cur e) {
    unsigned char c = p[0];
    if (c >= 0xC2 && c <= 0xDF) return (e - p >= 2 && (p[1] & 0xC0) == 0x80) ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        if (e - p < 3 || (p[2] & 0xC0) != 0x80) return 0;
        unsigned char lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        return (p[1] >= lo && p[1] <= hi) ? 3 : 0;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (e - p < 4 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80) return 0;
        unsigned char lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        return (p[1] >= lo && p[1] <= hi) ? 4 : 0;
    }
    return 0;
}

/* The first byte at or after p that a string's plain run stops at (a quote, a backslash, a control
 * character or a byte that is not ASCII), or e: sixteen bytes at a time where SSE2 is there (every
 * x86-64), eight elsewhere. */
static cur plain_run(cur p, cur e) {
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), slash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
    while (e - p >= 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)p);
        /* signed: a byte of 0x80 or more is negative, so "less than 0x20" also finds it */
        __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, slash)),
                                   _mm_cmplt_epi8(x, space));
        int mask = _mm_movemask_epi8(hit);
        if (mask) return p + __builtin_ctz(mask);
        p += 16;
    }
#endif
    while (e - p >= 8) {
        uint64_t x, ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
        memcpy(&x, p, 8);
        uint64_t quote8 = x ^ (ones * '"'), slash8 = x ^ (ones * '\\');
        uint64_t special = (x & high) | ((x - ones * 0x20) & ~x & high) | ((quote8 - ones) & ~quote8 & high) |
                           ((slash8 - ones) & ~slash8 & high);
        if (special) break;
        p += 8;
    }
    return p;
}

static int simple_escape(unsigned char c) { /* \" \\ \/ \b \f \n \r \t */
    return c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' || c == 't';
}

/* plain_run, but passing over the simple escapes too (*escaped set where it does) without leaving
 * the block of sixteen bytes they are in: a tool's output, JSON in JSON, holds one every few bytes
 * (8% of the real tape's bytes are backslashes). */
static cur escaped_run(cur p, cur e, int *escaped) {
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), slash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
    while (e - p >= 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)p);
        unsigned slashes = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, slash));
        unsigned others = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmplt_epi8(x, space)));
        unsigned hits = slashes | others;
        while (hits) { /* (an escape at the block's last byte is left to the caller) */
            int i = __builtin_ctz(hits);
            if (!(slashes >> i & 1) || i == 15 || !simple_escape(p[i + 1])) return p + i;
            *escaped = 1;
            hits &= ~((4u << i) - 1); /* the backslash and the character it escapes */
        }
        p += 16;
    }
#else
    (void)escaped;
#endif
    return plain_run(p, e);
}

/* After the string that starts at p (its opening quote), or NULL; *escaped: it holds a backslash. */
static cur string_end(cur p, cur e, int *escaped) {
    *escaped = 0;
    p++;
    while (p < e) {
        p = escaped_run(p, e, escaped);
        if (p >= e) return NULL;
        unsigned char c = *p;
        if (c == '"') return p + 1;
        if (c >= 0x20 && c < 0x80 && c != '\\') {
            p++;
            continue;
        }
        if (c == '\\') {
            *escaped = 1;
            if (e - p < 2) return NULL;
            c = p[1];
            if (c == 'u') {
                unsigned u, low;
                if (!hex4(p + 2, e, &u)) return NULL;
                p += 6;
                if (u >= 0xDC00 && u <= 0xDFFF) return NULL; /* a low surrogate alone */
                if (u >= 0xD800 && u <= 0xDBFF) {            /* must be followed by its low half */
                    if (e - p < 6 || p[0] != '\\' || p[1] != 'u' || !hex4(p + 2, e, &low)) return NULL;
                    if (low < 0xDC00 || low > 0xDFFF) return NULL;
                    p += 6;
                }
                continue;
            }
            switch (c) {
            case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
                p += 2;
                continue;
            default:
                return NULL;
            }
        }
        if (c < 0x20) return NULL;
        int n = utf8_char(p, e);
        if (!n) return NULL;
        p += n;
    }
    return NULL;
}

/* After the number at p, or NULL. An integer literal of up to 18 digits is read into *value
 * (*integer = 1); one longer is *integer = 2 (its value unread). A fraction makes it a float
 * (*integer = 0). An exponent, or more than 300 integer digits (a float that may overflow, which
 * orjson refuses), is refused. */
static cur number_end(cur p, cur e, int *integer, int64_t *value) {
    int negative = 0, digits = 0;
    int64_t v = 0;
    if (p < e && *p == '-') negative = 1, p++;
    if (p >= e || *p < '0' || *p > '9') return NULL;
    if (*p == '0') {
        p++, digits = 1;
        if (p < e && *p >= '0' && *p <= '9') return NULL; /* a leading zero */
    } else {
        while (p < e && *p >= '0' && *p <= '9') {
            if (digits < 18) v = v * 10 + (*p - '0');
            p++, digits++;
        }
    }
    if (digits > 300) return NULL;
    *integer = digits > 18 ? 2 : 1;
    *value = negative ? -v : v;
    if (p < e && *p == '.') {
        p++;
        if (p >= e || *p < '0' || *p > '9') return NULL;
        while (p < e && *p >= '0' && *p <= '9') p++;
        *integer = 0;
    }
    if (p < e && (*p == 'e' || *p == 'E')) return NULL;
    return p;
}

static cur literal_end(cur p, cur e, const char *word) {
    size_t n = strlen(word);
    return ((size_t)(e - p) >= n && memcmp(p, word, n) == 0) ? p + n : NULL;
}

static cur value_end(cur p, cur e, int depth);

/* After the object or array at p (its bracket), every value in it checked, or NULL. */
static cur container_end(cur p, cur e, int depth) {
    unsigned char close = *p == '{' ? '}' : ']';
    int object = close == '}', escaped;
    if (depth > MAX_DEPTH) return NULL;
    p = ws(p + 1, e);
    if (p < e && *p == close) return p + 1;
    for (;;) {
        if (object) {
            if (p >= e || *p != '"' || !(p = string_end(p, e, &escaped))) return NULL;
            p = ws(p, e);
            if (p >= e || *p != ':') return NULL;
            p = ws(p + 1, e);
        }
        if (!(p = value_end(p, e, depth + 1))) return NULL;
        p = ws(p, e);
        if (p >= e) return NULL;
        if (*p == close) return p + 1;
        if (*p != ',') return NULL;
        p = ws(p + 1, e);
    }
}

static cur value_end(cur p, cur e, int depth) {
    int escaped, integer;
    int64_t value;
    if (p >= e) return NULL;
    switch (*p) {
    case '{':
    case '[': return container_end(p, e, depth);
    case '"': return string_end(p, e, &escaped);
    case 't': return literal_end(p, e, "true");
    case 'f': return literal_end(p, e, "false");
    case 'n': return literal_end(p, e, "null");
    default: return number_end(p, e, &integer, &value);
    }
}

/* ---- the members the lane reads, walked once ------------------------------------------------ */

typedef struct {
    cur p;    /* the value's first byte, NULL: not there */
    cur end;  /* after it */
} Span;

/* Every member the lane looks up, at any level: a slot each. */
enum {
    S_ID, S_KIND, S_PAYLOAD, S_META, S_DATE,      /* the line */
    S_ROLE, S_CALLS, S_RESULTS, S_NAME, S_DATA,   /* its payload */
    S_STATE,                                      /* an anchor's payload */
    S_STATUS, S_MODEL, S_USAGE,                   /* an event's data */
    S_TOTAL, S_PROMPT, S_DETAILS,                 /* a run's usage */
    S_CACHED,                                     /* its prompt_tokens_details */
    S_CONTEXT,                                    /* the line's meta */
    S_MESSAGE, S_ERROR_KIND,                      /* one of a tool result's results */
    /* Bub's next format (lane_next.h) */
    N_SPECVERSION, N_ID, N_SOURCE, N_TYPE, N_TIME, N_DATA, N_CONTEXT,           /* the line */
    N_STEP_SOURCE, N_MESSAGE, N_OBSERVATION, N_TOOL_CALLS, N_MODEL_NAME,         /* its step */
    N_METRICS, N_EFFORT, N_REASONING,
    N_RESULTS, N_CONTENT,                         /* its observation, the first result */
    N_MODEL, N_USAGE, N_TOTAL, N_PROMPT, N_COMPLETION, N_DETAILS, N_CACHED, /* a fact's payload */
    N_STATUS,
    N_COST,                                       /* the step's metrics */
    SLOTS
};

typedef struct Spec {
    int count;
    const char *const *names;
    const int *slots;
    const struct Spec *const *nested; /* the spec of an object value, or NULL */
    int plain_keys; /* every key must be a CloudEvents name, [a-z0-9]+ (Bub's next format's line) */
} Spec;

static const char *const CACHED_NAMES[] = {"cached_tokens"};
static const int CACHED_SLOTS[] = {S_CACHED};
static const Spec DETAILS = {1, CACHED_NAMES, CACHED_SLOTS, (const Spec *const[]){NULL}};
static const char *const USAGE_NAMES[] = {"total_tokens", "prompt_tokens", "prompt_tokens_details"};
static const int USAGE_SLOTS[] = {S_TOTAL, S_PROMPT, S_DETAILS};
static const Spec USAGE = {3, USAGE_NAMES, USAGE_SLOTS, (const Spec *const[]){NULL, NULL, &DETAILS}};
static const char *const DATA_NAMES[] = {"status", "model", "usage"};
static const int DATA_SLOTS[] = {S_STATUS, S_MODEL, S_USAGE};
static const Spec DATA = {3, DATA_NAMES, DATA_SLOTS, (const Spec *const[]){NULL, NULL, &USAGE}};
static const char *const PAYLOAD_NAMES[] = {"role", "calls", "results", "name", "data", "state"};
static const int PAYLOAD_SLOTS[] = {S_ROLE, S_CALLS, S_RESULTS, S_NAME, S_DATA, S_STATE};
static const Spec PAYLOAD = {6, PAYLOAD_NAMES, PAYLOAD_SLOTS,
                             (const Spec *const[]){NULL, NULL, NULL, NULL, &DATA, NULL}};
static const char *const META_NAMES[] = {"context"};
static const int META_SLOTS[] = {S_CONTEXT};
static const Spec META = {1, META_NAMES, META_SLOTS, (const Spec *const[]){NULL}};
static const char *const LINE_NAMES[] = {"id", "kind", "payload", "meta", "date"};
static const int LINE_SLOTS[] = {S_ID, S_KIND, S_PAYLOAD, S_META, S_DATE};
static const Spec LINE = {5, LINE_NAMES, LINE_SLOTS, (const Spec *const[]){NULL, NULL, &PAYLOAD, &META, NULL}};

typedef struct {
    Span at[SLOTS];
    int64_t calls, results; /* payload.calls and payload.results: how many */
    int error_result; /* payload.results holds an error ({"message", "kind", ...}) */
    int first_object; /* (Bub's next format) observation.results' first item is an object */
} Found;

static cur members(cur p, cur e, int depth, const Spec *spec, Found *found);
static cur first_item_end(cur p, cur e, int depth, Found *found);

/* A CloudEvents attribute or extension name: [a-z0-9]+ (every attribute CloudEvents 1.0 names is one). */
static int extension_name(cur key, Py_ssize_t len) {
    if (len <= 0) return 0;
    for (Py_ssize_t i = 0; i < len; i++)
        if (!((key[i] >= 'a' && key[i] <= 'z') || (key[i] >= '0' && key[i] <= '9'))) return 0;
    return 1;
}

static const char *const RESULT_NAMES[] = {"message", "kind"};
static const int RESULT_SLOTS[] = {S_MESSAGE, S_ERROR_KIND};
static const Spec RESULT = {2, RESULT_NAMES, RESULT_SLOTS, (const Spec *const[]){NULL, NULL}};

/* After the list at p, or NULL; *items: how many; *error (with `results`): one of them is an error,
 * an object with "message" and "kind". */
static cur items_end(cur p, cur e, int depth, int results, int *error, int64_t *items) {
    *items = 0;
    if (depth > MAX_DEPTH) return NULL;
    p = ws(p + 1, e);
    if (p < e && *p == ']') return p + 1;
    for (;;) {
        if (results && p < e && *p == '{') {
            Found item;
            item.at[S_MESSAGE].p = item.at[S_ERROR_KIND].p = NULL;
            if (!(p = members(p, e, depth + 1, &RESULT, &item))) return NULL;
            if (item.at[S_MESSAGE].p && item.at[S_ERROR_KIND].p) *error = 1;
        } else if (!(p = value_end(p, e, depth + 1))) {
            return NULL;
        }
        (*items)++;
        p = ws(p, e);
        if (p >= e) return NULL;
        if (*p == ']') return p + 1;
        if (*p != ',') return NULL;
        p = ws(p + 1, e);
    }
}

/* After the object at p, or NULL: every member checked, those `spec` names given their spans in
 * `found` (and their own members, where the spec says). Refused: invalid JSON, a key with an
 * escape (it could spell a name), a name found twice (the last one would win: left to Python). */
static cur members(cur p, cur e, int depth, const Spec *spec, Found *found) {
    int escaped;
    if (depth > MAX_DEPTH) return NULL;
    p = ws(p + 1, e);
    if (p < e && *p == '}') return p + 1;
    for (;;) {
        if (p >= e || *p != '"') return NULL;
        cur key = p + 1, after = string_end(p, e, &escaped);
        if (!after || escaped) return NULL;
        Py_ssize_t len = after - key - 1;
        if (spec->plain_keys && !extension_name(key, len)) return NULL;
        p = ws(after, e);
        if (p >= e || *p != ':') return NULL;
        p = ws(p + 1, e);
        cur start = p;
        int which = -1;
        for (int i = 0; i < spec->count; i++)
            if (key[0] == (unsigned char)spec->names[i][0] && (size_t)len == strlen(spec->names[i]) &&
                memcmp(key, spec->names[i], len) == 0)
                which = i;
        if (which < 0) {
            p = value_end(p, e, depth + 1);
        } else {
            int slot = spec->slots[which];
            if (found->at[slot].p) return NULL;
            if (p < e && *p == '{' && spec->nested[which])
                p = members(p, e, depth + 1, spec->nested[which], found);
            else if (p < e && *p == '[' && (slot == S_RESULTS || slot == S_CALLS || slot == N_TOOL_CALLS))
                p = items_end(p, e, depth + 1, slot == S_RESULTS, &found->error_result,
                              slot == S_RESULTS ? &found->results : &found->calls);
            else if (p < e && *p == '[' && slot == N_RESULTS)
                p = first_item_end(p, e, depth + 1, found);
            else
                p = value_end(p, e, depth + 1);
            found->at[slot].p = start, found->at[slot].end = p;
        }
        if (!p) return NULL;
        p = ws(p, e);
        if (p >= e) return NULL;
        if (*p == '}') return p + 1;
        if (*p != ',') return NULL;
        p = ws(p + 1, e);
    }
}

/* A string value without escapes: its text between the quotes. */
static int plain_string(Span v, cur *text, Py_ssize_t *len) {
    int escaped;
    if (!v.p || *v.p != '"' || !string_end(v.p, v.end, &escaped) || escaped) return 0;
    *text = v.p + 1, *len = v.end - v.p - 2;
    return 1;
}

static int is_string(Span v) { return v.p && *v.p == '"'; }
static int is_object(Span v) { return v.p && *v.p == '{'; }

static int is_key(cur key, Py_ssize_t len, const char *name) {
    return (size_t)len == strlen(name) && memcmp(key, name, len) == 0;
}

/* python_json.count: an int of a plausible size, else 0. */
/* python_json.is_count: a non-negative integer below TOKEN_LIMIT (-1: not one) */
static int64_t sane_count(Span v) {
    int integer;
    int64_t value;
    if (!v.p || !number_end(v.p, v.end, &integer, &value) || integer != 1) return -1;
    return (value >= 0 && value < TOKEN_LIMIT) ? value : -1;
}

static int64_t token_count(Span v) { /* python_json.count */
    int64_t value = sane_count(v);
    return value < 0 ? 0 : value;
}

/* ---- dates: datetime.fromisoformat of the forms Bub writes (shared with search/_text.c) ------ */

#include "../sources/bub_dates.h"

/* ---- one line ------------------------------------------------------------------------------ */

typedef struct {
    int64_t id, date, calls, tokens, prompt, cached;
    int kind, flags, usage, error;
    cur name, model;
    Py_ssize_t name_len, model_len;
    cur state, state_end; /* an anchor's payload.state, NULL: none */
    cur spent, spent_end; /* (Bub's next format) the step's metrics.cost, NULL: none */
} Line;

#define K_ANCHOR (K_NONE + 1) /* read_line's kind for an anchor: not a lane's kind, never a column */

/* 19 digits in a row or more (python_json.exact): json.loads may read the line otherwise. */
static int wide_digits(cur p, cur e) {
    int run = 0;
    for (; p < e; p++)
        if (*p >= '0' && *p <= '9') {
            if (++run >= 19) return 1;
        } else {
            run = 0;
        }
    return 0;
}

/* A Bub anchor as fastlane.anchor reads it (the line already known whole and valid, its id an
 * integer): a name without escapes and a date in UTC (an offset of zero: fromisoformat's value
 * then has the UTC zone the dates from micros have); 0: the Python lane's. */
static int read_anchor(Found *f, cur p, cur e, cur date, Py_ssize_t date_len, Line *L) {
    if (wide_digits(p, e) || !plain_string(f->at[S_NAME], &L->name, &L->name_len)) return 0;
    if (!date_micros(date, date_len, &L->date)) return 0;
    cur zone = date + date_len;
    if (zone[-1] != 'Z' && memcmp(zone - 5, "00:00", 5) != 0) return 0;
    Span context = f->at[S_CONTEXT];
    int out = is_object(f->at[S_META]) && context.p && context.end - context.p == 5 && memcmp(context.p, "false", 5) == 0;
    L->flags = out ? 0 : 1;
    L->state = f->at[S_STATE].p, L->state_end = f->at[S_STATE].end;
    L->kind = K_ANCHOR;
    return 1;
}

static int ends_with(cur text, Py_ssize_t len, const char *tail) {
    size_t n = strlen(tail);
    return (size_t)len >= n && memcmp(text + len - n, tail, n) == 0;
}

/* An event: an error if its name or data says so (taken only with `errors`), the full path's if
 * it is a loop.result or a loop.start while a label is wanted; a run, loop.start or model_switch
 * with data names a model and usage. */
static int read_event(Found *f, Line *L, int labels, int errors) {
    cur text;
    Py_ssize_t len;
    if (is_string(f->at[S_NAME]) && !plain_string(f->at[S_NAME], &L->name, &L->name_len)) return 0;
    cur name = L->name;
    Py_ssize_t name_len = L->name_len;
    if (is_key(name, name_len, "loop.result") || (labels && is_key(name, name_len, "loop.start"))) return 0;
    if (ends_with(name, name_len, ".error")) {
        if (!errors) return 0;
        L->error = 1;
    }
    if (!is_object(f->at[S_DATA])) return 1; /* data is {}: nothing more */
    if (is_string(f->at[S_STATUS])) {
        if (!plain_string(f->at[S_STATUS], &text, &len)) return 0;
        if (is_key(text, len, "error")) {
            if (!errors) return 0;
            L->error = 1;
        }
    }
    int has_data = *ws(f->at[S_DATA].p + 1, f->at[S_DATA].end) != '}';
    int model_event = is_key(name, name_len, "run") || is_key(name, name_len, "loop.start") ||
                      is_key(name, name_len, "model_switch");
    if (!has_data || !model_event) return 1;
    if (is_string(f->at[S_MODEL]) && !plain_string(f->at[S_MODEL], &L->model, &L->model_len)) return 0;
    if (!is_key(name, name_len, "run") || !is_object(f->at[S_USAGE])) return 1;
    /* python_json.reports_usage: a usage with neither a usable total nor prompt is as if absent */
    if (sane_count(f->at[S_TOTAL]) < 0 && sane_count(f->at[S_PROMPT]) < 0) return 1;
    L->usage = 1;
    L->tokens = token_count(f->at[S_TOTAL]), L->prompt = token_count(f->at[S_PROMPT]);
    L->cached = is_object(f->at[S_DETAILS]) ? token_count(f->at[S_CACHED]) : 0;
    return 1;
}

/* 1: the line is plain (or, with `errors`, an error the full path would count as this lane does:
 * the tape is known to have overflowed already, so its words need no reading) or an anchor
 * (L->kind K_ANCHOR), and L says what it is; 0: the Python lane's. */
static int read_line(cur p, cur e, Line *L, int labels, int errors) {
    Found f;
    memset(&f, 0, sizeof f);
    memset(L, 0, sizeof *L);
    L->name = (cur) "";
    p = ws(p, e);
    if (p >= e || *p != '{') return 0;
    cur end = members(p, e, 0, &LINE, &f);
    if (!end || ws(end, e) != e || !is_object(f.at[S_PAYLOAD]) || !f.at[S_ID].p) return 0;
    int integer;
    if (!number_end(f.at[S_ID].p, f.at[S_ID].end, &integer, &L->id) || integer != 1) return 0;
    cur kind, date;
    Py_ssize_t kind_len, date_len;
    if (!plain_string(f.at[S_KIND], &kind, &kind_len) || !plain_string(f.at[S_DATE], &date, &date_len))
        return 0;
    L->kind = K_NONE;
    for (int k = 0; k < K_NONE; k++)
        if (is_key(kind, kind_len, KINDS[k])) L->kind = k;
    switch (L->kind) {
    case K_MESSAGE:
        if (labels) return 0; /* the full path looks for the session's label in it */
        if (is_string(f.at[S_ROLE]) && !plain_string(f.at[S_ROLE], &L->name, &L->name_len)) return 0;
        break;
    case K_TOOL_CALL:
        L->calls = f.at[S_CALLS].p && *f.at[S_CALLS].p == '[' ? f.calls : 0;
        break;
    case K_TOOL_RESULT:
        if (f.error_result && !errors) return 0;
        L->error = f.error_result;
        break;
    case K_EVENT:
        if (!read_event(&f, L, labels, errors)) return 0;
        break;
    case K_SYSTEM:
        break;
    case K_ERROR:
        if (!errors) return 0;
        L->error = 1;
        break;
    default:
        return is_key(kind, kind_len, "anchor") && read_anchor(&f, p, e, date, date_len, L);
    }
    if (!date_micros(date, date_len, &L->date)) return 0;
    Span context = f.at[S_CONTEXT];
    int out = is_object(f.at[S_META]) && context.p && context.end - context.p == 5 && memcmp(context.p, "false", 5) == 0;
    L->flags = (out ? OUT_OF_CONTEXT : IN_CONTEXT) | (L->error ? ERROR : 0);
    return 1;
}

/* ---- the Lane: columns of the lines taken, and their counts -------------------------------- */

typedef struct {
    PyObject_HEAD
    /* names: roles, event names and models; code 0 is "" */
    PyObject *names;   /* list of str */
    char **name_bytes; /* their UTF-8 */
    Py_ssize_t *name_lens;
    Py_ssize_t name_count;
    /* columns since the last drain() */
    Py_ssize_t n, cap;
    int32_t *pos;
    int64_t *offset, *length, *id, *date;
    uint8_t *kind, *flags;
    uint16_t *name;
    /* counts since the last settle() */
    Py_ssize_t counted;
    int64_t low, high, calls, errors, last_pos, last_id, last_end;
    int64_t *roles; /* by name code */
    int64_t usages, tokens, prompt, completion, cached, last_prompt, last_cached, context;
    int has_last_prompt;
    int model; /* a name code, -1: none */
    PyObject *spent;  /* (Bub's next format) the metrics.cost of the steps taken, as bytes; NULL: none */
    PyObject *anchor; /* the anchor take() last stopped at, read (anchor()) */
    unsigned char *scratch; /* (Bub's next format) a fact's payload, its JSON string unescaped */
    Py_ssize_t scratch_cap;
} Lane;

/* packing.from_micros(): the UTC datetime of microseconds since the epoch (years 1900-2100,
 * date_micros's), without a timedelta and an addition in Python. */
static PyObject *utc_datetime(int64_t micros) {
    int64_t seconds = micros / 1000000, us = micros % 1000000;
    if (us < 0) us += 1000000, seconds--;
    int64_t days = seconds / 86400, rest = seconds % 86400;
    if (rest < 0) rest += 86400, days--;
    /* civil_from_days (H. Hinnant), the inverse of bub_dates.h's days_from_civil */
    int64_t z = days + 719468, era = (z >= 0 ? z : z - 146096) / 146097, doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365, doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153, d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9;
    int64_t y = yoe + era * 400 + (m <= 2);
    return PyDateTimeAPI->DateTime_FromDateAndTime((int)y, (int)m, (int)d, (int)(rest / 3600), (int)(rest / 60 % 60),
                                                   (int)(rest % 60), (int)us, PyDateTime_TimeZone_UTC,
                                                   PyDateTimeAPI->DateTimeType);
}

static int name_code(Lane *self, cur text, Py_ssize_t len) {
    for (Py_ssize_t i = 0; i < self->name_count; i++)
        if (self->name_lens[i] == len && memcmp(self->name_bytes[i], text, len) == 0) return (int)i;
    if (self->name_count >= MAX_NAMES) return -1;
    PyObject *name = PyUnicode_DecodeUTF8((const char *)text, len, "strict");
    char *copy = malloc(len + 1);
    if (!name || !copy || PyList_Append(self->names, name) < 0) {
        Py_XDECREF(name);
        free(copy);
        PyErr_Clear();
        return -1;
    }
    Py_DECREF(name);
    memcpy(copy, text, len);
    self->name_bytes[self->name_count] = copy;
    self->name_lens[self->name_count] = len;
    return (int)self->name_count++;
}

static int grow(Lane *self) {
    Py_ssize_t cap = self->cap ? self->cap * 2 : 4096;
#define GROW(field, type)                                                   \
    do {                                                                    \
        type *bigger = realloc(self->field, cap * sizeof(type));            \
        if (!bigger) return 0;                                              \
        self->field = bigger;                                               \
    } while (0)
    GROW(pos, int32_t);
    GROW(offset, int64_t);
    GROW(length, int64_t);
    GROW(id, int64_t);
    GROW(date, int64_t);
    GROW(kind, uint8_t);
    GROW(flags, uint8_t);
    GROW(name, uint16_t);
#undef GROW
    self->cap = cap;
    return 1;
}

static void clear_counts(Lane *self) {
    self->counted = 0, self->calls = 0, self->errors = 0;
    self->usages = self->tokens = self->prompt = self->completion = self->cached = 0;
    self->has_last_prompt = 0, self->model = -1;
    Py_CLEAR(self->spent);
    memset(self->roles, 0, self->name_count * sizeof(int64_t));
}

static int Lane_init(Lane *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "", kwlist)) return -1;
    self->names = PyList_New(0);
    self->name_bytes = calloc(MAX_NAMES, sizeof(char *));
    self->name_lens = calloc(MAX_NAMES, sizeof(Py_ssize_t));
    self->roles = calloc(MAX_NAMES, sizeof(int64_t));
    if (!self->names || !self->name_bytes || !self->name_lens || !self->roles || !grow(self)) {
        PyErr_NoMemory();
        return -1;
    }
    clear_counts(self);
    return name_code(self, (cur) "", 0) == 0 ? 0 : -1;
}

static void Lane_dealloc(Lane *self) {
    for (Py_ssize_t i = 0; i < self->name_count; i++) free(self->name_bytes[i]);
    free(self->name_bytes), free(self->name_lens), free(self->roles);
    free(self->pos), free(self->offset), free(self->length), free(self->id), free(self->date);
    free(self->kind), free(self->flags), free(self->name), free(self->scratch);
    Py_XDECREF(self->names);
    Py_XDECREF(self->anchor);
    Py_XDECREF(self->spent);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* (end, id, name, date, micros, context, state_start, state_end): the anchor L read, positions in
 * `data` (end: after its newline; state -1, -1: none), date a UTC datetime, context 1 or 0. */
static PyObject *anchor_tuple(Line *L, cur base, cur nl) {
    PyObject *name = PyUnicode_DecodeUTF8((const char *)L->name, L->name_len, "strict");
    PyObject *date = name ? utc_datetime(L->date) : NULL;
    if (!date) {
        Py_XDECREF(name);
        return NULL;
    }
    Py_ssize_t state = L->state ? L->state - base : -1, state_end = L->state ? L->state_end - base : -1;
    return Py_BuildValue("nLNNLinn", (Py_ssize_t)(nl + 1 - base), L->id, name, date, L->date, L->flags, state,
                         state_end);
}

#include "lane_next.h"

static int is_blank(cur p, cur e) { /* bytes.strip()'s whitespace only */
    for (; p < e; p++)
        if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\x0b' && *p != '\x0c') return 0;
    return 1;
}

/* take(data, at, pos, offset, room, labels, errors=False) -> (at, pos, stopped): the lines of
 * `data` from byte `at` on (`pos` the first one's position, `offset` where data starts in the
 * file), until one the Python lane must read (stopped 1: it starts at `at`), `room` entries are
 * taken (2), data ends (0), or an anchor the lane read (3: it starts at `at`; anchor() gives it
 * until the next take()). `labels`: the session's label is still wanted, so messages and
 * loop.start are Python's. `errors`: the tape has overflowed, so an error is counted here too. */
static PyObject *take_lines(Lane *self, PyObject *args, int next) {
    Py_buffer buf;
    Py_ssize_t at, room;
    long long pos, offset;
    int labels, errors = 0;
    if (!PyArg_ParseTuple(args, "y*nLLnp|p", &buf, &at, &pos, &offset, &room, &labels, &errors)) return NULL;
    cur base = buf.buf, e = base + buf.len;
    int stopped = 0;
    Py_CLEAR(self->anchor);
    Line L;
    Py_ssize_t taken = 0;
    while (base + at < e) {
        cur line = base + at, nl = memchr(line, '\n', e - line);
        if (!nl) break; /* no newline: not a complete line */
        if (nl + 1 - line > SCAN_PARSE_LIMIT) { /* read by its head (sources.bub.big_line) */
            stopped = 1;
            break;
        }
        if (is_blank(line, nl)) { /* passed over, as sources.bub.lines does */
            at = nl + 1 - base, pos++;
            continue;
        }
        if (taken >= room) {
            stopped = 2;
            break;
        }
        int role = 0, model = -1;
        int read = next ? read_next(self, line, nl, &L, labels, errors) : read_line(line, nl, &L, labels, errors);
        if (read < 0) {
            PyBuffer_Release(&buf);
            return PyErr_NoMemory();
        }
        if (next) L.id = pos; /* position is the id (formats/bub-next.md §0) */
        if (read && L.kind == K_ANCHOR) {
            self->anchor = anchor_tuple(&L, base, nl);
            if (!self->anchor) {
                PyBuffer_Release(&buf);
                return NULL;
            }
            stopped = 3;
            break;
        }
        if (!read || (role = name_code(self, L.name, L.name_len)) < 0 ||
            (L.model && L.model_len && (model = name_code(self, L.model, L.model_len)) < 0)) {
            stopped = 1;
            break;
        }
        /* Another model while usage is counted: the Python lane takes the line once the counts are
         * settled, so each model's tokens are priced as its own (tapes.costs). */
        if (model >= 0 && model != self->model && (self->usages || self->spent)) {
            stopped = 1;
            break;
        }
        if (self->n == self->cap && !grow(self)) {
            PyBuffer_Release(&buf);
            return PyErr_NoMemory();
        }
        Py_ssize_t i = self->n++;
        int64_t length = nl + 1 - line, start = offset + at;
        self->pos[i] = (int32_t)pos, self->offset[i] = start, self->length[i] = length;
        self->id[i] = L.id, self->date[i] = L.date, self->kind[i] = (uint8_t)L.kind;
        self->flags[i] = (uint8_t)L.flags, self->name[i] = (uint16_t)role;
        if (self->counted == 0 || L.date < self->low) self->low = L.date;
        if (self->counted == 0 || L.date > self->high) self->high = L.date;
        self->counted++, taken++;
        self->last_pos = pos, self->last_id = L.id, self->last_end = start + length;
        self->calls += L.calls, self->errors += L.error;
        if (L.kind == K_MESSAGE && role) self->roles[role]++;
        if (model >= 0) self->model = model;
        if (L.spent) {
            PyObject *spent = PyBytes_FromStringAndSize((const char *)L.spent, L.spent_end - L.spent);
            if (!spent || (!self->spent && !(self->spent = PyList_New(0))) || PyList_Append(self->spent, spent) < 0) {
                Py_XDECREF(spent);
                PyBuffer_Release(&buf);
                return NULL;
            }
            Py_DECREF(spent);
        }
        if (L.usage) {
            self->usages++;
            self->tokens += L.tokens, self->prompt += L.prompt, self->cached += L.cached;
            self->completion += L.tokens - L.prompt > 0 ? L.tokens - L.prompt : 0;
            if (L.prompt) self->has_last_prompt = 1, self->last_prompt = L.prompt, self->last_cached = L.cached;
            self->context = L.prompt;
        }
        at = nl + 1 - base, pos++;
    }
    PyBuffer_Release(&buf);
    return Py_BuildValue("nLi", at, pos, stopped);
}

static PyObject *Lane_take(Lane *self, PyObject *args) { return take_lines(self, args, 0); }

/* take_next(...): take(), over lines of Bub's next format (lane_next.h, tapes/nextlane.py). */
static PyObject *Lane_take_next(Lane *self, PyObject *args) { return take_lines(self, args, 1); }

/* settle() -> None, or the counts of the lines taken since the last settle():
 * (n, low, high, calls, (last pos, last id, last end), {role: n}, usage, model, errors, spent), low
 * and high UTC datetimes (packing.from_micros), usage None or
 * (runs, tokens, prompt, completion, cached, last prompt or None, last cached, context prompt), spent
 * None or the JSON text of each Bub-next step's metrics.cost, in order. */
static PyObject *Lane_settle(Lane *self, PyObject *Py_UNUSED(ignored)) {
    if (!self->counted) Py_RETURN_NONE;
    PyObject *roles = PyDict_New();
    if (!roles) return NULL;
    for (Py_ssize_t i = 1; i < self->name_count; i++) {
        if (!self->roles[i]) continue;
        PyObject *n = PyLong_FromLongLong(self->roles[i]);
        if (!n || PyDict_SetItem(roles, PyList_GET_ITEM(self->names, i), n) < 0) {
            Py_XDECREF(n);
            Py_DECREF(roles);
            return NULL;
        }
        Py_DECREF(n);
    }
    PyObject *usage = Py_None, *model = Py_None;
    Py_INCREF(Py_None);
    if (self->usages) {
        Py_DECREF(Py_None);
        PyObject *last = self->has_last_prompt ? PyLong_FromLongLong(self->last_prompt) : (Py_INCREF(Py_None), Py_None);
        usage = Py_BuildValue("LLLLLNLL", self->usages, self->tokens, self->prompt, self->completion,
                              self->cached, last, self->last_cached, self->context);
        if (!usage) {
            Py_DECREF(roles);
            return NULL;
        }
    }
    if (self->model >= 0) model = PyList_GET_ITEM(self->names, self->model);
    PyObject *low = utc_datetime(self->low), *high = low ? utc_datetime(self->high) : NULL;
    if (!high) {
        Py_XDECREF(low);
        Py_DECREF(roles);
        Py_DECREF(usage);
        return NULL;
    }
    PyObject *spent = self->spent ? self->spent : Py_None;
    PyObject *out = Py_BuildValue("nNNL(LLL)NNOLO", self->counted, low, high, self->calls, self->last_pos,
                                  self->last_id, self->last_end, roles, usage, model, self->errors, spent);
    clear_counts(self);
    return out;
}

static PyObject *column(void *data, Py_ssize_t n, size_t size) {
    return PyBytes_FromStringAndSize(data, n * (Py_ssize_t)size);
}

/* drain() -> (pos, offset, length, entry_id, date, kind, name, flags): the columns of the lines
 * taken since the last drain(), as bytes (int32, int64 x4, uint8, uint16, uint8); kind a code into
 * KINDS, name into names. */
static PyObject *Lane_drain(Lane *self, PyObject *Py_UNUSED(ignored)) {
    Py_ssize_t n = self->n;
    PyObject *out = Py_BuildValue(
        "NNNNNNNN", column(self->pos, n, 4), column(self->offset, n, 8), column(self->length, n, 8),
        column(self->id, n, 8), column(self->date, n, 8), column(self->kind, n, 1),
        column(self->name, n, 2), column(self->flags, n, 1));
    if (out) self->n = 0;
    return out;
}

/* anchor() -> the anchor take() last stopped at (see anchor_tuple), or None; once. */
static PyObject *Lane_anchor(Lane *self, PyObject *Py_UNUSED(ignored)) {
    PyObject *found = self->anchor ? self->anchor : Py_None;
    if (!self->anchor) Py_INCREF(Py_None);
    self->anchor = NULL;
    return found;
}

static PyObject *Lane_pending(Lane *self, void *Py_UNUSED(closure)) { return PyLong_FromSsize_t(self->n); }

static PyObject *Lane_names(Lane *self, void *Py_UNUSED(closure)) {
    Py_INCREF(self->names);
    return self->names;
}

/* utc_text(value) -> str: a datetime's fields as SQLite's DateTimeField keeps a UTC one,
 * str(value.replace(tzinfo=None)) (tapes.bulk, thousands of anchor dates a tape). */
static PyObject *utc_text(PyObject *Py_UNUSED(module), PyObject *value) {
    if (!PyDateTime_Check(value)) {
        PyErr_SetString(PyExc_TypeError, "utc_text() takes a datetime");
        return NULL;
    }
    char text[40];
    int us = PyDateTime_DATE_GET_MICROSECOND(value);
    int n = snprintf(text, sizeof text, "%04d-%02d-%02d %02d:%02d:%02d", PyDateTime_GET_YEAR(value),
                     PyDateTime_GET_MONTH(value), PyDateTime_GET_DAY(value), PyDateTime_DATE_GET_HOUR(value),
                     PyDateTime_DATE_GET_MINUTE(value), PyDateTime_DATE_GET_SECOND(value));
    if (us) n += snprintf(text + n, sizeof text - n, ".%06d", us);
    return PyUnicode_FromStringAndSize(text, n);
}

static PyMethodDef module_methods[] = {
    {"utc_text", (PyCFunction)utc_text, METH_O, "utc_text(datetime) -> its date and time as SQLite keeps them"},
    {NULL},
};

static PyMethodDef Lane_methods[] = {
    {"take", (PyCFunction)Lane_take, METH_VARARGS, "take(data, at, pos, offset, room, labels, errors=False) -> (at, pos, stopped)"},
    {"take_next", (PyCFunction)Lane_take_next, METH_VARARGS, "take() over lines of Bub's next format"},
    {"settle", (PyCFunction)Lane_settle, METH_NOARGS, "the counts since the last settle(), or None"},
    {"drain", (PyCFunction)Lane_drain, METH_NOARGS, "the columns since the last drain()"},
    {"anchor", (PyCFunction)Lane_anchor, METH_NOARGS, "the anchor take() last stopped at, or None"},
    {NULL},
};

static PyGetSetDef Lane_getset[] = {
    {"pending", (getter)Lane_pending, NULL, "lines taken and not yet drained", NULL},
    {"names", (getter)Lane_names, NULL, "the strings the name codes stand for", NULL},
    {NULL},
};

static PyTypeObject LaneType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tapeview.tapes._lane.Lane",
    .tp_basicsize = sizeof(Lane),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Lane(): the fast lane over blocks of a Bub tape's lines",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Lane_init,
    .tp_dealloc = (destructor)Lane_dealloc,
    .tp_methods = Lane_methods,
    .tp_getset = Lane_getset,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "_lane", .m_doc = "The fast lane in compiled code.", .m_size = -1,
    .m_methods = module_methods};

PyMODINIT_FUNC PyInit__lane(void) {
    PyDateTime_IMPORT;
    if (!PyDateTimeAPI || PyType_Ready(&LaneType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    PyObject *kinds = Py_BuildValue("(ssssss)", KINDS[0], KINDS[1], KINDS[2], KINDS[3], KINDS[4], KINDS[5]);
    Py_INCREF(&LaneType);
    if (!kinds || PyModule_AddObject(m, "Lane", (PyObject *)&LaneType) < 0 ||
        PyModule_AddObject(m, "KINDS", kinds) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
