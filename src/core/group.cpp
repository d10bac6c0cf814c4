// Process groups (group.hpp) and the MPI_Group_* calls. Set operations keep MPI's order: union
// is group1 then the members of group2 not in group1; intersection and difference follow group1.
#include "core/group.hpp"

#include <algorithm>

#include "bindings/impl.hpp"
#include "core/engine.hpp"
#include "core/errors.hpp"

namespace wanmpi::core {

namespace {
constexpr uint32_t kGroupTag = 0x48000000u;

std::vector<Group*>& table() {
    static std::vector<Group*> v{new Group()};  // slot 0: MPI_GROUP_EMPTY
    return v;
}
std::vector<uint32_t>& free_slots() {
    static std::vector<uint32_t> v;
    return v;
}
}  // namespace

int Group::rank_of(int w) const {
    if (world.size() <= 16) {
        for (size_t i = 0; i < world.size(); ++i)
            if (world[i] == w) return int(i);
        return -1;
    }
    if (index.empty()) {
        int hi = 0;
        for (int x : world) hi = std::max(hi, x);
        index.assign(size_t(hi) + 1, -1);
        for (size_t i = 0; i < world.size(); ++i) index[size_t(world[i])] = int(i);
    }
    return (w >= 0 && size_t(w) < index.size()) ? index[size_t(w)] : -1;
}

const Group* group_lookup(MPI_Group h) {
    uint32_t u = uint32_t(h);
    if ((u & 0xff000000u) != kGroupTag) return nullptr;
    uint32_t idx = u & 0xffffff;
    auto& v = table();
    return idx < v.size() ? v[idx] : nullptr;
}

MPI_Group group_make(std::vector<int> world) {
    if (world.empty()) return MPI_GROUP_EMPTY;
    auto* g = new Group();
    g->world = std::move(world);
    auto& v = table();
    uint32_t idx;
    if (!free_slots().empty()) {
        idx = free_slots().back();
        free_slots().pop_back();
        v[idx] = g;
    } else {
        idx = uint32_t(v.size());
        v.push_back(g);
    }
    return MPI_Group(kGroupTag | idx);
}

static void group_destroy(MPI_Group h) {
    uint32_t idx = uint32_t(h) & 0xffffff;
    if (idx == 0) return;  // MPI_GROUP_EMPTY is predefined
    auto& v = table();
    delete v[idx];
    v[idx] = nullptr;
    free_slots().push_back(idx);
}

}  // namespace wanmpi::core

