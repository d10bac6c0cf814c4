// wanemu-bulk: a small TCP/UDP traffic tool for measuring emulated links (iperf3 is not
// available here). The receiver measures, so results do not include data still sitting in the
// sender's socket buffer.
//
//   wanemu-bulk server [-p PORT] [--once]          TCP on PORT (control + bulk), UDP on PORT
//   wanemu-bulk send HOST[:PORT] [-t 3s] [--warmup 0.5s] [--cc bbr|cubic|reno] [--pace RATE]
//   wanemu-bulk udp HOST[:PORT] -n COUNT [--size 200] [--rate 20mbit]
//   wanemu-bulk probe HOST[:PORT] [--timeout 2s]   exit 0 if a TCP connection opens
//
// Control protocol (one TCP connection per request, first line from the client):
//   "BULK <warmup_ns>\n" then bulk data until the client shuts down its side; the server
//       answers "bytes=B secs=S mbit=M steady_mbit=W\n" (steady = after the warm-up).
//   "UDP\n" -> "ready\n"; the client sends datagrams (8-byte sequence number first), then
//       "done\n"; the server drains its UDP socket and answers "received=R overflow=O\n".
//       Datagrams sent before "done" have left the link by the time "done" arrives (one
//       FIFO per direction), so R is final.
//   "PROBE\n" -> "ok\n".
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common.hpp"

using namespace wanmpi::wanemu;

namespace {

constexpr int k_default_port = 5201;

[[noreturn]] void die(const std::string& msg) {
    std::fprintf(stderr, "wanemu-bulk: %s\n", msg.c_str());
    std::exit(1);
}

sockaddr_in resolve(const std::string& hostport) {
    std::string host = hostport;
    int port = k_default_port;
    if (size_t c = hostport.rfind(':'); c != std::string::npos) {
        host = hostport.substr(0, c);
        port = std::atoi(hostport.c_str() + c + 1);
    }
    addrinfo hints{};
    hints.ai_family = AF_INET;
    addrinfo* res = nullptr;
    int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
    if (rc != 0 || !res) {
        die("cannot resolve " + host + ": " + gai_strerror(rc));
    }
    sockaddr_in sa = *reinterpret_cast<sockaddr_in*>(res->ai_addr);
    ::freeaddrinfo(res);
    sa.sin_port = htons(uint16_t(port));
    return sa;
}

std::string addr_str(const sockaddr_in& sa) {
    char buf[64];
    ::inet_ntop(AF_INET, &sa.sin_addr, buf, sizeof buf);
    return std::string(buf) + ":" + std::to_string(ntohs(sa.sin_port));
}

// Connects with a timeout; returns -1 and sets err on failure.
int connect_to(const sockaddr_in& sa, int timeout_ms, std::string& err) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        err = std::strerror(errno);
        return -1;
    }
    int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa);
    if (rc != 0 && errno != EINPROGRESS) {
        err = std::strerror(errno);
        ::close(fd);
        return -1;
    }
    if (rc != 0) {
        pollfd p{fd, POLLOUT, 0};
        int n = ::poll(&p, 1, timeout_ms);
        if (n <= 0) {
            err = "timed out";
            ::close(fd);
            return -1;
        }
        int soerr = 0;
        socklen_t len = sizeof soerr;
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len);
        if (soerr != 0) {
            err = std::strerror(soerr);
            ::close(fd);
            return -1;
        }
    }
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

bool write_all(int fd, const std::string& s) {
    size_t off = 0;
    while (off < s.size()) {
        ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        off += size_t(n);
    }
    return true;
}

// Reads one line (without '\n') within timeout_ms; false on EOF/timeout.
bool read_line(int fd, std::string& line, int timeout_ms) {
    line.clear();
    int64_t deadline = now_ns() + int64_t(timeout_ms) * k_ms;
    char c;
    while (true) {
        int64_t left = (deadline - now_ns()) / k_ms;
        pollfd p{fd, POLLIN, 0};
        if (left <= 0 || ::poll(&p, 1, int(left)) <= 0) {
            return false;
        }
        ssize_t n = ::read(fd, &c, 1);
        if (n <= 0) {
            return false;
        }
        if (c == '\n') {
            return true;
        }
        line += c;
        if (line.size() > 4096) {
            return false;
        }
    }
}

