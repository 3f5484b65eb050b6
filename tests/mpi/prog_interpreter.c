/* Prints the interpreter libdmr embedded (sys.executable): the one its expander jobs' agents run. */
#include <Python.h>
#include <mpi.h>
#include <stdio.h>

#include "dmr.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rc = dmr_init();
    PyGILState_STATE gil = PyGILState_Ensure();
    PyRun_SimpleString("import sys; print('EXECUTABLE', sys.executable, flush=True)");
    PyGILState_Release(gil);
    MPI_Finalize();
    return rc;
}
