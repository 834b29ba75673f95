/* tide.sim._countsim: the twin's count driver (tide.sim.count_driver) and the
 * core's count backend (tide.sched.count) as one C event loop.
 *
 * It is a transcription, not a new policy: every rule, every tie and every
 * floating-point operation follows the Python code, so the two agree bit for
 * bit (tests/sim/test_countsim.py checks it; TIDE_NO_C=1 forces Python).
 * The comments name the Python function each part mirrors.
 *
 * Input: per job, in file order, submit time, run length (min(duration,
 * limit)), nodes needed, planned limit and account index. Output: start
 * times, node ids, per-account GPU-seconds and the sampled timeline; the
 * Python side turns them into JobResults and Samples.
 *
 * Plain CPython C API, no third-party headers; the loop runs without the GIL.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h> /* T_OBJECT_EX, READONLY */

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF /* gcc takes -ffp-contract=off (setup.py) */
#endif

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__GLIBC__)
#include <malloc.h> /* mallopt: keep_heap() */
#endif

enum { SUBMIT = 0, END = 3, BACKFILL = 5 }; /* count_driver's event kinds */
enum { MODE_NONE = 0, MODE_EASY = 1, MODE_CONSERVATIVE = 2 };

/* -- growable buffers ------------------------------------------------------ */

typedef struct {
    char *data;
    size_t len, cap; /* bytes */
} Buf;

static int buf_reserve(Buf *b, size_t extra) {
    if (b->len + extra <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->len + extra)
        cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p)
        return -1;
    b->data = p;
    b->cap = cap;
    return 0;
}

static inline int buf_put(Buf *b, const void *src, size_t size) {
    if (b->len + size > b->cap && buf_reserve(b, size)) /* the call only to grow */
        return -1;
    memcpy(b->data + b->len, src, size);
    b->len += size;
    return 0;
}

/* -- the event heap: (t, kind, seq) order, as heapq on tuples ----------------- */

typedef struct {
    double t;
    int64_t kind, seq, job;
} Event;

static int ev_less(const Event *a, const Event *b) {
    if (a->t != b->t)
        return a->t < b->t;
    if (a->kind != b->kind)
        return a->kind < b->kind;
    return a->seq < b->seq; /* seq is unique: the order is total */
}

typedef struct {
    Event *e;
    Py_ssize_t len, cap;
} EvHeap;

static int ev_push(EvHeap *h, Event ev) {
    if (h->len == h->cap) {
        Py_ssize_t cap = h->cap ? 2 * h->cap : 256;
        Event *p = realloc(h->e, (size_t)cap * sizeof(Event));
        if (!p)
            return -1;
        h->e = p;
        h->cap = cap;
    }
    Py_ssize_t i = h->len++;
    while (i > 0) {
        Py_ssize_t up = (i - 1) / 2;
        if (!ev_less(&ev, &h->e[up]))
            break;
        h->e[i] = h->e[up];
        i = up;
    }
    h->e[i] = ev;
    return 0;
}

static Event ev_pop(EvHeap *h) {
    Event top = h->e[0], last = h->e[--h->len];
    Py_ssize_t i = 0, n = h->len;
    for (;;) {
        Py_ssize_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && ev_less(&h->e[c + 1], &h->e[c]))
            c++;
        if (!ev_less(&h->e[c], &last))
            break;
        h->e[i] = h->e[c];
        i = c;
    }
    if (n)
        h->e[i] = last;
    return top;
}

/* -- free node ids: the lowest first, as heapq's pops give them ------------------ */

/* A two-level bitmap: bit v of word[v / 64] is set while node v is free, and bit w
 * of summary[w / 64] while word[w] has any. Taking the lowest id reads a few words
 * (a heap took log2(nodes) steps per id: most of start_job's time); the ids come
 * out in the heap's order, lowest first, so every allocation is the same. */
typedef struct {
    uint64_t *word, *summary;
    int64_t lo; /* no summary word below this has a bit set */
} IdSet;

static inline int ctz64(uint64_t x) {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(x);
#else
    int n = 0;
    while (!(x & 1)) {
        x >>= 1;
        n++;
    }
    return n;
#endif
}

static inline void id_add(IdSet *f, int32_t v) {
    int64_t w = v >> 6;
    f->word[w] |= 1ULL << (v & 63);
    f->summary[w >> 6] |= 1ULL << (w & 63);
    if ((w >> 6) < f->lo)
        f->lo = w >> 6;
}

/* the lowest free id (the set is not empty: the caller counts free nodes) */
static inline int32_t id_take(IdSet *f) {
    while (!f->summary[f->lo])
        f->lo++;
    int64_t w = (f->lo << 6) + ctz64(f->summary[f->lo]);
    uint64_t bits = f->word[w];
    int32_t v = (int32_t)((w << 6) + ctz64(bits));
    f->word[w] = bits & (bits - 1);
    if (!f->word[w])
        f->summary[f->lo] &= ~(1ULL << (w & 63));
    return v;
}

/* -- the simulation state ------------------------------------------------------- */

typedef struct {
    /* inputs (per job, file order) */
    Py_ssize_t n;
    const double *submit, *runlen, *limit;
    const int64_t *need, *acct;
    Py_ssize_t n_acct;
    int64_t nodes, gpn;
    int mode, sjf;
    double bf_interval, plot_period;

    /* CountBackend */
    int64_t free;
    IdSet free_ids;
    double *r_end; /* running_ends, sorted by end (order within a tie is irrelevant) */
    int64_t *r_job;
    Py_ssize_t r_len;
    char *in_backend; /* limit_end has the job: not yet ended nor retired */
    double *plan_end; /* limit_end: start + limit */
    int64_t *q;       /* the queue: job indices */
    Py_ssize_t q_len;
    int64_t *arrival; /* CountJob.seq: any increasing arrival count orders the same */
    int64_t n_arrived;
    double *p_times; /* the conservative profile (scratch) */
    int64_t *p_free, *floor;

    /* CountDriver */
    EvHeap heap;
    int64_t seq, events, cycles;
    Py_ssize_t next_feed;
    double *start, *acct_seconds;
    int64_t *off; /* job -> first slot in ids */
    int32_t *ids;
    /* start and ids live in the bytes objects returned (written before anyone sees
     * them): no copy of megabytes at the end */
    PyObject *start_out, *ids_out;
    int64_t *by_account;
    int64_t *acct_order; /* accounts in first-start order (dict insertion order) */
    Py_ssize_t n_order;
    char *acct_seen;
    double plot_t;
    Buf s_t, s_alloc, s_idle, s_qlen, s_plot, p_acct, p_gpus;
    int64_t last_alloc, last_idle, last_qlen, n_samples;
} Sim;

static int push(Sim *s, double t, int64_t kind, int64_t job) {
    Event ev = {t, kind, ++s->seq, job};
    return ev_push(&s->heap, ev);
}

/* CountDriver._feed */
static int feed(Sim *s) {
    if (s->next_feed >= s->n)
        return 0;
    Py_ssize_t j = s->next_feed++;
    return push(s, s->submit[j], SUBMIT, j);
}

/* CountBackend._ending */
static int64_t ending(const Sim *s, double now) {
    int64_t total = 0;
    for (Py_ssize_t i = 0; i < s->r_len && s->r_end[i] <= now; i++)
        total += s->need[s->r_job[i]];
    return total;
}

/* CountBackend.submit (SJF: bisect_right on (limit, submit, seq)) */
static int submit_job(Sim *s, int64_t j, double now) {
    s->arrival[j] = s->n_arrived++;
    Py_ssize_t pos = s->q_len;
    if (s->sjf) {
        Py_ssize_t lo = 0, hi = s->q_len;
        double l = s->limit[j], t = s->submit[j];
        while (lo < hi) {
            Py_ssize_t mid = (lo + hi) / 2;
            int64_t k = s->q[mid];
            int before; /* key(j) < key(k): j goes before k */
            if (l != s->limit[k])
                before = l < s->limit[k];
            else if (t != s->submit[k])
                before = t < s->submit[k];
            else
                before = s->arrival[j] < s->arrival[k];
            if (before)
                hi = mid;
            else
                lo = mid + 1;
        }
        pos = lo;
        memmove(s->q + pos + 1, s->q + pos, (size_t)(s->q_len - pos) * sizeof(int64_t));
    }
    s->q[pos] = j;
    s->q_len++;
    return s->need[j] <= s->free + ending(s, now);
}

/* CountBackend.end */
static void backend_end(Sim *s, int64_t j) {
    if (!s->in_backend[j])
        return;
    s->in_backend[j] = 0;
    double end = s->plan_end[j];
    Py_ssize_t lo = 0, hi = s->r_len; /* the first entry with this end, then the job */
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (s->r_end[mid] < end)
            lo = mid + 1;
        else
            hi = mid;
    }
    Py_ssize_t i = lo;
    while (s->r_job[i] != j)
        i++;
    memmove(s->r_end + i, s->r_end + i + 1, (size_t)(s->r_len - i - 1) * sizeof(double));
    memmove(s->r_job + i, s->r_job + i + 1, (size_t)(s->r_len - i - 1) * sizeof(int64_t));
    s->r_len--;
    s->free += s->need[j];
    for (int64_t k = 0; k < s->need[j]; k++)
        id_add(&s->free_ids, s->ids[s->off[j] + k]);
}

/* CountBackend._retire */
static void retire(Sim *s, double now) {
    while (s->r_len && s->r_end[0] <= now)
        backend_end(s, s->r_job[0]);
}

