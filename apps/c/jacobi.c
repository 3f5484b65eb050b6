/* Jacobi in C: apps/jacobi.py's heat problem (rows in blocks over the ranks, halo rows exchanged
 * every sweep) through libdmr. The grid is N x N with the top edge held at 1; each step does
 * --sweeps sweeps after a DMR reconfiguring point, the rows are redistributed at every resize, and at
 * the end rank 0 repeats every sweep on the whole grid alone and checks that the malleable run gave
 * the same grid (bit for bit: each point is updated by the same expression in the same order).
 *
 *   mpicc -O2 jacobi.c -o jacobi_c $(dmr-config --cflags --libs)
 *   dmr-run --ppn 2 -- ./jacobi_c --n 256 --steps 20 --sweeps 50 --max 8
 *
 * Options as the Python apps': --steps --sweeps --n --min --max --factor --preferred --async
 * --plan STEP:RANKS,... --model-seconds S. Prints one JACOBI_RESULT {json} line; exit 0 if it checks.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dmr.h>

typedef struct {
    int n, steps, sweeps, min, max, factor, preferred, asynchronous;
    double model_seconds;
    int plan_step[64], plan_ranks[64], plans;
} options;

static void usage(const char *why) {
    fprintf(stderr, "usage: jacobi_c [--n N] [--steps S] [--sweeps W] [--min A] [--max B] [--factor F] "
                    "[--preferred P] [--async] [--plan STEP:RANKS,...] [--model-seconds X]\n"
                    "jacobi_c: error: %s\n", why);
    exit(2);
}

static int to_int(const char *flag, const char *text) {
    char *end;
    long v = strtol(text ? text : "", &end, 10);
    if (!text || !*text || *end) {
        char why[128];
        snprintf(why, sizeof why, "%s needs an integer, got '%s'", flag, text ? text : "");
        usage(why);
    }
    return (int)v;
}

static options parse(int argc, char **argv) {
    options o = {256, 10, 50, 1, 4, 2, 0, 0, 0.0, {0}, {0}, 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--async")) { o.asynchronous = 1; continue; }
        if (!v) usage("an option needs a value");
        i++;
        if (!strcmp(a, "--n")) o.n = to_int(a, v);
        else if (!strcmp(a, "--steps")) o.steps = to_int(a, v);
        else if (!strcmp(a, "--sweeps")) o.sweeps = to_int(a, v);
        else if (!strcmp(a, "--min")) o.min = to_int(a, v);
        else if (!strcmp(a, "--max")) o.max = to_int(a, v);
        else if (!strcmp(a, "--factor")) o.factor = to_int(a, v);
        else if (!strcmp(a, "--preferred")) o.preferred = to_int(a, v);
        else if (!strcmp(a, "--model-seconds")) o.model_seconds = atof(v);
        else if (!strcmp(a, "--plan")) {
            char *copy = strdup(v), *save = NULL;
            for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                int s, r;
                if (o.plans == 64 || sscanf(tok, "%d:%d", &s, &r) != 2) usage("--plan must be STEP:RANKS,...");
                o.plan_step[o.plans] = s;
                o.plan_ranks[o.plans++] = r;
            }
            free(copy);
        } else {
            char why[128];
            snprintf(why, sizeof why, "unknown option %s", a);
            usage(why);
        }
    }
    if (o.steps < 1 || o.sweeps < 1 || o.min < 1 || o.min > o.max || o.factor < 2 || o.n < 3 || o.n < o.max)
        usage("need --steps, --sweeps, --min >= 1, --min <= --max, --factor >= 2, --n >= max(3, --max)");
    return o;
}

/* the sizes the plan asks for at a step (apps/common.py's planned()): 0 if none yet */
static int planned(const options *o, int step, int current, int *factor) {
    int want = 0, best = -1;
    for (int i = 0; i < o->plans; i++)
        if (o->plan_step[i] <= step && o->plan_step[i] >= best) { best = o->plan_step[i]; want = o->plan_ranks[i]; }
    if (!want) return 0;
    int big = want > current ? want : current, small = want < current ? want : current;
    *factor = big % small == 0 && big > small ? big / small : 2;
    return want;
}