int64_t dur_arg(const std::string& opt, const std::string& v) {
    auto d =
        parse_duration_ns(v.find_first_not_of("0123456789.") == std::string::npos ? v + "s" : v);
    if (!d || *d < 0) {
        die("bad " + opt + " '" + v + "'");
    }
    return *d;
}

// --- server ---------------------------------------------------------------------------------

void serve_bulk(int c, int64_t warmup) {
    std::vector<char> buf(1 << 18);
    uint64_t total = 0, steady = 0;
    int64_t first = 0, last = 0;
    while (true) {
        ssize_t n = ::read(c, buf.data(), buf.size());
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        int64_t t = now_ns();
        if (first == 0) {
            first = t;
        }
        last = t;
        total += uint64_t(n);
        if (t - first >= warmup) {
            steady += uint64_t(n);
        }
    }
    double secs = double(last - first) / 1e9;
    double ssecs = double(last - first - warmup) / 1e9;
    char out[256];
    std::snprintf(out, sizeof out, "bytes=%" PRIu64 " secs=%.4f mbit=%.3f steady_mbit=%.3f\n",
                  total, secs, secs > 0 ? double(total) * 8 / secs / 1e6 : 0,
                  ssecs > 0 ? double(steady) * 8 / ssecs / 1e6 : 0);
    write_all(c, out);
}

uint64_t drain_udp(int u, uint64_t& overflow) {
    char buf[65536];
    char cbuf[CMSG_SPACE(sizeof(uint32_t))];
    uint64_t n = 0;
    while (true) {
        iovec iov{buf, sizeof buf};
        msghdr mh{};
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        mh.msg_control = cbuf;
        mh.msg_controllen = sizeof cbuf;
        ssize_t r = ::recvmsg(u, &mh, MSG_DONTWAIT);
        if (r < 0) {
            break;
        }
        ++n;
        for (cmsghdr* cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
            if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SO_RXQ_OVFL) {
                uint32_t v;
                std::memcpy(&v, CMSG_DATA(cm), sizeof v);
                overflow = v;
            }
        }
    }
    return n;
}

void serve_udp(int c, int u) {
    uint64_t overflow = 0;
    drain_udp(u, overflow);  // discard leftovers of an earlier test
    uint64_t base_overflow = overflow;
    uint64_t received = 0;
    if (!write_all(c, "ready\n")) {
        return;
    }
    std::string line;
    while (true) {
        pollfd p[2] = {{c, POLLIN, 0}, {u, POLLIN, 0}};
        if (::poll(p, 2, 60000) <= 0) {
            return;
        }
        if (p[1].revents & POLLIN) {
            received += drain_udp(u, overflow);
        }
        if (p[0].revents & (POLLIN | POLLHUP)) {
            if (!read_line(c, line, 1000) || line != "done") {
                return;
            }
            received += drain_udp(u, overflow);
            char out[128];
            std::snprintf(out, sizeof out, "received=%" PRIu64 " overflow=%" PRIu64 "\n", received,
                          overflow - base_overflow);
            write_all(c, out);
            return;
        }
    }
}

