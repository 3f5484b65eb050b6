/* dmr.h: DMR malleability for C, C++ and Fortran MPI programs on an unmodified Slurm.
 *
 * The calls mirror the Python API (`dmr.check_status`, ...): same semantics, same service protocol,
 * same launcher (`dmr-run -- ./app ...`). libdmr runs the toolkit's Python runtime inside the
 * program (one implementation of the protocol, the rank-group world and the redistribution);
 * communicators cross by their MPI handles, so the program and the runtime share one MPI library
 * (an MPICH-ABI MPI: the `mpich` wheel the toolkit installs, or any MPICH-ABI build).
 *
 * Compile:  mpicc app.c $(dmr-config --cflags --libs)     (or: pkg-config --cflags --libs dmr)
 *
 * Every call is collective over dmr_comm() unless said otherwise, and must come from the thread
 * that called dmr_init (the MPI_THREAD_FUNNELED discipline). Errors are negative return values; a
 * one-line message goes to stderr (rank 0 of the application) and stays readable with
 * dmr_error_message(). Outside a Slurm job, or with the control service unreachable, the checks
 * answer DMR_NO_ACTION after one warning and the program goes on.
 */
#ifndef DMR_H
#define DMR_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DMR_VERSION "0.1.0"

/* actions (return values of dmr_check_status / dmr_icheck_status) */
#define DMR_NO_ACTION 0
#define DMR_EXPAND 1
#define DMR_SHRINK 2

/* errors (negative) */
#define DMR_ERR_ARG (-1)     /* invalid arguments (min > max, factor < 2, preferred out of range...) */
#define DMR_ERR_INIT (-2)    /* dmr_init not called or failed, or called before MPI_Init */
#define DMR_ERR_HANDLE (-3)  /* a handle that names no resize in progress */
#define DMR_ERR_RUNTIME (-4) /* the runtime failed (its message says why) */

/* A resize in progress: valid from the check that returned it until dmr_finish. 0 = none. */
typedef int dmr_handle;

int dmr_init(void);     /* after MPI_Init; 0 or an error code (a rank started by an expansion joins here) */
int dmr_finalize(void); /* before MPI_Finalize; drops an asynchronous answer nobody will act on */

MPI_Comm dmr_comm(void); /* the application's communicator now (changes at every resize: do not keep it) */
int dmr_size(void);      /* ranks of dmr_comm(), not collective */

/* 1 on a rank started by an expansion (with that resize's handle in *h), else 0. Not collective. */
int dmr_joining(dmr_handle *h);

/* Ask the control service and carry out its answer. Sizes are in ranks; preferred <= 0: none.
 * Returns DMR_NO_ACTION (*h = 0), DMR_EXPAND or DMR_SHRINK (*new_size = ranks after it, *h the
 * handle), or an error. The asynchronous form returns the answer to the previous call (carried out
 * now) and asks the next question while the coming step computes; its first call answers no action. */
int dmr_check_status(int min, int max, int factor, int preferred, int *new_size, dmr_handle *h);
int dmr_icheck_status(int min, int max, int factor, int preferred, int *new_size, dmr_handle *h);

/* During a resize, on every rank of the old and new world: the communicator spanning them (rank 0
 * is the application's rank 0: MPI_Bcast replicated values from it), and what kind of resize it is. */
MPI_Comm dmr_handle_comm(dmr_handle h);
int dmr_handle_sizes(dmr_handle h, int *old_size, int *new_size); /* returns the action, or an error */

/* A block-distributed array (count elements of a contiguous type on this rank, blocks in rank order)
 * moved from the old to the balanced new layout. *out is malloc'ed (free it), *out_count its
 * elements. Joining ranks pass NULL, 0. Collective over dmr_handle_comm(h). */
int dmr_redistribute(dmr_handle h, const void *local, int count, MPI_Datatype type, void **out,
                     int *out_count);

/* The same for count elements of unit bytes each (no MPI datatype needed: the Fortran module uses it). */
int dmr_redistribute_bytes(dmr_handle h, const void *local, int count, int unit, void **out,
                           int *out_count);
void dmr_free(void *p); /* frees what dmr_redistribute gave (the same as free) */

/* Completes the resize: 1 where the rank continues (on dmr_comm()), 0 on ranks a shrink removes,
 * which then call dmr_finalize and MPI_Finalize and exit 0 (their acknowledgement is already sent).
 * The handle is invalid afterwards. */
int dmr_finish(dmr_handle h);

/* Extras, not collective (they matter on rank 0): the fraction of the work done (reported with
 * every check; the EJB and DBES policies use it), and an evolving request for `procs` ranks. */
int dmr_set_progress(double fraction);
int dmr_request_growth(int procs);

const char *dmr_error_message(void); /* the last error's message ("" if none) */

/* Fortran handles of dmr_comm() and dmr_handle_comm(h) (MPI_Comm_c2f; the Fortran module's). */
MPI_Fint dmr_comm_f(void);
MPI_Fint dmr_handle_comm_f(dmr_handle h);

#ifdef __cplusplus
}
#endif
#endif /* DMR_H */
