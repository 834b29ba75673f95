/* tide.sched._plan: a fixed-shape backfill reservation (tide.sched.reserve) in C.
 *
 * A transcription, not a new rule: the earliest start and the node that
 * tide.sched.reserve.earliest_py finds for a job of fixed shape,
 * every comparison and floating-point operation as in tide.sched.plan
 * (hold_aware_ready / past_holds, reservation_candidates with _Candidates,
 * fit_at, base_at) and tide.sched.placement (select_by_capacity: _lowest_group,
 * _fewest_leaves, _fill_fixed), so the two agree bit for bit
 * (tests/sched/test_reserve_kernel.py checks it with hypothesis).
 *
 * Why: month1000 plans ~70 such reservations per backfill pass; in numpy each
 * costs ~60 small array operations (~0.25 ms), here one pass over the nodes
 * and the holds.
 *
 * Pure computation over the caller's arrays: no I/O, no state kept.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF /* gcc takes -ffp-contract=off (setup.py) */
#endif

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_CANDIDATES = 64, KEPT_RAW = 4 * MAX_CANDIDATES }; /* as tide.sched.plan */

/* A contiguous array of float64 ('d'), int64 ('q'), int32 ('i') or bool ('?') of n items
 * (n < 0: any length). */
static int get_view(PyObject *obj, Py_buffer *v, const char *name, char kind, Py_ssize_t n) {
    if (PyObject_GetBuffer(obj, v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT))
        return -1;
    const char *f = v->format ? v->format : "B";
    if (*f == '<' || *f == '=' || *f == '@')
        f++;
    int ok;
    if (kind == 'd')
        ok = v->itemsize == 8 && strcmp(f, "d") == 0;
    else if (kind == 'q')
        ok = v->itemsize == 8 && (strcmp(f, "q") == 0 || strcmp(f, "l") == 0);
    else if (kind == 'i')
        ok = v->itemsize == 4 && (strcmp(f, "i") == 0 || strcmp(f, "l") == 0);
    else
        ok = v->itemsize == 1 && strcmp(f, "?") == 0;
    if (!ok || (n >= 0 && v->len / v->itemsize != n)) {
        PyErr_Format(PyExc_ValueError, "%s: want a contiguous %s array of length %zd", name,
                     kind == 'd'   ? "float64"
                     : kind == 'q' ? "int64"
                     : kind == 'i' ? "int32"
                                   : "bool",
                     n);
        PyBuffer_Release(v);
        return -1;
    }
    return 0;
}

typedef struct {
    Py_ssize_t n, k, h, n_leaves;
    const double *ready, *rel_t, *hs, *he;
    const char *eligible, *hw, *skipped; /* skipped: NULL when no hold is skipped */
    const int32_t *free_g, *free_c; /* as Usage keeps them */
    const int64_t *free_m, *rel_g, *rel_c, *rel_m;
    const int64_t *hn, *hg, *hc, *hm, *leaf_of, *weight, *cores_need;
    const int64_t *leaf_start, *leaf_nodes; /* each leaf's nodes in index order */
    const int64_t *levels; /* n_levels x n_leaves: leaf -> switch at each level up */
    Py_ssize_t n_levels;
    double now, duration, horizon, res;
    int64_t gpn, mem;
    int exclusive;
    int64_t need, extra; /* nodes_min, nodes_max - nodes_min */
    int64_t switches;    /* --switches: most leaves, -1 when none */
    double deadline;     /* from then on --switches no longer binds */
    int has_deadline;
} Input;

typedef struct {
    int64_t count;
    Py_ssize_t leaf;
} LeafCount;

typedef struct {
    double *r;        /* hold-aware ready time per node */
    double *raw, *rr; /* candidate times: raw, rounded */
    Py_ssize_t *first, *list; /* whole holds grouped by node */
    int64_t *stamp_blk, *stamp_part, *pg, *pc, *pm, *per_leaf;
    int64_t *per_switch, *quota; /* per switch of a level, per leaf */
    Py_ssize_t *group;
    LeafCount *order;
    char *ok;
    Py_ssize_t *picked, *out; /* one leaf's fitting nodes; the nodes chosen */
} Scratch;

