// MPI-IO (MPI_File_*): NOT SUPPORTED YET.
//
// Every MPI-3.1 entry point (and the MPI-4 large-count _c variants) exists and reports
// MPI_ERR_UNSUPPORTED_OPERATION. As the standard says for MPI_File_open, MPI_File_delete and for
// files without a handler of their own, the error goes to the handler attached to MPI_FILE_NULL,
// which is MPI_ERRORS_RETURN unless the program changed it: I/O errors return by default.
// MPI_File_open returns MPI_FILE_NULL. What works for real: MPI_File_create_errhandler,
// MPI_File_set/get_errhandler on MPI_FILE_NULL (the default file handler), MPI_File_c2f/f2c.
#include "bindings/impl.hpp"
#include "core/engine.hpp"
#include "core/errors.hpp"

namespace wanmpi::impl {
using namespace wanmpi::core;

static int io_unsupported(MPI_File fh) {
    return raise_file(fh, make_error(MPI_ERR_UNSUPPORTED_OPERATION,
                                     "MPI-IO is not supported by wanmpi yet (no file can be "
                                     "opened)"));
}

// ---- error handlers ---------------------------------------------------------------------------
int File_create_errhandler(MPI_File_errhandler_function* file_errhandler_fn,
                           MPI_Errhandler* errhandler) {
    if (!file_errhandler_fn)
        return raise_file(MPI_FILE_NULL, make_error(MPI_ERR_ARG, "error handler function is NULL"));
    if (!errhandler)
        return raise_file(MPI_FILE_NULL, make_error(MPI_ERR_ARG, "errhandler is NULL"));
    *errhandler = errhandler_create(EhKind::file, reinterpret_cast<void (*)()>(file_errhandler_fn));
    return MPI_SUCCESS;
}
// On MPI_FILE_NULL: the default handler for files (used by MPI_File_open). There are no other
// files.
int File_set_errhandler(MPI_File file, MPI_Errhandler errhandler) {
    if (file != MPI_FILE_NULL) return io_unsupported(file);
    if (!errhandler_valid(errhandler))
        return raise_file(file, make_error(MPI_ERR_ARG, "invalid error handler 0x%x",
                                           unsigned(errhandler)));
    if (!errhandler_fits(errhandler, EhKind::file))
        return raise_file(file, make_error(MPI_ERR_ARG, "error handler 0x%x was created for "
                                                        "communicators or windows, not files",
                                           unsigned(errhandler)));
    set_file_default_errhandler(errhandler);
    return MPI_SUCCESS;
}
int File_get_errhandler(MPI_File file, MPI_Errhandler* errhandler) {
    if (file != MPI_FILE_NULL) return io_unsupported(file);
    if (!errhandler) return raise_file(file, make_error(MPI_ERR_ARG, "errhandler is NULL"));
    *errhandler = file_default_errhandler();
    errhandler_retain(*errhandler);
    return MPI_SUCCESS;
}
int File_call_errhandler(MPI_File fh, int errorcode) {
    if (fh != MPI_FILE_NULL) return io_unsupported(fh);
    raise_file(fh, errorcode);  // MPI_FILE_NULL's handler, as for errors of MPI_File_open
    return MPI_SUCCESS;
}

// A file handle is a pointer in C; no file can be open, so only MPI_FILE_NULL (0) converts.
MPI_Fint File_c2f(MPI_File) { return 0; }
MPI_File File_f2c(MPI_Fint) { return MPI_FILE_NULL; }

// ---- everything else ----------------------------------------------------------------------------
int File_open(MPI_Comm, const char*, int, MPI_Info, MPI_File* fh) {
    if (fh) *fh = MPI_FILE_NULL;
    return io_unsupported(MPI_FILE_NULL);
}
int File_close(MPI_File* fh) { return io_unsupported(fh ? *fh : MPI_FILE_NULL); }
int File_delete(const char*, MPI_Info) { return io_unsupported(MPI_FILE_NULL); }
int File_set_size(MPI_File fh, MPI_Offset) { return io_unsupported(fh); }
int File_preallocate(MPI_File fh, MPI_Offset) { return io_unsupported(fh); }
int File_get_size(MPI_File fh, MPI_Offset*) { return io_unsupported(fh); }
int File_get_group(MPI_File fh, MPI_Group*) { return io_unsupported(fh); }
int File_get_amode(MPI_File fh, int*) { return io_unsupported(fh); }
int File_set_info(MPI_File fh, MPI_Info) { return io_unsupported(fh); }
int File_get_info(MPI_File fh, MPI_Info*) { return io_unsupported(fh); }
int File_set_view(MPI_File fh, MPI_Offset, MPI_Datatype, MPI_Datatype, const char*, MPI_Info) {
    return io_unsupported(fh);
}
int File_get_view(MPI_File fh, MPI_Offset*, MPI_Datatype*, MPI_Datatype*, char*) {
    return io_unsupported(fh);
}
int File_read_at(MPI_File fh, MPI_Offset, void*, int, MPI_Datatype, MPI_Status*) {
    return io_unsupported(fh);
}
int File_read_at_c(MPI_File fh, MPI_Offset, void*, MPI_Count, MPI_Datatype, MPI_Status*) {
    return io_unsupported(fh);
}
int File_read_at_all(MPI_File fh, MPI_Offset, void*, int, MPI_Datatype, MPI_Status*) {
    return io_unsupported(fh);
}
int File_read_at_all_c(MPI_File fh, MPI_Offset, void*, MPI_Count, MPI_Datatype, MPI_Status*) {
    return io_unsupported(fh);
}
int File_write_at(MPI_File fh, MPI_Offset, const void*, int, MPI_Datatype, MPI_Status*) {
    return io_unsupported(fh);
}
int File_write_at_c(MPI_File fh, MPI_Offset, const void*, MPI_Count, MPI_Datatype, MPI_Status*) {
    return io_unsupported(fh);
}
int File_write_at_all(MPI_File fh, MPI_Offset, const void*, int, MPI_Datatype, MPI_Status*) {
    return io_unsupported(fh);
}
int File_write_at_all_c(MPI_File fh, MPI_Offset, const void*, MPI_Count, MPI_Datatype,
                        MPI_Status*) {
    return io_unsupported(fh);
}
int File_iread_at(MPI_File fh, MPI_Offset, void*, int, MPI_Datatype, MPI_Request* request) {
    if (request) *request = MPI_REQUEST_NULL;
    return io_unsupported(fh);
}
int File_iread_at_c(MPI_File fh, MPI_Offset, void*, MPI_Count, MPI_Datatype, MPI_Request* request) {
    if (request) *request = MPI_REQUEST_NULL;
    return io_unsupported(fh);
}
int File_iwrite_at(MPI_File fh, MPI_Offset, const void*, int, MPI_Datatype, MPI_Request* request) {
    if (request) *request = MPI_REQUEST_NULL;
    return io_unsupported(fh);
}
int File_iwrite_at_c(MPI_File fh, MPI_Offset, const void*, MPI_Count, MPI_Datatype,
                     MPI_Request* request) {
    if (request) *request = MPI_REQUEST_NULL;
    return io_unsupported(fh);
}
int File_iread_at_all(MPI_File fh, MPI_Offset, void*, int, MPI_Datatype, MPI_Request* request) {
    if (request) *request = MPI_REQUEST_NULL;
    return io_unsupported(fh);
}
int File_iread_at_all_c(MPI_File fh, MPI_Offset, void*, MPI_Count, MPI_Datatype,
                        MPI_Request* request) {
    if (request) *request = MPI_REQUEST_NULL;
    return io_unsupported(fh);
}
int File_iwrite_at_all(MPI_File fh, MPI_Offset, const void*, int, MPI_Datatype,
                       MPI_Request* request) {
    if (request) *request = MPI_REQUEST_NULL;
    return io_unsupported(fh);
}
int File_iwrite_at_all_c(MPI_File fh, MPI_Offset, const void*, MPI_Count, MPI_Datatype,
                         MPI_Request* request) {
    if (request) *request = MPI_REQUEST_NULL;
    return io_unsupported(fh);
}
int File_read(MPI_File fh, void*, int, MPI_Datatype, MPI_Status*) { return io_unsupported(fh); }
int File_read_c(MPI_File fh, void*, MPI_Count, MPI_Datatype, MPI_Status*) {
    return io_unsupported(fh);
}
int File_read_all(MPI_File fh, void*, int, MPI_Datatype, MPI_Status*) { return io_unsupported(fh); }
int File_read_all_c(MPI_File fh, void*, MPI_Count, MPI_Datatype, MPI_Status*) {
    return io_unsupported(fh);
}
int File_write(MPI_File fh, const void*, int, MPI_Datatype, MPI_Status*) {
    return io_unsupported(fh);
}
int File_write_c(MPI_File fh, const void*, MPI_Count, MPI_Datatype, MPI_Status*) {
    return io_unsupported(fh);
}
int File_write_all(MPI_File fh, const void*, int, MPI_Datatype, MPI_Status*) {
    return io_unsupported(fh);
}
int File_write_all_c(MPI_File fh, const void*, MPI_Count, MPI_Datatype, MPI_Status*) {
    return io_unsupported(fh);
}
int File_iread(MPI_File fh, void*, int, MPI_Datatype, MPI_Request* request) {
    if (request) *request = MPI_REQUEST_NULL;
    return io_unsupported(fh);
}
int File_iread_c(MPI_File fh, void*, MPI_Count, MPI_Datatype, MPI_Request* request) {
    if (request) *request = MPI_REQUEST_NULL;
    return io_unsupported(fh);
}
int File_iwrite(MPI_File fh, const void*, int, MPI_Datatype, MPI_Request* request) {
    if (request) *request = MPI_REQUEST_NULL;
    return io_unsupported(fh);
}
int File_iwrite_c(MPI_File fh, const void*, MPI_Count, MPI_Datatype, MPI_Request* request) {
    if (request) *request = MPI_REQUEST_NULL;
    return io_unsupported(fh);
}
int File_iread_all(MPI_File fh, void*, int, MPI_Datatype, MPI_Request* request) {
    if (request) *request = MPI_REQUEST_NULL;
    return io_unsupported(fh);
}
int File_iread_all_c(MPI_File fh, void*, MPI_Count, MPI_Datatype, MPI_Request* request) {
    if (request) *request = MPI_REQUEST_NULL;
    return io_unsupported(fh);
}
int File_iwrite_all(MPI_File fh, const void*, int, MPI_Datatype, MPI_Request* request) {
    if (request) *request = MPI_REQUEST_NULL;
    return io_unsupported(fh);
}
int File_iwrite_all_c(MPI_File fh, const void*, MPI_Count, MPI_Datatype, MPI_Request* request) {
    if (request) *request = MPI_REQUEST_NULL;
    return io_unsupported(fh);
}
int File_seek(MPI_File fh, MPI_Offset, int) { return io_unsupported(fh); }
int File_get_position(MPI_File fh, MPI_Offset*) { return io_unsupported(fh); }
int File_get_byte_offset(MPI_File fh, MPI_Offset, MPI_Offset*) { return io_unsupported(fh); }
int File_read_shared(MPI_File fh, void*, int, MPI_Datatype, MPI_Status*) {
    return io_unsupported(fh);
}
int File_read_shared_c(MPI_File fh, void*, MPI_Count, MPI_Datatype, MPI_Status*) {
    return io_unsupported(fh);
}
int File_write_shared(MPI_File fh, const void*, int, MPI_Datatype, MPI_Status*) {
    return io_unsupported(fh);
}
int File_write_shared_c(MPI_File fh, const void*, MPI_Count, MPI_Datatype, MPI_Status*) {
    return io_unsupported(fh);
}
int File_iread_shared(MPI_File fh, void*, int, MPI_Datatype, MPI_Request* request) {
    if (request) *request = MPI_REQUEST_NULL;
    return io_unsupported(fh);
}
int File_iread_shared_c(MPI_File fh, void*, MPI_Count, MPI_Datatype, MPI_Request* request) {
    if (request) *request = MPI_REQUEST_NULL;
    return io_unsupported(fh);
}
int File_iwrite_shared(MPI_File fh, const void*, int, MPI_Datatype, MPI_Request* request) {
    if (request) *request = MPI_REQUEST_NULL;
    return io_unsupported(fh);
}
int File_iwrite_shared_c(MPI_File fh, const void*, MPI_Count, MPI_Datatype, MPI_Request* request) {
    if (request) *request = MPI_REQUEST_NULL;
    return io_unsupported(fh);
}
int File_read_ordered(MPI_File fh, void*, int, MPI_Datatype, MPI_Status*) {
    return io_unsupported(fh);
}
int File_read_ordered_c(MPI_File fh, void*, MPI_Count, MPI_Datatype, MPI_Status*) {
    return io_unsupported(fh);
}
int File_write_ordered(MPI_File fh, const void*, int, MPI_Datatype, MPI_Status*) {
    return io_unsupported(fh);
}
int File_write_ordered_c(MPI_File fh, const void*, MPI_Count, MPI_Datatype, MPI_Status*) {
    return io_unsupported(fh);
}
int File_seek_shared(MPI_File fh, MPI_Offset, int) { return io_unsupported(fh); }
int File_get_position_shared(MPI_File fh, MPI_Offset*) { return io_unsupported(fh); }
int File_read_at_all_begin(MPI_File fh, MPI_Offset, void*, int, MPI_Datatype) {
    return io_unsupported(fh);
}
int File_read_at_all_begin_c(MPI_File fh, MPI_Offset, void*, MPI_Count, MPI_Datatype) {
    return io_unsupported(fh);
}
int File_read_at_all_end(MPI_File fh, void*, MPI_Status*) { return io_unsupported(fh); }
int File_write_at_all_begin(MPI_File fh, MPI_Offset, const void*, int, MPI_Datatype) {
    return io_unsupported(fh);
}
int File_write_at_all_begin_c(MPI_File fh, MPI_Offset, const void*, MPI_Count, MPI_Datatype) {
    return io_unsupported(fh);
}
int File_write_at_all_end(MPI_File fh, const void*, MPI_Status*) { return io_unsupported(fh); }
int File_read_all_begin(MPI_File fh, void*, int, MPI_Datatype) { return io_unsupported(fh); }
int File_read_all_begin_c(MPI_File fh, void*, MPI_Count, MPI_Datatype) {
    return io_unsupported(fh);
}
int File_read_all_end(MPI_File fh, void*, MPI_Status*) { return io_unsupported(fh); }
int File_write_all_begin(MPI_File fh, const void*, int, MPI_Datatype) { return io_unsupported(fh); }
int File_write_all_begin_c(MPI_File fh, const void*, MPI_Count, MPI_Datatype) {
    return io_unsupported(fh);
}
int File_write_all_end(MPI_File fh, const void*, MPI_Status*) { return io_unsupported(fh); }
int File_read_ordered_begin(MPI_File fh, void*, int, MPI_Datatype) { return io_unsupported(fh); }
int File_read_ordered_begin_c(MPI_File fh, void*, MPI_Count, MPI_Datatype) {
    return io_unsupported(fh);
}
int File_read_ordered_end(MPI_File fh, void*, MPI_Status*) { return io_unsupported(fh); }
int File_write_ordered_begin(MPI_File fh, const void*, int, MPI_Datatype) {
    return io_unsupported(fh);
}
int File_write_ordered_begin_c(MPI_File fh, const void*, MPI_Count, MPI_Datatype) {
    return io_unsupported(fh);
}
int File_write_ordered_end(MPI_File fh, const void*, MPI_Status*) { return io_unsupported(fh); }
int File_get_type_extent(MPI_File fh, MPI_Datatype, MPI_Aint*) { return io_unsupported(fh); }
int File_get_type_extent_c(MPI_File fh, MPI_Datatype, MPI_Count*) { return io_unsupported(fh); }
int File_set_atomicity(MPI_File fh, int) { return io_unsupported(fh); }
int File_get_atomicity(MPI_File fh, int*) { return io_unsupported(fh); }
int File_sync(MPI_File fh) { return io_unsupported(fh); }
int Register_datarep(const char*, MPI_Datarep_conversion_function*,
                     MPI_Datarep_conversion_function*, MPI_Datarep_extent_function*, void*) {
    return io_unsupported(MPI_FILE_NULL);
}
int Register_datarep_c(const char*, MPI_Datarep_conversion_function_c*,
                       MPI_Datarep_conversion_function_c*, MPI_Datarep_extent_function*, void*) {
    return io_unsupported(MPI_FILE_NULL);
}

}  // namespace wanmpi::impl
