// The IMPI rendezvous server (IMPI.md §3): N clients join (AUTH -> IMPI), submit labelled blobs
// (COLL) that the server concatenates in client order and sends back, finish with DONE, and send
// FINI when their procs have exited. "As stupid as possible": it never interprets label data.
//
// Robustness (issue 6): one epoll loop, nonblocking sockets, every connection a small state
// machine. A connection that fails authentication, sends garbage, or stalls before it has joined
// is logged and dropped while the others are served. Once a client has joined, the job depends on
// it: if it disconnects before FINI, or breaks the protocol, the server says which client, closes
// every other client's connection (so their agents take their clusters down) and exits non-zero.
// Threading: single-threaded; run() returns the exit status.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/event_loop.hpp"
#include "runtime/impi_resume.hpp"
#include "runtime/impi_wire.hpp"
#include "wanlink/secret.hpp"

namespace wanmpi::impi {

struct ServerConfig {
    int nclients = 1;
    bool allow_none = true;
    bool allow_key = false;
    uint64_t key = 0;
    // wanmpi's challenge-response method (wanlink/handshake.hpp), preferred when both offer it.
    bool allow_hmac = false;
    wanlink::Secret secret;
    std::array<uint8_t, 32> session{};  // this run's session nonce (random)
    int64_t join_timeout_ms = 30000;   // a new connection must have joined (AUTH+IMPI) by then
    int64_t stall_timeout_ms = 30000;  // a partial command may not sit longer than this
    // How long a client whose impi-relay said KEEP may be away (its connection dropped without
    // an orderly end) before the job fails: WANMPI_WAN_RECONNECT_S (impi_resume.hpp).
    int64_t reconnect_ms = 60000;
};

class Server {
public:
    Server(const ServerConfig& cfg, int listen_fd);
    ~Server();
    // Serves until every client sent FINI (returns 0) or the job failed (returns 1).
    int run();

private:
    struct Conn;
    struct LabelState {
        std::vector<std::optional<std::vector<uint8_t>>> contrib;
        bool replied = false;
    };
    void on_accept();
    void on_readable(Conn* c);
    void on_writable(Conn* c);
    bool parse(Conn* c);  // false: connection was closed
    void send(Conn* c, const uint8_t* p, size_t n);
    void drop(Conn* c, const std::string& why);     // an unjoined connection goes away
    void forget(Conn* c);                           // close and free c (clients_ slot too)
    // The job is over; `lost` is the client that caused it (-1: none in particular). The other
    // clients get a LOST notice (impi_wire.hpp) before their connections close.
    void fail(const std::string& why, int lost = -1);
    void joined(Conn* c, int rank);
    void check_label(uint32_t label);
    void check_all();
    void arm_stall_timer(Conn* c);
    // impi-relay restarts (impi_resume.hpp): a KEEP client's connection dropped / it is back.
    void away(Conn* c, const std::string& why);
    bool take_back(Conn* c, const BackMsg& b, const std::string& err);

    ServerConfig cfg_;
    int listen_fd_;
    runtime::EventLoop loop_;
    std::map<int, std::unique_ptr<Conn>> conns_;      // by fd
    std::vector<Conn*> clients_;                      // by client rank
    int njoined_ = 0;
    bool impi_sent_ = false;
    bool done_sent_ = false;
    int nfini_ = 0;
    int exit_ = -1;
    int lost_ = -1;
    std::string lost_why_;
    std::map<uint32_t, LabelState> labels_;
    // By client rank: its relay said KEEP; while away (no connection), since when and the timer
    // that fails the job.
    struct Away {
        bool done = false;
        int64_t since = 0;
        uint64_t timer = 0;
    };
    std::array<bool, 32> keep_{};
    std::array<Away, 32> away_{};
};

}  // namespace wanmpi::impi
