// MPI error-handling functions: error strings and classes, user error classes/codes/strings,
// communicator error handlers (create, set, get, call, free). The window versions live with the
// windows (src/rma/win.cpp), the file versions with MPI-IO (src/io).
#include <algorithm>
#include <cstring>
#include <string>

#include "bindings/impl.hpp"
#include "core/engine.hpp"
#include "core/errors.hpp"

namespace wanmpi::impl {
using namespace wanmpi::core;

static int copy_string(const std::string& s, char* out, int max, int* len) {
    int n = int(std::min<size_t>(s.size(), size_t(max - 1)));
    std::memcpy(out, s.data(), size_t(n));
    out[n] = '\0';
    if (len) *len = n;
    return MPI_SUCCESS;
}


int Error_string(int errorcode, char* string, int* resultlen) {
    if (!string || !resultlen) return MPI_ERR_ARG;
    if (!valid_error_code(errorcode)) {
        copy_string("Unknown error code " + std::to_string(errorcode), string,
                    MPI_MAX_ERROR_STRING, resultlen);
        return MPI_ERR_ARG;
    }
    return copy_string(error_text(errorcode), string, MPI_MAX_ERROR_STRING, resultlen);
}

int Error_class(int errorcode, int* errorclass) {
    if (!valid_error_code(errorcode))
        return raise(nullptr, make_error(MPI_ERR_ARG, "invalid error code %d", errorcode));
    if (!errorclass) return raise(nullptr, make_error(MPI_ERR_ARG, "errorclass is NULL"));
    *errorclass = error_class_of(errorcode);
    return MPI_SUCCESS;
}

int Add_error_class(int* errorclass) {
    if (!errorclass) return raise(nullptr, make_error(MPI_ERR_ARG, "errorclass is NULL"));
    return raise(nullptr, add_error_class(errorclass));
}
int Add_error_code(int errorclass, int* errorcode) {
    if (!errorcode) return raise(nullptr, make_error(MPI_ERR_ARG, "errorcode is NULL"));
    return raise(nullptr, add_error_code(errorclass, errorcode));
}
int Add_error_string(int errorcode, const char* string) {
    return raise(nullptr, add_error_string(errorcode, string));
}

// ---- communicator error handlers ----------------------------------------------------------

int Comm_create_errhandler(MPI_Comm_errhandler_function* fn, MPI_Errhandler* errhandler) {
    if (!fn) return raise(nullptr, make_error(MPI_ERR_ARG, "error handler function is NULL"));
    if (!errhandler) return raise(nullptr, make_error(MPI_ERR_ARG, "errhandler is NULL"));
    *errhandler = errhandler_create(EhKind::comm, reinterpret_cast<void (*)()>(fn));
    return MPI_SUCCESS;
}
int Errhandler_create(MPI_Handler_function* fn, MPI_Errhandler* errhandler) {
    return Comm_create_errhandler(fn, errhandler);
}

int Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler) {
    WANMPI_GET_COMM(c, comm);
    if (!errhandler_valid(errhandler))
        return raise(c, make_error(MPI_ERR_ARG, "invalid error handler 0x%x",
                                   unsigned(errhandler)));
    if (!errhandler_fits(errhandler, EhKind::comm))
        return raise(c, make_error(MPI_ERR_ARG, "error handler 0x%x was created for windows or "
                                                "files, not communicators", unsigned(errhandler)));
    c->errhandler = errhandler;
    return MPI_SUCCESS;
}
int Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler* errhandler) {
    WANMPI_GET_COMM(c, comm);
    if (!errhandler) return raise(c, make_error(MPI_ERR_ARG, "errhandler is NULL"));
    *errhandler = c->errhandler;
    errhandler_retain(c->errhandler);  // a new reference the user frees (MPI-2.2 and later)
    return MPI_SUCCESS;
}
int Errhandler_set(MPI_Comm comm, MPI_Errhandler e) { return Comm_set_errhandler(comm, e); }
int Errhandler_get(MPI_Comm comm, MPI_Errhandler* e) { return Comm_get_errhandler(comm, e); }

int Comm_call_errhandler(MPI_Comm comm, int errorcode) {
    WANMPI_GET_COMM(c, comm);
    // Returns MPI_SUCCESS once the handler has returned (MPI_ERRORS_RETURN included); a fatal
    // handler does not return. raise() ignores MPI_SUCCESS, which is not an error to report.
    raise(c, errorcode);
    return MPI_SUCCESS;
}

int Errhandler_free(MPI_Errhandler* errhandler) {
    if (!errhandler) return raise(nullptr, make_error(MPI_ERR_ARG, "errhandler is NULL"));
    if (!errhandler_release(*errhandler))
        return raise(nullptr, make_error(MPI_ERR_ARG, "invalid error handler 0x%x",
                                         unsigned(*errhandler)));
    *errhandler = MPI_ERRHANDLER_NULL;
    return MPI_SUCCESS;
}

MPI_Fint Errhandler_c2f(MPI_Errhandler errhandler) { return MPI_Fint(errhandler); }
MPI_Errhandler Errhandler_f2c(MPI_Fint errhandler) { return MPI_Errhandler(errhandler); }

}  // namespace wanmpi::impl
