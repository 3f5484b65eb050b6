/* libdmr's calls with real ranks, outside Slurm: wrong use gets an error code and a message (no
 * crash, no hang), right use answers no action. Prints "C_API_OK <rank>" on success; exits 1 at
 * the first check that fails, naming it. */
#include <stdio.h>
#include <string.h>

#include <dmr.h>

static int rank;

#define EXPECT(cond)                                                                 \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "rank %d: line %d: %s failed (last error: %s)\n", rank,  \
                    __LINE__, #cond, dmr_error_message());                           \
            return 1;                                                                \
        }                                                                            \
    } while (0)

int main(int argc, char **argv) {
    int size, n = -1;
    dmr_handle h = 7;
    EXPECT(dmr_init() == DMR_ERR_INIT); /* before MPI_Init */
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    EXPECT(dmr_check_status(1, 4, 2, 0, &n, &h) == DMR_ERR_INIT); /* before dmr_init */
    EXPECT(strstr(dmr_error_message(), "dmr_init") != NULL);
    EXPECT(dmr_init() == 0);
    EXPECT(dmr_init() == 0); /* a second call is harmless */
    EXPECT(dmr_size() == size);
    int sum = 0, one = 1;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, dmr_comm());
    EXPECT(sum == size);
    EXPECT(dmr_joining(&h) == 0 && h == 0);

    EXPECT(dmr_check_status(4, 2, 2, 0, &n, &h) == DMR_ERR_ARG);
    EXPECT(strstr(dmr_error_message(), "min_procs (4) > max_procs (2)") != NULL);
    EXPECT(dmr_check_status(0, 2, 2, 0, &n, &h) == DMR_ERR_ARG);
    EXPECT(dmr_check_status(1, 8, 1, 0, &n, &h) == DMR_ERR_ARG);
    EXPECT(dmr_icheck_status(1, 8, 2, 16, &n, &h) == DMR_ERR_ARG); /* preferred > max */

    n = -1;
    EXPECT(dmr_check_status(1, 8, 2, 0, &n, &h) == DMR_NO_ACTION && n == size && h == 0);
    EXPECT(dmr_icheck_status(1, 8, 2, 0, &n, &h) == DMR_NO_ACTION && h == 0);
    EXPECT(dmr_set_progress(0.5) == 0);

    EXPECT(dmr_finish(42) == DMR_ERR_HANDLE);
    EXPECT(dmr_handle_comm(42) == MPI_COMM_NULL);
    void *out = NULL;
    int count = -1;
    double x[4] = {0};
    EXPECT(dmr_redistribute(42, x, 4, MPI_DOUBLE, &out, &count) == DMR_ERR_HANDLE && out == NULL);
    MPI_Datatype strided;
    MPI_Type_vector(2, 1, 2, MPI_DOUBLE, &strided);
    MPI_Type_commit(&strided);
    EXPECT(dmr_redistribute(42, x, 1, strided, &out, &count) == DMR_ERR_ARG);
    MPI_Type_free(&strided);
    EXPECT(dmr_redistribute(42, NULL, 3, MPI_DOUBLE, &out, &count) == DMR_ERR_ARG);
    EXPECT(dmr_redistribute(42, x, 1, MPI_DOUBLE, NULL, &count) == DMR_ERR_ARG);

    EXPECT(dmr_finalize() == 0);
    MPI_Finalize();
    printf("C_API_OK %d\n", rank);
    return 0;
}
