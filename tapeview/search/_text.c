/* The searchable text of a parsed payload (search/text.py `payload_text`) in compiled code.
 *
 * The search pass makes the text of every entry of every tape: its strings, depth first, whole up to
 * LIMIT characters, else its first HEAD and last TAIL characters (the end of a long tool output is
 * where its failure is). This walks the dicts, lists and strings orjson made, as text.py's `_collect`
 * walks them, forwards for the head and, only where the text is longer, backwards from the end for
 * the tail (text.py `_collect_back`), so no more than about LIMIT characters are ever joined; and
 * returns the same string; text.py's own walk is the reference and stays the one for anything that
 * is not exactly a dict, a list or a str (a subclass: None is returned), and where this module is
 * not built. The same for what FTS5 is given of that text (text.py `fts_body`).
 * tests/search/test_text_native.py holds the two to the same output.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "../sources/bub_dates.h"

static Py_ssize_t HEAD = 12000;    /* text.HEAD, set by configure() */
static Py_ssize_t TAIL = 4000;     /* text.TAIL */
static Py_ssize_t LIMIT = 16000;   /* HEAD + TAIL: a text no longer is kept whole */
static PyObject *GAP = NULL;       /* text.GAP, between the head and the tail */
static int MAX_DEPTH = 24;         /* text.MAX_DEPTH */
static PyObject *SKIP_KEYS = NULL; /* text.SKIP_KEYS, a frozenset */
static PyObject *NEWLINE = NULL;

enum { DONE = 0, FAILED = -1, DECLINED = 1 };

/* text._is_blob: a data: URL, or over 1,000 characters with no whitespace among the first 1,000. */
static int is_blob(PyObject *s) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    static const char prefix[] = "data:";
    if (n >= 5) {
        Py_ssize_t i = 0;
        while (i < 5 && PyUnicode_READ(kind, data, i) == (Py_UCS4)prefix[i]) i++;
        if (i == 5) return 1;
    }
    if (n <= 1000) return 0;
    for (Py_ssize_t i = 0; i < 1000; i++) {
        if (Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, i))) return 0;
    }
    return 1;
}

/* A string child of a dict or a list: kept (cut to the budget: its first characters, or its last
 * walking back) unless empty or a blob. */
static int add_child(PyObject *s, PyObject *out, Py_ssize_t *budget, int back) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    if (n == 0 || is_blob(s)) return DONE;
    PyObject *kept;
    if (n > *budget) {
        kept = back ? PyUnicode_Substring(s, n - *budget, n) : PyUnicode_Substring(s, 0, *budget);
        if (kept == NULL) return FAILED;
        n = *budget;
    } else {
        kept = Py_NewRef(s);
    }
    int failed = PyList_Append(out, kept);
    Py_DECREF(kept);
    if (failed) return FAILED;
    *budget -= n + 1;
    return DONE;
}

static int collect(PyObject *value, PyObject *out, Py_ssize_t *budget, int depth, int back);

static int child(PyObject *item, PyObject *out, Py_ssize_t *budget, int depth, int back) {
    if (PyUnicode_CheckExact(item)) return add_child(item, out, budget, back);
    if (depth < MAX_DEPTH && (PyDict_Check(item) || PyList_Check(item))) {
        return collect(item, out, budget, depth + 1, back);
    }
    return DONE; /* numbers, booleans, None; a str subclass, as `type(child) is str` leaves it */
}

/* One item of a dict: DONE, FAILED, DECLINED, or STOP once the budget is spent. */
enum { STOP = 2 };
static int dict_item(PyObject *key, PyObject *item, PyObject *out, Py_ssize_t *budget, int depth, int back) {
    if (!PyUnicode_CheckExact(key)) return DECLINED;
    int skipped = PySet_Contains(SKIP_KEYS, key);
    if (skipped < 0) return FAILED;
    if (skipped) return DONE;
    if (*budget <= 0) return STOP;
    return child(item, out, budget, depth, back);
}

/* The entry's kind and name, first of the text: its last `budget` characters, even empty. */
static int add_child_head(PyObject *head, PyObject *out, Py_ssize_t budget) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(head);
    PyObject *kept = PyUnicode_Substring(head, n > budget ? n - budget : 0, n);
    if (kept == NULL) return FAILED;
    int failed = PyList_Append(out, kept);
    Py_DECREF(kept);
    return failed ? FAILED : DONE;
}

