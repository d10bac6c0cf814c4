#include "core/errors.hpp"

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <unordered_map>
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
    {MPI_T_ERR_NOT_INITIALIZED, "The tools interface is not initialized (MPI_T_init_thread)"},
    {MPI_T_ERR_CANNOT_INIT, "The tools interface cannot be initialized"},
    {MPI_T_ERR_NOT_ACCESSIBLE, "Tools interface: not accessible"},
    {MPI_T_ERR_INVALID_INDEX, "Tools interface: invalid or out-of-range index"},
    {MPI_T_ERR_INVALID_ITEM, "Tools interface: invalid enumeration item index"},
    {MPI_T_ERR_INVALID_SESSION, "Tools interface: invalid performance variable session"},
    {MPI_T_ERR_INVALID_HANDLE, "Tools interface: invalid handle"},
    {MPI_T_ERR_OUT_OF_HANDLES, "Tools interface: no more handles available"},
    {MPI_T_ERR_OUT_OF_SESSIONS, "Tools interface: no more sessions available"},
    {MPI_T_ERR_CVAR_SET_NOT_NOW, "Tools interface: the control variable cannot be set now"},
    {MPI_T_ERR_CVAR_SET_NEVER, "Tools interface: the control variable cannot be set at runtime"},
    {MPI_T_ERR_PVAR_NO_WRITE, "Tools interface: the performance variable cannot be written or reset"},
    {MPI_T_ERR_PVAR_NO_STARTSTOP, "Tools interface: the performance variable cannot be started or stopped"},
    {MPI_T_ERR_PVAR_NO_ATOMIC, "Tools interface: the performance variable cannot be read and reset atomically"},
    {MPI_T_ERR_INVALID_NAME, "Tools interface: no variable or category of that name"},
    {MPI_T_ERR_INVALID, "Tools interface: invalid use or invalid argument"},
    {MPI_T_ERR_NOT_SUPPORTED, "Tools interface: not supported"},
};
}  // namespace

const char* error_class_text(int cls) {
    for (auto& c : kClasses)
        if (c.cls == cls) return c.text;
    return nullptr;
}

// ---- user error classes / codes / strings -------------------------------------------------
namespace {
constexpr int kUserBit = 0x40000000;
constexpr int kFieldMask = 0xfff;
constexpr int kFirstUserField = 128;
constexpr int kMaxCodeSerial = (MPI_ERR_LASTCODE >> 12);  // n < 2^18

struct UserErrors {
    std::mutex m;
    int nclasses = 0;  // user classes: fields 128 .. 128 + nclasses - 1
    int ncodes = 0;    // serial numbers handed out to added codes: 1 .. ncodes
    int last_used = MPI_ERR_LASTCODE;  // the largest class (MPI 4.0 §9.5), as in MPICH
    std::unordered_map<int, std::string> strings;  // user class/code -> its string
    std::unordered_map<int, bool> codes;            // added codes (value: unused)
};
UserErrors& user_errors() {
    static UserErrors u;
    return u;
}

bool is_user_value(int code) { return code > 0 && (code & kUserBit); }

// Requires the lock. True for a user class or an added code.
bool user_value_known(UserErrors& u, int code) {
    if (!is_user_value(code)) return false;
    int field = code & kFieldMask;
    int serial = (code & ~kUserBit) >> 12;
    bool field_ok = field < kFirstUserField ? error_class_text(field) != nullptr
                                            : field - kFirstUserField < u.nclasses;
    if (!field_ok) return false;
    if (serial == 0) return field >= kFirstUserField;  // the class itself
    return u.codes.count(code) != 0;
}
}  // namespace

int error_class_of(int code) {
    if (is_user_value(code)) {
        int field = code & kFieldMask;
        return field < kFirstUserField ? field : (kUserBit | field);
    }
    return code & 127;
}

bool valid_error_code(int code) {
    if (code < 0) return false;
    if (is_user_value(code)) {
        auto& u = user_errors();
        std::lock_guard<std::mutex> gl(u.m);
        return user_value_known(u, code);
    }
    return (code >> 7) <= kErrorSlots && error_class_text(code & 127);
}

int add_error_class(int* errorclass) {
    auto& u = user_errors();
    std::lock_guard<std::mutex> gl(u.m);
    if (kFirstUserField + u.nclasses > kFieldMask)
        return make_error(MPI_ERR_OTHER, "too many user error classes (limit %d)",
                          kFieldMask + 1 - kFirstUserField);
    int cls = kUserBit | (kFirstUserField + u.nclasses++);
    if (cls > u.last_used) u.last_used = cls;
    *errorclass = cls;
    return MPI_SUCCESS;
}

