// Attribute caching on communicators, datatypes and windows: keyvals, the per-object attribute
// lists (side tables keyed by the object's handle, so the objects themselves carry nothing), the
// predefined attributes of MPI_COMM_WORLD, and the hooks the object code calls so that copy and
// delete callbacks run at the points the standard names.
//
// Lifecycle: a keyval lives while the user holds it (until MPI_*_free_keyval) or any attribute
// uses it (MPI 4.0 §7.7.2: freeing a keyval in use does not disturb the attributes; their delete
// callbacks still run later). An object's attributes live until it is freed; the code that frees
// (or duplicates) an object calls the hooks below.
//
// Order: attributes are kept in the order they were first set (setting an existing attribute
// again keeps its place). Copies run in that order; deletes in the reverse order (LIFO, what
// MPI 2.2+ requires at MPI_Finalize and what MPICH does everywhere).
//
// Threading: everything runs under the API lock. Callbacks run with no internal state borrowed
// (they may call MPI again, including attribute functions on the same object).
#pragma once

#include <mpi.h>

namespace wanmpi::core {

struct Comm;

// The object kinds (also bits 22..25 of a keyval handle, as in MPICH).
enum class AttrKind : int { comm = 1, type = 3, win = 8 };

// MPI_Comm_dup and friends: run every attribute's copy callback from `from` onto `to` (in the
// order the attributes were set). Returns MPI_SUCCESS, or an error code (not raised) after
// deleting whatever was already copied onto `to`; the caller then fails the dup.
int attr_comm_copy(Comm* from, Comm* to);
// MPI_Comm_free: run every delete callback of `c`, in the reverse order of attribute setting,
// and drop its attributes. All are removed even if a callback fails; the last failure is
// returned (an error code, not raised).
int attr_comm_delete_all(Comm* c);

// The same for datatypes (MPI_Type_dup / MPI_Type_free) and windows (MPI_Win_free).
int attr_type_copy(MPI_Datatype from, MPI_Datatype to);
int attr_type_delete_all(MPI_Datatype t);
int attr_win_delete_all(MPI_Win w);

// To be called first thing in MPI_Finalize (still initialized: MPI_Finalized says false):
// deletes the attributes of MPI_COMM_SELF, then of MPI_COMM_WORLD, each in LIFO order
// (MPI 4.0 §11.2.4). Returns the last callback failure (not raised) or MPI_SUCCESS.
int attr_finalize();

// Generic access, for the C entry points in attr.cpp and later bindings (Fortran, windows).
// `obj` is the object's handle (already validated by the caller). Return MPI_SUCCESS or an
// error code that the caller raises on the right object.
int keyval_create(AttrKind kind, MPI_Comm_copy_attr_function* copy_fn,
                  MPI_Comm_delete_attr_function* delete_fn, void* extra_state, int* keyval);
int keyval_free(AttrKind kind, int* keyval);
int attr_set(AttrKind kind, int obj, int keyval, void* value);
int attr_get(AttrKind kind, int obj, int keyval, void* value_out, int* flag);
int attr_delete(AttrKind kind, int obj, int keyval);

}  // namespace wanmpi::core
