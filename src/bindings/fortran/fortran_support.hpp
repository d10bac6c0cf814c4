// Helpers shared by the generated Fortran entry points (build/src/bindings/fortran/
// fortran_bindings.cpp, made by gen_fortran.py) and the hand-written ones (fortran_*.cpp).
//
// Calling convention (gfortran; also Intel and flang): every argument by reference; one hidden
// `size_t` length per CHARACTER argument, appended after the explicit arguments in order; symbol
// = lower-case name + "_". Subroutines end with INTEGER IERROR.
//
// Sentinels: MPI_BOTTOM, MPI_IN_PLACE, MPI_STATUS_IGNORE... are Fortran variables, each alone in
// a common block /MPI_FC_<NAME>/ (symbol mpi_fc_<name>_, defined in fortran_runtime.cpp with the
// size the Fortran declaration gives it). A program's common block and ours are one object (the
// executable's definition interposes on the library's), so the library recognises a sentinel by
// its address and passes the C sentinel on.
//
// LOGICAL: gfortran's .TRUE. is 1 and .FALSE. is 0, the same as C's results of comparisons, so
// LOGICAL arrays pass through unchanged; scalar outputs are normalised to exactly 0/1.
//
// Threading: all helpers are reentrant; nothing here takes a lock (the C entry points do).
#pragma once

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include <mpi.h>

#include "fortran_have.h"

#define WF_EXPORT __attribute__((visibility("default")))
// Marks a hand-written binding for gen_fortran.py's coverage check (expands to nothing).
#define WANMPI_F_HAND(name)

extern "C" {
// A Fortran procedure argument (callbacks), cast to the C callback type where it is used.
typedef void (*wf_proc)(void);

// The sentinels' storage (fortran_runtime.cpp). Sizes match mpif.h's declarations.
extern WF_EXPORT MPI_Fint mpi_fc_bottom_;
extern WF_EXPORT MPI_Fint mpi_fc_in_place_;
extern WF_EXPORT MPI_Fint mpi_fc_buffer_automatic_;
extern WF_EXPORT MPI_Fint mpi_fc_status_ignore_[sizeof(MPI_Status) / sizeof(MPI_Fint)];
extern WF_EXPORT MPI_Fint mpi_fc_statuses_ignore_[sizeof(MPI_Status) / sizeof(MPI_Fint)];
extern WF_EXPORT MPI_Fint mpi_fc_errcodes_ignore_[1];
extern WF_EXPORT MPI_Fint mpi_fc_unweighted_[1];
extern WF_EXPORT MPI_Fint mpi_fc_weights_empty_[1];
extern WF_EXPORT char mpi_fc_argv_null_[1];
extern WF_EXPORT char mpi_fc_argvs_null_[1];
}

static_assert(sizeof(MPI_Fint) == 4 && sizeof(MPI_Comm) == sizeof(MPI_Fint),
              "Fortran INTEGER handles are the C handles");
static_assert(sizeof(MPI_Aint) == 8 && sizeof(MPI_Offset) == 8 && sizeof(MPI_Count) == 8 &&
                  sizeof(void*) == 8,
              "MPI_ADDRESS_KIND = MPI_OFFSET_KIND = MPI_COUNT_KIND = 8");

namespace wanmpi::fortran {

constexpr MPI_Fint kTrue = 1;  // gfortran's .TRUE.
constexpr MPI_Fint kFalse = 0;

// Report an error found in a Fortran binding (not by the C function it calls): raises it on
// MPI_COMM_WORLD's handler with `msg`, returns the code for IERROR.
int error(int errclass, const char* fname, const char* msg);

}  // namespace wanmpi::fortran

