// Fortran runtime: the sentinels' storage, the predefined Fortran callbacks (MPI_COMM_DUP_FN...),
// and the bindings gen_fortran.py cannot generate (listed as `hand` in exceptions.txt): argc/argv,
// attributes (Fortran values are integers; predefined attributes are returned by value),
// keyval and generalized-request callbacks (trampolines from the C signature to Fortran's
// by-reference one), strings whose length is another argument, spawn's CHARACTER arrays.
//
// Each hand-written function is marked WANMPI_F_HAND(name) for the coverage check and guarded by
// WANMPI_HAVE_name (fortran_have.h), so it only exists while the C function is in the lists.
// As in the generated code, mpi_x_ calls MPI_X and pmpi_x_ calls PMPI_X.
//
// Lifetime: the small records behind Fortran keyvals, attribute values set from Fortran (see
// Cells) and file error handlers live until the process ends (a keyval may be freed while attributes still use it; MPI gives no later point
// where the callbacks are known to be dead). Generalized-request records are freed after the
// free callback ran.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <utility>

#include "core/api.hpp"
#include "core/errors.hpp"
#include "fortran/fortran_support.hpp"

using wanmpi::fortran::kFalse;
using wanmpi::fortran::kTrue;

// ---- sentinels (see fortran_support.hpp) -------------------------------------------------------
// Aligned like gfortran's common blocks, so the executable's copy and ours agree.
#define WF_COMMON WF_EXPORT alignas(32)
extern "C" {
WF_COMMON MPI_Fint mpi_fc_bottom_ = 0;
WF_COMMON MPI_Fint mpi_fc_in_place_ = 0;
WF_COMMON MPI_Fint mpi_fc_buffer_automatic_ = 0;
WF_COMMON MPI_Fint mpi_fc_status_ignore_[sizeof(MPI_Status) / sizeof(MPI_Fint)] = {};
WF_COMMON MPI_Fint mpi_fc_statuses_ignore_[sizeof(MPI_Status) / sizeof(MPI_Fint)] = {};
WF_COMMON MPI_Fint mpi_fc_errcodes_ignore_[1] = {};
WF_COMMON MPI_Fint mpi_fc_unweighted_[1] = {};
WF_COMMON MPI_Fint mpi_fc_weights_empty_[1] = {};
WF_COMMON char mpi_fc_argv_null_[1] = {' '};
WF_COMMON char mpi_fc_argvs_null_[1] = {' '};
// MPI 4.0 §19.3.5: C names of the Fortran status sentinels (for MPI_Status_f2c and friends).
WF_EXPORT MPI_Fint* MPI_F_STATUS_IGNORE = mpi_fc_status_ignore_;
WF_EXPORT MPI_Fint* MPI_F_STATUSES_IGNORE = mpi_fc_statuses_ignore_;
}

int wanmpi::fortran::error(int errclass, const char* fname, const char* msg) {
    wanmpi::core::ApiScope scope(fname, false, false);
    return wanmpi::core::raise(nullptr, wanmpi::core::make_error(errclass, "%s", msg));
}

// Two entry points per binding: the hidden one takes the C function to call.
#define WF_PAIR(lname, uname, params, args)                                                     \
    WF_EXPORT void mpi_##lname##_ params noexcept { wf_##lname(&MPI_##uname, args); }            \
    WF_EXPORT void pmpi_##lname##_ params noexcept { wf_##lname(&PMPI_##uname, args); }
#define WF_ARGS(...) __VA_ARGS__

extern "C" {

// ---- predefined callbacks (Fortran EXTERNALs; MPI 4.0 §7.7.2 and §19.1.x) ---------------------
// New style: attribute values and extra state are INTEGER(KIND=MPI_ADDRESS_KIND).
#define WF_COPY_FNS(obj)                                                                         \
    WF_EXPORT void mpi_##obj##_null_copy_fn_(MPI_Fint*, MPI_Fint*, MPI_Aint*, MPI_Aint*,         \
                                             MPI_Aint*, MPI_Fint* flag, MPI_Fint* ierr) {        \
        *flag = kFalse;                                                                          \
        *ierr = MPI_SUCCESS;                                                                     \
    }                                                                                            \
    WF_EXPORT void mpi_##obj##_dup_fn_(MPI_Fint*, MPI_Fint*, MPI_Aint*, MPI_Aint* in,            \
                                       MPI_Aint* out, MPI_Fint* flag, MPI_Fint* ierr) {          \
        *out = *in;                                                                              \
        *flag = kTrue;                                                                           \
        *ierr = MPI_SUCCESS;                                                                     \
    }                                                                                            \
    WF_EXPORT void mpi_##obj##_null_delete_fn_(MPI_Fint*, MPI_Fint*, MPI_Aint*, MPI_Aint*,       \
                                               MPI_Fint* ierr) {                                 \
        *ierr = MPI_SUCCESS;                                                                     \
    }
