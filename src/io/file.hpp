// MPI-IO (MPI 3.1 chapter 13) on POSIX files: the file object shared by the io layer's parts.
//
//   file.cpp      open/close/delete/size/info/errhandlers/atomicity/sync, handles (C and Fortran)
//   view.cpp      file views: the filetype flattened into byte blocks; data offset -> file bytes
//   access.cpp    independent reads and writes (explicit offset, individual and shared pointer),
//                 nonblocking and split-collective forms, data representations
//   twophase.cpp  collective reads and writes with two-phase aggregation
//
// Layering: io sits above coll (it calls collectives on a private duplicate of the user's
// communicator through the impl:: functions, with the API lock already held by the entry point).
//
// Lifetime and ownership: MPI_File_open allocates a File (the MPI_File handle is its address,
// checked against the live set before every use); MPI_File_close frees it. The File owns its
// descriptor(s), its communicator duplicate, the duplicated etype/filetype of its view, and a
// reference to its error handler.
//
// Threading: every function here runs under the API lock (the generated entry points take it
// under MPI_THREAD_MULTIPLE), so a File needs no lock of its own. Processes coordinate through
// the file system: fcntl record locks for atomic mode and for the shared file pointer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>
#include <mpi.h>

#include "core/datatype.hpp"

namespace wanmpi::io {

// One contiguous range of file bytes; `soff` is where its data sits in the packed data stream
// of the access (the user's buffer in typemap order, after conversion to the file's datarep).
struct Seg {
    int64_t foff;
    int64_t len;
    int64_t soff;
};

struct View {
    int64_t disp = 0;
    MPI_Datatype etype = MPI_BYTE;     // our own duplicates of derived types (freed by us)
    MPI_Datatype filetype = MPI_BYTE;
    int64_t esize = 1;    // bytes of one etype in the file
    int64_t fsize = 1;    // data bytes in one filetype tile
    int64_t fextent = 1;  // tile stride in the file
    // One tile's data: byte blocks relative to the tile's start, in typemap order, adjacent
    // blocks merged; pre[i] = data bytes before block i.
    std::vector<Seg> blocks{{0, 1, 0}};
    bool dense = true;    // the view is the file's bytes from disp on, unbroken
    bool ext32 = false;   // datarep "external32" (else "native"/"internal")
    std::string datarep = "native";
};

// Collective buffering (two-phase) settings from the info hints.
struct Hints {
    int64_t cb_buffer_size = 16 << 20;  // bytes an aggregator handles per round
    int cb_nodes = 0;                   // aggregators; 0 = every rank
    int cb_write = 2;                   // romio_cb_write: 0 disable, 1 enable, 2 automatic
    int cb_read = 2;                    // romio_cb_read
    int64_t cb_small_piece = 4096;      // wanmpi_cb_small_piece: automatic two-phase below it
};

struct File {
    MPI_Comm comm = MPI_COMM_NULL;  // private duplicate: our collectives never meet the user's
    int rank = 0, size = 1;
    int fd = -1;
    int shfp_fd = -1;               // the shared file pointer's lock file (see access.cpp)
    std::string path;
    int amode = 0;
    bool atomic = false;
    MPI_Errhandler eh = MPI_ERRORS_RETURN;
    View view;
    int64_t fp = 0;                 // individual file pointer, in etypes of the view
    Hints hints;
    std::vector<std::pair<std::string, std::string>> info;  // hints as reported by get_info
    // Split collective in progress (MPI_File_*_begin .. _end): its result.
    bool split = false;
    MPI_Status split_status{};
    MPI_Fint fint = 0;              // Fortran handle (index + 1 in the handle table)
};

// ---- file.cpp ---------------------------------------------------------------------------------
// The entry points' prologue: `f` = the open file behind `fh`, or MPI_ERR_FILE raised on
// MPI_FILE_NULL's handler (a bad handle has none of its own).
#define GET_FILE(f, fh)                                                                        \
    ::wanmpi::io::File* f = ::wanmpi::io::file_lookup(fh);                                     \
    if (!f) return ::wanmpi::io::raise_bad_file(fh)
int raise_bad_file(MPI_File fh);
// The live File behind a handle, or nullptr.
File* file_lookup(MPI_File fh);
// Raise `code` on the file's handler (MPI_FILE_NULL's for fh == nullptr); returns code.
int raise(File* f, int code);
// MPI error class for a failed system call (ENOENT -> MPI_ERR_NO_SUCH_FILE, ...).
int errno_class(int err);
// An error code for errno `err` with "what path: strerror" as the message.
int sys_error(int err, const char* what, const std::string& path);
// Parse hints from `info` into f->hints/f->info (unknown keys ignored).
void apply_hints(File* f, MPI_Info info);

// ---- view.cpp ---------------------------------------------------------------------------------
// Reset `v` to the default view (disp 0, MPI_BYTE, MPI_BYTE, "native"), freeing our types.
void view_reset(View* v);
// Append the file ranges of view data bytes [data_off, data_off + nbytes), in stream order;
// `soff` counts from `soff0`. Adjacent ranges are merged.
void view_map(const View& v, int64_t data_off, int64_t nbytes, int64_t soff0,
              std::vector<Seg>* out);
// The file byte offset of view data byte `data_off`.
int64_t view_byte_offset(const View& v, int64_t data_off);

// ---- access.cpp -------------------------------------------------------------------------------
// The shared file pointer (etypes): read it / set it, under its fcntl lock; error code or success.
int shfp_get(File* f, int64_t* value);
int shfp_put(File* f, int64_t value);
enum class Ptr { explicit_off, individual, shared };
// One access's packed data stream: where the user's data lives contiguously (the buffer itself
// when that is possible) and its length in file bytes.
struct Stream {
    std::vector<char> own;  // packed/converted copy, when one is needed
    char* p = nullptr;
    int64_t bytes = 0;
};
// Check an access's arguments (mode, count, datatype, etype multiple); MPI_SUCCESS or a code.
int check_access(File* f, bool write, Ptr ptr, int64_t count, MPI_Datatype dt,
                 const core::Datatype** out);
// Build the stream of a write (pack/convert the user's data) or of a read (room to read into).
int stream_out(const File* f, const void* buf, int64_t count, const core::Datatype* d, Stream* s);
void stream_in(const File* f, void* buf, int64_t count, const core::Datatype* d, Stream* s);
// Deliver `got` stream bytes of a read to the user's buffer; returns the status's byte count.
int64_t stream_deliver(const File* f, Stream* s, int64_t got, void* buf,
                       const core::Datatype* d);
// pwrite/pread all of `segs` (read: stops at end of file); bytes moved in *done.
int rw_segs(File* f, bool write, const std::vector<Seg>& segs, char* stream, int64_t* done);
void set_status(MPI_Status* st, int64_t bytes);
// Independent read/write of the stream at view data byte `data_off` (atomic mode: under an fcntl
// lock of the range); also the collective path when two-phase does not pay.
int indep_rw(File* f, bool write, int64_t data_off, Stream* s, int64_t* done);

// ---- twophase.cpp -----------------------------------------------------------------------------
// A collective read or write at view data byte `data_off` (each rank its own) of the stream.
// Every rank of f->comm calls it; *done = stream bytes moved on this rank.
int collective_rw(File* f, bool write, int64_t data_off, Stream* s, int64_t* done);

}  // namespace wanmpi::io
