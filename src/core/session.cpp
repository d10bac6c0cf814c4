// MPI 4.0 Sessions (§11.3): MPI_Session_init/finalize, process sets, groups from process sets
// (MPI_Comm_create_from_group, comm.cpp, makes communicators of them) and session error
// handlers. See session.hpp for how sessions and MPI_Init share the engine.
//
// Process sets: "mpi://WORLD" (every process of the job, in MPI_COMM_WORLD's order, so across
// every cluster of an IMPI job) and "mpi://SELF" (the calling process). Names are compared
// without regard to case, as MPICH does. Each set's info has "mpi_size".
//
// Handles: MPI_SESSION_NULL is 0x38000000; session i is 0x38000000 | i (i >= 1), a slot that
// is not reused, so a finalized handle stays invalid.
// Threading: under the API lock (the entry points take it when MPI_THREAD_MULTIPLE).
#include "core/session.hpp"

#include <cstdlib>
#include <cstring>
#include <strings.h>
#include <string>
#include <vector>

#include "bindings/impl.hpp"
#include "core/api.hpp"
#include "core/engine.hpp"
#include "core/errors.hpp"
#include "core/group.hpp"
#include "core/info.hpp"

namespace wanmpi::core {
namespace {

struct Session {
    bool live = false;
    MPI_Errhandler eh = MPI_ERRORS_ARE_FATAL;
    MPI_Info info = MPI_INFO_NULL;  // what MPI_Session_get_info returns (a copy of it)
};

std::vector<Session> g_sessions(1);  // slot 0 stands for MPI_SESSION_NULL
int g_open = 0;
int g_world = 0;

constexpr uint32_t kBase = 0x38000000u;

const char* const kPsets[] = {"mpi://WORLD", "mpi://SELF"};
constexpr int kNumPsets = 2;

Session* lookup(MPI_Session h) {
    uint32_t v = uint32_t(h);
    if ((v & 0xff000000u) != kBase) return nullptr;
    uint32_t i = v & 0x00ffffffu;
    if (i == 0 || i >= g_sessions.size() || !g_sessions[i].live) return nullptr;
    return &g_sessions[i];
}

// An error with no usable session (an invalid handle, a failed MPI_Session_init): MPI_COMM_SELF's
// handler while the world model is initialized (MPI 4.0 §9.3, errors not tied to an object),
// else returned as MPI_ERRORS_RETURN would, since a session-only program has no other handler.
int raise_nosession(int code) {
    return world_state() == 1 ? raise(comm_lookup(MPI_COMM_SELF), code) : code;
}

int bad_session(MPI_Session h, const char* fname) {
    return raise_nosession(make_error(MPI_ERR_SESSION, "%s: invalid session 0x%x%s", fname,
                                      unsigned(h),
                                      h == MPI_SESSION_NULL ? " (MPI_SESSION_NULL)" : ""));
}

#define GET_SESSION(s, h, fname)            \
    Session* s = lookup(h);                 \
    if (!s) return bad_session(h, fname)

int pset_index(const char* name) {
    if (!name) return -1;
    for (int i = 0; i < kNumPsets; ++i)
        if (strcasecmp(name, kPsets[i]) == 0) return i;
    return -1;
}

int pset_error(MPI_Session h, const Session* s, const char* fname, const char* name) {
    return raise_session(h, s->eh,
                         make_error(MPI_ERR_ARG,
                                    "%s: unknown process set \"%s\" (this job has mpi://WORLD "
                                    "and mpi://SELF)",
                                    fname, name ? name : "(null)"));
}

int thread_level_of(MPI_Info info) {
    std::string v;
    if (info == MPI_INFO_NULL || !info_value(info, "thread_level", &v)) return MPI_THREAD_SINGLE;
    if (v == "MPI_THREAD_MULTIPLE") return MPI_THREAD_MULTIPLE;
    if (v == "MPI_THREAD_SERIALIZED") return MPI_THREAD_SERIALIZED;
    if (v == "MPI_THREAD_FUNNELED") return MPI_THREAD_FUNNELED;
    return MPI_THREAD_SINGLE;
}

const char* thread_level_name(int l) {
    switch (l) {
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    default: return "MPI_THREAD_SINGLE";
    }
}

}  // namespace

int world_state() { return g_world; }
void set_world_state(int s) { g_world = s; }
int sessions_open() { return g_open; }

int engine_stop() {
    int rc = engine_finalize();
    g_init_state = 2;
    return rc;
}

}  // namespace wanmpi::core

