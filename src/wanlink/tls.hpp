// TLS 1.3 on one inter-cluster connection (issue 13, docs/security.md), keyed by a 32-byte
// pre-shared key that both ends derived from the job secret during the link handshake
// (wanlink/handshake.hpp). A PSK handshake authenticates both ends by itself: only a holder of
// the job secret can complete it, so there are no certificates to manage.
//
// Data path. OpenSSL does the record layer in user space through memory BIOs: writev()
// encrypts into a bounded ciphertext backlog and sends it with ::send, recv() feeds what
// ::recv returns into OpenSSL and hands back plaintext. So the caller sees the semantics of a
// nonblocking socket (bytes accepted, -1/EAGAIN, 0 at an orderly end) and never meets OpenSSL's
// "retry with the same arguments" rule. Kernel TLS: where the kernel has the "tls" TCP ULP,
// ktls_available() says so (this machine's kernel has CONFIG_TLS unset; see docs/security.md).
//
// Errors carry errno values the wan route already understands: EAGAIN (try later), EPIPE /
// ECONNRESET / ETIMEDOUT (the TCP connection broke: a reconnect may follow), EBADMSG (a record
// failed authentication or the stream is not TLS: tampering; error() has OpenSSL's reason),
// and 0 from recv() only after the peer's close_notify (a bare EOF is truncation: -1/EPIPE).
// A failure other than EAGAIN is final: every later call fails with the same errno.
//
// Ownership: a Tls does not own the fd (the caller closes it). Threading: one thread at a time
// per object; separate objects are independent.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.hpp"

namespace wanmpi::wanlink {

class Tls {
public:
    ~Tls();
    Tls(const Tls&) = delete;
    Tls& operator=(const Tls&) = delete;

    // Runs the TLS 1.3 PSK handshake (TLS_AES_128_GCM_SHA256, no session tickets, no
    // post-handshake messages) on a connected socket, as client or server, within timeout_ms.
    // The socket may be blocking or not; on return it is nonblocking. A peer with another key
    // fails here (Errc::proto_error, with OpenSSL's reason in the message); a broken or silent
    // connection with Errc::link_failed (the message says which: closed, reset, timed out).
    // Messages name the role ("TLS handshake (client): ..."), not the peer: the caller adds it.
    // Data the peer sent right behind its handshake may already be read from the socket:
    // look at pending() before waiting for the socket.
    static base::Status handshake(int fd, bool client, const uint8_t psk[32], int64_t timeout_ms,
                                  std::unique_ptr<Tls>* out);
    // The same without blocking, for an event loop (impi-relay): start() sets the connection
    // up; handshake_step() advances with what the socket has and returns step_done,
    // step_again (wait for EPOLLIN while handshake_wants_read(), EPOLLOUT while
    // handshake_wants_write()), or
    // step_failed (*err says why, as handshake() would). The object is usable for data only
    // after step_done; the same rule about pending() applies then.
    static base::Status start(int fd, bool client, const uint8_t psk[32], std::unique_ptr<Tls>* out);
    enum Step { step_done, step_again, step_failed };
    Step handshake_step(base::Status* err);
    bool handshake_wants_write() const;
    bool handshake_wants_read() const;

    // Like ::writev on a nonblocking socket: how many plaintext bytes were taken (they will
    // reach the peer; part may wait in the ciphertext backlog, see backlog()), or -1 with errno.
    // Takes at most 1 MiB per call, and nothing (-1/EAGAIN) while 256 KiB of ciphertext wait.
    // Small elements are coalesced into records of up to 16 KiB.
    ssize_t writev(const iovec* iov, int n);
    // Sends what waits in the ciphertext backlog. 0 when it is empty, 1 when some remains
    // (wait for EPOLLOUT), -1 with errno on a broken connection.
    int flush();
    size_t backlog() const;
    // Like ::recv(fd, buf, n, MSG_DONTWAIT).
    ssize_t recv(void* buf, size_t n);
    // recv() has an answer without the socket becoming readable: decrypted plaintext, a whole
    // record already read from the socket, or an end or error not yet returned. epoll does not
    // signal for these, so after recv() returned data, call it again while this is true.
    // False after recv() returned -1/EAGAIN.
    bool pending() const;
    // Sends close_notify (best effort, never blocks): it is queued behind the backlog, so
    // flush() until 0 to be sure it left. writev() fails with EPIPE afterwards.
    void shutdown();

    const std::string& error() const { return err_; }  // the reason of the last failure
    const char* cipher() const;

    // Whether this kernel offers the "tls" TCP ULP (kTLS). Probed once.
    static bool ktls_available();

private:
    Tls() = default;
    struct Impl;
    std::unique_ptr<Impl> impl_;
    std::string err_;
};

}  // namespace wanmpi::wanlink
