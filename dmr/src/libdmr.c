/* libdmr: the C API of dmr.h over the toolkit's Python runtime (dmr.capi), embedded in the program.
 *
 * Why embedded, not a second runtime in C: the service protocol (with its authentication), the world
 * of rank groups (join through an MPI port, leave with Split + Disconnect) and the redistribution then
 * exist once, in dmr/runtime.py, dmr/world.py and dmr/redistribute.py, for Python and C alike. A
 * communicator crosses as its Fortran handle (MPI_Comm_c2f/f2c): mpi4py finds the MPI library the
 * program is linked with already in the process and uses it. The interpreter's lock is released
 * between calls, so a program's other threads are not held up by it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dmr.h"

#ifndef DMR_PYTHON /* the interpreter the toolkit was installed with (set by the build) */
#define DMR_PYTHON "python3"
#endif

static PyObject *capi;         /* the module dmr.capi */
static PyObject *arg_error;    /* dmr.config.DMRArgumentError */
static PyObject *handle_error; /* dmr.capi.HandleError */
static char message[1024];

static int world_rank(void) {
    int rank = 0, up = 0;
    MPI_Initialized(&up);
    if (up) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

/* Record (and print) an error; returns code. Argument errors are the same on every rank (the
 * arguments are collective): only rank 0 prints them. */
static int fail(int code, const char *where, const char *fmt, ...) {
    char text[896];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    snprintf(message, sizeof message, "%s: %s", where, text);
    if (code != DMR_ERR_ARG || world_rank() == 0) fprintf(stderr, "dmr: %s\n", message);
    return code;
}

/* The pending Python exception as an error code and message (the GIL is held). */
static int fail_python(const char *where) {
    PyObject *type, *value, *trace;
    PyErr_Fetch(&type, &value, &trace);
    PyErr_NormalizeException(&type, &value, &trace);
    int code = DMR_ERR_RUNTIME;
    if (type && arg_error && PyErr_GivenExceptionMatches(type, arg_error)) code = DMR_ERR_ARG;
    if (type && handle_error && PyErr_GivenExceptionMatches(type, handle_error)) code = DMR_ERR_HANDLE;
    const char *text = "unknown error";
    PyObject *str = value ? PyObject_Str(value) : NULL;
    if (str) text = PyUnicode_AsUTF8(str);
    if (!text) text = "unprintable error";
    const char *kind = type ? ((PyTypeObject *)type)->tp_name : "error";
    if (code == DMR_ERR_RUNTIME)
        fail(code, where, "%s: %s", kind, text);
    else
        fail(code, where, "%s", text);
    Py_XDECREF(str);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(trace);
    PyErr_Clear();
    return code;
}

/* dmr.capi.<name>(*args) with the GIL held; NULL with the exception set on failure. */
static PyObject *vcall(const char *name, const char *format, va_list ap) {
    PyObject *fn = PyObject_GetAttrString(capi, name);
    if (!fn) return NULL;
    PyObject *args = Py_VaBuildValue(format, ap);
    PyObject *result = args ? PyObject_CallObject(fn, args) : NULL;
    Py_XDECREF(args);
    Py_DECREF(fn);
    return result;
}

static PyObject *call(const char *name, const char *format, ...) {
    va_list ap;
    va_start(ap, format);
    PyObject *result = vcall(name, format, ap);
    va_end(ap);
    return result;
}

#define READY(where)                                                                           \
    do {                                                                                       \
        if (!capi) return fail(DMR_ERR_INIT, where, "dmr_init has not been called (or failed)"); \
    } while (0)

/* This program's command line (argv[0] made absolute through /proc/self/exe). */
static PyObject *command_line(void) {
    PyObject *argv = PyList_New(0);
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    FILE *f = fopen("/proc/self/cmdline", "rb");
    if (f) {
        char *word = NULL;
        size_t cap = 0;
        int first = 1;
        while (getdelim(&word, &cap, '\0', f) > 0) {
            PyObject *s = PyUnicode_DecodeFSDefault(first && n > 0 ? exe : word);
            if (s) {
                PyList_Append(argv, s);
                Py_DECREF(s);
            }
            first = 0;
        }
        free(word);
        fclose(f);
    }
    return argv;
}

/* The interpreter to embed: DMR_PYTHON; else the one of the environment libdmr is installed in
 * (PREFIX/lib/pythonX.Y/site-packages/dmr/lib/libdmr.so -> PREFIX/bin/pythonX.Y: a wheel built by one
 * interpreter and installed in a venv); else the one that built it. The layout is checked folder by
 * folder: a source checkout (CHECKOUT/dmr/lib/libdmr.so) must never lead to some unrelated
 * /bin/pythonX.Y that happens to sit that many folders up. */
static const char *interpreter(char *buf, size_t size) {
    const char *env = getenv("DMR_PYTHON");
    if (env && *env) return env;
    Dl_info info;
    if (!dladdr((void *)dmr_init, &info) || !info.dli_fname || strlen(info.dli_fname) >= size)
        return DMR_PYTHON;
    char pyver[32];
    snprintf(pyver, sizeof pyver, "python%d.%d", PY_MAJOR_VERSION, PY_MINOR_VERSION);
    const char *expected[] = {"libdmr.so", "lib", "dmr", "site-packages", pyver, "lib"};
    strcpy(buf, info.dli_fname);
    for (size_t up = 0; up < sizeof expected / sizeof *expected; up++) {
        char *slash = strrchr(buf, '/');
        if (!slash || (up > 0 && strcmp(slash + 1, expected[up]) != 0)) return DMR_PYTHON;
        *slash = '\0';
    }
    size_t used = strlen(buf);
    snprintf(buf + used, size - used, "/bin/%s", pyver);
    return access(buf, X_OK) == 0 ? buf : DMR_PYTHON;
}

static int start_python(void) {
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    char buf[4096];
    const char *python = interpreter(buf, sizeof buf);
    config.install_signal_handlers = 0; /* the program's signals stay the program's */
    config.parse_argv = 0;
    config.buffered_stdio = 0; /* Python's output and the program's must not overtake each other */
    PyStatus status = PyConfig_SetBytesString(&config, &config.program_name, python);
    if (!PyStatus_Exception(status))
        status = PyConfig_SetBytesString(&config, &config.executable, python);
    if (!PyStatus_Exception(status)) status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status))
        return fail(DMR_ERR_INIT, "dmr_init", "cannot start Python (%s): %s", python,
                    status.err_msg ? status.err_msg : "unknown error");
    PyEval_SaveThread(); /* released between calls (taken again by PyGILState_Ensure) */
    return 0;
}

