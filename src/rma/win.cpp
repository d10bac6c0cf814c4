// Windows: creation (create / allocate / allocate_shared / create_dynamic), MPI_Win_free, the
// handle table, attributes, info, names, groups, error handlers, shared_query, attach/detach.
//
// A window owns a private communicator (MPI_Comm_split of the user's, which copies no
// attributes, unlike a dup): its p2p context carries the RMA messages and its collectives the
// creation exchange, fences and MPI_Win_free's barrier, so nothing the user sends can match
// them. MPI_Win_allocate and MPI_Win_allocate_shared map one POSIX shared-memory segment per
// host (allocate_shared: all ranks must be on one host): the host's first rank creates it, the
// others open it by name, and the creator unlinks the name once all have mapped it, so nothing
// is left in /dev/shm even if the job dies later. allocate_shared parts are contiguous in rank
// order (alloc_shared_noncontig is accepted and ignored).
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/log.hpp"
#include "base/tunables.hpp"
#include "bindings/impl.hpp"
#include "coll/api_impl.hpp"
#include "core/attr.hpp"
#include "core/errors.hpp"
#include "core/group.hpp"
#include "core/info.hpp"
#include "rma/ops.hpp"
#include "rma/rma.hpp"

namespace wanmpi::rma {

namespace {

constexpr uint32_t kWinBase = 0x20000000u;

base::Tunable<bool> t_direct(
    "RMA", "DIRECT", true,
    "Same-host one-sided operations without messages: window locks as words in a shared segment, "
    "loads, stores and atomic instructions on MPI_Win_allocate(_shared) memory, "
    "process_vm_readv/writev (CMA) for puts and gets on MPI_Win_create / create_dynamic memory. "
    "PSCW epochs on allocate windows as counters in that segment. Off: every operation, lock "
    "and PSCW synchronization to another rank is a message its target applies.",
    base::Level::tuner, nullptr, true);

// Constant-initialised (no guard variable to test in win_lookup, which every RMA call runs).
constinit std::vector<Window*> g_table;
std::vector<Window*>& table() { return g_table; }

MPI_Win win_register(Window* w) {
    auto& t = table();
    for (size_t i = 0; i < t.size(); ++i)
        if (!t[i]) {
            t[i] = w;
            return MPI_Win(kWinBase | uint32_t(i + 1));
        }
    t.push_back(w);
    return MPI_Win(kWinBase | uint32_t(t.size()));
}

// The hints MPI_Win_get_info reports: the standard's keys with wanmpi's values (the user's
// value where one was set; wanmpi honours them all by being correct for the general case).
const core::InfoPairs& default_hints() {
    static const core::InfoPairs d = {
        {"no_locks", "false"},
        {"accumulate_ordering", "rar,raw,war,waw"},
        {"accumulate_ops", "same_op_no_op"},
        {"same_size", "false"},
        {"same_disp_unit", "false"},
        {"alloc_shared_noncontig", "false"},
    };
    return d;
}

void merge_info(Window* w, MPI_Info info) {
    core::InfoPairs p;
    core::info_contents(info, &p);
    for (auto& kv : p) {
        bool found = false;
        for (auto& have : w->info)
            if (have.first == kv.first) {
                have.second = kv.second;
                found = true;
            }
        if (!found) w->info.push_back(kv);
    }
}

// Maps one shared segment per host for the window's ranks on this host: rank 0 of the host
// creates it, the others open it by name, the creator unlinks the name once all have mapped it.
// Layout: the header (lock words, region tables of dynamic windows: rma.hpp) then, for
// allocate / allocate_shared, the parts in window-rank order, contiguous for
// MPI_Win_allocate_shared (the standard's default), 64-byte aligned otherwise. Windows on user
// memory (create, dynamic) get the header alone: same-host ranks lock each other through it.
int shared_segment(Window* w) {
    const bool parts = w->flavor == MPI_WIN_FLAVOR_ALLOCATE || w->flavor == MPI_WIN_FLAVOR_SHARED;
    const bool contiguous = w->flavor == MPI_WIN_FLAVOR_SHARED;
    const int me = core::host_of(w->comm->world[size_t(w->rank)]);
    std::vector<int> local;
    for (int i = 0; i < w->nranks; ++i)
        if (core::host_of(w->comm->world[size_t(i)]) == me) local.push_back(i);
    if (w->flavor == MPI_WIN_FLAVOR_SHARED && int(local.size()) != w->nranks)
        return core::make_error(MPI_ERR_RMA_SHARED,
                                "MPI_Win_allocate_shared: the communicator spans several "
                                "hosts (use MPI_Comm_split_type with MPI_COMM_TYPE_SHARED)");
    MPI_Comm node = MPI_COMM_NULL;
    int rc = impl::Comm_split(w->icomm, me, w->rank, &node);
    if (rc != MPI_SUCCESS) return rc;
    core::comm_lookup(node)->errhandler = MPI_ERRORS_RETURN;
    const int64_t nl = int64_t(local.size());
    w->seg_pscw = seg_locks_end(w->nranks);
    w->seg_regions = w->seg_pscw + (8 * nl * nl + 63) / 64 * 64;
    w->seg_hdr = w->seg_regions + (w->flavor == MPI_WIN_FLAVOR_DYNAMIC ? kRegTabBytes * w->nranks : 0);
    int64_t total = w->seg_hdr;
    std::vector<int64_t> off(local.size());
    for (size_t k = 0; parts && k < local.size(); ++k) {
        if (!contiguous) total = (total + 63) / 64 * 64;
        off[k] = total;
        total += w->sizes[size_t(local[k])];
    }
    static unsigned counter = 0;
    char name[64] = {};
    int fd = -1;
    w->seg_len = size_t(total);
    const bool root = local[0] == w->rank;
    if (root) {
        std::snprintf(name, sizeof name, "/wanmpi-win-%d-%u", int(getpid()), counter++);
        fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd < 0 || ftruncate(fd, off_t(w->seg_len)) != 0) {
            WANMPI_LOG(error, "rma: shm_open/ftruncate %s (%zu bytes): %s", name, w->seg_len,
                       base::errno_text(errno).c_str());
            if (fd >= 0) {
                close(fd);
                shm_unlink(name);
            }
            fd = -1;
            name[0] = 0;
        }
    }
    rc = coll::bcast(name, sizeof name, MPI_CHAR, 0, node, nullptr, coll::Call::blocking);
    void* p = MAP_FAILED;
    if (rc == MPI_SUCCESS && name[0]) {
        if (!root) fd = shm_open(name, O_RDWR, 0600);
        if (fd >= 0) {
            p = mmap(nullptr, w->seg_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            close(fd);
        }
    }
    int ok = p != MAP_FAILED, all_ok = 0;
    if (rc == MPI_SUCCESS)
        rc = coll::reduction(coll::Kind::allreduce, &ok, &all_ok, 1, nullptr, MPI_INT, MPI_MIN, 0,
                             node, nullptr, coll::Call::blocking);
    if (root && name[0]) shm_unlink(name);
    impl::Comm_free(&node);
    if (rc != MPI_SUCCESS || !all_ok) {
        if (p != MAP_FAILED) munmap(p, w->seg_len);
        return rc != MPI_SUCCESS ? rc
                                 : core::make_error(MPI_ERR_NO_MEM, "cannot map a shared window "
                                                                    "segment of %zu bytes",
                                                    w->seg_len);
    }
    w->seg = static_cast<char*>(p);
    w->local.assign(size_t(w->nranks), 0);
    w->lidx.assign(size_t(w->nranks), -1);
    w->nlocal = int(local.size());
    for (size_t k = 0; k < local.size(); ++k) {
        w->local[size_t(local[k])] = 1;
        w->lidx[size_t(local[k])] = int(k);
    }
    w->posts_used.assign(size_t(w->nranks), 0);
    w->done_used.assign(size_t(w->nranks), 0);
    if (!parts) return MPI_SUCCESS;
    w->shm_base.assign(size_t(w->nranks), nullptr);
    for (size_t k = 0; k < local.size(); ++k) w->shm_base[size_t(local[k])] = w->seg + off[k];
    w->base = w->shm_base[size_t(w->rank)];
    return MPI_SUCCESS;
}

void destroy(Window* w) {
    if (w->seg) munmap(w->seg, w->seg_len);
    if (w->icomm != MPI_COMM_NULL) impl::Comm_free(&w->icomm);
    delete w;
}

// Everything the window-creating calls share. `base` for create, `baseptr` (void**) for the
// allocating flavors.
int create(MPI_Comm comm, int64_t size, int64_t unit, MPI_Info info, int flavor, void* base,
           void* baseptr, MPI_Win* win) {
    WANMPI_GET_COMM(c, comm);
    if (!win) return core::raise(c, core::make_error(MPI_ERR_ARG, "win is NULL"));
    *win = MPI_WIN_NULL;
    if (flavor != MPI_WIN_FLAVOR_CREATE && flavor != MPI_WIN_FLAVOR_DYNAMIC && !baseptr)
        return core::raise(c, core::make_error(MPI_ERR_ARG, "baseptr is NULL"));
    if (c->inter)
        return core::raise(c, core::make_error(MPI_ERR_COMM, "windows need an "
                                                             "intracommunicator"));
    if (size < 0)
        return core::raise(c, core::make_error(MPI_ERR_SIZE, "negative window size %lld",
                                                (long long)size));
    if (unit <= 0)
        return core::raise(c, core::make_error(MPI_ERR_DISP, "displacement unit %lld is not "
                                                             "positive", (long long)unit));
    if (int rc = core::info_arg_check(info)) return core::raise(c, rc);
    auto* w = new Window;
    w->flavor = flavor;
    w->rank = c->rank;
    w->nranks = c->size;
    int rc = impl::Comm_split(comm, 0, c->rank, &w->icomm);
    if (rc != MPI_SUCCESS) {
        delete w;
        return rc;  // raised by MPI_Comm_split on `comm`
    }
    w->comm = core::comm_lookup(w->icomm);
    w->comm->errhandler = MPI_ERRORS_RETURN;
    w->comm->name = "window";
    // size, displacement unit, and for same-host CMA access the base address and the pid
    int64_t mine[4] = {flavor == MPI_WIN_FLAVOR_DYNAMIC ? 0 : size, unit,
                       int64_t(reinterpret_cast<uintptr_t>(base)), int64_t(getpid())};
    std::vector<int64_t> all(size_t(4 * w->nranks));
    rc = coll::allgather(coll::Kind::allgather, mine, 4, MPI_INT64_T, all.data(), 4, nullptr,
                         nullptr, MPI_INT64_T, w->icomm, nullptr, coll::Call::blocking);
    if (rc != MPI_SUCCESS) {
        destroy(w);
        return core::raise(c, rc);
    }
    w->sizes.resize(size_t(w->nranks));
    w->units.resize(size_t(w->nranks));
    w->bases.resize(size_t(w->nranks));
    w->pids.resize(size_t(w->nranks));
    for (int i = 0; i < w->nranks; ++i) {
        w->sizes[size_t(i)] = all[size_t(4 * i)];
        w->units[size_t(i)] = all[size_t(4 * i + 1)];
        w->bases[size_t(i)] = uint64_t(all[size_t(4 * i + 2)]);
        w->pids[size_t(i)] = all[size_t(4 * i + 3)];
    }
    w->size = mine[0];
    w->disp_unit = unit;
    // allocate: in a segment shared with the window's other ranks on this host, 64-byte aligned,
    // so that they put and get with plain loads and stores (origin.cpp); create: the user's
    // memory; dynamic: MPI_BOTTOM (displacements are addresses).
    w->base = flavor == MPI_WIN_FLAVOR_CREATE ? static_cast<char*>(base) : nullptr;
    if ((rc = shared_segment(w)) != MPI_SUCCESS) {
        destroy(w);
        return core::raise(c, rc);
    }
    w->direct = t_direct.get();
    w->all_here = true;
    for (int i = 0; i < w->nranks; ++i) w->all_here = w->all_here && on_host(w, i);
    w->cma.assign(size_t(w->nranks), 0);
    if (flavor == MPI_WIN_FLAVOR_CREATE || flavor == MPI_WIN_FLAVOR_DYNAMIC)
        for (int i = 0; i < w->nranks; ++i) w->cma[size_t(i)] = w->local[size_t(i)] && i != w->rank;
    if (baseptr) *static_cast<void**>(baseptr) = w->base;
    w->attr_base = w->base;
    w->attr_size = MPI_Aint(w->size);
    w->attr_unit = int(unit);
    w->locked.assign(size_t(w->nranks), 0);
    w->nocheck.assign(size_t(w->nranks), 0);
    w->dirty.assign(size_t(w->nranks), 0);
    w->info = default_hints();
    merge_info(w, info);
    w->handle = win_register(w);
    target_start(w);
    *win = w->handle;
    return MPI_SUCCESS;
}

}  // namespace

// The seqlock of rma.hpp's region tables: the owner makes `seq` odd, rewrites, makes it even;
// a reader copies between two equal even reads of `seq`. Words are accessed as atomics (the
// owner may rewrite while another rank reads; that reader then retries).
namespace {
std::atomic_ref<uint64_t> tab_word(const Window* w, int r, int i) {
    char* t = w->seg + w->seg_regions + kRegTabBytes * r;
    return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(t + 8 * i));
}
}  // namespace

