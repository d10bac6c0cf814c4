// impi-relay's control process (impi_relay.cpp, and impi_relay_restart.cpp for restarts): the
// class both files implement. Internal to those two files; impi_relay.hpp is the interface.
// Threading: single-threaded (the relay's one epoll loop).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/socket.hpp"
#include "runtime/event_loop.hpp"
#include "runtime/impi_relay.hpp"
#include "runtime/impi_relay_data.hpp"
#include "runtime/impi_resume.hpp"
#include "wanlink/handshake.hpp"
#include "wanlink/secret.hpp"

namespace wanmpi::impi {

namespace relay_internal {

// A command stream (agent, server, trunk member): nonblocking, with an input buffer and an
// output queue.
struct Link {
    int fd = -1;
    std::string who;
    std::vector<uint8_t> in;
    std::string out;
    bool eof = false;
    bool paused = false;  // input is not parsed until the relay can go on
    uint64_t serial = 0;  // tells a link from a later one at the same address (timers)
    // An agent coming back to a restarted relay (agent_back()): 1 challenge sent, 2 verdict sent.
    int back = 0;
    uint8_t ns[32] = {};
};
}  // namespace relay_internal

class Relay {
public:
    using Link = relay_internal::Link;
    explicit Relay(const RelayConfig& cfg) : cfg_(cfg) {}
    int run();

private:
    struct Member {
        Link link;
        TrunkHello hello;
        std::string pub, priv;
        bool have_ports = false;
        TrunkPorts ports;
        // Restarts: the member said KEEP (it has a state file); since when its control link is
        // down (0: up). A member that is away is waited for up to WANMPI_WAN_RECONNECT_S.
        bool keep = false;
        int64_t away_since = 0;
    };

    // ---- common
    void watch(Link& l, std::function<void()> on_input);
    void send(Link& l, const void* p, size_t n);
    void send_cmd(Link& l, uint32_t cmd, const std::vector<uint8_t>& payload);
    bool read_in(Link& l);  // false: EOF or error (l.eof set)
    void close_link(Link& l);
    void fail(const std::string& why);
    base::Status open_listeners(const std::string& pub, const std::string& priv, uint32_t n_pub,
                                uint32_t n_priv, std::vector<uint32_t>* ports);
    base::Status start_data(int trunks, int index, int client, Job out, Job in);
    int serve();  // the loop, until exit_ is set
    void check_allocated();
    void watch_children();  // re-arming timer over cfg_.poll_children

    // ---- primary
    int run_primary();
    void on_listener();
    void on_unknown(Link* l);
    void on_agent();
    void on_server();
    void on_member(Member* m);
    bool agent_command(uint32_t cmd, const std::vector<uint8_t>& payload);
    bool server_command(uint32_t cmd, const std::vector<uint8_t>& payload);
    void try_allocate();
    void finish_ok();

    // ---- restarts (impi_resume.hpp, docs/design/relay-restart.md)
    void save_state();           // after DONE: the state file, then KEEP to server and agent
    int run_restarted(const std::string& text);
    void agent_back(Link* l);    // an agent's AUTH + BACK to a relay that said KEEP
    // What this relay comes back to when its connection drops after KEEP: impi-server (the
    // primary, BACK) or the primary relay (a member, TBCK; trunk = true). away(): it dropped;
    // back_try(): one attempt, re-armed with a backoff until WANMPI_WAN_RECONNECT_S.
    struct Way {
        std::unique_ptr<Link>& link;
        const std::string& addr;
        const char* name;  // "impi-server", "the primary relay"
        int64_t& since;
        int64_t& backoff;
        std::string& why;
    };
    Way way(bool trunk) {
        return trunk ? Way{primary_, cfg_.join, "the primary relay", primary_away_since_,
                           primary_backoff_, primary_why_}
                     : Way{server_, cfg_.server, "impi-server", server_away_since_,
                           server_backoff_, server_why_};
    }
    void away(bool trunk, const std::string& why);
    void back_try(bool trunk);
    void drop_state();           // the job is over: the state file goes
    void watch_flow(int64_t since);  // logs when the first packet passed after a restart
    // Trunks (docs/design/relay-restart.md "Trunks"): a member whose control link dropped after
    // KEEP is waited for (member_away); a member comes back to its primary with TBCK
    // (away(true)); the primary takes it back in agent_back() and member_back().
    void member_away(Member* m, const std::string& why);
    bool member_back(Link* l, const BackMsg& b, uint32_t index, std::string* why);
    std::string trunk_name(int t) const;  // "trunk relay 1 of 2 (public ADDR)"

    // ---- member
    int run_member();
    void on_primary();

    RelayConfig cfg_;
    runtime::EventLoop loop_;
    int exit_ = -1;
    int64_t end_by_ = 0;  // after a normal end: exit once pairs are drained or at this time
    std::string pub_, priv_;

    // primary
    int lfd_ = -1;
    std::map<Link*, std::unique_ptr<Link>> unknown_;
    uint64_t serial_ = 0;
    std::unique_ptr<Link> agent_, server_;
    std::vector<std::unique_ptr<Member>> members_;
    enum { A_AUTH, A_AUTHREPLY, A_KEY, A_HMAC, A_CMDS } astate_ = A_AUTH;
    bool server_auth_done_ = false;
    // wanmpi's AUTH method (wanlink/handshake.hpp) passes through: the agent's response, then
    // the server's verdict, forwarded as they are (the relay does not check them; it keeps the
    // session nonce of the challenge, which keys the links: RelayLinkKeys).
    bool verdict_pending_ = false;
    int client_ = -1;
    int nclients_ = 0;
    uint32_t own_nhosts_ = 0, own_nprocs_ = 0;
    bool have_own_nhosts_ = false, have_own_nprocs_ = false;
    std::vector<uint32_t> nhosts_, nprocs_;
    std::map<uint32_t, std::vector<uint8_t>> agent_contrib_;
    std::map<uint32_t, CollReply> out_replies_, in_replies_;
    bool allocating_ = false, faces_ready_ = false;
    RelayFaces faces_;
    std::vector<uint32_t> my_ports_;
    bool fini_ = false;
    bool done_ = false;
    std::function<bool()> allocated_check_;

    // The link handshakes of relayed wanmpi pairs (RelayLinkKeys): the primary's secret (it
    // never leaves this process; members get the derived key in TJOB).
    wanlink::Secret secret_;
    RelayLinkKeys keys_;

    // Restarts: keep_ once KEEP went out (or this relay was restarted from the state file);
    // hmac_: the start-up used wanmpi's AUTH; lost_seen_: the server sent LOST (its close that
    // follows is an orderly end); server_away_since_: when its connection dropped (0: up).
    bool hmac_ = false, keep_ = false, lost_seen_ = false;
    int64_t server_away_since_ = 0, server_backoff_ = 10;
    int64_t restarted_at_ = 0;  // a relay started from its state file: when it listened
    std::string server_why_;

    // both
    std::vector<std::pair<base::Fd, int>> listeners_;  // until the data plane takes them
    RelayMap map_;
    std::unique_ptr<RelayData> data_;
    std::unique_ptr<Link> primary_;  // member: the control connection
    // member: the primary said KEEP (it has a state file, it may come back); since when its
    // control link is down (0: up).
    bool primary_keep_ = false;
    int64_t primary_away_since_ = 0, primary_backoff_ = 10;
    std::string primary_why_;
};

}  // namespace wanmpi::impi