/* plan.hold_aware_ready: each eligible node's ready time pushed past the
 * whole-node holds its window would overlap (the least fixed point of
 * past_holds' pushes: a push never passes the answer). */
static void hold_aware(const Input *in, Scratch *s) {
    Py_ssize_t n = in->n;
    memcpy(s->r, in->ready, (size_t)n * sizeof(double));
    if (!in->h)
        return;
    memset(s->first, 0, (size_t)(n + 1) * sizeof(Py_ssize_t));
    for (Py_ssize_t j = 0; j < in->h; j++)
        if (in->hw[j] && !(in->skipped && in->skipped[j]))
            s->first[in->hn[j] + 1]++;
    for (Py_ssize_t i = 0; i < n; i++)
        s->first[i + 1] += s->first[i];
    Py_ssize_t *fill = s->picked; /* n + 1 free slots until the pick */
    memcpy(fill, s->first, (size_t)(n + 1) * sizeof(Py_ssize_t));
    for (Py_ssize_t j = 0; j < in->h; j++)
        if (in->hw[j] && !(in->skipped && in->skipped[j]))
            s->list[fill[in->hn[j]]++] = j;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!in->eligible[i] || s->first[i] == s->first[i + 1])
            continue;
        double x = s->r[i];
        int pushed = 1;
        while (pushed) {
            pushed = 0;
            for (Py_ssize_t q = s->first[i]; q < s->first[i + 1]; q++) {
                Py_ssize_t j = s->list[q];
                double lo = in->hs[j] - in->duration, hi = in->he[j];
                if (lo < x && x < hi) {
                    x = hi;
                    pushed = 1;
                }
            }
        }
        s->r[i] = x;
    }
}