int cmd_server(const std::vector<std::string>& a) {
    int port = k_default_port;
    bool once = false;
    for (size_t i = 0; i < a.size(); ++i) {
        if ((a[i] == "-p" || a[i] == "--port") && i + 1 < a.size()) {
            port = std::atoi(a[++i].c_str());
        } else if (a[i] == "--once") {
            once = true;
        } else {
            die("unknown server option '" + a[i] + "'");
        }
    }
    int l = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    ::setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(uint16_t(port));
    if (::bind(l, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || ::listen(l, 16) != 0) {
        die("cannot listen on port " + std::to_string(port) + ": " + std::strerror(errno));
    }
    int u = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (::bind(u, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
        die("cannot bind UDP port " + std::to_string(port) + ": " + std::strerror(errno));
    }
    int rcvbuf = 8 << 20;
    ::setsockopt(u, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf);
    ::setsockopt(u, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof one);
    std::printf("listening on port %d\n", port);
    std::fflush(stdout);
    while (true) {
        int c = ::accept4(l, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) {
            if (errno == EINTR) {
                continue;
            }
            die(std::string("accept: ") + std::strerror(errno));
        }
        std::string line;
        if (read_line(c, line, 10000)) {
            auto w = split_ws(line);
            if (!w.empty() && w[0] == "BULK") {
                serve_bulk(c, w.size() > 1 ? std::atoll(w[1].c_str()) : 0);
            } else if (!w.empty() && w[0] == "UDP") {
                serve_udp(c, u);
            } else if (!w.empty() && w[0] == "PROBE") {
                write_all(c, "ok\n");
            }
        }
        ::close(c);
        if (once) {
            return 0;
        }
    }
}

// --- clients --------------------------------------------------------------------------------

int cmd_send(const std::vector<std::string>& a) {
    if (a.empty()) {
        die("usage: wanemu-bulk send HOST[:PORT] [-t 3s] [--warmup 0.5s] [--cc NAME] "
            "[--pace RATE]");
    }
    int64_t dur = 3000 * k_ms, warmup = 500 * k_ms;
    std::string cc;
    double pace = 0;
    for (size_t i = 1; i < a.size(); ++i) {
        if ((a[i] == "-t" || a[i] == "--time") && i + 1 < a.size()) {
            dur = dur_arg(a[i], a[i + 1]);
            ++i;
        } else if (a[i] == "--warmup" && i + 1 < a.size()) {
            warmup = dur_arg(a[i], a[i + 1]);
            ++i;
        } else if (a[i] == "--cc" && i + 1 < a.size()) {
            cc = a[++i];
        } else if (a[i] == "--pace" && i + 1 < a.size()) {
            auto r = parse_rate_bps(a[++i]);
            if (!r) {
                die("bad --pace");
            }
            pace = *r;
        } else {
            die("unknown send option '" + a[i] + "'");
        }
    }
    if (warmup >= dur) {
        die("--warmup must be shorter than -t");
    }
    sockaddr_in sa = resolve(a[0]);
    std::string err;
    int fd = connect_to(sa, 5000, err);
    if (fd < 0) {
        die("connect to " + addr_str(sa) + ": " + err);
    }
    if (!cc.empty() &&
        ::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc.c_str(), socklen_t(cc.size())) != 0) {
        die("TCP_CONGESTION " + cc + ": " + std::strerror(errno));
    }
    if (pace > 0) {
        uint64_t bytes_per_s = uint64_t(pace / 8);
        ::setsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, &bytes_per_s, sizeof bytes_per_s);
    }
    if (!write_all(fd, "BULK " + std::to_string(warmup) + "\n")) {
        die("send failed");
    }
    std::vector<char> buf(1 << 17, 'x');
    int64_t end = now_ns() + dur;
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    while (true) {
        int64_t left = end - now_ns();
        if (left <= 0) {
            break;
        }
        pollfd p{fd, POLLOUT, 0};
        int n = ::poll(&p, 1, int(std::max<int64_t>(1, left / k_ms)));
        if (n > 0) {
            ssize_t w = ::send(fd, buf.data(), buf.size(), MSG_NOSIGNAL);
            if (w < 0 && errno != EAGAIN && errno != EINTR) {
                die(std::string("send: ") + std::strerror(errno));
            }
        }
    }
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    ::shutdown(fd, SHUT_WR);
    std::string line;
    if (!read_line(fd, line, 60000)) {
        die("no result from the server");
    }
    std::printf("RESULT %s\n", line.c_str());
    return 0;
}

