#include "runtime/impi_agent.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

#include "base/clock.hpp"
#include "base/codec.hpp"
#include "wanlink/handshake.hpp"
#include "base/log.hpp"
#include "base/tunables.hpp"
#include "runtime/impi_dance.hpp"
#include "runtime/impi_resume.hpp"

namespace wanmpi::impi {

using base::Errc;
using base::get_be32;
using base::put_be32;
using base::put_be64;
using base::Status;

static base::Tunable<int64_t> t_client(
    "IMPI", "CLIENT", -1,
    "This cluster's IMPI client rank, 0..31 (set by mpirun -client ID ADDR:PORT).",
    base::Level::user);
static base::Tunable<std::string> t_server(
    "IMPI", "SERVER", "",
    "addr:port of impi-server (or impi-relay) for an IMPI job (set by mpirun -client).",
    base::Level::user);
static base::Tunable<std::string> t_auth_none(
    "IMPI", "AUTH_NONE", "",
    "When set (any value), the IMPI agent offers authentication method NONE.",
    base::Level::user, "IMPI_AUTH_NONE");
static base::Tunable<std::string> t_auth_key(
    "IMPI", "AUTH_KEY", "",
    "Decimal 64-bit key: the IMPI agent offers authentication method KEY with it (it travels in "
    "clear text). With neither AUTH_NONE nor AUTH_KEY set, NONE is offered.",
    base::Level::user, "IMPI_AUTH_KEY");
static base::Tunable<int64_t> t_startup_timeout(
    "IMPI", "STARTUP_TIMEOUT", 300,
    "Seconds the IMPI start-up with impi-server may take (it waits for every cluster to join).",
    base::Level::user);

namespace {

int64_t now_ms() { return base::now_ns() / 1000000; }

bool parse_key(const char* s, uint64_t* v) {
    if (!s || !*s) return false;
    uint64_t x = 0;
    for (const char* p = s; *p; ++p) {
        if (*p < '0' || *p > '9') return false;
        unsigned d = unsigned(*p - '0');
        if (x > (UINT64_MAX - d) / 10) return false;
        x = x * 10 + d;
    }
    *v = x;
    return true;
}

// A server that does not listen yet is retried; an address with no route to it is not (the
// failure is immediate and retrying cannot help: see the message in connect_server).
bool retryable(int e) {
    return e == ECONNREFUSED || e == ETIMEDOUT || e == ECONNRESET || e == EAGAIN || e == EINTR;
}

}  // namespace

Status auth_from_env(AuthConfig* out) {
    AuthConfig a;
    const char* none = base::tunable_env(t_auth_none.info());
    const char* key = base::tunable_env(t_auth_key.info());
    Status ss = wanlink::job_secret(&a.secret);
    if (!ss.ok()) return ss;
    a.none = none != nullptr || (key == nullptr && !a.secret.set());
    a.key = key != nullptr;
    if (key && !parse_key(key, &a.key_value))
        return Status(Errc::invalid, std::string("IMPI_AUTH_KEY='") + key +
                                         "' is not a decimal 64-bit number");
    *out = a;
    return Status::OK();
}

Status agent_config_from_env(AgentConfig* out, bool* enabled) {
    *enabled = false;
    AgentConfig c;
    c.server = t_server.get();
    if (c.server.empty()) return Status::OK();
    if (!base::parse_host_port(c.server))
        return Status(Errc::invalid, "WANMPI_IMPI_SERVER='" + c.server + "' is not ADDR:PORT");
    int64_t id = t_client.get();
    if (id < 0 || id > 31)
        return Status(Errc::invalid, "WANMPI_IMPI_SERVER is set but WANMPI_IMPI_CLIENT (" +
                                         std::to_string(id) + ") is not a client rank 0..31");
    c.client = int(id);
    Status s = auth_from_env(&c.auth);
    if (!s.ok()) return s;
    c.connect_timeout_ms = connect_timeout_ms_from_env();
    c.startup_timeout_ms = std::max<int64_t>(1, t_startup_timeout.get()) * 1000;
    *out = c;
    *enabled = true;
    return Status::OK();
}

Status Agent::connect_server(int64_t deadline) {
    auto hp = base::parse_host_port(cfg_.server);
    if (!hp)
        return Status(Errc::invalid, "IMPI server address '" + cfg_.server + "' is not ADDR:PORT");
    int64_t backoff = 20;
    for (;;) {
        std::string err;
        int64_t left = deadline - now_ms();
        errno = 0;
        int fd = base::tcp_connect(hp->host, hp->port, int(std::clamp<int64_t>(left, 1, 5000)),
                                   &err);
        if (fd >= 0) {
            fd_ = base::Fd(fd);
            base::set_nonblock(fd, true);
            base::set_nodelay(fd);
            return Status::OK();
        }
        int e = errno;
        if (e == ENETUNREACH || e == EHOSTUNREACH)
            return Status(Errc::link_failed,
                          "cannot reach the IMPI server: " + err +
                              " (this host has no route to it: if this cluster's hosts have "
                              "private addresses, run impi-relay on its front-end and point "
                              "mpirun -client at the relay, docs/impi.md)",
                          e);
        if (!retryable(e) || now_ms() + backoff >= deadline)
            return Status(Errc::link_failed, "cannot reach the IMPI server: " + err, e);
        WANMPI_LOG(debug, "IMPI server %s: %s; retrying", cfg_.server.c_str(), err.c_str());
        std::this_thread::sleep_for(std::chrono::milliseconds(backoff));
        backoff = std::min<int64_t>(backoff * 2, 1000);
    }
}

Status Agent::closed(const char* what, int err) {
    fd_.reset();
    std::string m = "IMPI server " + cfg_.server + " closed the connection " + what;
    if (err) m += " (" + base::errno_text(err) + ")";
    // During the start-up the address may be this cluster's impi-relay, which cannot be taken
    // back before the start-up is over (its state file is written after DONE): say so, since
    // the agent cannot tell a relay from impi-server yet (docs/design/relay-restart.md).
    if (!started_)
        m += ": impi-server, or the impi-relay at " + cfg_.server + " if this cluster reaches "
             "impi-server through one, died or ended the job during the start-up (a relay can be "
             "restarted only once the start-up is over; start the job again)";
    return Status(Errc::peer_failed, m, err);
}

static Status wait_fd(int fd, short ev, int64_t deadline) {
    for (;;) {
        int64_t left = deadline - now_ms();
        if (left <= 0) return Status(Errc::link_failed, "timeout");
        pollfd p{fd, ev, 0};
        int rc = ::poll(&p, 1, int(std::min<int64_t>(left, 1 << 30)));
        if (rc > 0) return Status::OK();
        if (rc < 0 && errno != EINTR) return Status(Errc::io_error, base::errno_text(errno), errno);
    }
}

Status Agent::send_all(const uint8_t* p, size_t n, int64_t deadline, const char* what) {
    size_t done = 0;
    while (done < n) {
        ssize_t r = ::send(fd_.get(), p + done, n - done, MSG_NOSIGNAL);
        if (r > 0) {
            done += size_t(r);
            continue;
        }
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && errno == EAGAIN) {
            Status s = wait_fd(fd_.get(), POLLOUT, deadline);
            if (s.ok()) continue;
            fd_.reset();
            return Status(Errc::link_failed, "IMPI server " + cfg_.server +
                                                 " accepted no data for too long " +
                                                 std::string(what));
        }
        return closed(what, errno);
    }
    return Status::OK();
}

