// MPI environment functions: init/finalize, thread levels, versions, errors, memory.
#include <cstdlib>
#include <cstring>
#include <unistd.h>

#include "base/clock.hpp"
#include "base/log.hpp"
#include "bindings/impl.hpp"
#include "core/api.hpp"
#include "core/attr.hpp"
#include "core/engine.hpp"
#include "core/errors.hpp"
#include "core/session.hpp"
#include "core/wan_rate.hpp"

namespace wanmpi::impl {
using namespace wanmpi::core;

static int copy_string(const std::string& s, char* out, int max, int* len) {
    int n = int(std::min<size_t>(s.size(), size_t(max - 1)));
    std::memcpy(out, s.data(), size_t(n));
    out[n] = '\0';
    if (len) *len = n;
    return MPI_SUCCESS;
}

int Init_thread(int*, char***, int required, int* provided) {
    if (world_state() != 0 || g_init_state.load() == 2) {
        std::fprintf(stderr, "[wanmpi] MPI_Init called %s\n",
                     world_state() == 1 ? "twice" : "after MPI_Finalize");
        std::abort();
    }
    if (required < MPI_THREAD_SINGLE || required > MPI_THREAD_MULTIPLE)
        required = MPI_THREAD_SINGLE;
    if (engine_running()) {  // a session started it: the world model joins
        if (provided) *provided = thread_level();
    } else {
        int rc = engine_init(required, provided);
        if (rc != MPI_SUCCESS) {
            std::fprintf(stderr, "[wanmpi] MPI_Init failed; see the messages above\n");
            _exit(1);
        }
        g_init_state = 1;
    }
    set_world_state(1);
    return MPI_SUCCESS;
}

int Init(int* argc, char*** argv) { return Init_thread(argc, argv, MPI_THREAD_SINGLE, nullptr); }

int Finalize() {
    int rc;
    {
        std::lock_guard<std::recursive_mutex> lk(g_api_lock);
        // Attribute delete callbacks on SELF then WORLD run first, while MPI still works.
        int arc = attr_finalize();
        wan_stats_report();  // collective, while MPI still works
        set_world_state(2);
        // Open sessions keep the engine for their communicators; the last one stops it.
        rc = sessions_open() ? MPI_SUCCESS : engine_stop();
        if (rc == MPI_SUCCESS) rc = arc;
    }
    return rc;
}

// The world model's state (MPI 4.0 §11.2.1): sessions alone do not make MPI "initialized".
int Initialized(int* flag) {
    *flag = world_state() != 0;
    return MPI_SUCCESS;
}
int Finalized(int* flag) {
    *flag = world_state() == 2;
    return MPI_SUCCESS;
}
int Query_thread(int* provided) {
    *provided = thread_level();
    return MPI_SUCCESS;
}
int Is_thread_main(int* flag) {
    *flag = is_main_thread();
    return MPI_SUCCESS;
}

int Abort(MPI_Comm comm, int errorcode) {
    Comm* c = comm_lookup(comm);
    std::string msg = "MPI_Abort(" + (c ? c->name : std::string("invalid communicator")) + ", " +
                      std::to_string(errorcode) + ") called";
    abort_job(errorcode & 0xff ? errorcode & 0xff : 1, msg);
}

int Get_processor_name(char* name, int* resultlen) {
    std::string n;
    if (engine_running()) {
        n = processor_name();
    } else {
        char hn[256] = {};
        gethostname(hn, sizeof hn - 1);
        n = hn;
    }
    return copy_string(n, name, MPI_MAX_PROCESSOR_NAME, resultlen);
}

int Get_version(int* version, int* subversion) {
    *version = MPI_VERSION;
    *subversion = MPI_SUBVERSION;
    return MPI_SUCCESS;
}

int Get_library_version(char* version, int* resultlen) {
    return copy_string(std::string("wanmpi ") + WANMPI_VERSION +
                           " (MPI " + std::to_string(MPI_VERSION) + "." +
                           std::to_string(MPI_SUBVERSION) + ", IMPI between clusters)",
                       version, MPI_MAX_LIBRARY_VERSION_STRING, resultlen);
}

double Wtime() { return base::now_s(); }
double Wtick() {
    timespec ts;
    clock_getres(CLOCK_MONOTONIC, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

int Alloc_mem(MPI_Aint size, MPI_Info, void* baseptr) {
    if (size < 0) return raise(nullptr, make_error(MPI_ERR_SIZE, "negative size %lld", (long long)size));
    void* p = nullptr;
    if (posix_memalign(&p, 64, size_t(size ? size : 1)) != 0)
        return raise(nullptr, make_error(MPI_ERR_NO_MEM, "cannot allocate %lld bytes", (long long)size));
    *static_cast<void**>(baseptr) = p;
    return MPI_SUCCESS;
}
int Free_mem(void* base) {
    std::free(base);
    return MPI_SUCCESS;
}

}  // namespace wanmpi::impl

// MPI_Pcontrol (mpi.h): a hook for profiling libraries, which define MPI_Pcontrol themselves and
// see every call; wanmpi's own does nothing (MPI 4.0 §15.2.4 allows that).
extern "C" __attribute__((visibility("default"))) int PMPI_Pcontrol(const int, ...) {
    return MPI_SUCCESS;
}
#pragma weak MPI_Pcontrol = PMPI_Pcontrol
