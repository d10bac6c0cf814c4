// impi-server: the IMPI rendezvous server, spelled as GridMPI users know it.
//   impi-server -server N [-port P] [-auth none|key|wanmpi] [-v]
// Prints "addr:port" on its first line, serves N clients, exits 0 after FINI from all of them,
// non-zero if a client dies or breaks the protocol. With a job secret (WANMPI_JOB_SECRET_FILE,
// docs/security.md) clients must prove it (challenge-response; IMPI's NONE/KEY only if also
// set explicitly). Environment: IMPI_AUTH_NONE (any value),
// IMPI_AUTH_KEY=<decimal 64-bit key>, IMPI_SERVER_PORT, IMPI_SERVER_PORT_RANGE=lo:hi,
// IMPI_NETWORK (which interface's address to print).
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

#include "base/log.hpp"
#include "base/socket.hpp"
#include "base/tunables.hpp"
#include "runtime/impi_server.hpp"
#include "wanlink/handshake.hpp"
#include "wanlink/secret.hpp"

using namespace wanmpi;

static base::Tunable<int64_t> t_join_timeout(
    "IMPI", "JOIN_TIMEOUT", 30,
    "Seconds impi-server (and an IMPI host) gives a new connection to authenticate and join "
    "before dropping it (slow clients and port scanners cannot hold a slot).");

static int usage(const char* msg) {
    if (msg) std::fprintf(stderr, "impi-server: %s\n", msg);
    std::fprintf(stderr,
                 "usage: impi-server -server N [-port P] [-auth none|key|wanmpi] [-v]\n"
                 "  N clients (1..32) join; prints addr:port on its first line.\n"
                 "  environment: WANMPI_JOB_SECRET_FILE=<file> (clients prove the job secret),\n"
                 "               IMPI_AUTH_NONE, IMPI_AUTH_KEY=<key>, IMPI_SERVER_PORT,\n"
                 "               IMPI_SERVER_PORT_RANGE=lo:hi, IMPI_NETWORK=<net/cidr or ifname>\n");
    return 2;
}

static bool parse_u64(const char* s, uint64_t* v) {
    if (!s || !*s) return false;
    char* e = nullptr;
    errno = 0;
    unsigned long long x = std::strtoull(s, &e, 10);
    if (errno || *e) return false;
    *v = x;
    return true;
}

int main(int argc, char** argv) {
    base::log_set_identity("impi-server");
    int n = -1;
    long port = -1;
    std::string auth;
    bool verbose = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if ((a == "-server" || a == "--server") && i + 1 < argc) n = std::atoi(argv[++i]);
        else if ((a == "-port" || a == "--port") && i + 1 < argc) port = std::strtol(argv[++i], nullptr, 10);
        else if ((a == "-auth" || a == "--auth") && i + 1 < argc) auth = argv[++i];
        else if (a == "-v" || a == "--verbose") verbose = true;
        else if (a == "-h" || a == "--help") return usage(nullptr), 0;
        else return usage(("unknown argument '" + a + "'").c_str());
    }
    if (n < 1 || n > 32) return usage("-server N is required, 1 <= N <= 32");
    if (verbose && !std::getenv("WANMPI_LOG_LEVEL")) setenv("WANMPI_LOG_LEVEL", "2", 1);

    impi::ServerConfig cfg;
    cfg.nclients = n;
    cfg.join_timeout_ms = t_join_timeout.get() * 1000;
    cfg.reconnect_ms = wanlink::reconnect_ms();
    const char* env_key = std::getenv("IMPI_AUTH_KEY");
    const char* env_none = std::getenv("IMPI_AUTH_NONE");
    if (env_key && !parse_u64(env_key, &cfg.key)) {
        std::fprintf(stderr, "impi-server: IMPI_AUTH_KEY='%s' is not a decimal 64-bit number\n", env_key);
        return 2;
    }
    // The job secret (WANMPI_JOB_SECRET_FILE / WANMPI_JOB_SECRET): clients then prove it by
    // wanmpi's challenge-response, and IMPI's own methods are refused unless asked for
    // explicitly (IMPI_AUTH_NONE / IMPI_AUTH_KEY / -auth none|key): a plain IMPI client
    // interoperates only where the user allows it.
    base::Status ss = wanlink::job_secret(&cfg.secret);
    if (!ss.ok()) {
        std::fprintf(stderr, "impi-server: %s\n", ss.message().c_str());
        return 2;
    }
    if (cfg.secret.set()) {
        cfg.allow_hmac = true;
        wanlink::random_bytes(cfg.session.data(), cfg.session.size());
    }
    if (auth == "wanmpi") {
        if (!cfg.secret.set()) {
            std::fprintf(stderr, "impi-server: -auth wanmpi needs the job secret "
                                 "(WANMPI_JOB_SECRET_FILE or WANMPI_JOB_SECRET)\n");
            return 2;
        }
        cfg.allow_key = cfg.allow_none = false;
    } else if (auth == "key") {
        if (!env_key) {
            std::fprintf(stderr, "impi-server: -auth key needs the key in IMPI_AUTH_KEY\n");
            return 2;
        }
        cfg.allow_key = true;
        cfg.allow_none = false;
    } else if (auth == "none") {
        cfg.allow_none = true;
        cfg.allow_key = false;
    } else if (!auth.empty()) {
        return usage("-auth takes none, key or wanmpi");
    } else if (cfg.secret.set()) {
        cfg.allow_key = env_key != nullptr;
        cfg.allow_none = env_none != nullptr;
    } else {
        // From the environment, as GridMPI: a key, if set, is required unless IMPI_AUTH_NONE is
        // set too; with neither, no authentication (wanmpi's default, said in the docs).
        cfg.allow_key = env_key != nullptr;
        cfg.allow_none = env_none != nullptr || env_key == nullptr;
    }

    std::string err;
    int fd = -1;
    const char* range = std::getenv("IMPI_SERVER_PORT_RANGE");
    if (port < 0)
        if (const char* p = std::getenv("IMPI_SERVER_PORT")) port = std::strtol(p, nullptr, 10);
    if (port > 65535) return usage("port out of range");
    if (port >= 0) {
        fd = base::tcp_listen("", uint16_t(port), 64, &err);
    } else if (range) {
        unsigned lo = 0, hi = 0;
        if (std::sscanf(range, "%u:%u", &lo, &hi) != 2 || lo == 0 || hi < lo || hi > 65535) {
            std::fprintf(stderr, "impi-server: IMPI_SERVER_PORT_RANGE='%s' is not lo:hi\n", range);
            return 2;
        }
        fd = base::tcp_listen_range("", uint16_t(lo), uint16_t(hi), 64, &err);
    } else {
        fd = base::tcp_listen("", 0, 64, &err);
    }
    if (fd < 0) {
        std::fprintf(stderr, "impi-server: %s\n", err.c_str());
        return 1;
    }
    const char* net = std::getenv("IMPI_NETWORK");
    std::printf("%s:%u\n", base::primary_ipv4(net ? net : "").c_str(), unsigned(base::local_port(fd)));
    std::fflush(stdout);
    std::signal(SIGPIPE, SIG_IGN);
    impi::Server server(cfg, fd);
    int rc = server.run();
    ::close(fd);
    if (rc == 0) WANMPI_LOG(info, "every client sent FINI; exiting");
    return rc;
}