Status Agent::recv_all(uint8_t* p, size_t n, int64_t deadline, const char* what) {
    size_t done = 0;
    while (done < n) {
        ssize_t r = ::recv(fd_.get(), p + done, n - done, 0);
        if (r > 0) {
            done += size_t(r);
            continue;
        }
        if (r == 0) return closed(what, 0);
        if (errno == EINTR) continue;
        if (errno == EAGAIN) {
            Status s = wait_fd(fd_.get(), POLLIN, deadline);
            if (s.ok()) continue;
            fd_.reset();
            return Status(Errc::link_failed,
                          "IMPI start-up with server " + cfg_.server + " timed out " + what +
                              " (WANMPI_IMPI_STARTUP_TIMEOUT=" +
                              std::to_string(cfg_.startup_timeout_ms / 1000) + " s)");
        }
        return closed(what, errno);
    }
    return Status::OK();
}

Status Agent::start(const AgentConfig& cfg, const ClusterTables& tables, Job* job) {
    cfg_ = cfg;
    server_name_ = "IMPI server " + cfg.server;
    started_ = false;
    fd_.reset();
    finished_ = false;
    lost_ = Status::OK();
    notice_.clear();
    hmac_ = keep_ = reconnecting_ = fini_sent_ = false;
    if (cfg.client < 0 || cfg.client > 31)
        return Status(Errc::invalid, "IMPI client rank " + std::to_string(cfg.client) +
                                         " is not in 0..31");
    Status s = validate(tables);
    if (!s.ok()) return s;
    uint32_t mask = (cfg.auth.none ? 1u << AUTH_NONE : 0) | (cfg.auth.key ? 1u << AUTH_KEY : 0) |
                    (cfg.auth.secret.set() ? 1u << wanlink::kAuthHmac : 0);
    if (!mask) return Status(Errc::invalid, "no IMPI authentication method is enabled");

    int64_t t0 = now_ms();
    int64_t deadline = t0 + cfg.startup_timeout_ms;
    if (!(s = connect_server(t0 + std::min(cfg.connect_timeout_ms, cfg.startup_timeout_ms))).ok())
        return s;
    WANMPI_LOG(info, "IMPI client %d: connected to server %s", cfg.client, cfg.server.c_str());

    // AUTH: our mask; the server answers with a bare {Int4 which, Int4 len} (IMPI.md §3.4).
    uint8_t m[16];
    encode_cmd(CmdHeader{CMD_AUTH, 4}, m);
    put_be32(m + 8, mask);
    if (!(s = send_all(m, 12, deadline, "while sending AUTH")).ok()) return s;
    const char* auth_what =
        "right after AUTH (no common authentication method? the server needs the same "
        "IMPI_AUTH_NONE / IMPI_AUTH_KEY settings)";
    if (!(s = recv_all(m, 8, deadline, auth_what)).ok()) return s;
    uint32_t which = get_be32(m);
    session_.fill(0);
    if (which == wanlink::kAuthHmac && cfg.auth.secret.set()) {
        if (get_be32(m + 4) != wanlink::kAuthChallengeLen) {
            fd_.reset();
            return Status(Errc::proto_error, server_name_ + " sent a malformed challenge");
        }
        uint8_t ch[wanlink::kAuthChallengeLen];
        if (!(s = recv_all(ch, sizeof ch, deadline, "while reading the challenge")).ok()) return s;
        const uint8_t* ns = ch;
        std::memcpy(session_.data(), ch + 32, 32);
        uint8_t resp[wanlink::kAuthResponse];
        wanlink::random_bytes(resp, 32);
        wanlink::Key mc = wanlink::auth_client_mac(cfg.auth.secret, ns, resp, session_.data());
        std::memcpy(resp + 32, mc.data(), 32);
        if (!(s = send_all(resp, sizeof resp, deadline, "while answering the challenge")).ok())
            return s;
        uint8_t verdict[wanlink::kAuthVerdict];
        const std::string refused = server_name_ + " refused this cluster's job secret (" +
                                    cfg.auth.secret.source +
                                    "): every cluster and impi-server need the same secret";
        s = recv_all(verdict, sizeof verdict, deadline, "while waiting for the server's answer");
        if (!s.ok() || get_be32(verdict) != 0) {
            fd_.reset();
            return Status(Errc::link_failed, s.ok() || s.message().find("closed") != std::string::npos
                                                 ? refused : s.message());
        }
        wanlink::Key ms = wanlink::auth_server_mac(cfg.auth.secret, ns, resp, session_.data());
        if (!wanlink::equal_mac(ms.data(), verdict + 4)) {
            fd_.reset();
            return Status(Errc::link_failed, server_name_ + " could not prove that it holds the "
                                                 "job secret (" + cfg.auth.secret.source +
                                                 "): not this job's impi-server?");
        }
        hmac_ = true;
    } else if (cfg.auth.secret.set() && !cfg.auth.none && !cfg.auth.key) {
        fd_.reset();
        return Status(Errc::proto_error, server_name_ + " chose authentication method " +
                                             std::to_string(int32_t(which)) +
                                             " although this cluster offered only wanmpi's (a job "
                                             "secret is set; is impi-server started without it?)");
    } else if (which == AUTH_KEY && cfg.auth.key) {
        put_be64(m, cfg.auth.key_value);
        if (!(s = send_all(m, 8, deadline, "while sending the key")).ok()) return s;
    } else if (!(which == AUTH_NONE && cfg.auth.none)) {
        fd_.reset();
        return Status(Errc::proto_error, "IMPI server " + cfg.server +
                                             " chose authentication method " +
                                             std::to_string(int32_t(which)) +
                                             ", which this client did not offer");
    }

    // IMPI: join with our rank; the reply (the number of clients) comes once all have joined.
    std::string join_what =
        "while waiting for the other clients to join (" +
        std::string(which == AUTH_KEY ? "wrong IMPI_AUTH_KEY? " : "") +
        "the server drops a client whose key is wrong or whose client id " +
        std::to_string(cfg.client) + " is out of range or already taken; otherwise it died: see "
        "its output)";
    encode_cmd(CmdHeader{CMD_IMPI, 4}, m);
    put_be32(m + 8, uint32_t(cfg.client));
    if (!(s = send_all(m, 12, deadline, join_what.c_str())).ok()) return s;
    if (!(s = recv_all(m, 12, deadline, join_what.c_str())).ok()) return s;
    CmdHeader h = decode_cmd(m);
    int32_t nclients = int32_t(get_be32(m + 8));
    if (h.cmd != CMD_IMPI || h.len != 4 || nclients < 1 || nclients > 32) {
        fd_.reset();
        return Status(Errc::proto_error, "IMPI server " + cfg.server +
                                             " sent a malformed reply to IMPI");
    }
    if (cfg.client >= nclients) {
        fd_.reset();
        return Status(Errc::invalid, "IMPI client id " + std::to_string(cfg.client) +
                                         " is not below the server's number of clients " +
                                         std::to_string(nclients));
    }
    WANMPI_LOG(info, "IMPI client %d: all %d clients joined", cfg.client, nclients);

    // Reads one server command; COLL replies for labels we are not waiting for are skipped (a
    // server may send replies for labels other clients contributed to).
    std::vector<uint8_t> body;
    auto read_cmd = [&](const std::string& what, CmdHeader* hh) -> Status {
        uint8_t hb[kCmdHeader];
        Status st = recv_all(hb, kCmdHeader, deadline, what.c_str());
        if (!st.ok()) return st;
        *hh = decode_cmd(hb);
        if (hh->len < 0 || hh->len > kMaxCmdPayload + 8 ||
            (hh->cmd != CMD_COLL && hh->cmd != CMD_DONE && hh->cmd != CMD_LOST) ||
            (hh->cmd == CMD_COLL && hh->len < 8)) {
            fd_.reset();
            return Status(Errc::proto_error,
                          "IMPI server " + cfg.server + " sent a malformed command " + what);
        }
        body.resize(size_t(hh->len));
        return recv_all(body.data(), body.size(), deadline, what.c_str());
    };
    auto lost_notice = [&]() {
        int32_t who = body.size() >= 4 ? int32_t(get_be32(body.data())) : -1;
        std::string why = body.size() > 4 ? std::string(body.begin() + 4, body.end()) : "";
        fd_.reset();
        return Status(Errc::peer_failed,
                      "IMPI server " + cfg.server + " ended the job during start-up" +
                          (who >= 0 ? ": client " + std::to_string(who) + " was lost" : "") +
                          (why.empty() ? "" : " (" + why + ")"));
    };

    std::map<uint32_t, CollReply> replies;
    for (uint32_t label : kLabelOrder) {
        std::vector<uint8_t> data = contribution(tables, label);
        if (data.size() > size_t(kMaxCmdPayload) - 4)
            return Status(Errc::invalid, std::string("this client's ") + label_name(label) +
                                             " is too large to send");
        std::vector<uint8_t> msg(kCmdHeader + 4 + data.size());
        encode_cmd(CmdHeader{CMD_COLL, int32_t(4 + data.size())}, msg.data());
        put_be32(&msg[8], label);
        std::copy(data.begin(), data.end(), msg.begin() + 12);
        std::string what = std::string("while waiting for the collated ") + label_name(label);
        std::string send_what = std::string("while sending ") + label_name(label);
        if (!(s = send_all(msg.data(), msg.size(), deadline, send_what.c_str())).ok()) return s;
        for (;;) {
            if (!(s = read_cmd(what, &h)).ok()) return s;
            if (h.cmd == CMD_LOST) return lost_notice();
            if (h.cmd == CMD_DONE) {
                fd_.reset();
                return Status(Errc::proto_error, "IMPI server " + cfg.server +
                                                     " sent DONE " + what);
            }
            uint32_t got = get_be32(body.data());
            if (got != label) {
                WANMPI_LOG(debug, "IMPI: skipping the reply to label 0x%x", unsigned(got));
                continue;
            }
            CollReply r;
            r.mask = get_be32(&body[4]);
            if (!(r.mask & (1u << cfg.client))) {
                fd_.reset();
                return Status(Errc::proto_error,
                              "IMPI server " + cfg.server + "'s reply to " + label_name(label) +
                                  " does not include this client's contribution");
            }
            r.data.assign(body.begin() + 8, body.end());
            replies[label] = std::move(r);
            break;
        }
    }

    encode_cmd(CmdHeader{CMD_DONE, 0}, m);
    const char* done_what = "while waiting for DONE (the other clients' labels)";
    if (!(s = send_all(m, 8, deadline, "while sending DONE")).ok()) return s;
    for (;;) {
        if (!(s = read_cmd(done_what, &h)).ok()) return s;
        if (h.cmd == CMD_LOST) return lost_notice();
        if (h.cmd == CMD_DONE) break;  // a payload is tolerated and ignored, as LAM does
    }

    s = collate(nclients, std::move(replies), job);
    if (!s.ok()) {
        fd_.reset();  // the server then ends the job for every client
        return s;
    }
    // Behind impi-relay, the "server" this agent talks to is the relay: the other clusters'
    // procs then carry the relay's address (impi_tables.hpp relay_of()). Say so when it is lost.
    if (auto hp = base::parse_host_port(cfg.server))
        for (const auto& p : job->procs)
            if (p.client != cfg.client && relay_of(p.id) == hp->host) {
                server_name_ = "impi-relay " + cfg.server + " (this cluster's way to impi-server)";
                break;
            }
    started_ = true;
    WANMPI_LOG(info, "IMPI client %d: start-up done: %d clients, %zu hosts, %d procs",
               cfg.client, nclients, job->hosts.size(), job->size());
    return Status::OK();
}

