// What the engine counts for the MPI_T performance variables (core/mpi_t_pvar.cpp): messages and
// bytes per route, and the lengths of the posted and unexpected receive queues.
//
// Ownership: one process-wide g_pvars, static storage, so MPI_T may read it before MPI_Init and
// after MPI_Finalize (it then shows the last values).
// Threading: the engine is the only writer and writes under its own serialisation (the API lock
// or the one thread of lower thread levels); MPI_T reads from any thread. Every field is a
// relaxed atomic written with load + store, not a read-modify-write: one writer needs no locked
// instruction, so the hot path costs the same plain add as before, and a reader never sees a
// torn value.
#pragma once

#include <atomic>
#include <cstdint>

namespace wanmpi::core {

// The routes of the engine's table (engine.cpp), in the order MPI_T lists them.
enum RouteKind : uint8_t { kRouteSelf, kRouteShm, kRouteTcp, kRouteWan, kRouteKinds };
inline const char* route_kind_name(int k) {
    static const char* const names[] = {"self", "shm", "tcp", "wan"};
    return k >= 0 && k < kRouteKinds ? names[k] : "?";
}

class PvarCell {
public:
    void add(uint64_t n) { v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
    void sub(uint64_t n) { v_.store(v_.load(std::memory_order_relaxed) - n, std::memory_order_relaxed); }
    void set(uint64_t n) { v_.store(n, std::memory_order_relaxed); }
    uint64_t get() const { return v_.load(std::memory_order_relaxed); }
    // Only for the reader's side of a high-water mark (see QueueLen).
    uint64_t exchange(uint64_t n) { return v_.exchange(n, std::memory_order_relaxed); }

private:
    std::atomic<uint64_t> v_{0};
};

// A queue length and its peak since MPI_T last harvested it. The engine raises `peak` when the
// length passes it; MPI_T swaps the peak for the current length and hands what it took to every
// running high-water-mark handle, so handles started at different times each see the peak of
// their own interval. A race between the engine's raise and MPI_T's swap can only lose a peak
// that is still the current length, which the harvest also looks at.
struct QueueLen {
    PvarCell len, peak;
    void inc() {
        len.add(1);
        if (len.get() > peak.get()) peak.set(len.get());
    }
    void dec() { len.sub(1); }
};

struct RouteCounters {
    // Messages as MPI counts them (one per send or receive, eager or rendezvous, point-to-point
    // or part of a collective), and their payload bytes; headers and protocol frames not.
    PvarCell msgs_sent, bytes_sent, msgs_recv, bytes_recv;
    PvarCell peers;  // ranks this route reaches, set at MPI_Init
};

struct EnginePvars {
    RouteCounters route[kRouteKinds];
    QueueLen posted, unexp;
};

extern EnginePvars g_pvars;

}  // namespace wanmpi::core
