// Attribute caching: keyvals, per-object attribute lists, predefined attributes, and the C entry
// points for communicators (MPI-2 and the deprecated MPI-1 names) and datatypes. The window
// attribute entry points are in src/rma/win.cpp (the predefined MPI_WIN_* values live there).
//
// Keyval handles: 0x64000000 | kind << 22 | index. The predefined ones (mpi.h) have small odd
// indexes (MPI_TAG_UB = 0x64400001, MPI_WIN_BASE = 0x66000001); user keyvals count from
// kFirstUserIndex and are never reused, so a stale handle is reported, not misread.
#include "core/attr.hpp"
#include "core/wan_rate.hpp"

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "bindings/impl.hpp"
#include "core/engine.hpp"
#include "core/errors.hpp"

namespace wanmpi::core {

namespace {

constexpr uint32_t kKeyvalBase = 0x64000000u;
constexpr uint32_t kKindMask = 0x03c00000u;
constexpr uint32_t kIndexMask = 0x003fffffu;
constexpr uint32_t kFirstUserIndex = 0x100000u;

struct Keyval {
    int handle;
    AttrKind kind;
    MPI_Comm_copy_attr_function* copy_fn;  // nullptr: MPI_*_NULL_COPY_FN (not copied)
    MPI_Comm_delete_attr_function* delete_fn;  // nullptr: MPI_*_NULL_DELETE_FN
    void* extra_state;
    int refs;         // the user's handle (until freed) + attributes using it
    bool user_freed;  // MPI_*_free_keyval was called (later calls are no-ops, as in MPICH)
};

struct Attr {
    Keyval* kv;
    void* value;
    bool deleting;  // its delete callback is running (guards re-entrant deletes)
};

struct Tables {
    std::unordered_map<int, std::unique_ptr<Keyval>> keyvals;
    uint32_t next_index = kFirstUserIndex;
    std::unordered_map<uint64_t, std::vector<Attr>> attrs;  // (kind, handle) -> set order
};
Tables& tables() {
    static Tables t;
    return t;
}

uint64_t obj_key(AttrKind k, int obj) { return (uint64_t(int(k)) << 32) | uint32_t(obj); }

const char* kind_name(AttrKind k) {
    switch (k) {
    case AttrKind::comm: return "communicator";
    case AttrKind::type: return "datatype";
    case AttrKind::win: return "window";
    }
    return "object";
}

bool is_predefined_comm_key(int keyval) {
    switch (keyval) {
    case MPI_TAG_UB: case MPI_HOST: case MPI_IO: case MPI_WTIME_IS_GLOBAL:
    case MPI_UNIVERSE_SIZE: case MPI_LASTUSEDCODE: case MPI_APPNUM:
    case MPI_CLIENT_SIZE: case MPI_CLIENT_COLOR: case MPI_HOST_SIZE: case MPI_HOST_COLOR:
    case WANMPI_MAXRATE: case WANMPI_MATB:
        return true;
    default:
        return false;
    }
}
bool is_predefined_win_key(int keyval) {
    switch (keyval) {
    case MPI_WIN_BASE: case MPI_WIN_SIZE: case MPI_WIN_DISP_UNIT: case MPI_WIN_CREATE_FLAVOR:
    case MPI_WIN_MODEL:
        return true;
    default:
        return false;
    }
}

void release(Keyval* kv) {
    if (--kv->refs == 0) tables().keyvals.erase(kv->handle);
}

// A live keyval of `kind`, or nullptr with *err set (an unraised error code).
Keyval* find_keyval(AttrKind kind, int keyval, int* err) {
    auto& t = tables();
    auto it = t.keyvals.find(keyval);
    if (it == t.keyvals.end()) {
        if (keyval == MPI_KEYVAL_INVALID)
            *err = make_error(MPI_ERR_KEYVAL, "keyval is MPI_KEYVAL_INVALID");
        else
            *err = make_error(MPI_ERR_KEYVAL, "invalid keyval 0x%x (never created, or freed and "
                                              "no longer in use)", unsigned(keyval));
        return nullptr;
    }
    if (it->second->kind != kind) {
        *err = make_error(MPI_ERR_KEYVAL, "keyval 0x%x was created for %ss, not %ss",
                          unsigned(keyval), kind_name(it->second->kind), kind_name(kind));
        return nullptr;
    }
    return it->second.get();
}

// The position of kv's attribute on the object, or -1.
int find_attr(std::vector<Attr>* list, const Keyval* kv) {
    if (!list) return -1;
    for (size_t i = 0; i < list->size(); ++i)
        if ((*list)[i].kv == kv) return int(i);
    return -1;
}
std::vector<Attr>* attr_list(AttrKind kind, int obj) {
    auto& m = tables().attrs;
    auto it = m.find(obj_key(kind, obj));
    return it == m.end() ? nullptr : &it->second;
}

// A callback's non-success return as an error code of a sensible class with a clear message.
int callback_error(int rc, const char* what, const Keyval* kv, int obj) {
    int cls = valid_error_code(rc) ? error_class_of(rc) : MPI_ERR_OTHER;
    if (cls >= 128 || cls == MPI_SUCCESS) cls = MPI_ERR_OTHER;  // user classes: keep it simple
    return make_error(cls, "attribute %s callback of keyval 0x%x on %s 0x%x returned %d", what,
                      unsigned(kv->handle), kind_name(kv->kind), unsigned(obj), rc);
}

// Run kv's delete callback for `value` on `obj` (no table state is held across the call).
int call_delete(Keyval* kv, int obj, void* value) {
    if (!kv->delete_fn) return MPI_SUCCESS;
    int rc = kv->delete_fn(obj, kv->handle, value, kv->extra_state);
    return rc == MPI_SUCCESS ? MPI_SUCCESS : callback_error(rc, "delete", kv, obj);
}

// Delete one attribute (MPI_*_delete_attr): callback first; on failure it stays.
int delete_one(AttrKind kind, int obj, Keyval* kv) {
    auto* list = attr_list(kind, obj);
    int i = find_attr(list, kv);
    if (i < 0) return MPI_SUCCESS;  // nothing to delete (MPICH does the same)
    if ((*list)[size_t(i)].deleting)
        return make_error(MPI_ERR_KEYVAL, "attribute of keyval 0x%x is already being deleted",
                          unsigned(kv->handle));
    (*list)[size_t(i)].deleting = true;
    void* value = (*list)[size_t(i)].value;
    kv->refs++;  // keep kv alive across the callback, whatever it frees
    int rc = call_delete(kv, obj, value);
    list = attr_list(kind, obj);  // the callback may have changed the tables
    i = find_attr(list, kv);
    if (i >= 0) {
        if (rc == MPI_SUCCESS) {
            list->erase(list->begin() + i);
            if (list->empty()) tables().attrs.erase(obj_key(kind, obj));
            release(kv);  // the attribute's reference
        } else {
            (*list)[size_t(i)].deleting = false;
        }
    }
    release(kv);
    return rc;
}

int delete_all(AttrKind kind, int obj) {
    int result = MPI_SUCCESS;
    for (;;) {
        auto* list = attr_list(kind, obj);
        if (!list) break;
        // The most recently set attribute not already being deleted by an outer callback.
        int i = int(list->size()) - 1;
        while (i >= 0 && (*list)[size_t(i)].deleting) --i;
        if (i < 0) break;
        Attr& a = (*list)[size_t(i)];
        a.deleting = true;
        Keyval* kv = a.kv;
        void* value = a.value;
        kv->refs++;
        int rc = call_delete(kv, obj, value);
        if (rc != MPI_SUCCESS) result = rc;
        // Removed even when the callback failed: the object is going away.
        list = attr_list(kind, obj);
        int j = find_attr(list, kv);
        if (j >= 0) {
            list->erase(list->begin() + j);
            if (list->empty()) tables().attrs.erase(obj_key(kind, obj));
            release(kv);
        }
        release(kv);
    }
    return result;
}

int copy_all(AttrKind kind, int from, int to) {
    auto* list = attr_list(kind, from);
    if (!list) return MPI_SUCCESS;
    // Snapshot: callbacks may change the lists. Each keyval is held across its callback.
    std::vector<Attr> snap = *list;
    for (auto& a : snap) a.kv->refs++;
    int result = MPI_SUCCESS;
    size_t k = 0;
    for (; k < snap.size(); ++k) {
        Keyval* kv = snap[k].kv;
        if (!kv->copy_fn) continue;
        void* out = nullptr;
        int flag = 0;
        int rc = kv->copy_fn(from, kv->handle, kv->extra_state, snap[k].value, &out, &flag);
        if (rc != MPI_SUCCESS) {
            result = callback_error(rc, "copy", kv, from);
            break;
        }
        if (!flag) continue;
        auto& dst = tables().attrs[obj_key(kind, to)];
        int j = find_attr(&dst, kv);
        if (j >= 0) {
            dst[size_t(j)].value = out;  // only if a callback set it on `to` meanwhile
        } else {
            dst.push_back(Attr{kv, out, false});
            kv->refs++;
        }
    }
    for (auto& a : snap) release(a.kv);
    if (result != MPI_SUCCESS) delete_all(kind, to);  // undo the partial copy
    return result;
}

// ---- predefined attributes ----------------------------------------------------------------
// The user gets a pointer to a copy (MPICH does the same), refreshed at each get, so writing
// through it changes nothing that matters.
struct Predefined {
    int tag_ub, host, io, wtime_is_global, universe_size, lastusedcode, appnum;
    int client_size, client_color, host_size, host_color;
    int maxrate, matb;
};
Predefined g_pre;

bool predefined_comm_get(int keyval, void* value_out, int* flag) {
    int* p = nullptr;
    switch (keyval) {
    case MPI_TAG_UB: g_pre.tag_ub = 0x7fffffff; p = &g_pre.tag_ub; break;
    case MPI_HOST: g_pre.host = MPI_PROC_NULL; p = &g_pre.host; break;
    case MPI_IO: g_pre.io = MPI_ANY_SOURCE; p = &g_pre.io; break;  // every rank can do I/O
    case MPI_WTIME_IS_GLOBAL: g_pre.wtime_is_global = 0; p = &g_pre.wtime_is_global; break;
    case MPI_UNIVERSE_SIZE:
        g_pre.universe_size = universe_size();
        if (g_pre.universe_size > 0) p = &g_pre.universe_size;
        break;
    case MPI_LASTUSEDCODE: g_pre.lastusedcode = last_used_code(); p = &g_pre.lastusedcode; break;
    case MPI_APPNUM:
        g_pre.appnum = appnum();
        if (g_pre.appnum >= 0) p = &g_pre.appnum;
        break;
    // IMPI cluster attributes (IMPI.md §6.4): the caller's cluster (IMPI client) and IMPI host,
    // whatever the communicator, so that MPI_Comm_split(comm, color, ...) builds per-cluster
    // communicators. A single-cluster job is one client.
    case MPI_CLIENT_SIZE: g_pre.client_size = cluster_count(); p = &g_pre.client_size; break;
    case MPI_CLIENT_COLOR:
        g_pre.client_color = cluster_of(world_rank());
        p = &g_pre.client_color;
        break;
    case MPI_HOST_SIZE: g_pre.host_size = impi_host_count(); p = &g_pre.host_size; break;
    case MPI_HOST_COLOR:
        g_pre.host_color = impi_host_of(world_rank());
        p = &g_pre.host_color;
        break;
    // WAN rate attributes (core/wan_rate.hpp), absent while unknown / unlimited.
    case WANMPI_MAXRATE:
        g_pre.maxrate = wan_maxrate_kBps();
        if (g_pre.maxrate >= 0) p = &g_pre.maxrate;
        break;
    case WANMPI_MATB:
        g_pre.matb = wan_matb_kBps();
        if (g_pre.matb >= 0) p = &g_pre.matb;
        break;
    default: return false;
    }
    *flag = p != nullptr;
    if (p) *static_cast<void**>(value_out) = p;
    return true;
}

}  // namespace

int keyval_create(AttrKind kind, MPI_Comm_copy_attr_function* copy_fn,
                  MPI_Comm_delete_attr_function* delete_fn, void* extra_state, int* keyval) {
    auto& t = tables();
    if (t.next_index > kIndexMask)
        return make_error(MPI_ERR_OTHER, "too many keyvals created (limit %u)",
                          kIndexMask - kFirstUserIndex + 1);
    int h = int(kKeyvalBase | (uint32_t(int(kind)) << 22) | t.next_index++);
    t.keyvals.emplace(h, std::make_unique<Keyval>(
                             Keyval{h, kind, copy_fn, delete_fn, extra_state, 1, false}));
    *keyval = h;
    return MPI_SUCCESS;
}

int keyval_free(AttrKind kind, int* keyval) {
    if ((kind == AttrKind::comm && is_predefined_comm_key(*keyval)) ||
        (kind == AttrKind::win && is_predefined_win_key(*keyval)))
        return make_error(MPI_ERR_KEYVAL, "keyval 0x%x is predefined and cannot be freed",
                          unsigned(*keyval));
    int err = MPI_SUCCESS;
    Keyval* kv = find_keyval(kind, *keyval, &err);
    if (!kv) return err;
    if (!kv->user_freed) {
        kv->user_freed = true;
        release(kv);
    }
    *keyval = MPI_KEYVAL_INVALID;
    return MPI_SUCCESS;
}

int attr_set(AttrKind kind, int obj, int keyval, void* value) {
    // The one predefined attribute a program may set: its WAN send limit (GridMPI's put that
    // acts). The value points to an int, Kbytes/s.
    if (kind == AttrKind::comm && keyval == WANMPI_MATB) {
        if (!value) return make_error(MPI_ERR_ARG, "WANMPI_MATB: the value must point to an int");
        return wan_set_matb_kBps(*static_cast<const int*>(value));
    }
    if ((kind == AttrKind::comm && is_predefined_comm_key(keyval)) ||
        (kind == AttrKind::win && is_predefined_win_key(keyval)))
        return make_error(MPI_ERR_KEYVAL, "keyval 0x%x is a predefined attribute and cannot be "
                                          "set", unsigned(keyval));
    int err = MPI_SUCCESS;
    Keyval* kv = find_keyval(kind, keyval, &err);
    if (!kv) return err;
    auto* list = attr_list(kind, obj);
    int i = find_attr(list, kv);
    if (i < 0) {
        tables().attrs[obj_key(kind, obj)].push_back(Attr{kv, value, false});
        kv->refs++;
        return MPI_SUCCESS;
    }
    // Replacing: the old value's delete callback runs first; if it fails the old value stays.
    if ((*list)[size_t(i)].deleting)
        return make_error(MPI_ERR_KEYVAL, "attribute of keyval 0x%x is being deleted",
                          unsigned(keyval));
    (*list)[size_t(i)].deleting = true;
    void* old = (*list)[size_t(i)].value;
    kv->refs++;
    int rc = call_delete(kv, obj, old);
    list = attr_list(kind, obj);
    i = find_attr(list, kv);
    if (i >= 0) {
        (*list)[size_t(i)].deleting = false;
        if (rc == MPI_SUCCESS) (*list)[size_t(i)].value = value;
    } else if (rc == MPI_SUCCESS) {
        tables().attrs[obj_key(kind, obj)].push_back(Attr{kv, value, false});
        kv->refs++;
    }
    release(kv);
    return rc;
}

int attr_get(AttrKind kind, int obj, int keyval, void* value_out, int* flag) {
    if (!value_out) return make_error(MPI_ERR_ARG, "attribute_val is NULL");
    if (!flag) return make_error(MPI_ERR_ARG, "flag is NULL");
    if (kind == AttrKind::comm && predefined_comm_get(keyval, value_out, flag))
        return MPI_SUCCESS;
    int err = MPI_SUCCESS;
    Keyval* kv = find_keyval(kind, keyval, &err);
    if (!kv) return err;
    auto* list = attr_list(kind, obj);
    int i = find_attr(list, kv);
    *flag = i >= 0;
    if (i >= 0) *static_cast<void**>(value_out) = (*list)[size_t(i)].value;
    return MPI_SUCCESS;
}

int attr_delete(AttrKind kind, int obj, int keyval) {
    if ((kind == AttrKind::comm && is_predefined_comm_key(keyval)) ||
        (kind == AttrKind::win && is_predefined_win_key(keyval)))
        return make_error(MPI_ERR_KEYVAL, "keyval 0x%x is a predefined attribute and cannot be "
                                          "deleted", unsigned(keyval));
    int err = MPI_SUCCESS;
    Keyval* kv = find_keyval(kind, keyval, &err);
    if (!kv) return err;
    return delete_one(kind, obj, kv);
}

int attr_comm_copy(Comm* from, Comm* to) {
    return copy_all(AttrKind::comm, from->handle, to->handle);
}
int attr_comm_delete_all(Comm* c) { return delete_all(AttrKind::comm, c->handle); }
int attr_type_copy(MPI_Datatype from, MPI_Datatype to) {
    return copy_all(AttrKind::type, from, to);
}
int attr_type_delete_all(MPI_Datatype t) { return delete_all(AttrKind::type, t); }
int attr_win_delete_all(MPI_Win w) { return delete_all(AttrKind::win, w); }

int attr_finalize() {
    int rc = delete_all(AttrKind::comm, MPI_COMM_SELF);
    int rc2 = delete_all(AttrKind::comm, MPI_COMM_WORLD);
    return rc != MPI_SUCCESS ? rc : rc2;
}

}  // namespace wanmpi::core

