// Partitioned point-to-point communication (MPI 4.0 chapter 4): MPI_Psend_init, MPI_Precv_init,
// MPI_Pready(_range/_list), MPI_Parrived; started with MPI_Start(all), completed with
// Wait/Test, freed with MPI_Request_free like any persistent request.
//
// Protocol, in the collective context of the communicator (tags 0x40000000 | 5 << 26 | x, the
// "partitioned" kind of comm_task.hpp's management tags, so neither user messages nor
// collectives can match them):
//   - MPI_Psend_init sends one control message (x = kCtl) to the receiver: the user's tag, the
//     sender's number of partitions, bytes per partition and a tag base B that the sender
//     allocated (per communicator, so no two live channels from one sender share data tags).
//   - MPI_Precv_init matches control messages from its source in arrival order, taking the first
//     with its tag (MPI's matching rule: the k-th partitioned send with tag t pairs with the k-th
//     partitioned receive with tag t from that source). A control message that arrives before
//     its receive is kept in the source's port until one is initialized.
//   - Each instance (MPI_Start) sends partition j, when it is readied, as one message with
//     x = B + j; the receive side posts one receive per *sender* partition. Messages of the next
//     instance follow those of this one on the same ordered pair, so FIFO matching keeps
//     instances apart even when the sender restarts before the receiver has finished.
// The two sides may partition differently (MPI allows it; only the total size must agree):
// a receive partition has arrived when every sender partition overlapping its bytes has. With a
// contiguous receive type, sender partitions land in place; with a non-contiguous one they land
// in place if both sides partition alike, else in a staging buffer that is unpacked one receive
// partition at a time as it completes.
// Threading: under the API lock; the progress hook runs inside poll().
#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <vector>

#include "base/codec.hpp"
#include "bindings/impl.hpp"
#include "core/api.hpp"
#include "core/comm_task.hpp"
#include "core/datatype.hpp"
#include "core/engine.hpp"
#include "core/errors.hpp"
#include "core/info.hpp"

