// MPI_T, the tools information interface (MPI 4.0 chapter 15): setup, control variables,
// enumerations, categories and the event-source calls. Performance variables: mpi_t_pvar.cpp.
// Shared state and the threading rules: mpi_t.hpp.
//
// Control variables are the tunables registry (base/tunables.hpp), in the order `wanmpi-info`
// prints it (sorted by environment name), one cvar per tunable, named like its environment
// variable (WANMPI_P2P_EAGER_CREDIT). Mapping:
//   type   bool -> MPI_INT (0/1); int -> MPI_COUNT; double -> MPI_DOUBLE; string -> MPI_CHAR
//          (count = the buffer a read needs); a string with a fixed set of names (choices) ->
//          MPI_INT with an enumeration whose items are the names, in order
//   level  user -> MPI_T_VERBOSITY_USER_BASIC, tuner -> TUNER_BASIC, developer -> MPIDEV_BASIC
//   scope  read once at start -> MPI_T_SCOPE_READONLY (a write: MPI_T_ERR_CVAR_SET_NEVER);
//          `runtime` and every rank must agree -> MPI_T_SCOPE_ALL_EQ; `runtime` -> LOCAL
//   bind   MPI_T_BIND_NO_OBJECT (every tunable is process-wide)
// Categories: one per tunable component (WANMPI_COLL, WANMPI_SHM, ...) holding its cvars and
// the pvars about the same part of the library, all under one root category "wanmpi".
#include "core/mpi_t.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <unordered_set>

#include "base/tunables.hpp"
#include "bindings/impl.hpp"
#include "core/api.hpp"

// A control variable handle: which cvar, and the count handed out at allocation.
struct wanmpi_t_cvar_handle_s {
    int index;
    int count;
};

