// Internal to core: the state the MPI_T (tools information interface) sources share.
//   mpi_t.cpp       MPI_T_init_thread/finalize, control variables (the tunables registry),
//                   enumerations, categories, and the event/source calls (wanmpi has none)
//   mpi_t_pvar.cpp  performance variables, pvar sessions and handles
//
// Lifetime: the tables are built at the first MPI_T_init_thread from what static
// initialisation registered (tunables, pvars) and never change afterwards, so indices are
// stable for the life of the process (MPI_T_category_changed always reports 0). Handles and
// sessions are owned here; MPI_T_finalize of the outermost MPI_T_init_thread frees them.
// Threading: every MPI_T entry point holds lock() for its whole call, so MPI_T is
// MPI_THREAD_MULTIPLE whatever level MPI_Init_thread gave. Reading or writing what the engine
// owns (tunable values, WAN link statistics) also takes the API lock, as an MPI call would.
#pragma once

#include <mpi.h>

#include <mutex>
#include <string>
#include <utility>
#include <vector>

// The objects behind mpi.h's MPI_T_enum / cvar / pvar handle types (global names, as mpi.h
// declares them).
struct wanmpi_t_enum_s {
    std::string name;
    std::vector<std::pair<int, std::string>> items;  // value, name
};

namespace wanmpi::core::mpit {

std::mutex& lock();
// MPI_T_init_thread has been called more often than MPI_T_finalize (caller holds lock()).
bool active();

// MPI_T's string return convention (MPI 4.0 §15.3.3), as MPICH implements it: nothing when
// buf or len is NULL; *len == 0 asks for the length (terminator included); otherwise copy at
// most *len - 1 characters and the terminator, and set *len to what was written.
void copy_string(const std::string& s, char* buf, int* len);

using Guard = std::lock_guard<std::mutex>;
// The first lines of an MPI_T entry point, after taking lock().
#define MPIT_CHECK_INIT() \
    if (!::wanmpi::core::mpit::active()) return MPI_T_ERR_NOT_INITIALIZED

// The body of every MPI_T_*_get_num call: `*out = count()` under lock(), once initialized.
template <class F>
int get_num(int* out, F count) {
    std::lock_guard<std::mutex> g(lock());
    if (!active()) return MPI_T_ERR_NOT_INITIALIZED;
    if (!out) return MPI_T_ERR_INVALID;
    *out = count();
    return MPI_SUCCESS;
}

// `rc` once initialized (the calls whose answer does not depend on their arguments).
int answer(int rc);

// An enumeration that lives as long as the process (MPI_T_enum values point to these).
wanmpi_t_enum_s* make_enum(std::string name, std::vector<std::pair<int, std::string>> items);
bool valid_enum(MPI_T_enum e);

// Performance variables, by index (mpi_t_pvar.cpp), for the categories.
int pvar_count();
const std::string& pvar_category(int index);
// MPI_T_finalize of the outermost init: free every session and its handles.
void free_all_sessions();

}  // namespace wanmpi::core::mpit