uint32_t* pscw_word(const Window* w, bool done, int t, int o) {
    const int64_t nl = w->nlocal;
    const int64_t i = (done ? nl * nl : 0) + w->lidx[size_t(t)] * nl + w->lidx[size_t(o)];
    return reinterpret_cast<uint32_t*>(w->seg + w->seg_pscw) + i;
}

void regions_publish(Window* w) {
    if (!w->seg || w->flavor != MPI_WIN_FLAVOR_DYNAMIC) return;
    const int me = w->rank;
    uint64_t seq = tab_word(w, me, 0).load(std::memory_order_relaxed);
    tab_word(w, me, 0).store(seq + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    const size_t n = w->regions.size();
    tab_word(w, me, 1).store(n > size_t(kSegRegions) ? ~uint64_t(0) : n,
                             std::memory_order_relaxed);
    for (size_t i = 0; i < n && i < size_t(kSegRegions); ++i) {
        tab_word(w, me, 2 + 2 * int(i)).store(w->regions[i].base, std::memory_order_relaxed);
        tab_word(w, me, 3 + 2 * int(i)).store(uint64_t(w->regions[i].size),
                                              std::memory_order_relaxed);
    }
    tab_word(w, me, 0).store(seq + 2, std::memory_order_release);
}

bool regions_read(const Window* w, int r, std::vector<Region>* out) {
    if (!w->seg || w->flavor != MPI_WIN_FLAVOR_DYNAMIC) return false;
    for (;;) {
        uint64_t s1 = tab_word(w, r, 0).load(std::memory_order_acquire);
        if (s1 & 1) {
            sched_yield();
            continue;
        }
        uint64_t n = tab_word(w, r, 1).load(std::memory_order_relaxed);
        if (n > uint64_t(kSegRegions)) return false;
        out->resize(size_t(n));
        for (uint64_t i = 0; i < n; ++i)
            (*out)[size_t(i)] = Region{uintptr_t(tab_word(w, r, 2 + 2 * int(i)).load(
                                           std::memory_order_relaxed)),
                                       int64_t(tab_word(w, r, 3 + 2 * int(i)).load(
                                           std::memory_order_relaxed))};
        std::atomic_thread_fence(std::memory_order_acquire);
        if (tab_word(w, r, 0).load(std::memory_order_relaxed) == s1) return true;
    }
}

Window* win_lookup(MPI_Win h) {
    uint32_t u = uint32_t(h);
    if ((u & 0xf0000000u) != kWinBase || (u & 0x0fffffffu) == 0) return nullptr;
    size_t i = (u & 0x0fffffffu) - 1;
    auto& t = table();
    return i < t.size() ? t[i] : nullptr;
}

int raise_error(Window* w, int code) {
    if (!w) return core::raise(nullptr, code);
    return core::raise_win(w->handle, w->errhandler, code);
}

}  // namespace wanmpi::rma

