// impi-relay's data plane: the relay ports of the dance and the packet forwarding between the
// two connections of every host pair (impi_relay.hpp has the design).
//
// Ownership: owns the listening sockets handed to add_listener() and every connection it
// accepts or opens. Threading: the loop's thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "base/socket.hpp"
#include "runtime/event_loop.hpp"
#include "runtime/impi_relay.hpp"
#include "wanlink/handshake.hpp"
#include "wanlink/tcp_tune.hpp"
#include "wanlink/tls.hpp"

namespace wanmpi::impi {

class RelayData {
public:
    RelayData(runtime::EventLoop& loop, const RelayMap& map, const RelayConfig& cfg,
              const RelayLinkKeys& keys);
    ~RelayData();
    RelayData(const RelayData&) = delete;
    RelayData& operator=(const RelayData&) = delete;

    // A listening socket whose port represents `host`: one of the cluster's hosts (on the public
    // side; outside hosts connect to it) or an outside host (on the private side).
    void add_listener(base::Fd fd, int host);
    // Pairs still open (both connections up or one direction still draining).
    size_t open_pairs() const { return pairs_.size(); }
    // Ends everything at once (the job failed): the hosts see their connections close.
    void close_all();
    // Called when a pair breaks before both of its hosts closed it after IMPI FINI.
    std::function<void(const std::string&)> on_broken;

    uint64_t packets = 0, bytes = 0, spliced = 0;
    uint64_t secured = 0, resumed = 0;  // pairs that ran the link handshake; of them reconnects

private:
    struct Pending;
    struct Pair;
    struct Dir;
    void on_accept(int lfd, int host);
    void on_pending(Pending* p);
    // Joins the accepted connection of `p` to a new pair and dials the other host. hs: the
    // acceptor's link handshake (wanmpi pairs), at ready.
    void start_pair(Pending* p, uint32_t rank, std::unique_ptr<wanlink::LinkHandshake> hs);
    void dial(Pair* p);
    void on_connected(Pair* p);
    // wanmpi pairs: the two legs' link handshakes and TLS, before any packet passes.
    void on_secure(Pair* p);
    void watch(Pair* p, int fd, uint32_t ev);
    void start_forwarding(Pair* p);
    uint8_t leg_flags(bool inner) const;
    // Pumps the directions an event concerns (mask: 1 = h -> j, 2 = j -> h), then re-arms.
    void on_pair(Pair* p, int dirs = 3);
    void update(Pair* p);
    void drop_pending(Pending* p, const std::string& why);
    void end_pair(Pair* p, const std::string& why);  // why empty: a clean end
    std::string pump(Pair* pr, Dir& d);
    // The stall watch (WANMPI_WAN_STALL_MS): every kStallEveryMs while resumable pairs forward.
    void watch_stalls();
    static constexpr int64_t kStallEveryMs = 100;
    const int64_t stall_ms_ = wanlink::stall_ms();
    uint64_t stall_timer_ = 0;

    runtime::EventLoop& loop_;
    const RelayMap& map_;
    RelayConfig cfg_;
    RelayLinkKeys keys_;
    wanlink::TcpTuning tuning_;
    std::map<int, int> listeners_;  // fd -> represented host
    std::map<Pending*, std::unique_ptr<Pending>> pending_;
    std::map<Pair*, std::unique_ptr<Pair>> pairs_;
    // (h, j, lane): pairs that exist or existed. Each lane of a link (issue 14) is a relayed
    // pair of its own, lane i of one leg joined to lane i of the other.
    std::map<std::tuple<int, int, int>, bool> taken_;
    // Lanes (docs/design/lanes.md "Through impi-relay and trunks"): what this relay answers a
    // connector at the dance (its cap), and what it offers the other host.
    uint8_t answer_lanes() const;
    uint8_t offer_lanes(const Pair* p, uint8_t asked) const;
};

}  // namespace wanmpi::impi
