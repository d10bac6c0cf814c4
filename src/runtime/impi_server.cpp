#include "runtime/impi_server.hpp"

#include <cerrno>
#include <cstring>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/codec.hpp"
#include "base/log.hpp"
#include "base/socket.hpp"
#include "runtime/impi_resume.hpp"
#include "wanlink/handshake.hpp"

namespace wanmpi::impi {

using base::get_be32;
using base::get_be64;
using base::put_be32;

struct Server::Conn {
    int fd = -1;
    std::string peer;
    enum State { auth, key, hmac, impi, member } state = auth;
    uint8_t ns[32] = {};  // our challenge (method WANMPI_HMAC)
    std::vector<uint8_t> in;
    std::string out;
    int rank = -1;
    bool done = false;
    bool fini = false;
    bool hmac_ok = false;  // passed wanmpi's AUTH method: may say BACK
    uint64_t timer = 0;
    std::string who() const {
        return rank >= 0 ? "client " + std::to_string(rank) + " (" + peer + ")" : "connection from " + peer;
    }
};

Server::Server(const ServerConfig& cfg, int listen_fd) : cfg_(cfg), listen_fd_(listen_fd) {
    clients_.assign(size_t(cfg.nclients), nullptr);
}

Server::~Server() = default;

int Server::run() {
    base::set_nonblock(listen_fd_, true);
    loop_.add(listen_fd_, EPOLLIN, [this](uint32_t) { on_accept(); });
    while (exit_ < 0) loop_.run_once(-1);
    if (exit_ != 0) {
        // Best effort, never blocking: tell the surviving agents which client was lost.
        std::vector<uint8_t> m(kCmdHeader + 4);
        encode_cmd(CmdHeader{CMD_LOST, int32_t(4 + lost_why_.size())}, m.data());
        put_be32(&m[kCmdHeader], uint32_t(lost_));
        m.insert(m.end(), lost_why_.begin(), lost_why_.end());
        for (auto& [fd, c] : conns_)
            if (c->state == Conn::member && c->rank != lost_ && c->out.empty())
                (void)::send(fd, m.data(), m.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    for (auto& [fd, c] : conns_) {
        loop_.remove(fd);
        ::close(fd);
    }
    conns_.clear();
    return exit_;
}

void Server::on_accept() {
    for (;;) {
        int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
                WANMPI_LOG(warn, "accept: %s", base::errno_text(errno).c_str());
            return;
        }
        auto c = std::make_unique<Conn>();
        c->fd = fd;
        c->peer = base::peer_text(fd);
        Conn* cp = c.get();
        conns_[fd] = std::move(c);
        loop_.add(fd, EPOLLIN, [this, fd](uint32_t ev) {
            auto it = conns_.find(fd);
            if (it == conns_.end()) return;
            Conn* cc = it->second.get();
            if (ev & EPOLLOUT) on_writable(cc);
            if (conns_.count(fd) && (ev & (EPOLLIN | EPOLLHUP | EPOLLERR))) on_readable(cc);
        });
        // Slow-loris guard: a connection that has not joined in time is dropped.
        cp->timer = loop_.after(cfg_.join_timeout_ms, [this, fd] {
            auto it = conns_.find(fd);
            if (it != conns_.end() && it->second->state != Conn::member) {
                it->second->timer = 0;
                drop(it->second.get(), "did not complete AUTH and IMPI within " +
                                           std::to_string(cfg_.join_timeout_ms / 1000) + " s");
            }
        });
        WANMPI_LOG(info, "connection from %s", cp->peer.c_str());
    }
}

void Server::arm_stall_timer(Conn* c) {
    if (c->state != Conn::member) return;  // the join timer covers the start
    if (c->timer) loop_.cancel(c->timer);
    c->timer = 0;
    if (c->in.empty()) return;
    int fd = c->fd;
    c->timer = loop_.after(cfg_.stall_timeout_ms, [this, fd] {
        auto it = conns_.find(fd);
        if (it == conns_.end()) return;
        it->second->timer = 0;
        if (!it->second->in.empty())
            fail(it->second->who() + " stalled in the middle of a command for " +
                 std::to_string(cfg_.stall_timeout_ms / 1000) + " s");
    });
}

void Server::on_readable(Conn* c) {
    uint8_t buf[65536];
    for (;;) {
        ssize_t n = ::recv(c->fd, buf, sizeof buf, 0);
        if (n > 0) {
            c->in.insert(c->in.end(), buf, buf + n);
            if (c->in.size() > size_t(kMaxCmdPayload) + 64) {
                // parse() rejects oversized lengths first; this bounds a flood without headers.
                if (c->state == Conn::member) return fail(c->who() + " sent more than allowed");
                return drop(c, "sent more than allowed");
            }
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
        // EOF or error. A client may send FINI and close at once, and both can arrive in one
        // read: act on what it sent before the close first.
        int err = n < 0 ? errno : 0;
        if (!c->in.empty() && !parse(c)) return;
        if (exit_ >= 0) return;
        std::string why = n == 0 ? "closed the connection" : "connection error: " + base::errno_text(err);
        if (c->state == Conn::member && !c->fini && keep_[size_t(c->rank)])
            return away(c, why);
        if (c->state == Conn::member && !c->fini)
            return fail(c->who() + " " + why + " before FINI" +
                            (c->done ? "" : " (during the start-up: it died, or its impi-relay)"),
                        c->rank);
        if (c->state != Conn::member) return drop(c, why);
        // A client that sent FINI may close: forget it.
        forget(c);
        return;
    }
    if (!parse(c)) return;
    arm_stall_timer(c);
}

void Server::on_writable(Conn* c) {
    while (!c->out.empty()) {
        ssize_t n = ::send(c->fd, c->out.data(), c->out.size(), MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR) return;
            if (c->state == Conn::member && !c->fini)
                return fail(c->who() + " connection error: " + base::errno_text(errno));
            return drop(c, "connection error: " + base::errno_text(errno));
        }
        c->out.erase(0, size_t(n));
    }
    loop_.modify(c->fd, EPOLLIN);
}

void Server::send(Conn* c, const uint8_t* p, size_t n) {
    if (!c) return;  // a client that already finished (FINI) and closed
    bool was_empty = c->out.empty();
    c->out.append(reinterpret_cast<const char*>(p), n);
    if (was_empty) {
        loop_.modify(c->fd, EPOLLIN | EPOLLOUT);
        on_writable(c);
    }
}

void Server::drop(Conn* c, const std::string& why) {
    WANMPI_LOG(warn, "%s: %s; dropped", c->who().c_str(), why.c_str());
    if (c->timer) loop_.cancel(c->timer);
    forget(c);
}

// Closes and frees a connection; a member's slot in clients_ becomes empty, so no reply is ever
// sent through a freed connection (found by the fuzzer: a client that sent FINI and closed while
// other clients' labels were still being answered).
void Server::forget(Conn* c) {
    if (c->rank >= 0 && clients_[size_t(c->rank)] == c) clients_[size_t(c->rank)] = nullptr;
    loop_.remove(c->fd);
    ::close(c->fd);
    conns_.erase(c->fd);
}

void Server::fail(const std::string& why, int lost) {
    if (exit_ >= 0) return;
    lost_ = lost;
    lost_why_ = why;
    WANMPI_LOG(error, "%s; the job cannot go on: closing every client connection", why.c_str());
    exit_ = 1;
}

// Parses every complete message in c->in. Returns false when c was closed.
bool Server::parse(Conn* c) {
    size_t off = 0;
    auto need = [&](size_t n) { return c->in.size() - off >= n; };
    bool alive = true;
    while (alive && exit_ < 0) {
        if (c->state == Conn::auth) {
            if (!need(12)) break;
            CmdHeader h = decode_cmd(&c->in[off]);
            if (h.cmd != CMD_AUTH || h.len != 4) {
                const char* nm = cmd_name(h.cmd);
                drop(c, std::string("expected AUTH with a 4-byte mask, got ") +
                            (nm ? nm : "an unknown command") + " of length " + std::to_string(h.len));
                return false;
            }
            uint32_t mask = get_be32(&c->in[off + 8]);
            off += 12;
            uint8_t reply[8 + wanlink::kAuthChallengeLen] = {};
            if ((mask & (1u << wanlink::kAuthHmac)) && cfg_.allow_hmac) {
                // The challenge rides in IMPI's server-auth record as its `len` bytes.
                put_be32(reply, wanlink::kAuthHmac);
                put_be32(reply + 4, wanlink::kAuthChallengeLen);
                wanlink::random_bytes(c->ns, sizeof c->ns);
                std::memcpy(reply + 8, c->ns, 32);
                std::memcpy(reply + 40, cfg_.session.data(), 32);
                c->state = Conn::hmac;
                send(c, reply, sizeof reply);
                continue;
            }
            if ((mask & (1u << AUTH_KEY)) && cfg_.allow_key) {
                put_be32(reply, AUTH_KEY);
                c->state = Conn::key;
            } else if ((mask & (1u << AUTH_NONE)) && cfg_.allow_none) {
                put_be32(reply, AUTH_NONE);
                c->state = Conn::impi;
            } else {
                drop(c, "no common authentication method (client offers mask 0x" +
                            std::to_string(mask) + "; server allows" +
                            (cfg_.allow_hmac ? " WANMPI_HMAC" : "") +
                            (cfg_.allow_none ? " NONE" : "") + (cfg_.allow_key ? " KEY" : "") +
                            (cfg_.allow_hmac && !(cfg_.allow_none || cfg_.allow_key)
                                 ? ": a job secret is set, so IMPI's methods need IMPI_AUTH_NONE "
                                   "or IMPI_AUTH_KEY to be allowed"
                                 : "") +
                            ")");
                return false;
            }
            send(c, reply, 8);
        } else if (c->state == Conn::hmac) {
            if (!need(wanlink::kAuthResponse)) break;
            const uint8_t* nc = &c->in[off];
            const uint8_t* mac = nc + 32;
            off += wanlink::kAuthResponse;
            wanlink::Key want = wanlink::auth_client_mac(cfg_.secret, c->ns, nc, cfg_.session.data());
            uint8_t verdict[wanlink::kAuthVerdict] = {};
            if (!wanlink::equal_mac(want.data(), mac)) {
                // Say so before closing: the client reports a wrong secret at once instead of
                // guessing from a closed connection.
                put_be32(verdict, 1);
                (void)::send(c->fd, verdict, sizeof verdict, MSG_NOSIGNAL | MSG_DONTWAIT);
                drop(c, "failed authentication: it does not hold this job's secret (or replayed "
                        "an old AUTH)");
                return false;
            }
            wanlink::Key ms = wanlink::auth_server_mac(cfg_.secret, c->ns, nc, cfg_.session.data());
            std::memcpy(verdict + 4, ms.data(), 32);
            send(c, verdict, sizeof verdict);
            c->state = Conn::impi;
            c->hmac_ok = true;
        } else if (c->state == Conn::key) {
            if (!need(8)) break;
            uint64_t k = get_be64(&c->in[off]);
            off += 8;
            if (k != cfg_.key) {
                drop(c, "wrong IMPI_AUTH_KEY");
                return false;
            }
            c->state = Conn::impi;
        } else if (c->state == Conn::impi) {
            if (!need(12)) break;
            CmdHeader h = decode_cmd(&c->in[off]);
            if (h.cmd == CMD_BACK && c->hmac_ok && h.len == int32_t(kBackLen)) {
                if (!need(kCmdHeader + kBackLen)) break;
                BackMsg b;
                std::string err = decode_back(&c->in[off + kCmdHeader], kBackLen, &b);
                off += kCmdHeader + kBackLen;
                if (!take_back(c, b, err)) return false;
                continue;
            }
            if (h.cmd != CMD_IMPI || h.len != 4) {
                drop(c, "expected IMPI with a 4-byte rank");
                return false;
            }
            int32_t rank = int32_t(get_be32(&c->in[off + 8]));
            off += 12;
            if (rank < 0 || rank >= cfg_.nclients) {
                drop(c, "client rank " + std::to_string(rank) + " out of range 0.." +
                            std::to_string(cfg_.nclients - 1));
                return false;
            }
            if (clients_[size_t(rank)]) {
                drop(c, "client rank " + std::to_string(rank) + " is already taken by " +
                            clients_[size_t(rank)]->peer);
                return false;
            }
            joined(c, rank);
        } else {
            if (!need(kCmdHeader)) break;
            CmdHeader h = decode_cmd(&c->in[off]);
            const char* nm = cmd_name(h.cmd);
            if (!nm || h.cmd == CMD_AUTH || h.cmd == CMD_IMPI || h.cmd == CMD_BACK) {
                fail(c->who() + " sent " + (nm ? std::string("a second ") + nm : "garbage") +
                     " (command 0x" + std::to_string(h.cmd) + ")");
                return false;
            }
            if (h.len < 0 || h.len > kMaxCmdPayload) {
                fail(c->who() + " sent " + nm + " with invalid length " + std::to_string(h.len));
                return false;
            }
            if (h.cmd == CMD_COLL && h.len < 4) {
                fail(c->who() + " sent COLL without a label");
                return false;
            }
            if (!need(kCmdHeader + size_t(h.len))) break;
            const uint8_t* p = &c->in[off + kCmdHeader];
            off += kCmdHeader + size_t(h.len);
            if (h.cmd == CMD_COLL) {
                uint32_t label = get_be32(p);
                if (c->done) {
                    fail(c->who() + " sent COLL after DONE");
                    return false;
                }
                auto& ls = labels_[label];
                if (ls.contrib.empty()) ls.contrib.resize(size_t(cfg_.nclients));
                if (ls.replied || ls.contrib[size_t(c->rank)]) {
                    fail(c->who() + " sent label 0x" + std::to_string(label) + " twice");
                    return false;
                }
                ls.contrib[size_t(c->rank)] = std::vector<uint8_t>(p + 4, p + h.len);
                WANMPI_LOG(debug, "%s: %s (%d bytes)", c->who().c_str(),
                           label_name(label) ? label_name(label) : "label", h.len - 4);
                check_label(label);
            } else if (h.cmd == CMD_KEEP) {
                // A relay that can come back (impi_resume.hpp): only after wanmpi's AUTH.
                if (!c->hmac_ok || !c->done) {
                    fail(c->who() + " sent KEEP " + (c->done ? "without wanmpi's AUTH" : "before DONE"));
                    return false;
                }
                keep_[size_t(c->rank)] = true;
                WANMPI_LOG(info, "%s (an impi-relay) may come back if its connection drops",
                           c->who().c_str());
            } else if (h.cmd == CMD_GONE) {
                // The relay reports its cluster failed (or gives up itself): end at once.
                std::string why(reinterpret_cast<const char*>(p), size_t(h.len));
                fail(c->who() + ": " + (why.empty() ? "its relay reports the cluster failed" : why),
                     c->rank);
                return false;
            } else if (h.cmd == CMD_DONE) {
                c->done = true;  // a payload is tolerated and discarded, as LAM does
                check_all();
            } else if (h.cmd == CMD_FINI) {
                if (!c->done) {
                    fail(c->who() + " sent FINI before DONE");
                    return false;
                }
                if (!c->fini) {
                    c->fini = true;
                    WANMPI_LOG(info, "%s: FINI", c->who().c_str());
                    if (++nfini_ == cfg_.nclients) exit_ = 0;
                }
            }
        }
    }
    if (conns_.count(c->fd)) c->in.erase(c->in.begin(), c->in.begin() + long(off));
    return conns_.count(c->fd) != 0;
}

void Server::joined(Conn* c, int rank) {
    c->state = Conn::member;
    c->rank = rank;
    clients_[size_t(rank)] = c;
    if (c->timer) loop_.cancel(c->timer);
    c->timer = 0;
    WANMPI_LOG(info, "client %d joined from %s (%d of %d)", rank, c->peer.c_str(), njoined_ + 1,
               cfg_.nclients);
    if (++njoined_ < cfg_.nclients) return;
    uint8_t m[12];
    encode_cmd(CmdHeader{CMD_IMPI, 4}, m);
    put_be32(m + 8, uint32_t(cfg_.nclients));
    for (Conn* k : clients_) send(k, m, sizeof m);
    impi_sent_ = true;
    check_all();
}

// A label is answered once every client has contributed to it or sent DONE.
void Server::check_label(uint32_t label) {
    if (!impi_sent_) return;
    auto& ls = labels_[label];
    if (ls.replied) return;
    uint32_t mask = 0;
    size_t bytes = 0;
    for (int i = 0; i < cfg_.nclients; ++i) {
        if (ls.contrib[size_t(i)]) {
            mask |= 1u << i;
            bytes += ls.contrib[size_t(i)]->size();
        } else if (clients_[size_t(i)] && !clients_[size_t(i)]->done) {
            return;
        }
    }
    ls.replied = true;
    std::vector<uint8_t> msg(kCmdHeader + 8 + bytes);
    encode_cmd(CmdHeader{CMD_COLL, int32_t(8 + bytes)}, msg.data());
    put_be32(&msg[8], label);
    put_be32(&msg[12], mask);
    size_t o = 16;
    for (auto& ct : ls.contrib)
        if (ct) {
            if (!ct->empty()) std::memcpy(&msg[o], ct->data(), ct->size());
            o += ct->size();
        }
    for (int i = 0; i < cfg_.nclients; ++i)
        if (ls.contrib[size_t(i)]) send(clients_[size_t(i)], msg.data(), msg.size());
    // Keep memory bounded: the data is not needed any more.
    for (auto& ct : ls.contrib) ct.reset();
}

void Server::check_all() {
    if (!impi_sent_) return;
    for (auto& [label, ls] : labels_) check_label(label);
    if (done_sent_) return;
    for (Conn* k : clients_)
        if (k && !k->done) return;
    done_sent_ = true;
    uint8_t m[8];
    encode_cmd(CmdHeader{CMD_DONE, 0}, m);
    for (Conn* k : clients_) send(k, m, sizeof m);
    WANMPI_LOG(info, "all %d clients are done; waiting for FINI", cfg_.nclients);
}

}  // namespace wanmpi::impi

namespace wanmpi::impi {

// A client whose relay said KEEP lost its connection without an orderly end (the relay died or
// the WAN dropped it): keep its place for WANMPI_WAN_RECONNECT_S (take_back()), then fail.
void Server::away(Conn* c, const std::string& why) {
    const int rank = c->rank;
    const std::string who = c->who();
    const bool done = c->done;
    if (c->timer) loop_.cancel(c->timer);
    forget(c);
    away_[size_t(rank)].done = done;
    away_[size_t(rank)].since = runtime::EventLoop::now_ms();
    if (away_[size_t(rank)].timer) loop_.cancel(away_[size_t(rank)].timer);
    WANMPI_LOG(warn, "%s (an impi-relay) %s; waiting up to %lld s for it to come back "
                     "(WANMPI_WAN_RECONNECT_S)",
               who.c_str(), why.c_str(), (long long)(cfg_.reconnect_ms / 1000));
    away_[size_t(rank)].timer = loop_.after(cfg_.reconnect_ms, [this, rank, who, why] {
        away_[size_t(rank)].timer = 0;
        if (clients_[size_t(rank)]) return;
        fail(who + " " + why + " and did not come back within " +
                 std::to_string(cfg_.reconnect_ms / 1000) + " s (WANMPI_WAN_RECONNECT_S): "
                 "impi-relay of client " + std::to_string(rank) + " is lost",
             rank);
    });
}

// BACK on an authenticated connection: it takes the place of client b.client, which must be a
// relay that said KEEP (away, or still connected: a restarted relay may come back before the
// server saw the old connection drop). Returns false when c was closed.
bool Server::take_back(Conn* c, const BackMsg& b, const std::string& err) {
    auto answer = [&](int32_t st, const std::string& why) {
        std::vector<uint8_t> m(kCmdHeader + 4 + why.size());
        encode_cmd(CmdHeader{CMD_BACK, int32_t(4 + why.size())}, m.data());
        put_be32(&m[kCmdHeader], uint32_t(st));
        std::memcpy(&m[kCmdHeader + 4], why.data(), why.size());
        if (st == 0) return send(c, m.data(), m.size());
        (void)::send(c->fd, m.data(), m.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    };
    std::string why = err;
    const int r = int(b.client);
    if (why.empty() && !wanlink::equal_mac(b.session.data(), cfg_.session.data()))
        why = "its state is from another job (session nonce)";
    if (why.empty() && (r >= cfg_.nclients || !keep_[size_t(r)]))
        why = "client " + std::to_string(r) + " is not an impi-relay that may come back";
    if (!why.empty()) {
        answer(1, why);
        drop(c, "BACK refused: " + why);
        return false;
    }
    if (Conn* old = clients_[size_t(r)]) {
        WANMPI_LOG(warn, "%s: replaced by the relay that came back from %s", old->who().c_str(),
                   c->peer.c_str());
        c->fini = old->fini;  // already counted in nfini_
        if (old->timer) loop_.cancel(old->timer);
        forget(old);
    }
    Away& a = away_[size_t(r)];
    if (a.timer) loop_.cancel(a.timer);
    a.timer = 0;
    c->state = Conn::member;
    c->rank = r;
    c->done = true;  // KEEP comes after DONE only
    clients_[size_t(r)] = c;
    if (c->timer) loop_.cancel(c->timer);
    c->timer = 0;
    WANMPI_LOG(info, "client %d (an impi-relay) came back from %s after %lld ms", r,
               c->peer.c_str(), (long long)(a.since ? runtime::EventLoop::now_ms() - a.since : 0));
    a.since = 0;
    answer(0, "");
    if (b.fini && !c->fini) {
        c->fini = true;
        WANMPI_LOG(info, "%s: FINI (sent before the relay came back)", c->who().c_str());
        if (++nfini_ == cfg_.nclients) exit_ = 0;
    }
    return true;
}

}  // namespace wanmpi::impi