// ---- C entry points -----------------------------------------------------------------------------
namespace wanmpi::impl {
using namespace wanmpi::core;
using rma::Window;

#define WIN_GET(w, h)                                                                        \
    Window* w = rma::win_lookup(h);                                                          \
    if (!w)                                                                                  \
    return core::raise(nullptr, make_error(MPI_ERR_WIN, "invalid window 0x%x%s", unsigned(h), \
                                           h == MPI_WIN_NULL ? " (MPI_WIN_NULL)" : ""))

int Win_create(void* base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
               MPI_Win* win) {
    return rma::create(comm, size, disp_unit, info, MPI_WIN_FLAVOR_CREATE, base, nullptr, win);
}
int Win_create_c(void* base, MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
                 MPI_Win* win) {
    return rma::create(comm, size, disp_unit, info, MPI_WIN_FLAVOR_CREATE, base, nullptr, win);
}
int Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void* baseptr,
                 MPI_Win* win) {
    return rma::create(comm, size, disp_unit, info, MPI_WIN_FLAVOR_ALLOCATE, nullptr, baseptr,
                       win);
}
int Win_allocate_c(MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm, void* baseptr,
                   MPI_Win* win) {
    return rma::create(comm, size, disp_unit, info, MPI_WIN_FLAVOR_ALLOCATE, nullptr, baseptr,
                       win);
}
int Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void* baseptr,
                        MPI_Win* win) {
    return rma::create(comm, size, disp_unit, info, MPI_WIN_FLAVOR_SHARED, nullptr, baseptr, win);
}
int Win_allocate_shared_c(MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
                          void* baseptr, MPI_Win* win) {
    return rma::create(comm, size, disp_unit, info, MPI_WIN_FLAVOR_SHARED, nullptr, baseptr, win);
}
int Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win* win) {
    return rma::create(comm, 0, 1, info, MPI_WIN_FLAVOR_DYNAMIC, nullptr, nullptr, win);
}