namespace wanmpi::core {
namespace {

constexpr uint32_t kTagSpace = 1u << 26;
constexpr uint32_t kCtl = kTagSpace - 1;  // the control message; data tags use 0..kCtl-1
int part_tag(uint32_t x) { return mgmt_tag(TagKind::partitioned, 0) | int(x & (kTagSpace - 1)); }

// The control message: big-endian utag(4) partitions(4) bytes_per_partition(8) base(4).
constexpr int kCtlBytes = 20;
struct Ctl {
    int utag = 0;
    int parts = 0;
    int64_t part_bytes = 0;
    uint32_t base = 0;
};

struct PartOp {
    bool send = false;
    Request* self = nullptr;
    Comm* c = nullptr;
    int peer = 0;
    int utag = 0;
    int parts = 0;
    int64_t count = 0;  // elements per partition
    MPI_Datatype dth = MPI_DATATYPE_NULL;
    const Datatype* dt = nullptr;
    char* buf = nullptr;
    int64_t part_bytes = 0;  // this side's bytes per partition
    bool running = false;    // started, not yet complete
    bool zombie = false;     // freed while its control message was still in flight
    int err = MPI_SUCCESS;   // of this instance
    int sticky = MPI_SUCCESS;  // of every instance (the two sides do not fit together)
    std::vector<Request*> reqs;  // per sender partition: the send or receive of this instance
    std::vector<uint8_t> ready;  // send: readied in this instance; recv: sender part arrived
    int nready = 0;
    // send side
    uint32_t base = 0;
    Request* ctl_send = nullptr;
    uint8_t ctl_buf[kCtlBytes] = {};
    // receive side
    bool matched = false;
    Ctl s;                        // the sender's layout, once matched
    enum class Land : uint8_t { bytes, typed, staged } land = Land::bytes;
    char* staging = nullptr;
    std::vector<uint8_t> done;    // per receive partition: arrived (and unpacked when staged)
    int ndone = 0;
};

// Control messages from one source on one communicator (collective context).
struct Port {
    Comm* c = nullptr;
    int src = 0;
    Request* recv = nullptr;
    uint8_t buf[kCtlBytes] = {};
    std::deque<Ctl> unclaimed;
    std::vector<PartOp*> waiting;  // receives not matched yet, in initialization order
};

std::map<std::pair<uint32_t, int>, Port> g_ports;  // (ctx, source rank)
std::map<uint32_t, uint32_t> g_next_base;           // ctx -> next data tag base (send side)
std::vector<PartOp*> g_running;                       // instances in progress
std::vector<PartOp*> g_ctl_sends;                     // sends whose control message is in flight
bool g_hook_added = false;

int64_t total_bytes(const PartOp* p) { return int64_t(p->parts) * p->part_bytes; }

void complete(PartOp* p) {
    Request* r = p->self;
    p->running = false;
    for (Request*& q : p->reqs)
        if (q) {
            if (q->status.MPI_ERROR != MPI_SUCCESS && p->err == MPI_SUCCESS)
                p->err = q->status.MPI_ERROR;
            request_release(q);
            q = nullptr;
        }
    r->status.MPI_ERROR = p->err;
    p->err = MPI_SUCCESS;
    if (!p->send) {
        r->status.MPI_SOURCE = p->peer;
        r->status.MPI_TAG = p->utag;
        const int64_t n = p->peer == MPI_PROC_NULL ? 0 : total_bytes(p);
        r->status.count_lo = int(uint32_t(uint64_t(n)));
        r->status.count_hi_and_cancelled = int((uint64_t(n) >> 32) & 0x7fffffff);
    }
    r->complete = true;
    if (r->user_freed) request_release(r);
}

// Receive partition q has arrived when every sender partition overlapping its bytes has.
bool covered(const PartOp* p, int q) {
    const int64_t lo = int64_t(q) * p->part_bytes, hi = lo + p->part_bytes;
    if (p->part_bytes == 0 || p->s.part_bytes == 0) return true;
    const int64_t j0 = lo / p->s.part_bytes, j1 = (hi - 1) / p->s.part_bytes;
    for (int64_t j = j0; j <= j1; ++j)
        if (!p->ready[size_t(j)]) return false;
    return true;
}

void mark_done(PartOp* p, int q) {
    if (p->done[size_t(q)]) return;
    if (p->land == PartOp::Land::staged)
        unpack(*p->dt, p->staging + int64_t(q) * p->part_bytes, p->part_bytes,
               p->buf + int64_t(q) * p->count * p->dt->extent);
    p->done[size_t(q)] = 1;
    ++p->ndone;
}

// Post this instance's receives (the sender's layout is known and the request started).
int post_recvs(PartOp* p) {
    p->reqs.assign(size_t(p->s.parts), nullptr);
    p->ready.assign(size_t(p->s.parts), 0);
    for (int j = 0; j < p->s.parts; ++j) {
        const int64_t off = int64_t(j) * p->s.part_bytes;
        void* at = nullptr;
        int64_t n = p->s.part_bytes;
        MPI_Datatype t = MPI_BYTE;
        switch (p->land) {
        case PartOp::Land::bytes: at = p->buf + p->dt->true_lb + off; break;
        case PartOp::Land::typed:
            at = p->buf + int64_t(j) * p->count * p->dt->extent;
            n = p->count;
            t = p->dth;
            break;
        case PartOp::Land::staged: at = p->staging + off; break;
        }
        int rc = coll_post(ReqKind::recv, at, n, t, p->peer, part_tag(p->s.base + uint32_t(j)),
                           p->c, &p->reqs[size_t(j)]);
        if (rc != MPI_SUCCESS) return rc;
    }
    return MPI_SUCCESS;
}

// A receive learns its sender's layout.
void match(PartOp* p, const Ctl& ctl) {
    p->matched = true;
    p->s = ctl;
    const int64_t sent = int64_t(ctl.parts) * ctl.part_bytes;
    if (sent != total_bytes(p))
        p->sticky = make_error(MPI_ERR_TRUNCATE,
                            "partitioned receive of %lld bytes (tag %d from rank %d) matched a "
                            "partitioned send of %lld bytes",
                            (long long)total_bytes(p), p->utag, p->peer, (long long)sent);
    if (p->dt->contig) p->land = PartOp::Land::bytes;
    else if (ctl.part_bytes == p->part_bytes) p->land = PartOp::Land::typed;
    else p->land = PartOp::Land::staged;
    if (p->land == PartOp::Land::staged && p->sticky == MPI_SUCCESS) {
        p->staging = static_cast<char*>(std::malloc(size_t(std::max<int64_t>(1, sent))));
        if (!p->staging)
            p->sticky = make_error(MPI_ERR_NO_MEM, "partitioned receive: no memory for %lld bytes",
                                (long long)sent);
    }
    if (p->err == MPI_SUCCESS) p->err = p->sticky;
}

void port_post(Port& port) {
    if (port.recv || port.waiting.empty()) return;
    int rc = coll_post(ReqKind::recv, port.buf, kCtlBytes, MPI_BYTE, port.src, part_tag(kCtl),
                       port.c, &port.recv);
    if (rc != MPI_SUCCESS) {  // the source is gone: every waiting receive fails
        for (PartOp* p : port.waiting)
            if (p->err == MPI_SUCCESS) p->err = rc;
        port.recv = nullptr;
    }
}

bool start_matched_recv(PartOp* p);

void destroy(PartOp* p) {
    if (p->dt) datatype_release(p->dt);
    std::free(p->staging);
    delete p;
}

int hook() {
    int n = 0;
    for (size_t i = 0; i < g_ctl_sends.size();) {
        PartOp* p = g_ctl_sends[i];
        if (!p->ctl_send->complete) {
            ++i;
            continue;
        }
        if (p->ctl_send->status.MPI_ERROR != MPI_SUCCESS && p->err == MPI_SUCCESS)
            p->err = p->ctl_send->status.MPI_ERROR;
        request_release(p->ctl_send);
        p->ctl_send = nullptr;
        g_ctl_sends[i] = g_ctl_sends.back();
        g_ctl_sends.pop_back();
        if (p->zombie) destroy(p);
        ++n;
    }
    for (auto& [key, port] : g_ports) {
        if (!port.recv || !port.recv->complete) continue;
        ++n;
        Request* r = port.recv;
        port.recv = nullptr;
        const int err = r->status.MPI_ERROR;
        request_release(r);
        if (err != MPI_SUCCESS) {
            for (PartOp* p : port.waiting)
                if (p->err == MPI_SUCCESS) p->err = err;
            continue;
        }
        Ctl ctl;
        ctl.utag = int(base::get_be32(port.buf));
        ctl.parts = int(base::get_be32(port.buf + 4));
        ctl.part_bytes = int64_t(base::get_be64(port.buf + 8));
        ctl.base = base::get_be32(port.buf + 16);
        auto it = std::find_if(port.waiting.begin(), port.waiting.end(),
                               [&](PartOp* p) { return p->utag == ctl.utag; });
        if (it == port.waiting.end()) {
            port.unclaimed.push_back(ctl);
        } else {
            PartOp* p = *it;
            port.waiting.erase(it);
            match(p, ctl);
            if (p->running) start_matched_recv(p);
        }
        port_post(port);
    }
    for (size_t i = 0; i < g_running.size();) {
        PartOp* p = g_running[i];
        bool over;
        if (p->send) {
            // Over when every partition was readied and every send is done (a send that could
            // not be posted left its error in p->err and no request).
            over = p->nready == p->parts;
            for (Request* q : p->reqs) over = over && (!q || q->complete);
        } else {
            if (p->matched && p->err == MPI_SUCCESS) {
                for (size_t j = 0; j < p->reqs.size(); ++j)
                    if (!p->ready[j] && p->reqs[j] && p->reqs[j]->complete) {
                        p->ready[j] = 1;
                        if (p->reqs[j]->status.MPI_ERROR != MPI_SUCCESS)
                            p->err = p->reqs[j]->status.MPI_ERROR;
                        ++n;
                    }
                for (int q = 0; q < p->parts; ++q)
                    if (!p->done[size_t(q)] && covered(p, q)) mark_done(p, q);
            }
            over = p->err != MPI_SUCCESS || (p->matched && p->ndone == p->parts);
            if (p->err != MPI_SUCCESS)
                for (Request* q : p->reqs)
                    if (q && !q->complete && !q->matched) cancel(q);
            for (Request* q : p->reqs) over = over && (!q || q->complete);
        }
        if (!over) {
            ++i;
            continue;
        }
        g_running[i] = g_running.back();
        g_running.pop_back();
        complete(p);
        ++n;
    }
    return n;
}

bool start_matched_recv(PartOp* p) {
    if (p->err == MPI_SUCCESS) {
        int rc = post_recvs(p);
        if (rc != MPI_SUCCESS) p->err = rc;
    }
    return p->err == MPI_SUCCESS;
}

int part_start(Request* r) {
    auto* p = static_cast<PartOp*>(r->ext);
    p->running = true;
    p->nready = 0;
    p->err = p->sticky;
    if (p->peer == MPI_PROC_NULL) {
        p->running = false;
        complete(p);
        return MPI_SUCCESS;
    }
    if (p->send) {
        p->reqs.assign(size_t(p->parts), nullptr);
        p->ready.assign(size_t(p->parts), 0);
    } else {
        p->done.assign(size_t(p->parts), 0);
        p->ndone = 0;
        if (p->matched) start_matched_recv(p);
    }
    g_running.push_back(p);
    return MPI_SUCCESS;
}

void release(void* x) {
    auto* p = static_cast<PartOp*>(x);
    // Released only when inactive, so no instance runs. A receive not matched yet leaves its
    // port's list; a send whose control message is still in flight (freed right after init)
    // lives on until that message has left, since the message is read from p->ctl_buf.
    if (!p->send && !p->matched)
        for (auto& [key, port] : g_ports)
            port.waiting.erase(std::remove(port.waiting.begin(), port.waiting.end(), p),
                               port.waiting.end());
    if (p->ctl_send) {
        p->zombie = true;
        return;
    }
    destroy(p);
}

int fail_init(Comm* c, int rc) { return raise(c, rc); }

int part_init(bool send, const void* buf, int partitions, MPI_Count count, MPI_Datatype dth,
              int peer, int tag, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
    const char* fname = send ? "MPI_Psend_init" : "MPI_Precv_init";
    Comm* c = comm_lookup(comm);
    if (!c)
        return raise(nullptr, make_error(MPI_ERR_COMM, "%s: invalid communicator 0x%x", fname,
                                         unsigned(comm)));
    if (!request) return fail_init(c, make_error(MPI_ERR_ARG, "%s: request is NULL", fname));
    if (partitions < 1 || uint32_t(partitions) >= kCtl)
        return fail_init(c, make_error(MPI_ERR_ARG, "%s: %d partitions (1..%u)", fname,
                                       partitions, kCtl - 1));
    if (count < 0)
        return fail_init(c, make_error(MPI_ERR_COUNT, "%s: negative count %lld", fname,
                                       (long long)count));
    if (int rc = info_arg_check(info, fname)) return fail_init(c, rc);
    if (peer != MPI_PROC_NULL && (peer < 0 || peer >= c->remote_size()))
        return fail_init(c, make_error(MPI_ERR_RANK, "%s: invalid %s rank %d (%s has %d)", fname,
                                       send ? "destination" : "source", peer, c->name.c_str(),
                                       c->remote_size()));
    if (tag < 0 || tag > 0x7fffffff)  // MPI_ANY_TAG is not allowed either
        return fail_init(c, make_error(MPI_ERR_TAG, "%s: invalid tag %d", fname, tag));
    const Datatype* dt = datatype_lookup(dth);
    if (!dt) return fail_init(c, datatype_error(dth));
    if (!g_hook_added) {
        add_progress_hook(hook);
        g_hook_added = true;
    }
    auto* p = new PartOp;
    p->send = send;
    p->c = c;
    p->peer = peer;
    p->utag = tag;
    p->parts = partitions;
    p->count = count;
    p->dth = dth;
    p->dt = dt;
    datatype_retain(dt);
    p->buf = static_cast<char*>(const_cast<void*>(buf));
    p->part_bytes = count * dt->size;

    Request* r = request_new(ReqKind::ext);
    if (!r) {
        destroy(p);
        return fail_init(c, make_error(MPI_ERR_INTERN, "out of request handles"));
    }
    p->self = r;
    r->comm = c;
    comm_retain(c);
    r->comm_held = true;
    r->peer = peer;
    r->world_peer = -1;
    r->persistent = true;
    r->complete = true;  // inactive
    r->ext = p;
    r->ext_free = release;
    r->ext_start = part_start;

    if (peer != MPI_PROC_NULL && send) {
        uint32_t& next = g_next_base[c->ctx];
        if (next + uint32_t(partitions) >= kCtl) next = 0;  // wrap: see the tag comment above
        p->base = next;
        next += uint32_t(partitions);
        base::put_be32(p->ctl_buf, uint32_t(tag));
        base::put_be32(p->ctl_buf + 4, uint32_t(partitions));
        base::put_be64(p->ctl_buf + 8, uint64_t(p->part_bytes));
        base::put_be32(p->ctl_buf + 16, p->base);
        int rc = coll_post(ReqKind::send, p->ctl_buf, kCtlBytes, MPI_BYTE, peer, part_tag(kCtl),
                           c, &p->ctl_send);
        if (rc != MPI_SUCCESS) {
            p->ctl_send = nullptr;
            request_release(r);
            return fail_init(c, rc);
        }
        if (p->ctl_send->complete) {
            request_release(p->ctl_send);
            p->ctl_send = nullptr;
        } else {
            g_ctl_sends.push_back(p);
        }
    } else if (peer != MPI_PROC_NULL) {
        Port& port = g_ports[{c->ctx, peer}];
        port.c = c;
        port.src = peer;
        auto it = std::find_if(port.unclaimed.begin(), port.unclaimed.end(),
                               [&](const Ctl& x) { return x.utag == tag; });
        if (it != port.unclaimed.end()) {
            Ctl ctl = *it;
            port.unclaimed.erase(it);
            match(p, ctl);
        } else {
            port.waiting.push_back(p);
            port_post(port);
        }
    }
    *request = request_handle(r);
    return MPI_SUCCESS;
}

// The partitioned request behind a handle, or raises.
PartOp* part_of(MPI_Request h, bool want_send, const char* fname, int* rc) {
    Request* r = request_lookup(h);
    if (!r || r->kind != ReqKind::ext || r->ext_free != release) {
        *rc = raise(nullptr, make_error(MPI_ERR_REQUEST, "%s: 0x%x is not a partitioned request",
                                        fname, unsigned(h)));
        return nullptr;
    }
    auto* p = static_cast<PartOp*>(r->ext);
    if (p->send != want_send) {
        *rc = raise(p->c, make_error(MPI_ERR_REQUEST, "%s on a partitioned %s request", fname,
                                     p->send ? "send" : "receive"));
        return nullptr;
    }
    *rc = MPI_SUCCESS;
    return p;
}

int ready_one(PartOp* p, int j, const char* fname) {
    if (!p->self->active)
        return raise(p->c, make_error(MPI_ERR_REQUEST, "%s on an inactive request", fname));
    if (j < 0 || j >= p->parts)
        return raise(p->c, make_error(MPI_ERR_ARG, "%s: partition %d out of 0..%d", fname, j,
                                      p->parts - 1));
    if (p->peer == MPI_PROC_NULL) return MPI_SUCCESS;
    if (p->ready[size_t(j)])
        return raise(p->c, make_error(MPI_ERR_ARG, "%s: partition %d is already ready", fname, j));
    p->ready[size_t(j)] = 1;
    ++p->nready;
    if (p->err != MPI_SUCCESS) return MPI_SUCCESS;  // reported at completion
    int rc = coll_post(ReqKind::send, p->buf + int64_t(j) * p->count * p->dt->extent, p->count,
                       p->dth, p->peer, part_tag(p->base + uint32_t(j)), p->c,
                       &p->reqs[size_t(j)]);
    if (rc != MPI_SUCCESS) p->err = rc;
    return MPI_SUCCESS;
}

}  // namespace
}  // namespace wanmpi::core