WF_COPY_FNS(comm)
WF_COPY_FNS(type)
WF_COPY_FNS(win)

// MPI-1 style (MPI_KEYVAL_CREATE): default INTEGER values and extra state.
WF_EXPORT void mpi_null_copy_fn_(MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*,
                                 MPI_Fint* flag, MPI_Fint* ierr) {
    *flag = kFalse;
    *ierr = MPI_SUCCESS;
}
WF_EXPORT void mpi_dup_fn_(MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint* in, MPI_Fint* out,
                           MPI_Fint* flag, MPI_Fint* ierr) {
    *out = *in;
    *flag = kTrue;
    *ierr = MPI_SUCCESS;
}
WF_EXPORT void mpi_null_delete_fn_(MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint* ierr) {
    *ierr = MPI_SUCCESS;
}
WF_EXPORT void mpi_conversion_fn_null_(void*, MPI_Fint*, MPI_Fint*, void*, MPI_Offset*,
                                       MPI_Fint*, MPI_Aint*, MPI_Fint* ierr) {
    *ierr = MPI_SUCCESS;
}

}  // extern "C"

// ---- keyval trampolines ------------------------------------------------------------------------
namespace {

// What a Fortran keyval's C callbacks need: the Fortran procedures and the extra state (a
// Fortran INTEGER, passed to them by reference).
//
// The extra state is a copy taken by MPI_*_CREATE_KEYVAL, not the caller's variable (unlike a
// generalized request's, below): MPI 4.0 §19.3.8 says copy and delete callbacks must not modify
// it, and the caller's variable may be gone by the time they run (a local of a returned
// procedure, a constant). Open MPI copies too; MPICH passes the caller's address, so a program
// that changes its variable after creating the keyval sees the change there only.
struct FKeyval {
    bool mpi1;  // MPI_KEYVAL_CREATE: default INTEGER values; else address-sized
    void (*copy)(MPI_Fint*, MPI_Fint*, void*, void*, void*, MPI_Fint*, MPI_Fint*);
    void (*del)(MPI_Fint*, MPI_Fint*, void*, void*, MPI_Fint*);
    MPI_Aint extra;
    MPI_Fint extra1;
};

// Attribute values set from Fortran (MPI 4.0 §19.3.7): the C attribute is a pointer to an
// address-sized integer cell holding the value (MPI_ATTR_PUT's INTEGER sign-extended), so C
// code reading it gets "a pointer to the value"; Fortran reading any attribute gets the cell's
// value if the pointer is one of these cells, the value of a predefined attribute, or else the
// C pointer itself as an integer (an attribute set from C). Cells live in chunks that are never
// freed: a cell may be shared by duplicated objects (MPI_COMM_DUP_FN copies the pointer) and MPI
// says nothing when the last one goes, so each MPI_*_SET_ATTR from Fortran costs 8 bytes for the
// life of the process.
class Cells {
public:
    void* make(MPI_Aint v) {
        std::lock_guard<std::mutex> g(mu_);
        if (chunks_.empty() || used_ == kPerChunk) {
            chunks_.push_back(std::make_unique<MPI_Aint[]>(kPerChunk));
            used_ = 0;
        }
        MPI_Aint* c = &chunks_.back()[used_++];
        *c = v;
        return c;
    }
    bool value(const void* p, MPI_Aint* v) {
        std::lock_guard<std::mutex> g(mu_);
        auto* a = static_cast<const MPI_Aint*>(p);
        for (auto& ch : chunks_) {
            if (a >= ch.get() && a < ch.get() + kPerChunk) {
                *v = *a;
                return true;
            }
        }
        return false;
    }

private:
    static constexpr size_t kPerChunk = 4096;
    std::mutex mu_;
    std::vector<std::unique_ptr<MPI_Aint[]>> chunks_;
    size_t used_ = 0;
};
Cells g_cells;

// The Fortran view of a stored attribute value (not for predefined keyvals).
MPI_Aint fortran_value(void* p) {
    MPI_Aint v;
    return g_cells.value(p, &v) ? v : reinterpret_cast<MPI_Aint>(p);
}

int copy_trampoline(int obj, int keyval, void* extra_state, void* in, void* out, int* flag) {
    auto* k = static_cast<FKeyval*>(extra_state);
    MPI_Fint fobj = obj, fkey = keyval, fflag = kFalse, ierr = MPI_SUCCESS;
    MPI_Aint vout = 0;
    if (k->mpi1) {
        MPI_Fint vin = static_cast<MPI_Fint>(fortran_value(in)), vout1 = 0;
        k->copy(&fobj, &fkey, &k->extra1, &vin, &vout1, &fflag, &ierr);
        vout = vout1;
    } else {
        MPI_Aint vin = fortran_value(in);
        k->copy(&fobj, &fkey, &k->extra, &vin, &vout, &fflag, &ierr);
    }
    *flag = fflag != kFalse;
    if (*flag) *static_cast<void**>(out) = g_cells.make(vout);
    return ierr;
}

int delete_trampoline(int obj, int keyval, void* value, void* extra_state) {
    auto* k = static_cast<FKeyval*>(extra_state);
    MPI_Fint fobj = obj, fkey = keyval, ierr = MPI_SUCCESS;
    if (k->mpi1) {
        MPI_Fint v = static_cast<MPI_Fint>(fortran_value(value));
        k->del(&fobj, &fkey, &v, &k->extra1, &ierr);
    } else {
        MPI_Aint v = fortran_value(value);
        k->del(&fobj, &fkey, &v, &k->extra, &ierr);
    }
    return ierr;
}

FKeyval* new_keyval(wf_proc copy, wf_proc del, MPI_Aint extra, bool mpi1) {
    auto* k = new FKeyval{};
    k->mpi1 = mpi1;
    k->copy = reinterpret_cast<decltype(k->copy)>(copy);
    k->del = reinterpret_cast<decltype(k->del)>(del);
    k->extra = extra;
    k->extra1 = static_cast<MPI_Fint>(extra);
    return k;
}

// Predefined attributes hold pointers to their values in C; Fortran gets the values (MPI 4.0
// §7.7.4 / §12.2.6). MPI_WIN_BASE is itself the address.
MPI_Aint predefined_value(int keyval, void* p) {
    switch (keyval) {
    case MPI_TAG_UB: case MPI_HOST: case MPI_IO: case MPI_WTIME_IS_GLOBAL:
    case MPI_UNIVERSE_SIZE: case MPI_LASTUSEDCODE: case MPI_APPNUM:
    case MPI_CLIENT_SIZE: case MPI_CLIENT_COLOR: case MPI_HOST_SIZE: case MPI_HOST_COLOR:
    case WANMPI_MAXRATE: case WANMPI_MATB:
    case MPI_WIN_DISP_UNIT: case MPI_WIN_CREATE_FLAVOR: case MPI_WIN_MODEL:
        return *static_cast<int*>(p);
    case MPI_WIN_SIZE:
        return *static_cast<MPI_Aint*>(p);
    default:
        return fortran_value(p);
    }
}

// WANMPI_MATB is the one predefined attribute a program sets; C takes a pointer to an int, so
// Fortran's value (Kbytes/s) goes as one, not as a cell. Out-of-range values become -1, which
// the C side refuses with MPI_ERR_ARG.
bool is_rate_put(MPI_Fint keyval, MPI_Aint value, int* out) {
    if (keyval != WANMPI_MATB) return false;
    *out = value < 0 || value > INT32_MAX ? -1 : int(value);
    return true;
}

template <typename Fn>
int get_attr(Fn fn, int obj, MPI_Fint keyval, MPI_Aint* value, MPI_Fint* flag) {
    void* p = nullptr;
    int cflag = 0;
    int rc = fn(obj, keyval, &p, &cflag);
    if (rc != MPI_SUCCESS) return rc;
    *flag = cflag ? kTrue : kFalse;
    if (cflag) *value = predefined_value(keyval, p);
    return rc;
}

}  // namespace

