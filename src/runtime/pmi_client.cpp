#include "runtime/pmi_client.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/log.hpp"
#include "base/socket.hpp"

namespace wanmpi::runtime {

using base::Errc;
using base::Status;

namespace {

// Strict decimal parse of an environment variable; nullopt if unset.
// *bad is set when the variable is set but malformed.
std::optional<long long> env_int(const char* name, bool* bad) {
    const char* s = std::getenv(name);
    if (!s) return std::nullopt;
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0') {
        *bad = true;
        return std::nullopt;
    }
    return v;
}

uint32_t random32() {
    uint32_t r = 0;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != sizeof r)
        r = static_cast<uint32_t>(getpid()) * 2654435761u ^ static_cast<uint32_t>(time(nullptr));
    return r;
}

// Launchers whose ranks would otherwise each come up as a singleton (rank 0 of 1).
const char* pmix_launcher_hint() {
    static const char* vars[] = {"PMIX_RANK", "PMIX_NAMESPACE", "OMPI_COMM_WORLD_SIZE",
                                 "PRTE_LAUNCHED", "PMI2_FD"};
    for (const char* v : vars)
        if (std::getenv(v)) return v;
    return nullptr;
}

}  // namespace

std::unique_ptr<PmiClient> PmiClient::singleton() {
    std::unique_ptr<PmiClient> c(new PmiClient());
    c->singleton_ = true;
    char name[64];
    std::snprintf(name, sizeof name, "singleton_%d_%08x", static_cast<int>(getpid()), random32());
    c->kvsname_ = name;
    c->appnum_ = 0;
    c->universe_size_ = 1;
    c->keylen_max_ = 256;
    c->vallen_max_ = (1 << 20) + 1;
    return c;
}

std::unique_ptr<PmiClient> PmiClient::from_env(Status* err) {
    auto fail = [&](Status s) -> std::unique_ptr<PmiClient> {
        if (err) *err = std::move(s);
        return nullptr;
    };
    const char* fd_s = std::getenv("PMI_FD");
    const char* port_s = std::getenv("PMI_PORT");
    if (!fd_s && !port_s) {
        if (const char* v = pmix_launcher_hint())
            return fail(Status(Errc::fatal,
                               std::string("started by a launcher that does not speak PMI-1 (") +
                                   v + " is set; Open MPI's mpirun or a PMIx launcher?); start "
                                       "wanmpi programs with wanmpi's mpirun or MPICH's "
                                       "mpiexec.hydra"));
        if (err) *err = Status::OK();
        return singleton();
    }

    std::unique_ptr<PmiClient> c(new PmiClient());
    bool bad = false;
    bool rank_from_env = true;
    if (fd_s) {
        auto fd = env_int("PMI_FD", &bad);
        if (bad || !fd || *fd < 0 || *fd > 1 << 20)
            return fail(Status(Errc::fatal, std::string("PMI_FD='") + fd_s + "' is not a file "
                                                "descriptor number"));
        int f = static_cast<int>(*fd);
        if (fcntl(f, F_GETFD) < 0)
            return fail(Status(Errc::fatal, "PMI_FD=" + std::to_string(f) +
                                                " is not an open file descriptor (" +
                                                base::errno_text(errno) + ")",
                               errno));
        c->fd_ = f;
    } else {
        auto hp = base::parse_host_port(port_s);
        if (!hp)
            return fail(Status(Errc::fatal,
                               std::string("PMI_PORT='") + port_s + "' is not host:port"));
        std::string e;
        int f = base::tcp_connect(hp->host, hp->port, 30000, &e);
        if (f < 0)
            return fail(Status(Errc::link_failed,
                               "cannot reach the process manager at PMI_PORT: " + e, errno));
        base::set_nodelay(f);
        c->fd_ = f;
        bad = false;
        auto id = env_int("PMI_ID", &bad);
        if (bad) return fail(Status(Errc::fatal, "PMI_ID is not an integer"));
        if (id) {
            // MPICH's PMI_PORT handshake: the server answers with the rank and size.
            //   -> cmd=initack pmiid=N
            //   <- cmd=initack / cmd=set size=S / cmd=set rank=R / cmd=set debug=D
            rank_from_env = false;
            PmiMsg r;
            Status s = c->call(PmiMsg("initack").add("pmiid", *id), "initack", &r);
            if (!s.ok()) return fail(s);
            long long got[3] = {-1, -1, 0};
            const char* names[3] = {"size", "rank", "debug"};
            for (int i = 0; i < 3; ++i) {
                s = c->recv(&r);
                if (!s.ok()) return fail(s);
                auto v = r.get_int(names[i]);
                if (r.cmd != "set" || !v)
                    return fail(Status(Errc::proto_error,
                                       std::string("PMI initack: expected \"cmd=set ") + names[i] +
                                           "=...\" from the process manager, got \"" +
                                           printable_excerpt(format_pmi_line(r)) + "\""));
                got[i] = *v;
            }
            c->size_ = static_cast<int>(got[0]);
            c->rank_ = static_cast<int>(got[1]);
        }
    }
    if (rank_from_env) {
        bad = false;
        auto r = env_int("PMI_RANK", &bad);
        auto n = env_int("PMI_SIZE", &bad);
        if (bad) return fail(Status(Errc::fatal, "PMI_RANK or PMI_SIZE is not an integer"));
        c->rank_ = r ? static_cast<int>(*r) : 0;
        c->size_ = n ? static_cast<int>(*n) : 1;
    }
    if (c->size_ < 1 || c->rank_ < 0 || c->rank_ >= c->size_)
        return fail(Status(Errc::fatal, "invalid PMI rank " + std::to_string(c->rank_) +
                                            " of size " + std::to_string(c->size_)));
    // The application's children (system(), popen()) must not inherit the connection.
    base::set_cloexec(c->fd_);
    Status s = c->connect_and_init();
    if (!s.ok()) return fail(s);
    if (err) *err = Status::OK();
    return c;
}