// MPI 4.0 §12.2.3: any flavor. A rank whose memory this process can load and store (the
// segment of allocate / allocate_shared windows on this host; this process's own memory) gets
// its part; the others size 0 and NULL. A part of size 0 is NULL too (as MPICH, whose test suite
// checks it).
static int shared_query(MPI_Win win, int rank, MPI_Aint* size, int64_t* unit, void* baseptr) {
    WIN_GET(w, win);
    if (!size || !unit || !baseptr) return rma::raise(w, make_error(MPI_ERR_ARG, "NULL argument"));
    if (rank == MPI_PROC_NULL) {  // the first rank with a non-empty part (MPI 3.1 §11.2.3)
        rank = 0;
        for (int i = 0; i < w->nranks; ++i)
            if (w->sizes[size_t(i)] > 0 && (w->flavor == MPI_WIN_FLAVOR_SHARED ||
                                            (!w->shm_base.empty() && w->shm_base[size_t(i)]))) {
                rank = i;
                break;
            }
    } else if (rank < 0 || rank >= w->nranks) {
        return rma::raise(w, make_error(MPI_ERR_RANK, "invalid rank %d: the window has %d ranks",
                                        rank, w->nranks));
    }
    char* b = nullptr;
    if (!w->shm_base.empty()) b = w->shm_base[size_t(rank)];
    else if (rank == w->rank && w->flavor != MPI_WIN_FLAVOR_DYNAMIC) b = w->base;
    int64_t sz = w->flavor == MPI_WIN_FLAVOR_DYNAMIC ? 0 : w->sizes[size_t(rank)];
    if (!b || sz == 0) {
        b = nullptr;
        sz = 0;
    }
    *size = MPI_Aint(sz);
    *unit = w->units[size_t(rank)];
    *static_cast<void**>(baseptr) = b;
    return MPI_SUCCESS;
}
int Win_shared_query(MPI_Win win, int rank, MPI_Aint* size, int* disp_unit, void* baseptr) {
    int64_t u = 0;
    int rc = shared_query(win, rank, size, &u, baseptr);
    if (rc == MPI_SUCCESS && disp_unit) *disp_unit = int(u);
    return rc;
}
int Win_shared_query_c(MPI_Win win, int rank, MPI_Aint* size, MPI_Aint* disp_unit, void* baseptr) {
    int64_t u = 0;
    int rc = shared_query(win, rank, size, &u, baseptr);
    if (rc == MPI_SUCCESS && disp_unit) *disp_unit = MPI_Aint(u);
    return rc;
}