static void block(int n, int parts, int rank, int *lo, int *hi) {
    int base = n / parts, extra = n % parts;
    *lo = rank * base + (rank < extra ? rank : extra);
    *hi = *lo + base + (rank < extra ? 1 : 0);
}

static void initial(double *u, int n, int lo, int hi) {
    memset(u, 0, sizeof(double) * (size_t)(hi - lo) * n);
    if (lo == 0 && hi > 0)
        for (int j = 0; j < n; j++) u[j] = 1.0; /* the hot edge */
}

/* one sweep of rows [lo, lo+rows) given the rows above and below them (NULL at the edges) */
static void sweep(double *u, double *next, int rows, int lo, int n, const double *above, const double *below) {
    memcpy(next, u, sizeof(double) * (size_t)rows * n);
    for (int i = 0; i < rows; i++) {
        int g = lo + i;
        if (g == 0 || g == n - 1) continue;
        const double *up = i > 0 ? u + (size_t)(i - 1) * n : above;
        const double *down = i + 1 < rows ? u + (size_t)(i + 1) * n : below;
        const double *row = u + (size_t)i * n;
        for (int j = 1; j < n - 1; j++) next[(size_t)i * n + j] = 0.25 * (up[j] + down[j] + row[j - 1] + row[j + 1]);
    }
}

typedef struct {
    double *u; /* this rank's rows */
    int rows, step;
    char history[4096];
    size_t used;
} state;