namespace wanmpi::impl {
using namespace wanmpi::core;

static int bad_group(MPI_Group h) {
    return raise(nullptr, make_error(MPI_ERR_GROUP, h == MPI_GROUP_NULL
                                                        ? "MPI_GROUP_NULL is not a valid group here"
                                                        : "invalid group handle 0x%x",
                                     unsigned(h)));
}

#define GET_GROUP(g, h)                    \
    const Group* g = group_lookup(h);      \
    if (!g) return bad_group(h)

#define CHECK_PTR(p, what)                                                                    \
    if (!(p)) return raise(nullptr, make_error(MPI_ERR_ARG, "null pointer passed as " what))

int Group_size(MPI_Group group, int* size) {
    GET_GROUP(g, group);
    CHECK_PTR(size, "size");
    *size = int(g->world.size());
    return MPI_SUCCESS;
}

int Group_rank(MPI_Group group, int* rank) {
    GET_GROUP(g, group);
    CHECK_PTR(rank, "rank");
    int r = g->rank_of(world_rank());
    *rank = r < 0 ? MPI_UNDEFINED : r;
    return MPI_SUCCESS;
}

int Group_translate_ranks(MPI_Group group1, int n, const int ranks1[], MPI_Group group2,
                          int ranks2[]) {
    GET_GROUP(g1, group1);
    GET_GROUP(g2, group2);
    if (n < 0) return raise(nullptr, make_error(MPI_ERR_ARG, "negative count %d", n));
    if (n > 0 && (!ranks1 || !ranks2))
        return raise(nullptr, make_error(MPI_ERR_ARG, "null rank array"));
    const int n1 = int(g1->world.size());
    for (int i = 0; i < n; ++i) {
        int r = ranks1[i];
        if (r == MPI_PROC_NULL) continue;
        if (r < 0 || r >= n1)
            return raise(nullptr, make_error(MPI_ERR_RANK, "ranks1[%d] = %d is not a rank of "
                                                           "group1 (size %d)", i, r, n1));
    }
    for (int i = 0; i < n; ++i) {
        int r = ranks1[i];
        if (r == MPI_PROC_NULL) {
            ranks2[i] = MPI_PROC_NULL;
            continue;
        }
        int t = g2->rank_of(g1->world[size_t(r)]);
        ranks2[i] = t < 0 ? MPI_UNDEFINED : t;
    }
    return MPI_SUCCESS;
}

int Group_compare(MPI_Group group1, MPI_Group group2, int* result) {
    GET_GROUP(g1, group1);
    GET_GROUP(g2, group2);
    CHECK_PTR(result, "result");
    if (g1->world == g2->world) {
        *result = MPI_IDENT;
        return MPI_SUCCESS;
    }
    if (g1->world.size() != g2->world.size()) {
        *result = MPI_UNEQUAL;
        return MPI_SUCCESS;
    }
    std::vector<int> a = g1->world, b = g2->world;
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    *result = a == b ? MPI_SIMILAR : MPI_UNEQUAL;
    return MPI_SUCCESS;
}

int Group_union(MPI_Group group1, MPI_Group group2, MPI_Group* newgroup) {
    GET_GROUP(g1, group1);
    GET_GROUP(g2, group2);
    CHECK_PTR(newgroup, "newgroup");
    std::vector<int> w = g1->world;
    for (int x : g2->world)
        if (g1->rank_of(x) < 0) w.push_back(x);
    *newgroup = group_make(std::move(w));
    return MPI_SUCCESS;
}

int Group_intersection(MPI_Group group1, MPI_Group group2, MPI_Group* newgroup) {
    GET_GROUP(g1, group1);
    GET_GROUP(g2, group2);
    CHECK_PTR(newgroup, "newgroup");
    std::vector<int> w;
    for (int x : g1->world)
        if (g2->rank_of(x) >= 0) w.push_back(x);
    *newgroup = group_make(std::move(w));
    return MPI_SUCCESS;
}

int Group_difference(MPI_Group group1, MPI_Group group2, MPI_Group* newgroup) {
    GET_GROUP(g1, group1);
    GET_GROUP(g2, group2);
    CHECK_PTR(newgroup, "newgroup");
    std::vector<int> w;
    for (int x : g1->world)
        if (g2->rank_of(x) < 0) w.push_back(x);
    *newgroup = group_make(std::move(w));
    return MPI_SUCCESS;
}

// Ranks given to incl/excl: valid and distinct.
static int check_ranks(const Group* g, int n, const int ranks[], const char* fname) {
    const int size = int(g->world.size());
    if (n < 0) return make_error(MPI_ERR_ARG, "%s: negative count %d", fname, n);
    if (n > size)
        return make_error(MPI_ERR_ARG, "%s: %d ranks given for a group of size %d", fname, n, size);
    if (n > 0 && !ranks) return make_error(MPI_ERR_ARG, "%s: null ranks array", fname);
    std::vector<char> seen(size_t(size), 0);
    for (int i = 0; i < n; ++i) {
        int r = ranks[i];
        if (r < 0 || r >= size)
            return make_error(MPI_ERR_RANK, "%s: ranks[%d] = %d is not a rank of the group "
                                            "(size %d)", fname, i, r, size);
        if (seen[size_t(r)])
            return make_error(MPI_ERR_RANK, "%s: rank %d is given twice", fname, r);
        seen[size_t(r)] = 1;
    }
    return MPI_SUCCESS;
}

int Group_incl(MPI_Group group, int n, const int ranks[], MPI_Group* newgroup) {
    GET_GROUP(g, group);
    CHECK_PTR(newgroup, "newgroup");
    if (int rc = check_ranks(g, n, ranks, "MPI_Group_incl")) return raise(nullptr, rc);
    std::vector<int> w(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) w[size_t(i)] = g->world[size_t(ranks[i])];
    *newgroup = group_make(std::move(w));
    return MPI_SUCCESS;
}

int Group_excl(MPI_Group group, int n, const int ranks[], MPI_Group* newgroup) {
    GET_GROUP(g, group);
    CHECK_PTR(newgroup, "newgroup");
    if (int rc = check_ranks(g, n, ranks, "MPI_Group_excl")) return raise(nullptr, rc);
    std::vector<char> drop(g->world.size(), 0);
    for (int i = 0; i < n; ++i) drop[size_t(ranks[i])] = 1;
    std::vector<int> w;
    for (size_t i = 0; i < g->world.size(); ++i)
        if (!drop[i]) w.push_back(g->world[i]);
    *newgroup = group_make(std::move(w));
    return MPI_SUCCESS;
}

// Expands (first, last, stride) triplets into ranks; every rank valid and distinct.
static int expand_ranges(const Group* g, int n, const int ranges[][3], const char* fname,
                         std::vector<int>& out) {
    const int size = int(g->world.size());
    if (n < 0) return make_error(MPI_ERR_ARG, "%s: negative count %d", fname, n);
    if (n > 0 && !ranges) return make_error(MPI_ERR_ARG, "%s: null ranges array", fname);
    std::vector<char> seen(size_t(size), 0);
    for (int i = 0; i < n; ++i) {
        const int first = ranges[i][0], last = ranges[i][1], stride = ranges[i][2];
        if (stride == 0)
            return make_error(MPI_ERR_ARG, "%s: ranges[%d] has stride 0", fname, i);
        if (first < 0 || first >= size)
            return make_error(MPI_ERR_RANK, "%s: ranges[%d] starts at %d, not a rank of the group "
                                            "(size %d)", fname, i, first, size);
        if (last < 0 || last >= size)
            return make_error(MPI_ERR_RANK, "%s: ranges[%d] ends at %d, not a rank of the group "
                                            "(size %d)", fname, i, last, size);
        if ((stride > 0 && first > last) || (stride < 0 && first < last))
            return make_error(MPI_ERR_ARG, "%s: ranges[%d] = (%d, %d, %d) runs the wrong way",
                              fname, i, first, last, stride);
        for (int64_t r = first; stride > 0 ? r <= last : r >= last; r += stride) {
            if (seen[size_t(r)])
                return make_error(MPI_ERR_RANK, "%s: rank %lld appears twice in the ranges", fname,
                                  (long long)r);
            seen[size_t(r)] = 1;
            out.push_back(int(r));
        }
    }
    return MPI_SUCCESS;
}

int Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group* newgroup) {
    GET_GROUP(g, group);
    CHECK_PTR(newgroup, "newgroup");
    std::vector<int> ranks;
    if (int rc = expand_ranges(g, n, ranges, "MPI_Group_range_incl", ranks))
        return raise(nullptr, rc);
    std::vector<int> w;
    w.reserve(ranks.size());
    for (int r : ranks) w.push_back(g->world[size_t(r)]);
    *newgroup = group_make(std::move(w));
    return MPI_SUCCESS;
}

int Group_range_excl(MPI_Group group, int n, int ranges[][3], MPI_Group* newgroup) {
    GET_GROUP(g, group);
    CHECK_PTR(newgroup, "newgroup");
    std::vector<int> ranks;
    if (int rc = expand_ranges(g, n, ranges, "MPI_Group_range_excl", ranks))
        return raise(nullptr, rc);
    std::vector<char> drop(g->world.size(), 0);
    for (int r : ranks) drop[size_t(r)] = 1;
    std::vector<int> w;
    for (size_t i = 0; i < g->world.size(); ++i)
        if (!drop[i]) w.push_back(g->world[i]);
    *newgroup = group_make(std::move(w));
    return MPI_SUCCESS;
}

int Group_free(MPI_Group* group) {
    CHECK_PTR(group, "group");
    GET_GROUP(g, *group);
    (void)g;
    group_destroy(*group);
    *group = MPI_GROUP_NULL;
    return MPI_SUCCESS;
}

}  // namespace wanmpi::impl