int Win_attach(MPI_Win win, void* base, MPI_Aint size) {
    WIN_GET(w, win);
    if (w->flavor != MPI_WIN_FLAVOR_DYNAMIC)
        return rma::raise(w, make_error(MPI_ERR_RMA_FLAVOR, "MPI_Win_attach needs a window from "
                                                            "MPI_Win_create_dynamic"));
    if (size < 0) return rma::raise(w, make_error(MPI_ERR_SIZE, "negative size"));
    uintptr_t b = uintptr_t(base);
    for (const rma::Region& r : w->regions)
        if (b < r.base + uintptr_t(r.size) && r.base < b + uintptr_t(size))
            return rma::raise(w, make_error(MPI_ERR_RMA_ATTACH, "memory at %p overlaps memory "
                                                                "already attached", base));
    w->regions.push_back(rma::Region{b, int64_t(size)});
    rma::regions_publish(w);
    return MPI_SUCCESS;
}
int Win_detach(MPI_Win win, const void* base) {
    WIN_GET(w, win);
    if (w->flavor != MPI_WIN_FLAVOR_DYNAMIC)
        return rma::raise(w, make_error(MPI_ERR_RMA_FLAVOR, "MPI_Win_detach needs a window from "
                                                            "MPI_Win_create_dynamic"));
    for (size_t i = 0; i < w->regions.size(); ++i)
        if (w->regions[i].base == uintptr_t(base)) {
            w->regions.erase(w->regions.begin() + long(i));
            rma::regions_publish(w);
            return MPI_SUCCESS;
        }
    return rma::raise(w, make_error(MPI_ERR_RMA_ATTACH, "no memory attached at %p", base));
}

