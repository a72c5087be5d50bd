/* Bub's next format in the compiled lane (included once, by tapes/_lane.c): a CloudEvents line
 * whose data is an ATIF step (formats/bub-next.md), read as tapes/nextlane.py's Python lane reads
 * it from orjson's value, which stays the reference and the fallback.
 *
 * A line is taken only where the Python lane takes it: valid JSON (the checks _lane.c makes for
 * 0.5.1 lines), CloudEvents' attributes and extension names, TapeRecord's rules for the step, a
 * time in the form Bub writes, and a type the lane counts (a message, a fact). A model call's usage
 * and the model a loop.start, run or model_switch names are read from the fact's payload, a JSON
 * text inside a JSON string, unescaped into the Lane's scratch buffer and checked as strictly.
 * Besides, a failed operation and a status event (whose payload's status says whether it is an
 * error), which that lane leaves to the full path, are taken where they are counted as the full
 * path counts them: an error only where it cannot be what tells the tape's context overflowed.
 * Every other line (an anchor, an "error" event) stops the scan and goes to Python.
 * tests/tapes/test_nextlane_native.py holds this to that. */

static const char *const N_RESULT_NAMES[] = {"content"};
static const int N_RESULT_SLOTS[] = {N_CONTENT};
static const Spec N_RESULT = {1, N_RESULT_NAMES, N_RESULT_SLOTS, (const Spec *const[]){NULL}, 0};
static const char *const N_OBSERVATION_NAMES[] = {"results"};
static const int N_OBSERVATION_SLOTS[] = {N_RESULTS};
static const Spec N_OBSERVED = {1, N_OBSERVATION_NAMES, N_OBSERVATION_SLOTS, (const Spec *const[]){NULL}, 0};
static const char *const N_STEP_NAMES[] = {"source",     "message", "observation",      "tool_calls",
                                           "model_name", "metrics", "reasoning_effort", "reasoning_content"};
static const int N_STEP_SLOTS[] = {N_STEP_SOURCE, N_MESSAGE, N_OBSERVATION, N_TOOL_CALLS,
                                   N_MODEL_NAME,  N_METRICS, N_EFFORT,      N_REASONING};
static const char *const N_METRICS_NAMES[] = {"cost"};
static const int N_METRICS_SLOTS[] = {N_COST};
static const Spec N_METERED = {1, N_METRICS_NAMES, N_METRICS_SLOTS, (const Spec *const[]){NULL}, 0};
static const Spec N_STEP = {8, N_STEP_NAMES, N_STEP_SLOTS,
                            (const Spec *const[]){NULL, NULL, &N_OBSERVED, NULL, NULL, &N_METERED, NULL, NULL}, 0};
static const char *const N_LINE_NAMES[] = {"specversion", "id", "source", "type", "time", "data", "bubcontext"};
static const int N_LINE_SLOTS[] = {N_SPECVERSION, N_ID, N_SOURCE, N_TYPE, N_TIME, N_DATA, N_CONTEXT};
static const Spec N_LINE = {7, N_LINE_NAMES, N_LINE_SLOTS,
                            (const Spec *const[]){NULL, NULL, NULL, NULL, NULL, &N_STEP, NULL}, 1};

/* a fact's payload */
static const char *const N_CACHED_NAMES[] = {"cached_tokens"};
static const int N_CACHED_SLOTS[] = {N_CACHED};
static const Spec N_DETAILED = {1, N_CACHED_NAMES, N_CACHED_SLOTS, (const Spec *const[]){NULL}, 0};
static const char *const N_USAGE_NAMES[] = {"total_tokens", "prompt_tokens", "completion_tokens",
                                            "prompt_tokens_details"};
static const int N_USAGE_SLOTS[] = {N_TOTAL, N_PROMPT, N_COMPLETION, N_DETAILS};
static const Spec N_USED = {4, N_USAGE_NAMES, N_USAGE_SLOTS, (const Spec *const[]){NULL, NULL, NULL, &N_DETAILED}, 0};
static const char *const N_PAYLOAD_NAMES[] = {"model", "usage", "status"};
static const int N_PAYLOAD_SLOTS[] = {N_MODEL, N_USAGE, N_STATUS};
static const Spec N_PAYLOAD = {3, N_PAYLOAD_NAMES, N_PAYLOAD_SLOTS, (const Spec *const[]){NULL, &N_USED, NULL}, 0};

