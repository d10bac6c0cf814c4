// Communicator table and the intracommunicator calls: dup (blocking and not), split,
// split_type, create, create_group, free, compare, names, info, groups.
//
// Handles are 0x44000000 | index for live communicators (MPI_COMM_WORLD is index 0, MPI_COMM_SELF
// index 1); freed indexes are reused. Context ids: WORLD uses 0 (point-to-point) and 1
// (collectives), SELF 2 and 3; communicators created later get ids agreed collectively
// (comm_ctx.cpp: the IMPI rule, max over members + 2).
#include <algorithm>
#include <cstring>
#include <vector>

#include "bindings/impl.hpp"
#include "core/attr.hpp"
#include "core/comm_ops.hpp"
#include "core/engine.hpp"
#include "core/errors.hpp"
#include "core/group.hpp"

// The info module's entry points, referenced weakly so that communicators work (without hints)
// in a build that does not have them yet. Asm labels keep these declarations apart from mpi.h's.
extern "C" {
int wanmpi_weak_info_dup(MPI_Info, MPI_Info*) __asm__("PMPI_Info_dup") __attribute__((weak));
int wanmpi_weak_info_free(MPI_Info*) __asm__("PMPI_Info_free") __attribute__((weak));
int wanmpi_weak_info_get(MPI_Info, const char*, int, char*, int*) __asm__("PMPI_Info_get")
    __attribute__((weak));
}

