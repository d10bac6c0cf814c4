#include "wanlink/stall.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace wanmpi::wanlink {

void PathProbe::stop() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    misses_ = 0;
}

PathProbe::Result PathProbe::answer() {
    const Result r = misses_ >= kOutageMisses ? back : up;
    stop();
    return r;
}

PathProbe::Result PathProbe::poll(const sockaddr_in& to, int64_t now_ns) {
    if (fd_ >= 0) {
        pollfd pf{fd_, POLLOUT, 0};
        if (::poll(&pf, 1, 0) > 0) {
            int err = 0;
            socklen_t len = sizeof err;
            getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
            if (err == 0 || err == ECONNREFUSED) return answer();
            // Unreachable and the like: not back yet; dial again next time.
            ::close(fd_);
            fd_ = -1;
            ++misses_;
            return waiting;
        }
        if (now_ns - at_ < kProbeEveryNs) return waiting;
        ::close(fd_);  // its SYN went into the outage: a fresh one
        fd_ = -1;
        ++misses_;
    }
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return waiting;
    at_ = now_ns;
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) == 0 ||
        errno == ECONNREFUSED) {
        ::close(fd);
        return answer();
    }
    if (errno != EINPROGRESS) {
        ::close(fd);
        ++misses_;
        return waiting;
    }
    fd_ = fd;
    return waiting;
}

}  // namespace wanmpi::wanlink
