/* The merge kernel of fusion.policies.nearest_kernel, in C, for a process
 * that has not imported numba: it loads with one dlopen (about a millisecond)
 * where numba's import and cache read cost 0.3 s. The same algorithm (see
 * nearest_kernel.py for why each step is what it is), its matched pass
 * scanned in four stretches at once; the tests hold it equal to the numba
 * kernel and to the numpy form.
 *
 * Built by fusion/policies/_nearest_native.py with the system C compiler,
 * once per source and compiler, into a cache; loaded with ctypes. */
#include <stdint.h>
#include <stdlib.h>

typedef int64_t i64;
typedef uint64_t u64;

#define SIGN ((u64)1 << 63)

static i64 first_unsorted(const i64 *col, i64 n) {
    i64 start = 1;
    while (start < n) { /* in blocks, so the comparisons vectorise */
        i64 stop = start + 4096 < n ? start + 4096 : n;
        i64 bad = 0;
        for (i64 i = start; i < stop; i++) bad += col[i] <= col[i - 1];
        if (bad) {
            for (i64 i = start; i < stop; i++)
                if (col[i] <= col[i - 1]) return i;
        }
        start = stop;
    }
    return -1;
}

/* The first index from i whose stamp is at or after b. */
static inline i64 below(const i64 *col, i64 n, i64 i, i64 b) {
    while (i + 8 < n && col[i + 7] < b) i += 8;
    if (i + 8 <= n) {
        i64 c = 0;
        for (int q = 0; q < 8; q++) c += col[i + q] < b;
        return i + c;
    }
    while (i < n && col[i] < b) i++;
    return i;
}

/* The first index from i whose stamp is after b. */
static inline i64 through(const i64 *col, i64 n, i64 i, i64 b) {
    while (i + 8 < n && col[i + 7] <= b) i += 8;
    if (i + 8 <= n) {
        i64 c = 0;
        for (int q = 0; q < 8; q++) c += col[i + q] <= b;
        return i + c;
    }
    while (i < n && col[i] <= b) i++;
    return i;
}

/* The nearest frame of col to r given i, the first index whose stamp is at or after
 * r: its index if within tol, else -1; the earlier wins a tie. Without branches:
 * which neighbour is nearer is as random as the stamps' jitter, and a mispredicted
 * branch costs more than both distances. */
static inline i64 nearest_at(const i64 *col, i64 n, i64 i, i64 r, u64 tol) {
    i64 before = i - (i > 0), after = i - (i >= n);
    u64 d_prev = (u64)r - (u64)col[before]; /* meaningful where i > 0 */
    u64 d_next = (u64)col[after] - (u64)r;  /* meaningful where i < n */
    u64 next = (u64)0 - (u64)((i == 0) | ((i < n) & (d_next < d_prev)));
    u64 d = (d_next & next) | (d_prev & ~next);
    u64 c = ((u64)i & next) | ((u64)(i - 1) & ~next);
    u64 ok = (u64)0 - (u64)(d <= tol);
    return (i64)((c & ok) | ~ok); /* -1 where too far */
}