int dmr_init(void) {
    int up = 0;
    MPI_Initialized(&up);
    if (!up) return fail(DMR_ERR_INIT, "dmr_init", "call it after MPI_Init");
    if (capi) return 0;
    if (!Py_IsInitialized()) {
        int rc = start_python();
        if (rc) return rc;
    }
    PyGILState_STATE gil = PyGILState_Ensure();
    int rc = 0;
    PyObject *config = PyImport_ImportModule("dmr.config");
    PyObject *module = config ? PyImport_ImportModule("dmr.capi") : NULL;
    if (!module) {
        rc = fail_python("dmr_init (importing the dmr runtime; is DMR_PYTHON the toolkit's interpreter?)");
    } else {
        arg_error = PyObject_GetAttrString(config, "DMRArgumentError");
        handle_error = PyObject_GetAttrString(module, "HandleError");
        capi = module;
        PyObject *argv = command_line();
        PyObject *r = call("init", "(O)", argv);
        Py_DECREF(argv);
        if (!r) {
            rc = fail_python("dmr_init");
            Py_CLEAR(capi);
        }
        Py_XDECREF(r);
    }
    Py_XDECREF(config);
    PyGILState_Release(gil);
    return rc;
}

/* A call whose result is an int (comm handles, sizes) or nothing (out NULL); 0 or an error code. */
static int call_int(const char *where, const char *name, long *out, const char *format, ...) {
    READY(where);
    PyGILState_STATE gil = PyGILState_Ensure();
    va_list ap;
    va_start(ap, format);
    PyObject *result = vcall(name, format, ap);
    va_end(ap);
    int rc = 0;
    if (!result) {
        rc = fail_python(where);
    } else if (out) {
        *out = PyLong_AsLong(result);
        if (*out == -1 && PyErr_Occurred()) rc = fail_python(where);
    }
    Py_XDECREF(result);
    PyGILState_Release(gil);
    return rc;
}

MPI_Fint dmr_comm_f(void) {
    long f = 0;
    return call_int("dmr_comm", "comm", &f, "()") ? MPI_Comm_c2f(MPI_COMM_NULL) : (MPI_Fint)f;
}

MPI_Comm dmr_comm(void) { return MPI_Comm_f2c(dmr_comm_f()); }

int dmr_size(void) {
    long n = 0;
    int rc = call_int("dmr_size", "size", &n, "()");
    return rc ? rc : (int)n;
}

int dmr_joining(dmr_handle *h) {
    long n = 0;
    if (h) *h = 0;
    if (call_int("dmr_joining", "joining", &n, "()")) return 0;
    if (h) *h = (dmr_handle)n;
    return n != 0;
}

static int check(const char *where, int asynchronous, int min, int max, int factor, int preferred,
                 int *new_size, dmr_handle *h) {
    READY(where);
    if (h) *h = 0;
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *r = call("check", "(iiiiO)", min, max, factor, preferred, asynchronous ? Py_True : Py_False);
    int action = DMR_NO_ACTION, size = 0, handle = 0;
    int rc;
    if (r && PyArg_ParseTuple(r, "iii", &action, &size, &handle)) {
        if (new_size) *new_size = size;
        if (h) *h = handle;
        rc = action;
    } else {
        rc = fail_python(where);
    }
    Py_XDECREF(r);
    PyGILState_Release(gil);
    return rc;
}

