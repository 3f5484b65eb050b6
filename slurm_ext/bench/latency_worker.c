/* The latency benchmark's worker in C (`slurm-ext bench latency --app c`): the Python worker's steps
 * (slurm_ext/bench/latency.py, worker()) through libdmr. Times NO_ACTION round trips, then repeats the
 * cycle 2 -> 1 -> 2 -> 4 -> 2 nodes (each a dmr_check_status(n, n)), carrying STATE_MB of
 * block-distributed 64-bit words whose order-sensitive checksum (dmr.redistribute.global_checksum's)
 * it checks at the end; computes SETTLE seconds after each shrink. Prints one BENCH_RESULT line.
 *
 *   usage: latency_worker CYCLES NO_ACTION STATE_MB SETTLE
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <dmr.h>

static const int CYCLE[] = {1, 2, 4, 2}; /* nodes asked for at successive steps */
static const int RETRIES = 20;             /* a cycle step answered "no action" is asked again */
static const long RETRY_GAP_NS = 250000000; /* 0.25 s apart (latency.py: RETRIES, RETRY_GAP) */

typedef struct {
    uint64_t *words;
    int count, step, ppn;
    uint64_t checksum;
} state;

/* sum of word_i * (2i + 1) mod 2^64 over the global array (i: the word's global index) */
static uint64_t checksum(MPI_Comm comm, const uint64_t *w, int count) {
    long long offset = 0, mine = count;
    int rank;
    MPI_Comm_rank(comm, &rank);
    MPI_Exscan(&mine, &offset, 1, MPI_LONG_LONG, MPI_SUM, comm);
    if (rank == 0) offset = 0;
    uint64_t acc = 0, total = 0;
    for (int i = 0; i < count; i++) acc += w[i] * (2 * (uint64_t)(offset + i) + 1);
    MPI_Allreduce(&acc, &total, 1, MPI_UINT64_T, MPI_SUM, comm);
    return total;
}

static double now(void) { return MPI_Wtime(); }

static int carry(state *s, dmr_handle h) {
    MPI_Comm hc = dmr_handle_comm(h);
    MPI_Bcast(&s->step, 1, MPI_INT, 0, hc);
    MPI_Bcast(&s->checksum, 1, MPI_UINT64_T, 0, hc);
    void *out = NULL;
    int count = 0;
    if (dmr_redistribute(h, s->words, s->count, MPI_UINT64_T, &out, &count) != 0)
        MPI_Abort(MPI_COMM_WORLD, 3);
    free(s->words);
    s->words = out;
    s->count = count;
    return dmr_finish(h);
}

static void list(char *buf, size_t cap, const double *v, int n) {
    size_t used = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < n && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%.6f", i ? "," : "", v[i]);
    if (used < cap) snprintf(buf + used, cap - used, "]");
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    if (argc != 5) {
        fprintf(stderr, "usage: latency_worker CYCLES NO_ACTION STATE_MB SETTLE\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int cycles = atoi(argv[1]), no_action = atoi(argv[2]);
    double state_mb = atof(argv[3]), settle = atof(argv[4]);
    if (dmr_init() != 0) MPI_Abort(MPI_COMM_WORLD, 2);
    int steps = 4 * cycles, n, rank;
    double *na = calloc((size_t)no_action + 1, sizeof(double));
    double expand[256], shrink[256], shrink_to[256];
    int expands = 0, shrinks = 0;
    state s = {NULL, 0, 0, 1, 0};
    dmr_handle h;
    int joined = dmr_joining(&h);
    if (joined) {
        if (!carry(&s, h)) goto leave;
    } else {
        MPI_Comm comm = dmr_comm();
        MPI_Comm_rank(comm, &rank);
        for (int i = 0; i < no_action; i++) {
            double t0 = now();
            int action = dmr_check_status(dmr_size(), dmr_size(), 2, 0, &n, &h);
            na[i] = now() - t0;
            if (action != DMR_NO_ACTION) MPI_Abort(MPI_COMM_WORLD, 4);
        }
        long long words = (long long)(state_mb * (1 << 20)) / 8;
        int size = dmr_size();
        long long lo = words / size * rank + (rank < words % size ? rank : words % size);
        s.count = (int)(words / size + (rank < words % size ? 1 : 0));
        s.words = malloc(sizeof(uint64_t) * (size_t)(s.count ? s.count : 1));
        for (int i = 0; i < s.count; i++) s.words[i] = (uint64_t)(lo + i);
        s.checksum = checksum(comm, s.words, s.count);
    }
    MPI_Comm_size(MPI_COMM_WORLD, &s.ppn); /* this rank's group: one node's ranks */
    int skip = joined;
    for (; s.step < steps; s.step++) {
        if (!skip) {
            int want = CYCLE[s.step % 4] * s.ppn, cur = dmr_size();
            int big = want > cur ? want : cur, small = want < cur ? want : cur;
            int factor = big % small == 0 && big > small ? big / small : 2;
            double t0 = now();
            int action = dmr_check_status(want, want, factor, 0, &n, &h);
            /* a step answered "no action" (Slurm slow to answer, a node still completing) is asked
             * again, as latency.py's RETRIES: every rank sees the same answers, so loops alike */
            for (int tries = 1; action == DMR_NO_ACTION && want != cur && tries < RETRIES; tries++) {
                struct timespec gap = {0, RETRY_GAP_NS};
                nanosleep(&gap, NULL);
                t0 = now();
                action = dmr_check_status(want, want, factor, 0, &n, &h);
            }
            if (action < 0) MPI_Abort(MPI_COMM_WORLD, 5);
            if (action != DMR_NO_ACTION) {
                if (!carry(&s, h)) goto leave;
                MPI_Comm_rank(dmr_comm(), &rank);
                if (rank == 0 && action == DMR_EXPAND && expands < 256) expand[expands++] = now() - t0;
                if (rank == 0 && action == DMR_SHRINK && shrinks < 256) {
                    shrink_to[shrinks] = n / s.ppn;
                    shrink[shrinks++] = now() - t0;
                }
                if (action == DMR_SHRINK) { /* one compute step at the smaller size */
                    struct timespec ts = {(time_t)settle, (long)((settle - (time_t)settle) * 1e9)};
                    nanosleep(&ts, NULL);
                }
            }
        }
        skip = 0;
    }
    int ok = checksum(dmr_comm(), s.words, s.count) == s.checksum;
    MPI_Comm_rank(dmr_comm(), &rank);
    if (rank == 0) {
        static char a[1 << 16], b[8192], c[8192], d[8192];
        list(a, sizeof a, na, no_action);
        list(b, sizeof b, expand, expands);
        list(c, sizeof c, shrink, shrinks);
        list(d, sizeof d, shrink_to, shrinks);
        printf("BENCH_RESULT {\"no_action\": %s, \"expand_total\": %s, \"shrink_app\": %s, \"shrink_to\": %s, "
               "\"checksum_ok\": %s}\n", a, b, c, d, ok ? "true" : "false");
        fflush(stdout);
    }
    free(s.words);
    free(na);
    dmr_finalize();
    MPI_Finalize();
    return ok ? 0 : 1;
leave:
    free(s.words);
    free(na);
    dmr_finalize();
    MPI_Finalize();
    return 0;
}