namespace wanmpi::impl {
using namespace wanmpi::core;

int Psend_init(const void* buf, int partitions, MPI_Count count, MPI_Datatype datatype, int dest,
               int tag, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
    return part_init(true, buf, partitions, count, datatype, dest, tag, comm, info, request);
}
int Precv_init(void* buf, int partitions, MPI_Count count, MPI_Datatype datatype, int dest,
               int tag, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
    return part_init(false, buf, partitions, count, datatype, dest, tag, comm, info, request);
}

int Pready(int partition, MPI_Request request) {
    int rc;
    PartOp* p = part_of(request, true, "MPI_Pready", &rc);
    return p ? ready_one(p, partition, "MPI_Pready") : rc;
}
int Pready_range(int partition_low, int partition_high, MPI_Request request) {
    int rc;
    PartOp* p = part_of(request, true, "MPI_Pready_range", &rc);
    if (!p) return rc;
    if (partition_low > partition_high)
        return raise(p->c, make_error(MPI_ERR_ARG, "MPI_Pready_range: low %d > high %d",
                                      partition_low, partition_high));
    for (int j = partition_low; j <= partition_high; ++j)
        if (int e = ready_one(p, j, "MPI_Pready_range")) return e;
    return MPI_SUCCESS;
}
int Pready_list(int length, int array_of_partitions[], MPI_Request request) {
    int rc;
    PartOp* p = part_of(request, true, "MPI_Pready_list", &rc);
    if (!p) return rc;
    if (length < 0 || (length > 0 && !array_of_partitions))
        return raise(p->c, make_error(MPI_ERR_ARG, "MPI_Pready_list: bad list (length %d)",
                                      length));
    for (int i = 0; i < length; ++i)
        if (int e = ready_one(p, array_of_partitions[i], "MPI_Pready_list")) return e;
    return MPI_SUCCESS;
}

int Parrived(MPI_Request request, int partition, int* flag) {
    int rc;
    PartOp* p = part_of(request, false, "MPI_Parrived", &rc);
    if (!p) return rc;
    if (!flag) return raise(p->c, make_error(MPI_ERR_ARG, "MPI_Parrived: flag is NULL"));
    if (partition < 0 || partition >= p->parts)
        return raise(p->c, make_error(MPI_ERR_ARG, "MPI_Parrived: partition %d out of 0..%d",
                                      partition, p->parts - 1));
    // An inactive request (never started, or completed) has nothing pending: the data is there.
    if (!p->running || p->peer == MPI_PROC_NULL) {
        *flag = 1;
        return MPI_SUCCESS;
    }
    if (!p->done[size_t(partition)]) poll();
    *flag = !p->running || p->done[size_t(partition)];
    return MPI_SUCCESS;
}

}  // namespace wanmpi::impl
