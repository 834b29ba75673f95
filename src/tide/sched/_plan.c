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
 * Pure computation over the caller's arrays: no I/O. A Planner holds one
 * backfill pass's plan (the cluster's node columns, the plan's free amounts
 * and release table, the hold columns) so that each reservation passes only
 * what is its own: the arrays are bound once a pass, not marshalled per job.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

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
static int get_view_flags(PyObject *obj, Py_buffer *v, const char *name, char kind, Py_ssize_t n,
                          int flags) {
    if (PyObject_GetBuffer(obj, v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | flags))
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

static int get_view(PyObject *obj, Py_buffer *v, const char *name, char kind, Py_ssize_t n) {
    return get_view_flags(obj, v, name, kind, n, 0);
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
    const int64_t *gpus_total, *cores_total; /* per node: what it has (ix.gpus, ix.cores) */
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
    Py_ssize_t *first, *list; /* whole holds chained by node: head per node, next per hold */
    int64_t *stamp_blk, *stamp_part, *pg, *pc, *pm, *per_leaf;
    int64_t *per_switch, *quota; /* per switch of a level, per leaf */
    Py_ssize_t *group;
    LeafCount *order;
    char *ok;
    Py_ssize_t *picked, *out; /* one leaf's fitting nodes; the nodes chosen */
    int64_t stamp; /* the last fit test's mark: a Planner's scratch serves many calls */
    int64_t *hstamp, hold_stamp; /* hold_aware's marks: which nodes' chains are this call's */
    Py_ssize_t *touched;         /* the nodes with whole holds, this call */
} Scratch;

/* plan._node_ready for the eligible nodes (the others are never read): when
 * running jobs will have released enough for one node's share, from the
 * release table (times and cumulative amounts per node). */
static void node_ready(const Input *in, double *out) {
    for (Py_ssize_t i = 0; i < in->n; i++) {
        if (!in->eligible[i])
            continue;
        const double *rt = in->rel_t + i * in->k;
        double r = in->now;
        if (in->exclusive) {
            if (in->free_g[i] < in->gpus_total[i] || in->free_c[i] < in->cores_total[i]) {
                double last = -INFINITY; /* the last release: the node is idle then */
                for (Py_ssize_t q = 0; q < in->k; q++)
                    if (isfinite(rt[q]) && rt[q] > last)
                        last = rt[q];
                r = last > r ? last : r;
            }
            out[i] = r;
            continue;
        }
        const int64_t *cums[3] = {in->rel_g + i * in->k, in->rel_c + i * in->k,
                                  in->rel_m + i * in->k};
        int64_t frees[3] = {in->free_g[i], in->free_c[i], in->free_m[i]};
        int64_t needs[3] = {in->gpn, in->cores_need[i], in->mem};
        for (int a = 0; a < 3; a++) {
            if (frees[a] >= needs[a])
                continue;
            double t = INFINITY; /* never enough: never ready */
            for (Py_ssize_t q = 0; q < in->k; q++)
                if (frees[a] + cums[a][q] >= needs[a]) {
                    t = rt[q];
                    break;
                }
            r = t > r ? t : r;
        }
        out[i] = r;
    }
}

/* plan.hold_aware_ready: each eligible node's ready time pushed past the
 * whole-node holds its window would overlap (the least fixed point of
 * past_holds' pushes: a push never passes the answer, so the order the
 * holds are tried in does not matter). O(holds): each node's whole holds
 * are chained (s->first: the chain's head, s->list: the next hold), marked
 * valid for this call by s->hstamp, and only the nodes with one are visited. */
static void hold_aware(const Input *in, Scratch *s) {
    memcpy(s->r, in->ready, (size_t)in->n * sizeof(double));
    if (!in->h)
        return;
    int64_t stamp = ++s->hold_stamp;
    Py_ssize_t touched = 0;
    for (Py_ssize_t j = 0; j < in->h; j++) {
        if (!in->hw[j] || (in->skipped && in->skipped[j]))
            continue;
        int64_t node = in->hn[j];
        if (s->hstamp[node] != stamp) {
            s->hstamp[node] = stamp;
            s->first[node] = -1;
            s->touched[touched++] = node;
        }
        s->list[j] = s->first[node];
        s->first[node] = j;
    }
    for (Py_ssize_t q = 0; q < touched; q++) {
        Py_ssize_t i = s->touched[q];
        if (!in->eligible[i])
            continue;
        double x = s->r[i];
        int pushed = 1;
        while (pushed) {
            pushed = 0;
            for (Py_ssize_t j = s->first[i]; j >= 0; j = s->list[j]) {
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
 * fit. `stamp` tells this test's marks from earlier ones (a new one each test). */
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
    Py_ssize_t picked = try_at(in, s, t, ++s->stamp);
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
        picked = try_at(in, s, t, ++s->stamp);
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
    free(s->hstamp);
    free(s->touched);
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
    s->hstamp = calloc(nn, sizeof(int64_t));
    s->touched = malloc(nn * sizeof(Py_ssize_t));
    return s->hstamp && s->touched && s->r && s->raw && s->rr && s->first && s->list &&
           s->stamp_blk && s->stamp_part &&
                   s->pg && s->pc && s->pm && s->per_leaf && s->per_switch && s->quota && s->group &&
                   s->order && s->out && s->ok && s->picked
               ? 0
               : -1;
}

/* Whether the job could fit at now in the start test's terms
 * (passes.try_start_now): nodes ready now by the releases alone (not pushed
 * past whole holds as hold_aware does, whose `start - duration < now` may
 * round otherwise than free_at's `start < now + duration`), then fit_at's own
 * hold test (free_at's form) and the placement. Every node the start test
 * could use passes, so 0 means it cannot start now. Overwrites s->r, s->out. */
static int fits_now(const Input *in, Scratch *s) {
    Py_ssize_t count = 0;
    for (Py_ssize_t i = 0; i < in->n; i++)
        count += in->eligible[i] && in->ready[i] <= in->now;
    if (count < in->need)
        return 0;
    memcpy(s->r, in->ready, (size_t)in->n * sizeof(double));
    return try_at(in, s, in->now, ++s->stamp) > 0;
}

/* --- the Planner: one pass's plan, bound once -------------------------------- */

enum { N_NODE_COLS = 7, N_PLAN_COLS = 7, N_HOLD_COLS = 7, N_READY = 8 };

/* node_ready memoised per share (as plan.node_ready): the plan's releases only
 * change when it is bound again */
typedef struct {
    int used;
    int64_t gpn, cpus, mem;
    int exclusive;
    double *ready; /* n, or NULL: not computed */
} ReadyMemo;

typedef struct {
    PyObject_HEAD
    Input in; /* the bound fields; each call adds its own */
    Py_buffer node_b[N_NODE_COLS], plan_b[N_PLAN_COLS], hold_b[N_HOLD_COLS];
    int node_got, plan_got, hold_got; /* how many of each are held */
    Py_ssize_t hold_cap;              /* rows in the bound hold columns */
    int64_t *w_hn, *w_hg, *w_hc, *w_hm; /* the same columns, to write holds into */
    double *w_hs, *w_he;
    char *w_hw;
    Scratch s;
    Py_ssize_t scratch_h; /* holds the scratch has room for; -1: none */
    ReadyMemo memo[N_READY];
    int memo_next;
    int fits_now; /* the last earliest call's: see its doc */
} Planner;

static void release_all(Py_buffer *b, int *got) {
    for (int q = 0; q < *got; q++)
        PyBuffer_Release(&b[q]);
    *got = 0;
}

static void memo_clear(Planner *p) {
    for (int q = 0; q < N_READY; q++) {
        free(p->memo[q].ready);
        p->memo[q].ready = NULL;
        p->memo[q].used = 0;
    }
    p->memo_next = 0;
}

static void planner_dealloc(Planner *p) {
    release_all(p->node_b, &p->node_got);
    release_all(p->plan_b, &p->plan_got);
    release_all(p->hold_b, &p->hold_got);
    if (p->scratch_h >= 0)
        scratch_free(&p->s);
    memo_clear(p);
    Py_TYPE(p)->tp_free((PyObject *)p);
}

/* Views of `objs` into `b` (kinds and lengths as get_view), counting them in *got;
 * on failure releases those taken. */
static int take_views(PyObject **objs, Py_buffer *b, int *got, int count, const char **names,
                      const char *kinds, const Py_ssize_t *lens, int flags) {
    for (*got = 0; *got < count; (*got)++)
        if (get_view_flags(objs[*got], &b[*got], names[*got], kinds[*got], lens[*got], flags)) {
            release_all(b, got);
            return -1;
        }
    return 0;
}

static int planner_init(Planner *p, PyObject *args, PyObject *kwds) {
    (void)kwds;
    PyObject *o[N_NODE_COLS];
    Py_ssize_t n_leaves, n_levels;
    release_all(p->node_b, &p->node_got);
    release_all(p->plan_b, &p->plan_got);
    release_all(p->hold_b, &p->hold_got);
    if (p->scratch_h >= 0)
        scratch_free(&p->s);
    p->scratch_h = -1;
    memo_clear(p);
    if (!PyArg_ParseTuple(args, "OOOOOOOnn", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6],
                          &n_leaves, &n_levels))
        return -1;
    if (n_leaves < 1 || n_levels < 0) {
        PyErr_SetString(PyExc_ValueError, "want a leaf, levels >= 0");
        return -1;
    }
    Py_buffer probe;
    if (get_view(o[0], &probe, "leaf_of", 'q', -1))
        return -1;
    Py_ssize_t n = probe.len / probe.itemsize;
    PyBuffer_Release(&probe);
    static const char *names[N_NODE_COLS] = {"leaf_of", "weight", "leaf_start", "leaf_nodes",
                                             "levels", "gpus", "cores"};
    Py_ssize_t lens[N_NODE_COLS] = {n, n, n_leaves + 1, n, n_levels * n_leaves, n, n};
    if (take_views(o, p->node_b, &p->node_got, N_NODE_COLS, names, "qqqqqqq", lens, 0))
        return -1;
    Input *in = &p->in;
    in->n = n;
    in->n_leaves = n_leaves;
    in->n_levels = n_levels;
    in->leaf_of = p->node_b[0].buf;
    in->weight = p->node_b[1].buf;
    in->leaf_start = p->node_b[2].buf;
    in->leaf_nodes = p->node_b[3].buf;
    in->levels = p->node_b[4].buf;
    in->gpus_total = p->node_b[5].buf;
    in->cores_total = p->node_b[6].buf;
    const char *bad = NULL;
    for (Py_ssize_t q = 0; q < n_levels * n_leaves; q++)
        if (in->levels[q] < 0 || in->levels[q] >= n_leaves)
            bad = "levels: a switch out of range";
    for (Py_ssize_t l = 0; l <= n_leaves; l++)
        if (in->leaf_start[l] < 0 || in->leaf_start[l] > n ||
            (l > 0 && in->leaf_start[l] < in->leaf_start[l - 1]))
            bad = "leaf_start: want bounds into leaf_nodes";
    for (Py_ssize_t i = 0; i < n; i++)
        if (in->leaf_nodes[i] < 0 || in->leaf_nodes[i] >= n || in->leaf_of[i] < 0 ||
            in->leaf_of[i] >= n_leaves)
            bad = "leaf_nodes, leaf_of: a node or leaf out of range";
    if (bad) {
        PyErr_SetString(PyExc_ValueError, bad);
        release_all(p->node_b, &p->node_got);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(bind_plan_doc,
             "bind_plan(free_g, free_c, free_m, rel_t, rel_g, rel_c, rel_m, now): the plan's\n"
             "free amounts (int32, int32, int64) and release table (nodes x releases: float64\n"
             "times, int64 cumulative amounts). Bind again after any of them changes.");

static PyObject *planner_bind_plan(Planner *p, PyObject *args) {
    PyObject *o[N_PLAN_COLS];
    double now;
    if (!p->node_got) {
        PyErr_SetString(PyExc_RuntimeError, "Planner: not initialised");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OOOOOOOd", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6],
                          &now))
        return NULL;
    release_all(p->plan_b, &p->plan_got);
    memo_clear(p);
    Py_ssize_t n = p->in.n;
    Py_buffer probe;
    if (get_view(o[3], &probe, "rel_t", 'd', -1))
        return NULL;
    Py_ssize_t nk = probe.len / probe.itemsize;
    PyBuffer_Release(&probe);
    Py_ssize_t k = n > 0 ? nk / n : 0;
    if (n > 0 && (k < 1 || k * n != nk)) {
        PyErr_SetString(PyExc_ValueError, "rel_t: want nodes x releases items");
        return NULL;
    }
    static const char *names[N_PLAN_COLS] = {"free_g", "free_c", "free_m", "rel_t",
                                             "rel_g",  "rel_c",  "rel_m"};
    Py_ssize_t lens[N_PLAN_COLS] = {n, n, n, nk, nk, nk, nk};
    if (take_views(o, p->plan_b, &p->plan_got, N_PLAN_COLS, names, "iiqdqqq", lens, 0))
        return NULL;
    Input *in = &p->in;
    in->k = k;
    in->now = now;
    in->free_g = p->plan_b[0].buf;
    in->free_c = p->plan_b[1].buf;
    in->free_m = p->plan_b[2].buf;
    in->rel_t = p->plan_b[3].buf;
    in->rel_g = p->plan_b[4].buf;
    in->rel_c = p->plan_b[5].buf;
    in->rel_m = p->plan_b[6].buf;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(bind_holds_doc,
             "bind_holds(hn, hs, he, hg, hc, hm, hw): the hold columns (node, start, end,\n"
             "GPUs, cores, memory: int64 or float64; whole: bool), all of one length, of\n"
             "which each call reads the first h rows (and may write the next ones: earliest's\n"
             "hold_from). Bind again when they are replaced.");

static PyObject *planner_bind_holds(Planner *p, PyObject *args) {
    PyObject *o[N_HOLD_COLS];
    if (!PyArg_ParseTuple(args, "OOOOOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6]))
        return NULL;
    release_all(p->hold_b, &p->hold_got);
    Py_buffer probe;
    if (get_view(o[0], &probe, "hn", 'q', -1))
        return NULL;
    Py_ssize_t cap = probe.len / probe.itemsize;
    PyBuffer_Release(&probe);
    static const char *names[N_HOLD_COLS] = {"hn", "hs", "he", "hg", "hc", "hm", "hw"};
    Py_ssize_t lens[N_HOLD_COLS] = {cap, cap, cap, cap, cap, cap, cap};
    if (take_views(o, p->hold_b, &p->hold_got, N_HOLD_COLS, names, "qddqqq?", lens,
                   PyBUF_WRITABLE)) /* earliest writes a reservation's holds */
        return NULL;
    p->hold_cap = cap;
    p->w_hn = p->hold_b[0].buf;
    p->w_hs = p->hold_b[1].buf;
    p->w_he = p->hold_b[2].buf;
    p->w_hg = p->hold_b[3].buf;
    p->w_hc = p->hold_b[4].buf;
    p->w_hm = p->hold_b[5].buf;
    p->w_hw = p->hold_b[6].buf;
    Input *in = &p->in;
    in->hn = p->hold_b[0].buf;
    in->hs = p->hold_b[1].buf;
    in->he = p->hold_b[2].buf;
    in->hg = p->hold_b[3].buf;
    in->hc = p->hold_b[4].buf;
    in->hm = p->hold_b[5].buf;
    in->hw = p->hold_b[6].buf;
    Py_RETURN_NONE;
}

/* The node_ready of this call's share, memoised (a pass plans many jobs of a
 * few shapes); NULL on no memory. Computed for every node: the memo serves
 * calls with other eligible nodes too. */
static const double *ready_for(Planner *p, Input *in, int64_t cpus) {
    for (int q = 0; q < N_READY; q++) {
        ReadyMemo *m = &p->memo[q];
        if (m->used && m->gpn == in->gpn && m->cpus == cpus && m->mem == in->mem &&
            m->exclusive == in->exclusive)
            return m->ready;
    }
    ReadyMemo *m = &p->memo[p->memo_next];
    p->memo_next = (p->memo_next + 1) % N_READY;
    if (!m->ready)
        m->ready = malloc(((size_t)in->n + 1) * sizeof(double));
    if (!m->ready)
        return NULL;
    const char *eligible = in->eligible;
    char *all = malloc((size_t)in->n + 1);
    if (!all)
        return NULL;
    memset(all, 1, (size_t)in->n + 1);
    in->eligible = all;
    node_ready(in, m->ready);
    in->eligible = eligible;
    free(all);
    m->used = 1;
    m->gpn = in->gpn;
    m->cpus = cpus;
    m->mem = in->mem;
    m->exclusive = in->exclusive;
    return m->ready;
}

/* The scratch sized for h holds (grown by doubling); -1 on no memory. */
static int scratch_for(Planner *p, Py_ssize_t h) {
    if (p->scratch_h >= h)
        return 0;
    if (p->scratch_h >= 0)
        scratch_free(&p->s);
    Py_ssize_t room = h < 64 ? 64 : 2 * h;
    if (scratch_alloc(&p->s, p->in.n, room, p->in.n_leaves)) {
        scratch_free(&p->s);
        p->scratch_h = -1;
        return -1;
    }
    p->scratch_h = room;
    return 0;
}

PyDoc_STRVAR(earliest_doc,
             "earliest(h, eligible, skipped, cores_need, cpus, duration, horizon, res, gpn,\n"
             "         mem, exclusive, need, extra, switches, deadline, has_deadline, hold_from)\n"
             "-> (t, nodes) or None: tide.sched.reserve.earliest_py for a fixed shape, on\n"
             "the bound plan and its first h holds (skipped: None, or per hold whether the\n"
             "job's own reservation holds it). With a finite hold_from (the plan's now),\n"
             "`fits_now` then says whether the job may start now (1 when t is now; else\n"
             "whether it fits at now in the start test's terms), and when it may not and\n"
             "t > hold_from the nodes are also held (whole-node, for [t, t + duration))\n"
             "in hold rows h, h + 1, ..., which the bound columns must have room for.");

static PyObject *planner_earliest(Planner *p, PyObject *args) {
    PyObject *o_elig, *o_skip, *o_cores;
    Input in = p->in;
    Py_ssize_t h;
    long long cpus, gpn, mem, need, extra, switches;
    double hold_from;
    if (!PyArg_ParseTuple(args, "nOOOLdddLLpLLLdpd", &h, &o_elig, &o_skip, &o_cores, &cpus,
                          &in.duration, &in.horizon, &in.res, &gpn, &mem, &in.exclusive,
                          &need, &extra, &switches, &in.deadline, &in.has_deadline, &hold_from))
        return NULL;
    if (!p->plan_got || (h > 0 && (!p->hold_got || h > p->hold_cap)) || h < 0) {
        PyErr_SetString(PyExc_ValueError, "earliest: bind the plan, and holds for h rows, first");
        return NULL;
    }
    if (need < 1 || extra < 0) {
        PyErr_SetString(PyExc_ValueError, "want need >= 1, extra >= 0");
        return NULL;
    }
    in.gpn = gpn;
    in.mem = mem;
    in.need = need;
    in.extra = extra;
    in.switches = switches < 0 ? -1 : switches;
    in.h = h;
    Py_buffer b_elig, b_skip, b_cores;
    if (get_view(o_elig, &b_elig, "eligible", '?', in.n))
        return NULL;
    if (get_view(o_cores, &b_cores, "cores_need", 'q', in.n)) {
        PyBuffer_Release(&b_elig);
        return NULL;
    }
    int skipping = o_skip != Py_None;
    if (skipping && get_view(o_skip, &b_skip, "skipped", '?', h)) {
        PyBuffer_Release(&b_elig);
        PyBuffer_Release(&b_cores);
        return NULL;
    }
    PyObject *out = NULL;
    in.eligible = b_elig.buf;
    in.cores_need = b_cores.buf;
    in.skipped = skipping ? b_skip.buf : NULL;
    for (Py_ssize_t j = 0; j < h; j++)
        if (in.hn[j] < 0 || in.hn[j] >= in.n) {
            PyErr_SetString(PyExc_ValueError, "hn: a node out of range");
            goto done;
        }
    in.ready = ready_for(p, &in, cpus);
    if (!in.ready || scratch_for(p, h)) {
        PyErr_NoMemory();
        goto done;
    }
    double t = 0;
    Py_ssize_t picked = earliest(&in, &p->s, &t);
    p->fits_now = 1;
    if (picked < 0) {
        PyErr_NoMemory();
        goto done;
    }
    PyObject *nodes = NULL;
    if (picked > 0) {
        nodes = PyTuple_New(picked);
        for (Py_ssize_t a = 0; nodes && a < picked; a++) {
            PyObject *v = PyLong_FromSsize_t(p->s.out[a]);
            if (!v) {
                Py_CLEAR(nodes);
                break;
            }
            PyTuple_SET_ITEM(nodes, a, v);
        }
        if (!nodes)
            goto done;
    }
    if (hold_from < INFINITY && (picked == 0 || t > in.now)) /* overwrites s.out */
        p->fits_now = fits_now(&in, &p->s);
    int holding = picked > 0 && t > hold_from && !p->fits_now;
    if (holding && h + picked > p->hold_cap) {
        PyErr_SetString(PyExc_ValueError, "earliest: no room in the hold columns to hold");
        Py_DECREF(nodes);
        goto done;
    }
    for (Py_ssize_t a = 0; holding && a < picked; a++) { /* as passes._reserve: each node whole */
        Py_ssize_t row = h + a;
        p->w_hn[row] = PyLong_AsSsize_t(PyTuple_GET_ITEM(nodes, a));
        p->w_hs[row] = t;
        p->w_he[row] = t + in.duration;
        p->w_hg[row] = p->w_hc[row] = p->w_hm[row] = 0;
        p->w_hw[row] = 1;
    }
    out = nodes ? Py_BuildValue("(dN)", t, nodes) : Py_NewRef(Py_None);
done:
    PyBuffer_Release(&b_elig);
    PyBuffer_Release(&b_cores);
    if (skipping)
        PyBuffer_Release(&b_skip);
    return out;
}

static PyMemberDef planner_members[] = {
    {"fits_now", T_INT, offsetof(Planner, fits_now), READONLY,
     "whether the job of the last earliest call may start now (see earliest)"},
    {NULL, 0, 0, 0, NULL},
};

static PyMethodDef planner_methods[] = {
    {"bind_plan", (PyCFunction)planner_bind_plan, METH_VARARGS, bind_plan_doc},
    {"bind_holds", (PyCFunction)planner_bind_holds, METH_VARARGS, bind_holds_doc},
    {"earliest", (PyCFunction)planner_earliest, METH_VARARGS, earliest_doc},
    {NULL, NULL, 0, NULL},
};

static PyObject *planner_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    (void)args;
    (void)kwds;
    Planner *p = (Planner *)type->tp_alloc(type, 0); /* zeroed */
    if (p)
        p->scratch_h = -1;
    return (PyObject *)p;
}

static PyTypeObject PlannerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tide.sched._plan.Planner",
    .tp_basicsize = sizeof(Planner),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = PyDoc_STR("Planner(leaf_of, weight, leaf_start, leaf_nodes, levels, gpus, cores,\n"
                        "        n_leaves, n_levels): a backfill pass's plan for reservations\n"
                        "(int64 node columns; each leaf's nodes leaf_nodes[leaf_start[l]:\n"
                        "leaf_start[l + 1]]; levels: levels x leaves switch ids)."),
    .tp_new = planner_new,
    .tp_init = (initproc)planner_init,
    .tp_dealloc = (destructor)planner_dealloc,
    .tp_methods = planner_methods,
    .tp_members = planner_members,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_plan", "A fixed-shape backfill reservation in C (tide.sched.reserve).",
    -1, NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__plan(void) {
    if (PyType_Ready(&PlannerType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    if (PyModule_AddObjectRef(m, "Planner", (PyObject *)&PlannerType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