namespace wanmpi::core::mpit {

namespace {

int g_refs = 0;  // MPI_T_init_thread calls not yet matched by MPI_T_finalize

struct Cvar {
    const base::TunableInfo* t;
    MPI_Datatype dt;
    MPI_T_enum en = MPI_T_ENUM_NULL;
    int verbosity;
    int scope;
};

struct Category {
    std::string name, desc;
    std::vector<int> cvars, pvars, subcats;
};

struct Tables {
    std::vector<Cvar> cvars;
    std::map<std::string, int> cvar_index;
    std::vector<Category> cats;
    std::map<std::string, int> cat_index;
    std::unordered_set<wanmpi_t_cvar_handle_s*> handles;
};

std::deque<wanmpi_t_enum_s>& enums() {
    static std::deque<wanmpi_t_enum_s> e;  // deque: pointers stay valid as it grows
    return e;
}

// What each tunable component is about (a category's description).
const char* component_doc(const std::string& c) {
    static const std::map<std::string, const char*> docs = {
        {"COLL", "Collective algorithms and their thresholds"},
        {"IMPI", "Multi-cluster jobs: the IMPI protocol between clusters"},
        {"JOB", "Job-wide settings shared by every cluster"},
        {"LOG", "Diagnostic output"},
        {"MPIRUN", "The launcher (mpirun)"},
        {"P2P", "Point-to-point engine: protocols and matching queues"},
        {"PROGRESS", "Waiting and progress: polling, yielding, core binding"},
        {"SELF", "The self route (messages to oneself)"},
        {"SHM", "The shm route (ranks of the same host)"},
        {"TCP", "The tcp route (other hosts of the same cluster)"},
        {"TRANSPORTS", "Which routes a rank may use"},
        {"WAN", "The wan route and the links between clusters"},
    };
    auto it = docs.find(c);
    return it == docs.end() ? "wanmpi settings" : it->second;
}

int verbosity_of(base::Level l) {
    switch (l) {
    case base::Level::user: return MPI_T_VERBOSITY_USER_BASIC;
    case base::Level::tuner: return MPI_T_VERBOSITY_TUNER_BASIC;
    case base::Level::developer: return MPI_T_VERBOSITY_MPIDEV_BASIC;
    }
    return MPI_T_VERBOSITY_MPIDEV_ALL;
}

int category_for(Tables& tb, const std::string& component) {
    const std::string name = "WANMPI_" + component;
    auto it = tb.cat_index.find(name);
    if (it != tb.cat_index.end()) return it->second;
    const int k = int(tb.cats.size());
    tb.cats.push_back({name, component_doc(component), {}, {}, {}});
    tb.cat_index[name] = k;
    tb.cats[0].subcats.push_back(k);
    return k;
}

// Built once, at the first MPI_T_init_thread (static initialisation has registered everything
// by then) and never changed.
Tables& tables() {
    static Tables tb = [] {
        Tables t;
        t.cats.push_back({"wanmpi", "Everything wanmpi exposes through MPI_T", {}, {}, {}});
        t.cat_index["wanmpi"] = 0;
        for (const base::TunableInfo* ti : base::all_tunables()) {
            Cvar c{ti, MPI_CHAR, MPI_T_ENUM_NULL, verbosity_of(ti->level),
                   !ti->runtime ? MPI_T_SCOPE_READONLY
                   : ti->agree  ? MPI_T_SCOPE_ALL_EQ
                                : MPI_T_SCOPE_LOCAL};
            if (ti->type == "bool") c.dt = MPI_INT;
            else if (ti->type == "int") c.dt = MPI_COUNT;
            else if (ti->type == "double") c.dt = MPI_DOUBLE;
            if (!ti->choices.empty()) {
                std::vector<std::pair<int, std::string>> items;
                for (size_t i = 0; i < ti->choices.size(); ++i)
                    items.emplace_back(int(i), ti->choices[i]);
                c.dt = MPI_INT;
                c.en = make_enum(ti->env, std::move(items));
            }
            const int idx = int(t.cvars.size());
            t.cvars.push_back(c);
            t.cvar_index[ti->env] = idx;
            t.cats[size_t(category_for(t, ti->component))].cvars.push_back(idx);
        }
        for (int p = 0; p < pvar_count(); ++p) {
            const std::string& cat = pvar_category(p);
            t.cats[size_t(category_for(t, cat))].pvars.push_back(p);
        }
        return t;
    }();
    return tb;
}

// Typed value <-> the tunable's text. Texts come from TunableInfo::current (base::detail::
// to_text) and go back through TunableInfo::assign (the same parsers the environment uses).
int text_to_buf(const Cvar& c, const std::string& text, void* buf, int count) {
    if (c.en != MPI_T_ENUM_NULL) {
        const auto& ch = c.t->choices;
        auto it = std::find(ch.begin(), ch.end(), text);
        // A value outside the names (the environment set a name the library refused and
        // warned about): -1, which no item has.
        *static_cast<int*>(buf) = it == ch.end() ? -1 : int(it - ch.begin());
    } else if (c.dt == MPI_INT) {
        *static_cast<int*>(buf) = base::parse_bool(text).value_or(false) ? 1 : 0;
    } else if (c.dt == MPI_COUNT) {
        *static_cast<MPI_Count*>(buf) = base::parse_int(text).value_or(0);
    } else if (c.dt == MPI_DOUBLE) {
        *static_cast<double*>(buf) = base::parse_double(text).value_or(0.0);
    } else {
        char* out = static_cast<char*>(buf);
        const size_t n = std::min(text.size(), size_t(std::max(count, 1) - 1));
        std::memcpy(out, text.data(), n);
        out[n] = '\0';
    }
    return MPI_SUCCESS;
}

bool buf_to_text(const Cvar& c, const void* buf, int count, std::string* text) {
    if (c.en != MPI_T_ENUM_NULL) {
        const int v = *static_cast<const int*>(buf);
        if (v < 0 || size_t(v) >= c.t->choices.size()) return false;
        *text = c.t->choices[size_t(v)];
    } else if (c.dt == MPI_INT) {
        // A boolean: 0 or 1. Other values are refused rather than read as "true", so that a
        // tool that writes 123 learns at once that it will not read 123 back.
        const int v = *static_cast<const int*>(buf);
        if (v != 0 && v != 1) return false;
        *text = v ? "1" : "0";
    } else if (c.dt == MPI_COUNT) {
        *text = std::to_string(static_cast<long long>(*static_cast<const MPI_Count*>(buf)));
    } else if (c.dt == MPI_DOUBLE) {
        const double d = *static_cast<const double*>(buf);
        if (!std::isfinite(d)) return false;
        char b[64];
        std::snprintf(b, sizeof b, "%.17g", d);
        *text = b;
    } else {
        const char* s = static_cast<const char*>(buf);
        *text = std::string(s, strnlen(s, size_t(count)));
    }
    return true;
}

// The count a handle of this cvar reports: 1, or for a string the buffer a read needs.
int cvar_count(const Cvar& c) {
    if (c.dt != MPI_CHAR) return 1;
    std::lock_guard<std::recursive_mutex> api(g_api_lock);
    return std::max(1024, int(c.t->current(c.t->self).size()) + 1);
}

}  // namespace

std::mutex& lock() {
    static std::mutex m;
    return m;
}

bool active() { return g_refs > 0; }

int answer(int rc) {
    std::lock_guard<std::mutex> g(lock());
    return active() ? rc : MPI_T_ERR_NOT_INITIALIZED;
}

void copy_string(const std::string& s, char* buf, int* len) {
    if (!len) return;
    if (*len == 0 || !buf) {
        *len = int(s.size()) + 1;
        return;
    }
    const int n = std::min(int(s.size()), *len - 1);
    std::memcpy(buf, s.data(), size_t(std::max(n, 0)));
    buf[std::max(n, 0)] = '\0';
    *len = std::max(n, 0) + 1;
}

wanmpi_t_enum_s* make_enum(std::string name, std::vector<std::pair<int, std::string>> items) {
    enums().push_back({std::move(name), std::move(items)});
    return &enums().back();
}

bool valid_enum(MPI_T_enum e) {
    for (auto& x : enums())
        if (&x == e) return true;
    return false;
}

}  // namespace wanmpi::core::mpit