/* The first index whose stamp is at or after b. */
static i64 lower_bound(const i64 *col, i64 n, i64 b) {
    i64 lo = 0, hi = n;
    while (lo < hi) {
        i64 mid = lo + (hi - lo) / 2;
        if (col[mid] < b)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Each reference's scan starts where the previous one stopped, so a single scan runs
 * at the speed of a load's latency. The references are cut into four stretches, each
 * starting from a binary search, scanned side by side: four independent chains the
 * processor overlaps (with nearest_at, 1.8x faster on 288,000 references). */
static void matched_pass(const i64 *refs, i64 m, const i64 *col, i64 n, u64 tol, i64 *out) {
    if (n == 0) {
        for (i64 k = 0; k < m; k++) out[k] = -1;
        return;
    }
    i64 q = m / 4, k1 = q, k2 = 2 * q, k3 = 3 * q;
    i64 a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    if (q) {
        a1 = lower_bound(col, n, refs[k1]);
        a2 = lower_bound(col, n, refs[k2]);
        a3 = lower_bound(col, n, refs[k3]);
    }
    for (i64 s = 0; s < q; s++) {
        i64 r0 = refs[s], r1 = refs[k1 + s], r2 = refs[k2 + s], r3 = refs[k3 + s];
        a0 = below(col, n, a0, r0);
        a1 = below(col, n, a1, r1);
        a2 = below(col, n, a2, r2);
        a3 = below(col, n, a3, r3);
        out[s] = nearest_at(col, n, a0, r0, tol);
        out[k1 + s] = nearest_at(col, n, a1, r1, tol);
        out[k2 + s] = nearest_at(col, n, a2, r2, tol);
        out[k3 + s] = nearest_at(col, n, a3, r3, tol);
    }
    for (i64 k = 4 * q; k < m; k++) { /* the last few, after the fourth stretch */
        a3 = below(col, n, a3, refs[k]);
        out[k] = nearest_at(col, n, a3, refs[k], tol);
    }
}

static void window_pass(const i64 *refs, i64 m, const i64 *col, i64 n, u64 before, u64 after,
                        i64 *lo, i64 *hi) {
    i64 i = 0, h = 0;
    for (i64 k = 0; k < m; k++) {
        u64 key = (u64)refs[k] ^ SIGN; /* r - MIN, exact */
        i64 low = before >= key ? INT64_MIN : (i64)((key - before) ^ SIGN);
        i64 high = after >= UINT64_MAX - key ? INT64_MAX : (i64)((key + after) ^ SIGN);
        i = below(col, n, i, low);
        h = through(col, n, h > i ? h : i, high);
        lo[k] = i;
        hi[k] = h;
    }
}

/* The cuts, in order; the groups written in place (row g from reference k >= g). */
static i64 resolve(const i64 *refs, i64 m, const i64 *const *cols, const i64 *lens,
                   const uint8_t *required, const u64 *tol, int n_m, int n_w, i64 *pick, i64 *lo,
                   i64 *hi, i64 *out_t, i64 *out_ref, i64 *cut, i64 *took, i64 *start) {
    for (int j = 0; j < n_m + n_w; j++) cut[j] = -1;
    i64 g = 0;
    for (i64 k = 0; k < m; k++) {
        int complete = 1;
        for (int j = 0; j < n_m; j++) {
            i64 c = pick[j * m + k];
            i64 first = cut[j] + 1;
            if (c < 0) {
                c = -1;
            } else if (c < first) { /* the nearest was taken: the first left is at or after r */
                c = -1;
                if (first < lens[j] && (u64)cols[j][first] - (u64)refs[k] <= tol[j]) c = first;
            }
            took[j] = c;
            if (c < 0 && required[j]) complete = 0;
        }
        for (int w = 0; w < n_w; w++) {
            i64 l = lo[w * m + k], e = hi[w * m + k];
            i64 s = l > cut[n_m + w] + 1 ? l : cut[n_m + w] + 1;
            start[w] = s;
            took[n_m + w] = s < e ? e - 1 : -1;
            if (s >= e && required[n_m + w]) complete = 0;
        }
        if (complete) {
            out_t[g] = refs[k];
            out_ref[g] = k;
            for (int j = 0; j < n_m; j++) pick[j * m + g] = took[j];
            for (int w = 0; w < n_w; w++) {
                i64 e = hi[w * m + k];
                hi[w * m + g] = e > start[w] ? e : start[w];
                lo[w * m + g] = start[w];
            }
            for (int j = 0; j < n_m + n_w; j++)
                if (took[j] >= 0) cut[j] = took[j];
            g++;
        }
    }
    return g;
}

/* The whole computation: the columns checked (unsorted[0] the references,
 * [1 + j] column j; -1 returned if any is set), each sensor's pass, the cuts.
 * cols: n_m matched then n_w window columns; pick is n_m x m, lo and hi
 * n_w x m, row-major. Returns the number of groups, -1 (unsorted) or -2 (no
 * memory). */
i64 hf_nearest_columns(const i64 *refs, i64 m, const i64 *const *cols, const i64 *lens, int n_m,
                       int n_w, const uint8_t *required, const u64 *tol, const u64 *before,
                       const u64 *after, i64 *pick, i64 *lo, i64 *hi, i64 *out_t, i64 *out_ref,
                       uint8_t *unsorted) {
    int any = 0;
    unsorted[0] = first_unsorted(refs, m) >= 0;
    any |= unsorted[0];
    for (int j = 0; j < n_m + n_w; j++) {
        unsorted[1 + j] = first_unsorted(cols[j], lens[j]) >= 0;
        any |= unsorted[1 + j];
    }
    if (any) return -1;
    for (int j = 0; j < n_m + n_w; j++) {
        if (j < n_m)
            matched_pass(refs, m, cols[j], lens[j], tol[j], pick + j * m);
        else
            window_pass(refs, m, cols[j], lens[j], before[j], after[j], lo + (j - n_m) * m,
                        hi + (j - n_m) * m);
    }
    i64 *scratch = malloc(sizeof(i64) * (size_t)(3 * (n_m + n_w) + 1));
    if (scratch == NULL) return -2;
    i64 g = resolve(refs, m, cols, lens, required, tol, n_m, n_w, pick, lo, hi, out_t, out_ref,
                    scratch, scratch + (n_m + n_w), scratch + 2 * (n_m + n_w));
    free(scratch);
    return g;
}