/* text._collect of a dict or a list, or with `back` text._collect_back (its items last first). */
static int collect(PyObject *value, PyObject *out, Py_ssize_t *budget, int depth, int back) {
    if (PyDict_CheckExact(value) && back) {
        /* Dicts have no way back in C but their items: only a long entry's tail is walked so. */
        PyObject *items = PyDict_Items(value);
        if (items == NULL) return FAILED;
        int done = DONE;
        for (Py_ssize_t i = PyList_GET_SIZE(items) - 1; i >= 0 && done == DONE; i--) {
            PyObject *pair = PyList_GET_ITEM(items, i);
            done = dict_item(PyTuple_GET_ITEM(pair, 0), PyTuple_GET_ITEM(pair, 1), out, budget, depth, back);
        }
        Py_DECREF(items);
        return done == STOP ? DONE : done;
    }
    if (PyDict_CheckExact(value)) {
        Py_ssize_t at = 0;
        PyObject *key, *item;
        while (PyDict_Next(value, &at, &key, &item)) {
            int done = dict_item(key, item, out, budget, depth, back);
            if (done == STOP) break;
            if (done != DONE) return done;
        }
        return DONE;
    }
    if (PyList_CheckExact(value)) {
        Py_ssize_t n = PyList_GET_SIZE(value);
        for (Py_ssize_t i = 0; i < n; i++) {
            if (*budget <= 0) break;
            int done = child(PyList_GET_ITEM(value, back ? n - 1 - i : i), out, budget, depth, back);
            if (done != DONE) return done;
        }
        return DONE;
    }
    return DECLINED; /* a subclass of dict or list: its own items() or iteration may differ */
}

/* The last TAIL characters of the walked text, walked from its end (text.py `python_payload_text`'s
 * `back`), or None where Python must walk it. */
static PyObject *tail_of(PyObject *head, PyObject *payload) {
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    Py_ssize_t budget = TAIL + 1;
    int done = DONE;
    if (PyDict_Check(payload) || PyList_Check(payload)) {
        done = collect(payload, out, &budget, 0, 1);
    } else if (PyUnicode_Check(payload)) {
        done = PyUnicode_CheckExact(payload) ? add_child(payload, out, &budget, 1) : DECLINED;
    }
    if (done == DONE && budget > 0) done = add_child_head(head, out, budget);
    PyObject *text = NULL;
    if (done == DONE && PyList_Reverse(out) == 0) text = PyUnicode_Join(NEWLINE, out);
    Py_DECREF(out);
    if (done == DECLINED) Py_RETURN_NONE;
    if (text == NULL) return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    if (n <= TAIL) return text;
    PyObject *cut = PyUnicode_Substring(text, n - TAIL, n);
    Py_DECREF(text);
    return cut;
}

