// Intercommunicators: MPI_Intercomm_create, MPI_Intercomm_merge, and the intercommunicator forms
// of MPI_Comm_split and MPI_Comm_create.
//
// An intercommunicator has one context id shared by both groups (the engine matches on the
// receiver's ctx and the sender's local rank), agreed over both groups at once: each group
// reduces locally, the two leaders exchange, each leader broadcasts (allreduce_max_inter). Its
// local intracommunicator (Comm::local, used for the local phases) gets the next id of the same
// agreement (base + 4); the two groups' local communicators share that id, which is safe because
// they have no member in common.
#include <algorithm>

#include "bindings/impl.hpp"
#include "core/comm_ops.hpp"
#include "core/engine.hpp"
#include "core/errors.hpp"
#include "core/group.hpp"

namespace wanmpi::core {

// Members of the local group with colour `color`, sorted by (key, rank), as world ranks.
static std::vector<int> pick(const std::vector<int64_t>& table, const std::vector<int>& world,
                             int color) {
    std::vector<std::pair<int64_t, int>> sel;
    for (size_t i = 0; i < world.size(); ++i)
        if (table[2 * i] == color) sel.emplace_back(table[2 * i + 1], int(i));
    std::stable_sort(sel.begin(), sel.end());
    std::vector<int> out;
    for (const auto& kr : sel) out.push_back(world[size_t(kr.second)]);
    return out;
}

Task inter_split_task(Parent p, int color, int key, Comm** out) {
    Comm* c = p.c;
    std::vector<int64_t> mine, theirs, me = {color, key};
    int rc = co_await allgather(p.m, std::move(me), mine);
    if (rc == MPI_SUCCESS && p.m.me == 0) rc = co_await sendrecv(c, 0, p.link.tag, mine, theirs);
    if (rc == MPI_SUCCESS) rc = co_await bcast(p.m, 0, theirs);
    if (rc != MPI_SUCCESS) co_return rc;
    if (theirs.size() != 2 * c->remote_world.size())
        co_return make_error(MPI_ERR_INTERN, "MPI_Comm_split: the remote group sent %zu values",
                             theirs.size());
    std::vector<int> local, remote;
    if (color != MPI_UNDEFINED) {
        local = pick(mine, c->world, color);
        remote = pick(theirs, c->remote_world, color);
    }
    const bool ignore = local.empty() || remote.empty();
    uint32_t base = 0;
    rc = co_await agree_ctx(p.m, &p.link, p.key, ignore, 2, &base);
    if (rc != MPI_SUCCESS || ignore) co_return rc;
    const int r = rank_in(local);
    *out = intercomm_child(c, std::move(local), r, std::move(remote));
    (*out)->ctx = base;
    (*out)->local->ctx = base + 4;
    co_return MPI_SUCCESS;
}

Task inter_create_task(Parent p, std::vector<int> group_world, Comm** out) {
    Comm* c = p.c;
    std::vector<int64_t> mine(group_world.begin(), group_world.end()), theirs;
    int rc = MPI_SUCCESS;
    if (p.m.me == 0) rc = co_await sendrecv(c, 0, p.link.tag, mine, theirs);
    if (rc == MPI_SUCCESS) rc = co_await bcast(p.m, 0, theirs);
    if (rc != MPI_SUCCESS) co_return rc;
    const int r = rank_in(group_world);
    const bool ignore = r < 0 || theirs.empty();
    uint32_t base = 0;
    rc = co_await agree_ctx(p.m, &p.link, p.key, ignore, 2, &base);
    if (rc != MPI_SUCCESS || ignore) co_return rc;
    std::vector<int> remote(theirs.begin(), theirs.end());
    *out = intercomm_child(c, std::move(group_world), r, std::move(remote));
    (*out)->ctx = base;
    (*out)->local->ctx = base + 4;
    co_return MPI_SUCCESS;
}

// MPI_Intercomm_create. The leaders first swap (key, group) over peer_comm and broadcast what they
// got, so that both groups order this agreement by the same key: the smaller of the two local
// keys.
static Task intercomm_create_task(Members m, InterLink link, AgreeKey key, Comm* lc,
                                  Comm** out) {
    std::vector<int64_t> theirs;
    int rc = MPI_SUCCESS;
    if (m.me == link.leader) {
        std::vector<int64_t> mine = {key.ctx, key.kind, key.id};
        mine.insert(mine.end(), lc->world.begin(), lc->world.end());
        rc = co_await sendrecv(link.comm, link.peer, link.tag, mine, theirs);
    }
    if (rc == MPI_SUCCESS) rc = co_await bcast(m, link.leader, theirs);
    if (rc != MPI_SUCCESS) co_return rc;
    if (theirs.size() < 4)
        co_return make_error(MPI_ERR_INTERN, "MPI_Intercomm_create: bad leader exchange");
    AgreeKey rkey{uint32_t(theirs[0]), uint32_t(theirs[1]), uint32_t(theirs[2])};
    std::vector<int> remote(theirs.begin() + 3, theirs.end());
    for (int w : remote)
        if (std::find(lc->world.begin(), lc->world.end(), w) != lc->world.end())
            co_return make_error(MPI_ERR_COMM, "MPI_Intercomm_create: world rank %d is in both "
                                               "groups (the groups must be disjoint)", w);
    uint32_t base = 0;
    rc = co_await agree_ctx(m, &link, std::min(key, rkey), false, 2, &base);
    if (rc != MPI_SUCCESS) co_return rc;
    *out = intercomm_child(lc, lc->world, lc->rank, std::move(remote));
    (*out)->ctx = base;
    (*out)->local->ctx = base + 4;
    co_return MPI_SUCCESS;
}

static Task merge_task(Parent p, bool high, Comm** out) {
    Comm* c = p.c;
    std::vector<int64_t> theirs, mine = {high ? 1 : 0};
    int rc = MPI_SUCCESS;
    if (p.m.me == 0) rc = co_await sendrecv(c, 0, p.link.tag, std::move(mine), theirs);
    if (rc == MPI_SUCCESS) rc = co_await bcast(p.m, 0, theirs);
    if (rc != MPI_SUCCESS) co_return rc;
    if (theirs.size() != 1)
        co_return make_error(MPI_ERR_INTERN, "MPI_Intercomm_merge: bad leader exchange");
    const bool rhigh = theirs[0] != 0;
    // The group that passed high=false comes first; on a tie, the group whose leader has the
    // lower world rank (both groups compute the same answer).
    const bool local_first =
        (!high && rhigh) || (high == rhigh && c->world[0] < c->remote_world[0]);
    std::vector<int> world;
    const auto& a = local_first ? c->world : c->remote_world;
    const auto& b = local_first ? c->remote_world : c->world;
    world.insert(world.end(), a.begin(), a.end());
    world.insert(world.end(), b.begin(), b.end());
    uint32_t base = 0;
    rc = co_await agree_ctx(p.m, &p.link, p.key, false, 1, &base);
    if (rc != MPI_SUCCESS) co_return rc;
    const int r = local_first ? c->rank : int(c->remote_world.size()) + c->rank;
    *out = comm_child(c, std::move(world), r);
    (*out)->ctx = base;
    co_return MPI_SUCCESS;
}

}  // namespace wanmpi::core