namespace wanmpi::core {

namespace {
std::vector<Comm*>& comms() {
    static std::vector<Comm*> v;
    return v;
}
std::vector<uint32_t>& free_idx() {
    static std::vector<uint32_t> v;
    return v;
}
std::vector<void (*)(Comm*)>& destroy_hooks() {
    static std::vector<void (*)(Comm*)> v;
    return v;
}

void comm_unregister(Comm* c) {
    uint32_t idx = uint32_t(c->handle) & 0xffffff;
    auto& v = comms();
    if (idx < v.size() && v[idx] == c) {
        v[idx] = nullptr;
        free_idx().push_back(idx);
    }
}

void comm_destroy(Comm* c) {
    for (auto h : destroy_hooks()) h(c);
    if (c->local) comm_destroy(c->local);
    info_free_quiet(&c->info);
    delete c;
}
}  // namespace

Comm* comm_lookup(MPI_Comm h) {
    uint32_t u = uint32_t(h);
    if ((u & 0xff000000u) != 0x44000000u) return nullptr;
    uint32_t idx = u & 0xffffff;
    auto& v = comms();
    return idx < v.size() ? v[idx] : nullptr;
}

void comm_retain(Comm* c) { ++c->refs; }

void comm_release(Comm* c) {
    if (--c->refs == 0) comm_destroy(c);
}

void comm_add_destroy_hook(void (*hook)(Comm*)) { destroy_hooks().push_back(hook); }

MPI_Comm comm_register(Comm* c) {
    auto& v = comms();
    uint32_t idx;
    if (!free_idx().empty()) {
        idx = free_idx().back();
        free_idx().pop_back();
        v[idx] = c;
    } else {
        idx = uint32_t(v.size());
        v.push_back(c);
    }
    c->handle = MPI_Comm(0x44000000u | idx);
    if (c->local) c->local->handle = c->handle;  // errors on the local part name the parent
    return c->handle;
}

int rank_in(const std::vector<int>& world) {
    const int me = world_rank();
    for (size_t i = 0; i < world.size(); ++i)
        if (world[i] == me) return int(i);
    return -1;
}

Comm* comm_new(std::vector<int> world, int rank) {
    auto* c = new Comm();
    c->size = int(world.size());
    c->world = std::move(world);
    c->rank = rank;
    return c;
}

Comm* comm_child(const Comm* parent, std::vector<int> world, int rank) {
    Comm* c = comm_new(std::move(world), rank);
    c->errhandler = parent->errhandler;
    return c;
}

Comm* intercomm_child(const Comm* parent, std::vector<int> local, int rank,
                      std::vector<int> remote) {
    Comm* c = comm_child(parent, local, rank);
    c->inter = true;
    c->remote_world = std::move(remote);
    c->local = comm_child(parent, std::move(local), rank);
    c->local->hidden = true;
    c->local->name = "local group of an intercommunicator";
    return c;
}

void comm_discard(Comm* c) {
    if (c) comm_destroy(c);
}

Comm* comm_world_setup(int rank, int size) {
    auto& v = comms();
    auto* w = new Comm();
    w->handle = MPI_COMM_WORLD;
    w->ctx = 0;
    w->rank = rank;
    w->size = size;
    w->world.resize(size);
    for (int i = 0; i < size; ++i) w->world[i] = i;
    w->name = "MPI_COMM_WORLD";
    auto* s = new Comm();
    s->handle = MPI_COMM_SELF;
    s->ctx = 2;
    s->rank = 0;
    s->size = 1;
    s->world = {rank};
    s->name = "MPI_COMM_SELF";
    v = {w, s};
    free_idx().clear();
    return w;
}

MPI_Info info_dup_or_null(MPI_Info info) {
    if (info == MPI_INFO_NULL || !wanmpi_weak_info_dup) return MPI_INFO_NULL;
    MPI_Info out = MPI_INFO_NULL;
    if (wanmpi_weak_info_dup(info, &out) != MPI_SUCCESS) return MPI_INFO_NULL;
    return out;
}

void info_free_quiet(MPI_Info* info) {
    if (*info != MPI_INFO_NULL && wanmpi_weak_info_free) wanmpi_weak_info_free(info);
    *info = MPI_INFO_NULL;
}

Parent parent_of(Comm* c) {
    Parent p;
    p.c = c;
    p.inter = c->inter;
    const uint32_t seq = c->mgmt_seq++;
    const int tag = mgmt_tag(TagKind::seq, seq);
    p.key = AgreeKey{c->ctx, uint32_t(TagKind::seq), seq};
    p.m = members_all(c->inter ? c->local : c, tag);
    if (c->inter) {
        p.link.comm = c;
        p.link.peer = 0;
        p.link.tag = tag;
        p.link.leader = 0;
    }
    return p;
}

Task create_task(Parent p, bool member, std::vector<int> world, Comm** out) {
    uint32_t base = 0;
    int rc = co_await agree_ctx(p.m, nullptr, p.key, !member, 1, &base);
    if (rc != MPI_SUCCESS) co_return rc;
    if (member) {
        int r = rank_in(world);
        *out = comm_child(p.c, std::move(world), r);
        (*out)->ctx = base;
    }
    co_return MPI_SUCCESS;
}

// One allgather of (colour, key) carries round 0 of the context-id agreement too.
Task split_task(Parent p, int color, int key, Comm** out) {
    const bool ignore = color == MPI_UNDEFINED;
    Round0 r0 = ctx_round0_begin(ignore);
    std::vector<int64_t> all, mine = {color, key, r0.max_cid, r0.blocked};
    int rc = co_await allgather(p.m, std::move(mine), all);
    int64_t max_cid = 0, blocked = 0;
    for (int i = 0; i < p.m.n && rc == MPI_SUCCESS; ++i) {
        max_cid = std::max(max_cid, all[size_t(4 * i + 2)]);
        blocked = std::max(blocked, all[size_t(4 * i + 3)]);
    }
    uint32_t base = 0;
    int arc = MPI_SUCCESS;
    const bool decided = ctx_round0_end(r0, max_cid, blocked, 1, &base, &arc);
    if (rc != MPI_SUCCESS) co_return rc;
    if (arc != MPI_SUCCESS) co_return arc;
    std::vector<int> world;
    if (!ignore) {
        std::vector<std::pair<int64_t, int>> sel;  // (key, parent rank)
        for (int i = 0; i < p.m.n; ++i)
            if (all[size_t(4 * i)] == color) sel.emplace_back(all[size_t(4 * i + 1)], i);
        std::stable_sort(sel.begin(), sel.end());
        for (const auto& kr : sel) world.push_back(p.c->world[size_t(kr.second)]);
    }
    if (!decided) rc = co_await agree_ctx(p.m, nullptr, p.key, ignore, 1, &base, 1);
    if (rc != MPI_SUCCESS || ignore) co_return rc;
    int r = rank_in(world);
    *out = comm_child(p.c, std::move(world), r);
    (*out)->ctx = base;
    co_return MPI_SUCCESS;
}

uint32_t stringtag_hash(const char* s) {
    uint32_t h = 2166136261u;  // FNV-1a
    for (; *s; ++s) h = (h ^ uint8_t(*s)) * 16777619u;
    return h & 0xfffffu;
}

int comm_finish(Comm* parent, int rc, Comm* nc, MPI_Comm* newcomm) {
    if (rc != MPI_SUCCESS) {
        comm_discard(nc);
        return raise(parent, rc);
    }
    *newcomm = nc ? comm_register(nc) : MPI_COMM_NULL;
    return MPI_SUCCESS;
}

}  // namespace wanmpi::core