int add_error_code(int errorclass, int* errorcode) {
    auto& u = user_errors();
    std::lock_guard<std::mutex> gl(u.m);
    bool ok = (errorclass >= 0 && errorclass < kFirstUserField && error_class_text(errorclass)) ||
              (is_user_value(errorclass) && (errorclass & ~(kUserBit | kFieldMask)) == 0 &&
               user_value_known(u, errorclass));
    if (!ok) return make_error(MPI_ERR_ARG, "%d is not an error class", errorclass);
    if (u.ncodes >= kMaxCodeSerial)
        return make_error(MPI_ERR_OTHER, "too many user error codes (limit %d)", kMaxCodeSerial);
    int code = kUserBit | (++u.ncodes << 12) | (errorclass & kFieldMask);
    u.codes.emplace(code, true);
    *errorcode = code;
    return MPI_SUCCESS;
}

int add_error_string(int errorcode, const char* string) {
    if (!string) return make_error(MPI_ERR_ARG, "error string is NULL");
    size_t n = std::strlen(string);
    if (n >= size_t(MPI_MAX_ERROR_STRING))
        return make_error(MPI_ERR_ARG,
                          "error string of %zu characters is longer than MPI_MAX_ERROR_STRING - 1 "
                          "(%d)", n, MPI_MAX_ERROR_STRING - 1);
    auto& u = user_errors();
    std::lock_guard<std::mutex> gl(u.m);
    if (!user_value_known(u, errorcode))
        return make_error(MPI_ERR_ARG, "%d is not an error class or code added by "
                                       "MPI_Add_error_class/MPI_Add_error_code", errorcode);
    u.strings[errorcode] = string;
    return MPI_SUCCESS;
}

int last_used_code() {
    auto& u = user_errors();
    std::lock_guard<std::mutex> gl(u.m);
    return u.last_used;
}

int make_error(int cls, const char* fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (cls < 0 || cls >= 128 || !error_class_text(cls)) cls = MPI_ERR_INTERN;  // caller bug
    auto& r = ring();
    int slot;
    {
        std::lock_guard<std::mutex> gl(r.m);
        slot = r.next;
        r.next = (r.next + 1) % kErrorSlots;
        r.text[slot] = buf;
    }
    WANMPI_LOG(debug, "%s: %s", error_class_text(cls), buf);
    return cls | ((slot + 1) << 7);
}