/* payload_text(head, payload) -> the text, or None where text.py's walk must make it. */
static PyObject *payload_text(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "payload_text(head, payload)");
        return NULL;
    }
    PyObject *head = args[0], *payload = args[1];
    if (SKIP_KEYS == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "configure() first");
        return NULL;
    }
    if (!PyUnicode_CheckExact(head)) Py_RETURN_NONE;
    PyObject *out = PyList_New(1);
    if (out == NULL) return NULL;
    PyList_SET_ITEM(out, 0, Py_NewRef(head));
    /* One character past LIMIT tells a text longer than LIMIT from one that is exactly LIMIT long. */
    Py_ssize_t budget = LIMIT + 1 - PyUnicode_GET_LENGTH(head);
    int done = DONE;
    if (PyDict_Check(payload) || PyList_Check(payload)) {
        done = collect(payload, out, &budget, 0, 0);
    } else if (PyUnicode_Check(payload)) {
        /* text._add. A budget at or below zero means the head is longer than LIMIT already: what
         * Python's slice [:budget] keeps of the string then is cut off with the rest below. */
        Py_ssize_t n = PyUnicode_GET_LENGTH(payload);
        if (!PyUnicode_CheckExact(payload)) {
            done = DECLINED;
        } else if (n && !is_blob(payload)) {
            Py_ssize_t end = budget < n ? (budget > 0 ? budget : 0) : n;
            PyObject *kept = PyUnicode_Substring(payload, 0, end);
            if (kept == NULL || PyList_Append(out, kept)) done = FAILED;
            Py_XDECREF(kept);
        }
    }
    if (done != DONE) {
        Py_DECREF(out);
        if (done == FAILED) return NULL;
        Py_RETURN_NONE;
    }
    PyObject *text = PyUnicode_Join(NEWLINE, out);
    Py_DECREF(out);
    if (text == NULL || PyUnicode_GET_LENGTH(text) <= LIMIT) return text;
    PyObject *first = PyUnicode_Substring(text, 0, HEAD);
    Py_DECREF(text);
    PyObject *tail = first ? tail_of(head, payload) : NULL;
    PyObject *joined = NULL;
    if (tail == Py_None) {
        joined = Py_NewRef(Py_None);
    } else if (tail != NULL) {
        PyObject *parts = PyTuple_Pack(3, first, GAP, tail);
        PyObject *empty = parts ? PyUnicode_FromString("") : NULL;
        joined = empty ? PyUnicode_Join(empty, parts) : NULL;
        Py_XDECREF(empty);
        Py_XDECREF(parts);
    }
    Py_XDECREF(first);
    Py_XDECREF(tail);
    return joined;
}

/* text.CJK's ranges, [first, last] pairs, set by configure(). */
#define MAX_RANGES 64
static Py_UCS4 CJK[MAX_RANGES][2];
static Py_ssize_t N_CJK = 0;

static int is_cjk(Py_UCS4 c) {
    for (Py_ssize_t i = 0; i < N_CJK; i++) {
        if (c >= CJK[i][0] && c <= CJK[i][1]) return 1;
    }
    return 0;
}

/* fts_body(text) -> text.fts_body's string: U+0000 to U+0003 made spaces (text.clean), then every CJK
 * character set apart by MARK (text.spaced_cjk). The text itself where neither changes it. */
static PyObject *fts_body(PyObject *Py_UNUSED(module), PyObject *text) {
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "fts_body(str)");
        return NULL;
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), extra = 0;
    if (PyUnicode_IS_ASCII(text)) {
        /* Most text: no CJK, so only the markers to find, a byte at a time (7x faster than below). */
        const unsigned char *chars = PyUnicode_1BYTE_DATA(text);
        Py_ssize_t i = 0;
        /* Eight characters at a time: a byte under 4 of ASCII text (each under 128) sets its top bit. */
        for (uint64_t word; i + 8 <= n; i += 8) {
            memcpy(&word, chars + i, 8);
            if ((word - 0x0404040404040404ULL) & ~word & 0x8080808080808080ULL) break;
        }
        while (i < n && chars[i] > 3) i++;
        if (i == n) return Py_NewRef(text);
        PyObject *out = PyUnicode_New(n, 127);
        if (out == NULL) return NULL;
        unsigned char *to = PyUnicode_1BYTE_DATA(out);
        for (i = 0; i < n; i++) to[i] = chars[i] > 3 ? chars[i] : ' ';
        return out;
    }
    int kind = PyUnicode_KIND(text), changed = 0;
    const void *data = PyUnicode_DATA(text);
    Py_UCS4 most = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c <= 3) {
            changed = 1;
            c = ' ';
        } else if (c >= 0x1100 && is_cjk(c)) {
            extra += 2;
        }
        if (c > most) most = c;
    }
    if (!changed && !extra) return Py_NewRef(text);
    PyObject *out = PyUnicode_New(n + extra, most);
    if (out == NULL) return NULL;
    int out_kind = PyUnicode_KIND(out);
    void *out_data = PyUnicode_DATA(out);
    Py_ssize_t at = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c <= 3) {
            PyUnicode_WRITE(out_kind, out_data, at++, ' ');
        } else if (c >= 0x1100 && is_cjk(c)) {
            PyUnicode_WRITE(out_kind, out_data, at++, 1);
            PyUnicode_WRITE(out_kind, out_data, at++, c);
            PyUnicode_WRITE(out_kind, out_data, at++, 1);
        } else {
            PyUnicode_WRITE(out_kind, out_data, at++, c);
        }
    }
    return out;
}