namespace wanmpi::impl {
using namespace wanmpi::core;


#define CHECK_PTR(c, p, what)                                                                 \
    if (!(p)) return raise(c, make_error(MPI_ERR_ARG, "null pointer passed as " what))

int Comm_rank(MPI_Comm comm, int* rank) {
    WANMPI_GET_COMM(c, comm);
    CHECK_PTR(c, rank, "rank");
    *rank = c->rank;
    return MPI_SUCCESS;
}

int Comm_size(MPI_Comm comm, int* size) {
    WANMPI_GET_COMM(c, comm);
    CHECK_PTR(c, size, "size");
    *size = c->size;
    return MPI_SUCCESS;
}

// ---- dup ----------------------------------------------------------------------------------------
static Comm* dup_object(const Comm* c) {
    Comm* nc = c->inter ? intercomm_child(c, c->world, c->rank, c->remote_world)
                        : comm_child(c, c->world, c->rank);
    nc->topo = c->topo;
    return nc;
}

static Task dup_task(Parent p, Comm* nc) {
    uint32_t base = 0;
    int rc = co_await agree_ctx(p.m, p.plink(), p.key, false, p.inter ? 2 : 1, &base);
    if (rc != MPI_SUCCESS) co_return rc;
    nc->ctx = base;
    if (nc->local) nc->local->ctx = base + 4;
    co_return MPI_SUCCESS;
}

static int dup_common(MPI_Comm comm, bool with_info, MPI_Info info, MPI_Comm* newcomm,
                      MPI_Request* request) {
    WANMPI_GET_COMM(c, comm);
    CHECK_PTR(c, newcomm, "newcomm");
    Comm* nc = dup_object(c);
    nc->info = info_dup_or_null(with_info ? info : c->info);
    if (request) {
        // Nonblocking: the new handle exists at once (MPI forbids using it before completion);
        // attributes are copied now, as MPI_Comm_dup would.
        comm_register(nc);
        if (int rc = attr_comm_copy(c, nc); rc != MPI_SUCCESS) {
            comm_unregister(nc);
            comm_discard(nc);
            return raise(c, rc);
        }
        Request* r = nullptr;
        int rc = job_request(dup_task(parent_of(c), nc), c, &r);
        if (rc != MPI_SUCCESS) {
            attr_comm_delete_all(nc);
            comm_unregister(nc);
            comm_discard(nc);
            return raise(c, rc);
        }
        *newcomm = nc->handle;
        *request = request_handle(r);
        return MPI_SUCCESS;
    }
    int rc = job_run_blocking(dup_task(parent_of(c), nc));
    if (rc != MPI_SUCCESS) return comm_finish(c, rc, nc, newcomm);
    comm_register(nc);
    if (rc = attr_comm_copy(c, nc); rc != MPI_SUCCESS) {
        attr_comm_delete_all(nc);
        comm_unregister(nc);
        comm_discard(nc);
        return raise(c, rc);
    }
    *newcomm = nc->handle;
    return MPI_SUCCESS;
}

int Comm_dup(MPI_Comm comm, MPI_Comm* newcomm) {
    return dup_common(comm, false, MPI_INFO_NULL, newcomm, nullptr);
}
int Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm* newcomm) {
    return dup_common(comm, true, info, newcomm, nullptr);
}
int Comm_idup(MPI_Comm comm, MPI_Comm* newcomm, MPI_Request* request) {
    if (!request) return raise(comm_lookup(comm), make_error(MPI_ERR_ARG, "null request pointer"));
    return dup_common(comm, false, MPI_INFO_NULL, newcomm, request);
}
int Comm_idup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm* newcomm, MPI_Request* request) {
    if (!request) return raise(comm_lookup(comm), make_error(MPI_ERR_ARG, "null request pointer"));
    return dup_common(comm, true, info, newcomm, request);
}