extern "C" {

// ---- environment -------------------------------------------------------------------------------
#ifdef WANMPI_HAVE_MPI_Init
WANMPI_F_HAND(MPI_Init)
static void wf_init(decltype(&PMPI_Init) fn, MPI_Fint* ierr) { *ierr = fn(nullptr, nullptr); }
WF_PAIR(init, Init, (MPI_Fint * ierr), WF_ARGS(ierr))
#endif
#ifdef WANMPI_HAVE_MPI_Init_thread
WANMPI_F_HAND(MPI_Init_thread)
static void wf_init_thread(decltype(&PMPI_Init_thread) fn, MPI_Fint* required,
                           MPI_Fint* provided, MPI_Fint* ierr) {
    *ierr = fn(nullptr, nullptr, *required, provided);
}
WF_PAIR(init_thread, Init_thread, (MPI_Fint * required, MPI_Fint * provided, MPI_Fint * ierr),
        WF_ARGS(required, provided, ierr))
#endif
#ifdef WANMPI_HAVE_MPI_Info_create_env
WANMPI_F_HAND(MPI_Info_create_env)
static void wf_info_create_env(decltype(&PMPI_Info_create_env) fn, MPI_Fint* info,
                               MPI_Fint* ierr) {
    *ierr = fn(0, nullptr, info);
}
WF_PAIR(info_create_env, Info_create_env, (MPI_Fint * info, MPI_Fint * ierr),
        WF_ARGS(info, ierr))
#endif
#ifdef WANMPI_HAVE_MPI_Pcontrol
WANMPI_F_HAND(MPI_Pcontrol)
WF_EXPORT void mpi_pcontrol_(MPI_Fint* level, MPI_Fint* ierr) noexcept {
    *ierr = MPI_Pcontrol(*level);
}
WF_EXPORT void pmpi_pcontrol_(MPI_Fint* level, MPI_Fint* ierr) noexcept {
    *ierr = PMPI_Pcontrol(*level);
}
#endif

// ---- buffers -----------------------------------------------------------------------------------
#ifdef WANMPI_HAVE_MPI_Buffer_detach
WANMPI_F_HAND(MPI_Buffer_detach)
static void wf_buffer_detach(decltype(&PMPI_Buffer_detach) fn, void*, MPI_Fint* size,
                             MPI_Fint* ierr) {
    void* addr = nullptr;
    *ierr = fn(&addr, size);
}
WF_PAIR(buffer_detach, Buffer_detach, (void* buffer_addr, MPI_Fint* size, MPI_Fint* ierr),
        WF_ARGS(buffer_addr, size, ierr))
#endif

// ---- info strings ------------------------------------------------------------------------------
#ifdef WANMPI_HAVE_MPI_Info_get
WANMPI_F_HAND(MPI_Info_get)
// VALUELEN is the most characters to return (C: plus the terminator).
static void wf_info_get(decltype(&PMPI_Info_get) fn, MPI_Fint* info, char* key, MPI_Fint* valuelen,
                        char* value, MPI_Fint* flag, MPI_Fint* ierr, size_t key_len,
                        size_t value_len) {
    std::string k = wf_str_in(key, key_len, true);
    int vlen = *valuelen;
    if (vlen < 0) vlen = 0;  // let the C function report it
    std::vector<char> buf(size_t(vlen) + 1, '\0');
    int cflag = 0;
    *ierr = fn(*info, k.c_str(), *valuelen < 0 ? *valuelen : vlen, buf.data(), &cflag);
    if (*ierr != MPI_SUCCESS) return;
    *flag = cflag ? kTrue : kFalse;
    if (cflag) wf_str_to_fortran(buf.data(), value, value_len);
}
WF_PAIR(info_get, Info_get,
        (MPI_Fint * info, char* key, MPI_Fint* valuelen, char* value, MPI_Fint* flag,
         MPI_Fint* ierr, size_t key_len, size_t value_len),
        WF_ARGS(info, key, valuelen, value, flag, ierr, key_len, value_len))
#endif

}  // extern "C"