/* ---- a plain Bub line's doc (search/lane.py `bub_docs`) ---------------------------------------- */

static PyObject *KEY_ID, *KEY_KIND, *KEY_PAYLOAD, *KEY_DATE, *KEY_ROLE, *KEY_NAME, *EMPTY;
static PyObject *PLAIN[7]; /* lane.PLAIN_KINDS: message, tool_call, tool_result, event, system, anchor, error */
static const char *const PLAIN_NAMES[7] = {"message", "tool_call", "tool_result", "event", "system", "anchor", "error"};

/* The first 26 characters of a date Bub writes (UTC, microseconds, not all zero), which is then its own
 * date text (docs.date_text of what fromisoformat reads); NULL for any other date, which Python reads.
 * Whether fromisoformat reads it (a day on the calendar, an hour of the day...) is the indexer's own
 * test (sources/bub_dates.h). */
static PyObject *bub_day(PyObject *date) {
    static const char form[] = "dddd-dd-ddTdd:dd:dd.dddddd+00:00";
    if (!PyUnicode_IS_ASCII(date) || PyUnicode_GET_LENGTH(date) != 32) return NULL;
    const unsigned char *s = PyUnicode_DATA(date);
    for (int i = 0; i < 32; i++) {
        if (form[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != form[i]) return NULL;
    }
    int64_t micros;
    if (memcmp(s + 20, "000000", 6) == 0) return NULL; /* isoformat() would leave them out */
    if (!date_micros(s, 32, &micros)) return NULL;
    return PyUnicode_Substring(date, 0, 26);
}

/* plain_doc(obj, pos, offset, length) -> lane.Doc of a plain Bub line's parsed JSON, or None where
 * lane.bub_docs' own code reads the line: an id past 64 bits, a kind the agent does not write, a
 * payload or a date of another type, a date in another form, a payload the walk leaves to Python. */
static PyObject *plain_doc(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "plain_doc(obj, pos, offset, length)");
        return NULL;
    }
    PyObject *obj = args[0];
    if (!PyDict_CheckExact(obj)) Py_RETURN_NONE;
    PyObject *eid = PyDict_GetItemWithError(obj, KEY_ID);
    PyObject *kind = eid ? PyDict_GetItemWithError(obj, KEY_KIND) : NULL;
    PyObject *payload = kind ? PyDict_GetItemWithError(obj, KEY_PAYLOAD) : NULL;
    PyObject *date = payload ? PyDict_GetItemWithError(obj, KEY_DATE) : NULL;
    if (PyErr_Occurred()) return NULL;
    if (date == NULL || !PyLong_CheckExact(eid) || !PyUnicode_CheckExact(kind) || !PyDict_CheckExact(payload)
        || !PyUnicode_CheckExact(date)) {
        Py_RETURN_NONE;
    }
    int overflow;
    PyLong_AsLongLongAndOverflow(eid, &overflow);
    if (overflow) Py_RETURN_NONE;
    if (PyErr_Occurred()) return NULL;
    int k = 0;
    while (k < 7 && PyUnicode_Compare(kind, PLAIN[k]) != 0) k++;
    if (PyErr_Occurred()) return NULL;
    if (k == 7) Py_RETURN_NONE;
    PyObject *name = EMPTY;
    if (k == 0 || k == 3 || k == 5) { /* a message's role, an event's or an anchor's name */
        PyObject *found = PyDict_GetItemWithError(payload, k == 0 ? KEY_ROLE : KEY_NAME);
        if (found == NULL && PyErr_Occurred()) return NULL;
        if (found != NULL && PyUnicode_CheckExact(found)) name = found;
    }
    PyObject *day = bub_day(date);
    if (day == NULL) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NONE;
    }
    PyObject *head;
    if (PyUnicode_GET_LENGTH(name) == 0) {
        head = Py_NewRef(PLAIN[k]);
    } else {
        PyObject *spaced = PyUnicode_FromFormat("%U %U", PLAIN[k], name);
        head = spaced ? PyObject_CallMethod(spaced, "strip", NULL) : NULL;
        Py_XDECREF(spaced);
    }
    PyObject *text = NULL, *doc = NULL;
    if (head != NULL) {
        PyObject *call[2] = {head, payload};
        text = payload_text(NULL, call, 2);
    }
    if (text != NULL && text != Py_None) {
        doc = PyTuple_Pack(7, args[1], args[2], args[3], PLAIN[k], name, text, day);
    } else if (text == Py_None) {
        doc = Py_NewRef(Py_None);
    }
    Py_XDECREF(head);
    Py_XDECREF(text);
    Py_DECREF(day);
    return doc;
}