namespace wanmpi::impl {
using namespace wanmpi::core;

int Session_init(MPI_Info info, MPI_Errhandler errhandler, MPI_Session* session) {
    // MPI 4.0 §11.3.1: `errhandler` is invoked for errors of this call itself (MPICH:
    // MPIR_Err_return_session_init). So it is checked first, and every later error goes to it;
    // only a handler that is not one goes to the initial one.
    MPI_Errhandler eh = errhandler == MPI_ERRHANDLER_NULL ? MPI_ERRORS_ARE_FATAL : errhandler;
    if (!errhandler_fits(eh, EhKind::session))
        return raise_nosession(make_error(MPI_ERR_ARG,
                                          "MPI_Session_init: 0x%x is not a session error handler",
                                          unsigned(errhandler)));
    if (!session)
        return raise_session(MPI_SESSION_NULL, eh,
                             make_error(MPI_ERR_ARG, "MPI_Session_init: session is NULL"));
    if (int rc = info_arg_check(info, "MPI_Session_init"))
        return raise_session(MPI_SESSION_NULL, eh, rc);
    if (!engine_running()) {
        // One engine per process lifetime: after MPI_Finalize stopped it (no session was
        // open then) the launcher's connection is gone, so it cannot start again.
        if (g_init_state.load() == 2)
            return raise_session(MPI_SESSION_NULL, eh,
                                 make_error(MPI_ERR_OTHER,
                                            "MPI_Session_init: MPI was finalized in this process "
                                            "(wanmpi cannot start it again)"));
        int provided = 0;
        int rc = engine_init(thread_level_of(info), &provided);
        if (rc != MPI_SUCCESS)
            return raise_session(MPI_SESSION_NULL, eh,
                                 make_error(MPI_ERR_OTHER, "MPI_Session_init: start-up failed; "
                                                           "see the messages above"));
        g_init_state = 1;
    }
    Session s;
    s.live = true;
    s.eh = eh;
    errhandler_retain(eh);
    InfoPairs pairs;
    if (info != MPI_INFO_NULL) info_contents(info, &pairs);
    bool has_level = false;
    for (auto& kv : pairs) has_level |= kv.first == "thread_level";
    // The level the engine provides (which the first user fixed) is what this session gets.
    if (!has_level) pairs.emplace_back("thread_level", thread_level_name(thread_level()));
    else
        for (auto& kv : pairs)
            if (kv.first == "thread_level") kv.second = thread_level_name(thread_level());
    s.info = info_create(pairs);
    g_sessions.push_back(s);
    ++g_open;
    *session = MPI_Session(kBase | uint32_t(g_sessions.size() - 1));
    return MPI_SUCCESS;
}

int Session_finalize(MPI_Session* session) {
    if (!session)
        return raise_nosession(make_error(MPI_ERR_ARG, "MPI_Session_finalize: session is NULL"));
    GET_SESSION(s, *session, "MPI_Session_finalize");
    s->live = false;
    errhandler_release(s->eh);
    Info_free(&s->info);
    *session = MPI_SESSION_NULL;
    --g_open;
    // The last user gone: the engine stays up, since MPI 4.0 lets the process start sessions
    // again (or call MPI_Init); it stops at exit, unless MPI_Init/MPI_Finalize stop it first.
    static bool at_exit = false;
    if (g_open == 0 && world_state() != 1 && !at_exit) {
        at_exit = true;
        std::atexit([] {
            if (engine_running() && sessions_open() == 0 && world_state() != 1) engine_stop();
        });
    }
    return MPI_SUCCESS;
}

int Session_get_info(MPI_Session session, MPI_Info* info_used) {
    GET_SESSION(s, session, "MPI_Session_get_info");
    if (!info_used)
        return raise_session(session, s->eh,
                             make_error(MPI_ERR_ARG, "MPI_Session_get_info: info_used is NULL"));
    return Info_dup(s->info, info_used);
}

int Session_get_num_psets(MPI_Session session, MPI_Info, int* npset_names) {
    GET_SESSION(s, session, "MPI_Session_get_num_psets");
    if (!npset_names)
        return raise_session(session, s->eh,
                             make_error(MPI_ERR_ARG, "MPI_Session_get_num_psets: NULL output"));
    *npset_names = kNumPsets;
    return MPI_SUCCESS;
}

// Like MPI_Info_get_string: up to *pset_len - 1 characters and a null are copied, and
// *pset_len becomes the size the whole name needs; *pset_len == 0 only asks for that size.
int Session_get_nth_pset(MPI_Session session, MPI_Info, int n, int* pset_len, char* pset_name) {
    GET_SESSION(s, session, "MPI_Session_get_nth_pset");
    if (n < 0 || n >= kNumPsets)
        return raise_session(session, s->eh,
                             make_error(MPI_ERR_ARG,
                                        "MPI_Session_get_nth_pset: n = %d, there are %d process "
                                        "sets",
                                        n, kNumPsets));
    if (!pset_len || *pset_len < 0 || (*pset_len > 0 && !pset_name))
        return raise_session(session, s->eh,
                             make_error(MPI_ERR_ARG, "MPI_Session_get_nth_pset: bad pset_len or "
                                                     "pset_name"));
    const size_t len = std::strlen(kPsets[n]);
    if (*pset_len > 0) {
        size_t k = std::min(len, size_t(*pset_len - 1));
        std::memcpy(pset_name, kPsets[n], k);
        pset_name[k] = '\0';
    }
    *pset_len = int(len) + 1;
    return MPI_SUCCESS;
}

int Session_get_pset_info(MPI_Session session, const char* pset_name, MPI_Info* info) {
    GET_SESSION(s, session, "MPI_Session_get_pset_info");
    int i = pset_index(pset_name);
    if (i < 0) return pset_error(session, s, "MPI_Session_get_pset_info", pset_name);
    if (!info)
        return raise_session(session, s->eh,
                             make_error(MPI_ERR_ARG, "MPI_Session_get_pset_info: info is NULL"));
    *info = info_create({{"mpi_size", std::to_string(i == 0 ? world_size() : 1)}});
    return MPI_SUCCESS;
}

int Group_from_session_pset(MPI_Session session, const char* pset_name, MPI_Group* newgroup) {
    GET_SESSION(s, session, "MPI_Group_from_session_pset");
    int i = pset_index(pset_name);
    if (i < 0) return pset_error(session, s, "MPI_Group_from_session_pset", pset_name);
    if (!newgroup)
        return raise_session(session, s->eh,
                             make_error(MPI_ERR_ARG, "MPI_Group_from_session_pset: newgroup is "
                                                     "NULL"));
    std::vector<int> members;
    if (i == 0) {
        members.resize(size_t(world_size()));
        for (int r = 0; r < world_size(); ++r) members[size_t(r)] = r;
    } else {
        members.push_back(world_rank());
    }
    *newgroup = group_make(std::move(members));
    return MPI_SUCCESS;
}

// ---- session error handlers ---------------------------------------------------------------------
int Session_create_errhandler(MPI_Session_errhandler_function* fn, MPI_Errhandler* errhandler) {
    if (!fn || !errhandler)
        return raise_nosession(make_error(MPI_ERR_ARG, "MPI_Session_create_errhandler: %s is "
                                                       "NULL",
                                          fn ? "errhandler" : "the function"));
    *errhandler = errhandler_create(EhKind::session, reinterpret_cast<void (*)()>(fn));
    return MPI_SUCCESS;
}

int Session_set_errhandler(MPI_Session session, MPI_Errhandler errhandler) {
    GET_SESSION(s, session, "MPI_Session_set_errhandler");
    if (!errhandler_fits(errhandler, EhKind::session))
        return raise_session(session, s->eh,
                             make_error(MPI_ERR_ARG,
                                        "MPI_Session_set_errhandler: 0x%x is not a session error "
                                        "handler",
                                        unsigned(errhandler)));
    errhandler_retain(errhandler);
    errhandler_release(s->eh);
    s->eh = errhandler;
    return MPI_SUCCESS;
}

int Session_get_errhandler(MPI_Session session, MPI_Errhandler* errhandler) {
    GET_SESSION(s, session, "MPI_Session_get_errhandler");
    if (!errhandler)
        return raise_session(session, s->eh,
                             make_error(MPI_ERR_ARG, "MPI_Session_get_errhandler: NULL output"));
    errhandler_retain(s->eh);  // the user gets a reference (freed with MPI_Errhandler_free)
    *errhandler = s->eh;
    return MPI_SUCCESS;
}

int Session_call_errhandler(MPI_Session session, int errorcode) {
    GET_SESSION(s, session, "MPI_Session_call_errhandler");
    raise_session(session, s->eh, errorcode);  // returns unless the handler aborts
    return MPI_SUCCESS;
}

#undef GET_SESSION
}  // namespace wanmpi::impl