/* CountBackend._start, then CountDriver._start */
static int start_job(Sim *s, int64_t j, double now) {
    int64_t need = s->need[j];
    /* the lowest free ids, already sorted as they leave the heap */
    for (int64_t k = 0; k < need; k++)
        s->ids[s->off[j] + k] = id_take(&s->free_ids);
    s->free -= need;
    double end = now + s->limit[j];
    s->in_backend[j] = 1;
    s->plan_end[j] = end;
    Py_ssize_t pos = s->r_len; /* insort: after every equal end */
    while (pos > 0 && s->r_end[pos - 1] > end)
        pos--;
    memmove(s->r_end + pos + 1, s->r_end + pos, (size_t)(s->r_len - pos) * sizeof(double));
    memmove(s->r_job + pos + 1, s->r_job + pos, (size_t)(s->r_len - pos) * sizeof(int64_t));
    s->r_end[pos] = end;
    s->r_job[pos] = j;
    s->r_len++;

    double real_end = now + s->runlen[j];
    int64_t a = s->acct[j], gpus = need * s->gpn;
    s->start[j] = now;
    if (!s->acct_seen[a]) {
        s->acct_seen[a] = 1;
        s->acct_order[s->n_order++] = a;
    }
    s->by_account[a] += gpus;
    s->acct_seconds[a] = s->acct_seconds[a] + (double)gpus * (real_end - now);
    return push(s, real_end, END, j);
}

/* CountBackend._shadow: (shadow time, extra nodes) */
static void shadow(const Sim *s, double now, int64_t need, double *when, int64_t *extra) {
    int64_t avail = s->free;
    for (Py_ssize_t i = 0; i < s->r_len; i++) {
        avail += s->need[s->r_job[i]];
        if (avail >= need) {
            double end = s->r_end[i];
            for (Py_ssize_t k = i + 1; k < s->r_len && s->r_end[k] == end; k++)
                avail += s->need[s->r_job[k]];
            *when = end > now ? end : now;
            *extra = avail - need;
            return;
        }
    }
    *when = INFINITY;
    *extra = 0;
}

/* CountBackend._easy */
static int easy(Sim *s, double now) {
    double when;
    int64_t extra;
    shadow(s, now, s->need[s->q[0]], &when, &extra);
    Py_ssize_t keep = 1;
    for (Py_ssize_t k = 1; k < s->q_len; k++) {
        int64_t j = s->q[k];
        if (s->need[j] <= s->free) {
            if (now + s->limit[j] <= when) {
                if (start_job(s, j, now))
                    return -1;
                continue;
            }
            if (s->need[j] <= extra) {
                extra -= s->need[j];
                if (start_job(s, j, now))
                    return -1;
                continue;
            }
        }
        s->q[keep++] = j;
    }
    s->q_len = keep;
    return 0;
}

/* _earliest: first segment where `need` fits from times[i] for `length`; -1 = none */
static Py_ssize_t earliest(const double *times, const int64_t *free, Py_ssize_t n,
                           int64_t need, double length) {
    Py_ssize_t i = 0;
    while (i < n) {
        if (free[i] < need) {
            i++;
            continue;
        }
        double end = times[i] + length;
        Py_ssize_t j = i;
        int broke = 0;
        while (j + 1 < n && times[j + 1] < end) {
            if (free[j + 1] < need) {
                broke = 1;
                break;
            }
            j++;
        }
        if (!broke)
            return i;
        i = j + 1;
    }
    return -1;
}

/* _take: subtract `need` from segment i up to `end` (bisect_right, as Python) */
static void take(double *times, int64_t *free, Py_ssize_t *n, Py_ssize_t i, double end,
                 int64_t need) {
    Py_ssize_t lo = i, hi = *n;
    while (lo < hi) { /* bisect_left: the first segment starting at or after end */
        Py_ssize_t mid = (lo + hi) / 2;
        if (times[mid] < end)
            lo = mid + 1;
        else
            hi = mid;
    }
    Py_ssize_t j = lo;
    if (j == *n || times[j] != end) {
        memmove(times + j + 1, times + j, (size_t)(*n - j) * sizeof(double));
        memmove(free + j + 1, free + j, (size_t)(*n - j) * sizeof(int64_t));
        times[j] = end;
        free[j] = free[j - 1];
        (*n)++;
    }
    for (Py_ssize_t k = i; k < j; k++)
        free[k] -= need;
}

/* CountBackend._profile */
static Py_ssize_t profile(Sim *s, double now) {
    double *times = s->p_times;
    int64_t *free = s->p_free;
    Py_ssize_t n = 1;
    times[0] = now;
    free[0] = s->free;
    for (Py_ssize_t i = 0; i < s->r_len; i++) {
        int64_t m = s->need[s->r_job[i]];
        if (s->r_end[i] <= times[n - 1]) {
            free[n - 1] += m;
        } else {
            times[n] = s->r_end[i];
            free[n] = free[n - 1] + m;
            n++;
        }
    }
    return n;
}

/* CountBackend._conservative */
static int conservative(Sim *s, double now) {
    Py_ssize_t n = profile(s, now);
    int64_t low = (int64_t)1 << 60;
    for (Py_ssize_t k = s->q_len - 1; k >= 0; k--) {
        if (s->need[s->q[k]] < low)
            low = s->need[s->q[k]];
        s->floor[k] = low;
    }
    Py_ssize_t keep = 0, k = 0;
    for (; k < s->q_len; k++) {
        int64_t j = s->q[k];
        if (s->free < s->floor[k])
            break;
        Py_ssize_t i = earliest(s->p_times, s->p_free, n, s->need[j], s->limit[j]);
        if (i < 0) {
            s->q[keep++] = j;
            continue;
        }
        double t = s->p_times[i];
        take(s->p_times, s->p_free, &n, i, t + s->limit[j], s->need[j]);
        if (t <= now && s->need[j] <= s->free) {
            if (start_job(s, j, now))
                return -1;
        } else {
            s->q[keep++] = j;
        }
    }
    for (; k < s->q_len; k++) /* keep.extend(queue[k:]) */
        s->q[keep++] = s->q[k];
    s->q_len = keep;
    return 0;
}

/* CountBackend.schedule */
static int schedule(Sim *s, double now, int backfill) {
    retire(s, now);
    Py_ssize_t k = 0;
    while (k < s->q_len && s->need[s->q[k]] <= s->free) {
        if (start_job(s, s->q[k], now))
            return -1;
        k++;
    }
    memmove(s->q, s->q + k, (size_t)(s->q_len - k) * sizeof(int64_t));
    s->q_len -= k;
    if (!s->q_len || !backfill || s->mode == MODE_NONE)
        return 0;
    return s->mode == MODE_EASY ? easy(s, now) : conservative(s, now);
}

/* CountDriver._sample */
static int sample(Sim *s, double t) {
    int64_t alloc = (s->nodes - s->free) * s->gpn;
    int blocked = s->q_len && s->need[s->q[0]] > s->free;
    int64_t idle = blocked ? s->free * s->gpn : 0, qlen = (int64_t)s->q_len;
    if (s->n_samples && alloc == s->last_alloc && idle == s->last_idle && qlen == s->last_qlen)
        return 0;
    int plot = t - s->plot_t >= s->plot_period;
    if (plot)
        s->plot_t = t;
    int64_t first = (int64_t)(s->p_acct.len / sizeof(int64_t));
    if (buf_put(&s->s_t, &t, sizeof t) || buf_put(&s->s_alloc, &alloc, sizeof alloc) ||
        buf_put(&s->s_idle, &idle, sizeof idle) || buf_put(&s->s_qlen, &qlen, sizeof qlen) ||
        buf_put(&s->s_plot, &first, sizeof first))
        return -1;
    if (plot) {
        for (Py_ssize_t i = 0; i < s->n_order; i++) {
            int64_t a = s->acct_order[i], g = s->by_account[a];
            if (g && (buf_put(&s->p_acct, &a, sizeof a) || buf_put(&s->p_gpus, &g, sizeof g)))
                return -1;
        }
    }
    s->last_alloc = alloc;
    s->last_idle = idle;
    s->last_qlen = qlen;
    s->n_samples++;
    return 0;
}

/* CountDriver.run */
static int simulate(Sim *s) {
    if (feed(s))
        return -1;
    int has_bf = 0;
    while (s->heap.len) {
        Event ev = ev_pop(&s->heap);
        double t = ev.t;
        int go;
        s->events++;
        if (ev.kind == SUBMIT) {
            if (feed(s))
                return -1;
            go = submit_job(s, ev.job, t);
        } else if (ev.kind == END) {
            backend_end(s, ev.job);
            s->by_account[s->acct[ev.job]] -= s->need[ev.job] * s->gpn;
            go = 1;
        } else {
            has_bf = 0;
            go = s->q_len > 0;
        }
        if (go) {
            int backfill = s->bf_interval <= 0 || ev.kind == BACKFILL;
            if (s->bf_interval > 0 && !has_bf && s->q_len) {
                if (push(s, t + s->bf_interval, BACKFILL, 0))
                    return -1;
                has_bf = 1;
            }
            s->cycles++;
            if (schedule(s, t, backfill))
                return -1;
            if (ev.kind == BACKFILL && s->heap.len == 1 && s->heap.e[0].kind == BACKFILL) {
                s->heap.len = 0; /* nothing runs nor arrives: later passes change nothing */
                has_bf = 0;
            }
        }
        if (sample(s, t))
            return -1;
    }
    return 0;
}