// BUFLEN (in) = the most characters to return, 0 = only ask the length; (out) = the value's
// length. The CHARACTER is left alone when BUFLEN is 0 or the key is absent (MPI 4.0 §10).
namespace {
template <typename Fn>
int get_string_like(Fn call, MPI_Fint* buflen, char* value, MPI_Fint* flag,
                           size_t value_len) {
    int need = 0, cflag = 0;
    int rc = call(&need, nullptr, &cflag);
    if (rc != MPI_SUCCESS) return rc;
    *flag = cflag ? kTrue : kFalse;
    if (!cflag) return rc;
    if (*buflen > 0) {
        std::vector<char> buf(size_t(need) + 1, '\0');
        int n = need;
        rc = call(&n, buf.data(), &cflag);
        if (rc != MPI_SUCCESS) return rc;
        size_t ncopy = std::min({size_t(*buflen), value_len, strlen(buf.data())});
        memcpy(value, buf.data(), ncopy);
        memset(value + ncopy, ' ', value_len - ncopy);
    }
    *buflen = need > 0 ? need - 1 : 0;
    return rc;
}

}  // namespace

extern "C" {
#ifdef WANMPI_HAVE_MPI_Info_get_string
WANMPI_F_HAND(MPI_Info_get_string)
static void wf_info_get_string(decltype(&PMPI_Info_get_string) fn, MPI_Fint* info, char* key,
                               MPI_Fint* buflen, char* value, MPI_Fint* flag, MPI_Fint* ierr,
                               size_t key_len, size_t value_len) {
    std::string k = wf_str_in(key, key_len, true);
    char dummy[1];
    *ierr = get_string_like(
        [&](int* n, char* buf, int* f) { return fn(*info, k.c_str(), n, buf ? buf : dummy, f); },
        buflen, value, flag, value_len);
}
WF_PAIR(info_get_string, Info_get_string,
        (MPI_Fint * info, char* key, MPI_Fint* buflen, char* value, MPI_Fint* flag,
         MPI_Fint* ierr, size_t key_len, size_t value_len),
        WF_ARGS(info, key, buflen, value, flag, ierr, key_len, value_len))
#endif

#ifdef WANMPI_HAVE_MPI_Session_get_nth_pset
WANMPI_F_HAND(MPI_Session_get_nth_pset)
static void wf_session_get_nth_pset(decltype(&PMPI_Session_get_nth_pset) fn, MPI_Fint* session,
                                    MPI_Fint* info, MPI_Fint* n, MPI_Fint* pset_len,
                                    char* pset_name, MPI_Fint* ierr, size_t name_len) {
    MPI_Fint flag;
    char dummy[1];
    MPI_Fint len = *pset_len;
    *ierr = get_string_like(
        [&](int* l, char* buf, int* f) {
            *f = 1;
            return fn(*session, *info, *n, l, buf ? buf : dummy);
        },
        &len, pset_name, &flag, name_len);
    if (*ierr == MPI_SUCCESS) *pset_len = len;
}
WF_PAIR(session_get_nth_pset, Session_get_nth_pset,
        (MPI_Fint * session, MPI_Fint* info, MPI_Fint* n, MPI_Fint* pset_len, char* pset_name,
         MPI_Fint* ierr, size_t name_len),
        WF_ARGS(session, info, n, pset_len, pset_name, ierr, name_len))
#endif

// ---- keyvals and attributes --------------------------------------------------------------------
#define WF_CREATE_KEYVAL(lname, uname, ctype, dtype)                                            \
    static void wf_##lname(decltype(&PMPI_##uname) fn, wf_proc copy_fn, wf_proc delete_fn,      \
                           MPI_Fint* keyval, MPI_Aint* extra_state, MPI_Fint* ierr) {           \
        FKeyval* k = new_keyval(copy_fn, delete_fn, *extra_state, false);                       \
        *ierr = fn(reinterpret_cast<ctype*>(&copy_trampoline),                                  \
                   reinterpret_cast<dtype*>(&delete_trampoline), keyval, k);                    \
        if (*ierr != MPI_SUCCESS) delete k;                                                     \
    }                                                                                           \
    WF_PAIR(lname, uname,                                                                       \
            (wf_proc copy_fn, wf_proc delete_fn, MPI_Fint * keyval, MPI_Aint * extra_state,     \
             MPI_Fint * ierr),                                                                  \
            WF_ARGS(copy_fn, delete_fn, keyval, extra_state, ierr))