/* configure(head, tail, gap, max_depth, skip_keys, cjk): text.py's constants, given once; `cjk` is
 * text.CJK's ranges as a flat tuple of first and last code points. */
static PyObject *configure(PyObject *Py_UNUSED(module), PyObject *args) {
    Py_ssize_t head, tail;
    int max_depth;
    PyObject *gap, *skip, *cjk;
    if (!PyArg_ParseTuple(args, "nnUiO!O!", &head, &tail, &gap, &max_depth, &PyFrozenSet_Type, &skip,
                          &PyTuple_Type, &cjk)) {
        return NULL;
    }
    if (head < 0 || tail < 0) {
        PyErr_SetString(PyExc_ValueError, "head and tail: at least 0");
        return NULL;
    }
    Py_ssize_t pairs = PyTuple_GET_SIZE(cjk) / 2;
    if (PyTuple_GET_SIZE(cjk) % 2 || pairs > MAX_RANGES) {
        PyErr_SetString(PyExc_ValueError, "cjk: at most 64 (first, last) pairs, flat");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < pairs; i++) {
        for (int j = 0; j < 2; j++) {
            unsigned long c = PyLong_AsUnsignedLong(PyTuple_GET_ITEM(cjk, 2 * i + j));
            if (c == (unsigned long)-1 && PyErr_Occurred()) return NULL;
            CJK[i][j] = (Py_UCS4)c;
        }
    }
    N_CJK = pairs;
    HEAD = head;
    TAIL = tail;
    LIMIT = head + tail;
    Py_XSETREF(GAP, Py_NewRef(gap));
    MAX_DEPTH = max_depth;
    Py_XSETREF(SKIP_KEYS, Py_NewRef(skip));
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"payload_text", (PyCFunction)(void (*)(void))payload_text, METH_FASTCALL,
     "payload_text(head, payload) -> text.payload_text's string, or None where text.py must walk it"},
    {"fts_body", fts_body, METH_O, "fts_body(text) -> text.fts_body's string"},
    {"plain_doc", (PyCFunction)(void (*)(void))plain_doc, METH_FASTCALL,
     "plain_doc(obj, pos, offset, length) -> a plain Bub line's doc, or None where Python reads the line"},
    {"configure", configure, METH_VARARGS, "configure(head, tail, gap, max_depth, skip_keys, cjk)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_text", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__text(void) {
    NEWLINE = PyUnicode_FromString("\n");
    KEY_ID = PyUnicode_InternFromString("id");
    KEY_KIND = PyUnicode_InternFromString("kind");
    KEY_PAYLOAD = PyUnicode_InternFromString("payload");
    KEY_DATE = PyUnicode_InternFromString("date");
    KEY_ROLE = PyUnicode_InternFromString("role");
    KEY_NAME = PyUnicode_InternFromString("name");
    EMPTY = PyUnicode_FromString("");
    if (!NEWLINE || !KEY_ID || !KEY_KIND || !KEY_PAYLOAD || !KEY_DATE || !KEY_ROLE || !KEY_NAME || !EMPTY) return NULL;
    for (int k = 0; k < 7; k++) {
        PLAIN[k] = PyUnicode_InternFromString(PLAIN_NAMES[k]);
        if (PLAIN[k] == NULL) return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    /* The kinds plain_doc takes, for lane.py to check against its own PLAIN_KINDS. */
    PyObject *kinds = m ? PyTuple_New(7) : NULL;
    if (kinds == NULL) {
        Py_XDECREF(m);
        return NULL;
    }
    for (int k = 0; k < 7; k++) {
        Py_INCREF(PLAIN[k]);
        PyTuple_SET_ITEM(kinds, k, PLAIN[k]);
    }
    if (PyModule_AddObject(m, "PLAIN_KINDS", kinds) < 0) {
        Py_DECREF(kinds);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
