#include "runtime/impi_resume.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sstream>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.hpp"
#include "base/codec.hpp"
#include "base/log.hpp"
#include "base/socket.hpp"
#include "runtime/impi_wire.hpp"
#include "wanlink/handshake.hpp"

namespace wanmpi::impi {

using base::Errc;
using base::get_be32;
using base::put_be32;
using base::Status;

std::vector<uint8_t> encode_back(const BackMsg& b) {
    std::vector<uint8_t> p(kBackLen);
    put_be32(p.data(), b.client);
    put_be32(p.data() + 4, b.fini ? 1 : 0);
    std::memcpy(p.data() + 8, b.session.data(), 32);
    return p;
}

std::string decode_back(const uint8_t* p, size_t n, BackMsg* b) {
    if (n != kBackLen) return "BACK of " + std::to_string(n) + " bytes (expected 40)";
    uint32_t client = get_be32(p), fini = get_be32(p + 4);
    if (client > 31) return "BACK for client " + std::to_string(client) + " (out of 0..31)";
    if (fini > 1) return "BACK with a bad FINI flag";
    b->client = client;
    b->fini = fini == 1;
    std::memcpy(b->session.data(), p + 8, 32);
    return "";
}

std::vector<uint8_t> encode_trunk_back(const BackMsg& b, uint32_t index) {
    std::vector<uint8_t> p = encode_back(b);
    p.resize(kTrunkBackLen);
    put_be32(p.data() + kBackLen, index);
    return p;
}

std::string decode_trunk_back(const uint8_t* p, size_t n, BackMsg* b, uint32_t* index) {
    if (n != kTrunkBackLen) return "TBCK of " + std::to_string(n) + " bytes (expected 44)";
    std::string err = decode_back(p, kBackLen, b);
    if (!err.empty()) return "TBCK: " + err;
    uint32_t i = get_be32(p + kBackLen);
    if (b->fini) return "TBCK with FINI (a trunk member never carries it)";
    if (i < 1 || i > 63) return "TBCK from trunk " + std::to_string(i) + " (out of 1..63)";
    *index = i;
    return "";
}

namespace {

int64_t now_ms() { return base::now_ns() / 1000000; }

// Blocking I/O on a socket that may be nonblocking, bounded by `deadline`.
Status io_all(int fd, bool out, uint8_t* p, size_t n, int64_t deadline, const std::string& what) {
    size_t done = 0;
    while (done < n) {
        ssize_t r = out ? ::send(fd, p + done, n - done, MSG_NOSIGNAL | MSG_DONTWAIT)
                        : ::recv(fd, p + done, n - done, MSG_DONTWAIT);
        if (r > 0) {
            done += size_t(r);
            continue;
        }
        if (r == 0) return Status(Errc::peer_failed, "closed the connection " + what);
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return Status(Errc::peer_failed, base::errno_text(errno) + " " + what, errno);
        int64_t left = deadline - now_ms();
        if (left <= 0) return Status(Errc::io_error, "did not answer in time " + what);
        pollfd pf{fd, short(out ? POLLOUT : POLLIN), 0};
        (void)::poll(&pf, 1, int(left));
    }
    return Status::OK();
}

std::string hex(const uint8_t* p, size_t n) {
    static const char* d = "0123456789abcdef";
    std::string s;
    for (size_t i = 0; i < n; ++i) {
        s += d[p[i] >> 4];
        s += d[p[i] & 15];
    }
    return s;
}

bool unhex(const std::string& s, uint8_t* p, size_t n) {
    if (s.size() != 2 * n) return false;
    auto v = [](char c) {
        return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    };
    for (size_t i = 0; i < n; ++i) {
        int a = v(s[2 * i]), b = v(s[2 * i + 1]);
        if (a < 0 || b < 0) return false;
        p[i] = uint8_t(a << 4 | b);
    }
    return true;
}

// The state file's MAC: keyed with the job's link key, so it verifies only with the job's
// secret and the session nonce the file names.
wanlink::Key state_mac(const wanlink::Secret& secret, const uint8_t session[32],
                       const std::string& body) {
    wanlink::Key k = wanlink::link_key(secret, session);
    static const char tag[] = "wanmpi-relay-state";
    return wanlink::hmac(k.data(), k.size(), {{tag, sizeof tag - 1}, {body.data(), body.size()}});
}

}  // namespace

Status resume_client(int fd, const wanlink::Secret& secret, const BackMsg& back,
                     int64_t deadline, const std::string& peer, uint32_t trunk_index) {
    auto fail = [&](Errc e, const std::string& m) { return Status(e, peer + " " + m); };
    uint8_t m[12];
    encode_cmd(CmdHeader{CMD_AUTH, 4}, m);
    put_be32(m + 8, 1u << wanlink::kAuthHmac);
    Status s = io_all(fd, true, m, 12, deadline, "while the relay came back (AUTH)");
    uint8_t ch[8 + wanlink::kAuthChallengeLen];
    if (s.ok()) s = io_all(fd, false, ch, 8, deadline, "after AUTH");
    if (!s.ok()) return fail(s.code(), s.message());
    if (get_be32(ch) != wanlink::kAuthHmac || get_be32(ch + 4) != wanlink::kAuthChallengeLen)
        return fail(Errc::proto_error, "did not choose wanmpi's authentication method");
    if (!(s = io_all(fd, false, ch + 8, wanlink::kAuthChallengeLen, deadline, "in AUTH")).ok())
        return fail(s.code(), s.message());
    const uint8_t* ns = ch + 8;
    const uint8_t* sess = ch + 8 + 32;
    if (!wanlink::equal_mac(sess, back.session.data()))
        return fail(Errc::invalid, "runs another job (its session nonce is not this job's): "
                                   "the state is from an earlier job");
    uint8_t resp[wanlink::kAuthResponse];
    wanlink::random_bytes(resp, 32);
    wanlink::Key mc = wanlink::auth_client_mac(secret, ns, resp, sess);
    std::memcpy(resp + 32, mc.data(), 32);
    uint8_t verdict[wanlink::kAuthVerdict];
    s = io_all(fd, true, resp, sizeof resp, deadline, "in AUTH");
    if (s.ok()) s = io_all(fd, false, verdict, sizeof verdict, deadline, "after AUTH");
    if (!s.ok() || get_be32(verdict) != 0)
        return fail(Errc::link_failed, "refused this job secret (" + secret.source + ")");
    wanlink::Key ms = wanlink::auth_server_mac(secret, ns, resp, sess);
    if (!wanlink::equal_mac(ms.data(), verdict + 4))
        return fail(Errc::link_failed, "could not prove that it holds the job secret");
    const uint32_t cmd = trunk_index ? uint32_t(CMD_TBCK) : uint32_t(CMD_BACK);
    std::vector<uint8_t> b = trunk_index ? encode_trunk_back(back, trunk_index) : encode_back(back);
    std::vector<uint8_t> msg(kCmdHeader + b.size());
    encode_cmd(CmdHeader{cmd, int32_t(b.size())}, msg.data());
    std::memcpy(msg.data() + kCmdHeader, b.data(), b.size());
    uint8_t h[kCmdHeader + 4];
    s = io_all(fd, true, msg.data(), msg.size(), deadline, "in BACK");
    if (s.ok()) s = io_all(fd, false, h, sizeof h, deadline, "after BACK");
    if (!s.ok()) return fail(s.code(), s.message());
    CmdHeader ah = decode_cmd(h);
    if (ah.cmd != cmd || ah.len < 4 || ah.len > 4096)
        return fail(Errc::proto_error, "answered BACK with something else");
    std::string why(size_t(ah.len - 4), '\0');
    if (!why.empty() &&
        !(s = io_all(fd, false, reinterpret_cast<uint8_t*>(why.data()), why.size(), deadline,
                     "after BACK")).ok())
        return fail(s.code(), s.message());
    if (get_be32(h + kCmdHeader) != 0) return fail(Errc::invalid, "refused: " + why);
    return Status::OK();
}

std::string encode_relay_state(const RelayState& s, const wanlink::Secret& secret) {
    std::ostringstream o;
    o << "wanmpi-relay-state 1\n"
      << "server " << s.server << "\n"
      << "client " << s.client << "\n"
      << "public " << s.pub << "\n"
      << "private " << s.priv << "\n"
      << "port " << s.port << "\n"
      << "trunk " << s.trunks << ' ' << s.index << "\n"
      << "flags " << unsigned(s.flags) << "\n"
      << "session " << hex(s.session.data(), 32) << "\n"
      << "ports";
    for (uint32_t p : s.ports) o << ' ' << p;
    o << "\nout " << s.out << "\nin " << s.in << "\n";
    std::string body = o.str();
    wanlink::Key mac = state_mac(secret, s.session.data(), body);
    return body + "mac " + hex(mac.data(), mac.size()) + "\n";
}

std::string decode_relay_state(const std::string& text, const wanlink::Secret& secret,
                               RelayState* out) {
    size_t at = text.rfind("mac ");
    if (text.rfind("wanmpi-relay-state 1\n", 0) != 0) return "not an impi-relay state file (version 1)";
    if (at == std::string::npos || (at > 0 && text[at - 1] != '\n'))
        return "no MAC line (truncated?)";
    std::string body = text.substr(0, at);
    std::string mac_hex = text.substr(at + 4);
    if (!mac_hex.empty() && mac_hex.back() == '\n') mac_hex.pop_back();
    RelayState s;
    std::istringstream in(body);
    std::string line;
    std::getline(in, line);
    // "trunk" (the last key) is optional: files written before trunks could be restarted have
    // none and mean "trunk 1 0".
    constexpr int kKeys = 11;
    bool seen[kKeys] = {};
    const char* keys[kKeys] = {"server", "client", "public", "private", "port", "flags",
                               "session", "ports", "out",   "in",      "trunk"};
    while (std::getline(in, line)) {
        size_t sp = line.find(' ');
        std::string k = line.substr(0, sp), v = sp == std::string::npos ? "" : line.substr(sp + 1);
        int i = 0;
        while (i < kKeys && k != keys[i]) ++i;
        if (i == kKeys) return "unknown line '" + k + "'";
        if (seen[i]) return "'" + k + "' twice";
        seen[i] = true;
        auto num = [&](uint64_t max, uint64_t* x) {
            char* e = nullptr;
            errno = 0;
            unsigned long long n = std::strtoull(v.c_str(), &e, 10);
            if (v.empty() || *e || errno || n > max) return false;
            *x = n;
            return true;
        };
        uint64_t n = 0;
        switch (i) {
        case 0: s.server = v; break;
        case 1: if (!num(31, &n)) return "bad client"; s.client = int(n); break;
        case 2: s.pub = v; break;
        case 3: s.priv = v; break;
        case 4: if (!num(65535, &n)) return "bad port"; s.port = uint32_t(n); break;
        case 5: if (!num(255, &n)) return "bad flags"; s.flags = uint8_t(n); break;
        case 6: if (!unhex(v, s.session.data(), 32)) return "bad session"; break;
        case 7: {
            std::istringstream ps(v);
            std::string w;
            while (ps >> w) {
                v = w;
                if (!num(65535, &n) || n == 0) return "bad data port '" + w + "'";
                s.ports.push_back(uint32_t(n));
            }
            break;
        }
        case 8: s.out = v; break;
        case 9: s.in = v; break;
        case 10: {
            size_t b = v.find(' ');
            std::string tv = v;
            v = tv.substr(0, b);
            if (b == std::string::npos || !num(64, &n) || n < 1) return "bad trunk count";
            s.trunks = int(n);
            v = tv.substr(b + 1);
            if (!num(63, &n) || int(n) >= s.trunks) return "bad trunk index";
            s.index = int(n);
            break;
        }
        }
    }
    for (int i = 0; i < kKeys - 1; ++i)
        if (!seen[i]) return std::string("no '") + keys[i] + "' line";
    // A member has no control port; the primary's is the agent's address.
    if ((s.port == 0) != (s.index > 0)) return "bad port";
    if (!base::parse_host_port(s.server)) return "bad server address";
    uint8_t mac[32];
    if (!unhex(mac_hex, mac, 32)) return "bad MAC line";
    wanlink::Key want = state_mac(secret, s.session.data(), body);
    if (!wanlink::equal_mac(want.data(), mac))
        return "its MAC does not verify with this job secret (" + secret.source +
               "): written with another secret, or edited";
    *out = std::move(s);
    return "";
}

Status write_state_file(const std::string& path, const std::string& text) {
    std::string tmp = path + ".tmp." + std::to_string(::getpid());
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return Status(Errc::io_error, "cannot write " + tmp + ": " + base::errno_text(errno));
    base::Fd f(fd);
    (void)::fchmod(fd, 0600);  // O_CREAT's mode is masked by the umask; never more than 0600
    size_t done = 0;
    while (done < text.size()) {
        ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            int e = errno;
            ::unlink(tmp.c_str());
            return Status(Errc::io_error, "cannot write " + tmp + ": " + base::errno_text(e));
        }
        done += size_t(n);
    }
    if (::fsync(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
        int e = errno;
        ::unlink(tmp.c_str());
        return Status(Errc::io_error, "cannot write " + path + ": " + base::errno_text(e));
    }
    return Status::OK();
}

Status read_state_file(const std::string& path, std::string* text, bool* exists) {
    *exists = false;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        if (errno == ENOENT) return Status::OK();
        return Status(Errc::io_error, "state file " + path + ": " + base::errno_text(errno));
    }
    base::Fd f(fd);
    *exists = true;
    struct stat st{};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return Status(Errc::invalid, "state file " + path + ": not a regular file");
    if (st.st_mode & 077) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
        return Status(Errc::invalid, "state file " + path + ": permissions " + mode +
                                         " let others read or change it (chmod 600 it)");
    }
    if (st.st_size > (16 << 20)) return Status(Errc::invalid, "state file " + path + ": too large");
    text->resize(size_t(st.st_size));
    size_t done = 0;
    while (done < text->size()) {
        ssize_t n = ::read(fd, text->data() + done, text->size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += size_t(n);
    }
    text->resize(done);
    return Status::OK();
}

}  // namespace wanmpi::impi