#ifdef WANMPI_HAVE_MPI_Comm_create_keyval
WANMPI_F_HAND(MPI_Comm_create_keyval)
WF_CREATE_KEYVAL(comm_create_keyval, Comm_create_keyval, MPI_Comm_copy_attr_function,
                 MPI_Comm_delete_attr_function)
#endif
#ifdef WANMPI_HAVE_MPI_Type_create_keyval
WANMPI_F_HAND(MPI_Type_create_keyval)
WF_CREATE_KEYVAL(type_create_keyval, Type_create_keyval, MPI_Type_copy_attr_function,
                 MPI_Type_delete_attr_function)
#endif
#ifdef WANMPI_HAVE_MPI_Win_create_keyval
WANMPI_F_HAND(MPI_Win_create_keyval)
WF_CREATE_KEYVAL(win_create_keyval, Win_create_keyval, MPI_Win_copy_attr_function,
                 MPI_Win_delete_attr_function)
#endif
#ifdef WANMPI_HAVE_MPI_Keyval_create
WANMPI_F_HAND(MPI_Keyval_create)
static void wf_keyval_create(decltype(&PMPI_Keyval_create) fn, wf_proc copy_fn,
                             wf_proc delete_fn, MPI_Fint* keyval, MPI_Fint* extra_state,
                             MPI_Fint* ierr) {
    FKeyval* k = new_keyval(copy_fn, delete_fn, *extra_state, true);
    *ierr = fn(reinterpret_cast<MPI_Copy_function*>(&copy_trampoline),
               reinterpret_cast<MPI_Delete_function*>(&delete_trampoline), keyval, k);
    if (*ierr != MPI_SUCCESS) delete k;
}
WF_PAIR(keyval_create, Keyval_create,
        (wf_proc copy_fn, wf_proc delete_fn, MPI_Fint* keyval, MPI_Fint* extra_state,
         MPI_Fint* ierr),
        WF_ARGS(copy_fn, delete_fn, keyval, extra_state, ierr))
#endif

#define WF_SET_ATTR(lname, uname)                                                               \
    static void wf_##lname(decltype(&PMPI_##uname) fn, MPI_Fint* obj, MPI_Fint* keyval,         \
                           MPI_Aint* value, MPI_Fint* ierr) {                                   \
        if (int rate; is_rate_put(*keyval, *value, &rate))                                      \
            *ierr = fn(*obj, *keyval, &rate);                                                   \
        else                                                                                    \
            *ierr = fn(*obj, *keyval, g_cells.make(*value));                                    \
    }                                                                                           \
    WF_PAIR(lname, uname, (MPI_Fint * obj, MPI_Fint * keyval, MPI_Aint * value, MPI_Fint * ierr), \
            WF_ARGS(obj, keyval, value, ierr))