Status PmiClient::connect_and_init() {
    PmiMsg r;
    Status s = call(PmiMsg("init").add("pmi_version", 1).add("pmi_subversion", 1),
                    "response_to_init", &r);
    if (!s.ok()) return s;
    if (auto v = r.get_int("pmi_version"); v && *v != 1)
        return fail(Status(Errc::proto_error,
                           "process manager speaks PMI version " + std::to_string(*v) + ", not 1"));
    s = call(PmiMsg("get_maxes"), "maxes", &r);
    if (!s.ok()) return s;
    auto kn = r.get_int("kvsname_max"), kl = r.get_int("keylen_max"), vl = r.get_int("vallen_max");
    if (!kn || !kl || !vl || *kn < 2 || *kl < 2 || *vl < 2)
        return fail(Status(Errc::proto_error, "malformed PMI maxes reply: \"" +
                                                  printable_excerpt(format_pmi_line(r)) + "\""));
    kvsname_max_ = static_cast<size_t>(*kn);
    keylen_max_ = static_cast<size_t>(*kl);
    vallen_max_ = static_cast<size_t>(*vl);
    s = call(PmiMsg("get_my_kvsname"), "my_kvsname", &r);
    if (!s.ok()) return s;
    const std::string* name = r.find("kvsname");
    if (!name || name->empty())
        return fail(Status(Errc::proto_error, "PMI my_kvsname reply without a kvsname"));
    kvsname_ = *name;
    s = call(PmiMsg("get_appnum"), "appnum", &r);
    if (!s.ok()) return s;
    appnum_ = static_cast<int>(r.get_int("appnum").value_or(0));
    s = call(PmiMsg("get_universe_size"), "universe_size", &r);
    if (!s.ok()) return s;
    universe_size_ = static_cast<int>(r.get_int("size").value_or(-1));
    return Status::OK();
}

PmiClient::~PmiClient() {
    if (fd_ >= 0) ::close(fd_);
}

Status PmiClient::fail(Status s) {
    last_error_ = s;
    return s;
}

Status PmiClient::send(const PmiMsg& m) {
    if (fd_ < 0)
        return fail(Status(Errc::invalid, finalized_ ? "PMI used after finalize"
                                                     : "PMI connection is closed"));
    std::string line = format_pmi_line(m);
    if (base::write_full(fd_, line.data(), line.size()) < 0) {
        int e = errno;
        return fail(Status(Errc::link_failed,
                           "lost the connection to the process manager (mpirun/mpiexec gone?): "
                           "write: " + base::errno_text(e),
                           e));
    }
    return Status::OK();
}

Status PmiClient::recv(PmiMsg* m) {
    for (;;) {
        if (auto line = in_.next_line()) {
            Status s = parse_pmi_line(*line, m);
            if (!s.ok())
                return fail(Status(Errc::proto_error, "bad PMI reply from the process manager: " +
                                                          s.message() + ": \"" +
                                                          printable_excerpt(*line) + "\""));
            return Status::OK();
        }
        if (in_.overflow())
            return fail(Status(Errc::proto_error, "PMI reply line too long"));
        char buf[4096];
        ssize_t n = ::read(fd_, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int e = errno;
            return fail(Status(Errc::link_failed,
                               "lost the connection to the process manager: read: " +
                                   base::errno_text(e),
                               e));
        }
        if (n == 0)
            return fail(Status(Errc::link_failed,
                               "lost the connection to the process manager (mpirun/mpiexec "
                               "exited or killed the job)"));
        in_.append(buf, static_cast<size_t>(n));
    }
}

