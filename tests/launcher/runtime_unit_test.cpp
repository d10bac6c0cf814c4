// Unit tests of the runtime's pure parts: the PMI-1 line codec, the PMI server logic, the PMI
// client against that server over a socketpair, mpirun's option/host parsing and placement, the
// proxy link codec and the output multiplexer.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fcntl.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

#include "base/socket.hpp"
#include "runtime/launch_options.hpp"
#include "runtime/output_mux.hpp"
#include "runtime/pmi_client.hpp"
#include "runtime/pmi_server.hpp"
#include "runtime/pmi_wire.hpp"
#include "runtime/proxy_wire.hpp"

using namespace wanmpi::runtime;
using wanmpi::base::Errc;

// ---------------------------------------------------------------------------------------------
// PMI-1 line codec

TEST(PmiWire, ParsesCommandAndArgs) {
    PmiMsg m;
    ASSERT_TRUE(parse_pmi_line("cmd=put kvsname=kvs_1 key=a value=b=c\n", &m).ok());
    EXPECT_EQ(m.cmd, "put");
    ASSERT_EQ(m.args.size(), 3u);
    EXPECT_EQ(*m.find("kvsname"), "kvs_1");
    EXPECT_EQ(*m.find("value"), "b=c");  // '=' inside a value is data
    EXPECT_EQ(m.find("nope"), nullptr);
}

TEST(PmiWire, ToleratesExtraSpacesAndCr) {
    PmiMsg m;
    ASSERT_TRUE(parse_pmi_line("cmd=barrier_in   \r\n", &m).ok());
    EXPECT_EQ(m.cmd, "barrier_in");
    EXPECT_TRUE(m.args.empty());
    ASSERT_TRUE(parse_pmi_line("cmd=get  key=x   flag", &m).ok());
    EXPECT_EQ(*m.find("key"), "x");
    EXPECT_EQ(*m.find("flag"), "");
}

TEST(PmiWire, Integers) {
    PmiMsg m;
    ASSERT_TRUE(parse_pmi_line("cmd=x rc=-1 a=12 b=1x c= d=99999999999999999999", &m).ok());
    EXPECT_EQ(m.get_int("rc"), -1);
    EXPECT_EQ(m.get_int("a"), 12);
    EXPECT_FALSE(m.get_int("b"));
    EXPECT_FALSE(m.get_int("c"));
    EXPECT_FALSE(m.get_int("d"));
    EXPECT_FALSE(m.get_int("missing"));
}

TEST(PmiWire, RejectsMalformed) {
    PmiMsg m;
    EXPECT_EQ(parse_pmi_line("put key=a", &m).code(), Errc::proto_error);
    EXPECT_EQ(parse_pmi_line("", &m).code(), Errc::proto_error);
    EXPECT_EQ(parse_pmi_line("cmd= key=a", &m).code(), Errc::proto_error);
    EXPECT_EQ(parse_pmi_line("cmd=put =a", &m).code(), Errc::proto_error);
    EXPECT_EQ(parse_pmi_line(std::string("cmd=put key=a\0b", 15), &m).code(), Errc::proto_error);
    EXPECT_EQ(parse_pmi_line("cmd=a\ncmd=b", &m).code(), Errc::proto_error);
    // PMI-2 framing (6-digit length prefix) is not PMI-1.
    EXPECT_EQ(parse_pmi_line("    28cmd=fullinit;pmijobid=1;", &m).code(), Errc::proto_error);
}

TEST(PmiWire, EscapesRoundTrip) {
    PmiMsg m("abort");
    m.add("exitcode", 3).add("message", "a b\\c  d");
    std::string line = format_pmi_line(m);
    EXPECT_EQ(line, "cmd=abort exitcode=3 message=a\\ b\\\\c\\ \\ d\n");
    PmiMsg back;
    ASSERT_TRUE(parse_pmi_line(line, &back).ok());
    EXPECT_EQ(*back.find("message"), "a b\\c  d");
    // Values without spaces or backslashes are byte-identical on the wire (Hydra 4.0 compat).
    EXPECT_EQ(pmi_escape("abc=def,(0,1,2)"), "abc=def,(0,1,2)");
    EXPECT_EQ(pmi_unescape("x\\ y\\"), "x y\\");
}