/* -- Python glue ------------------------------------------------------------------ */

static int get_buffer(PyObject *obj, Py_buffer *view, const char *name, char kind,
                      Py_ssize_t n) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT))
        return -1;
    const char *f = view->format ? view->format : "B";
    if (*f == '<' || *f == '=' || *f == '@')
        f++;
    int ok = view->itemsize == 8 &&
             (kind == 'd' ? strcmp(f, "d") == 0 : (strcmp(f, "q") == 0 || strcmp(f, "l") == 0));
    if (!ok || (n >= 0 && view->len / 8 != n)) {
        PyErr_Format(PyExc_ValueError, "%s: want a contiguous %s array of length %zd", name,
                     kind == 'd' ? "float64" : "int64", n);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static PyObject *bytes_of(const void *p, size_t len) {
    return PyBytes_FromStringAndSize(p ? (const char *)p : "", (Py_ssize_t)len);
}

static void sim_free(Sim *s) {
    free(s->free_ids.word);
    free(s->free_ids.summary);
    free(s->r_end);
    free(s->r_job);
    free(s->in_backend);
    free(s->plan_end);
    free(s->q);
    free(s->arrival);
    free(s->p_times);
    free(s->p_free);
    free(s->floor);
    free(s->heap.e);
    Py_CLEAR(s->start_out);
    free(s->acct_seconds);
    free(s->off);
    Py_CLEAR(s->ids_out);
    free(s->by_account);
    free(s->acct_order);
    free(s->acct_seen);
    Buf *bufs[] = {&s->s_t, &s->s_alloc, &s->s_idle, &s->s_qlen, &s->s_plot, &s->p_acct,
                   &s->p_gpus};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        free(bufs[i]->data);
}

static int sim_alloc(Sim *s) {
    size_t n = (size_t)s->n + 1, a = (size_t)s->n_acct + 1, nodes = (size_t)s->nodes + 1;
    size_t words = nodes / 64 + 1;
    s->free_ids.word = calloc(words, sizeof(uint64_t));
    s->free_ids.summary = calloc(words / 64 + 1, sizeof(uint64_t));
    s->r_end = malloc(n * sizeof(double));
    s->r_job = malloc(n * sizeof(int64_t));
    s->in_backend = calloc(n, 1);
    s->plan_end = malloc(n * sizeof(double));
    s->q = malloc(n * sizeof(int64_t));
    s->arrival = malloc(n * sizeof(int64_t));
    s->p_times = malloc(2 * n * sizeof(double)); /* running + 1 + one split per queued job */
    s->p_free = malloc(2 * n * sizeof(int64_t));
    s->floor = malloc(n * sizeof(int64_t));
    s->start_out = PyBytes_FromStringAndSize(NULL, s->n * (Py_ssize_t)sizeof(double));
    s->start = s->start_out ? (double *)PyBytes_AS_STRING(s->start_out) : NULL;
    s->acct_seconds = calloc(a, sizeof(double));
    s->off = malloc(n * sizeof(int64_t));
    s->by_account = calloc(a, sizeof(int64_t));
    s->acct_order = malloc(a * sizeof(int64_t));
    s->acct_seen = calloc(a, 1);
    if (!s->free_ids.word || !s->free_ids.summary || !s->r_end || !s->r_job || !s->in_backend || !s->plan_end || !s->q || !s->arrival ||
        !s->p_times || !s->p_free || !s->floor || !s->start || !s->acct_seconds || !s->off ||
        !s->by_account || !s->acct_order || !s->acct_seen)
        return -1;
    int64_t total = 0;
    for (Py_ssize_t j = 0; j < s->n; j++) {
        s->off[j] = total;
        total += s->need[j];
        s->start[j] = NAN;
    }
    s->ids_out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)((size_t)total * sizeof(int32_t)));
    s->ids = s->ids_out ? (int32_t *)PyBytes_AS_STRING(s->ids_out) : NULL;
    if (!s->ids)
        return -1;
    for (int64_t k = 0; k < total; k++)
        s->ids[k] = -1;
    for (int64_t i = 0; i < s->nodes; i++)
        id_add(&s->free_ids, (int32_t)i);
    s->free_ids.lo = 0;
    s->free = s->nodes;
    s->plot_t = -INFINITY;
    return 0;
}

static int check_inputs(const Sim *s) {
    if (s->nodes < 0 || s->nodes > INT32_MAX || s->gpn < 0 || s->mode < 0 || s->mode > 2) {
        PyErr_SetString(PyExc_ValueError, "nodes, gpus_per_node or mode out of range");
        return -1;
    }
    for (Py_ssize_t j = 0; j < s->n; j++) {
        if (s->need[j] < 0 || s->acct[j] < 0 || s->acct[j] >= s->n_acct) {
            PyErr_Format(PyExc_ValueError, "job %zd: need or account index out of range", j);
            return -1;
        }
        if (!isfinite(s->submit[j]) || !(s->limit[j] >= 0) || !isfinite(s->limit[j]) ||
            !(s->runlen[j] >= 0) || !isfinite(s->runlen[j])) {
            PyErr_Format(PyExc_ValueError, "job %zd: submit, run or limit not finite >= 0", j);
            return -1;
        }
    }
    return 0;
}

PyDoc_STRVAR(run_doc,
"run(submit, runlen, need, limit, acct, n_accounts, nodes, gpus_per_node, mode, sjf,\n"
"    bf_interval, plot_period) -> dict\n\n"
"The count driver's event loop. submit, runlen, limit: float64 arrays; need, acct:\n"
"int64 arrays (one entry per job, file order). mode: 0 none, 1 EASY, 2 conservative.\n"
"Returns bytes of native arrays: start (float64, NaN = never started), ids (int32,\n"
"each job's node ids at the cumulative sum of need before it), acct_seconds (float64),\n"
"acct_order (int64, first-start order), the samples (t float64; allocated, idle,\n"
"queue_len, plot_first int64) and the per-account plot entries (acct, gpus int64),\n"
"plus the event and cycle counts.");

static PyObject *countsim_run(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o_submit, *o_runlen, *o_need, *o_limit, *o_acct;
    Py_ssize_t n_acct;
    long long nodes, gpn;
    int mode, sjf;
    double bf_interval, plot_period;
    if (!PyArg_ParseTuple(args, "OOOOOnLLipdd", &o_submit, &o_runlen, &o_need, &o_limit,
                          &o_acct, &n_acct, &nodes, &gpn, &mode, &sjf, &bf_interval,
                          &plot_period))
        return NULL;
    Py_buffer b[5];
    int got = 0;
    PyObject *out = NULL;
    Sim s;
    memset(&s, 0, sizeof s);
    if (get_buffer(o_submit, &b[0], "submit", 'd', -1))
        goto done;
    got = 1;
    Py_ssize_t n = b[0].len / 8;
    if (get_buffer(o_runlen, &b[1], "runlen", 'd', n))
        goto done;
    got = 2;
    if (get_buffer(o_need, &b[2], "need", 'q', n))
        goto done;
    got = 3;
    if (get_buffer(o_limit, &b[3], "limit", 'd', n))
        goto done;
    got = 4;
    if (get_buffer(o_acct, &b[4], "acct", 'q', n))
        goto done;
    got = 5;
    s.n = n;
    s.submit = b[0].buf;
    s.runlen = b[1].buf;
    s.need = b[2].buf;
    s.limit = b[3].buf;
    s.acct = b[4].buf;
    s.n_acct = n_acct;
    s.nodes = nodes;
    s.gpn = gpn;
    s.mode = mode;
    s.sjf = sjf;
    s.bf_interval = bf_interval;
    s.plot_period = plot_period;
    if (check_inputs(&s))
        goto done;
    if (sim_alloc(&s)) {
        PyErr_NoMemory();
        goto done;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = simulate(&s);
    Py_END_ALLOW_THREADS
    if (rc) {
        PyErr_NoMemory();
        goto done;
    }
    out = Py_BuildValue(
        "{s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:L,s:L}",
        "start", Py_NewRef(s.start_out), "ids", Py_NewRef(s.ids_out),
        "acct_seconds", bytes_of(s.acct_seconds, (size_t)n_acct * sizeof(double)),
        "acct_order", bytes_of(s.acct_order, (size_t)s.n_order * sizeof(int64_t)),
        "t", bytes_of(s.s_t.data, s.s_t.len),
        "allocated", bytes_of(s.s_alloc.data, s.s_alloc.len),
        "idle", bytes_of(s.s_idle.data, s.s_idle.len),
        "queue_len", bytes_of(s.s_qlen.data, s.s_qlen.len),
        "plot_first", bytes_of(s.s_plot.data, s.s_plot.len),
        "plot_acct", bytes_of(s.p_acct.data, s.p_acct.len),
        "plot_gpus", bytes_of(s.p_gpus.data, s.p_gpus.len),
        "events", (long long)s.events, "cycles", (long long)s.cycles);
done:
    for (int i = 0; i < got; i++)
        PyBuffer_Release(&b[i]);
    sim_free(&s);
    return out;
}


/* -- SWF records ------------------------------------------------------------------ */

/* One token as Python's float() reads it, for the plain decimal forms only
 * ([+-] digits [. digits] [e [+-] digits]); -1 = another form (inf, nan, 1_000,
 * garbage): the caller then takes the Python reader, which knows them all. */
static int parse_number(const char *p, const char *end, double *out) {
    const char *q = p;
    int neg = 0;
    if (q < end && (*q == '+' || *q == '-'))
        neg = *q++ == '-';
    const char *digits = q;
    uint64_t whole = 0;
    while (q < end && *q >= '0' && *q <= '9')
        whole = whole * 10 + (uint64_t)(*q++ - '0');
    size_t n_int = (size_t)(q - digits);
    if (q == end && n_int > 0 && n_int <= 15) { /* an integer: exact in a double */
        double v = (double)whole;
        *out = neg ? -v : v;
        return 0;
    }
    size_t n_frac = 0;
    if (q < end && *q == '.') {
        q++;
        while (q < end && *q >= '0' && *q <= '9')
            q++, n_frac++;
    }
    if (n_int + n_frac == 0)
        return -1;
    if (q < end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < end && (*q == '+' || *q == '-'))
            q++;
        const char *e = q;
        while (q < end && *q >= '0' && *q <= '9')
            q++;
        if (q == e)
            return -1;
    }
    if (q != end || end - p > 62)
        return -1;
    char tmp[64];
    memcpy(tmp, p, (size_t)(end - p));
    tmp[end - p] = 0;
    char *stop = NULL;
    *out = PyOS_string_to_double(tmp, &stop, NULL); /* Python's own float parser */
    if (*out == -1.0 && PyErr_Occurred()) {
        PyErr_Clear(); /* the Python reader will say what is wrong */
        return -1;
    }
    return stop == tmp + (end - p) ? 0 : -1;
}