/* plan._round_up of one time */
static double round_up(const Input *in, double t) {
    if (in->res <= 1 || t <= in->now)
        return t;
    return in->now + ceil((t - in->now) / in->res) * in->res;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* plan.base_at for one node: free now plus what running jobs released by t */
static void base_at(const Input *in, Py_ssize_t i, double t, int64_t *g, int64_t *c, int64_t *m) {
    *g = in->free_g[i];
    *c = in->free_c[i];
    *m = in->free_m[i];
    if (t <= in->now)
        return;
    Py_ssize_t idx = 0;
    for (Py_ssize_t q = 0; q < in->k; q++)
        idx += in->rel_t[i * in->k + q] <= t;
    if (idx > 0) {
        *g += in->rel_g[i * in->k + idx - 1];
        *c += in->rel_c[i * in->k + idx - 1];
        *m += in->rel_m[i * in->k + idx - 1];
    }
}

/* plan.fit_at: s->ok and the fitting nodes per leaf; returns how many nodes
 * fit. `stamp` tells this test's marks from earlier ones. */
static Py_ssize_t fit_at(const Input *in, Scratch *s, double t, int64_t stamp) {
    double tend = t + in->duration;
    for (Py_ssize_t j = 0; j < in->h; j++) {
        if (in->skipped && in->skipped[j])
            continue;
        if (!(in->hs[j] < tend && in->he[j] > t))
            continue;
        int64_t node = in->hn[j];
        if (in->exclusive || in->hw[j]) {
            s->stamp_blk[node] = stamp;
        } else {
            if (s->stamp_part[node] != stamp) {
                s->stamp_part[node] = stamp;
                s->pg[node] = s->pc[node] = s->pm[node] = 0;
            }
            s->pg[node] += in->hg[j];
            s->pc[node] += in->hc[j];
            s->pm[node] += in->hm[j];
        }
    }
    Py_ssize_t count = 0;
    memset(s->per_leaf, 0, (size_t)in->n_leaves * sizeof(int64_t));
    for (Py_ssize_t i = 0; i < in->n; i++) {
        char ok = in->eligible[i] && s->r[i] <= t && s->stamp_blk[i] != stamp;
        if (ok && s->stamp_part[i] == stamp) {
            int64_t g, c, m;
            base_at(in, i, t, &g, &c, &m);
            ok = (g - s->pg[i] >= in->gpn) && (c - s->pc[i] >= in->cores_need[i]) &&
                 (m - s->pm[i] >= in->mem);
        }
        s->ok[i] = ok;
        count += ok;
        s->per_leaf[in->leaf_of[i]] += ok;
    }
    return count;
}

/* _fill_fixed's order inside a leaf: Weight, then later-ready first, then index */
static int before(const Input *in, const Scratch *s, Py_ssize_t a, Py_ssize_t b) {
    if (in->weight[a] != in->weight[b])
        return in->weight[a] < in->weight[b];
    double ka = -s->r[a], kb = -s->r[b];
    if (ka != kb)
        return ka < kb;
    return a < b;
}

/* placement._lowest_group: the leaves (in index order) under the lowest,
 * best-fitting switch that can hold `need` nodes; returns how many. */
static Py_ssize_t lowest_group(const Input *in, Scratch *s) {
    Py_ssize_t nl = in->n_leaves, best = -1;
    const int64_t *per_leaf = s->per_leaf;
    for (Py_ssize_t l = 0; l < nl; l++)
        if (per_leaf[l] >= in->need && (best < 0 || per_leaf[l] < per_leaf[best]))
            best = l;
    if (best >= 0) {
        s->group[0] = best;
        return 1;
    }
    for (Py_ssize_t k = 0; k < in->n_levels; k++) {
        const int64_t *level = in->levels + k * nl;
        memset(s->per_switch, 0, (size_t)nl * sizeof(int64_t));
        for (Py_ssize_t l = 0; l < nl; l++)
            s->per_switch[level[l]] += per_leaf[l];
        for (Py_ssize_t w = 0; w < nl; w++)
            if (s->per_switch[w] >= in->need && (best < 0 || s->per_switch[w] < s->per_switch[best]))
                best = w;
        if (best >= 0) {
            Py_ssize_t g = 0;
            for (Py_ssize_t l = 0; l < nl; l++)
                if (level[l] == best)
                    s->group[g++] = l;
            return g;
        }
    }
    for (Py_ssize_t l = 0; l < nl; l++)
        s->group[l] = l;
    return nl;
}

/* most fitting nodes first, then leaf index (np.argsort(-counts, stable) of a
 * group in index order) */
static int by_count(const void *a, const void *b) {
    const LeafCount *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return (x->leaf > y->leaf) - (x->leaf < y->leaf);
}

/* placement._fewest_leaves over the group: fullest leaves first, the
 * remainder on the leaf that fits it best, in at most `cap` leaves (< 0: any).
 * Sets s->quota; returns how many leaves, 0: no plan. */
static Py_ssize_t fewest_leaves(const Input *in, Scratch *s, Py_ssize_t g, int64_t cap) {
    const int64_t *per_leaf = s->per_leaf;
    for (Py_ssize_t q = 0; q < g; q++) {
        s->order[q].count = per_leaf[s->group[q]];
        s->order[q].leaf = s->group[q];
    }
    qsort(s->order, (size_t)g, sizeof(LeafCount), by_count);
    int64_t total = 0;
    Py_ssize_t chosen = 0;
    for (; chosen < g; chosen++) {
        int64_t v = s->order[chosen].count;
        if (v <= 0 || total + v >= in->need)
            break;
        total += v;
    }
    int64_t remainder = in->need - total;
    Py_ssize_t last = -1;
    for (Py_ssize_t q = chosen; q < g; q++) {
        Py_ssize_t leaf = s->order[q].leaf;
        if (per_leaf[leaf] >= remainder &&
            (last < 0 || per_leaf[leaf] < per_leaf[last] ||
             (per_leaf[leaf] == per_leaf[last] && leaf < last)))
            last = leaf;
    }
    if (last < 0 || (cap >= 0 && chosen + 1 > cap))
        return 0;
    memset(s->quota, 0, (size_t)in->n_leaves * sizeof(int64_t));
    for (Py_ssize_t q = 0; q < chosen; q++)
        s->quota[s->order[q].leaf] = s->order[q].count;
    s->quota[last] = remainder;
    return chosen + 1;
}

/* placement._choose_leaves: the lowest switch's plan when it keeps within
 * max_leaves (< 0: no limit), else the fewest leaves anywhere within it. */
static int choose_leaves(const Input *in, Scratch *s, int64_t max_leaves) {
    Py_ssize_t planned = fewest_leaves(in, s, lowest_group(in, s), -1);
    if (max_leaves < 0)
        return planned > 0;
    if (planned > 0 && planned <= max_leaves)
        return 1;
    for (Py_ssize_t l = 0; l < in->n_leaves; l++)
        s->group[l] = l;
    return fewest_leaves(in, s, in->n_leaves, max_leaves) > 0;
}

/* select_by_capacity on the fitting nodes (s->ok, s->per_leaf): the leaves
 * (for one node: the leaf with the fewest fitting nodes, lowest index on
 * ties, said in one step), then _fill_fixed: leaves in index order, each
 * leaf's quota (and what is left of nodes_max) of its nodes in order.
 * Returns how many nodes it chose into s->out; 0: none. */
static Py_ssize_t pick(const Input *in, Scratch *s, int64_t max_leaves) {
    if (in->need == 1 && (max_leaves < 0 || max_leaves >= 1)) {
        Py_ssize_t best = -1;
        for (Py_ssize_t l = 0; l < in->n_leaves; l++)
            if (s->per_leaf[l] >= 1 && (best < 0 || s->per_leaf[l] < s->per_leaf[best]))
                best = l;
        memset(s->quota, 0, (size_t)in->n_leaves * sizeof(int64_t));
        s->quota[best] = 1;
    } else if (!choose_leaves(in, s, max_leaves)) {
        return 0;
    }
    int64_t extra = in->extra;
    Py_ssize_t out = 0;
    for (Py_ssize_t leaf = 0; leaf < in->n_leaves; leaf++) {
        int64_t quota = s->quota[leaf];
        if (quota <= 0)
            continue;
        Py_ssize_t got = 0;
        for (int64_t q = in->leaf_start[leaf]; q < in->leaf_start[leaf + 1]; q++)
            if (s->ok[in->leaf_nodes[q]])
                s->picked[got++] = in->leaf_nodes[q];
        Py_ssize_t take = got < quota + extra ? got : (Py_ssize_t)(quota + extra);
        extra -= take - quota;
        for (Py_ssize_t a = 0; a < take; a++) { /* selection: `take` is small */
            Py_ssize_t m = a;
            for (Py_ssize_t b = a + 1; b < got; b++)
                if (before(in, s, s->picked[b], s->picked[m]))
                    m = b;
            Py_ssize_t tmp = s->picked[a];
            s->picked[a] = s->picked[m];
            s->picked[m] = tmp;
            s->out[out++] = s->picked[a];
        }
    }
    return out;
}

/* The k-th smallest (0-based) of v[0..n), reordering v (quickselect). */
static double kth_smallest(double *v, Py_ssize_t n, Py_ssize_t k) {
    Py_ssize_t lo = 0, hi = n - 1;
    while (lo < hi) {
        double pivot = v[lo + (hi - lo) / 2];
        Py_ssize_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i <= j) {
                double tmp = v[i];
                v[i] = v[j];
                v[j] = tmp;
                i++;
                j--;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return v[k];
    }
    return v[k];
}

/* Nodes fit at t (fit_at) and select_by_capacity places the job there: the
 * count of nodes chosen into s->out, 0 when not. */
static Py_ssize_t try_at(const Input *in, Scratch *s, double t, int64_t stamp) {
    if (fit_at(in, s, t, stamp) < in->need)
        return 0;
    int64_t max_leaves = in->has_deadline && t >= in->deadline ? -1 : in->switches;
    return pick(in, s, max_leaves); /* JobContext.max_leaves(t) */
}

/* The earliest candidate time where a node fits: sets *t, returns the count of
 * nodes picked (0: none within MAX_CANDIDATES times), -1 on no memory. */
static Py_ssize_t earliest(const Input *in, Scratch *s, double *t_out) {
    hold_aware(in, s);
    double bound = INFINITY;
    Py_ssize_t count = 0;
    for (Py_ssize_t i = 0; i < in->n; i++)
        if (in->eligible[i]) {
            s->raw[count++] = s->r[i];
            if (s->r[i] < bound)
                bound = s->r[i];
        }
    if (count < in->need)
        return 0;
    if (in->need > 1) /* the need-th earliest eligible node (np.partition) */
        bound = kth_smallest(s->raw, count, in->need - 1);
    /* the raw times are ready times >= bound and hold ends > bound, up to the
     * horizon: none past it, else bound is the smallest, and rounding is
     * monotone, so the first candidate is bound rounded (most jobs fit there) */
    if (!(bound <= in->horizon))
        return 0;
    double t = round_up(in, bound);
    Py_ssize_t picked = try_at(in, s, t, 1);
    if (picked) {
        *t_out = t;
        return picked;
    }
    Py_ssize_t nraw = 0;
    for (Py_ssize_t i = 0; i < in->n; i++)
        if (in->eligible[i] && s->r[i] >= bound && s->r[i] <= in->horizon)
            s->raw[nraw++] = s->r[i];
    for (Py_ssize_t j = 0; j < in->h; j++) /* amount holds end: capacity comes back */
        if (in->he[j] > bound && in->he[j] <= in->horizon)
            s->raw[nraw++] = in->he[j];
    for (Py_ssize_t q = 0; q < nraw; q++)
        s->rr[q] = round_up(in, s->raw[q]);
    /* plan._times keeps the KEPT_RAW smallest raw times: the candidates are the
     * distinct rounded times up to the rounded KEPT_RAW-th smallest */
    double cap = INFINITY;
    if (nraw > KEPT_RAW) {
        double *tmp = malloc((size_t)nraw * sizeof(double));
        if (!tmp)
            return -1;
        memcpy(tmp, s->raw, (size_t)nraw * sizeof(double));
        qsort(tmp, (size_t)nraw, sizeof(double), cmp_double);
        cap = round_up(in, tmp[KEPT_RAW - 1]);
        free(tmp);
    }
    double prev = t;
    for (int k = 1; k < MAX_CANDIDATES; k++) {
        int found = 0;
        for (Py_ssize_t q = 0; q < nraw; q++)
            if (s->rr[q] > prev && (!found || s->rr[q] < t)) {
                t = s->rr[q];
                found = 1;
            }
        if (!found || t > cap)
            return 0;
        picked = try_at(in, s, t, (int64_t)k + 1);
        if (picked) {
            *t_out = t;
            return picked;
        }
        prev = t;
    }
    return 0;
}

static void scratch_free(Scratch *s) {
    free(s->r);
    free(s->raw);
    free(s->rr);
    free(s->first);
    free(s->list);
    free(s->stamp_blk);
    free(s->stamp_part);
    free(s->pg);
    free(s->pc);
    free(s->pm);
    free(s->per_leaf);
    free(s->per_switch);
    free(s->quota);
    free(s->group);
    free(s->order);
    free(s->out);
    free(s->ok);
    free(s->picked);
}

static int scratch_alloc(Scratch *s, Py_ssize_t n, Py_ssize_t h, Py_ssize_t n_leaves) {
    memset(s, 0, sizeof(*s));
    size_t nn = (size_t)n + 1, hh = (size_t)h + 1;
    s->r = malloc(nn * sizeof(double));
    s->raw = malloc((nn + hh) * sizeof(double));
    s->rr = malloc((nn + hh) * sizeof(double));
    s->first = malloc((nn + 1) * sizeof(Py_ssize_t));
    s->list = malloc(hh * sizeof(Py_ssize_t));
    s->stamp_blk = calloc(nn, sizeof(int64_t));
    s->stamp_part = calloc(nn, sizeof(int64_t));
    s->pg = malloc(nn * sizeof(int64_t));
    s->pc = malloc(nn * sizeof(int64_t));
    s->pm = malloc(nn * sizeof(int64_t));
    size_t nl = (size_t)n_leaves + 1;
    s->per_leaf = malloc(nl * sizeof(int64_t));
    s->per_switch = malloc(nl * sizeof(int64_t));
    s->quota = malloc(nl * sizeof(int64_t));
    s->group = malloc(nl * sizeof(Py_ssize_t));
    s->order = malloc(nl * sizeof(LeafCount));
    s->out = malloc(nn * sizeof(Py_ssize_t));
    s->ok = malloc(nn);
    s->picked = malloc((nn + 1) * sizeof(Py_ssize_t));
    return s->r && s->raw && s->rr && s->first && s->list && s->stamp_blk && s->stamp_part &&
                   s->pg && s->pc && s->pm && s->per_leaf && s->per_switch && s->quota && s->group &&
                   s->order && s->out && s->ok && s->picked
               ? 0
               : -1;
}

PyDoc_STRVAR(earliest_doc,
             "earliest(ready, eligible, free_g, free_c, free_m, rel_t, rel_g, rel_c, rel_m,\n"
             "         hn, hs, he, hg, hc, hm, hw, skipped, leaf_of, weight, cores_need,\n"
             "         leaf_start, leaf_nodes, levels, n_leaves, n_levels,\n"
             "         now, duration, horizon, res, gpn, mem, exclusive, need, extra,\n"
             "         switches, deadline, has_deadline)\n"
             "-> (t, nodes) or None: tide.sched.reserve.earliest_py for a fixed shape.");

static PyObject *plan_earliest(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[23];
    Input in;
    memset(&in, 0, sizeof(in));
    long long gpn, mem, need, extra, switches;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOOOOOOOOOOOOnnddddLLpLLLdp", &o[0], &o[1], &o[2],
                          &o[3], &o[4], &o[5], &o[6], &o[7], &o[8], &o[9], &o[10], &o[11],
                          &o[12], &o[13], &o[14], &o[15], &o[16], &o[17], &o[18], &o[19],
                          &o[20], &o[21], &o[22], &in.n_leaves, &in.n_levels, &in.now,
                          &in.duration, &in.horizon, &in.res, &gpn, &mem, &in.exclusive, &need,
                          &extra, &switches, &in.deadline, &in.has_deadline))
        return NULL;
    if (need < 1 || extra < 0 || in.n_leaves < 1 || in.n_levels < 0) {
        PyErr_SetString(PyExc_ValueError, "want need >= 1, extra >= 0, a leaf, levels >= 0");
        return NULL;
    }
    in.gpn = gpn;
    in.mem = mem;
    in.need = need;
    in.extra = extra;
    in.switches = switches < 0 ? -1 : switches;
    Py_buffer b[23];
    int got = 0;
    PyObject *out = NULL;
    Scratch s;
    double t = 0;
    /* name, kind, length: 'n' nodes, 'k' nodes x releases, 'h' holds */
    static const char *names[23] = {"ready", "eligible", "free_g", "free_c", "free_m",
                                    "rel_t", "rel_g", "rel_c", "rel_m", "hn",
                                    "hs", "he", "hg", "hc", "hm",
                                    "hw", "skipped", "leaf_of", "weight", "cores_need",
                                    "leaf_start", "leaf_nodes", "levels"};
    static const char kinds[] = "d?iiqdqqqqddqqq??qqqqqq";
    static const char lens[] = "nnnnnkkkkhhhhhhhhnnnlnv"; /* l: leaves + 1, v: levels x leaves */
    Py_ssize_t n = -1, h = -1, nk = -1;
    for (; got < 23; got++) {
        if (got == 16 && o[got] == Py_None)
            continue;
        Py_ssize_t want = lens[got] == 'n'   ? n
                          : lens[got] == 'h' ? h
                          : lens[got] == 'l' ? in.n_leaves + 1
                          : lens[got] == 'v' ? in.n_levels * in.n_leaves
                                             : nk;
        if (get_view(o[got], &b[got], names[got], kinds[got], want))
            goto done;
        Py_ssize_t len = b[got].len / b[got].itemsize;
        if (lens[got] == 'n' && n < 0)
            n = len;
        if (lens[got] == 'h' && h < 0)
            h = len;
        if (lens[got] == 'k' && nk < 0)
            nk = len;
    }
    in.n = n;
    in.h = h;
    in.k = n > 0 ? nk / n : 0;
    if (n > 0 && in.k * n != nk) {
        PyErr_SetString(PyExc_ValueError, "rel_t: want nodes x releases items");
        goto done;
    }
    in.ready = b[0].buf;
    in.eligible = b[1].buf;
    in.free_g = b[2].buf;
    in.free_c = b[3].buf;
    in.free_m = b[4].buf;
    in.rel_t = b[5].buf;
    in.rel_g = b[6].buf;
    in.rel_c = b[7].buf;
    in.rel_m = b[8].buf;
    in.hn = b[9].buf;
    in.hs = b[10].buf;
    in.he = b[11].buf;
    in.hg = b[12].buf;
    in.hc = b[13].buf;
    in.hm = b[14].buf;
    in.hw = b[15].buf;
    in.skipped = o[16] == Py_None ? NULL : b[16].buf;
    in.leaf_of = b[17].buf;
    in.weight = b[18].buf;
    in.cores_need = b[19].buf;
    in.leaf_start = b[20].buf;
    in.leaf_nodes = b[21].buf;
    in.levels = b[22].buf;
    for (Py_ssize_t q = 0; q < in.n_levels * in.n_leaves; q++)
        if (in.levels[q] < 0 || in.levels[q] >= in.n_leaves) {
            PyErr_SetString(PyExc_ValueError, "levels: a switch out of range");
            goto done;
        }
    for (Py_ssize_t l = 0; l <= in.n_leaves; l++)
        if (in.leaf_start[l] < 0 || in.leaf_start[l] > n ||
            (l > 0 && in.leaf_start[l] < in.leaf_start[l - 1])) {
            PyErr_SetString(PyExc_ValueError, "leaf_start: want bounds into leaf_nodes");
            goto done;
        }
    for (Py_ssize_t i = 0; i < n; i++)
        if (in.leaf_nodes[i] < 0 || in.leaf_nodes[i] >= n) {
            PyErr_SetString(PyExc_ValueError, "leaf_nodes: a node out of range");
            goto done;
        }
    for (Py_ssize_t i = 0; i < n; i++)
        if (in.leaf_of[i] < 0 || in.leaf_of[i] >= in.n_leaves) {
            PyErr_SetString(PyExc_ValueError, "leaf_of: a leaf out of range");
            goto done;
        }
    for (Py_ssize_t j = 0; j < h; j++)
        if (in.hn[j] < 0 || in.hn[j] >= n) {
            PyErr_SetString(PyExc_ValueError, "hn: a node out of range");
            goto done;
        }
    if (scratch_alloc(&s, n, h, in.n_leaves)) {
        scratch_free(&s);
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t picked = earliest(&in, &s, &t);
    if (picked < 0) {
        PyErr_NoMemory();
    } else if (picked == 0) {
        out = Py_NewRef(Py_None);
    } else {
        PyObject *nodes = PyTuple_New(picked);
        for (Py_ssize_t a = 0; nodes && a < picked; a++) {
            PyObject *v = PyLong_FromSsize_t(s.out[a]);
            if (!v) {
                Py_CLEAR(nodes);
                break;
            }
            PyTuple_SET_ITEM(nodes, a, v);
        }
        if (nodes)
            out = Py_BuildValue("(dN)", t, nodes);
    }
    scratch_free(&s);
done:
    for (int q = 0; q < got; q++)
        if (!(q == 16 && o[q] == Py_None))
            PyBuffer_Release(&b[q]);
    return out;
}

static PyMethodDef methods[] = {
    {"earliest", plan_earliest, METH_VARARGS, earliest_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_plan", "A fixed-shape backfill reservation in C (tide.sched.reserve).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__plan(void) { return PyModule_Create(&module); }