namespace wanmpi::impl {
using namespace wanmpi::core;

int Intercomm_create(MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm,
                     int remote_leader, int tag, MPI_Comm* newintercomm) {
    Comm* lc = comm_lookup(local_comm);
    if (!lc)
        return raise(nullptr, make_error(MPI_ERR_COMM, "invalid local_comm 0x%x",
                                         unsigned(local_comm)));
    if (!newintercomm)
        return raise(lc, make_error(MPI_ERR_ARG, "null pointer passed as newintercomm"));
    if (lc->inter)
        return raise(lc, make_error(MPI_ERR_COMM, "MPI_Intercomm_create: local_comm must be an "
                                                  "intracommunicator"));
    if (local_leader < 0 || local_leader >= lc->size)
        return raise(lc, make_error(MPI_ERR_RANK, "invalid local_leader %d: local_comm has %d "
                                                  "ranks", local_leader, lc->size));
    if (tag < 0) return raise(lc, make_error(MPI_ERR_TAG, "invalid tag %d", tag));
    InterLink link;
    link.leader = local_leader;
    link.tag = mgmt_tag(TagKind::leaders, uint32_t(tag));
    if (lc->rank == local_leader) {
        Comm* pc = comm_lookup(peer_comm);
        if (!pc)
            return raise(lc, make_error(MPI_ERR_COMM, "invalid peer_comm 0x%x",
                                        unsigned(peer_comm)));
        if (remote_leader < 0 || remote_leader >= pc->remote_size())
            return raise(lc, make_error(MPI_ERR_RANK, "invalid remote_leader %d: peer_comm has "
                                                      "%d ranks", remote_leader,
                                        pc->remote_size()));
        if (pc->peer_world(remote_leader) == world_rank())
            return raise(lc, make_error(MPI_ERR_RANK, "remote_leader %d is the local leader "
                                                      "itself", remote_leader));
        link.comm = pc;
        link.peer = remote_leader;
    }
    const uint32_t seq = lc->mgmt_seq++;
    Members m = members_all(lc, mgmt_tag(TagKind::seq, seq));
    AgreeKey key{lc->ctx, uint32_t(TagKind::leaders), uint32_t(tag)};
    Comm* nc = nullptr;
    int rc = job_run_blocking(intercomm_create_task(std::move(m), link, key, lc, &nc));
    return comm_finish(lc, rc, nc, newintercomm);
}

int Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm* newintracomm) {
    Comm* c = comm_lookup(intercomm);
    if (!c)
        return raise(nullptr, make_error(MPI_ERR_COMM, "invalid communicator 0x%x",
                                         unsigned(intercomm)));
    if (!newintracomm)
        return raise(c, make_error(MPI_ERR_ARG, "null pointer passed as newintracomm"));
    if (!c->inter)
        return raise(c, make_error(MPI_ERR_COMM, "MPI_Intercomm_merge needs an "
                                                 "intercommunicator"));
    Comm* nc = nullptr;
    int rc = job_run_blocking(merge_task(parent_of(c), high != 0, &nc));
    return comm_finish(c, rc, nc, newintracomm);
}

}  // namespace wanmpi::impl