std::string error_text(int code) {
    if (is_user_value(code)) {
        // MPI: a class or code without a string added by MPI_Add_error_string has "".
        auto& u = user_errors();
        std::lock_guard<std::mutex> gl(u.m);
        auto it = u.strings.find(code);
        return it == u.strings.end() ? std::string() : it->second;
    }
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

// ---- error handlers -----------------------------------------------------------------------
namespace {
constexpr uint32_t kUserEhBase = 0x54800000u;

struct UserErrhandler {
    EhKind kind;
    void (*fn)();
    int user_refs;  // handles the user holds (create, *_get_errhandler) minus frees
};
std::deque<UserErrhandler>& user_ehs() {
    static std::deque<UserErrhandler> v;  // deque: stable addresses while handlers run
    return v;
}
UserErrhandler* user_eh(MPI_Errhandler e) {
    uint32_t u = uint32_t(e);
    if ((u & 0xff800000u) != kUserEhBase) return nullptr;
    uint32_t idx = u & 0x7fffffu;
    auto& v = user_ehs();
    return idx < v.size() ? &v[idx] : nullptr;
}
bool predefined_eh(MPI_Errhandler e) {
    return e == MPI_ERRORS_ARE_FATAL || e == MPI_ERRORS_RETURN || e == MPI_ERRORS_ABORT;
}
MPI_Errhandler g_file_default = MPI_ERRORS_RETURN;
}  // namespace

bool errhandler_valid(MPI_Errhandler e) {
    if (predefined_eh(e)) return true;
    UserErrhandler* h = user_eh(e);
    return h && h->user_refs > 0;
}

bool errhandler_fits(MPI_Errhandler e, EhKind k) {
    if (predefined_eh(e)) return true;
    UserErrhandler* h = user_eh(e);
    return h && h->user_refs > 0 && h->kind == k;
}

MPI_Errhandler errhandler_create(EhKind k, void (*fn)()) {
    auto& v = user_ehs();
    v.push_back(UserErrhandler{k, fn, 1});
    return MPI_Errhandler(kUserEhBase | uint32_t(v.size() - 1));
}

bool errhandler_release(MPI_Errhandler e) {
    if (predefined_eh(e)) return true;
    UserErrhandler* h = user_eh(e);
    if (!h || h->user_refs <= 0) return false;
    --h->user_refs;
    return true;
}

void errhandler_retain(MPI_Errhandler e) {
    if (UserErrhandler* h = user_eh(e)) ++h->user_refs;
}

MPI_Errhandler file_default_errhandler() { return g_file_default; }
void set_file_default_errhandler(MPI_Errhandler e) { g_file_default = e; }

// The predefined handlers' actions; returns only for MPI_ERRORS_RETURN.
static void predefined_action(MPI_Errhandler eh, const std::string& where, int code) {
    if (eh == MPI_ERRORS_RETURN) return;
    const char* fn = t_api_name ? t_api_name : "MPI";
    if (eh == MPI_ERRORS_ABORT) {
        // MPI-4: abort "all connected processes" of the communicator; wanmpi aborts the job.
        abort_job(1, std::string("MPI_ERRORS_ABORT: error in ") + fn + " (" + where + "): " +
                         error_text(code));
    }
    abort_job(1, std::string("Fatal error in ") + fn + " (" + where + "): " + error_text(code));
}

int raise_bad_comm(MPI_Comm h) {
    return raise(nullptr, make_error(MPI_ERR_COMM, "invalid communicator 0x%x%s", unsigned(h),
                                     h == MPI_COMM_NULL ? " (MPI_COMM_NULL)" : ""));
}

int raise(Comm* comm, int code) {
    if (code == MPI_SUCCESS) return code;
    MPI_Errhandler eh = MPI_ERRORS_ARE_FATAL;
    MPI_Comm handle = MPI_COMM_WORLD;
    std::string where = "MPI_COMM_WORLD";
    if (!comm) comm = comm_lookup(MPI_COMM_WORLD);
    if (comm) {
        eh = comm->errhandler;
        handle = comm->handle;
        where = comm->name.empty() ? "communicator" : comm->name;
    }
    if (UserErrhandler* h = user_eh(eh)) {
        if (h->kind == EhKind::comm && h->fn) {
            int c = code;
            reinterpret_cast<MPI_Comm_errhandler_function*>(h->fn)(&handle, &c);
            return code;
        }
        eh = MPI_ERRORS_ARE_FATAL;  // cannot happen: set_errhandler checks the kind
    }
    predefined_action(eh, where, code);
    return code;
}

int raise_file(MPI_File fh, int code) { return raise_file_eh(fh, g_file_default, code); }

int raise_file_eh(MPI_File fh, MPI_Errhandler eh, int code) {
    if (code == MPI_SUCCESS) return code;
    if (UserErrhandler* h = user_eh(eh)) {
        if (h->kind == EhKind::file && h->fn) {
            MPI_File f = fh;
            int c = code;
            reinterpret_cast<MPI_File_errhandler_function*>(h->fn)(&f, &c);
            return code;
        }
        eh = MPI_ERRORS_ARE_FATAL;
    }
    predefined_action(eh, fh == MPI_FILE_NULL ? "MPI_FILE_NULL" : "file", code);
    return code;
}

// A handler of kind `k` called with a pointer to the object's handle (sessions, windows).
template <class Handle, class Fn>
static int raise_on(EhKind k, Handle obj, MPI_Errhandler eh, int code, const char* where) {
    if (code == MPI_SUCCESS) return code;
    if (UserErrhandler* h = user_eh(eh)) {
        if (h->kind == k && h->fn) {
            Handle x = obj;
            int c = code;
            reinterpret_cast<Fn*>(h->fn)(&x, &c);
            return code;
        }
        eh = MPI_ERRORS_ARE_FATAL;
    }
    predefined_action(eh, where, code);
    return code;
}

int raise_session(MPI_Session s, MPI_Errhandler eh, int code) {
    return raise_on<MPI_Session, MPI_Session_errhandler_function>(EhKind::session, s, eh, code,
                                                                  "session");
}

int raise_win(MPI_Win w, MPI_Errhandler eh, int code) {
    return raise_on<MPI_Win, MPI_Win_errhandler_function>(EhKind::win, w, eh, code, "window");
}

[[noreturn]] void api_not_initialized(const char* fname) {
    const char* state = g_init_state.load() == 0 ? "before MPI_Init" : "after MPI_Finalize";
    std::fprintf(stderr, "[wanmpi] %s called %s: this is not allowed; aborting\n", fname, state);
    std::fflush(stderr);
    _exit(1);
}

std::atomic<bool> g_thread_multiple{false};
std::recursive_mutex g_api_lock;
thread_local const char* t_api_name __attribute__((tls_model("initial-exec"))) = nullptr;
std::atomic<int> g_init_state{0};

}  // namespace wanmpi::core