#define WF_GET_ATTR(lname, uname)                                                               \
    static void wf_##lname(decltype(&PMPI_##uname) fn, MPI_Fint* obj, MPI_Fint* keyval,         \
                           MPI_Aint* value, MPI_Fint* flag, MPI_Fint* ierr) {                   \
        *ierr = get_attr(fn, *obj, *keyval, value, flag);                                       \
    }                                                                                           \
    WF_PAIR(lname, uname,                                                                       \
            (MPI_Fint * obj, MPI_Fint * keyval, MPI_Aint * value, MPI_Fint * flag,              \
             MPI_Fint * ierr),                                                                  \
            WF_ARGS(obj, keyval, value, flag, ierr))

#ifdef WANMPI_HAVE_MPI_Comm_set_attr
WANMPI_F_HAND(MPI_Comm_set_attr)
WF_SET_ATTR(comm_set_attr, Comm_set_attr)
#endif
#ifdef WANMPI_HAVE_MPI_Comm_get_attr
WANMPI_F_HAND(MPI_Comm_get_attr)
WF_GET_ATTR(comm_get_attr, Comm_get_attr)
#endif
#ifdef WANMPI_HAVE_MPI_Type_set_attr
WANMPI_F_HAND(MPI_Type_set_attr)
WF_SET_ATTR(type_set_attr, Type_set_attr)
#endif
#ifdef WANMPI_HAVE_MPI_Type_get_attr
WANMPI_F_HAND(MPI_Type_get_attr)
WF_GET_ATTR(type_get_attr, Type_get_attr)
#endif
#ifdef WANMPI_HAVE_MPI_Win_set_attr
WANMPI_F_HAND(MPI_Win_set_attr)
WF_SET_ATTR(win_set_attr, Win_set_attr)
#endif
#ifdef WANMPI_HAVE_MPI_Win_get_attr
WANMPI_F_HAND(MPI_Win_get_attr)
WF_GET_ATTR(win_get_attr, Win_get_attr)
#endif

// MPI-1: default INTEGER attribute values.
#ifdef WANMPI_HAVE_MPI_Attr_put
WANMPI_F_HAND(MPI_Attr_put)
static void wf_attr_put(decltype(&PMPI_Attr_put) fn, MPI_Fint* comm, MPI_Fint* keyval,
                        MPI_Fint* value, MPI_Fint* ierr) {
    if (int rate; is_rate_put(*keyval, *value, &rate)) *ierr = fn(*comm, *keyval, &rate);
    else *ierr = fn(*comm, *keyval, g_cells.make(*value));
}
WF_PAIR(attr_put, Attr_put, (MPI_Fint * comm, MPI_Fint* keyval, MPI_Fint* value, MPI_Fint* ierr),
        WF_ARGS(comm, keyval, value, ierr))
#endif
#ifdef WANMPI_HAVE_MPI_Attr_get
WANMPI_F_HAND(MPI_Attr_get)
static void wf_attr_get(decltype(&PMPI_Attr_get) fn, MPI_Fint* comm, MPI_Fint* keyval,
                        MPI_Fint* value, MPI_Fint* flag, MPI_Fint* ierr) {
    MPI_Aint v = 0;
    *ierr = get_attr(fn, *comm, *keyval, &v, flag);
    if (*ierr == MPI_SUCCESS && *flag) *value = static_cast<MPI_Fint>(v);
}
WF_PAIR(attr_get, Attr_get,
        (MPI_Fint * comm, MPI_Fint* keyval, MPI_Fint* value, MPI_Fint* flag, MPI_Fint* ierr),
        WF_ARGS(comm, keyval, value, flag, ierr))
#endif

}  // extern "C"

// ---- generalized requests ----------------------------------------------------------------------
// The callbacks get the caller's own EXTRA_STATE variable (its address, kept from
// MPI_GREQUEST_START), not a copy: a free_fn that decrements it, or a query_fn that counts in it,
// changes the variable the program reads after MPI_WAIT. MPICH and Open MPI both do this and
// programs rely on it (MPICH's greqf/greqf90 tests), so the variable must live until free_fn has
// run, as there.
#ifdef WANMPI_HAVE_MPI_Grequest_start
namespace {
struct FGreq {
    void (*query)(MPI_Aint*, MPI_Fint*, MPI_Fint*);
    void (*free)(MPI_Aint*, MPI_Fint*);
    void (*cancel)(MPI_Aint*, MPI_Fint*, MPI_Fint*);
    MPI_Aint* extra;  // the caller's INTEGER(KIND=MPI_ADDRESS_KIND) variable
};
int greq_query(void* st, MPI_Status* status) {
    auto* g = static_cast<FGreq*>(st);
    MPI_Fint ierr = MPI_SUCCESS;
    g->query(g->extra, reinterpret_cast<MPI_Fint*>(status), &ierr);
    return ierr;
}
int greq_free(void* st) {
    auto* g = static_cast<FGreq*>(st);
    MPI_Fint ierr = MPI_SUCCESS;
    g->free(g->extra, &ierr);
    delete g;
    return ierr;
}
int greq_cancel(void* st, int complete) {
    auto* g = static_cast<FGreq*>(st);
    MPI_Fint ierr = MPI_SUCCESS, c = complete ? kTrue : kFalse;
    g->cancel(g->extra, &c, &ierr);
    return ierr;
}
}  // namespace
extern "C" {
WANMPI_F_HAND(MPI_Grequest_start)
static void wf_grequest_start(decltype(&PMPI_Grequest_start) fn, wf_proc query, wf_proc free_fn,
                              wf_proc cancel, MPI_Aint* extra_state, MPI_Fint* request,
                              MPI_Fint* ierr) {
    auto* g = new FGreq{reinterpret_cast<decltype(FGreq::query)>(query),
                        reinterpret_cast<decltype(FGreq::free)>(free_fn),
                        reinterpret_cast<decltype(FGreq::cancel)>(cancel), extra_state};
    *ierr = fn(&greq_query, &greq_free, &greq_cancel, g, request);
    if (*ierr != MPI_SUCCESS) delete g;
}
WF_PAIR(grequest_start, Grequest_start,
        (wf_proc query_fn, wf_proc free_fn, wf_proc cancel_fn, MPI_Aint* extra_state,
         MPI_Fint* request, MPI_Fint* ierr),
        WF_ARGS(query_fn, free_fn, cancel_fn, extra_state, request, ierr))
}
#endif