TEST(PmiWire, KeyValidity) {
    EXPECT_TRUE(pmi_key_ok("bc-0.addr_1"));
    EXPECT_FALSE(pmi_key_ok(""));
    EXPECT_FALSE(pmi_key_ok("a b"));
    EXPECT_FALSE(pmi_key_ok("a=b"));
    EXPECT_FALSE(pmi_key_ok("a\\b"));
    EXPECT_FALSE(pmi_key_ok("a\nb"));
}

TEST(PmiWire, LineBufferSplitsAndJoins) {
    LineBuffer b(100);
    b.append("cmd=a\ncmd=", 10);
    auto l = b.next_line();
    ASSERT_TRUE(l);
    EXPECT_EQ(*l, "cmd=a");
    EXPECT_FALSE(b.next_line());
    b.append("b x=1\n\n", 7);
    EXPECT_EQ(*b.next_line(), "cmd=b x=1");
    EXPECT_EQ(*b.next_line(), "");
    EXPECT_FALSE(b.next_line());
    EXPECT_EQ(b.pending(), 0u);
}

TEST(PmiWire, LineBufferOverflowIsSticky) {
    LineBuffer b(16);
    std::string big(40, 'x');
    b.append(big.data(), big.size());
    EXPECT_FALSE(b.next_line());
    EXPECT_TRUE(b.overflow());
    b.append("\n", 1);
    EXPECT_FALSE(b.next_line());
    LineBuffer c(16);
    std::string longline = std::string(20, 'y') + "\n";
    c.append(longline.data(), longline.size());
    EXPECT_FALSE(c.next_line());
    EXPECT_TRUE(c.overflow());
}

TEST(PmiWire, PrintableExcerpt) {
    EXPECT_EQ(printable_excerpt("a\nb\x01", 80), "a\\nb\\x01");
    EXPECT_EQ(printable_excerpt(std::string(100, 'z'), 5), "zzzzz...");
}

// ---------------------------------------------------------------------------------------------
// PMI server

struct ServerFixture {
    std::vector<std::vector<std::string>> sent;
    PmiServer srv;
    explicit ServerFixture(int n)
        : sent(static_cast<size_t>(n)), srv(make_info(n), [this](int r, const std::string& l) {
              sent[static_cast<size_t>(r)].push_back(l);
          }) {}
    static PmiJobInfo make_info(int n) {
        PmiJobInfo i;
        i.size = n;
        i.kvsname = "kvs_test";
        i.universe_size = n;
        i.process_mapping = pmi_process_mapping({n});
        return i;
    }
    std::string last(int r) { return sent[r].empty() ? "" : sent[r].back(); }
};

TEST(PmiServer, ProcessMapping) {
    EXPECT_EQ(pmi_process_mapping({4}), "(vector,(0,1,4))");
    EXPECT_EQ(pmi_process_mapping({2, 2, 3}), "(vector,(0,2,2),(2,1,3))");
    EXPECT_EQ(pmi_process_mapping({1, 2, 1}), "(vector,(0,1,1),(1,1,2),(2,1,1))");
}

TEST(PmiServer, HandshakeRepliesLikeHydra) {
    ServerFixture f(2);
    f.srv.on_line(0, "cmd=init pmi_version=1 pmi_subversion=1");
    EXPECT_EQ(f.last(0), "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n");
    EXPECT_TRUE(f.srv.initialized(0));
    f.srv.on_line(0, "cmd=get_maxes");
    EXPECT_EQ(f.last(0), "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=16384\n");
    f.srv.on_line(0, "cmd=get_my_kvsname");
    EXPECT_EQ(f.last(0), "cmd=my_kvsname kvsname=kvs_test\n");
    f.srv.on_line(0, "cmd=get_appnum");
    EXPECT_EQ(f.last(0), "cmd=appnum appnum=0\n");
    f.srv.on_line(0, "cmd=get_universe_size");
    EXPECT_EQ(f.last(0), "cmd=universe_size size=2\n");
    f.srv.on_line(0, "cmd=init pmi_version=2 pmi_subversion=0");
    EXPECT_NE(f.last(0).find("rc=-1"), std::string::npos);
}

