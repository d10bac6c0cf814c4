// MPI errors: classes, codes with specific messages, user-added classes/codes/strings, and error
// handlers.
//
// Error code layout (an int, never negative):
//   - wanmpi's own codes: `class | slot << 7`: a predefined class (< 128) plus a slot (1..
//     kErrorSlots) in a ring of recent specific messages, so MPI_Error_string can say exactly
//     what went wrong ("Invalid rank 7: MPI_COMM_WORLD has 4 ranks") while MPI_Error_class stays
//     a mask. A slot is reused after kErrorSlots newer errors; its old code then shows the newer
//     text (documented limit). All such codes are <= MPI_ERR_LASTCODE.
//   - user classes and codes (MPI_Add_error_class/code): bit 30 set, like MPICH, so they are
//     above MPI_ERR_LASTCODE (MPI_LASTUSEDCODE >= MPI_ERR_LASTCODE as the standard requires):
//     `0x40000000 | n << 12 | field`, where `field` (12 bits) is the class (a predefined class
//     < 128, or 128 + i for the i-th user class, whose value is 0x40000000 | field) and n = 0
//     for the class itself, n >= 1 for an added code (numbered across all classes).
//
// Error handlers: MPI_ERRORS_ARE_FATAL / RETURN / ABORT (0x54000000..2) and user handlers
// (0x54800000 | index) made by MPI_{Comm,Win,File}_create_errhandler. A user handler object is
// never reclaimed (a communicator duplicated by code that copies the handle may still name it;
// each is a few bytes); MPI_Errhandler_free only drops the user's reference, after which the
// handle is invalid as an argument.
//
// Threading: make_error and the error-code/string functions are thread-safe (own lock; the
// MPI_Error_* entry points take no API lock); error handlers are created and run under the API
// lock (recursive: a handler may call MPI).
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
const char* error_class_text(int cls);  // nullptr if cls is not a predefined class
// "<class text>, <specific message>"; for user classes/codes, their string ("" if none).
std::string error_text(int code);

// Raise `code` on `comm` from the running API function: calls the communicator's error handler.
// Returns `code` when the handler returns (MPI_ERRORS_RETURN, user handlers); does not return
// for MPI_ERRORS_ARE_FATAL / MPI_ERRORS_ABORT. comm == nullptr means MPI_COMM_WORLD's handler
// (or fatal before MPI_Init).
int raise(Comm* comm, int code);
// An invalid communicator handle given to an MPI call: raises MPI_ERR_COMM on MPI_COMM_WORLD's
// handler (a bad handle has none of its own) and returns the code.
int raise_bad_comm(MPI_Comm h);
// The entry points' prologue: `c` = the communicator behind handle `h`, or return the error.
#define WANMPI_GET_COMM(c, h)                                                                  \
    ::wanmpi::core::Comm* c = ::wanmpi::core::comm_lookup(h);                                  \
    if (!c) return ::wanmpi::core::raise_bad_comm(h)
// Raise `code` for an MPI-IO call: the handler attached to MPI_FILE_NULL (MPI_ERRORS_RETURN
// unless the program set another one), which is what the standard uses for MPI_File_open and
// for calls on files without a handler of their own. `fh` is passed to a user handler.
int raise_file(MPI_File fh, int code);
// The same for an open file whose handler is `eh` (src/io keeps each file's handler).
int raise_file_eh(MPI_File fh, MPI_Errhandler eh, int code);

// Raise `code` on a session (MPI 4.0 Sessions, session.cpp) whose handler is `eh`: a user
// session handler gets `s`; returns `code` unless the handler aborts.
int raise_session(MPI_Session s, MPI_Errhandler eh, int code);

// Raise `code` on a window (src/rma) whose handler is `eh`: a user window handler gets `w`;
// returns `code` unless the handler aborts.
int raise_win(MPI_Win w, MPI_Errhandler eh, int code);

// Print `msg` naming this rank and abort the whole job with `exitcode`.
[[noreturn]] void abort_job(int exitcode, const std::string& msg);

// ---- error handlers ---------------------------------------------------------------------------
enum class EhKind : int { comm = 1, win = 2, file = 3, session = 4 };

// A predefined handler or a user handler the user still holds a reference to.
bool errhandler_valid(MPI_Errhandler e);
// errhandler_valid and usable on an object of kind `k` (predefined ones fit every kind).
bool errhandler_fits(MPI_Errhandler e, EhKind k);
// A new user handler of kind `k` calling `fn` (the C variadic signature of that kind).
MPI_Errhandler errhandler_create(EhKind k, void (*fn)());
// The user hands a handle back (MPI_Errhandler_free) or gets a new one (MPI_*_get_errhandler).
// errhandler_release returns false for an invalid handle. Predefined handles: no-ops.
bool errhandler_release(MPI_Errhandler e);
void errhandler_retain(MPI_Errhandler e);
// The default handler for files (the one attached to MPI_FILE_NULL).
MPI_Errhandler file_default_errhandler();
void set_file_default_errhandler(MPI_Errhandler e);

// ---- user error classes, codes, strings -------------------------------------------------------
// Return MPI_SUCCESS or an (unraised) error code.
int add_error_class(int* errorclass);
int add_error_code(int errorclass, int* errorcode);
int add_error_string(int errorcode, const char* string);
// MPI_LASTUSEDCODE: "the current maximum error class including the user-defined ones"
// (MPI 4.0 §9.5; added codes do not count, as in MPICH), >= MPI_ERR_LASTCODE.
int last_used_code();

}  // namespace wanmpi::core