// ---- split --------------------------------------------------------------------------------------
int Comm_split(MPI_Comm comm, int color, int key, MPI_Comm* newcomm) {
    WANMPI_GET_COMM(c, comm);
    CHECK_PTR(c, newcomm, "newcomm");
    if (color < 0 && color != MPI_UNDEFINED)
        return raise(c, make_error(MPI_ERR_ARG, "invalid color %d (must be >= 0 or "
                                                "MPI_UNDEFINED)", color));
    Comm* nc = nullptr;
    int rc = job_run_blocking(c->inter ? inter_split_task(parent_of(c), color, key, &nc)
                                       : split_task(parent_of(c), color, key, &nc));
    return comm_finish(c, rc, nc, newcomm);
}

// The value of info key `key` ("" when absent or without an info module).
static std::string info_value(MPI_Info info, const char* key) {
    if (info == MPI_INFO_NULL || !wanmpi_weak_info_get) return {};
    char buf[MPI_MAX_INFO_VAL + 1] = {};
    int flag = 0;
    if (wanmpi_weak_info_get(info, key, MPI_MAX_INFO_VAL, buf, &flag) != MPI_SUCCESS || !flag)
        return {};
    return buf;
}

int Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm* newcomm) {
    WANMPI_GET_COMM(c, comm);
    CHECK_PTR(c, newcomm, "newcomm");
    if (c->inter)
        return raise(c, make_error(MPI_ERR_COMM, "MPI_Comm_split_type needs an "
                                                 "intracommunicator"));
    int color;
    const int host = host_of(world_rank());
    bool one_host = true;
    for (int w : c->world)
        if (host_of(w) != host) one_host = false;
    switch (split_type) {
    case MPI_UNDEFINED:
        color = MPI_UNDEFINED;
        break;
    case MPI_COMM_TYPE_SHARED:
        color = host;
        break;
    case MPI_COMM_TYPE_HW_UNGUIDED:
        // A strictly smaller communicator: the host's processes, if the parent spans hosts.
        color = one_host ? MPI_UNDEFINED : host;
        break;
    case MPI_COMM_TYPE_HW_GUIDED: {
        std::string v = info_value(info, "mpi_hw_resource_type");
        color = (v == "mpi_shared_memory") ? host : MPI_UNDEFINED;
        break;
    }
    default:
        return raise(c, make_error(MPI_ERR_ARG, "unknown split_type %d", split_type));
    }
    Comm* nc = nullptr;
    int rc = job_run_blocking(split_task(parent_of(c), color, key, &nc));
    if (rc == MPI_SUCCESS && nc) nc->info = info_dup_or_null(info);
    return comm_finish(c, rc, nc, newcomm);
}

