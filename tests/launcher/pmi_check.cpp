// Test program for the launcher: uses the PMI-1 client directly (no MPI library), so it runs under
// wanmpi's mpirun and under MPICH's mpiexec.hydra alike.
//
//   pmi_check [kvs]               put/fence/get across all ranks, values up to max_value_len();
//                                 rank 0 prints " No Errors"
//   pmi_check hang DIR            init, write DIR/pid.<rank>, fence, then wait forever
//   pmi_check kill R SIG DIR      like hang, but rank R raises SIG after the fence
//   pmi_check exit R CODE DIR     like hang, but rank R exits with CODE after the fence
//   pmi_check abort R CODE DIR    like hang, but rank R calls PMI abort(CODE, message), then waits
//   pmi_check malformed R DIR     like hang, but rank R writes a malformed line on its PMI socket
//   pmi_check flood R DIR         like hang, but rank R writes 1 MiB without a newline to PMI
//   pmi_check noinit R            rank R exits 0 without touching PMI; the others fence
//   pmi_check peerfail R          rank R exits 3 after init; the others' fence must fail cleanly
//   pmi_check stdin               every rank reports what it reads on stdin (rank 0 echoes it)
//   pmi_check env VAR...          print "rank R: VAR=value" (or "VAR unset")
//   pmi_check lines N             print N long lines per rank, as fast as possible
//   pmi_check where               print rank, size, FAKE_HOST and WANMPI_LOCAL_RANK/SIZE
//   pmi_check sleep SECONDS       init, fence, sleep, finalize
// Extra arguments of the form --marker=... are ignored (tests find survivors by them).
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

#include "runtime/pmi_client.hpp"

using wanmpi::base::Status;
using wanmpi::runtime::PmiClient;

