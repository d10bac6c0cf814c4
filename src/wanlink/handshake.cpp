#include "wanlink/handshake.hpp"

#include <openssl/evp.h>
#include <openssl/core_names.h>
#include <openssl/rand.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/codec.hpp"
#include "base/log.hpp"
#include "base/socket.hpp"

namespace wanmpi::wanlink {

void random_bytes(uint8_t* p, size_t n) {
    // RAND_bytes only fails when the OS cannot seed it; there is no safe way on without it.
    if (RAND_bytes(p, int(n)) != 1) std::abort();
}

Key hmac(const uint8_t* key, size_t keylen,
         std::initializer_list<std::pair<const void*, size_t>> parts) {
    Key out{};
    // OpenSSL 3's streaming MAC interface over the parts (no concatenated copy).
    EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    EVP_MAC_CTX* ctx = mac ? EVP_MAC_CTX_new(mac) : nullptr;
    OSSL_PARAM params[2];
    char digest[] = "SHA256";
    params[0] = OSSL_PARAM_construct_utf8_string("digest", digest, 0);
    params[1] = OSSL_PARAM_construct_end();
    static const uint8_t zero = 0;
    size_t outl = 0;
    bool ok = ctx && EVP_MAC_init(ctx, keylen ? key : &zero, keylen, params) == 1;
    for (const auto& [p, n] : parts)
        ok = ok && EVP_MAC_update(ctx, static_cast<const uint8_t*>(p), n) == 1;
    ok = ok && EVP_MAC_final(ctx, out.data(), &outl, out.size()) == 1 && outl == out.size();
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(mac);
    if (!ok) std::abort();  // only on a broken libcrypto
    return out;
}

bool equal_mac(const uint8_t* a, const uint8_t* b) {
    uint8_t d = 0;
    for (size_t i = 0; i < kMac; ++i) d |= uint8_t(a[i] ^ b[i]);
    return d == 0;
}

static const char kClient[] = "wanmpi-auth-client";
static const char kServer[] = "wanmpi-auth-server";
static const char kLink[] = "wanmpi-link";

Key auth_client_mac(const Secret& s, const uint8_t ns[32], const uint8_t nc[32],
                    const uint8_t sess[32]) {
    return hmac(s.bytes.data(), s.bytes.size(),
                {{kClient, sizeof kClient - 1}, {ns, kNonce}, {nc, kNonce}, {sess, kNonce}});
}
Key auth_server_mac(const Secret& s, const uint8_t ns[32], const uint8_t nc[32],
                    const uint8_t sess[32]) {
    return hmac(s.bytes.data(), s.bytes.size(),
                {{kServer, sizeof kServer - 1}, {ns, kNonce}, {nc, kNonce}, {sess, kNonce}});
}
Key link_key(const Secret& s, const uint8_t sess[32]) {
    return hmac(s.bytes.data(), s.bytes.size(), {{kLink, sizeof kLink - 1}, {sess, kNonce}});
}

// ---- HELLO --------------------------------------------------------------------------------------
void encode_hello(const Hello& h, uint8_t o[kHello]) {
    std::memset(o, 0, kHello);
    std::memcpy(o, "WLNK", 4);
    o[4] = 3;
    o[5] = h.flags;
    o[6] = h.kind;
    o[7] = h.kind == 0 ? h.lanes : h.lane;
    base::put_be32(o + 8, h.from);
    base::put_be32(o + 12, h.to);
    base::put_be64(o + 16, h.recv_off);
    base::put_be32(o + 24, h.epoch);
    base::put_be32(o + 28, h.pay_left);
    std::memcpy(o + 32, h.nonce.data(), kNonce);
}

std::string decode_hello(const uint8_t in[kHello], Hello* h) {
    if (std::memcmp(in, "WLNK", 4) != 0) return "not a wanmpi link handshake (no WLNK magic)";
    if (in[4] != 3)
        return "link handshake version " + std::to_string(in[4]) +
               " (this wanmpi speaks 3: every cluster and relay of a job must run one release)";
    // Every bit of the flags byte is defined (HelloFlags): nothing to refuse there.
    if (in[6] > 2) return "unknown link handshake kind " + std::to_string(in[6]);
    if (in[6] == 0 && in[7] > kMaxLanes)
        return "link handshake offers " + std::to_string(in[7]) + " lanes (at most " +
               std::to_string(kMaxLanes) + ")";
    if (in[6] != 0 && in[7] >= kMaxLanes)
        return "link handshake names lane " + std::to_string(in[7]) + " (lanes are 0.." +
               std::to_string(kMaxLanes - 1) + ")";
    Hello r;
    r.flags = in[5];
    r.kind = in[6];
    (r.kind == 0 ? r.lanes : r.lane) = in[7];
    r.from = base::get_be32(in + 8);
    r.to = base::get_be32(in + 12);
    r.recv_off = base::get_be64(in + 16);
    r.epoch = base::get_be32(in + 24);
    r.pay_left = base::get_be32(in + 28);
    std::memcpy(r.nonce.data(), in + 32, kNonce);
    *h = r;
    return "";
}

// ---- the state machine --------------------------------------------------------------------------
LinkHandshake::LinkHandshake(bool connector, const Key* keyed, const uint8_t sess[32], Hello mine,
                             uint32_t expect_from, bool defer)
    : connector_(connector), mine_(mine), expect_(expect_from), defer_(defer && !connector) {
    static const Secret empty;
    plain_ = link_key(empty, sess);
    if (keyed) {
        have_keyed_ = true;
        keyed_ = *keyed;
        mine_.flags |= kFlagKeyed;
    } else {
        mine_.flags &= uint8_t(~kFlagKeyed);
    }
    random_bytes(mine_.nonce.data(), kNonce);
    if (connector_) {
        encode_hello(mine_, hc_);
        std::memcpy(out_, hc_, kHello);
        out_len_ = kHello;
        in_want_ = kHello + kMac;  // HELLO_a MAC_a
    } else {
        encode_hello(mine_, ha_);
        in_want_ = kHello;         // HELLO_c
    }
}

LinkHandshake::Result LinkHandshake::fail(std::string why, bool auth) {
    why_ = std::move(why);
    auth_refused_ = auth;
    phase_ = -1;
    return failed;
}

Key LinkHandshake::tls_psk() const {
    static const char t[] = "tls";
    return hmac(key_.data(), key_.size(), {{t, 3}, {hc_, kHello}, {ha_, kHello}});
}

void LinkHandshake::encode_far(const Hello& far, uint8_t out[kHello + kMac]) const {
    encode_hello(far, out);
    Key m = hmac(key_.data(), key_.size(), {{"F", 1}, {hc_, kHello}, {ha_, kHello}, {out, kHello}});
    std::memcpy(out + kHello, m.data(), kMac);
}

std::string LinkHandshake::decode_far(const uint8_t in[kHello + kMac], Hello* far) const {
    Key m = hmac(key_.data(), key_.size(), {{"F", 1}, {hc_, kHello}, {ha_, kHello}, {in, kHello}});
    if (!equal_mac(m.data(), in + kHello))
        return "the relay's report of the far host (FAR) does not verify";
    std::string err = decode_hello(in, far);
    return err.empty() ? "" : "FAR: " + err;
}

// Once both HELLOs' flags are known: the key of this connection, or a refusal when one side
// requires authentication and the two do not both hold the job secret.
LinkHandshake::Result LinkHandshake::choose_key() {
    const bool both_keyed = (peer_.flags & kFlagKeyed) && have_keyed_;
    const bool required = ((peer_.flags | mine_.flags) & kFlagAuth) != 0;
    if (required && !both_keyed) {
        if (!have_keyed_)
            return fail("link handshake: host " + std::to_string(peer_.from) +
                            " requires authentication (WANMPI_WAN_SECURITY=auth or tls) "
                            "but this side has no job secret (WANMPI_JOB_SECRET_FILE)",
                        true);
        return fail("link handshake: host " + std::to_string(peer_.from) +
                        " has no job secret, and this side requires authentication",
                    true);
    }
    key_ = both_keyed ? keyed_ : plain_;
    return again;
}

void LinkHandshake::answer(uint8_t flags, uint64_t recv_off, uint32_t pay_left, uint32_t epoch) {
    if (phase_ != 3) return;
    mine_.flags = uint8_t((flags & ~kFlagKeyed) | (have_keyed_ ? kFlagKeyed : 0));
    mine_.recv_off = recv_off;
    mine_.pay_left = pay_left;
    mine_.epoch = epoch;
    phase_ = 4;
}

LinkHandshake::Result LinkHandshake::step(int fd) {
    if (phase_ < 0) return failed;
    for (;;) {
        // Write what is queued first; a handshake message is small, a fresh socket takes it.
        while (out_off_ < out_len_) {
            ssize_t w =
                ::send(fd, out_ + out_off_, out_len_ - out_off_, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (w > 0) {
                out_off_ += size_t(w);
                continue;
            }
            if (w < 0 && errno == EINTR) continue;
            if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return again;
            return fail("link handshake: sending: " + base::errno_text(errno));
        }
        out_off_ = out_len_ = 0;
        if (phase_ == 2) return done;  // our last message is out
        while (in_got_ < in_want_) {
            // Exactly what the handshake needs: later bytes belong to TLS or the IMPI stream.
            ssize_t r = ::recv(fd, in_ + in_got_, in_want_ - in_got_, MSG_DONTWAIT);
            if (r > 0) {
                in_got_ += size_t(r);
                continue;
            }
            if (r < 0 && errno == EINTR) continue;
            if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return again;
            return fail(r == 0 ? "link handshake: the peer closed the connection"
                               : "link handshake: receiving: " + base::errno_text(errno));
        }
        // A complete message from the peer.
        if (phase_ == 0) {
            std::string err = decode_hello(in_, &peer_);
            if (!err.empty()) return fail("link handshake: " + err);
            if (peer_.from != expect_)
                return fail("link handshake: the peer says it is host " +
                            std::to_string(peer_.from) +
                            ", expected host " + std::to_string(expect_));
            if (peer_.to != mine_.from)
                return fail("link handshake: the peer wants host " + std::to_string(peer_.to) +
                            ", this is host " + std::to_string(mine_.from));
            if (peer_.kind != mine_.kind && !connector_)
                mine_.kind = peer_.kind;  // the acceptor answers in the connector's kind
            if (!connector_ && mine_.kind != 0) mine_.lane = peer_.lane;  // ... and lane
            if (connector_) {
                if (Result r = choose_key(); r == failed) return r;
                std::memcpy(ha_, in_, kHello);
                Key want = hmac(key_.data(), key_.size(), {{"A", 1}, {hc_, kHello}, {ha_, kHello}});
                if (!equal_mac(want.data(), in_ + kHello))
                    return fail("link handshake: host " + std::to_string(peer_.from) +
                                    " did not prove it holds the job secret (wrong "
                                    "WANMPI_JOB_SECRET, or not this job)",
                                true);
                Key mc = hmac(key_.data(), key_.size(), {{"C", 1}, {hc_, kHello}, {ha_, kHello}});
                std::memcpy(out_, mc.data(), kMac);
                out_len_ = kMac;
                phase_ = 2;
                continue;
            }
            std::memcpy(hc_, in_, kHello);
            if (defer_) {
                phase_ = 3;
                return ready;
            }
            phase_ = 4;
        }
        if (phase_ == 3) return ready;  // answer() not called yet
        if (phase_ == 4) {
            // Acceptor: HELLO_a and MAC_a, now that our HELLO is settled.
            if (Result r = choose_key(); r == failed) return r;
            encode_hello(mine_, ha_);
            Key ma = hmac(key_.data(), key_.size(), {{"A", 1}, {hc_, kHello}, {ha_, kHello}});
            std::memcpy(out_, ha_, kHello);
            std::memcpy(out_ + kHello, ma.data(), kMac);
            out_len_ = kHello + kMac;
            in_got_ = 0;
            in_want_ = kMac;
            phase_ = 1;
            continue;
        }
        // phase 1, acceptor: MAC_c.
        Key want = hmac(key_.data(), key_.size(), {{"C", 1}, {hc_, kHello}, {ha_, kHello}});
        if (!equal_mac(want.data(), in_))
            return fail("link handshake: the peer claiming host " + std::to_string(peer_.from) +
                            " did not prove it holds the job secret (a stranger, a replayed "
                            "handshake, or a wrong WANMPI_JOB_SECRET)",
                        true);
        return done;
    }
}

}  // namespace wanmpi::wanlink