PyDoc_STRVAR(parse_swf_doc,
"parse_swf(data: bytes, width: int) -> bytearray | None\n\n"
"The first `width` fields of every record line of SWF text as float64, row after\n"
"row. Lines that are blank or start with ';' are skipped, as tide.sim.workload.swf\n"
"does. None when the text needs the Python reader: a short line, a token that is\n"
"not a plain decimal number, or a byte outside printable ASCII and tab.");

static PyObject *countsim_parse_swf(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    int width;
    if (!PyArg_ParseTuple(args, "y*i", &view, &width))
        return NULL;
    if (width <= 0) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "width must be > 0");
        return NULL;
    }
    const char *p = view.buf, *end = p + view.len;
    /* the result, sized for every line a record: filled in place, cut at the end (no
     * growing buffer copied as it grows, no second copy of megabytes into a bytearray) */
    Py_ssize_t lines = 1;
    for (const char *c = p; (c = memchr(c, '\n', (size_t)(end - c))) != NULL; c++)
        lines++;
    for (const char *c = p; (c = memchr(c, '\r', (size_t)(end - c))) != NULL; c++)
        lines++;
    PyObject *res = PyByteArray_FromStringAndSize(NULL, lines * width * (Py_ssize_t)sizeof(double));
    Buf out = {res ? PyByteArray_AS_STRING(res) : NULL, 0,
               res ? (size_t)PyByteArray_GET_SIZE(res) : 0};
    double *row = malloc((size_t)width * sizeof(double));
    int ok = 1, oom = row == NULL || res == NULL;
    while (!oom && ok && p < end) {
        /* one line: '\n' or '\r' ends it (universal newlines; "\r\n" leaves a blank) */
        const char *eol = p;
        while (eol < end && *eol != '\n' && *eol != '\r')
            eol++;
        int k = 0, comment = 0;
        const char *q = p;
        while (ok && q < eol) {
            unsigned char c = (unsigned char)*q;
            if (c == ' ' || c == '\t' || c == '\v' || c == '\f') {
                q++;
                continue;
            }
            if (c < 0x20 || c > 0x7e) {
                ok = 0; /* str.split() knows more whitespace than this: the Python reader */
                break;
            }
            const char *tok = q;
            if (k == 0 && c == ';') {
                comment = 1;
                break;
            }
            /* the common token, a plain integer of up to 15 digits: read in this pass
             * (what parse_number gives for it); anything else goes to parse_number */
            const char *d = q + (c == '-');
            uint64_t whole = 0;
            while (d < eol && (unsigned)(*d - '0') < 10u && d - q < 17)
                whole = whole * 10 + (uint64_t)(*d++ - '0');
            size_t digits = (size_t)(d - q) - (c == '-');
            if (digits > 0 && digits <= 15 &&
                (d == eol || *d == ' ' || *d == '\t' || *d == '\v' || *d == '\f')) {
                if (k < width)
                    row[k] = c == '-' ? -(double)whole : (double)whole;
                q = d;
                k++;
                continue;
            }
            while (q < eol && (unsigned char)*q > 0x20 && (unsigned char)*q < 0x7f)
                q++;
            if (k < width && parse_number(tok, q, &row[k]))
                ok = 0;
            k++;
        }
        if (ok && !comment && k > 0) {
            if (k < width)
                ok = 0;
            else if (out.len + (size_t)width * sizeof(double) > out.cap)
                oom = 1; /* cannot be: one row per line at most, and lines were counted */
            else {
                memcpy(out.data + out.len, row, (size_t)width * sizeof(double));
                out.len += (size_t)width * sizeof(double);
            }
        }
        p = eol < end ? eol + 1 : end;
    }
    free(row);
    PyBuffer_Release(&view);
    if (!PyErr_Occurred() && oom)
        PyErr_NoMemory();
    if (PyErr_Occurred() || !ok) {
        Py_XDECREF(res);
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    }
    if (PyByteArray_Resize(res, (Py_ssize_t)out.len) < 0) { /* writable: filters fix fields */
        Py_DECREF(res);
        return NULL;
    }
    return res;
}

/* -- objects of a slots class, many at once ---------------------------------------- */

PyDoc_STRVAR(make_slots_doc,
"make_slots(cls, names, columns, n) -> list\n\n"
"n instances of `cls`, a class with __slots__ (a dataclass with slots=True and no\n"
"__post_init__), each slot set as object.__setattr__ would, without calling\n"
"__init__: for slot names[i], row r takes columns[i][r] when columns[i] is a list,\n"
"else columns[i] itself. `names` must name every slot: the caller checks that.");

static PyObject *countsim_make_slots(PyObject *self, PyObject *args) {
    (void)self;
    PyTypeObject *cls;
    PyObject *names, *columns;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "O!O!O!n", &PyType_Type, &cls, &PyTuple_Type, &names,
                          &PyTuple_Type, &columns, &n))
        return NULL;
    Py_ssize_t k = PyTuple_GET_SIZE(names);
    if (PyTuple_GET_SIZE(columns) != k || n < 0) {
        PyErr_SetString(PyExc_ValueError, "one column per name, n >= 0");
        return NULL;
    }
    Py_ssize_t *offsets = PyMem_Malloc((size_t)(k ? k : 1) * sizeof(Py_ssize_t));
    if (!offsets)
        return PyErr_NoMemory();
    PyObject *out = NULL;
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *col = PyTuple_GET_ITEM(columns, i);
        if (PyList_Check(col) && PyList_GET_SIZE(col) != n) {
            PyErr_Format(PyExc_ValueError, "column %zd: want %zd rows", i, n);
            goto done;
        }
        PyObject *descr = PyObject_GetAttr((PyObject *)cls, PyTuple_GET_ITEM(names, i));
        if (!descr)
            goto done;
        int ok = Py_IS_TYPE(descr, &PyMemberDescr_Type);
        PyMemberDef *m = ok ? ((PyMemberDescrObject *)descr)->d_member : NULL;
        ok = ok && m->type == T_OBJECT_EX && !(m->flags & READONLY) &&
             PyType_IsSubtype(cls, PyDescr_TYPE(descr));
        Py_DECREF(descr);
        if (!ok) {
            PyErr_Format(PyExc_TypeError, "%R is not a writable slot of %R",
                         PyTuple_GET_ITEM(names, i), (PyObject *)cls);
            goto done;
        }
        offsets[i] = m->offset;
    }
    out = PyList_New(n);
    if (!out)
        goto done;
    for (Py_ssize_t r = 0; r < n; r++) {
        PyObject *obj = cls->tp_alloc(cls, 0);
        if (!obj) {
            Py_CLEAR(out);
            goto done;
        }
        for (Py_ssize_t i = 0; i < k; i++) {
            PyObject *col = PyTuple_GET_ITEM(columns, i);
            PyObject *v = PyList_Check(col) ? PyList_GET_ITEM(col, r) : col;
            *(PyObject **)((char *)obj + offsets[i]) = Py_NewRef(v);
        }
        PyList_SET_ITEM(out, r, obj);
    }
done:
    PyMem_Free(offsets);
    return out;
}

/* -- output helpers: many small strings and dicts at once ------------------------- */

PyDoc_STRVAR(join_groups_doc,
"join_groups(items, index, bounds, sep) -> list[str]\n\n"
"For each group g: sep.join(items[index[j]] for j in range(bounds[g], bounds[g+1])),\n"
"'' for an empty group. index, bounds: int64 arrays, len(bounds) = groups + 1.");

