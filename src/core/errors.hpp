// MPI errors: classes, codes with specific messages, and error handlers.
//
// An error code is `class | slot << 7`: the class (< 128) plus a slot in a ring of recent
// specific messages, so MPI_Error_string can say exactly what went wrong ("Invalid rank 7:
// MPI_COMM_WORLD has 4 ranks") while MPI_Error_class stays a mask. A slot is reused after
// kErrorSlots newer errors; its old code then shows the newer text (documented limit).
//
// Threading: make_error is thread-safe (its own lock); handlers run under the API lock.
#pragma once

#include <string>
#include <mpi.h>

namespace wanmpi::core {

struct Comm;

constexpr int kErrorSlots = 4096;

// A new error code of class `cls` with a specific message (printf format). Logged at debug level.
int make_error(int cls, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
int error_class_of(int code);
bool valid_error_code(int code);
const char* error_class_text(int cls);
std::string error_text(int code);  // "<class text>: <specific message>"

// Raise `code` on `comm` from the running API function: calls the communicator's error handler.
// Returns `code` when the handler returns (MPI_ERRORS_RETURN, user handlers); does not return
// for MPI_ERRORS_ARE_FATAL / MPI_ERRORS_ABORT. comm == nullptr means MPI_COMM_WORLD's handler
// (or fatal before MPI_Init).
int raise(Comm* comm, int code);

// Print `msg` naming this rank and abort the whole job with `exitcode`.
[[noreturn]] void abort_job(int exitcode, const std::string& msg);

bool errhandler_valid(MPI_Errhandler e);

}  // namespace wanmpi::core
