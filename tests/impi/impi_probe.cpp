// impi_probe: a PMI program (no MPI library) that does what MPI_Init does in an IMPI job:
// impi::startup() over the PMI key-value space (host sockets, the agent on PMI rank 0, the job
// spread to every rank, the dance), then checks every host-to-host connection by exchanging world
// ranks, prints what it learned, and ends with FINI. Run it under `mpirun -client ID ADDR:PORT`.
//
//   impi_probe [--die-rank R] [--watch] [--no-linger] [--marker=...]
//     --die-rank R  world rank R exits 3 once the start-up is complete (a cluster dies)
//     --watch       the agents wait (30 s at most) for the server connection to close and report
//                   the loss (exit 4) instead of finishing
//     --no-linger   exit right after FINI. By default an agent keeps its process (and so its
//                   server socket) until the server closes the connection, at most 10 s:
//                   impi-server before its FINI-then-close fix took a client that sends FINI and
//                   exits at once for a dead one (see the IMPI agent's report).
// Output, one line per rank:
//   "rank R/N client C host H/NH maxlen M tag_ub T hiwater H ackmark A xsize X maxlinear L job D"
// and from each cluster's agent "client C versions: 0=V 1=V ..." (the version matrix row);
// world rank 0 prints " No Errors" after FINI.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <poll.h>
#include <string>
#include <unistd.h>

#include "base/codec.hpp"
#include "base/socket.hpp"
#include "runtime/impi_startup.hpp"
#include "runtime/pmi_client.hpp"

using namespace wanmpi;

namespace {

int g_rank = -1;

[[noreturn]] void die(const std::string& m, int code = 1) {
    std::fprintf(stderr, "impi_probe: rank %d: %s\n", g_rank, m.c_str());
    std::fflush(stderr);
    _exit(code);
}

std::string digest(const std::string& s) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    char b[17];
    std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(h));
    return b;
}

}  // namespace

int main(int argc, char** argv) {
    int die_rank = -1;
    bool watch = false;
    bool linger = true;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--die-rank" && i + 1 < argc) die_rank = std::atoi(argv[++i]);
        else if (a == "--watch") watch = true;
        else if (a == "--no-linger") linger = false;
        else if (a.rfind("--marker=", 0) == 0) continue;
        else die("unknown argument " + a, 2);
    }
    base::Status err;
    auto pmi = runtime::PmiClient::from_env(&err);
    if (!pmi) die("PMI: " + err.message());

    impi::StartupOptions opt;
    bool enabled = false;
    base::Status s = impi::startup_options_from_env(&opt, &enabled);
    if (!s.ok()) die(s.message());
    if (!enabled) die("not an IMPI job (WANMPI_IMPI_SERVER is not set; use mpirun -client)");
    impi::Startup st;
    s = impi::startup(*pmi, opt, &st);
    if (!s.ok()) {
        pmi->abort(1, "IMPI start-up failed");
        die("IMPI start-up failed: " + s.message());
    }
    g_rank = st.rank;
    const impi::Job& job = st.job;

    // Every host connection reaches the host the job says it does.
    for (size_t h = 0; h < st.conns.size(); ++h) {
        if (!st.conns[h]) continue;  // myself, or a host of my own cluster
        uint8_t b[4];
        base::put_be32(b, uint32_t(st.rank));
        if (base::write_full(st.conns[h].get(), b, 4) != 4)
            die("write to host " + std::to_string(h));
    }
    for (size_t h = 0; h < st.conns.size(); ++h) {
        if (!st.conns[h]) continue;
        uint8_t b[4];
        if (base::read_full(st.conns[h].get(), b, 4) != 4)
            die("read from host " + std::to_string(h));
        uint32_t r = base::get_be32(b);
        if (int(r) != job.hosts[h].first_rank)
            die("host " + std::to_string(h) + " says it is rank " + std::to_string(r) +
                ", the job says " + std::to_string(job.hosts[h].first_rank));
    }
    std::printf("rank %d/%d client %d host %d/%zu maxlen %u tag_ub %d hiwater %u ackmark %u "
                "xsize %d maxlinear %d job %s\n",
                st.rank, job.size(), st.client, st.host, job.hosts.size(), job.maxlen, job.tag_ub,
                job.hiwater, job.ackmark, job.xsize, job.maxlinear,
                digest(impi::encode_job(job)).c_str());
    if (st.agent) {
        std::string row = "client " + std::to_string(st.client) + " versions:";
        for (int c = 0; c < job.nclients(); ++c)
            row += " " + std::to_string(c) + "=" + impi::version_text(job.version(st.client, c));
        std::printf("%s\n", row.c_str());
    }
    std::fflush(stdout);
    if (!(s = pmi->fence()).ok()) die("fence: " + s.message());
    if (st.rank == die_rank) die("dying on purpose (--die-rank)", 3);

    if (watch && st.agent) {
        pollfd p{st.agent->server_fd(), POLLIN, 0};
        if (poll(&p, 1, 30000) != 1) die("the server connection stayed open for 30 s");
        for (int i = 0; i < 100 && (s = st.agent->poll_server()).ok(); ++i) poll(&p, 1, 100);
        die("agent of client " + std::to_string(st.client) + ": " + s.message(), 4);
    }
    // MPI_Finalize: everyone of this cluster is done with the others, then the agent sends FINI.
    if (!(s = pmi->fence()).ok()) die("fence: " + s.message());
    for (auto& c : st.conns) c.reset();
    int lingering = -1;
    if (st.agent) {
        if (linger) lingering = dup(st.agent->server_fd());
        if (!(s = st.agent->fini()).ok()) die("FINI: " + s.message());
    }
    if (lingering >= 0) {
        pollfd p{lingering, POLLIN, 0};
        (void)poll(&p, 1, 10000);  // the server closes every connection after the last FINI
        close(lingering);
    }
    pmi->finalize();
    if (st.rank == 0) std::printf(" No Errors\n");
    return 0;
}