static PyObject *countsim_join_groups(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *items, *o_index, *o_bounds, *sep;
    if (!PyArg_ParseTuple(args, "O!OOU", &PyList_Type, &items, &o_index, &o_bounds, &sep))
        return NULL;
    Py_buffer bi, bb;
    if (get_buffer(o_index, &bi, "index", 'q', -1))
        return NULL;
    if (get_buffer(o_bounds, &bb, "bounds", 'q', -1)) {
        PyBuffer_Release(&bi);
        return NULL;
    }
    const int64_t *index = bi.buf, *bounds = bb.buf;
    Py_ssize_t n_index = bi.len / 8, groups = bb.len / 8 - 1, n_items = PyList_GET_SIZE(items);
    PyObject *out = NULL, *empty = PyUnicode_New(0, 0);
    /* each item's UTF-8 text; a group of ASCII items is copied straight into its str */
    const char **text = malloc(((size_t)n_items + 1) * sizeof(char *));
    Py_ssize_t *size = malloc(((size_t)n_items + 1) * sizeof(Py_ssize_t));
    Py_ssize_t sep_len = 0;
    const char *sep_text = PyUnicode_AsUTF8AndSize(sep, &sep_len);
    int ascii = sep_text != NULL && PyUnicode_IS_ASCII(sep);
    Buf buf = {0};
    if (!text || !size) {
        PyErr_NoMemory();
        goto done;
    }
    if (!empty || !sep_text)
        goto done;
    for (Py_ssize_t k = 0; k < n_items; k++) {
        PyObject *item = PyList_GET_ITEM(items, k);
        if (!PyUnicode_Check(item)) {
            PyErr_SetString(PyExc_TypeError, "items: want a list of str");
            goto done;
        }
        text[k] = PyUnicode_AsUTF8AndSize(item, &size[k]);
        if (!text[k])
            goto done;
        ascii &= PyUnicode_IS_ASCII(item) != 0;
    }
    if (groups < 0) {
        PyErr_SetString(PyExc_ValueError, "bounds: want at least one entry");
        goto done;
    }
    out = PyList_New(groups);
    for (Py_ssize_t g = 0; out && g < groups; g++) {
        int64_t lo = bounds[g], hi = bounds[g + 1];
        PyObject *v = NULL;
        int bad = lo < 0 || hi < lo || hi > n_index;
        for (int64_t j = lo; !bad && j < hi; j++)
            bad = index[j] < 0 || index[j] >= n_items;
        if (bad) {
            PyErr_SetString(PyExc_ValueError, "bounds or index out of range");
        } else if (lo == hi) {
            v = Py_NewRef(empty);
        } else if (hi - lo == 1) {
            v = Py_NewRef(PyList_GET_ITEM(items, index[lo]));
        } else {
            buf.len = 0;
            int err = 0;
            for (int64_t j = lo; !err && j < hi; j++)
                err = (j > lo && buf_put(&buf, sep_text, (size_t)sep_len)) ||
                      buf_put(&buf, text[index[j]], (size_t)size[index[j]]);
            if (err) {
                PyErr_NoMemory();
            } else if (ascii) {
                v = PyUnicode_New((Py_ssize_t)buf.len, 127);
                if (v)
                    memcpy(PyUnicode_DATA(v), buf.data, buf.len);
            } else {
                v = PyUnicode_DecodeUTF8(buf.data, (Py_ssize_t)buf.len, NULL);
            }
        }
        if (!v) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, g, v);
    }
done:
    free(text);
    free(size);
    free(buf.data);
    Py_XDECREF(empty);
    PyBuffer_Release(&bi);
    PyBuffer_Release(&bb);
    return out;
}

PyDoc_STRVAR(group_dicts_doc,
"group_dicts(bounds, keys, values, names) -> list[dict]\n\n"
"For each group g: {names[keys[j]]: values[j] for j in range(bounds[g], bounds[g+1])}\n"
"(insertion order kept). bounds, keys, values: int64 arrays.");

static PyObject *countsim_group_dicts(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o_bounds, *o_keys, *o_values, *names;
    if (!PyArg_ParseTuple(args, "OOOO!", &o_bounds, &o_keys, &o_values, &PyList_Type, &names))
        return NULL;
    Py_buffer b[3];
    if (get_buffer(o_bounds, &b[0], "bounds", 'q', -1))
        return NULL;
    if (get_buffer(o_keys, &b[1], "keys", 'q', -1)) {
        PyBuffer_Release(&b[0]);
        return NULL;
    }
    if (get_buffer(o_values, &b[2], "values", 'q', b[1].len / 8)) {
        PyBuffer_Release(&b[0]);
        PyBuffer_Release(&b[1]);
        return NULL;
    }
    const int64_t *bounds = b[0].buf, *keys = b[1].buf, *values = b[2].buf;
    Py_ssize_t groups = b[0].len / 8 - 1, n_keys = b[1].len / 8, n_names = PyList_GET_SIZE(names);
    PyObject *out = groups >= 0 ? PyList_New(groups) : NULL;
    if (groups < 0)
        PyErr_SetString(PyExc_ValueError, "bounds: want at least one entry");
    for (Py_ssize_t g = 0; out && g < groups; g++) {
        PyObject *d = PyDict_New();
        int64_t lo = bounds[g], hi = bounds[g + 1];
        if (d && (lo < 0 || hi < lo || hi > n_keys)) {
            PyErr_SetString(PyExc_ValueError, "bounds out of range");
            Py_CLEAR(d);
        }
        for (int64_t j = lo; d && j < hi; j++) {
            PyObject *v = keys[j] >= 0 && keys[j] < n_names ? PyLong_FromLongLong(values[j])
                                                            : NULL;
            if (!v && !PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "key out of range");
            if (!v || PyDict_SetItem(d, PyList_GET_ITEM(names, keys[j]), v))
                Py_CLEAR(d);
            Py_XDECREF(v);
        }
        if (!d) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, g, d);
    }
    for (int i = 0; i < 3; i++)
        PyBuffer_Release(&b[i]);
    return out;
}

PyDoc_STRVAR(hostlists_doc,
"hostlists(flat, bounds, nums, digits, names, head, tail) -> list[str]\n\n"
"Each group's Slurm hostlist, as tide.hostlist.compress writes it for node names\n"
"head + digits[i] + tail with numbers nums[i] rising with i: '' for no node,\n"
"names[i] for one, else head + '[' + runs + ']' + tail, runs of consecutive\n"
"numbers written 'digits[a]-digits[b]' (or 'digits[a]') and joined by ','. Group g\n"
"holds the node ids flat[bounds[g]:bounds[g+1]], rising. flat, bounds, nums: int64.");

static PyObject *countsim_hostlists(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o_flat, *o_bounds, *o_nums, *digits, *names, *head, *tail;
    if (!PyArg_ParseTuple(args, "OOOO!O!UU", &o_flat, &o_bounds, &o_nums, &PyList_Type, &digits,
                          &PyList_Type, &names, &head, &tail))
        return NULL;
    Py_buffer b[3];
    if (get_buffer(o_flat, &b[0], "flat", 'q', -1))
        return NULL;
    if (get_buffer(o_bounds, &b[1], "bounds", 'q', -1)) {
        PyBuffer_Release(&b[0]);
        return NULL;
    }
    if (get_buffer(o_nums, &b[2], "nums", 'q', PyList_GET_SIZE(names))) {
        PyBuffer_Release(&b[0]);
        PyBuffer_Release(&b[1]);
        return NULL;
    }
    const int64_t *flat = b[0].buf, *bounds = b[1].buf, *nums = b[2].buf;
    Py_ssize_t n_flat = b[0].len / 8, groups = b[1].len / 8 - 1, n_names = b[2].len / 8;
    Py_ssize_t hl, tl;
    const char *h = PyUnicode_AsUTF8AndSize(head, &hl), *t = PyUnicode_AsUTF8AndSize(tail, &tl);
    PyObject *out = NULL, *empty = PyUnicode_New(0, 0);
    Buf buf = {0};
    int bad = !h || !t || !empty;
    if (!bad && PyList_GET_SIZE(digits) != n_names) {
        PyErr_SetString(PyExc_ValueError, "digits, names and nums: one entry per node");
        bad = 1;
    }
    if (!bad && groups < 0) {
        PyErr_SetString(PyExc_ValueError, "bounds: want at least one entry");
        bad = 1;
    }
    for (Py_ssize_t i = 0; !bad && i < n_flat; i++)
        if (flat[i] < 0 || flat[i] >= n_names) {
            PyErr_SetString(PyExc_ValueError, "flat: node id out of range");
            bad = 1;
        }
    out = bad ? NULL : PyList_New(groups);
    for (Py_ssize_t g = 0; out && g < groups; g++) {
        int64_t lo = bounds[g], hi = bounds[g + 1];
        PyObject *v = NULL;
        if (lo < 0 || hi < lo || hi > n_flat) {
            PyErr_SetString(PyExc_ValueError, "bounds out of range");
        } else if (lo == hi) {
            v = Py_NewRef(empty);
        } else if (hi - lo == 1) {
            v = Py_NewRef(PyList_GET_ITEM(names, flat[lo]));
        } else {
            int err = 0;
            buf.len = 0;
            err |= buf_put(&buf, h, (size_t)hl) | buf_put(&buf, "[", 1);
            for (int64_t a = lo; !err && a < hi;) {
                int64_t z = a;
                while (z + 1 < hi && nums[flat[z + 1]] == nums[flat[z]] + 1)
                    z++;
                Py_ssize_t dl;
                const char *d = PyUnicode_AsUTF8AndSize(PyList_GET_ITEM(digits, flat[a]), &dl);
                err |= !d || (a > lo && buf_put(&buf, ",", 1)) || buf_put(&buf, d, (size_t)dl);
                if (!err && z > a) {
                    d = PyUnicode_AsUTF8AndSize(PyList_GET_ITEM(digits, flat[z]), &dl);
                    err |= !d || buf_put(&buf, "-", 1) || buf_put(&buf, d, (size_t)dl);
                }
                a = z + 1;
            }
            err |= buf_put(&buf, "]", 1) || buf_put(&buf, t, (size_t)tl);
            if (!err)
                v = PyUnicode_DecodeUTF8(buf.data, (Py_ssize_t)buf.len, NULL);
            else if (!PyErr_Occurred())
                PyErr_NoMemory();
        }
        if (!v) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, g, v);
    }
    free(buf.data);
    Py_XDECREF(empty);
    for (int i = 0; i < 3; i++)
        PyBuffer_Release(&b[i]);
    return out;
}