Status PmiClient::call(const PmiMsg& q, const char* expect, PmiMsg* reply) {
    Status s = send(q);
    if (!s.ok()) return s;
    s = recv(reply);
    if (!s.ok()) return s;
    if (reply->cmd != expect)
        return fail(Status(Errc::proto_error, "PMI " + q.cmd + ": expected \"cmd=" + expect +
                                                  "\" from the process manager, got \"" +
                                                  printable_excerpt(format_pmi_line(*reply)) +
                                                  "\""));
    if (auto rc = reply->get_int("rc"); rc && *rc != 0) {
        const std::string* msg = reply->find("msg");
        return fail(Status(Errc::proto_error, "PMI " + q.cmd + " failed (rc=" +
                                                  std::to_string(*rc) + "): " +
                                                  (msg ? *msg : std::string("no message"))));
    }
    return Status::OK();
}

Status PmiClient::put(const std::string& key, const std::string& value) {
    if (!pmi_key_ok(key) || key.size() > max_key_len())
        return fail(Status(Errc::invalid, "PMI key '" + printable_excerpt(key) +
                                              "' is empty, too long (max " +
                                              std::to_string(max_key_len()) +
                                              ") or contains space, '=' or backslash"));
    if (value.size() > max_value_len())
        return fail(Status(Errc::invalid, "PMI value for '" + key + "' has " +
                                              std::to_string(value.size()) + " bytes, max is " +
                                              std::to_string(max_value_len())));
    if (value.find('\n') != std::string::npos || value.find('\0') != std::string::npos)
        return fail(Status(Errc::invalid, "PMI value for '" + key + "' contains newline or NUL"));
    if (singleton_) {
        local_[key] = value;
        return Status::OK();
    }
    PmiMsg r;
    return call(PmiMsg("put").add("kvsname", kvsname_).add("key", key).add("value", value),
                "put_result", &r);
}

Status PmiClient::fence() {
    if (singleton_) return Status::OK();
    PmiMsg r;
    Status s = send(PmiMsg("barrier_in"));
    if (!s.ok()) return s;
    s = recv(&r);
    if (!s.ok()) return s;
    if (r.cmd != "barrier_out")
        return fail(Status(Errc::proto_error, "PMI barrier: expected \"cmd=barrier_out\", got \"" +
                                                  printable_excerpt(format_pmi_line(r)) + "\""));
    // wanmpi's mpirun answers rc=-1 when a rank exited and the barrier can never complete.
    if (auto rc = r.get_int("rc"); rc && *rc != 0) {
        const std::string* msg = r.find("msg");
        return fail(Status(Errc::peer_failed,
                           "PMI barrier failed: " + (msg ? *msg : std::string("no reason given"))));
    }
    return Status::OK();
}

Status PmiClient::get(const std::string& key, std::string* value, bool* found) {
    *found = false;
    if (!pmi_key_ok(key) || key.size() > max_key_len())
        return fail(Status(Errc::invalid, "PMI key '" + printable_excerpt(key) + "' is invalid"));
    if (singleton_) {
        auto it = local_.find(key);
        if (it != local_.end()) {
            *value = it->second;
            *found = true;
        }
        return Status::OK();
    }
    PmiMsg r;
    Status s = send(PmiMsg("get").add("kvsname", kvsname_).add("key", key));
    if (!s.ok()) return s;
    s = recv(&r);
    if (!s.ok()) return s;
    if (r.cmd != "get_result")
        return fail(Status(Errc::proto_error, "PMI get: expected \"cmd=get_result\", got \"" +
                                                  printable_excerpt(format_pmi_line(r)) + "\""));
    // Hydra and older servers: rc=-1 when not found. MPICH >= 4.1 servers: found=FALSE.
    auto rc = r.get_int("rc");
    const std::string* f = r.find("found");
    if ((rc && *rc != 0) || (f && (*f == "FALSE" || *f == "false" || *f == "0")))
        return Status::OK();
    const std::string* v = r.find("value");
    if (!v) return fail(Status(Errc::proto_error, "PMI get_result without a value"));
    *value = *v;
    *found = true;
    return Status::OK();
}

std::optional<std::string> PmiClient::get(const std::string& key) {
    std::string v;
    bool found = false;
    if (!get(key, &v, &found).ok() || !found) return std::nullopt;
    return v;
}

Status PmiClient::abort(int code, const std::string& msg) {
    if (singleton_ || fd_ < 0) return Status::OK();
    // No reply: the process manager kills the job (Hydra does not answer abort either).
    std::string one_line = msg;
    for (char& ch : one_line)
        if (ch == '\n' || ch == '\r' || ch == '\0') ch = ' ';
    return send(PmiMsg("abort").add("exitcode", code).add("message", one_line));
}

Status PmiClient::finalize() {
    if (finalized_) return Status::OK();
    finalized_ = true;
    if (singleton_) return Status::OK();
    PmiMsg r;
    Status s = call(PmiMsg("finalize"), "finalize_ack", &r);
    ::close(fd_);
    fd_ = -1;
    return s;
}

}  // namespace wanmpi::runtime
