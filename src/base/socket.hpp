// Small POSIX socket helpers shared by transports, the runtime and tools.
// No global state; every function is thread-safe. Errors are returned as text that names the
// operation, the address and errno ("connect to 10.1.0.2:7000: Connection refused").
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <sys/types.h>
#include <sys/uio.h>

namespace wanmpi::base {

// Owning file descriptor (move-only).
class Fd {
public:
    Fd() = default;
    explicit Fd(int fd) : fd_(fd) {}
    Fd(Fd&& o) noexcept : fd_(o.release()) {}
    Fd& operator=(Fd&& o) noexcept {
        if (this != &o) { reset(o.release()); }
        return *this;
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd() { reset(); }
    int get() const { return fd_; }
    explicit operator bool() const { return fd_ >= 0; }
    int release() { int f = fd_; fd_ = -1; return f; }
    void reset(int fd = -1);

private:
    int fd_ = -1;
};

struct HostPort {
    std::string host;
    uint16_t port = 0;
};
// "a.b.c.d:port", "[v6]:port", "name:port". nullopt if malformed.
std::optional<HostPort> parse_host_port(const std::string& s);

bool set_nonblock(int fd, bool on);
bool set_cloexec(int fd);
void set_nodelay(int fd);

// Listen on bind_host (empty = any IPv4) and port (0 = ephemeral). Returns fd or -1 with *err set.
int tcp_listen(const std::string& bind_host, uint16_t port, int backlog, std::string* err);
// Listen on the first free port in [lo, hi]. Returns fd or -1.
int tcp_listen_range(const std::string& bind_host, uint16_t lo, uint16_t hi, int backlog,
                     std::string* err);
// Blocking connect with a timeout (milliseconds, <=0: none). Returns a blocking fd or -1.
int tcp_connect(const std::string& host, uint16_t port, int timeout_ms, std::string* err);
uint16_t local_port(int fd);
std::string local_ip(int fd);
std::string peer_text(int fd);  // "a.b.c.d:port" of the remote end
// writev(2) on a socket without SIGPIPE: a peer that vanished (a relay killed mid-job) gives
// EPIPE instead of killing the process.
ssize_t send_iov(int fd, const iovec* iov, int n);

// Loop over partial reads/writes and EINTR on a blocking fd. read_full returns bytes read
// (< n only at EOF) or -1; write_full returns n or -1.
ssize_t read_full(int fd, void* buf, size_t n);
ssize_t write_full(int fd, const void* buf, size_t n);

// The IPv4 address this host would use to reach the outside (first non-loopback interface that is
// up), or "127.0.0.1" when there is none. `network` ("10.1.0.0/16" or "eth1") picks an interface.
std::string primary_ipv4(const std::string& network = "");

}  // namespace wanmpi::base
