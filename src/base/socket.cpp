#include "base/socket.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/log.hpp"

namespace wanmpi::base {

void Fd::reset(int fd) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
}

std::optional<HostPort> parse_host_port(const std::string& s) {
    HostPort hp;
    std::string port;
    if (!s.empty() && s[0] == '[') {
        auto e = s.find(']');
        if (e == std::string::npos || e + 1 >= s.size() || s[e + 1] != ':') return std::nullopt;
        hp.host = s.substr(1, e - 1);
        port = s.substr(e + 2);
    } else {
        auto c = s.rfind(':');
        if (c == std::string::npos) return std::nullopt;
        hp.host = s.substr(0, c);
        port = s.substr(c + 1);
    }
    if (hp.host.empty() || port.empty() || port.size() > 5) return std::nullopt;
    unsigned long v = 0;
    for (char ch : port) {
        if (ch < '0' || ch > '9') return std::nullopt;
        v = v * 10 + (ch - '0');
    }
    if (v == 0 || v > 65535) return std::nullopt;
    hp.port = static_cast<uint16_t>(v);
    return hp;
}

bool set_nonblock(int fd, bool on) {
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0) return false;
    fl = on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK);
    return fcntl(fd, F_SETFL, fl) == 0;
}

bool set_cloexec(int fd) {
    int fl = fcntl(fd, F_GETFD);
    return fl >= 0 && fcntl(fd, F_SETFD, fl | FD_CLOEXEC) == 0;
}

void set_nodelay(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static bool resolve4(const std::string& host, in_addr* out, std::string* err) {
    if (host.empty() || host == "*" || host == "0.0.0.0") {
        out->s_addr = htonl(INADDR_ANY);
        return true;
    }
    if (inet_pton(AF_INET, host.c_str(), out) == 1) return true;
    addrinfo hints{}, *res = nullptr;
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
    if (rc != 0 || !res) {
        if (err) *err = "cannot resolve '" + host + "': " + gai_strerror(rc);
        return false;
    }
    *out = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr;
    freeaddrinfo(res);
    return true;
}

int tcp_listen(const std::string& bind_host, uint16_t port, int backlog, std::string* err) {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    if (!resolve4(bind_host, &sa.sin_addr, err)) return -1;
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        if (err) *err = "socket: " + errno_text(errno);
        return -1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || ::listen(fd, backlog) != 0) {
        int e = errno;
        if (err)
            *err = "listen on " + (bind_host.empty() ? std::string("*") : bind_host) + ":" +
                   std::to_string(port) + ": " + errno_text(e);
        ::close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int tcp_listen_range(const std::string& bind_host, uint16_t lo, uint16_t hi, int backlog,
                     std::string* err) {
    for (uint32_t p = lo; p <= hi; ++p) {
        int fd = tcp_listen(bind_host, static_cast<uint16_t>(p), backlog, err);
        if (fd >= 0) return fd;
        if (errno != EADDRINUSE) return -1;
    }
    if (err) *err = "no free port in " + std::to_string(lo) + ":" + std::to_string(hi);
    return -1;
}

int tcp_connect(const std::string& host, uint16_t port, int timeout_ms, std::string* err) {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    if (!resolve4(host, &sa.sin_addr, err)) return -1;
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        if (err) *err = "socket: " + errno_text(errno);
        return -1;
    }
    auto fail = [&](int e) {
        if (err) *err = "connect to " + host + ":" + std::to_string(port) + ": " + errno_text(e);
        ::close(fd);
        errno = e;
        return -1;
    };
    if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
        if (errno != EINPROGRESS) return fail(errno);
        pollfd p{fd, POLLOUT, 0};
        int rc;
        do rc = ::poll(&p, 1, timeout_ms > 0 ? timeout_ms : -1);
        while (rc < 0 && errno == EINTR);
        if (rc == 0) return fail(ETIMEDOUT);
        int e = 0;
        socklen_t l = sizeof e;
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &l);
        if (e) return fail(e);
    }
    set_nonblock(fd, false);
    return fd;
}

uint16_t local_port(int fd) {
    sockaddr_in sa{};
    socklen_t l = sizeof sa;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &l) != 0) return 0;
    return ntohs(sa.sin_port);
}

std::string local_ip(int fd) {
    sockaddr_in sa{};
    socklen_t l = sizeof sa;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &l) != 0) return "";
    char b[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &sa.sin_addr, b, sizeof b);
    return b;
}

std::string peer_text(int fd) {
    sockaddr_in sa{};
    socklen_t l = sizeof sa;
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&sa), &l) != 0) return "?";
    char b[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &sa.sin_addr, b, sizeof b);
    return std::string(b) + ":" + std::to_string(ntohs(sa.sin_port));
}

ssize_t read_full(int fd, void* buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = ::read(fd, static_cast<char*>(buf) + got, n - got);
        if (r < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (r == 0) break;
        got += static_cast<size_t>(r);
    }
    return static_cast<ssize_t>(got);
}

ssize_t write_full(int fd, const void* buf, size_t n) {
    size_t put = 0;
    while (put < n) {
        ssize_t r = ::send(fd, static_cast<const char*>(buf) + put, n - put, MSG_NOSIGNAL);
        if (r < 0 && errno == ENOTSOCK) r = ::write(fd, static_cast<const char*>(buf) + put, n - put);
        if (r < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        put += static_cast<size_t>(r);
    }
    return static_cast<ssize_t>(n);
}

static bool in_network(const in_addr& a, const std::string& net) {
    auto slash = net.find('/');
    if (slash == std::string::npos) return false;
    in_addr n{};
    if (inet_pton(AF_INET, net.substr(0, slash).c_str(), &n) != 1) return false;
    int bits = std::atoi(net.c_str() + slash + 1);
    if (bits < 0 || bits > 32) return false;
    uint32_t mask = bits == 0 ? 0 : htonl(~uint32_t(0) << (32 - bits));
    return (a.s_addr & mask) == (n.s_addr & mask);
}

std::string primary_ipv4(const std::string& network) {
    ifaddrs* ifs = nullptr;
    if (getifaddrs(&ifs) != 0) return "127.0.0.1";
    std::string best;
    for (ifaddrs* i = ifs; i; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
        if (!(i->ifa_flags & IFF_UP)) continue;
        auto a = reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr;
        char b[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &a, b, sizeof b);
        if (!network.empty()) {
            if (network == i->ifa_name || in_network(a, network)) {
                best = b;
                break;
            }
            continue;
        }
        if (i->ifa_flags & IFF_LOOPBACK) continue;
        if (best.empty()) best = b;
    }
    freeifaddrs(ifs);
    return best.empty() ? "127.0.0.1" : best;
}

ssize_t send_iov(int fd, const iovec* iov, int n) {
    msghdr m{};
    m.msg_iov = const_cast<iovec*>(iov);
    m.msg_iovlen = size_t(n);
    return ::sendmsg(fd, &m, MSG_NOSIGNAL);
}

}  // namespace wanmpi::base
