#include "wanlink/secret.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "base/log.hpp"
#include "base/socket.hpp"
#include "base/tunables.hpp"

namespace wanmpi::wanlink {

using base::Errc;
using base::Status;

// The value of WANMPI_JOB_SECRET is deliberately NOT a tunable: the registry prints current
// values (wanmpi-info, docs/tunables.md). Only the file's path is.
static base::Tunable<std::string> t_secret_file(
    "JOB", "SECRET_FILE", "",
    "File holding the job secret that every cluster of the job and impi-server share "
    "(docs/security.md): it authenticates the clusters to impi-server and to each other and "
    "keys TLS between them. Must be readable by its owner only (chmod 600), as ssh demands of "
    "a private key; at least 16 bytes, e.g. head -c 32 /dev/urandom | base64 > FILE. "
    "WANMPI_JOB_SECRET=... gives the secret itself instead (visible to the same user in "
    "/proc/PID/environ).",
    base::Level::user);
static base::Tunable<std::string> t_security(
    "WAN", "SECURITY", "",
    "What this cluster requires of its connections to other clusters: none (clear text, not "
    "authenticated), auth (every connection proves it belongs to the job: HMAC-SHA-256 "
    "challenge-response keyed by the job secret; data in clear text), tls (auth, and TLS 1.3 "
    "encryption keyed by the job secret). Empty: auth when a job secret is given, else none. "
    "Two clusters use the stricter of their settings. docs/security.md says what each "
    "protects against.",
    base::Level::user);
static base::Tunable<bool> t_allow_plain(
    "WAN", "ALLOW_PLAIN", false,
    "With WANMPI_WAN_SECURITY=auth or tls, still talk to a plain IMPI peer (another IMPI "
    "implementation, which can do neither) in clear text, unauthenticated. Off: such a peer is "
    "refused at start-up with a message naming it.",
    base::Level::user);
static base::Tunable<int64_t> t_reconnect(
    "WAN", "RECONNECT_S", 60,
    "When a connection between clusters breaks (reset by a firewall or NAT, a timeout), both "
    "ends reconnect and resend what the other had not received, and MPI never notices; after "
    "this many seconds without success the job fails, naming the peer. 0: no reconnect (a "
    "broken connection fails the job at once). Between wanmpi clusters only; a plain IMPI peer "
    "cannot resume.",
    base::Level::user);
static base::Tunable<int64_t> t_keepalive(
    "WAN", "KEEPALIVE_S", 30,
    "A resumable connection between clusters (two wanmpi clusters, WANMPI_WAN_RECONNECT_S > 0) "
    "whose peer host has not answered for this many seconds is treated as broken: reconnect, "
    "then failure after WANMPI_WAN_RECONNECT_S. TCP keepalive (probes after a third of it) "
    "and TCP_USER_TIMEOUT, which replaces WANMPI_WAN_TIMEOUT_S on these connections; the "
    "peer's kernel answers the probes, so a rank busy computing is never taken for dead. 0: "
    "no keepalive, WANMPI_WAN_TIMEOUT_S applies.",
    base::Level::tuner);

static constexpr size_t kMinSecret = 16;

static Status check_bytes(std::vector<uint8_t>* b, const std::string& where) {
    if (!b->empty() && b->back() == '\n') b->pop_back();
    if (!b->empty() && b->back() == '\r') b->pop_back();
    if (b->size() < kMinSecret)
        return Status(Errc::invalid,
                      where + ": the job secret is shorter than " + std::to_string(kMinSecret) +
                          " bytes (make one with: head -c 32 /dev/urandom | base64)");
    return Status::OK();
}

Status read_secret_file(const std::string& path, Secret* out) {
    const std::string where = "WANMPI_JOB_SECRET_FILE=" + path;
    base::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd) return Status(Errc::invalid, where + ": " + base::errno_text(errno), errno);
    struct stat st{};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
        return Status(Errc::invalid, where + ": not a regular file");
    // As ssh: a secret others can read is no secret. Said before anything is read from it.
    if (st.st_mode & 077) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
        return Status(Errc::invalid, where + ": permissions " + mode +
                                         " are too open: the job secret must be readable by "
                                         "its owner only (chmod 600 " + path + ")");
    }
    if (st.st_uid != ::geteuid() && st.st_uid != 0)
        return Status(Errc::invalid, where + ": owned by another user (uid " +
                                         std::to_string(st.st_uid) + ")");
    if (st.st_size > 4096) return Status(Errc::invalid, where + ": larger than 4096 bytes");
    std::vector<uint8_t> b(size_t(st.st_size) + 1);
    ssize_t n = ::read(fd.get(), b.data(), b.size());
    if (n < 0) return Status(Errc::invalid, where + ": " + base::errno_text(errno), errno);
    b.resize(size_t(n));
    Status s = check_bytes(&b, where);
    if (!s.ok()) return s;
    out->bytes = std::move(b);
    out->source = where;
    return Status::OK();
}

Status job_secret(Secret* out) {
    static std::mutex mu;
    static bool done = false;
    static Secret cached;
    std::lock_guard<std::mutex> lk(mu);
    if (!done) {
        Secret s;
        const std::string& file = t_secret_file.get();
        if (!file.empty()) {
            Status st = read_secret_file(file, &s);
            if (!st.ok()) return st;
        } else if (const char* v = std::getenv("WANMPI_JOB_SECRET"); v && *v) {
            s.bytes.assign(v, v + std::strlen(v));
            Status st = check_bytes(&s.bytes, "WANMPI_JOB_SECRET");
            if (!st.ok()) return st;
            s.source = "WANMPI_JOB_SECRET";
        }
        cached = std::move(s);
        done = true;
    }
    *out = cached;
    return Status::OK();
}

const char* security_name(Security s) {
    switch (s) {
    case Security::none: return "none";
    case Security::auth: return "auth";
    case Security::tls: return "tls";
    }
    return "?";
}

Status wan_security(Security* out) {
    Secret sec;
    Status st = job_secret(&sec);
    if (!st.ok()) return st;
    const std::string& v = t_security.get();
    Security s;
    if (v.empty()) s = sec.set() ? Security::auth : Security::none;
    else if (v == "none") s = Security::none;
    else if (v == "auth") s = Security::auth;
    else if (v == "tls") s = Security::tls;
    else
        return Status(Errc::invalid, "WANMPI_WAN_SECURITY='" + v + "' is not none, auth or tls");
    if (s != Security::none && !sec.set())
        return Status(Errc::invalid, std::string("WANMPI_WAN_SECURITY=") + security_name(s) +
                                         " needs the job secret: set WANMPI_JOB_SECRET_FILE "
                                         "(or WANMPI_JOB_SECRET) for every cluster and "
                                         "impi-server");
    *out = s;
    return Status::OK();
}

bool allow_plain() { return t_allow_plain.get(); }
int64_t reconnect_ms() { return std::max<int64_t>(0, t_reconnect.get()) * 1000; }
int64_t keepalive_s() { return std::max<int64_t>(0, t_keepalive.get()); }

}  // namespace wanmpi::wanlink
