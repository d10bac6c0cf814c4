// MPI_Info objects: ordered (key, value) string pairs. Handles: 0x5c000000 | index; index 1 is
// MPI_INFO_ENV (read-only), user objects use the rest of the table (indexes are reused after
// MPI_Info_free, as MPICH does). Info calls work before MPI_Init and after MPI_Finalize (MPI-4).
//
// This header is the interface for other code that takes info arguments (MPI_Comm_set_info,
// MPI_Comm_dup_with_info, MPI_Win_*, MPI_File_*): they read an info's contents and make new
// info objects to return to the user.
//
// Threading: under the API lock, like every MPI call that takes it.
#pragma once

#include <string>
#include <utility>
#include <vector>
#include <mpi.h>

namespace wanmpi::core {

using InfoPairs = std::vector<std::pair<std::string, std::string>>;

// A user info object or MPI_INFO_ENV (not MPI_INFO_NULL).
bool info_valid(MPI_Info info);
// The check of an optional info argument (window, file, session, partitioned, persistent
// collective...): MPI_SUCCESS for MPI_INFO_NULL or a valid info, else a new MPI_ERR_INFO code
// naming `fname` (if given) and the handle, for the caller to raise on its own object.
int info_arg_check(MPI_Info info, const char* fname = nullptr);
// The pairs of `info` in insertion order; MPI_INFO_NULL gives none. False if `info` is invalid.
bool info_contents(MPI_Info info, InfoPairs* out);
// The value of `key` in `info`; false if absent (or `info` is MPI_INFO_NULL / invalid).
bool info_value(MPI_Info info, const std::string& key, std::string* value);
// A new user info object holding `pairs` (the user frees it with MPI_Info_free).
MPI_Info info_create(const InfoPairs& pairs);

}  // namespace wanmpi::core
