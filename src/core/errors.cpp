#include "core/errors.hpp"

#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <unistd.h>

#include "base/log.hpp"
#include "core/api.hpp"
#include "core/engine.hpp"

namespace wanmpi::core {

namespace {
struct ErrorRing {
    std::mutex m;
    std::string text[kErrorSlots];
    int next = 0;
};
ErrorRing& ring() {
    static ErrorRing r;
    return r;
}

struct ClassText {
    int cls;
    const char* text;
};
const ClassText kClasses[] = {
    {MPI_SUCCESS, "No MPI error"},
    {MPI_ERR_BUFFER, "Invalid buffer pointer"},
    {MPI_ERR_COUNT, "Invalid count argument"},
    {MPI_ERR_TYPE, "Invalid datatype argument"},
    {MPI_ERR_TAG, "Invalid tag argument"},
    {MPI_ERR_COMM, "Invalid communicator"},
    {MPI_ERR_RANK, "Invalid rank"},
    {MPI_ERR_ROOT, "Invalid root"},
    {MPI_ERR_GROUP, "Invalid group"},
    {MPI_ERR_OP, "Invalid operation"},
    {MPI_ERR_TOPOLOGY, "Invalid topology"},
    {MPI_ERR_DIMS, "Invalid dimension argument"},
    {MPI_ERR_ARG, "Invalid argument"},
    {MPI_ERR_UNKNOWN, "Unknown error"},
    {MPI_ERR_TRUNCATE, "Message truncated"},
    {MPI_ERR_OTHER, "Other MPI error"},
    {MPI_ERR_INTERN, "Internal MPI error"},
    {MPI_ERR_IN_STATUS, "Error code is in status"},
    {MPI_ERR_PENDING, "Pending request"},
    {MPI_ERR_REQUEST, "Invalid request"},
    {MPI_ERR_ACCESS, "Permission denied"},
    {MPI_ERR_AMODE, "Invalid file access mode"},
    {MPI_ERR_BAD_FILE, "Invalid file name"},
    {MPI_ERR_CONVERSION, "Data conversion error"},
    {MPI_ERR_DUP_DATAREP, "Data representation already defined"},
    {MPI_ERR_FILE_EXISTS, "File exists"},
    {MPI_ERR_FILE_IN_USE, "File in use"},
    {MPI_ERR_FILE, "Invalid file handle"},
    {MPI_ERR_INFO, "Invalid info object"},
    {MPI_ERR_INFO_KEY, "Invalid info key"},
    {MPI_ERR_INFO_VALUE, "Invalid info value"},
    {MPI_ERR_INFO_NOKEY, "Info key not defined"},
    {MPI_ERR_IO, "I/O error"},
    {MPI_ERR_NAME, "Invalid service name"},
    {MPI_ERR_NO_MEM, "Out of memory"},
    {MPI_ERR_NOT_SAME, "Arguments differ between processes"},
    {MPI_ERR_NO_SPACE, "No space left"},
    {MPI_ERR_NO_SUCH_FILE, "No such file"},
    {MPI_ERR_PORT, "Invalid port name"},
    {MPI_ERR_QUOTA, "Quota exceeded"},
    {MPI_ERR_READ_ONLY, "Read-only file or file system"},
    {MPI_ERR_SERVICE, "Invalid service"},
    {MPI_ERR_SPAWN, "Cannot spawn processes"},
    {MPI_ERR_UNSUPPORTED_DATAREP, "Unsupported data representation"},
    {MPI_ERR_UNSUPPORTED_OPERATION, "Operation not supported"},
    {MPI_ERR_WIN, "Invalid window"},
    {MPI_ERR_BASE, "Invalid base address"},
    {MPI_ERR_LOCKTYPE, "Invalid lock type"},
    {MPI_ERR_KEYVAL, "Invalid keyval"},
    {MPI_ERR_RMA_CONFLICT, "Conflicting RMA accesses"},
    {MPI_ERR_RMA_SYNC, "Wrong RMA synchronization"},
    {MPI_ERR_SIZE, "Invalid size"},
    {MPI_ERR_DISP, "Invalid displacement"},
    {MPI_ERR_ASSERT, "Invalid assert"},
    {MPI_ERR_RMA_RANGE, "RMA target out of range"},
    {MPI_ERR_RMA_ATTACH, "Cannot attach memory"},
    {MPI_ERR_RMA_SHARED, "Memory cannot be shared"},
    {MPI_ERR_RMA_FLAVOR, "Wrong window flavor"},
    {MPI_T_ERR_MEMORY, "Out of memory (tools interface)"},
    {MPI_ERR_SESSION, "Invalid session"},
    {MPI_ERR_PROC_ABORTED, "Process aborted"},
    {MPI_ERR_VALUE_TOO_LARGE, "Value too large for the output argument"},
    {MPIX_ERR_PROC_FAILED, "Process failed"},
};
}  // namespace

const char* error_class_text(int cls) {
    for (auto& c : kClasses)
        if (c.cls == cls) return c.text;
    return nullptr;
}

int error_class_of(int code) { return code & 127; }

bool valid_error_code(int code) {
    return code >= 0 && (code >> 7) <= kErrorSlots && error_class_text(code & 127);
}

int make_error(int cls, const char* fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    auto& r = ring();
    int slot;
    {
        std::lock_guard<std::mutex> gl(r.m);
        slot = r.next;
        r.next = (r.next + 1) % kErrorSlots;
        r.text[slot] = buf;
    }
    WANMPI_LOG(debug, "%s: %s", error_class_text(cls) ? error_class_text(cls) : "?", buf);
    return cls | ((slot + 1) << 7);
}

std::string error_text(int code) {
    const char* ct = error_class_text(code & 127);
    std::string s = ct ? ct : "Unknown error class";
    int slot = (code >> 7) - 1;
    if (slot >= 0 && slot < kErrorSlots) {
        auto& r = ring();
        std::lock_guard<std::mutex> gl(r.m);
        if (!r.text[slot].empty()) s += ", " + r.text[slot];
    }
    return s;
}

void abort_job(int exitcode, const std::string& msg) {
    std::string line = "[wanmpi rank " + std::to_string(world_rank()) + "] " + msg + "\n";
    ssize_t w = write(2, line.data(), line.size());
    (void)w;
    pmi_abort(exitcode, msg);
    _exit(exitcode);
}

bool errhandler_valid(MPI_Errhandler e) {
    return e == MPI_ERRORS_ARE_FATAL || e == MPI_ERRORS_RETURN || e == MPI_ERRORS_ABORT;
}

int raise(Comm* comm, int code) {
    if (code == MPI_SUCCESS) return code;
    MPI_Errhandler eh = comm ? comm->errhandler : MPI_ERRORS_ARE_FATAL;
    if (!comm) {
        if (Comm* w = comm_lookup(MPI_COMM_WORLD)) eh = w->errhandler;
    }
    if (eh == MPI_ERRORS_RETURN) return code;
    const char* fn = t_api_name ? t_api_name : "MPI";
    std::string where = comm ? comm->name : std::string("MPI_COMM_WORLD");
    abort_job(1,
              std::string("Fatal error in ") + fn + " (" + where + "): " + error_text(code));
}

[[noreturn]] void api_not_initialized(const char* fname) {
    const char* state = g_init_state.load() == 0 ? "before MPI_Init" : "after MPI_Finalize";
    std::fprintf(stderr, "[wanmpi] %s called %s: this is not allowed; aborting\n", fname, state);
    std::fflush(stderr);
    _exit(1);
}

std::atomic<bool> g_thread_multiple{false};
std::recursive_mutex g_api_lock;
thread_local const char* t_api_name = nullptr;
std::atomic<int> g_init_state{0};

}  // namespace wanmpi::core