namespace {

[[noreturn]] void die(const std::string& msg) {
    std::fprintf(stderr, "pmi_check: %s\n", msg.c_str());
    std::exit(1);
}

std::unique_ptr<PmiClient> init() {
    Status err;
    auto c = PmiClient::from_env(&err);
    if (!c) die("PMI init failed: " + err.message());
    return c;
}

void check(const Status& s, const char* what) {
    if (!s.ok()) die(std::string(what) + ": " + s.message());
}

void write_pid(const std::string& dir, int rank) {
    std::string path = dir + "/pid." + std::to_string(rank);
    FILE* f = std::fopen(path.c_str(), "w");
    if (!f) die("cannot write " + path + ": " + std::strerror(errno));
    std::fprintf(f, "%d\n", static_cast<int>(getpid()));
    std::fclose(f);
}

[[noreturn]] void wait_forever() {
    for (;;) pause();
}

std::string value_for(int rank, size_t len, const std::string& kvs) {
    std::string v = "r" + std::to_string(rank) + "_" + kvs + "_";
    while (v.size() < len) v += static_cast<char>('a' + (v.size() * 7 + rank) % 26);
    v.resize(len);
    return v;
}

int kvs_test() {
    auto c = init();
    int rank = c->rank(), size = c->size();
    if (c->kvsname().empty()) die("empty kvsname");
    // Round 1: short values from everyone.
    check(c->put("short" + std::to_string(rank), value_for(rank, 40, c->kvsname())), "put");
    check(c->fence(), "fence 1");
    for (int r = 0; r < size; ++r) {
        auto v = c->get("short" + std::to_string(r));
        if (!v || *v != value_for(r, 40, c->kvsname()))
            die("rank " + std::to_string(rank) + ": wrong value for short" + std::to_string(r));
    }
    // Round 2: values of the maximum length the server allows, and a missing key.
    size_t maxlen = c->max_value_len();
    if (maxlen < 1023) die("max value length " + std::to_string(maxlen) + " < 1023");
    check(c->put("long" + std::to_string(rank), value_for(rank, maxlen, c->kvsname())), "put long");
    if (c->put("toolong", std::string(maxlen + 1, 'x')).ok()) die("over-long value accepted");
    check(c->fence(), "fence 2");
    for (int r = 0; r < size; ++r) {
        auto v = c->get("long" + std::to_string(r));
        if (!v || *v != value_for(r, maxlen, c->kvsname()))
            die("rank " + std::to_string(rank) + ": wrong value for long" + std::to_string(r));
    }
    std::string dummy;
    bool found = true;
    check(c->get("no_such_key", &dummy, &found), "get missing");
    if (found) die("missing key reported as found");
    check(c->fence(), "fence 3");
    check(c->finalize(), "finalize");
    if (rank == 0)
        std::printf("pmi_check: %d ranks, kvsname %s, appnum %d, max value %zu\n No Errors\n", size,
                    c->kvsname().c_str(), c->appnum(), maxlen);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> a;
    for (int i = 1; i < argc; ++i)
        if (std::strncmp(argv[i], "--marker=", 9) != 0) a.emplace_back(argv[i]);
    std::string mode = a.empty() ? "kvs" : a[0];
    auto arg = [&](size_t i) -> const std::string& {
        if (i >= a.size()) die("mode " + mode + ": missing argument " + std::to_string(i));
        return a[i];
    };
    auto iarg = [&](size_t i) { return std::atoi(arg(i).c_str()); };
    setvbuf(stdout, nullptr, _IOLBF, 0);

    if (mode == "kvs") return kvs_test();
    if (mode == "hang" || mode == "kill" || mode == "exit" || mode == "abort" ||
        mode == "malformed" || mode == "flood") {
        auto c = init();
        int victim = mode == "hang" ? -1 : iarg(1);
        bool two = mode == "malformed" || mode == "flood";
        std::string dir = mode == "hang" ? arg(1) : two ? arg(2) : arg(3);
        write_pid(dir, c->rank());
        check(c->fence(), "fence");  // every pid file exists before anyone fails
        if (c->rank() == victim) {
            if (mode == "kill") raise(iarg(2));
            if (mode == "exit") std::exit(iarg(2));
            if (mode == "abort") check(c->abort(iarg(2), "pmi_check abort test, rank " +
                                                          std::to_string(victim)),
                                       "abort");
            if (mode == "malformed") {
                const char bad[] = "this is not PMI\n";
                if (write(c->fd(), bad, sizeof bad - 1) < 0) die("write");
            }
            if (mode == "flood") {  // a "line" that never ends
                std::string junk(1 << 20, 'x');
                if (write(c->fd(), junk.data(), junk.size()) < 0) die("write");
            }
        }
        wait_forever();
    }
    if (mode == "noinit") {
        const char* r = std::getenv("PMI_RANK");
        if (r && std::atoi(r) == iarg(1)) return 0;
        auto c = init();
        check(c->fence(), "fence");
        wait_forever();
    }
    if (mode == "peerfail") {
        auto c = init();
        if (c->rank() == iarg(1)) std::exit(3);
        Status s = c->fence();
        if (s.ok()) die("fence succeeded although a rank exited");
        std::printf("rank %d: fence failed as expected: %s\n", c->rank(), s.message().c_str());
        check(c->finalize(), "finalize");
        return 0;
    }
    if (mode == "stdin") {
        auto c = init();
        std::string all;
        char buf[4096];
        ssize_t n;
        while ((n = read(0, buf, sizeof buf)) > 0) all.append(buf, static_cast<size_t>(n));
        std::printf("rank %d read %zu bytes from stdin\n", c->rank(), all.size());
        if (c->rank() == 0) std::fwrite(all.data(), 1, all.size(), stdout);
        check(c->finalize(), "finalize");
        return 0;
    }
    if (mode == "env") {
        auto c = init();
        for (size_t i = 1; i < a.size(); ++i) {
            const char* v = std::getenv(a[i].c_str());
            if (v) std::printf("rank %d: %s=%s\n", c->rank(), a[i].c_str(), v);
            else std::printf("rank %d: %s unset\n", c->rank(), a[i].c_str());
        }
        check(c->finalize(), "finalize");
        return 0;
    }
    if (mode == "lines") {
        auto c = init();
        int n = iarg(1);
        std::string pad(150, static_cast<char>('a' + c->rank() % 26));
        setvbuf(stdout, nullptr, _IOFBF, 1 << 16);  // big writes that split lines at random
        for (int i = 0; i < n; ++i)
            std::printf("rank %d line %d %s end\n", c->rank(), i, pad.c_str());
        std::fflush(stdout);
        check(c->finalize(), "finalize");
        return 0;
    }
    if (mode == "where") {
        auto c = init();
        const char* h = std::getenv("FAKE_HOST");
        const char* lr = std::getenv("WANMPI_LOCAL_RANK");
        const char* ls = std::getenv("WANMPI_LOCAL_SIZE");
        std::printf("rank %d of %d on %s local %s/%s\n", c->rank(), c->size(), h ? h : "-",
                    lr ? lr : "-", ls ? ls : "-");
        check(c->fence(), "fence");
        check(c->finalize(), "finalize");
        return 0;
    }
    if (mode == "sleep") {
        auto c = init();
        check(c->fence(), "fence");
        usleep(static_cast<useconds_t>(std::atof(arg(1).c_str()) * 1e6));
        check(c->finalize(), "finalize");
        return 0;
    }
    die("unknown mode '" + mode + "'");
}
