#include "wanlink/stall.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace wanmpi::wanlink {

void PathProbe::stop() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

bool PathProbe::answered(const sockaddr_in& to, int64_t now_ns) {
    if (fd_ >= 0) {
        pollfd pf{fd_, POLLOUT, 0};
        if (::poll(&pf, 1, 0) > 0) {
            int err = 0;
            socklen_t len = sizeof err;
            getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
            stop();
            // Unreachable and the like: not back yet; the next call dials again.
            return err == 0 || err == ECONNREFUSED;
        }
        if (now_ns - at_ < kProbeEveryNs) return false;
        stop();  // its SYN went into the outage: a fresh one
    }
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    at_ = now_ns;
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) == 0 ||
        errno == ECONNREFUSED) {
        ::close(fd);
        return true;
    }
    if (errno != EINPROGRESS) {
        ::close(fd);
        return false;
    }
    fd_ = fd;
    return false;
}

}  // namespace wanmpi::wanlink