/* The types the full path reads besides (anchors, errors), less the prefix; and those whose payload's
 * status says whether they are an error (bub_next_lines.STATUS_EVENTS). */
static const char *const N_FULL[] = {"context.anchor", "error"};
static const char *const N_STATUS_EVENTS[] = {"command", "spill.write", "sidecar.archive", "sidecar.reset",
                                              "sidecar.merge"};
/* What a provider's context-length refusal says (phase_tally.OVERFLOW_WORDS), lower case. */
static const char *const N_OVERFLOW_WORDS[] = {"context_length_exceeded", "maximum context length", "context window"};

/* After the list at p, or NULL: its first item, where it is an object, read by N_RESULT
 * (found->first_object set); every item checked. */
static cur first_item_end(cur p, cur e, int depth, Found *found) {
    if (depth > MAX_DEPTH) return NULL;
    p = ws(p + 1, e);
    if (p < e && *p == ']') return p + 1;
    for (int first = 1;; first = 0) {
        if (first && p < e && *p == '{') {
            found->first_object = 1;
            p = members(p, e, depth + 1, &N_RESULT, found);
        } else {
            p = value_end(p, e, depth + 1);
        }
        if (!p) return NULL;
        p = ws(p, e);
        if (p >= e) return NULL;
        if (*p == ']') return p + 1;
        if (*p != ',') return NULL;
        p = ws(p + 1, e);
    }
}

/* The text of a JSON string already checked (string_end), from after its opening quote p to its
 * closing quote e, as UTF-8 into out (as long as the escaped text at most); its length. */
static Py_ssize_t unescape(cur p, cur e, unsigned char *out) {
    unsigned char *o = out;
    while (p < e) {
        cur slash = memchr(p, '\\', e - p);
        cur stop = slash ? slash : e;
        memcpy(o, p, stop - p);
        o += stop - p, p = stop;
        if (!slash) break;
        unsigned char c = p[1];
        if (c != 'u') {
            *o++ = c == 'b' ? '\b' : c == 'f' ? '\f' : c == 'n' ? '\n' : c == 'r' ? '\r' : c == 't' ? '\t' : c;
            p += 2;
            continue;
        }
        unsigned u, low;
        hex4(p + 2, e, &u);
        p += 6;
        if (u >= 0xD800 && u <= 0xDBFF) { /* its low half follows (string_end saw to it) */
            hex4(p + 2, e, &low);
            p += 6;
            u = 0x10000 + ((u - 0xD800) << 10) + (low - 0xDC00);
        }
        if (u < 0x80) {
            *o++ = (unsigned char)u;
        } else if (u < 0x800) {
            *o++ = (unsigned char)(0xC0 | u >> 6), *o++ = (unsigned char)(0x80 | (u & 0x3F));
        } else if (u < 0x10000) {
            *o++ = (unsigned char)(0xE0 | u >> 12), *o++ = (unsigned char)(0x80 | (u >> 6 & 0x3F));
            *o++ = (unsigned char)(0x80 | (u & 0x3F));
        } else {
            *o++ = (unsigned char)(0xF0 | u >> 18), *o++ = (unsigned char)(0x80 | (u >> 12 & 0x3F));
            *o++ = (unsigned char)(0x80 | (u >> 6 & 0x3F)), *o++ = (unsigned char)(0x80 | (u & 0x3F));
        }
    }
    return o - out;
}

/* A fact's payload text (data.observation.results[0].content, bub_next_lines.event_payload), unescaped
 * into the Lane's scratch buffer: 1 (*q, *qe), 0: there is none (the payload is {}), -1: no memory. */
static int payload_text(Lane *self, Found *f, cur *q, cur *qe) {
    Span content = f->at[N_CONTENT];
    if (!is_object(f->at[N_OBSERVATION]) || !f->at[N_RESULTS].p || *f->at[N_RESULTS].p != '[' ||
        !f->first_object || !is_string(content))
        return 0;
    Py_ssize_t escaped = content.end - content.p - 2;
    if (self->scratch_cap < escaped + 1) {
        unsigned char *bigger = realloc(self->scratch, escaped + 1);
        if (!bigger) return -1;
        self->scratch = bigger, self->scratch_cap = escaped + 1;
    }
    *q = self->scratch, *qe = *q + unescape(content.p + 1, content.end - 1, self->scratch);
    return 1;
}

