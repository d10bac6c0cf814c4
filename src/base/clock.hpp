// Clocks. now_ns() is CLOCK_MONOTONIC; it is what MPI_Wtime reports (as seconds).
#pragma once

#include <cstdint>
#include <ctime>

namespace wanmpi::base {

inline int64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}
inline double now_s() { return double(now_ns()) * 1e-9; }

}  // namespace wanmpi::base
