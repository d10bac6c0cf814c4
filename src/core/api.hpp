// The prologue every generated PMPI_X entry point runs (see src/bindings/gen_bindings.py):
//   - takes the coarse API lock when the job asked for MPI_THREAD_MULTIPLE (no lock otherwise,
//     so single-threaded latency pays nothing),
//   - remembers which MPI function is running, for error messages,
//   - refuses calls before MPI_Init / after MPI_Finalize with a clear message (MPI says such
//     calls are erroneous; like MPICH we report and abort rather than crash later).
// Thread safety: g_api_lock is recursive because an MPI call may invoke user callbacks (error
// handlers, reduction ops) that call MPI again.
#pragma once

#include <atomic>
#include <mutex>

namespace wanmpi::core {

extern std::atomic<bool> g_thread_multiple;
extern std::recursive_mutex g_api_lock;
// initial-exec: read and written twice per MPI call; the default model for a shared library
// (general dynamic) costs a __tls_get_addr call each time. The variable is one pointer, well
// within the static TLS surplus glibc keeps for libraries loaded later with dlopen (mpi4py).
extern thread_local const char* t_api_name __attribute__((tls_model("initial-exec")));
// 0 = before MPI_Init, 1 = initialized, 2 = finalized
extern std::atomic<int> g_init_state;

[[noreturn]] void api_not_initialized(const char* fname);

class ApiScope {
public:
    ApiScope(const char* fname, bool lock, bool need_init) : prev_(t_api_name) {
        if (need_init && __builtin_expect(g_init_state.load(std::memory_order_relaxed) != 1, 0))
            api_not_initialized(fname);
        if (lock && g_thread_multiple.load(std::memory_order_relaxed)) {
            g_api_lock.lock();
            locked_ = true;
        }
        t_api_name = fname;
    }
    ~ApiScope() {
        t_api_name = prev_;
        if (locked_) g_api_lock.unlock();
    }
    ApiScope(const ApiScope&) = delete;
    ApiScope& operator=(const ApiScope&) = delete;

private:
    const char* prev_;
    bool locked_ = false;
};

}  // namespace wanmpi::core

#define WANMPI_API_PROLOGUE(name, lock, need_init) \
    ::wanmpi::core::ApiScope wanmpi_api_scope_(name, lock, need_init)
