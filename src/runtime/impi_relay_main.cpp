// impi-relay: lets a private-address cluster join an IMPI job (docs/impi.md, "Private-address
// clusters"; docs/design/relay.md).
//   impi-relay [-trunks T] [-public ADDR] [-private ADDR] [-port P] [-v] SERVER_ADDR:PORT
//   impi-relay -join RELAY_ADDR:PORT [-public ADDR] [-private ADDR] [-v]
// Prints ADDR:PORT (its private address) on its first line; exits 0 when the job ended normally.
#include <csignal>
#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <string>

#include "base/log.hpp"
#include "runtime/impi_relay.hpp"

using namespace wanmpi;

static int usage(const char* msg) {
    if (msg) std::fprintf(stderr, "impi-relay: %s\n", msg);
    std::fprintf(msg ? stderr : stdout,
        "usage: impi-relay [-trunks T] [-public ADDR] [-private ADDR] [-port P] [-v] SERVER_ADDR:PORT\n"
        "       impi-relay -join RELAY_ADDR:PORT [-public ADDR] [-private ADDR] [-v]\n"
        "  Runs on a front-end of a private-address cluster that has a private and a public\n"
        "  address. Prints ADDR:PORT (its private side) on its first line: give it to the\n"
        "  cluster's `mpirun -client ID ADDR:PORT` in place of impi-server's address.\n"
        "  -trunks T     the cluster uses T relays (this one and T-1 started with -join on other\n"
        "                front-ends); each host pair goes through one of them\n"
        "  -join A:P     a further trunk relay, joining the primary relay that printed A:P\n"
        "  -public ADDR  the address the other clusters reach (default: the one that routes to\n"
        "                the server; for -join: this host's other address)\n"
        "  -private ADDR the address the cluster's hosts reach (default: this host's other address;\n"
        "                for -join: the one that routes to the primary)\n"
        "  -port P       the private port (default: any free port)\n"
        "  environment: WANMPI_IMPI_RELAY_SPLICE_MIN, WANMPI_IMPI_RELAY_STARTUP_TIMEOUT,\n"
        "               WANMPI_IMPI_JOIN_TIMEOUT, WANMPI_LOG_LEVEL\n");
    return msg ? 2 : 0;
}

int main(int argc, char** argv) {
    base::log_set_identity("impi-relay");
    impi::RelayConfig cfg = impi::relay_config_from_env();
    bool verbose = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto val = [&](const char* what) -> const char* {
            if (i + 1 >= argc) return nullptr;
            (void)what;
            return argv[++i];
        };
        const char* v = nullptr;
        if (a == "-h" || a == "--help") return usage(nullptr);
        else if (a == "-v" || a == "--verbose") verbose = true;
        else if (a == "-trunks" || a == "--trunks") {
            if (!(v = val("T"))) return usage("-trunks needs a number");
            char* e = nullptr;
            long t = std::strtol(v, &e, 10);
            if (*e || t < 1 || t > 64) return usage("-trunks takes 1..64");
            cfg.trunks = int(t);
        } else if (a == "-join" || a == "--join") {
            if (!(v = val("A:P"))) return usage("-join needs ADDR:PORT");
            cfg.join = v;
        } else if (a == "-public" || a == "--public") {
            if (!(v = val("ADDR"))) return usage("-public needs an address");
            cfg.public_addr = v;
        } else if (a == "-private" || a == "--private") {
            if (!(v = val("ADDR"))) return usage("-private needs an address");
            cfg.private_addr = v;
        } else if (a == "-port" || a == "--port") {
            if (!(v = val("P"))) return usage("-port needs a number");
            char* e = nullptr;
            long p = std::strtol(v, &e, 10);
            if (*e || p < 0 || p > 65535) return usage("-port takes 0..65535");
            cfg.port = int(p);
        } else if (!a.empty() && a[0] != '-' && cfg.server.empty()) {
            cfg.server = a;
        } else {
            return usage(("unknown argument '" + a + "'").c_str());
        }
    }
    if (cfg.join.empty() == cfg.server.empty())
        return usage("give either SERVER_ADDR:PORT (the primary relay) or -join RELAY_ADDR:PORT");
    if (!cfg.join.empty() && cfg.trunks != 1) return usage("-trunks is given to the primary relay only");
    if (verbose && !std::getenv("WANMPI_LOG_LEVEL")) setenv("WANMPI_LOG_LEVEL", "2", 1);
    std::signal(SIGPIPE, SIG_IGN);
    return impi::run_relay(cfg);
}