TEST(PmiServer, PutBarrierGet) {
    ServerFixture f(3);
    for (int r = 0; r < 3; ++r) {
        f.srv.on_line(r, "cmd=put kvsname=kvs_test key=k" + std::to_string(r) + " value=v" +
                             std::to_string(r));
        EXPECT_EQ(f.last(r), "cmd=put_result rc=0 msg=success\n");
    }
    f.srv.on_line(0, "cmd=barrier_in");
    f.srv.on_line(2, "cmd=barrier_in");
    EXPECT_EQ(f.srv.barrier_waiting(), 2);
    EXPECT_EQ(f.last(0), "cmd=put_result rc=0 msg=success\n");  // nothing yet
    f.srv.on_line(1, "cmd=barrier_in");
    for (int r = 0; r < 3; ++r) EXPECT_EQ(f.last(r), "cmd=barrier_out\n");
    EXPECT_EQ(f.srv.barrier_waiting(), 0);
    f.srv.on_line(1, "cmd=get kvsname=kvs_test key=k2");
    EXPECT_EQ(f.last(1), "cmd=get_result rc=0 msg=success value=v2\n");
    f.srv.on_line(1, "cmd=get kvsname=kvs_test key=PMI_process_mapping");
    EXPECT_EQ(f.last(1), "cmd=get_result rc=0 msg=success value=(vector,(0,1,3))\n");
    f.srv.on_line(1, "cmd=get kvsname=kvs_test key=nope");
    EXPECT_EQ(f.last(1), "cmd=get_result rc=-1 msg=key_nope_not_found value=unknown\n");
    f.srv.on_line(1, "cmd=get kvsname=other key=k2");
    EXPECT_NE(f.last(1).find("rc=-1"), std::string::npos);
    f.srv.on_line(1, "cmd=put kvsname=kvs_test key=bad=key value=x");
    EXPECT_NE(f.last(1).find("rc=-1"), std::string::npos);
    f.srv.on_line(1, "cmd=put kvsname=kvs_test key=" + std::string(64, 'k') + " value=x");
    EXPECT_NE(f.last(1).find("rc=-1"), std::string::npos);
    // A second round works the same way.
    for (int r = 0; r < 3; ++r) f.srv.on_line(r, "cmd=barrier_in");
    for (int r = 0; r < 3; ++r) EXPECT_EQ(f.last(r), "cmd=barrier_out\n");
}

TEST(PmiServer, ValueWithSpacesRoundTrips) {
    ServerFixture f(1);
    f.srv.on_line(0, format_pmi_line(PmiMsg("put").add("kvsname", "kvs_test").add("key", "k").add(
                         "value", "a b\\c")));
    f.srv.on_line(0, "cmd=get kvsname=kvs_test key=k");
    PmiMsg m;
    ASSERT_TRUE(parse_pmi_line(f.last(0), &m).ok());
    EXPECT_EQ(*m.find("value"), "a b\\c");
}

TEST(PmiServer, DoubleBarrierIsProtocolError) {
    ServerFixture f(2);
    EXPECT_EQ(f.srv.on_line(0, "cmd=barrier_in").kind, PmiServer::Event::none);
    auto ev = f.srv.on_line(0, "cmd=barrier_in");
    EXPECT_EQ(ev.kind, PmiServer::Event::protocol_error);
}

TEST(PmiServer, GoneRankFailsBarrier) {
    ServerFixture f(3);
    f.srv.on_line(0, "cmd=barrier_in");
    EXPECT_EQ(f.srv.on_rank_gone(1, "exited with code 3"), 1);
    EXPECT_EQ(f.last(0),
              "cmd=barrier_out rc=-1 msg=rank\\ 1\\ exited\\ with\\ code\\ 3\\ and\\ can\\ never\\ "
              "reach\\ the\\ barrier\n");
    EXPECT_TRUE(f.sent[1].empty());
    // Later barriers fail at once and say who is missing.
    auto ev = f.srv.on_line(2, "cmd=barrier_in");
    EXPECT_EQ(ev.kind, PmiServer::Event::barrier_failed);
    EXPECT_EQ(ev.culprit, 1);
    EXPECT_EQ(ev.message, "exited with code 3");
    EXPECT_NE(f.last(2).find("rc=-1"), std::string::npos);
    EXPECT_EQ(f.srv.on_rank_gone(1, "again"), 0);
}

TEST(PmiServer, AbortMessages) {
    ServerFixture f(2);
    auto ev = f.srv.on_line(1, "cmd=abort exitcode=5 message=it\\ broke\\ badly");
    EXPECT_EQ(ev.kind, PmiServer::Event::abort);
    EXPECT_EQ(ev.code, 5);
    EXPECT_EQ(ev.message, "it broke badly");
    // Unescaped spaces (older MPICH clients): the rest of the line is the message.
    ev = f.srv.on_line(1, "cmd=abort exitcode=7 message=Fatal error in MPI_Send");
    EXPECT_EQ(ev.code, 7);
    EXPECT_EQ(ev.message, "Fatal error in MPI_Send");
    ev = f.srv.on_line(0, "cmd=abort exitcode=-1");
    EXPECT_EQ(ev.code, -1);
    EXPECT_EQ(ev.message, "");
    EXPECT_TRUE(f.sent[0].empty());  // abort has no reply
}