int Win_free(MPI_Win* win) {
    if (!win) return core::raise(nullptr, make_error(MPI_ERR_ARG, "win is NULL"));
    WIN_GET(w, *win);
    bool locked = w->lock_all;
    for (uint8_t l : w->locked) locked = locked || l;
    if (locked || w->in_start || w->in_post)
        return rma::raise(w, make_error(MPI_ERR_RMA_SYNC, "MPI_Win_free with an epoch still "
                                                          "open (unlock / complete / wait first)"));
    int rc = rma::wait_target(w, -1);
    // Every rank's operations on this window are complete once all have reached the barrier
    // (their epochs are closed), so after it nothing more arrives.
    int rc2 = coll::barrier(w->icomm, nullptr, coll::Call::blocking);
    int rc3 = attr_win_delete_all(w->handle);
    rma::target_stop(w);
    rma::table()[(uint32_t(w->handle) & 0x0fffffffu) - 1] = nullptr;
    errhandler_release(w->errhandler);  // the window's reference (predefined: no-op)
    rma::destroy(w);
    *win = MPI_WIN_NULL;
    if (rc == MPI_SUCCESS) rc = rc2;
    if (rc == MPI_SUCCESS) rc = rc3;
    return rc == MPI_SUCCESS ? rc : core::raise(nullptr, rc);
}