// ---- create ------------------------------------------------------------------------------------
// Checks that every member of `g` is in `world`.
static bool subset_of(const Group* g, const std::vector<int>& world) {
    std::vector<char> in(size_t(world_size()), 0);
    for (int w : world) in[size_t(w)] = 1;
    for (int w : g->world)
        if (!in[size_t(w)]) return false;
    return true;
}

int Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm* newcomm) {
    WANMPI_GET_COMM(c, comm);
    CHECK_PTR(c, newcomm, "newcomm");
    const Group* g = group_lookup(group);
    if (!g)
        return raise(c, make_error(MPI_ERR_GROUP, "invalid group 0x%x", unsigned(group)));
    if (!subset_of(g, c->world))
        return raise(c, make_error(MPI_ERR_GROUP, "MPI_Comm_create: the group is not a subgroup "
                                                  "of the communicator's (local) group"));
    Comm* nc = nullptr;
    int rc;
    if (c->inter) {
        rc = job_run_blocking(inter_create_task(parent_of(c), g->world, &nc));
    } else {
        const bool member = g->rank_of(world_rank()) >= 0;
        rc = job_run_blocking(create_task(parent_of(c), member, g->world, &nc));
    }
    return comm_finish(c, rc, nc, newcomm);
}

static Task create_group_task(Members m, AgreeKey key, MPI_Errhandler eh, std::vector<int> world,
                              Comm** out) {
    uint32_t base = 0;
    int rc = co_await agree_ctx(m, nullptr, key, false, 1, &base);
    if (rc != MPI_SUCCESS) co_return rc;
    *out = comm_new(std::move(world), m.me);
    (*out)->errhandler = eh;
    (*out)->ctx = base;
    co_return MPI_SUCCESS;
}

int Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm* newcomm) {
    WANMPI_GET_COMM(c, comm);
    CHECK_PTR(c, newcomm, "newcomm");
    if (c->inter)
        return raise(c, make_error(MPI_ERR_COMM, "MPI_Comm_create_group needs an "
                                                 "intracommunicator"));
    const Group* g = group_lookup(group);
    if (!g)
        return raise(c, make_error(MPI_ERR_GROUP, "invalid group 0x%x", unsigned(group)));
    if (tag < 0) return raise(c, make_error(MPI_ERR_TAG, "invalid tag %d", tag));
    Group parent_group;
    parent_group.world = c->world;
    Members m;
    m.via = c;
    m.tag = mgmt_tag(TagKind::group, uint32_t(tag));
    for (int w : g->world) {
        int r = parent_group.rank_of(w);
        if (r < 0)
            return raise(c, make_error(MPI_ERR_GROUP, "MPI_Comm_create_group: world rank %d of "
                                                      "the group is not in the communicator", w));
        m.ranks.push_back(r);
    }
    m.n = int(m.ranks.size());
    m.me = g->rank_of(world_rank());
    if (m.me < 0) {  // not a member: nothing to agree on
        *newcomm = MPI_COMM_NULL;
        return MPI_SUCCESS;
    }
    AgreeKey key{c->ctx, uint32_t(TagKind::group), uint32_t(tag)};
    Comm* nc = nullptr;
    int rc = job_run_blocking(create_group_task(std::move(m), key, c->errhandler, g->world, &nc));
    return comm_finish(c, rc, nc, newcomm);
}

// MPI_Comm_create_from_group (MPI-4): no parent communicator, so the members agree in
// MPI_COMM_WORLD's collective context (every process is in it), keyed by the string tag.
int check_errhandler_arg(MPI_Errhandler eh, MPI_Errhandler* out) {
    if (eh == MPI_ERRHANDLER_NULL) {
        *out = MPI_ERRORS_ARE_FATAL;
        return MPI_SUCCESS;
    }
    if (!errhandler_valid(eh))
        return make_error(MPI_ERR_ARG, "invalid error handler 0x%x", unsigned(eh));
    *out = eh;
    return MPI_SUCCESS;
}

