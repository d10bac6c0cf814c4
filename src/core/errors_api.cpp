// MPI error-handling functions (issue 3 extends this file: user error handlers, error classes).
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
    if (!valid_error_code(errorcode)) {
        copy_string("Unknown error code " + std::to_string(errorcode), string,
                    MPI_MAX_ERROR_STRING, resultlen);
        return MPI_ERR_ARG;
    }
    return copy_string(error_text(errorcode), string, MPI_MAX_ERROR_STRING, resultlen);
}

int Error_class(int errorcode, int* errorclass) {
    if (!valid_error_code(errorcode)) return raise(nullptr, make_error(MPI_ERR_ARG,
                                                   "invalid error code %d", errorcode));
    *errorclass = error_class_of(errorcode);
    return MPI_SUCCESS;
}

int Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler) {
    Comm* c = comm_lookup(comm);
    if (!c) return raise(nullptr, make_error(MPI_ERR_COMM, "invalid communicator 0x%x", unsigned(comm)));
    if (!errhandler_valid(errhandler))
        return raise(c, make_error(MPI_ERR_ARG, "invalid error handler 0x%x", unsigned(errhandler)));
    c->errhandler = errhandler;
    return MPI_SUCCESS;
}
int Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler* errhandler) {
    Comm* c = comm_lookup(comm);
    if (!c) return raise(nullptr, make_error(MPI_ERR_COMM, "invalid communicator 0x%x", unsigned(comm)));
    *errhandler = c->errhandler;
    return MPI_SUCCESS;
}
int Errhandler_set(MPI_Comm comm, MPI_Errhandler e) { return Comm_set_errhandler(comm, e); }
int Errhandler_get(MPI_Comm comm, MPI_Errhandler* e) { return Comm_get_errhandler(comm, e); }

}  // namespace wanmpi::impl