Status Agent::poll_server() {
    if (!lost_.ok()) return lost_;
    if (reconnecting_) return come_back();
    if (!fd_ || finished_) return Status::OK();  // after FINI the server may close at any time
    bool eof = false;
    int err = 0;
    for (;;) {
        char buf[4096];
        ssize_t r = ::recv(fd_.get(), buf, sizeof buf, MSG_DONTWAIT);
        if (r > 0) {
            if (notice_.size() < 65536) notice_.append(buf, size_t(r));
            continue;
        }
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && errno == EAGAIN) break;
        eof = true;
        err = r < 0 ? errno : 0;
        break;
    }
    // KEEP (only ever sent by an impi-relay after wanmpi's AUTH): it may come back.
    while (hmac_ && notice_.size() >= kCmdHeader &&
           decode_cmd(reinterpret_cast<const uint8_t*>(notice_.data())).cmd == CMD_KEEP &&
           decode_cmd(reinterpret_cast<const uint8_t*>(notice_.data())).len == 0) {
        notice_.erase(0, kCmdHeader);
        if (!keep_) WANMPI_LOG(info, "%s may come back if it is restarted", server_name_.c_str());
        keep_ = true;
    }
    if (notice_.empty() && !eof) return Status::OK();
    if (notice_.empty() && keep_) {
        // Dropped without a LOST notice: the relay died or was restarted. Wait for it.
        fd_.reset();
        reconnecting_ = true;
        away_since_ = now_ms();
        next_try_ = 0;
        backoff_ = 10;
        away_why_ = "closed the connection without an orderly end" +
                    (err ? " (" + base::errno_text(err) + ")" : std::string());
        WANMPI_LOG(warn, "%s %s; waiting up to %lld s for it to come back (WANMPI_WAN_RECONNECT_S)",
                   server_name_.c_str(), away_why_.c_str(),
                   (long long)(wanlink::reconnect_ms() / 1000));
        return come_back();
    }
    const auto* b = reinterpret_cast<const uint8_t*>(notice_.data());
    std::string m = server_name_ + " closed the connection before our FINI";
    if (notice_.size() >= kCmdHeader) {
        CmdHeader h = decode_cmd(b);
        if (h.cmd != CMD_LOST || h.len < 4 || h.len > 65536) {
            fd_.reset();
            lost_ = Status(Errc::proto_error,
                           server_name_ + " sent unexpected data after DONE");
            return lost_;
        }
        if (notice_.size() < kCmdHeader + size_t(h.len) && !eof) return Status::OK();
        if (notice_.size() >= kCmdHeader + size_t(h.len)) {
            int32_t who = int32_t(get_be32(b + kCmdHeader));
            std::string why(notice_.begin() + long(kCmdHeader) + 4,
                            notice_.begin() + long(kCmdHeader) + h.len);
            m += ": " + (who >= 0 ? "client " + std::to_string(who) + " (a cluster) died"
                                  : std::string("the job failed")) +
                 (why.empty() ? "" : ": " + why);
            lost_ = Status(Errc::peer_failed, m);
            fd_.reset();
            return lost_;
        }
    } else if (!eof) {
        return Status::OK();  // a notice is arriving
    }
    m += ": another cluster died or the server was stopped (impi-server's output says which)";
    if (err) m += " [" + base::errno_text(err) + "]";
    lost_ = Status(Errc::peer_failed, m, err);
    fd_.reset();
    return lost_;
}