int dmr_check_status(int min, int max, int factor, int preferred, int *new_size, dmr_handle *h) {
    return check("dmr_check_status", 0, min, max, factor, preferred, new_size, h);
}

int dmr_icheck_status(int min, int max, int factor, int preferred, int *new_size, dmr_handle *h) {
    return check("dmr_icheck_status", 1, min, max, factor, preferred, new_size, h);
}

MPI_Fint dmr_handle_comm_f(dmr_handle h) {
    long f = 0;
    return call_int("dmr_handle_comm", "handle_comm", &f, "(i)", h) ? MPI_Comm_c2f(MPI_COMM_NULL) : (MPI_Fint)f;
}

MPI_Comm dmr_handle_comm(dmr_handle h) { return MPI_Comm_f2c(dmr_handle_comm_f(h)); }

int dmr_handle_sizes(dmr_handle h, int *old_size, int *new_size) {
    READY("dmr_handle_sizes");
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *r = call("handle_info", "(i)", h);
    int action = 0, old = 0, now = 0, rc;
    if (r && PyArg_ParseTuple(r, "iii", &action, &old, &now)) {
        if (old_size) *old_size = old;
        if (new_size) *new_size = now;
        rc = action;
    } else {
        rc = fail_python("dmr_handle_sizes");
    }
    Py_XDECREF(r);
    PyGILState_Release(gil);
    return rc;
}

int dmr_redistribute(dmr_handle h, const void *local, int count, MPI_Datatype type, void **out,
                     int *out_count) {
    int size = 0;
    MPI_Aint lb = 0, extent = 0;
    if (type == MPI_DATATYPE_NULL || MPI_Type_size(type, &size) != MPI_SUCCESS ||
        MPI_Type_get_extent(type, &lb, &extent) != MPI_SUCCESS)
        return fail(DMR_ERR_ARG, "dmr_redistribute", "not a valid MPI datatype");
    if (size <= 0 || lb != 0 || extent != size)
        return fail(DMR_ERR_ARG, "dmr_redistribute",
                    "the datatype must be contiguous (size %d, lb %ld, extent %ld)", size, (long)lb,
                    (long)extent);
    return dmr_redistribute_bytes(h, local, count, size, out, out_count);
}

int dmr_redistribute_bytes(dmr_handle h, const void *local, int count, int unit, void **out,
                           int *out_count) {
    const char *where = "dmr_redistribute";
    READY(where);
    if (!out || !out_count) return fail(DMR_ERR_ARG, where, "out and out_count must not be NULL");
    *out = NULL;
    *out_count = 0;
    if (count < 0 || (count > 0 && !local))
        return fail(DMR_ERR_ARG, where, "local must hold count >= 0 elements (NULL only with count 0)");
    if (unit <= 0) return fail(DMR_ERR_ARG, where, "an element must have >= 1 byte, got %d", unit);
    PyGILState_STATE gil = PyGILState_Ensure();
    static char nothing[1];
    PyObject *view = PyMemoryView_FromMemory(count ? (char *)local : nothing,
                                             (Py_ssize_t)count * unit, PyBUF_READ);
    PyObject *r = view ? call("redistribute", "(iOii)", h, view, count, unit) : NULL;
    int rc = 0;
    Py_buffer buf;
    if (r && PyObject_GetBuffer(r, &buf, PyBUF_C_CONTIGUOUS) == 0) {
        Py_ssize_t rows = buf.len / unit;
        if (rows > INT_MAX) {
            rc = fail(DMR_ERR_ARG, where, "%ld elements do not fit in an int", (long)rows);
        } else if (!(*out = malloc(buf.len ? (size_t)buf.len : 1))) {
            rc = fail(DMR_ERR_RUNTIME, where, "out of memory (%ld bytes)", (long)buf.len);
        } else {
            memcpy(*out, buf.buf, (size_t)buf.len);
            *out_count = (int)rows;
        }
        PyBuffer_Release(&buf);
    } else {
        rc = fail_python(where);
    }
    Py_XDECREF(r);
    Py_XDECREF(view);
    PyGILState_Release(gil);
    return rc;
}

void dmr_free(void *p) { free(p); }

int dmr_finish(dmr_handle h) {
    READY("dmr_finish");
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *r = call("finish", "(i)", h);
    int rc = r ? PyObject_IsTrue(r) : fail_python("dmr_finish");
    Py_XDECREF(r);
    PyGILState_Release(gil);
    return rc;
}

int dmr_set_progress(double fraction) {
    return call_int("dmr_set_progress", "set_progress", NULL, "(d)", fraction);
}

int dmr_request_growth(int procs) {
    return call_int("dmr_request_growth", "request_growth", NULL, "(i)", procs);
}

int dmr_finalize(void) {
    int rc = call_int("dmr_finalize", "finalize", NULL, "()");
    fflush(stdout);
    return rc;
}

const char *dmr_error_message(void) { return message; }