int cmd_udp(const std::vector<std::string>& a) {
    if (a.empty()) {
        die("usage: wanemu-bulk udp HOST[:PORT] -n COUNT [--size 200] [--rate 20mbit]");
    }
    uint64_t count = 10000;
    int size = 200;
    double rate = 20e6;
    for (size_t i = 1; i < a.size(); ++i) {
        if (a[i] == "-n" && i + 1 < a.size()) {
            count = std::strtoull(a[++i].c_str(), nullptr, 10);
        } else if (a[i] == "--size" && i + 1 < a.size()) {
            size = std::atoi(a[++i].c_str());
        } else if (a[i] == "--rate" && i + 1 < a.size()) {
            auto r = parse_rate_bps(a[++i]);
            if (!r || *r <= 0) {
                die("bad --rate");
            }
            rate = *r;
        } else {
            die("unknown udp option '" + a[i] + "'");
        }
    }
    if (size < 8 || size > 60000 || count == 0) {
        die("need --size 8..60000 and -n > 0");
    }
    sockaddr_in sa = resolve(a[0]);
    std::string err;
    int fd = connect_to(sa, 5000, err);
    if (fd < 0) {
        die("connect to " + addr_str(sa) + ": " + err);
    }
    std::string line;
    if (!write_all(fd, "UDP\n") || !read_line(fd, line, 10000) || line != "ready") {
        die("server did not accept the UDP test");
    }
    int u = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (::connect(u, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
        die(std::string("udp connect: ") + std::strerror(errno));
    }
    std::vector<char> buf(size_t(size), 0);
    // Pace in 1 ms steps: datagrams (IP size = size + 28) at `rate`.
    double per_ms = rate / 8.0 / double(size + 28) / 1000.0;
    int64_t start = now_ns();
    uint64_t sent = 0, send_errors = 0;
    while (sent < count) {
        int64_t el = now_ns() - start;
        uint64_t due = std::min<uint64_t>(count, uint64_t(double(el / k_ms + 1) * per_ms) + 1);
        while (sent < due) {
            uint64_t seq = sent;
            std::memcpy(buf.data(), &seq, sizeof seq);
            if (::send(u, buf.data(), buf.size(), 0) < 0) {
                ++send_errors;
            }
            ++sent;
        }
        timespec ts{0, 200000};
        ::nanosleep(&ts, nullptr);
    }
    double secs = double(now_ns() - start) / 1e9;
    if (!write_all(fd, "done\n") || !read_line(fd, line, 30000)) {
        die("no UDP result from the server");
    }
    uint64_t received = 0, overflow = 0;
    std::sscanf(line.c_str(), "received=%" SCNu64 " overflow=%" SCNu64, &received, &overflow);
    uint64_t ok_sent = sent - send_errors;
    std::printf("RESULT sent=%" PRIu64 " send_errors=%" PRIu64 " received=%" PRIu64
                " overflow=%" PRIu64 " loss=%.6f secs=%.3f\n",
                ok_sent, send_errors, received, overflow,
                ok_sent ? 1.0 - double(received) / double(ok_sent) : 0.0, secs);
    return 0;
}

int cmd_probe(const std::vector<std::string>& a) {
    if (a.empty()) {
        die("usage: wanemu-bulk probe HOST[:PORT] [--timeout 2s]");
    }
    int64_t timeout = 2000 * k_ms;
    for (size_t i = 1; i < a.size(); ++i) {
        if (a[i] == "--timeout" && i + 1 < a.size()) {
            timeout = dur_arg(a[i], a[i + 1]);
            ++i;
        } else {
            die("unknown probe option '" + a[i] + "'");
        }
    }
    sockaddr_in sa = resolve(a[0]);
    std::string err;
    int fd = connect_to(sa, int(timeout / k_ms), err);
    if (fd < 0) {
        std::printf("FAIL connect to %s: %s\n", addr_str(sa).c_str(), err.c_str());
        return 1;
    }
    std::string line;
    if (!write_all(fd, "PROBE\n") || !read_line(fd, line, int(timeout / k_ms)) || line != "ok") {
        std::printf("FAIL %s: no answer\n", addr_str(sa).c_str());
        return 1;
    }
    std::printf("OK connected to %s\n", addr_str(sa).c_str());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    ::signal(SIGPIPE, SIG_IGN);
    std::vector<std::string> a(argv + 1, argv + argc);
    if (a.empty()) {
        std::fprintf(stderr,
                     "usage: wanemu-bulk server [-p PORT] [--once]\n"
                     "       wanemu-bulk send HOST[:PORT] [-t 3s] [--warmup 0.5s] [--cc NAME] "
                     "[--pace RATE]\n"
                     "       wanemu-bulk udp HOST[:PORT] -n COUNT [--size 200] [--rate 20mbit]\n"
                     "       wanemu-bulk probe HOST[:PORT] [--timeout 2s]\n");
        return 2;
    }
    std::string cmd = a[0];
    a.erase(a.begin());
    try {
        if (cmd == "server") {
            return cmd_server(a);
        }
        if (cmd == "send") {
            return cmd_send(a);
        }
        if (cmd == "udp") {
            return cmd_udp(a);
        }
        if (cmd == "probe") {
            return cmd_probe(a);
        }
    } catch (const std::exception& e) {
        die(e.what());
    }
    die("unknown command '" + cmd + "'");
}