Status Agent::come_back() {
    const int64_t now = now_ms(), limit = wanlink::reconnect_ms();
    if (now - away_since_ >= limit) {
        reconnecting_ = false;
        lost_ = Status(Errc::peer_failed, server_name_ + " " + away_why_ +
                                              " and did not come back within " +
                                              std::to_string(limit / 1000) +
                                              " s (WANMPI_WAN_RECONNECT_S)");
        return lost_;
    }
    if (now < next_try_) return Status::OK();
    next_try_ = now + backoff_;
    backoff_ = std::min<int64_t>(backoff_ * 2, 500);
    auto hp = base::parse_host_port(cfg_.server);
    std::string err;
    int fd = base::tcp_connect(hp->host, hp->port, 1000, &err);
    if (fd < 0) return Status::OK();  // not listening yet: try again later
    base::Fd f(fd);
    BackMsg back;
    back.client = uint32_t(cfg_.client);
    back.fini = fini_sent_;
    back.session = session_;
    Status s = resume_client(fd, cfg_.auth.secret, back, now + 5000, server_name_);
    if (!s.ok()) {
        // A relay that answers but refuses (another job, another secret) will not change its
        // mind; anything else (it is still starting) is tried again.
        if (s.code() == Errc::invalid || s.code() == Errc::link_failed) {
            reconnecting_ = false;
            lost_ = Status(Errc::peer_failed, s.message());
            return lost_;
        }
        WANMPI_LOG(debug, "%s", s.message().c_str());
        return Status::OK();
    }
    base::set_nonblock(fd, true);
    base::set_nodelay(fd);
    fd_ = std::move(f);
    reconnecting_ = false;
    notice_.clear();
    WANMPI_LOG(warn, "%s came back after %lld ms", server_name_.c_str(),
               (long long)(now_ms() - away_since_));
    return Status::OK();
}

Status Agent::fini() {
    if (finished_) return lost_;
    Status s = poll_server();
    // FINI must reach a relay that is coming back: wait for it (bounded by come_back()).
    while (s.ok() && reconnecting_) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        s = poll_server();
    }
    if (!s.ok()) {
        finished_ = true;
        return s;
    }
    finished_ = true;
    if (!fd_) return Status::OK();
    uint8_t m[kCmdHeader];
    encode_cmd(CmdHeader{CMD_FINI, 0}, m);
    s = send_all(m, sizeof m, now_ms() + 10000, "while sending FINI");
    fini_sent_ = true;
    // The socket stays open until the Agent goes (normally at exit): a server that reads FINI
    // and the close in one go might otherwise take the close for a crash.
    if (s.ok()) WANMPI_LOG(info, "IMPI client %d: FINI sent", cfg_.client);
    return s;
}

}  // namespace wanmpi::impi