namespace wanmpi::impl {
using namespace wanmpi::core::mpit;

// ---- setup ----------------------------------------------------------------------------------
int T_init_thread(int required, int* provided) {
    Guard g(lock());
    if (required < MPI_THREAD_SINGLE || required > MPI_THREAD_MULTIPLE) return MPI_T_ERR_INVALID;
    tables();  // build the tables once, so the indices are fixed from now on
    ++g_refs;
    // Every MPI_T call serialises on lock(), so every level is supported.
    if (provided) *provided = required;
    return MPI_SUCCESS;
}

int T_finalize() {
    Guard g(lock());
    MPIT_CHECK_INIT();
    if (--g_refs == 0) {
        auto& hs = tables().handles;
        for (auto* h : hs) delete h;
        hs.clear();
        free_all_sessions();
    }
    return MPI_SUCCESS;
}

// ---- enumerations -----------------------------------------------------------------------------
int T_enum_get_info(MPI_T_enum enumtype, int* num, char* name, int* name_len) {
    Guard g(lock());
    MPIT_CHECK_INIT();
    if (!valid_enum(enumtype)) return MPI_T_ERR_INVALID_HANDLE;
    if (num) *num = int(enumtype->items.size());
    copy_string(enumtype->name, name, name_len);
    return MPI_SUCCESS;
}

int T_enum_get_item(MPI_T_enum enumtype, int index, int* value, char* name, int* name_len) {
    Guard g(lock());
    MPIT_CHECK_INIT();
    if (!valid_enum(enumtype)) return MPI_T_ERR_INVALID_HANDLE;
    if (index < 0 || size_t(index) >= enumtype->items.size()) return MPI_T_ERR_INVALID_ITEM;
    const auto& it = enumtype->items[size_t(index)];
    if (value) *value = it.first;
    copy_string(it.second, name, name_len);
    return MPI_SUCCESS;
}

// ---- control variables ------------------------------------------------------------------------
int T_cvar_get_num(int* num_cvar) {
    return get_num(num_cvar, [] { return int(tables().cvars.size()); });
}

int T_cvar_get_info(int cvar_index, char* name, int* name_len, int* verbosity,
                    MPI_Datatype* datatype, MPI_T_enum* enumtype, char* desc, int* desc_len,
                    int* bind, int* scope) {
    Guard g(lock());
    MPIT_CHECK_INIT();
    auto& tb = tables();
    if (cvar_index < 0 || size_t(cvar_index) >= tb.cvars.size()) return MPI_T_ERR_INVALID_INDEX;
    const Cvar& c = tb.cvars[size_t(cvar_index)];
    copy_string(c.t->env, name, name_len);
    if (verbosity) *verbosity = c.verbosity;
    if (datatype) *datatype = c.dt;
    if (enumtype) *enumtype = c.en;
    std::string d = c.t->doc;
    if (!c.t->alias.empty() && c.t->alias != c.t->env) d += " (Also read as " + c.t->alias + ".)";
    copy_string(d, desc, desc_len);
    if (bind) *bind = MPI_T_BIND_NO_OBJECT;
    if (scope) *scope = c.scope;
    return MPI_SUCCESS;
}

namespace {
// MPI_T_{cvar,category}_get_index: look `name` up in one of the tables' name maps.
int index_of(const std::map<std::string, int> Tables::*names, const char* name, int* index) {
    Guard g(lock());
    MPIT_CHECK_INIT();
    if (!name || !index) return MPI_T_ERR_INVALID;
    const auto& m = tables().*names;
    auto it = m.find(name);
    if (it == m.end()) return MPI_T_ERR_INVALID_NAME;
    *index = it->second;
    return MPI_SUCCESS;
}
}  // namespace

int T_cvar_get_index(const char* name, int* cvar_index) {
    return index_of(&Tables::cvar_index, name, cvar_index);
}

int T_cvar_handle_alloc(int cvar_index, void* /*obj_handle: no cvar binds to an object*/,
                        MPI_T_cvar_handle* handle, int* count) {
    Guard g(lock());
    MPIT_CHECK_INIT();
    auto& tb = tables();
    if (cvar_index < 0 || size_t(cvar_index) >= tb.cvars.size()) return MPI_T_ERR_INVALID_INDEX;
    if (!handle || !count) return MPI_T_ERR_INVALID;
    auto* h = new (std::nothrow) wanmpi_t_cvar_handle_s{cvar_index, 1};
    if (!h) return MPI_T_ERR_MEMORY;
    h->count = cvar_count(tb.cvars[size_t(cvar_index)]);
    tb.handles.insert(h);
    *handle = h;
    *count = h->count;
    return MPI_SUCCESS;
}

int T_cvar_handle_free(MPI_T_cvar_handle* handle) {
    Guard g(lock());
    MPIT_CHECK_INIT();
    if (!handle) return MPI_T_ERR_INVALID;
    auto& hs = tables().handles;
    auto it = hs.find(*handle);
    if (it == hs.end()) return MPI_T_ERR_INVALID_HANDLE;
    hs.erase(it);
    delete *handle;
    *handle = MPI_T_CVAR_HANDLE_NULL;
    return MPI_SUCCESS;
}

// The cvar behind a handle of a read or write (under lock(), MPI_T initialized): the error
// class for a handle that is not live or a null buffer, else MPI_SUCCESS and *out.
static int cvar_of(MPI_T_cvar_handle handle, const void* buf, const Cvar** out) {
    auto& tb = tables();
    if (!tb.handles.count(handle)) return MPI_T_ERR_INVALID_HANDLE;
    if (!buf) return MPI_T_ERR_INVALID;
    *out = &tb.cvars[size_t(handle->index)];
    return MPI_SUCCESS;
}

int T_cvar_read(MPI_T_cvar_handle handle, void* buf) {
    Guard g(lock());
    MPIT_CHECK_INIT();
    const Cvar* cp = nullptr;
    if (int rc = cvar_of(handle, buf, &cp); rc != MPI_SUCCESS) return rc;
    const Cvar& c = *cp;
    std::string text;
    {
        // The API lock orders this read after any write (and, with MPI_THREAD_MULTIPLE,
        // against the library's own reads of the value).
        std::lock_guard<std::recursive_mutex> api(core::g_api_lock);
        text = c.t->current(c.t->self);
    }
    return text_to_buf(c, text, buf, handle->count);
}

int T_cvar_write(MPI_T_cvar_handle handle, const void* buf) {
    Guard g(lock());
    MPIT_CHECK_INIT();
    const Cvar* cp = nullptr;
    if (int rc = cvar_of(handle, buf, &cp); rc != MPI_SUCCESS) return rc;
    const Cvar& c = *cp;
    if (!c.t->runtime) return MPI_T_ERR_CVAR_SET_NEVER;
    std::string text;
    if (!buf_to_text(c, buf, handle->count, &text)) return MPI_T_ERR_INVALID;
    std::lock_guard<std::recursive_mutex> api(core::g_api_lock);
    return c.t->assign(c.t->self, text) ? MPI_SUCCESS : MPI_T_ERR_INVALID;
}

// ---- categories -------------------------------------------------------------------------------
int T_category_get_num(int* num_cat) {
    return get_num(num_cat, [] { return int(tables().cats.size()); });
}

int T_category_get_info(int cat_index, char* name, int* name_len, char* desc, int* desc_len,
                        int* num_cvars, int* num_pvars, int* num_categories) {
    Guard g(lock());
    MPIT_CHECK_INIT();
    auto& tb = tables();
    if (cat_index < 0 || size_t(cat_index) >= tb.cats.size()) return MPI_T_ERR_INVALID_INDEX;
    const Category& c = tb.cats[size_t(cat_index)];
    copy_string(c.name, name, name_len);
    copy_string(c.desc, desc, desc_len);
    if (num_cvars) *num_cvars = int(c.cvars.size());
    if (num_pvars) *num_pvars = int(c.pvars.size());
    if (num_categories) *num_categories = int(c.subcats.size());
    return MPI_SUCCESS;
}

int T_category_get_num_events(int cat_index, int* num_events) {
    Guard g(lock());
    MPIT_CHECK_INIT();
    if (cat_index < 0 || size_t(cat_index) >= tables().cats.size()) return MPI_T_ERR_INVALID_INDEX;
    if (num_events) *num_events = 0;
    return MPI_SUCCESS;
}

int T_category_get_index(const char* name, int* cat_index) {
    return index_of(&Tables::cat_index, name, cat_index);
}

namespace {
enum class Member { cvars, pvars, cats };
int category_members(int cat_index, int len, int indices[], Member m) {
    Guard g(lock());
    MPIT_CHECK_INIT();
    auto& tb = tables();
    if (cat_index < 0 || size_t(cat_index) >= tb.cats.size()) return MPI_T_ERR_INVALID_INDEX;
    if (len < 0 || (len > 0 && !indices)) return MPI_T_ERR_INVALID;
    const Category& c = tb.cats[size_t(cat_index)];
    const std::vector<int>& v = m == Member::cvars ? c.cvars : m == Member::pvars ? c.pvars : c.subcats;
    for (size_t i = 0; i < v.size() && int(i) < len; ++i) indices[i] = v[i];
    return MPI_SUCCESS;
}
}  // namespace

int T_category_get_cvars(int cat_index, int len, int indices[]) {
    return category_members(cat_index, len, indices, Member::cvars);
}
int T_category_get_pvars(int cat_index, int len, int indices[]) {
    return category_members(cat_index, len, indices, Member::pvars);
}
int T_category_get_categories(int cat_index, int len, int indices[]) {
    return category_members(cat_index, len, indices, Member::cats);
}
int T_category_get_events(int cat_index, int len, int indices[]) {
    Guard g(lock());
    MPIT_CHECK_INIT();
    if (cat_index < 0 || size_t(cat_index) >= tables().cats.size()) return MPI_T_ERR_INVALID_INDEX;
    if (len < 0 || (len > 0 && !indices)) return MPI_T_ERR_INVALID;
    return MPI_SUCCESS;  // no events: nothing to store
}

int T_category_changed(int* update_number) {
    return get_num(update_number, [] { return 0; });  // the tables never change once built
}

// ---- event sources and events -----------------------------------------------------------------
// wanmpi defines no event types and no event sources (MPI 4.0 allows zero of each). Every index
// is therefore out of range (MPI_T_ERR_INVALID_INDEX), no registration can be allocated, so a
// registration argument is always invalid (MPI_T_ERR_INVALID_HANDLE), and the instance calls,
// legal only inside an event callback that never runs, return MPI_T_ERR_INVALID.
int T_source_get_num(int* num_sources) { return get_num(num_sources, [] { return 0; }); }
int T_source_get_info(int, char*, int*, char*, int*, MPI_T_source_order*, MPI_Count*, MPI_Count*,
                      MPI_Info*) {
    return answer(MPI_T_ERR_INVALID_INDEX);
}
int T_source_get_timestamp(int, MPI_Count*) { return answer(MPI_T_ERR_INVALID_INDEX); }
int T_event_get_num(int* num_events) { return get_num(num_events, [] { return 0; }); }
int T_event_get_info(int, char*, int*, int*, MPI_Datatype[], MPI_Aint[], int*, MPI_T_enum*,
                     MPI_Info*, char*, int*, int*) {
    return answer(MPI_T_ERR_INVALID_INDEX);
}
int T_event_get_index(const char* name, int*) {
    return answer(name ? MPI_T_ERR_INVALID_NAME : MPI_T_ERR_INVALID);
}
int T_event_handle_alloc(int, void*, MPI_Info, MPI_T_event_registration*) {
    return answer(MPI_T_ERR_INVALID_INDEX);
}
int T_event_handle_set_info(MPI_T_event_registration, MPI_Info) {
    return answer(MPI_T_ERR_INVALID_HANDLE);
}
int T_event_handle_get_info(MPI_T_event_registration, MPI_Info*) {
    return answer(MPI_T_ERR_INVALID_HANDLE);
}
int T_event_register_callback(MPI_T_event_registration, MPI_T_cb_safety, MPI_Info, void*,
                              MPI_T_event_cb_function*) {
    return answer(MPI_T_ERR_INVALID_HANDLE);
}
int T_event_callback_set_info(MPI_T_event_registration, MPI_T_cb_safety, MPI_Info) {
    return answer(MPI_T_ERR_INVALID_HANDLE);
}
int T_event_callback_get_info(MPI_T_event_registration, MPI_T_cb_safety, MPI_Info*) {
    return answer(MPI_T_ERR_INVALID_HANDLE);
}
int T_event_handle_free(MPI_T_event_registration, void*, MPI_T_event_free_cb_function*) {
    return answer(MPI_T_ERR_INVALID_HANDLE);
}
int T_event_set_dropped_handler(MPI_T_event_registration, MPI_T_event_dropped_cb_function*) {
    return answer(MPI_T_ERR_INVALID_HANDLE);
}
int T_event_read(MPI_T_event_instance, int, void*) { return answer(MPI_T_ERR_INVALID); }
int T_event_copy(MPI_T_event_instance, void*) { return answer(MPI_T_ERR_INVALID); }
int T_event_get_timestamp(MPI_T_event_instance, MPI_Count*) { return answer(MPI_T_ERR_INVALID); }
int T_event_get_source(MPI_T_event_instance, int*) { return answer(MPI_T_ERR_INVALID); }

}  // namespace wanmpi::impl