// ---- file error handlers -----------------------------------------------------------------------
// The C handler gets MPI_File *, the Fortran one an INTEGER: a fixed set of C trampolines, each
// bound to one Fortran procedure (the C callback has no user-data argument to carry it).
#ifdef WANMPI_HAVE_MPI_File_create_errhandler
namespace {
constexpr int kFileEhSlots = 32;
using FFileEh = void (*)(MPI_Fint*, MPI_Fint*);
FFileEh g_file_eh[kFileEhSlots];
int g_file_eh_used = 0;
std::mutex g_file_eh_mu;

template <int I>
void file_eh_trampoline(MPI_File* fh, int* code, ...) {
    MPI_Fint f = wf_file_c2f(*fh), c = *code;
    g_file_eh[I](&f, &c);
}
template <int... I>
constexpr std::array<MPI_File_errhandler_function*, sizeof...(I)> file_eh_table(
    std::integer_sequence<int, I...>) {
    return {&file_eh_trampoline<I>...};
}
}  // namespace
extern "C" {
WANMPI_F_HAND(MPI_File_create_errhandler)
static void wf_file_create_errhandler(decltype(&PMPI_File_create_errhandler) fn, wf_proc handler,
                                      MPI_Fint* errhandler, MPI_Fint* ierr) {
    static const auto table = file_eh_table(std::make_integer_sequence<int, kFileEhSlots>{});
    int slot = -1;
    {
        std::lock_guard<std::mutex> g(g_file_eh_mu);
        auto h = reinterpret_cast<FFileEh>(handler);
        for (int i = 0; i < g_file_eh_used; ++i)
            if (g_file_eh[i] == h) slot = i;  // same procedure: share its trampoline
        if (slot < 0 && g_file_eh_used < kFileEhSlots) {
            slot = g_file_eh_used++;
            g_file_eh[slot] = h;
        }
    }
    if (slot < 0) {
        *ierr = wanmpi::fortran::error(MPI_ERR_INTERN, "MPI_File_create_errhandler",
                                       "too many distinct Fortran file error handlers (32)");
        return;
    }
    *ierr = fn(table[slot], errhandler);
}
WF_PAIR(file_create_errhandler, File_create_errhandler,
        (wf_proc handler, MPI_Fint* errhandler, MPI_Fint* ierr), WF_ARGS(handler, errhandler, ierr))
}
#endif

// ---- spawn -------------------------------------------------------------------------------------
// Fortran argv: a CHARACTER array ended by a blank element; MPI_ARGV_NULL for none.
namespace {
[[maybe_unused]] std::vector<std::string> fortran_argv(const char* a, size_t len,
                                                      size_t stride_elems, size_t maxn) {
    std::vector<std::string> out;
    if (a == mpi_fc_argv_null_ || a == mpi_fc_argvs_null_) return out;
    for (size_t i = 0; i < maxn; ++i) {
        std::string s = wf_str_in(a + i * stride_elems * len, len, true);
        if (s.empty()) break;
        out.push_back(s);
    }
    return out;
}
[[maybe_unused]] std::vector<char*> c_argv(std::vector<std::string>& v) {
    std::vector<char*> out;
    for (auto& s : v) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
}
}  // namespace