inline void* wf_buf(void* p) {
    if (p == &mpi_fc_bottom_) return MPI_BOTTOM;
    if (p == &mpi_fc_in_place_) return MPI_IN_PLACE;
    if (p == &mpi_fc_buffer_automatic_) return MPI_BUFFER_AUTOMATIC;
    return p;
}
inline MPI_Status* wf_status(MPI_Fint* p) {
    return p == mpi_fc_status_ignore_ ? MPI_STATUS_IGNORE : reinterpret_cast<MPI_Status*>(p);
}
inline MPI_Status* wf_statuses(MPI_Fint* p) {
    return p == mpi_fc_statuses_ignore_ ? MPI_STATUSES_IGNORE : reinterpret_cast<MPI_Status*>(p);
}
inline int* wf_errcodes(MPI_Fint* p) {
    return p == mpi_fc_errcodes_ignore_ ? MPI_ERRCODES_IGNORE : p;
}
inline int* wf_weights(MPI_Fint* p) {
    if (p == mpi_fc_unweighted_) return MPI_UNWEIGHTED;
    if (p == mpi_fc_weights_empty_) return MPI_WEIGHTS_EMPTY;
    return p;
}
inline size_t wf_len(MPI_Fint n) { return n > 0 ? size_t(n) : 0; }

// LOGICAL outputs: exactly .TRUE./.FALSE. whatever nonzero value C stored.
inline void wf_logicals(MPI_Fint* p, MPI_Fint n) {
    for (MPI_Fint i = 0; i < n; ++i) p[i] = p[i] ? wanmpi::fortran::kTrue : wanmpi::fortran::kFalse;
}

// CHARACTER input: the blank-padded Fortran string without its trailing blanks (and leading
// ones when `strip_leading`: info keys and values, MPI 4.0 §10).
inline std::string wf_str_in(const char* s, size_t len, bool strip_leading) {
    size_t b = 0, e = len;
    while (e > 0 && s[e - 1] == ' ') --e;
    if (strip_leading)
        while (b < e && s[b] == ' ') ++b;
    return std::string(s + b, e - b);
}

// Copy a C string into a Fortran CHARACTER of length `len`: truncated, then blank-padded.
inline void wf_str_to_fortran(const char* c, char* f, size_t len) {
    size_t n = strnlen(c, len);
    memcpy(f, c, n);
    memset(f + n, ' ', len - n);
}

// CHARACTER output: the C function writes into a buffer at least as large as any MPI_MAX_*
// string (C callers are told to pass that size), then the result is copied into the Fortran
// string, blank-padded. Costs an allocation; no string output is on a hot path.
class wf_str_out {
public:
    explicit wf_str_out(size_t flen) : buf_(flen + 1 > kMin ? flen + 1 : kMin, '\0') {}
    char* data() { return buf_.data(); }
    void copy_to(char* f, size_t flen) const { wf_str_to_fortran(buf_.data(), f, flen); }

private:
    static constexpr size_t kMin = MPI_MAX_LIBRARY_VERSION_STRING + 1;
    std::vector<char> buf_;
};

// MPI_File: a pointer in C, an INTEGER in Fortran (MPI_File_c2f/f2c; MPI_FILE_NULL <-> 0).
inline MPI_File wf_file_f2c(MPI_Fint f) { return PMPI_File_f2c(f); }
inline MPI_Fint wf_file_c2f(MPI_File f) { return PMPI_File_c2f(f); }

// MPI-1 Fortran address arguments are default INTEGERs: fail rather than truncate.
inline bool wf_aint_to_fint(MPI_Aint v, MPI_Fint* out, const char* fname, int* rc) {
    *out = static_cast<MPI_Fint>(v);
    if (static_cast<MPI_Aint>(*out) == v) return true;
    *rc = wanmpi::fortran::error(MPI_ERR_ARG, fname,
                                 "address or extent does not fit a default INTEGER; use the "
                                 "MPI-2 routine with INTEGER(KIND=MPI_ADDRESS_KIND)");
    return false;
}

// Whether `rc` is of class MPI_ERR_IN_STATUS (Waitall/Waitsome/Testsome still filled their
// outputs).
inline bool wf_in_status(int rc) {
    int cls = MPI_ERR_OTHER;
    return PMPI_Error_class(rc, &cls) == MPI_SUCCESS && cls == MPI_ERR_IN_STATUS;
}