/* Whether text may say the context overflowed (phase_tally.says_overflow, which reads the JSON of the
 * parsed payload, lower-cased): one of the words in it, in any case, or an escape that could spell
 * one (\u...); the full path decides those. */
static int may_say_overflow(cur p, cur e) {
    for (cur at = p; at < e; at++) {
        if (*at == '\\' && at + 1 < e && at[1] == 'u') return 1;
        for (size_t w = 0; w < sizeof N_OVERFLOW_WORDS / sizeof *N_OVERFLOW_WORDS; w++) {
            const char *word = N_OVERFLOW_WORDS[w];
            size_t n = strlen(word), i = 0;
            while (i < n && at + i < e && (at[i] >= 'A' && at[i] <= 'Z' ? at[i] + 32 : at[i]) == (unsigned char)word[i])
                i++;
            if (i == n) return 1;
        }
    }
    return 0;
}

/* A fact that may be an error (a failed operation, or a status event whose payload's status is
 * "error"), as the full path counts it (index._account, PhaseTally.add): L->error set where it is
 * one. 1: read; 0: the full path's (a status unread, or an error that may tell the context
 * overflowed while the tape has not yet: `overflowed`); -1: no memory. */
static int next_error(Lane *self, Found *f, Line *L, int status, int overflowed) {
    cur q = NULL, qe = NULL, text;
    Py_ssize_t len;
    int found = payload_text(self, f, &q, &qe);
    if (found < 0) return -1;
    L->error = !status;
    if (status && found) {
        Found g;
        memset(&g, 0, sizeof g);
        q = ws(q, qe);
        cur end = q < qe && *q == '{' ? members(q, qe, 0, &N_PAYLOAD, &g) : NULL;
        if (!end || ws(end, qe) != qe) return 0; /* (json.loads reads what orjson does not) */
        if (is_string(g.at[N_STATUS])) {
            if (!plain_string(g.at[N_STATUS], &text, &len)) return 0;
            L->error = is_key(text, len, "error");
        }
    }
    if (!L->error || overflowed) return 1;
    if (may_say_overflow(L->name, L->name + L->name_len)) return 0;
    return found ? !may_say_overflow(q, qe) : 1;
}

/* A fact's payload (nextlane._payload) and what it tells (nextlane._model_and_usage): a model's
 * name, or with `completed` a model call's usage. 1: read (a payload that is not an object, or
 * not there, tells nothing); 0: the Python lane's (the payload is no JSON orjson reads); -1: no memory. */
static int next_payload(Lane *self, Found *f, Line *L, int completed) {
    cur q, qe;
    int found = payload_text(self, f, &q, &qe);
    if (found <= 0) return found < 0 ? -1 : 1;
    Found g;
    memset(&g, 0, sizeof g);
    q = ws(q, qe);
    if (q >= qe) return 0;
    int object = *q == '{';
    cur end = object ? members(q, qe, 0, &N_PAYLOAD, &g) : value_end(q, qe, 0);
    if (!end || ws(end, qe) != qe) return 0;
    if (!object) return 1;
    if (!completed) {
        if (is_string(g.at[N_MODEL]) && !plain_string(g.at[N_MODEL], &L->model, &L->model_len)) return 0;
        return 1;
    }
    /* python_json.reports_usage: a usage with neither a usable total nor prompt is as if absent */
    if (!is_object(g.at[N_USAGE]) || (sane_count(g.at[N_TOTAL]) < 0 && sane_count(g.at[N_PROMPT]) < 0)) return 1;
    L->usage = 1;
    L->prompt = token_count(g.at[N_PROMPT]);
    L->tokens = token_count(g.at[N_TOTAL]);
    if (!L->tokens) L->tokens = L->prompt + token_count(g.at[N_COMPLETION]);
    L->cached = is_object(g.at[N_DETAILS]) ? token_count(g.at[N_CACHED]) : 0;
    return 1;
}

static int nonempty_string(Span v) { return is_string(v) && v.end - v.p > 2; }

/* 1: a line the Python lane takes, or (a failed operation, a status event) one the full path would
 * count as this lane does; L says what it is (its id is its position: the caller's). 0: the Python
 * lane's; -1: no memory. `labels`: the session's label is still wanted, so messages and loop.start
 * are Python's. `overflowed`: the tape's context has overflowed, so no error's words need reading. */