/* "%.1f" of x into out (room for 330 bytes); the length. Where long double holds
 * 64 bits of mantissa, 10 * x is exact in it and rintl rounds half to even, as
 * printf rounds the exact value: the same digits without printf's cost. */
static int fixed1(char *out, double x) {
#if defined(LDBL_MANT_DIG) && LDBL_MANT_DIG >= 64
    if (fabs(x) < 1e15) {
        long double t = rintl((long double)x * 10.0L);
        long long r = (long long)(t < 0 ? -t : t);
        char digits[24], *p = digits + sizeof digits;
        *--p = (char)('0' + r % 10);
        *--p = '.';
        r /= 10;
        do {
            *--p = (char)('0' + r % 10);
            r /= 10;
        } while (r);
        int k = 0;
        if (signbit(x))
            out[k++] = '-';
        size_t len = (size_t)(digits + sizeof digits - p);
        memcpy(out + k, p, len);
        return k + (int)len;
    }
#endif
    if (isnan(x)) { /* Python writes no sign */
        memcpy(out, "nan", 3);
        return 3;
    }
    return snprintf(out, 330, "%.1f", x);
}

PyDoc_STRVAR(svg_path_doc,
"svg_path(x, y, move) -> str\n\n"
"' '.join(f\"{'M' if m else 'L'}{x:.1f},{y:.1f}\") over the points: float64 x, y and\n"
"int64 move (nonzero: start a new subpath there). printf and Python's format both\n"
"round the exact binary value correctly, so the digits are Python's.");

static PyObject *countsim_svg_path(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *ox, *oy, *om;
    if (!PyArg_ParseTuple(args, "OOO", &ox, &oy, &om))
        return NULL;
    Py_buffer b[3];
    if (get_buffer(ox, &b[0], "x", 'd', -1))
        return NULL;
    Py_ssize_t n = b[0].len / 8;
    if (get_buffer(oy, &b[1], "y", 'd', n)) {
        PyBuffer_Release(&b[0]);
        return NULL;
    }
    if (get_buffer(om, &b[2], "move", 'q', n)) {
        PyBuffer_Release(&b[0]);
        PyBuffer_Release(&b[1]);
        return NULL;
    }
    const double *x = b[0].buf, *y = b[1].buf;
    const int64_t *m = b[2].buf;
    Buf buf = {0};
    int err = 0;
    char tmp[700];
    for (Py_ssize_t i = 0; !err && i < n; i++) {
        int k = snprintf(tmp, sizeof tmp, "%s%c", i ? " " : "", m[i] ? 'M' : 'L');
        k += fixed1(tmp + k, x[i]);
        tmp[k++] = ',';
        k += fixed1(tmp + k, y[i]);
        err = buf_put(&buf, tmp, (size_t)k);
    }
    PyObject *out = err ? PyErr_NoMemory() : PyUnicode_DecodeASCII(buf.data ? buf.data : "",
                                                                  (Py_ssize_t)buf.len, NULL);
    free(buf.data);
    for (int i = 0; i < 3; i++)
        PyBuffer_Release(&b[i]);
    return out;
}

/* -- report.html: node occupancy by row (tide.sim.report._occupancy) ---------------- */

PyDoc_STRVAR(occupancy_doc,
"occupancy(bounds, node, gpus, row_of_node, start, end, by_start, by_end, n_rows, edges,\n"
"          cap) -> bytes\n\n"
"report._occupancy's matrix, n_rows x (len(edges) - 1) float64: for each row, the\n"
"bin averages (report.step_bins) of the GPUs its nodes hold, over the capacity cap[r].\n"
"Job j holds gpus[i] GPUs on node node[i] for i in bounds[j]:bounds[j+1] from start[j]\n"
"to end[j]; by_start and by_end list the jobs that started, by start and by end time.\n"
"Node n is in row row_of_node[n] (-1: none). gpus may hold one value, every entry's\n"
"(module constant OCCUPANCY_ONE_GPUS). The arithmetic is step_bins' own, step for\n"
"step, so the numbers are the same.");

static PyObject *countsim_occupancy(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[10];
    Py_ssize_t n_rows;
    if (!PyArg_ParseTuple(args, "OOOOOOOOnOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6],
                          &o[7], &n_rows, &o[8], &o[9]))
        return NULL;
    static const char *what[10] = {"bounds", "node", "gpus", "row_of_node", "start",
                                   "end",    "by_start", "by_end", "edges", "cap"};
    static const char kind[10] = {'q', 'q', 'q', 'q', 'd', 'd', 'q', 'q', 'd', 'q'};
    Py_buffer b[10];
    int got = 0;
    for (; got < 10; got++)
        if (get_buffer(o[got], &b[got], what[got], kind[got], -1))
            break;
    PyObject *out = NULL;
    int64_t *pair_row = NULL, *pair_g = NULL, *pair_at = NULL, *count = NULL, *acc = NULL;
    int64_t *touched = NULL, *fill = NULL;
    int32_t *pair_job = NULL;
    uint32_t *ev = NULL; /* an event: its pair's index << 1, | 1 for an end (4 bytes) */
    double *matrix = NULL, *cum = NULL, *level = NULL, *at = NULL, *tt = NULL;
    if (got < 10)
        goto done;
    const int64_t *bounds = b[0].buf, *node = b[1].buf, *gpus = b[2].buf, *row_of = b[3].buf;
    /* gpus may hold one value for every entry (the count path: whole equal nodes), so
     * that an 80,000-node log's 30 million entries need no array of them */
    const int one_gpus = b[2].len == 8 && b[1].len != 8;
    const double *start = b[4].buf, *end = b[5].buf, *edges = b[8].buf;
    const int64_t *by_start = b[6].buf, *by_end = b[7].buf, *cap = b[9].buf;
    Py_ssize_t jobs = b[0].len / 8 - 1, entries = b[1].len / 8, nodes = b[3].len / 8;
    Py_ssize_t n_s = b[6].len / 8, n_e = b[7].len / 8, n_edges = b[8].len / 8;
    if (jobs < 0 || (b[2].len != b[1].len && !one_gpus) || b[4].len / 8 != jobs || b[5].len / 8 != jobs ||
        n_rows < 0 || b[9].len / 8 != n_rows || n_edges < 2 || bounds[0] != 0 ||
        bounds[jobs] != entries) {
        PyErr_SetString(PyExc_ValueError, "occupancy: inconsistent array lengths");
        goto done;
    }
    for (Py_ssize_t i = 0; i < entries; i++)
        if (node[i] < 0 || node[i] >= nodes) {
            PyErr_SetString(PyExc_ValueError, "occupancy: node out of range");
            goto done;
        }
    for (Py_ssize_t i = 0; i < nodes; i++)
        if (row_of[i] >= n_rows) {
            PyErr_SetString(PyExc_ValueError, "occupancy: row out of range");
            goto done;
        }
    for (Py_ssize_t i = 0; i < n_s + n_e; i++) {
        int64_t j = i < n_s ? by_start[i] : by_end[i - n_s];
        if (j < 0 || j >= jobs) {
            PyErr_SetString(PyExc_ValueError, "occupancy: job out of range");
            goto done;
        }
    }
    if (entries >= ((Py_ssize_t)1 << 31) || jobs >= ((Py_ssize_t)1 << 31)) {
        PyErr_SetString(PyExc_ValueError, "occupancy: over 2**31 jobs or node entries");
        goto done;
    }
    /* each job's GPUs per row (pairs), job after job */
    size_t cap_pairs = (size_t)entries + 1;
    pair_row = malloc(cap_pairs * sizeof(int64_t));
    pair_g = malloc(cap_pairs * sizeof(int64_t));
    pair_job = malloc(cap_pairs * sizeof(int32_t));
    pair_at = malloc(((size_t)jobs + 1) * sizeof(int64_t));
    acc = calloc((size_t)n_rows + 1, sizeof(int64_t));
    touched = malloc(((size_t)n_rows + 1) * sizeof(int64_t));
    count = calloc((size_t)n_rows + 1, sizeof(int64_t));
    if (!pair_row || !pair_g || !pair_job || !pair_at || !acc || !touched || !count) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t np_ = 0;
    for (Py_ssize_t j = 0; j < jobs; j++) {
        pair_at[j] = np_;
        int64_t nt = 0;
        for (int64_t i = bounds[j]; i < bounds[j + 1]; i++) {
            int64_t r = row_of[node[i]], g = gpus[one_gpus ? 0 : i];
            if (r < 0 || g == 0)
                continue;
            if (acc[r] == 0 && !count[r]) /* count[r] doubles as a 'touched' flag here */
                touched[nt++] = r;
            count[r] = 1;
            acc[r] += g;
        }
        for (int64_t k = 0; k < nt; k++) {
            int64_t r = touched[k];
            pair_row[np_] = r;
            pair_job[np_] = (int32_t)j;
            pair_g[np_++] = acc[r];
            acc[r] = 0;
            count[r] = 0;
        }
    }
    pair_at[jobs] = np_;
    /* events per row: the starts in start order, then the ends in end order */
    for (Py_ssize_t i = 0; i < n_s; i++)
        for (int64_t p = pair_at[by_start[i]]; p < pair_at[by_start[i] + 1]; p++)
            count[pair_row[p]]++;
    for (Py_ssize_t i = 0; i < n_e; i++)
        for (int64_t p = pair_at[by_end[i]]; p < pair_at[by_end[i] + 1]; p++)
            count[pair_row[p]]++;
    fill = malloc(((size_t)n_rows + 1) * sizeof(int64_t));
    int64_t total = 0;
    for (Py_ssize_t r = 0; r < n_rows; r++)
        total += count[r];
    ev = malloc(((size_t)total + 1) * sizeof(uint32_t));
    size_t bins = (size_t)n_edges - 1;
    matrix = calloc((size_t)n_rows * bins + 1, sizeof(double));
    if (!fill || !ev || !matrix) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t r = 0, at0 = 0; r < n_rows; r++) {
        fill[r] = at0;
        at0 += count[r];
    }
    /* every row's events in time order, in its own bucket: the starts (by_start's
     * order) and the ends (by_end's) merged once for all rows, a start first at one
     * time. Each row gets the sequence a merge of its own starts and ends gives. */
    for (Py_ssize_t a = 0, z = 0; a < n_s || z < n_e;) {
        if (z >= n_e || (a < n_s && start[by_start[a]] <= end[by_end[z]])) {
            int64_t j = by_start[a++];
            for (int64_t p = pair_at[j]; p < pair_at[j + 1]; p++)
                ev[fill[pair_row[p]]++] = (uint32_t)p << 1;
        } else {
            int64_t j = by_end[z++];
            for (int64_t p = pair_at[j]; p < pair_at[j + 1]; p++)
                ev[fill[pair_row[p]]++] = (uint32_t)p << 1 | 1u;
        }
    }
    /* one row at a time, its times and levels in scratch for the largest row (the
     * events of all rows are ~10^6 on a 128-node log: 4 bytes each, not 16) */
    int64_t widest = 0;
    for (Py_ssize_t r = 0, lo = 0; r < n_rows; r++) {
        if (fill[r] - lo > widest)
            widest = fill[r] - lo;
        lo = fill[r];
    }
    cum = malloc(((size_t)widest + 1) * sizeof(double));
    level = malloc(((size_t)widest + 1) * sizeof(double));
    tt = malloc(((size_t)widest + 1) * sizeof(double));
    at = malloc((size_t)n_edges * sizeof(double));
    if (!cum || !level || !tt || !at) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t r = 0, lo = 0; r < n_rows; r++) {
        int64_t hi = fill[r], n = hi - lo;
        const uint32_t *code = ev + lo;
        lo = hi;
        double *row = matrix + (size_t)r * bins;
        if (n == 0)
            continue; /* step_bins of no samples: zeros */
        /* level = cumsum(deltas); cum = [0, cumsum(level[:-1] * diff(ts))] */
        int64_t run = 0;
        for (int64_t i = 0; i < n; i++) {
            int64_t p = code[i] >> 1, j = pair_job[p];
            int is_end = code[i] & 1u;
            tt[i] = is_end ? end[j] : start[j];
            run += is_end ? -pair_g[p] : pair_g[p];
            level[i] = (double)run;
        }
        cum[0] = 0.0;
        for (int64_t i = 1; i < n; i++) {
            double term = level[i - 1] * (tt[i] - tt[i - 1]);
            cum[i] = i == 1 ? term : cum[i - 1] + term;
        }
        /* at = cum[k] + level[k] * (edge - ts[k]), k the last sample at or before edge */
        int64_t k = -1;
        for (Py_ssize_t e = 0; e < n_edges; e++) {
            while (k + 1 < n && tt[k + 1] <= edges[e])
                k++;
            int64_t kk = k < 0 ? 0 : k;
            double v = cum[kk] + level[kk] * (edges[e] - tt[kk]);
            at[e] = k < 0 ? 0.0 : v;
        }
        double c = (double)(cap[r] > 1 ? cap[r] : 1);
        for (size_t e = 0; e < bins; e++)
            row[e] = ((at[e + 1] - at[e]) / (edges[e + 1] - edges[e])) / c;
    }
    out = bytes_of(matrix, (size_t)n_rows * bins * sizeof(double));