namespace wanmpi::impl {
using namespace wanmpi::core;

// MPI_Intercomm_create_from_groups (MPI-4): as MPI_Intercomm_create, with both groups' local
// phases and the leaders' exchange in MPI_COMM_WORLD's collective context, keyed by the string
// tag (comm.cpp: MPI_Comm_create_from_group).
int Intercomm_create_from_groups(MPI_Group local_group, int local_leader, MPI_Group remote_group,
                                 int remote_leader, const char* stringtag, MPI_Info info,
                                 MPI_Errhandler errhandler, MPI_Comm* newintercomm) {
    const Group* lg = group_lookup(local_group);
    const Group* rg = group_lookup(remote_group);
    if (!lg || !rg)
        return raise(nullptr, make_error(MPI_ERR_GROUP, "invalid %s group 0x%x",
                                         lg ? "remote" : "local",
                                         unsigned(lg ? remote_group : local_group)));
    if (!stringtag || !newintercomm)
        return raise(nullptr, make_error(MPI_ERR_ARG, "null stringtag or newintercomm"));
    MPI_Errhandler eh = MPI_ERRORS_ARE_FATAL;
    if (int rc = check_errhandler_arg(errhandler, &eh)) return raise(nullptr, rc);
    const int n = int(lg->world.size()), rn = int(rg->world.size());
    if (local_leader < 0 || local_leader >= n)
        return raise(nullptr, make_error(MPI_ERR_RANK, "invalid local_leader %d (group of %d)",
                                         local_leader, n));
    if (remote_leader < 0 || remote_leader >= rn)
        return raise(nullptr, make_error(MPI_ERR_RANK, "invalid remote_leader %d (group of %d)",
                                         remote_leader, rn));
    const int me = lg->rank_of(world_rank());
    if (me < 0)
        return raise(nullptr, make_error(MPI_ERR_GROUP, "MPI_Intercomm_create_from_groups: the "
                                                        "calling process is not in local_group"));
    for (int w : rg->world)
        if (lg->rank_of(w) >= 0)
            return raise(nullptr, make_error(MPI_ERR_GROUP, "MPI_Intercomm_create_from_groups: "
                                                            "world rank %d is in both groups", w));
    Comm* world = comm_lookup(MPI_COMM_WORLD);
    const uint32_t h = stringtag_hash(stringtag);
    Members m;
    m.via = world;
    m.ranks = lg->world;
    m.n = n;
    m.me = me;
    m.tag = mgmt_tag(TagKind::pset, h);
    InterLink link;
    link.comm = world;
    link.peer = rg->world[size_t(remote_leader)];
    link.tag = m.tag;
    link.leader = local_leader;
    // The same key in both groups: it depends on the string tag only.
    AgreeKey key{0, uint32_t(TagKind::pset), h};
    Comm* nc = nullptr;
    auto task = [](Members m, InterLink link, AgreeKey key, MPI_Errhandler eh,
                   std::vector<int> local, std::vector<int> remote, Comm** out) -> Task {
        uint32_t base = 0;
        int rc = co_await agree_ctx(m, &link, key, false, 2, &base);
        if (rc != MPI_SUCCESS) co_return rc;
        Comm* c = comm_new(local, m.me);
        c->errhandler = eh;
        c->inter = true;
        c->remote_world = std::move(remote);
        c->local = comm_new(std::move(local), m.me);
        c->local->hidden = true;
        c->local->errhandler = eh;
        c->ctx = base;
        c->local->ctx = base + 4;
        *out = c;
        co_return MPI_SUCCESS;
    };
    int rc = job_run_blocking(task(std::move(m), link, key, eh, lg->world, rg->world, &nc));
    if (rc == MPI_SUCCESS && nc) nc->info = info_dup_or_null(info);
    return comm_finish(nullptr, rc, nc, newintercomm);
}

}  // namespace wanmpi::impl