// ---- predefined copy functions (mpi.h: MPI_COMM_DUP_FN = MPIX_Dup_fn etc.) --------------------
// MPI_*_NULL_COPY_FN / MPI_*_NULL_DELETE_FN are null pointers in mpi.h: "do not copy" and
// "nothing to do".
extern "C" {
__attribute__((visibility("default"))) int MPIX_Dup_fn(MPI_Comm, int, void*, void* in,
                                                        void* out, int* flag) {
    *static_cast<void**>(out) = in;
    *flag = 1;
    return MPI_SUCCESS;
}
__attribute__((visibility("default"))) int MPIX_Type_dup_fn(MPI_Datatype, int, void*, void* in,
                                                             void* out, int* flag) {
    *static_cast<void**>(out) = in;
    *flag = 1;
    return MPI_SUCCESS;
}
__attribute__((visibility("default"))) int MPIX_Win_dup_fn(MPI_Win, int, void*, void* in,
                                                            void* out, int* flag) {
    *static_cast<void**>(out) = in;
    *flag = 1;
    return MPI_SUCCESS;
}
}  // extern "C"

// ---- C entry points -----------------------------------------------------------------------------
namespace wanmpi::impl {
using namespace wanmpi::core;

// Any live datatype, committed or not (attributes may be cached on uncommitted types).
#define CHECK_TYPE(t)                                                                          \
    if (!datatype_get(t))                                                                      \
    return raise(nullptr, make_error(MPI_ERR_TYPE, "invalid datatype 0x%x", unsigned(t)))

int Comm_create_keyval(MPI_Comm_copy_attr_function* comm_copy_attr_fn,
                       MPI_Comm_delete_attr_function* comm_delete_attr_fn, int* comm_keyval,
                       void* extra_state) {
    if (!comm_keyval) return raise(nullptr, make_error(MPI_ERR_ARG, "comm_keyval is NULL"));
    return raise(nullptr, keyval_create(AttrKind::comm, comm_copy_attr_fn, comm_delete_attr_fn,
                                        extra_state, comm_keyval));
}
int Comm_free_keyval(int* comm_keyval) {
    if (!comm_keyval) return raise(nullptr, make_error(MPI_ERR_ARG, "comm_keyval is NULL"));
    return raise(nullptr, keyval_free(AttrKind::comm, comm_keyval));
}
int Comm_set_attr(MPI_Comm comm, int comm_keyval, void* attribute_val) {
    WANMPI_GET_COMM(c, comm);
    return raise(c, attr_set(AttrKind::comm, c->handle, comm_keyval, attribute_val));
}
int Comm_get_attr(MPI_Comm comm, int comm_keyval, void* attribute_val, int* flag) {
    WANMPI_GET_COMM(c, comm);
    return raise(c, attr_get(AttrKind::comm, c->handle, comm_keyval, attribute_val, flag));
}
int Comm_delete_attr(MPI_Comm comm, int comm_keyval) {
    WANMPI_GET_COMM(c, comm);
    return raise(c, attr_delete(AttrKind::comm, c->handle, comm_keyval));
}

// Deprecated MPI-1 names: same semantics (MPI_Copy_function has the comm signature).
int Keyval_create(MPI_Copy_function* copy_fn, MPI_Delete_function* delete_fn, int* keyval,
                  void* extra_state) {
    return Comm_create_keyval(copy_fn, delete_fn, keyval, extra_state);
}
int Keyval_free(int* keyval) { return Comm_free_keyval(keyval); }
int Attr_put(MPI_Comm comm, int keyval, void* attribute_val) {
    return Comm_set_attr(comm, keyval, attribute_val);
}
int Attr_get(MPI_Comm comm, int keyval, void* attribute_val, int* flag) {
    return Comm_get_attr(comm, keyval, attribute_val, flag);
}
int Attr_delete(MPI_Comm comm, int keyval) { return Comm_delete_attr(comm, keyval); }

int Type_create_keyval(MPI_Type_copy_attr_function* type_copy_attr_fn,
                       MPI_Type_delete_attr_function* type_delete_attr_fn, int* type_keyval,
                       void* extra_state) {
    if (!type_keyval) return raise(nullptr, make_error(MPI_ERR_ARG, "type_keyval is NULL"));
    return raise(nullptr, keyval_create(AttrKind::type, type_copy_attr_fn, type_delete_attr_fn,
                                        extra_state, type_keyval));
}
int Type_free_keyval(int* type_keyval) {
    if (!type_keyval) return raise(nullptr, make_error(MPI_ERR_ARG, "type_keyval is NULL"));
    return raise(nullptr, keyval_free(AttrKind::type, type_keyval));
}
int Type_set_attr(MPI_Datatype datatype, int type_keyval, void* attribute_val) {
    CHECK_TYPE(datatype);
    return raise(nullptr, attr_set(AttrKind::type, datatype, type_keyval, attribute_val));
}
int Type_get_attr(MPI_Datatype datatype, int type_keyval, void* attribute_val, int* flag) {
    CHECK_TYPE(datatype);
    return raise(nullptr, attr_get(AttrKind::type, datatype, type_keyval, attribute_val, flag));
}
int Type_delete_attr(MPI_Datatype datatype, int type_keyval) {
    CHECK_TYPE(datatype);
    return raise(nullptr, attr_delete(AttrKind::type, datatype, type_keyval));
}

int Win_create_keyval(MPI_Win_copy_attr_function* win_copy_attr_fn,
                      MPI_Win_delete_attr_function* win_delete_attr_fn, int* win_keyval,
                      void* extra_state) {
    if (!win_keyval) return raise(nullptr, make_error(MPI_ERR_ARG, "win_keyval is NULL"));
    return raise(nullptr, keyval_create(AttrKind::win, win_copy_attr_fn, win_delete_attr_fn,
                                        extra_state, win_keyval));
}
int Win_free_keyval(int* win_keyval) {
    if (!win_keyval) return raise(nullptr, make_error(MPI_ERR_ARG, "win_keyval is NULL"));
    return raise(nullptr, keyval_free(AttrKind::win, win_keyval));
}

}  // namespace wanmpi::impl