done:
    for (int i = 0; i < got; i++)
        PyBuffer_Release(&b[i]);
    free(pair_row);
    free(pair_g);
    free(pair_job);
    free(pair_at);
    free(count);
    free(acc);
    free(touched);
    free(fill);
    free(ev);
    free(matrix);
    free(cum);
    free(level);
    free(tt);
    free(at);
    return out;
}

/* -- jobs.csv: rows of text from columns (tide.sim.outputs.write_jobs_csv) ---------- */

/* outputs.fmt(x, decimals) for a float: "" when not finite; an integral value
 * as its integer; else "%.*f" with trailing zeros, then a trailing '.', cut;
 * "-0" and "" become "0". printf and Python's format both round the exact
 * binary value correctly (half to even), so the digits are Python's. */
static const char DIGIT_PAIRS[] = "00010203040506070809101112131415161718192021222324"
                                  "25262728293031323334353637383940414243444546474849"
                                  "50515253545556575859606162636465666768697071727374"
                                  "75767778798081828384858687888990919293949596979899";

/* str(v), written in place from its last digit, two digits per division */
static inline int put_int(Buf *b, long long v) {
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    int n = 1;
    for (unsigned long long t = u; t >= 10; t /= 10)
        n++;
    size_t size = (size_t)n + (v < 0);
    if (b->len + size > b->cap && buf_reserve(b, size))
        return -1;
    char *p = b->data + b->len + size;
    b->len += size;
    while (u >= 100) {
        unsigned d = (unsigned)(u % 100) * 2;
        u /= 100;
        *--p = DIGIT_PAIRS[d + 1];
        *--p = DIGIT_PAIRS[d];
    }
    if (u >= 10) {
        *--p = DIGIT_PAIRS[u * 2 + 1];
        *--p = DIGIT_PAIRS[u * 2];
    } else {
        *--p = (char)('0' + u);
    }
    if (v < 0)
        *--p = '-';
    return 0;
}

static int put_fixed(Buf *b, double x, int decimals) {
    char tmp[512];
    if (!isfinite(x))
        return 0;
    if (decimals > 0 && fabs(x) < 4611686018427387904.0 && trunc(x) == x)
        return put_int(b, (long long)x); /* -0.0 -> "0" */
    int n = snprintf(tmp, sizeof tmp, "%.*f", decimals, x);
    if (n < 0 || n >= (int)sizeof tmp)
        return -1;
    while (n > 0 && tmp[n - 1] == '0')
        n--;
    while (n > 0 && tmp[n - 1] == '.')
        n--;
    if (n == 0 || (n == 2 && tmp[0] == '-' && tmp[1] == '0'))
        return buf_put(b, "0", 1);
    return buf_put(b, tmp, (size_t)n);
}

/* csv.writer's QUOTE_MINIMAL: a field holding one of the special characters
 * (special[c] != 0) is quoted, its quote characters doubled. */
static int put_field(Buf *b, const char *p, Py_ssize_t len, const char *special) {
    int quote = 0;
    for (Py_ssize_t i = 0; i < len && !quote; i++)
        quote = special[(unsigned char)p[i]];
    if (!quote)
        return buf_put(b, p, (size_t)len);
    if (buf_put(b, "\"", 1))
        return -1;
    for (Py_ssize_t i = 0; i < len; i++)
        if (buf_put(b, p + i, 1) || (p[i] == '"' && buf_put(b, "\"", 1)))
            return -1;
    return buf_put(b, "\"", 1);
}

PyDoc_STRVAR(csv_rows_doc,
"csv_rows(columns, kinds, special, decimals) -> bytes\n\n"
"The rows of a CSV file, UTF-8, ',' between fields and '\\n' after each row.\n"
"kinds[c] says what columns[c] is: 's' a list of str (quoted when it holds one of\n"
"the characters of `special`), 'i' an int64 array, 'f' a float64 array written as\n"
"tide.sim.outputs.fmt(x, decimals) writes it. All columns have the same length.\n"
"With `write` (a file's write method) the text goes to it in pieces of about\n"
"64 KiB as bytes, and None is returned: no copy of the whole text is held.");

enum { CSV_PIECE = 1 << 16 };

/* the text so far to write(bytes), the buffer emptied for the rows that follow */
static int csv_flush(Buf *b, PyObject *write) {
    PyObject *piece = PyBytes_FromStringAndSize(b->data, (Py_ssize_t)b->len);
    PyObject *got = piece ? PyObject_CallOneArg(write, piece) : NULL;
    Py_XDECREF(piece);
    if (!got)
        return -1;
    Py_DECREF(got);
    b->len = 0;
    return 0;
}

