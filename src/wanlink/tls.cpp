#include "wanlink/tls.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "base/log.hpp"
#include "base/socket.hpp"

#ifndef TCP_ULP
#define TCP_ULP 31  // include/uapi/linux/tcp.h, Linux >= 4.13
#endif

namespace wanmpi::wanlink {

namespace {

using base::Errc;
using base::Status;

// The PSK identity both ends name. It carries no secret: the key is what authenticates.
constexpr char kIdentity[] = "wanmpi-link";
// TLS_AES_128_GCM_SHA256 (RFC 8446 B.4), the only suite we offer or accept.
constexpr unsigned char kCipherId[2] = {0x13, 0x01};

// Record sizes on the wire: a TLS 1.3 record is a 5-byte header (type, legacy version, length)
// and at most 2^14 plaintext + 1 inner content type + 255 padding/tag bytes (RFC 8446 5.2).
constexpr size_t kRecord = 16384;
constexpr size_t kRecordHeader = 5;
constexpr size_t kMaxCiphertext = kRecord + 256;

// writev() takes plaintext only while the ciphertext backlog is below kBacklogMax, and at most
// kMaxTake per call, so a caller that hands over a 1 GiB message neither waits for the whole of
// it to be encrypted nor makes us buffer it. kChunk bounds one SSL_write_ex on the direct path
// so the backlog is looked at (and sent) every 16 records.
constexpr size_t kBacklogMax = 256 << 10;
constexpr size_t kMaxTake = 1 << 20;
constexpr size_t kChunk = 256 << 10;
// Ciphertext read from the socket per ::recv: four full records.
constexpr size_t kRecvChunk = 64 << 10;

// OpenSSL's error queue as text ("error:0A0000FD:SSL routines::binder does not verify"), and
// emptied. The queue is per thread and survives across calls, so every SSL_* call below is
// preceded by ERR_clear_error(): otherwise a stale entry from another object on this thread
// would turn SSL_get_error()'s answer into SSL_ERROR_SSL.
std::string ssl_errors(unsigned long* first_reason = nullptr) {
    std::string s;
    char buf[256];
    while (unsigned long e = ERR_get_error()) {
        if (first_reason && s.empty()) *first_reason = ERR_GET_REASON(e);
        ERR_error_string_n(e, buf, sizeof buf);
        if (!s.empty()) s += "; ";
        s += buf;
    }
    if (s.empty()) s = "unknown OpenSSL error";
    return s;
}

struct Ctx {
    SSL_CTX* ctx = nullptr;
    std::string err;
};

// One SSL_CTX per role, for the whole process and never freed: Tls objects may outlive any
// static destructor order, and an SSL_CTX is safe to share between threads once set up.
Ctx make_ctx(bool client) {
    Ctx c;
    ERR_clear_error();
    c.ctx = SSL_CTX_new(client ? TLS_client_method() : TLS_server_method());
    if (!c.ctx) {
        c.err = "SSL_CTX_new: " + ssl_errors();
        return c;
    }
    // Explicit settings override Debian's openssl.cnf (system_default_sect), which applies to
    // every SSL_CTX_new. TLS 1.3 only: no downgrade to anything the PSK path was not built for.
    bool ok = SSL_CTX_set_min_proto_version(c.ctx, TLS1_3_VERSION) == 1 &&
              SSL_CTX_set_max_proto_version(c.ctx, TLS1_3_VERSION) == 1 &&
              SSL_CTX_set_ciphersuites(c.ctx, "TLS_AES_128_GCM_SHA256") == 1 &&
              // A TLS 1.3 server sends two NewSessionTickets after the handshake by default:
              // post-handshake bytes the client would have to read before its first data, and
              // resumption we never use (every connection has the job's PSK).
              SSL_CTX_set_num_tickets(c.ctx, 0) == 1;
    if (!ok) {
        c.err = "configuring TLS 1.3: " + ssl_errors();
        SSL_CTX_free(c.ctx);
        c.ctx = nullptr;
        return c;
    }
    // No tickets, no renegotiation (TLS 1.3 has none, but the option also refuses a peer's
    // attempt should the version ever be widened). The key exchange stays psk_dhe_ke (OpenSSL's
    // default; SSL_OP_ALLOW_NO_DHE_KEX is not set): an X25519 exchange under the PSK, so a
    // leaked job secret does not decrypt recorded traffic.
    SSL_CTX_set_options(c.ctx, SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION);
    SSL_CTX_set_session_cache_mode(c.ctx, SSL_SESS_CACHE_OFF);
    return c;
}

const Ctx& ctx_for(bool client) {
    if (client) {
        static const Ctx c = make_ctx(true);  // magic static: thread-safe lazy init
        return c;
    }
    static const Ctx s = make_ctx(false);
    return s;
}

// A session that stands for the external PSK, as s_client/s_server build it: OpenSSL derives
// the binder and early secret from the "master key" of a TLS 1.3 session.
SSL_SESSION* psk_session(SSL* ssl, const uint8_t key[32]) {
    const SSL_CIPHER* cipher = SSL_CIPHER_find(ssl, kCipherId);
    SSL_SESSION* s = SSL_SESSION_new();
    if (!cipher || !s || SSL_SESSION_set1_master_key(s, key, 32) != 1 ||
        SSL_SESSION_set_cipher(s, cipher) != 1 ||
        SSL_SESSION_set_protocol_version(s, TLS1_3_VERSION) != 1) {
        SSL_SESSION_free(s);
        return nullptr;
    }
    return s;
}

int64_t now_ms() {
    using namespace std::chrono;
    return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace

struct Tls::Impl {
    int fd = -1;
    bool client = false;
    SSL* ssl = nullptr;          // owns rbio and wbio (SSL_set_bio)
    BIO* rbio = nullptr;         // ciphertext from the socket (read-only, over `in`; see feed())
    BIO* wbio = nullptr;         // ciphertext from SSL_write_ex: the backlog (see backlog())
    std::string* err = nullptr;  // the owning Tls's err_
    uint8_t psk[32] = {};        // only until the handshake is done

    std::unique_ptr<uint8_t[]> in;     // kRecvChunk: ::recv lands here; rbio reads it in place
    std::unique_ptr<uint8_t[]> stage;  // kRecord: small iov elements coalesced into a record

    bool eof = false;         // ::recv returned 0
    bool got_close = false;   // the peer's close_notify was read
    bool close_told = false;  // ... and recv() has returned 0 for it
    bool sent_close = false;  // shutdown() was called
    int fail = 0;             // errno once the connection is unusable; every call then fails
    bool fail_told = false;   // recv()/writev()/flush() returned it at least once
    bool hs_done = false;        // SSL_do_handshake succeeded
    bool hs_wants_write = false; // the handshake's flight waits for room in the socket

    ~Impl() {
        SSL_free(ssl);  // and the BIOs, before `in` (which rbio may point into) goes
        OPENSSL_cleanse(psk, sizeof psk);
    }

    // The wbio is the ciphertext backlog: ::send takes straight from its buffer
    // (BIO_get_mem_data) and BIO_seek drops what the kernel took. Reading it out with BIO_read
    // would copy every byte once more. (A memory BIO's next write moves the unsent rest to the
    // front of its buffer, at most once per SSL_write_ex.)
    size_t backlog() const { return BIO_ctrl_pending(wbio); }

    // The first failure sticks (later ones are its consequences); -1 with errno.
    int set_fail(int e, std::string why) {
        if (!fail) {
            fail = e;
            *err = std::move(why);
        }
        return report();
    }
    int report() {
        fail_told = true;
        errno = fail;
        return -1;
    }

    // Sends as much of the backlog as the socket takes: 0 when it is empty, 1 when some
    // remains (EAGAIN), -1 (errno, fail) when the connection broke.
    int send_backlog() {
        for (;;) {
            char* p = nullptr;
            long n = BIO_get_mem_data(wbio, &p);
            if (n <= 0) return 0;
            ssize_t r = ::send(fd, p, size_t(n), MSG_NOSIGNAL | MSG_DONTWAIT);
            if (r > 0) {
                BIO_seek(wbio, BIO_tell(wbio) + r);
                continue;
            }
            if (r < 0 && errno == EINTR) continue;
            if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 1;
            int e = r < 0 ? errno : EPIPE;
            return set_fail(e, "TLS send: " + base::errno_text(e));
        }
    }

    // send_backlog() where nobody is waiting for its result (an alert, close_notify): a
    // failure sticks, to be reported by the next call (and pending() says so meanwhile).
    void send_quietly() {
        if (send_backlog() < 0) fail_told = false;
    }

    // One ::recv of ciphertext for OpenSSL: > 0 bytes, 0 at EOF, -1 with errno.
    // Not copied into a growing memory BIO (which zero-fills, then copies, every byte written
    // to it): the rbio is replaced by a read-only memory BIO over `in` itself. That is safe
    // because we only come here when SSL_read_ex/SSL_do_handshake asked for more, i.e. after
    // OpenSSL drained the rbio: the part of a record it still needs the rest of is in its
    // own buffer, not in ours. Should bytes remain all the same, they are kept in front.
    ssize_t feed() {
        if (!in) in.reset(new uint8_t[kRecvChunk]);
        char* p = nullptr;
        long left = BIO_get_mem_data(rbio, &p);
        size_t keep = left > 0 ? size_t(left) : 0;
        if (keep > 0 && p != reinterpret_cast<char*>(in.get())) std::memmove(in.get(), p, keep);
        ssize_t r = ssize_t(keep);  // when full, the kept bytes count as fed
        if (keep < kRecvChunk) {
            do {
                r = ::recv(fd, in.get() + keep, kRecvChunk - keep, MSG_DONTWAIT);
            } while (r < 0 && errno == EINTR);
        }
        int e = errno;
        size_t have = keep < kRecvChunk ? keep + size_t(std::max<ssize_t>(r, 0)) : keep;
        if (have > 0) {
            BIO* b = BIO_new_mem_buf(in.get(), int(have));
            if (!b) {
                errno = ENOMEM;
                return -1;
            }
            BIO_set_mem_eof_return(b, -1);  // empty: "retry", not EOF (BIO_new_mem_buf's 0)
            SSL_set0_rbio(ssl, b);          // frees the old one
            rbio = b;
        }
        errno = e;
        return r;
    }

    // Encrypts len bytes into records (all of them: a memory BIO never refuses a write, so
    // SSL_write_ex has no partial/retry case here); the ciphertext joins the backlog.
    bool write_plain(const void* p, size_t len) {
        ERR_clear_error();
        size_t w = 0;
        if (SSL_write_ex(ssl, p, len, &w) != 1 || w != len) {
            set_fail(EPIPE, "TLS write: " + ssl_errors());
            return false;
        }
        return true;
    }

    // Whether the rbio starts with a whole record (or with a header no record can have, which
    // SSL_read_ex will reject at once). OpenSSL (read_ahead off, as here) takes from the BIO
    // exactly the 5-byte header and then the body it announces, so after SSL_read_ex has run
    // out of data the rbio is either empty or starts at a record boundary: the unfinished
    // record it needs more for sits in OpenSSL's own buffer, and only the socket can finish it.
    bool rbio_has_record() const {
        char* p = nullptr;
        long n = BIO_get_mem_data(rbio, &p);
        if (n < long(kRecordHeader) || !p) return false;
        size_t len = (size_t(uint8_t(p[3])) << 8) | uint8_t(p[4]);
        return len > kMaxCiphertext || size_t(n) >= kRecordHeader + len;
    }

    static int use_session(SSL* ssl, const EVP_MD* md, const unsigned char** id, size_t* idlen,
                           SSL_SESSION** sess) {
        auto* m = static_cast<Impl*>(SSL_get_app_data(ssl));
        *sess = nullptr;
        *id = nullptr;
        *idlen = 0;
        // md is set when called again after a HelloRetryRequest: the PSK must match the
        // negotiated suite's hash. With only TLS_AES_128_GCM_SHA256 it always does.
        if (md && EVP_MD_get_type(md) != NID_sha256) return 1;
        SSL_SESSION* s = psk_session(ssl, m->psk);
        if (!s) return 0;  // aborts the handshake
        *sess = s;         // OpenSSL takes the reference
        *id = reinterpret_cast<const unsigned char*>(kIdentity);
        *idlen = sizeof kIdentity - 1;
        return 1;
    }

    static int find_session(SSL* ssl, const unsigned char* id, size_t idlen, SSL_SESSION** sess) {
        auto* m = static_cast<Impl*>(SSL_get_app_data(ssl));
        *sess = nullptr;
        // Another identity: no PSK, and without a certificate the handshake then fails.
        if (idlen != sizeof kIdentity - 1 || std::memcmp(id, kIdentity, idlen) != 0) return 1;
        SSL_SESSION* s = psk_session(ssl, m->psk);
        if (!s) return 0;
        *sess = s;
        return 1;
    }
};

Tls::~Tls() = default;

Status Tls::start(int fd, bool client, const uint8_t psk[32], std::unique_ptr<Tls>* out) {
    const std::string who = client ? "TLS handshake (client)" : "TLS handshake (server)";
    const Ctx& ctx = ctx_for(client);
    if (!ctx.ctx) return {Errc::fatal, who + ": cannot set up OpenSSL: " + ctx.err};
    if (!base::set_nonblock(fd, true)) {
        int e = errno;
        return {Errc::link_failed, who + ": fcntl: " + base::errno_text(e), e};
    }

    std::unique_ptr<Tls> t(new Tls());
    t->impl_ = std::make_unique<Impl>();
    Impl& m = *t->impl_;
    m.fd = fd;
    m.client = client;
    m.err = &t->err_;
    std::memcpy(m.psk, psk, sizeof m.psk);

    ERR_clear_error();
    m.ssl = SSL_new(ctx.ctx);
    BIO* rb = BIO_new(BIO_s_mem());
    BIO* wb = BIO_new(BIO_s_mem());
    if (!m.ssl || !rb || !wb) {
        BIO_free(rb);
        BIO_free(wb);
        return {Errc::fatal, who + ": " + ssl_errors()};
    }
    SSL_set_bio(m.ssl, rb, wb);
    m.rbio = rb;
    m.wbio = wb;
    SSL_set_app_data(m.ssl, &m);
    if (client) {
        SSL_set_psk_use_session_callback(m.ssl, Impl::use_session);
        SSL_set_connect_state(m.ssl);
    } else {
        SSL_set_psk_find_session_callback(m.ssl, Impl::find_session);
        SSL_set_accept_state(m.ssl);
    }
    *out = std::move(t);
    return Status::OK();
}

Tls::Step Tls::handshake_step(Status* err) {
    Impl& m = *impl_;
    const std::string who = m.client ? "TLS handshake (client)" : "TLS handshake (server)";
    for (;;) {
        if (!m.hs_done) {
            ERR_clear_error();
            int r = SSL_do_handshake(m.ssl);
            if (r == 1) {
                m.hs_done = true;
            } else if (int e = SSL_get_error(m.ssl, r); e == SSL_ERROR_ZERO_RETURN) {
                *err = {Errc::link_failed, who + ": peer closed the connection (close_notify)",
                        ECONNRESET};
                return step_failed;
            } else if (e != SSL_ERROR_WANT_READ) {
                unsigned long reason = 0;
                std::string why = ssl_errors(&reason);
                // A PSK mismatch shows as a binder the server cannot verify; the client then
                // reads the server's alert: illegal_parameter from OpenSSL 3.0 (RFC 8446 asks
                // for decrypt_error, which other stacks send).
                if (reason == SSL_R_BINDER_DOES_NOT_VERIFY)
                    why += " (the peer holds another key: not this job's secret?)";
                else if (reason == SSL_R_SSLV3_ALERT_ILLEGAL_PARAMETER ||
                         reason == SSL_R_TLSV1_ALERT_DECRYPT_ERROR)
                    why += " (did the peer refuse our key? another job's secret?)";
                // Send the alert OpenSSL queued, so the peer fails now rather than at its
                // timeout. Best effort: the connection is given up anyway.
                m.send_backlog();
                *err = {Errc::proto_error, who + ": " + why};
                return step_failed;
            }
        }
        // The last flight (the client's Finished) must leave before we report done: the caller
        // may wait to read first, and the server would wait for it until its timeout.
        int s = m.send_backlog();
        if (s < 0) {
            *err = {Errc::link_failed, who + ": " + base::errno_text(m.fail), m.fail};
            return step_failed;
        }
        m.hs_wants_write = s > 0;
        if (m.hs_done && s == 0) {
            // The session holds what it derived; our copy of the key is no longer needed.
            OPENSSL_cleanse(m.psk, sizeof m.psk);
            return step_done;
        }
        if (m.hs_done) return step_again;  // only the backlog is left: wait for EPOLLOUT
        ssize_t f = m.feed();
        if (f == 0) {
            *err = {Errc::link_failed, who + ": peer closed the connection", ECONNRESET};
            return step_failed;
        }
        if (f < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) return step_again;
            int e = errno;
            *err = {Errc::link_failed, who + ": " + base::errno_text(e), e};
            return step_failed;
        }
    }
}

bool Tls::handshake_wants_write() const { return impl_->hs_wants_write; }
bool Tls::handshake_wants_read() const { return !impl_->hs_done; }

Status Tls::handshake(int fd, bool client, const uint8_t psk[32], int64_t timeout_ms,
                      std::unique_ptr<Tls>* out) {
    std::unique_ptr<Tls> t;
    Status st = start(fd, client, psk, &t);
    if (!st.ok()) return st;
    const std::string who = client ? "TLS handshake (client)" : "TLS handshake (server)";
    const int64_t deadline = now_ms() + std::max<int64_t>(timeout_ms, 0);
    for (;;) {
        Step r = t->handshake_step(&st);
        if (r == step_failed) return st;
        if (r == step_done) break;
        int64_t left = deadline - now_ms();
        if (left <= 0)
            return {Errc::link_failed,
                    who + ": timed out after " + std::to_string(timeout_ms) + " ms", ETIMEDOUT};
        pollfd p{fd, short((t->handshake_wants_read() ? POLLIN : 0) |
                           (t->handshake_wants_write() ? POLLOUT : 0)), 0};
        int pr = ::poll(&p, 1, int(std::min<int64_t>(left, 1 << 30)));
        if (pr < 0 && errno != EINTR) {
            int e = errno;
            return {Errc::link_failed, who + ": poll: " + base::errno_text(e), e};
        }
    }
    *out = std::move(t);
    return Status::OK();
}

ssize_t Tls::writev(const iovec* iov, int n) {
    Impl& m = *impl_;
    if (m.fail) return m.report();
    if (m.sent_close || n < 0) {
        errno = n < 0 ? EINVAL : EPIPE;
        return -1;
    }
    if (m.send_backlog() < 0) return -1;
    if (m.backlog() >= kBacklogMax) {
        errno = EAGAIN;
        return -1;
    }
    // Records carry up to 16 KiB: a large element goes to SSL_write_ex directly in whole
    // records (kChunk at a time), while small elements, and the tail of a large one, are
    // copied together into one record. Per element, an MPI header of 128 bytes followed by its
    // payload would otherwise cost a 22-byte-overhead record (and an AEAD call) of its own.
    if (!m.stage) m.stage.reset(new uint8_t[kRecord]);
    size_t taken = 0;
    int i = 0;
    size_t off = 0;  // into iov[i]
    while (taken < kMaxTake && m.backlog() < kBacklogMax) {
        while (i < n && off == iov[i].iov_len) {
            ++i;
            off = 0;
        }
        if (i == n) break;
        const size_t room = kMaxTake - taken;
        const size_t rem = iov[i].iov_len - off;
        const uint8_t* rec;
        size_t len;
        if (rem >= kRecord && room >= kRecord) {
            len = std::min({rem, room, kChunk});
            len -= len % kRecord;
            rec = static_cast<const uint8_t*>(iov[i].iov_base) + off;
            off += len;
        } else {
            len = 0;
            while (i < n && len < kRecord && len < room) {
                size_t c = std::min({iov[i].iov_len - off, kRecord - len, room - len});
                if (c) {
                    std::memcpy(m.stage.get() + len,
                                static_cast<const uint8_t*>(iov[i].iov_base) + off, c);
                }
                len += c;
                off += c;
                if (off == iov[i].iov_len) {
                    ++i;
                    off = 0;
                }
            }
            rec = m.stage.get();
        }
        // Once plaintext is taken it is the caller's bytes on the wire (part of them may have
        // reached the peer already): report it as taken, and a failure on the next call (it
        // sticks in m.fail). Saying -1 here would make a resuming caller (wanlink/replay.hpp)
        // leave bytes out of its log that the peer has counted.
        if (!m.write_plain(rec, len)) return taken ? ssize_t(taken) : -1;
        taken += len;
        if (m.backlog() >= kBacklogMax && m.send_backlog() < 0) return ssize_t(taken);
    }
    if (m.send_backlog() < 0 && taken == 0) return -1;
    return ssize_t(taken);
}

int Tls::flush() {
    Impl& m = *impl_;
    if (m.fail) return m.report();
    return m.send_backlog();
}

size_t Tls::backlog() const { return impl_->backlog(); }

ssize_t Tls::recv(void* buf, size_t n) {
    Impl& m = *impl_;
    if (m.fail) return m.report();
    if (m.got_close) {
        m.close_told = true;
        return 0;
    }
    if (n == 0) return 0;
    auto* out = static_cast<uint8_t*>(buf);
    size_t total = 0;
    // SSL_read_ex hands back at most one record per call: loop to fill the caller's buffer
    // from what is already here, but go to the socket only while we have nothing to return
    // (one ::recv per call at most when data flows, and no EAGAIN syscall after a success).
    while (total < n) {
        ERR_clear_error();
        size_t got = 0;
        int r = SSL_read_ex(m.ssl, out + total, n - total, &got);
        if (r == 1) {
            total += got;
            continue;
        }
        int e = SSL_get_error(m.ssl, r);
        if (e == SSL_ERROR_WANT_READ) {
            if (total > 0) break;
            if (m.eof) {
                // The TCP stream ended without close_notify, maybe inside a record: a
                // truncation (an attacker's FIN or RST looks just like this), never a clean end.
                return m.set_fail(EPIPE,
                                  "TLS: the connection ended without close_notify (truncated)");
            }
            ssize_t f = m.feed();
            if (f > 0) continue;
            if (f == 0) {
                m.eof = true;
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) return -1;
            int err = errno;
            return m.set_fail(err, "TLS recv: " + base::errno_text(err));
        }
        if (e == SSL_ERROR_ZERO_RETURN) {
            m.got_close = true;
            if (total == 0) m.close_told = true;
            break;
        }
        // SSL_ERROR_SSL: a record failed authentication, or the bytes are not TLS records
        // (SSL_ERROR_SYSCALL cannot come from memory BIOs; treated alike). OpenSSL queued an
        // alert: send it, best effort, so the peer learns why.
        m.fail = EBADMSG;
        err_ = "TLS: " + ssl_errors();
        m.send_quietly();                      // cannot replace the cause: the first failure sticks
        if (total > 0) return ssize_t(total);  // pending() says so, the next recv() reports it
        return m.report();
    }
    // Anything a record made OpenSSL answer (a peer's KeyUpdate request would) goes out.
    if (m.backlog() > 0) m.send_quietly();
    return ssize_t(total);
}

bool Tls::pending() const {
    const Impl& m = *impl_;
    if (m.fail) return !m.fail_told;
    if (m.got_close) return !m.close_told;
    // After EOF a call to recv() has an answer (data, or EPIPE), and an edge-triggered epoll
    // does not repeat the EOF.
    if (m.eof) return true;
    return SSL_pending(m.ssl) > 0 || m.rbio_has_record();
}

void Tls::shutdown() {
    Impl& m = *impl_;
    // OpenSSL: SSL_shutdown must not follow a fatal error.
    if (m.fail || m.sent_close) return;
    m.sent_close = true;
    ERR_clear_error();
    SSL_shutdown(m.ssl);  // 0 here: close_notify queued, the peer's not (yet) read
    ERR_clear_error();
    m.send_quietly();
}

const char* Tls::cipher() const { return SSL_get_cipher_name(impl_->ssl); }

bool Tls::ktls_available() {
    // The "tls" ULP attaches only to an established TCP socket, so probe on a real loopback
    // connection. ENOENT: the kernel has no CONFIG_TLS (or cannot load the tls module).
    static const bool ok = [] {
        std::string err;
        base::Fd l(base::tcp_listen("127.0.0.1", 0, 1, &err));
        if (!l) {
            WANMPI_LOG(debug, "kTLS probe: %s", err.c_str());
            return false;
        }
        base::Fd c(base::tcp_connect("127.0.0.1", base::local_port(l.get()), 2000, &err));
        if (!c) {
            WANMPI_LOG(debug, "kTLS probe: %s", err.c_str());
            return false;
        }
        base::Fd a(::accept4(l.get(), nullptr, nullptr, SOCK_CLOEXEC));
        if (::setsockopt(c.get(), SOL_TCP, TCP_ULP, "tls", sizeof "tls") != 0) {
            int e = errno;
            WANMPI_LOG(debug, "kTLS: not available (setsockopt TCP_ULP \"tls\": %s)",
                       base::errno_text(e).c_str());
            return false;
        }
        WANMPI_LOG(debug, "kTLS: available");
        return true;
    }();
    return ok;
}

}  // namespace wanmpi::wanlink