TEST(PmiServer, MalformedAndUnknown) {
    ServerFixture f(1);
    auto ev = f.srv.on_line(0, "hello there");
    EXPECT_EQ(ev.kind, PmiServer::Event::protocol_error);
    ev = f.srv.on_line(0, "    28cmd=fullinit;pmijobid=1;");
    EXPECT_EQ(ev.kind, PmiServer::Event::protocol_error);
    EXPECT_NE(ev.message.find("PMI-2"), std::string::npos);
    ev = f.srv.on_line(0, "cmd=frobnicate x=1");
    EXPECT_EQ(ev.kind, PmiServer::Event::none);
    EXPECT_EQ(f.last(0), "cmd=frobnicate_result rc=-1 msg=unknown_PMI_command\n");
    f.srv.on_line(0, "cmd=lookup_name service=x");
    EXPECT_EQ(f.last(0), "cmd=lookup_result rc=-1 msg=name_publishing_is_not_supported\n");
}

TEST(PmiServer, SpawnIsRefused) {
    ServerFixture f(1);
    EXPECT_EQ(f.srv.on_line(0, "mcmd=spawn").kind, PmiServer::Event::none);
    EXPECT_EQ(f.srv.on_line(0, "nprocs=2").kind, PmiServer::Event::none);
    EXPECT_EQ(f.srv.on_line(0, "execname=/bin/true").kind, PmiServer::Event::none);
    EXPECT_TRUE(f.sent[0].empty());
    f.srv.on_line(0, "endcmd");
    EXPECT_EQ(f.last(0), "cmd=spawn_result rc=-1 msg=MPI_Comm_spawn_is_not_supported\n");
    f.srv.on_line(0, "cmd=finalize");
    EXPECT_EQ(f.last(0), "cmd=finalize_ack\n");
    EXPECT_TRUE(f.srv.finalized(0));
}

// ---------------------------------------------------------------------------------------------
// PMI client against the server, over a socketpair (PMI_FD) and TCP (PMI_PORT + PMI_ID)

namespace {

// Serves one rank's connection with a PmiServer of `size` ranks in which every other rank has
// already put "k<r>" and entered nothing. Runs until EOF.
void serve(int fd, int rank, int size, bool initack) {
    PmiJobInfo info;
    info.size = 1;  // barriers complete with this rank alone
    info.kvsname = "kvs_unit";
    info.universe_size = size;
    PmiServer srv(info, [fd](int, const std::string& l) {
        wanmpi::base::write_full(fd, l.data(), l.size());
    });
    LineBuffer in;
    char buf[4096];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0) break;
        in.append(buf, static_cast<size_t>(n));
        while (auto line = in.next_line()) {
            if (initack && line->rfind("cmd=initack", 0) == 0) {
                std::string r = "cmd=initack\ncmd=set size=" + std::to_string(size) +
                                "\ncmd=set rank=" + std::to_string(rank) + "\ncmd=set debug=0\n";
                wanmpi::base::write_full(fd, r.data(), r.size());
                continue;
            }
            srv.on_line(0, *line);
        }
    }
    close(fd);
}

void clear_pmi_env() {
    for (const char* v : {"PMI_FD", "PMI_PORT", "PMI_ID", "PMI_RANK", "PMI_SIZE", "PMIX_RANK",
                          "PMIX_NAMESPACE", "OMPI_COMM_WORLD_SIZE", "PRTE_LAUNCHED", "PMI2_FD"})
        unsetenv(v);
}

}  // namespace

TEST(PmiClient, SingletonWithoutEnvironment) {
    clear_pmi_env();
    wanmpi::base::Status err;
    auto c = PmiClient::from_env(&err);
    ASSERT_TRUE(c) << err.message();
    EXPECT_TRUE(c->is_singleton());
    EXPECT_EQ(c->rank(), 0);
    EXPECT_EQ(c->size(), 1);
    EXPECT_EQ(c->kvsname().rfind("singleton_", 0), 0u);
    EXPECT_TRUE(c->put("a", "b c").ok());
    EXPECT_TRUE(c->fence().ok());
    EXPECT_EQ(c->get("a"), "b c");
    EXPECT_FALSE(c->get("zz"));
    EXPECT_TRUE(c->abort(1, "no-op").ok());
    EXPECT_TRUE(c->finalize().ok());
}