static int read_next(Lane *self, cur p, cur e, Line *L, int labels, int overflowed) {
    Found f;
    memset(&f, 0, sizeof f);
    memset(L, 0, sizeof *L);
    L->name = (cur) "";
    p = ws(p, e);
    if (p >= e || *p != '{') return 0;
    cur end = members(p, e, 0, &N_LINE, &f);
    if (!end || ws(end, e) != e) return 0;
    cur text, type, when, source;
    Py_ssize_t len, type_len, when_len, source_len;
    if (!plain_string(f.at[N_SPECVERSION], &text, &len) || !is_key(text, len, "1.0")) return 0;
    if (!nonempty_string(f.at[N_ID]) || !nonempty_string(f.at[N_SOURCE])) return 0;
    if (!plain_string(f.at[N_TYPE], &type, &type_len) || !type_len) return 0;
    if (!plain_string(f.at[N_TIME], &when, &when_len) || !is_object(f.at[N_DATA])) return 0;
    if (!plain_string(f.at[N_STEP_SOURCE], &source, &source_len) || !f.at[N_MESSAGE].p) return 0;
    int agent = is_key(source, source_len, "agent"), user = is_key(source, source_len, "user");
    int system = is_key(source, source_len, "system");
    if (!agent && !user && !system) return 0;
    if (user && f.at[N_OBSERVATION].p) return 0;
    if (!agent && (f.at[N_TOOL_CALLS].p || f.at[N_MODEL_NAME].p || f.at[N_METRICS].p || f.at[N_EFFORT].p ||
                   f.at[N_REASONING].p))
        return 0;
    cur name = type;
    Py_ssize_t name_len = type_len;
    if (type_len >= 10 && memcmp(type, "build.bub.", 10) == 0 && ends_with(type, type_len, ".v1"))
        name = type + 10, name_len = type_len > 13 ? type_len - 13 : 0; /* etype[10:-3] */
    int status = 0, failed = ends_with(name, name_len, ".failed");
    for (size_t i = 0; i < sizeof N_FULL / sizeof *N_FULL; i++)
        if (is_key(name, name_len, N_FULL[i])) return 0;
    for (size_t i = 0; i < sizeof N_STATUS_EVENTS / sizeof *N_STATUS_EVENTS; i++)
        status |= is_key(name, name_len, N_STATUS_EVENTS[i]);
    if (!date_micros(when, when_len, &L->date)) return 0;
    if (is_key(name, name_len, "message")) {
        if (labels) return 0; /* the full path looks for the session's label in it */
        L->kind = system ? K_SYSTEM : K_MESSAGE;
        if (!system) L->name = (cur)(user ? "user" : "assistant"), L->name_len = user ? 4 : 9;
        if (agent && f.at[N_TOOL_CALLS].p && *f.at[N_TOOL_CALLS].p == '[' && f.calls > 0)
            L->kind = K_TOOL_CALL, L->name = (cur) "", L->name_len = 0, L->calls = f.calls;
        if (agent && is_string(f.at[N_MODEL_NAME]) && !plain_string(f.at[N_MODEL_NAME], &L->model, &L->model_len))
            return 0;
        /* the step's own cost, reported as the full path reports it (tapes.costs.report) */
        if (agent && is_object(f.at[N_METRICS]) && f.at[N_COST].p)
            L->spent = f.at[N_COST].p, L->spent_end = f.at[N_COST].end;
    } else {
        L->kind = K_EVENT, L->name = name, L->name_len = name_len;
        int completed = is_key(name, name_len, "model.completed"), start = is_key(name, name_len, "loop.start");
        if (labels && start) return 0;
        if (failed || status) {
            int read = next_error(self, &f, L, status, overflowed);
            if (read <= 0) return read;
        } else if (completed || start || is_key(name, name_len, "run") || is_key(name, name_len, "model_switch")) {
            int read = next_payload(self, &f, L, completed);
            if (read <= 0) return read;
        }
    }
    Span context = f.at[N_CONTEXT];
    int in = context.p && context.end - context.p == 4 && memcmp(context.p, "true", 4) == 0;
    L->flags = (in ? IN_CONTEXT : OUT_OF_CONTEXT) | (L->error ? ERROR : 0);
    return 1;
}