/* carry the state over a resize: the same calls in the same order on old and new ranks */
static int carry(state *s, dmr_handle h, MPI_Datatype row, double t0) {
    MPI_Comm hc = dmr_handle_comm(h);
    MPI_Bcast(&s->step, 1, MPI_INT, 0, hc);
    void *out = NULL;
    int count = 0;
    if (dmr_redistribute(h, s->u, s->rows, row, &out, &count) != 0) MPI_Abort(MPI_COMM_WORLD, 3);
    free(s->u);
    s->u = out;
    s->rows = count;
    int old_size = 0, new_size = 0, action = dmr_handle_sizes(h, &old_size, &new_size);
    int rank;
    MPI_Comm_rank(hc, &rank);
    if (rank == 0 && s->used < sizeof s->history - 64)
        s->used += (size_t)snprintf(s->history + s->used, sizeof s->history - s->used, "%s[%d,\"%s\",%d,%d,%.6f]",
                                    s->used ? "," : "", s->step, action == DMR_EXPAND ? "expand" : "shrink",
                                    old_size, new_size, MPI_Wtime() - t0);
    return dmr_finish(h);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    options o = parse(argc, argv);
    if (dmr_init() != 0) MPI_Abort(MPI_COMM_WORLD, 2);
    int n = o.n;
    MPI_Datatype row;
    MPI_Type_contiguous(n, MPI_DOUBLE, &row);
    MPI_Type_commit(&row);
    state s = {NULL, 0, 0, "", 0};
    double t_start = MPI_Wtime();
    dmr_handle h;
    int skip_check = 0;
    if (dmr_joining(&h)) { /* started by an expansion: take our rows, go on at the parents' step */
        if (!carry(&s, h, row, t_start)) goto leave;
        skip_check = 1;
    } else {
        int rank, lo, hi;
        MPI_Comm_rank(dmr_comm(), &rank);
        block(n, dmr_size(), rank, &lo, &hi);
        s.rows = hi - lo;
        s.u = malloc(sizeof(double) * (size_t)(s.rows ? s.rows : 1) * n);
        initial(s.u, n, lo, hi);
    }
    double *above = malloc(sizeof(double) * n), *below = malloc(sizeof(double) * n);
    for (; s.step < o.steps; s.step++) {
        if (!skip_check) {
            int factor = o.factor, want = planned(&o, s.step, dmr_size(), &factor);
            int lo = want ? want : o.min, hi = want ? want : o.max, pref = want ? 0 : o.preferred;
            int new_size;
            double t0 = MPI_Wtime();
            dmr_set_progress((double)s.step / o.steps);
            int action = o.asynchronous ? dmr_icheck_status(lo, hi, factor, pref, &new_size, &h)
                                        : dmr_check_status(lo, hi, factor, pref, &new_size, &h);
            if (action < 0) MPI_Abort(MPI_COMM_WORLD, 2);
            if (action != DMR_NO_ACTION && !carry(&s, h, row, t0)) goto leave;
        }
        skip_check = 0;
        MPI_Comm comm = dmr_comm();
        int rank, size, lo = 0;
        MPI_Comm_rank(comm, &rank);
        MPI_Comm_size(comm, &size);
        MPI_Exscan(&s.rows, &lo, 1, MPI_INT, MPI_SUM, comm);
        if (rank == 0) lo = 0;
        double *next = malloc(sizeof(double) * (size_t)(s.rows ? s.rows : 1) * n);
        int up = rank > 0 ? rank - 1 : MPI_PROC_NULL, down = rank + 1 < size ? rank + 1 : MPI_PROC_NULL;
        for (int w = 0; w < o.sweeps; w++) {
            /* my first row up while the row below me comes in, then the other way round */
            MPI_Sendrecv(s.u, n, MPI_DOUBLE, up, 0, below, n, MPI_DOUBLE, down, 0, comm, MPI_STATUS_IGNORE);
            MPI_Sendrecv(s.u + (size_t)(s.rows - 1) * n, n, MPI_DOUBLE, down, 1, above, n, MPI_DOUBLE, up, 1, comm,
                         MPI_STATUS_IGNORE);
            sweep(s.u, next, s.rows, lo, n, up == MPI_PROC_NULL ? NULL : above,
                  down == MPI_PROC_NULL ? NULL : below);
            double *t = s.u;
            s.u = next;
            next = t;
        }
        free(next);
        if (o.model_seconds > 0) { /* the modelled part of a step: seconds / ranks */
            double wait = o.model_seconds / size;
            struct timespec ts = {(time_t)wait, (long)((wait - (time_t)wait) * 1e9)};
            nanosleep(&ts, NULL);
        }
    }
    free(above);
    free(below);
    { /* gather the grid on rank 0 and check it against one rank doing every sweep alone */
        MPI_Comm comm = dmr_comm();
        int rank, size;
        MPI_Comm_rank(comm, &rank);
        MPI_Comm_size(comm, &size);
        int *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size);
        MPI_Gather(&s.rows, 1, MPI_INT, counts, 1, MPI_INT, 0, comm);
        double *grid = NULL;
        if (rank == 0) {
            for (int r = 0, acc = 0; r < size; r++) { displs[r] = acc; acc += counts[r]; }
            grid = malloc(sizeof(double) * (size_t)n * n);
        }
        MPI_Gatherv(s.u, s.rows, row, grid, counts, displs, row, 0, comm);
        int ok = 1;
        if (rank == 0) {
            double *ref = malloc(sizeof(double) * (size_t)n * n), *tmp = malloc(sizeof(double) * (size_t)n * n);
            initial(ref, n, 0, n);
            for (int w = 0; w < o.steps * o.sweeps; w++) {
                sweep(ref, tmp, n, 0, n, NULL, NULL);
                double *t = ref;
                ref = tmp;
                tmp = t;
            }
            double diff = 0;
            for (size_t i = 0; i < (size_t)n * n; i++) diff = fmax(diff, fabs(grid[i] - ref[i]));
            ok = diff <= 1e-12;
            printf("JACOBI_RESULT {\"ok\": %s, \"max_diff\": %g, \"final_size\": %d, \"steps\": %d, "
                   "\"resizes\": [%s], \"seconds\": %.3f, \"language\": \"c\"}\n",
                   ok ? "true" : "false", diff, size, o.steps, s.history, MPI_Wtime() - t_start);
            fflush(stdout);
            free(ref);
            free(tmp);
            free(grid);
        }
        free(counts);
        free(displs);
        MPI_Type_free(&row);
        free(s.u);
        dmr_finalize();
        MPI_Finalize();
        return ok ? 0 : 1;
    }
leave: /* a shrink removed this rank: its acknowledgement is sent; finalize and exit 0 */
    MPI_Type_free(&row);
    free(s.u);
    dmr_finalize();
    MPI_Finalize();
    return 0;
}