extern "C" {
#ifdef WANMPI_HAVE_MPI_Comm_spawn
WANMPI_F_HAND(MPI_Comm_spawn)
static void wf_comm_spawn(decltype(&PMPI_Comm_spawn) fn, char* command, char* argv,
                          MPI_Fint* maxprocs, MPI_Fint* info, MPI_Fint* root, MPI_Fint* comm,
                          MPI_Fint* intercomm, MPI_Fint* errcodes, MPI_Fint* ierr,
                          size_t command_len, size_t argv_len) {
    std::string cmd = wf_str_in(command, command_len, true);
    auto args = fortran_argv(argv, argv_len, 1, 4096);
    auto cargs = c_argv(args);
    bool none = argv == mpi_fc_argv_null_;
    *ierr = fn(cmd.c_str(), none ? MPI_ARGV_NULL : cargs.data(), *maxprocs, *info, *root, *comm,
               intercomm, wf_errcodes(errcodes));
}
WF_PAIR(comm_spawn, Comm_spawn,
        (char* command, char* argv, MPI_Fint* maxprocs, MPI_Fint* info, MPI_Fint* root,
         MPI_Fint* comm, MPI_Fint* intercomm, MPI_Fint* errcodes, MPI_Fint* ierr,
         size_t command_len, size_t argv_len),
        WF_ARGS(command, argv, maxprocs, info, root, comm, intercomm, errcodes, ierr, command_len,
                argv_len))
#endif
#ifdef WANMPI_HAVE_MPI_Comm_spawn_multiple
WANMPI_F_HAND(MPI_Comm_spawn_multiple)
// ARRAY_OF_ARGV(COUNT, *): element (i, j) is argument j of command i (column-major).
static void wf_comm_spawn_multiple(decltype(&PMPI_Comm_spawn_multiple) fn, MPI_Fint* count,
                                   char* commands, char* argvs, MPI_Fint* maxprocs,
                                   MPI_Fint* infos, MPI_Fint* root, MPI_Fint* comm,
                                   MPI_Fint* intercomm, MPI_Fint* errcodes, MPI_Fint* ierr,
                                   size_t commands_len, size_t argvs_len) {
    int n = *count > 0 ? *count : 0;
    std::vector<std::string> cmds;
    std::vector<char*> ccmds;
    for (int i = 0; i < n; ++i) cmds.push_back(wf_str_in(commands + i * commands_len,
                                                         commands_len, true));
    for (auto& s : cmds) ccmds.push_back(s.data());
    std::vector<std::vector<std::string>> args(n);
    std::vector<std::vector<char*>> cargs(n);
    std::vector<char**> pargs(n);
    bool none = argvs == mpi_fc_argvs_null_;
    for (int i = 0; i < n && !none; ++i) {
        args[i] = fortran_argv(argvs + i * argvs_len, argvs_len, size_t(n), 4096);
        cargs[i] = c_argv(args[i]);
        pargs[i] = cargs[i].data();
    }
    *ierr = fn(n, ccmds.data(), none ? MPI_ARGVS_NULL : pargs.data(), maxprocs, infos, *root,
               *comm, intercomm, wf_errcodes(errcodes));
}
WF_PAIR(comm_spawn_multiple, Comm_spawn_multiple,
        (MPI_Fint * count, char* commands, char* argvs, MPI_Fint* maxprocs, MPI_Fint* infos,
         MPI_Fint* root, MPI_Fint* comm, MPI_Fint* intercomm, MPI_Fint* errcodes, MPI_Fint* ierr,
         size_t commands_len, size_t argvs_len),
        WF_ARGS(count, commands, argvs, maxprocs, infos, root, comm, intercomm, errcodes, ierr,
                commands_len, argvs_len))
#endif

// ---- Fortran-only routines ---------------------------------------------------------------------
// MPI_F_SYNC_REG: tells the compiler a buffer may have changed (nothing to do at run time).
WF_EXPORT void mpi_f_sync_reg_(void*) noexcept {}
WF_EXPORT void pmpi_f_sync_reg_(void*) noexcept {}

// MPI_SIZEOF(X, SIZE, IERROR): the `mpi` module's generic maps each type and kind to one of
// these (X is assumed-rank and not used, so whatever descriptor the compiler passes is fine).
#define WF_SIZEOF(suffix, n)                                                                    \
    WF_EXPORT void mpi_sizeof_##suffix##_(void*, MPI_Fint* size, MPI_Fint* ierr) noexcept {      \
        *size = n;                                                                              \
        *ierr = MPI_SUCCESS;                                                                    \
    }
WF_SIZEOF(i1, 1)
WF_SIZEOF(i2, 2)
WF_SIZEOF(i4, 4)
WF_SIZEOF(i8, 8)
WF_SIZEOF(i16, 16)
WF_SIZEOF(r4, 4)
WF_SIZEOF(r8, 8)
WF_SIZEOF(r16, 16)
WF_SIZEOF(c4, 8)
WF_SIZEOF(c8, 16)
WF_SIZEOF(c16, 32)
WF_SIZEOF(l1, 1)
WF_SIZEOF(l2, 2)
WF_SIZEOF(l4, 4)
WF_SIZEOF(l8, 8)
WF_SIZEOF(ch, 1)

}  // extern "C"
