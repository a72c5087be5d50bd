/* Dates in the forms Bub writes, read as datetime.fromisoformat reads them: shared by the indexer's
 * lane (tapes/_lane.c) and the search pass's (search/_text.c), each included once. */
#ifndef TAPEVIEW_BUB_DATES_H
#define TAPEVIEW_BUB_DATES_H

#include <Python.h>
#include <stdint.h>

static int digits(const unsigned char *p, int n, int *out) {
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') return 0;
        v = v * 10 + (p[i] - '0');
    }
    *out = v;
    return 1;
}

static int64_t days_from_civil(int64_t y, int m, int d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* YYYY-MM-DD[T ]HH:MM:SS[.f{1,6}](Z|+HH:MM|-HH:MM), years 1900-2100: packing.micros() of
 * fromisoformat's value. */
static int date_micros(const unsigned char *p, Py_ssize_t len, int64_t *out) {
    int y, mo, d, h, mi, s, us = 0, oh, om;
    Py_ssize_t n = 19;
    static const int month_days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (len < 20 || !digits(p, 4, &y) || p[4] != '-' || !digits(p + 5, 2, &mo) || p[7] != '-')
        return 0;
    if (!digits(p + 8, 2, &d) || (p[10] != 'T' && p[10] != ' ') || !digits(p + 11, 2, &h)) return 0;
    if (p[13] != ':' || !digits(p + 14, 2, &mi) || p[16] != ':' || !digits(p + 17, 2, &s)) return 0;
    if (y < 1900 || y > 2100 || mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59) return 0;
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (d > month_days[mo - 1] + (mo == 2 && leap)) return 0;
    if (p[n] == '.') {
        int k = 0;
        n++;
        while (n < len && k < 7 && p[n] >= '0' && p[n] <= '9') us = us * 10 + (p[n] - '0'), n++, k++;
        if (k == 0 || k > 6) return 0;
        while (k++ < 6) us *= 10;
    }
    int64_t offset;
    if (len - n == 1 && p[n] == 'Z') {
        offset = 0;
    } else if (len - n == 6 && (p[n] == '+' || p[n] == '-') && p[n + 3] == ':') {
        if (!digits(p + n + 1, 2, &oh) || !digits(p + n + 4, 2, &om) || oh > 23 || om > 59) return 0;
        offset = (oh * 3600 + om * 60) * (p[n] == '-' ? -1 : 1);
    } else {
        return 0;
    }
    int64_t seconds = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s - offset;
    /* Python's round(timestamp() * 1e6) gives this exactly for these years (under 2**52 µs from the
     * epoch), so the date column and the tape's first and last dates agree with the Python lane's. */
    *out = seconds * 1000000 + us;
    return 1;
}

#endif
