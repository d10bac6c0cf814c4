// Language interoperability (functions/fortran.txt): C <-> Fortran handles and statuses.
//
// Handles: a C handle is an int that a Fortran INTEGER holds unchanged (include/mpi.h.in), so
// MPI_X_c2f / MPI_X_f2c are the identity; an invalid Fortran handle gives an invalid C handle,
// which the next MPI call reports. Statuses: C, Fortran (INTEGER(MPI_STATUS_SIZE)) and
// mpi_f08 (TYPE(MPI_Status)) share one layout of 5 ints, so conversions copy; the IGNORE
// sentinels are refused (MPI 4.0 §19.3.5 makes passing them erroneous).
#include <cstring>

#include "bindings/impl.hpp"
#include "core/errors.hpp"
#include "fortran/fortran_support.hpp"

namespace wanmpi::impl {

using core::make_error;
using core::raise;

MPI_Fint Comm_c2f(MPI_Comm comm) { return MPI_Fint(comm); }
MPI_Comm Comm_f2c(MPI_Fint comm) { return MPI_Comm(comm); }
MPI_Fint Type_c2f(MPI_Datatype datatype) { return MPI_Fint(datatype); }
MPI_Datatype Type_f2c(MPI_Fint datatype) { return MPI_Datatype(datatype); }
MPI_Fint Group_c2f(MPI_Group group) { return MPI_Fint(group); }
MPI_Group Group_f2c(MPI_Fint group) { return MPI_Group(group); }
MPI_Fint Op_c2f(MPI_Op op) { return MPI_Fint(op); }
MPI_Op Op_f2c(MPI_Fint op) { return MPI_Op(op); }
MPI_Fint Request_c2f(MPI_Request request) { return MPI_Fint(request); }
MPI_Request Request_f2c(MPI_Fint request) { return MPI_Request(request); }
MPI_Fint Message_c2f(MPI_Message message) { return MPI_Fint(message); }
MPI_Message Message_f2c(MPI_Fint message) { return MPI_Message(message); }
MPI_Fint Session_c2f(MPI_Session session) { return MPI_Fint(session); }
MPI_Session Session_f2c(MPI_Fint session) { return MPI_Session(session); }

static_assert(sizeof(MPI_Status) == 5 * sizeof(MPI_Fint) &&
              sizeof(MPI_F08_status) == sizeof(MPI_Status));

static int copy_status(const void* from, void* to, const char* what_from, const char* what_to) {
    if (from == nullptr || from == MPI_STATUS_IGNORE || from == mpi_fc_status_ignore_ ||
        from == mpi_fc_statuses_ignore_)
        return raise(nullptr, make_error(MPI_ERR_ARG, "%s is NULL or MPI_STATUS_IGNORE",
                                         what_from));
    if (to == nullptr || to == MPI_STATUS_IGNORE || to == mpi_fc_status_ignore_ ||
        to == mpi_fc_statuses_ignore_)
        return raise(nullptr, make_error(MPI_ERR_ARG, "%s is NULL or MPI_STATUS_IGNORE", what_to));
    memmove(to, from, sizeof(MPI_Status));
    return MPI_SUCCESS;
}

int Status_c2f(const MPI_Status* c_status, MPI_Fint* f_status) {
    return copy_status(c_status, f_status, "c_status", "f_status");
}
int Status_f2c(const MPI_Fint* f_status, MPI_Status* c_status) {
    return copy_status(f_status, c_status, "f_status", "c_status");
}
int Status_c2f08(const MPI_Status* c_status, MPI_F08_status* f08_status) {
    return copy_status(c_status, f08_status, "c_status", "f08_status");
}
int Status_f082c(const MPI_F08_status* f08_status, MPI_Status* c_status) {
    return copy_status(f08_status, c_status, "f08_status", "c_status");
}
int Status_f2f08(const MPI_Fint* f_status, MPI_F08_status* f08_status) {
    return copy_status(f_status, f08_status, "f_status", "f08_status");
}
int Status_f082f(const MPI_F08_status* f08_status, MPI_Fint* f_status) {
    return copy_status(f08_status, f_status, "f08_status", "f_status");
}

}  // namespace wanmpi::impl