TEST(PmiClient, RefusesPmixLauncher) {
    clear_pmi_env();
    setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
    wanmpi::base::Status err;
    EXPECT_FALSE(PmiClient::from_env(&err));
    EXPECT_NE(err.message().find("OMPI_COMM_WORLD_SIZE"), std::string::npos);
    clear_pmi_env();
}

TEST(PmiClient, RejectsBadEnvironment) {
    clear_pmi_env();
    wanmpi::base::Status err;
    setenv("PMI_FD", "abc", 1);
    EXPECT_FALSE(PmiClient::from_env(&err));
    setenv("PMI_FD", "987", 1);  // not open
    EXPECT_FALSE(PmiClient::from_env(&err));
    EXPECT_NE(err.message().find("987"), std::string::npos);
    clear_pmi_env();
    setenv("PMI_PORT", "nocolon", 1);
    EXPECT_FALSE(PmiClient::from_env(&err));
    clear_pmi_env();
}

TEST(PmiClient, OverPmiFd) {
    clear_pmi_env();
    int sp[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
    std::thread t(serve, sp[0], 2, 4, false);
    setenv("PMI_FD", std::to_string(sp[1]).c_str(), 1);
    setenv("PMI_RANK", "2", 1);
    setenv("PMI_SIZE", "4", 1);
    wanmpi::base::Status err;
    auto c = PmiClient::from_env(&err);
    ASSERT_TRUE(c) << err.message();
    EXPECT_FALSE(c->is_singleton());
    EXPECT_EQ(c->rank(), 2);
    EXPECT_EQ(c->size(), 4);
    EXPECT_EQ(c->kvsname(), "kvs_unit");
    EXPECT_EQ(c->universe_size(), 4);
    EXPECT_EQ(c->max_value_len(), 16383u);
    EXPECT_EQ(c->max_key_len(), 63u);
    EXPECT_NE(fcntl(c->fd(), F_GETFD) & FD_CLOEXEC, 0);
    std::string big(c->max_value_len(), 'v');
    EXPECT_TRUE(c->put("big", big).ok());
    EXPECT_TRUE(c->put("sp", "with space").ok());
    EXPECT_EQ(c->put("big2", big + "v").code(), Errc::invalid);
    EXPECT_EQ(c->put("bad key", "x").code(), Errc::invalid);
    EXPECT_EQ(c->put("k", "a\nb").code(), Errc::invalid);
    EXPECT_TRUE(c->fence().ok());
    EXPECT_EQ(c->get("big"), big);
    EXPECT_EQ(c->get("sp"), "with space");
    std::string v;
    bool found = true;
    EXPECT_TRUE(c->get("missing", &v, &found).ok());
    EXPECT_FALSE(found);
    EXPECT_TRUE(c->finalize().ok());
    EXPECT_EQ(c->fd(), -1);
    EXPECT_TRUE(c->finalize().ok());  // idempotent
    t.join();
    clear_pmi_env();
}

TEST(PmiClient, OverPmiPortWithInitack) {
    clear_pmi_env();
    std::string e;
    int lfd = wanmpi::base::tcp_listen("127.0.0.1", 0, 4, &e);
    ASSERT_GE(lfd, 0) << e;
    uint16_t port = wanmpi::base::local_port(lfd);
    std::thread t([lfd] {
        int fd = accept(lfd, nullptr, nullptr);
        close(lfd);
        if (fd >= 0) serve(fd, 1, 3, true);
    });
    setenv("PMI_PORT", ("127.0.0.1:" + std::to_string(port)).c_str(), 1);
    setenv("PMI_ID", "1", 1);
    wanmpi::base::Status err;
    auto c = PmiClient::from_env(&err);
    ASSERT_TRUE(c) << err.message();
    EXPECT_EQ(c->rank(), 1);
    EXPECT_EQ(c->size(), 3);
    EXPECT_TRUE(c->put("x", "1").ok());
    EXPECT_TRUE(c->fence().ok());
    EXPECT_EQ(c->get("x"), "1");
    EXPECT_TRUE(c->finalize().ok());
    t.join();
    clear_pmi_env();
}

TEST(PmiClient, ServerGoneIsLinkFailure) {
    clear_pmi_env();
    int sp[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
    // A server that answers the start-up and then dies.
    std::thread t([fd = sp[0]] {
        PmiJobInfo info;
        info.kvsname = "kvs_gone";
        PmiServer srv(info, [fd](int, const std::string& l) {
            wanmpi::base::write_full(fd, l.data(), l.size());
        });
        LineBuffer in;
        char buf[512];
        int lines = 0;
        while (lines < 5) {
            ssize_t n = read(fd, buf, sizeof buf);
            if (n <= 0) break;
            in.append(buf, static_cast<size_t>(n));
            while (auto l = in.next_line()) {
                srv.on_line(0, *l);
                ++lines;
            }
        }
        close(fd);
    });
    setenv("PMI_FD", std::to_string(sp[1]).c_str(), 1);
    wanmpi::base::Status err;
    auto c = PmiClient::from_env(&err);
    ASSERT_TRUE(c) << err.message();
    t.join();
    auto s = c->fence();
    EXPECT_EQ(s.code(), Errc::link_failed);
    EXPECT_EQ(c->last_error().code(), Errc::link_failed);
    clear_pmi_env();
}

// ---------------------------------------------------------------------------------------------
// mpirun options, host lists, placement

static std::vector<std::string> words(std::initializer_list<const char*> l) {
    return std::vector<std::string>(l.begin(), l.end());
}

TEST(LaunchOptions, Basic) {
    LaunchOptions o;
    ASSERT_TRUE(parse_launch_options(words({"-np", "4", "--tag-output", "-x", "A", "-x", "B=1 2",
                                            "-genv", "C", "3", "--timeout=2.5", "prog", "-n", "9"}),
                                     &o)
                    .ok());
    EXPECT_EQ(o.np, 4);
    EXPECT_TRUE(o.tag_output);
    EXPECT_EQ(o.env_names, words({"A"}));
    EXPECT_EQ(o.env_set, words({"B=1 2", "C=3"}));
    EXPECT_DOUBLE_EQ(o.timeout_s, 2.5);
    EXPECT_EQ(o.program, words({"prog", "-n", "9"}));  // options after the program are its own
    EXPECT_TRUE(o.auto_cleanup);
}

TEST(LaunchOptions, SpellingsAndDoubleDash) {
    LaunchOptions o;
    ASSERT_TRUE(parse_launch_options(words({"-n", "2", "-host", "a:2,b", "--disable-auto-cleanup",
                                            "-l", "--launcher-exec", "wanemu exec", "--", "-prog"}),
                                     &o)
                    .ok());
    EXPECT_FALSE(o.auto_cleanup);
    EXPECT_TRUE(o.tag_output);
    EXPECT_EQ(o.launcher, "wanemu exec");
    EXPECT_EQ(o.program, words({"-prog"}));
    ASSERT_EQ(o.hosts.size(), 2u);
    EXPECT_EQ(o.hosts[0].name, "a");
    EXPECT_EQ(o.hosts[0].slots, 2);
    EXPECT_EQ(o.hosts[1].slots, 1);
}

TEST(LaunchOptions, UsageErrors) {
    auto bad = [](std::initializer_list<const char*> l) {
        LaunchOptions o;
        return !parse_launch_options(words(l), &o).ok();
    };
    EXPECT_TRUE(bad({}));                              // no program
    EXPECT_TRUE(bad({"-n", "4"}));                     // no program
    EXPECT_TRUE(bad({"-n", "x", "prog"}));
    EXPECT_TRUE(bad({"-n", "0", "prog"}));
    EXPECT_TRUE(bad({"-n"}));
    EXPECT_TRUE(bad({"--bogus", "prog"}));
    EXPECT_TRUE(bad({"--timeout", "-1", "prog"}));
    EXPECT_TRUE(bad({"--timeout", "soon", "prog"}));
    EXPECT_TRUE(bad({"-x", "1A", "prog"}));
    EXPECT_TRUE(bad({"--host", "a,,b", "prog"}));
    EXPECT_TRUE(bad({"--host", "a:0", "prog"}));
    EXPECT_TRUE(bad({"--hostfile", "/nonexistent/hosts", "prog"}));
    EXPECT_TRUE(bad({"--launcher-exec", "'unterminated", "prog"}));
    EXPECT_TRUE(bad({"--tag-output=yes", "prog"}));
    LaunchOptions o;
    EXPECT_TRUE(parse_launch_options(words({"--help"}), &o).ok());
    EXPECT_TRUE(o.help);
}

TEST(LaunchOptions, Hostfile) {
    std::vector<HostSpec> h;
    ASSERT_TRUE(parse_hostfile_text("# cluster A\nnode1 slots=4\n\nnode2:2  # two\nnode3\n"
                                    "node1 slots=2 max_slots=8\n",
                                    "hf", &h)
                    .ok());
    ASSERT_EQ(h.size(), 3u);
    EXPECT_EQ(h[0].name, "node1");
    EXPECT_EQ(h[0].slots, 6);  // repeated hosts add up
    EXPECT_EQ(h[1].slots, 2);
    EXPECT_EQ(h[2].slots, 1);
    std::vector<HostSpec> e;
    auto s = parse_hostfile_text("node1 slots=4\nnode2 cpus=3\n", "hf", &e);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find("hf:2"), std::string::npos);
    EXPECT_FALSE(parse_hostfile_text("# nothing\n", "hf", &e).ok());
    EXPECT_FALSE(parse_hostfile_text("node:x\n", "hf", &e).ok());
}

TEST(LaunchOptions, PlacementIsContiguous) {
    std::vector<HostSpec> h = {{"a", 2, true}, {"b", 3, true}};
    auto p = place_ranks(h, 4);
    ASSERT_EQ(p.size(), 2u);
    EXPECT_EQ(p[0].host, "a");
    EXPECT_EQ(p[0].first_rank, 0);
    EXPECT_EQ(p[0].count, 2);
    EXPECT_EQ(p[1].first_rank, 2);
    EXPECT_EQ(p[1].count, 2);
    p = place_ranks(h, 2);  // host b gets nothing and is left out
    ASSERT_EQ(p.size(), 1u);
    p = place_ranks(h, 8);  // oversubscribed: 3 extra ranks spread a, b, a
    ASSERT_EQ(p.size(), 2u);
    EXPECT_EQ(p[0].count, 4);
    EXPECT_EQ(p[1].first_rank, 4);
    EXPECT_EQ(p[1].count, 4);
    p = place_ranks({}, 8);
    ASSERT_EQ(p.size(), 1u);
    EXPECT_TRUE(p[0].local);
    EXPECT_EQ(p[0].count, 8);
}

TEST(LaunchOptions, LocalHosts) {
    EXPECT_TRUE(is_local_host("localhost"));
    EXPECT_TRUE(is_local_host("127.0.0.1"));
    char hn[256] = {0};
    gethostname(hn, sizeof hn - 1);
    EXPECT_TRUE(is_local_host(hn));
    EXPECT_FALSE(is_local_host("nodeA"));
    EXPECT_FALSE(is_local_host("192.0.2.77"));  // TEST-NET, not ours
}

TEST(LaunchOptions, SplitAndQuote) {
    std::vector<std::string> w;
    ASSERT_TRUE(split_command("wanemu exec", &w).ok());
    EXPECT_EQ(w, words({"wanemu", "exec"}));
    ASSERT_TRUE(split_command("  ssh -o 'Batch Mode=yes'  \"a \\\"b\\\"\" c\\ d ", &w).ok());
    EXPECT_EQ(w, words({"ssh", "-o", "Batch Mode=yes", "a \"b\"", "c d"}));
    EXPECT_FALSE(split_command("a \"b", &w).ok());
    EXPECT_EQ(shell_quote("/usr/bin/wanmpi-proxy"), "/usr/bin/wanmpi-proxy");
    EXPECT_EQ(shell_quote("/my dir/it's"), "'/my dir/it'\\''s'");
}

// ---------------------------------------------------------------------------------------------
// proxy link codec

TEST(ProxyWire, FramesSurviveArbitrarySplits) {
    std::string wire;
    append_frame(&wire, FrameType::pmi, 3, "cmd=barrier_in");
    append_frame(&wire, FrameType::out, 0, std::string(100000, 'o'));
    append_frame(&wire, FrameType::in_eof, 0, "");
    append_frame(&wire, FrameType::exit, 7, be32_payload(0x0900));
    for (size_t chunk : {size_t(1), size_t(7), size_t(4096), wire.size()}) {
        FrameDecoder d;
        std::vector<Frame> got;
        for (size_t p = 0; p < wire.size(); p += chunk) {
            ASSERT_TRUE(d.feed(wire.data() + p, std::min(chunk, wire.size() - p)).ok());
            Frame f;
            while (d.next(&f)) got.push_back(f);
        }
        ASSERT_EQ(got.size(), 4u);
        EXPECT_EQ(got[0].type, FrameType::pmi);
        EXPECT_EQ(got[0].rank, 3u);
        EXPECT_EQ(got[0].payload, "cmd=barrier_in");
        EXPECT_EQ(got[1].payload.size(), 100000u);
        EXPECT_EQ(got[2].type, FrameType::in_eof);
        EXPECT_EQ(be32_from(got[3].payload), 0x0900u);
    }
}

TEST(ProxyWire, RejectsGarbage) {
    FrameDecoder d;
    EXPECT_FALSE(d.feed("\x63\0\0\0\0\0\0\0\0", 9).ok());  // unknown type 99
    FrameDecoder d2;
    const char huge[9] = {2, 0, 0, 0, 0, 0x7f, 0, 0, 0};    // 2 GB payload
    EXPECT_FALSE(d2.feed(huge, 9).ok());
    EXPECT_FALSE(be32_from("abc"));
}

TEST(ProxyWire, JobRoundTrip) {
    ProxyJob j;
    j.first_rank = 4;
    j.count = 2;
    j.size = 8;
    j.host_index = 1;
    j.cwd = "/work dir";
    j.argv = {"./a.out", "x y", ""};
    j.env = {"WANMPI_X=1", "FOO=a=b"};
    ProxyJob k;
    ASSERT_TRUE(decode_job(encode_job(j), &k).ok());
    EXPECT_EQ(k.first_rank, 4u);
    EXPECT_EQ(k.count, 2u);
    EXPECT_EQ(k.size, 8u);
    EXPECT_EQ(k.host_index, 1u);
    EXPECT_EQ(k.cwd, j.cwd);
    EXPECT_EQ(k.argv, j.argv);
    EXPECT_EQ(k.env, j.env);
    j.first_rank = 7;  // 7 + 2 > 8
    EXPECT_FALSE(decode_job(encode_job(j), &k).ok());
    std::string p = encode_job(ProxyJob{0, 1, 1, 0, "/", {"x"}, {"NOEQUALS"}});
    EXPECT_FALSE(decode_job(p, &k).ok());
    EXPECT_FALSE(decode_job("garbage", &k).ok());
    std::vector<std::string> v;
    EXPECT_FALSE(get_strings(std::string("\xff\xff\xff\xff", 4), &v));
}

// ---------------------------------------------------------------------------------------------
// output multiplexer

static std::string drain(int fd) {
    std::string r;
    char b[4096];
    ssize_t n;
    while ((n = read(fd, b, sizeof b)) > 0) r.append(b, static_cast<size_t>(n));
    return r;
}

TEST(OutputMux, LinesStayWholeAndTagged) {
    int p[2];
    ASSERT_EQ(pipe2(p, O_NONBLOCK), 0);
    {
        OutputMux m(true, p[1], p[1], 200);
        m.data(0, 1, "hel", 3, 0);
        m.data(1, 1, "one\ntw", 6, 0);
        m.data(0, 1, "lo\nx", 4, 0);
        m.data(1, 1, "o\n", 2, 0);
        EXPECT_EQ(m.flush_due(100), 100 + 100);  // rank 0's "x" waits since t=0... until 200
        EXPECT_EQ(drain(p[0]), "[1] one\n[0] hello\n[1] two\n");
        // A prompt without newline is written after partial_ms, the rest of the line untagged.
        EXPECT_EQ(m.flush_due(250), -1);
        EXPECT_EQ(drain(p[0]), "[0] x");
        m.data(0, 1, "yz\n", 3, 300);
        EXPECT_EQ(drain(p[0]), "yz\n");
        m.data(2, 1, "tail", 4, 300);
        m.flush_rank(2);
        EXPECT_EQ(drain(p[0]), "[2] tail\n");
    }
    close(p[0]);
    close(p[1]);
}

TEST(OutputMux, UntaggedPassesBytes) {
    int p[2];
    ASSERT_EQ(pipe2(p, O_NONBLOCK), 0);
    OutputMux m(false, p[1], p[1], 200);
    m.data(0, 2, "a\nb", 3, 0);
    m.flush_all();
    EXPECT_EQ(drain(p[0]), "a\nb");
    close(p[0]);
    close(p[1]);
}