int Win_get_group(MPI_Win win, MPI_Group* group) {
    WIN_GET(w, win);
    if (!group) return rma::raise(w, make_error(MPI_ERR_ARG, "group is NULL"));
    *group = group_make(w->comm->world);
    return MPI_SUCCESS;
}
int Win_set_info(MPI_Win win, MPI_Info info) {
    WIN_GET(w, win);
    if (int rc = info_arg_check(info)) return rma::raise(w, rc);
    rma::merge_info(w, info);
    return MPI_SUCCESS;
}
int Win_get_info(MPI_Win win, MPI_Info* info_used) {
    WIN_GET(w, win);
    if (!info_used) return rma::raise(w, make_error(MPI_ERR_ARG, "info_used is NULL"));
    *info_used = info_create(w->info);
    return MPI_SUCCESS;
}
int Win_set_name(MPI_Win win, const char* win_name) {
    WIN_GET(w, win);
    if (!win_name) return rma::raise(w, make_error(MPI_ERR_ARG, "win_name is NULL"));
    w->name.assign(win_name, strnlen(win_name, MPI_MAX_OBJECT_NAME - 1));
    return MPI_SUCCESS;
}
int Win_get_name(MPI_Win win, char* win_name, int* resultlen) {
    WIN_GET(w, win);
    if (!win_name || !resultlen) return rma::raise(w, make_error(MPI_ERR_ARG, "NULL argument"));
    std::memcpy(win_name, w->name.c_str(), w->name.size() + 1);
    *resultlen = int(w->name.size());
    return MPI_SUCCESS;
}

int Win_set_attr(MPI_Win win, int keyval, void* value) {
    WIN_GET(w, win);
    return rma::raise(w, attr_set(AttrKind::win, win, keyval, value));
}
int Win_get_attr(MPI_Win win, int keyval, void* value, int* flag) {
    WIN_GET(w, win);
    if (!value || !flag) return rma::raise(w, make_error(MPI_ERR_ARG, "NULL argument"));
    void** out = static_cast<void**>(value);
    *flag = 1;
    switch (keyval) {
    case MPI_WIN_BASE: *out = w->attr_base; return MPI_SUCCESS;
    case MPI_WIN_SIZE: *out = &w->attr_size; return MPI_SUCCESS;
    case MPI_WIN_DISP_UNIT: *out = &w->attr_unit; return MPI_SUCCESS;
    case MPI_WIN_CREATE_FLAVOR: *out = &w->flavor; return MPI_SUCCESS;
    case MPI_WIN_MODEL: *out = &w->model; return MPI_SUCCESS;
    default: break;
    }
    return rma::raise(w, attr_get(AttrKind::win, win, keyval, value, flag));
}
int Win_delete_attr(MPI_Win win, int keyval) {
    WIN_GET(w, win);
    return rma::raise(w, attr_delete(AttrKind::win, win, keyval));
}

int Win_create_errhandler(MPI_Win_errhandler_function* fn, MPI_Errhandler* errhandler) {
    if (!fn) return core::raise(nullptr, make_error(MPI_ERR_ARG, "error handler function is NULL"));
    if (!errhandler) return core::raise(nullptr, make_error(MPI_ERR_ARG, "errhandler is NULL"));
    *errhandler = errhandler_create(EhKind::win, reinterpret_cast<void (*)()>(fn));
    return MPI_SUCCESS;
}
int Win_set_errhandler(MPI_Win win, MPI_Errhandler errhandler) {
    WIN_GET(w, win);
    if (!errhandler_fits(errhandler, EhKind::win))
        return rma::raise(w, make_error(MPI_ERR_ARG, "error handler 0x%x is not a window "
                                                     "handler", unsigned(errhandler)));
    errhandler_retain(errhandler);
    errhandler_release(w->errhandler);
    w->errhandler = errhandler;
    return MPI_SUCCESS;
}
int Win_get_errhandler(MPI_Win win, MPI_Errhandler* errhandler) {
    WIN_GET(w, win);
    if (!errhandler) return rma::raise(w, make_error(MPI_ERR_ARG, "errhandler is NULL"));
    errhandler_retain(w->errhandler);
    *errhandler = w->errhandler;
    return MPI_SUCCESS;
}
int Win_call_errhandler(MPI_Win win, int errorcode) {
    WIN_GET(w, win);
    rma::raise(w, errorcode);
    return MPI_SUCCESS;
}

MPI_Fint Win_c2f(MPI_Win win) { return MPI_Fint(win); }
MPI_Win Win_f2c(MPI_Fint win) { return MPI_Win(win); }

}  // namespace wanmpi::impl