static PyObject *countsim_csv_rows(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *columns, *write = Py_None;
    const char *kinds, *chars;
    int decimals;
    if (!PyArg_ParseTuple(args, "O!ssi|O", &PyTuple_Type, &columns, &kinds, &chars, &decimals,
                          &write))
        return NULL;
    if (write != Py_None && !PyCallable_Check(write)) {
        PyErr_SetString(PyExc_TypeError, "write: want a callable (a file's write) or None");
        return NULL;
    }
    char special[256] = {0};
    for (const char *c = chars; *c; c++)
        special[(unsigned char)*c] = 1;
    Py_ssize_t nc = PyTuple_GET_SIZE(columns), rows = -1;
    if ((Py_ssize_t)strlen(kinds) != nc) {
        PyErr_SetString(PyExc_ValueError, "kinds: one letter per column");
        return NULL;
    }
    Py_buffer *views = calloc((size_t)(nc ? nc : 1), sizeof(Py_buffer));
    char *held = calloc((size_t)(nc ? nc : 1), 1);
    PyObject *out = NULL;
    Buf b = {0};
    if (!views || !held) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t c = 0; c < nc; c++) {
        PyObject *col = PyTuple_GET_ITEM(columns, c);
        Py_ssize_t len;
        if (kinds[c] == 's') {
            if (!PyList_Check(col)) {
                PyErr_Format(PyExc_TypeError, "column %zd: want a list of str", c);
                goto done;
            }
            len = PyList_GET_SIZE(col);
        } else if (kinds[c] == 'i' || kinds[c] == 'f') {
            if (get_buffer(col, &views[c], "column", kinds[c] == 'f' ? 'd' : 'q', -1))
                goto done;
            held[c] = 1;
            len = views[c].len / 8;
        } else {
            PyErr_Format(PyExc_ValueError, "kinds: unknown kind %c", kinds[c]);
            goto done;
        }
        if (rows >= 0 && len != rows) {
            PyErr_SetString(PyExc_ValueError, "columns of different lengths");
            goto done;
        }
        rows = len;
    }
    for (Py_ssize_t r = 0; r < rows; r++) {
        for (Py_ssize_t c = 0; c < nc; c++) {
            if (c && buf_put(&b, ",", 1))
                goto nomem;
            if (kinds[c] == 's') {
                PyObject *v = PyList_GET_ITEM(PyTuple_GET_ITEM(columns, c), r);
                Py_ssize_t len;
                const char *p = NULL;
                if (PyUnicode_Check(v) && PyUnicode_IS_ASCII(v)) { /* its text is its UTF-8 */
                    p = PyUnicode_DATA(v);
                    len = PyUnicode_GET_LENGTH(v);
                } else if (PyUnicode_Check(v)) {
                    p = PyUnicode_AsUTF8AndSize(v, &len);
                }
                if (!p) {
                    if (!PyErr_Occurred())
                        PyErr_Format(PyExc_TypeError, "column %zd row %zd: want a str", c, r);
                    goto done;
                }
                if (put_field(&b, p, len, special))
                    goto nomem;
            } else if (kinds[c] == 'i') {
                if (put_int(&b, (long long)((const int64_t *)views[c].buf)[r]))
                    goto nomem;
            } else if (put_fixed(&b, ((const double *)views[c].buf)[r], decimals)) {
                goto nomem;
            }
        }
        if (buf_put(&b, "\n", 1))
            goto nomem;
        if (write != Py_None && b.len >= CSV_PIECE && csv_flush(&b, write))
            goto done;
    }
    if (write == Py_None)
        out = bytes_of(b.data, b.len);
    else if (!b.len || !csv_flush(&b, write))
        out = Py_NewRef(Py_None);
    goto done;
nomem:
    PyErr_NoMemory();
done:
    for (Py_ssize_t c = 0; views && c < nc; c++)
        if (held[c])
            PyBuffer_Release(&views[c]);
    free(views);
    free(held);
    free(b.data);
    return out;
}

/* -- per-job labels: one str each, built here instead of a Python f-string each ---- */

/* An ASCII str of `len` bytes, a then b: the layout str objects of ASCII text have. */
static PyObject *ascii_join(const char *a, Py_ssize_t al, const char *b, Py_ssize_t bl) {
    PyObject *v = PyUnicode_New(al + bl, 127);
    if (v) {
        memcpy(PyUnicode_DATA(v), a, (size_t)al);
        memcpy((char *)PyUnicode_DATA(v) + al, b, (size_t)bl);
    }
    return v;
}

PyDoc_STRVAR(numbered_doc,
"numbered(prefix, values) -> list[str]\n\n"
"f'{prefix}{v}' for each v of an int64 array: job names ('job' + id).");

static PyObject *countsim_numbered(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *prefix, *o_values;
    if (!PyArg_ParseTuple(args, "UO", &prefix, &o_values))
        return NULL;
    Py_buffer b;
    if (get_buffer(o_values, &b, "values", 'q', -1))
        return NULL;
    const int64_t *v = b.buf;
    Py_ssize_t n = b.len / 8, pl;
    const char *p = PyUnicode_AsUTF8AndSize(prefix, &pl);
    int ascii = PyUnicode_IS_ASCII(prefix);
    PyObject *out = p ? PyList_New(n) : NULL;
    for (Py_ssize_t i = 0; out && i < n; i++) {
        char tmp[24], *end = tmp + sizeof tmp, *d = end;
        unsigned long long u = v[i] < 0 ? 0ULL - (unsigned long long)v[i] : (unsigned long long)v[i];
        do {
            *--d = (char)('0' + u % 10);
            u /= 10;
        } while (u);
        if (v[i] < 0)
            *--d = '-';
        PyObject *s;
        if (ascii) {
            s = ascii_join(p, pl, d, end - d);
        } else {
            PyObject *num = PyUnicode_FromStringAndSize(d, end - d);
            s = num ? PyUnicode_Concat(prefix, num) : NULL;
            Py_XDECREF(num);
        }
        if (!s) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, i, s);
    }
    PyBuffer_Release(&b);
    return out;
}

PyDoc_STRVAR(suffixed_doc,
"suffixed(items, suffix) -> list[str]\n\n"
"item + suffix for each str of the list, '' left as it is: a job's gpu_index from\n"
"its hostlist ('n[1-4]' + ':0').");

static PyObject *countsim_suffixed(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *items, *suffix;
    if (!PyArg_ParseTuple(args, "O!U", &PyList_Type, &items, &suffix))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(items), sl;
    const char *sp = PyUnicode_AsUTF8AndSize(suffix, &sl);
    int ascii = PyUnicode_IS_ASCII(suffix);
    PyObject *out = sp ? PyList_New(n) : NULL;
    for (Py_ssize_t i = 0; out && i < n; i++) {
        PyObject *item = PyList_GET_ITEM(items, i), *s = NULL;
        if (!PyUnicode_Check(item))
            PyErr_Format(PyExc_TypeError, "items[%zd]: want a str", i);
        else if (PyUnicode_GET_LENGTH(item) == 0)
            s = Py_NewRef(item);
        else if (ascii && PyUnicode_IS_ASCII(item))
            s = ascii_join(PyUnicode_DATA(item), PyUnicode_GET_LENGTH(item), sp, sl);
        else
            s = PyUnicode_Concat(item, suffix);
        if (!s) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, i, s);
    }
    return out;
}

/* -- the allocator, for a one-shot replay process ----------------------------------- */

PyDoc_STRVAR(keep_heap_doc,
"keep_heap() -> bool\n\n"
"glibc: blocks up to 32 MiB come from the heap instead of fresh mmaps, and freed\n"
"memory stays in the process (mallopt M_MMAP_THRESHOLD, M_TRIM_THRESHOLD). A whole\n"
"replay allocates and frees many arrays of 0.1-10 MB: each fresh mmap is paged\n"
"in (faulted and zeroed) again. False where the allocator is not glibc's.");

static PyObject *countsim_keep_heap(PyObject *self, PyObject *noargs) {
    (void)self;
    (void)noargs;
#if defined(__GLIBC__) && defined(M_MMAP_THRESHOLD) && defined(M_TRIM_THRESHOLD)
    int ok = mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1;
    ok = ok && mallopt(M_TRIM_THRESHOLD, 1 << 30) == 1;
    return PyBool_FromLong(ok);
#else
    Py_RETURN_FALSE;
#endif
}

static PyMethodDef methods[] = {
    {"run", countsim_run, METH_VARARGS, run_doc},
    {"parse_swf", countsim_parse_swf, METH_VARARGS, parse_swf_doc},
    {"make_slots", countsim_make_slots, METH_VARARGS, make_slots_doc},
    {"join_groups", countsim_join_groups, METH_VARARGS, join_groups_doc},
    {"group_dicts", countsim_group_dicts, METH_VARARGS, group_dicts_doc},
    {"csv_rows", countsim_csv_rows, METH_VARARGS, csv_rows_doc},
    {"hostlists", countsim_hostlists, METH_VARARGS, hostlists_doc},
    {"svg_path", countsim_svg_path, METH_VARARGS, svg_path_doc},
    {"occupancy", countsim_occupancy, METH_VARARGS, occupancy_doc},
    {"numbered", countsim_numbered, METH_VARARGS, numbered_doc},
    {"suffixed", countsim_suffixed, METH_VARARGS, suffixed_doc},
    {"keep_heap", countsim_keep_heap, METH_NOARGS, keep_heap_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_countsim",
    "The count driver's event loop in C (see tide.sim.count_driver).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__countsim(void) {
    PyObject *m = PyModule_Create(&module);
    /* occupancy() takes a one-entry gpus array as every entry's (older builds: not) */
    /* csv_rows() takes a write callable (older builds: not) */
    if (m && (PyModule_AddIntConstant(m, "OCCUPANCY_ONE_GPUS", 1) < 0 ||
              PyModule_AddIntConstant(m, "CSV_ROWS_WRITE", 1) < 0)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