int Comm_create_from_group(MPI_Group group, const char* stringtag, MPI_Info info,
                           MPI_Errhandler errhandler, MPI_Comm* newcomm) {
    const Group* g = group_lookup(group);
    if (!g)
        return raise(nullptr, make_error(MPI_ERR_GROUP, "invalid group 0x%x", unsigned(group)));
    CHECK_PTR(nullptr, stringtag, "stringtag");
    CHECK_PTR(nullptr, newcomm, "newcomm");
    MPI_Errhandler eh = MPI_ERRORS_ARE_FATAL;
    if (int rc = check_errhandler_arg(errhandler, &eh)) return raise(nullptr, rc);
    // A process outside every group it builds from (e.g. one excluded from a session's
    // mpi://WORLD group) passes MPI_GROUP_EMPTY and gets MPI_COMM_NULL, as in MPICH.
    if (g->world.empty()) {
        *newcomm = MPI_COMM_NULL;
        return MPI_SUCCESS;
    }
    Members m;
    m.via = comm_lookup(MPI_COMM_WORLD);
    m.ranks = g->world;  // world ranks are MPI_COMM_WORLD ranks
    m.n = int(m.ranks.size());
    m.me = g->rank_of(world_rank());
    if (m.me < 0)
        return raise(nullptr, make_error(MPI_ERR_GROUP, "MPI_Comm_create_from_group: the calling "
                                                        "process is not in the group"));
    const uint32_t h = stringtag_hash(stringtag);
    m.tag = mgmt_tag(TagKind::pset, h);
    AgreeKey key{0, uint32_t(TagKind::pset), h};
    Comm* nc = nullptr;
    int rc = job_run_blocking(create_group_task(std::move(m), key, eh, g->world, &nc));
    if (rc == MPI_SUCCESS && nc) nc->info = info_dup_or_null(info);
    return comm_finish(nullptr, rc, nc, newcomm);
}

// ---- free, compare, queries ---------------------------------------------------------------------
int Comm_free(MPI_Comm* comm) {
    if (!comm) return raise(nullptr, make_error(MPI_ERR_ARG, "null communicator pointer"));
    WANMPI_GET_COMM(c, *comm);
    if (*comm == MPI_COMM_WORLD || *comm == MPI_COMM_SELF)
        return raise(c, make_error(MPI_ERR_COMM, "%s cannot be freed", c->name.c_str()));
    if (int rc = attr_comm_delete_all(c); rc != MPI_SUCCESS) return raise(c, rc);
    comm_unregister(c);
    *comm = MPI_COMM_NULL;
    comm_release(c);
    return MPI_SUCCESS;
}

static bool only_user_ref(void* p) { return static_cast<Comm*>(p)->refs <= 1; }

// MPI_Comm_disconnect: MPI_Comm_free once every pending operation on the communicator is done.
int Comm_disconnect(MPI_Comm* comm) {
    if (!comm) return raise(nullptr, make_error(MPI_ERR_ARG, "null communicator pointer"));
    WANMPI_GET_COMM(c, *comm);
    if (*comm == MPI_COMM_WORLD || *comm == MPI_COMM_SELF)
        return raise(c, make_error(MPI_ERR_COMM, "%s cannot be disconnected", c->name.c_str()));
    wait_until(only_user_ref, c);
    return Comm_free(comm);
}

// MPI_IDENT..MPI_UNEQUAL for two rank lists (IDENT = same order).
static int compare_lists(const std::vector<int>& a, const std::vector<int>& b) {
    if (a == b) return MPI_IDENT;
    if (a.size() != b.size()) return MPI_UNEQUAL;
    std::vector<int> x = a, y = b;
    std::sort(x.begin(), x.end());
    std::sort(y.begin(), y.end());
    return x == y ? MPI_SIMILAR : MPI_UNEQUAL;
}

int Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int* result) {
    WANMPI_GET_COMM(c1, comm1);
    WANMPI_GET_COMM(c2, comm2);
    CHECK_PTR(c1, result, "result");
    if (c1 == c2) {
        *result = MPI_IDENT;
        return MPI_SUCCESS;
    }
    if (c1->inter != c2->inter) {
        *result = MPI_UNEQUAL;
        return MPI_SUCCESS;
    }
    int r = compare_lists(c1->world, c2->world);
    if (c1->inter) r = std::max(r, compare_lists(c1->remote_world, c2->remote_world));
    *result = r == MPI_IDENT ? MPI_CONGRUENT : r;
    return MPI_SUCCESS;
}

int Comm_test_inter(MPI_Comm comm, int* flag) {
    WANMPI_GET_COMM(c, comm);
    CHECK_PTR(c, flag, "flag");
    *flag = c->inter;
    return MPI_SUCCESS;
}

int Comm_remote_size(MPI_Comm comm, int* size) {
    WANMPI_GET_COMM(c, comm);
    CHECK_PTR(c, size, "size");
    if (!c->inter)
        return raise(c, make_error(MPI_ERR_COMM, "MPI_Comm_remote_size needs an "
                                                 "intercommunicator"));
    *size = int(c->remote_world.size());
    return MPI_SUCCESS;
}

int Comm_group(MPI_Comm comm, MPI_Group* group) {
    WANMPI_GET_COMM(c, comm);
    CHECK_PTR(c, group, "group");
    *group = group_make(c->world);
    return MPI_SUCCESS;
}

int Comm_remote_group(MPI_Comm comm, MPI_Group* group) {
    WANMPI_GET_COMM(c, comm);
    CHECK_PTR(c, group, "group");
    if (!c->inter)
        return raise(c, make_error(MPI_ERR_COMM, "MPI_Comm_remote_group needs an "
                                                 "intercommunicator"));
    *group = group_make(c->remote_world);
    return MPI_SUCCESS;
}

int Comm_set_name(MPI_Comm comm, const char* comm_name) {
    WANMPI_GET_COMM(c, comm);
    CHECK_PTR(c, comm_name, "comm_name");
    c->name.assign(comm_name, strnlen(comm_name, MPI_MAX_OBJECT_NAME - 1));
    return MPI_SUCCESS;
}

int Comm_get_name(MPI_Comm comm, char* comm_name, int* resultlen) {
    WANMPI_GET_COMM(c, comm);
    CHECK_PTR(c, comm_name, "comm_name");
    CHECK_PTR(c, resultlen, "resultlen");
    size_t n = std::min<size_t>(c->name.size(), MPI_MAX_OBJECT_NAME - 1);
    std::memcpy(comm_name, c->name.data(), n);
    comm_name[n] = '\0';
    *resultlen = int(n);
    return MPI_SUCCESS;
}

int Comm_set_info(MPI_Comm comm, MPI_Info info) {
    WANMPI_GET_COMM(c, comm);
    MPI_Info copy = info_dup_or_null(info);
    info_free_quiet(&c->info);
    c->info = copy;
    return MPI_SUCCESS;
}

extern "C" int wanmpi_weak_info_create(MPI_Info*) __asm__("PMPI_Info_create")
    __attribute__((weak));

int Comm_get_info(MPI_Comm comm, MPI_Info* info_used) {
    WANMPI_GET_COMM(c, comm);
    CHECK_PTR(c, info_used, "info_used");
    // A new object the user frees: a copy of the hints we keep (none are interpreted yet).
    if (c->info != MPI_INFO_NULL) {
        *info_used = info_dup_or_null(c->info);
    } else if (wanmpi_weak_info_create) {
        if (int rc = wanmpi_weak_info_create(info_used); rc != MPI_SUCCESS) return rc;
    } else {
        *info_used = MPI_INFO_NULL;
    }
    return MPI_SUCCESS;
}

int Comm_get_parent(MPI_Comm* parent) {
    CHECK_PTR(nullptr, parent, "parent");
    *parent = MPI_COMM_NULL;  // no dynamic processes: never spawned
    return MPI_SUCCESS;
}

}  // namespace wanmpi::impl
