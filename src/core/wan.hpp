// The `wan` route: ranks of other clusters, reached over the IMPI host-to-host connections that
// the start-up dance made (../shared/IMPI.md §5, docs/design/impi.md "Engine changes").
//
// It is a Transport (the engine talks to it with its own 64-byte frames, like shm and tcp) that
// speaks IMPI packets on the wire: it translates the engine's frames into 128-byte big-endian
// IMPI packet headers and back. The translation is MPI-aware (tags, context ids, request ids),
// which is why it lives in core and not in src/transport:
//
//   engine frame                         IMPI packet(s)
//   EAGER ctx src tag size [SYNC sreq]   DATA (DATASYNC if synchronous), srqid = sreq, whole
//                                        message (engine sends eagerly only up to maxlen)
//   RTS ctx src tag size sreq addr       DATASYNC with the first maxlen bytes (read from addr in
//                                        this process; to a wanmpi peer one WANMPI_WAN_FRAGMENT),
//                                        pk_msglen = size: IMPI's long message
//   CTS sreq rreq size (receiver)        SYNCACK srqid = sreq, drqid = rreq; the first fragment,
//                                        kept since the DATASYNC arrived, is handed to the engine
//                                        as DATA at offset 0
//   DATA rreq off (sender)               DATA drqid = rreq; the bytes the DATASYNC already
//                                        carried are skipped; cut into packets of
//                                        WANMPI_WAN_FRAGMENT bytes that other packets pass
//                                        (WANMPI_WAN_PRIORITY, wan.cpp)
//   SYNC_ACK sreq                        SYNCACK srqid = sreq, drqid = 0
//   CANCEL_REQ / CANCEL_RESP             CANCEL / CANCELYES / CANCELNO
//   CREDIT, FIN                          nothing (IMPI has its own flow control; no single copy)
// and on the receiving side a SYNCACK for a long message becomes CTS (or FIN if the DATASYNC
// carried everything), for a synchronous short one SYNC_ACK.
//
// Flow control per ordered proc pair (every wanmpi rank is its own IMPI host, so per connection):
// at most `hiwater` counted packets unacknowledged; the receiver returns a PROTOACK per `ackmark`
// packets as they arrive. Packets beyond the window wait here, in order.
//
// Ownership: owns the sockets from impi::Startup::conns for the peers it serves.
// Threading: like every transport, called under the engine's lock only.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/socket.hpp"
#include "runtime/impi_dance.hpp"
#include "runtime/impi_tables.hpp"
#include "wanlink/tls.hpp"
#include "transport/transport.hpp"
#include "wanlink/tcp_stats.hpp"

namespace wanmpi::core {

class WanTransport : public transport::Transport {
public:
    // IMPI FINI (§5.4): send FINI to every peer once this rank is done (MPI_Finalize, after its
    // sends drained), then fini_done() is true when every peer's FINI arrived (or the peer is
    // gone). Connections close after that.
    virtual void begin_fini() = 0;
    virtual bool fini_done() const = 0;

    // Pacing (issue 12, wanlink/pacer.hpp): this rank's send budget across the WAN in bytes/s
    // on the wire, 0 = unlimited: a token bucket over all of its WAN sockets plus
    // SO_MAX_PACING_RATE on each. core/wan_rate.cpp decides the value (WANMPI_WAN_RATE, the
    // WANMPI_MATB attribute, rate-managed collectives).
    // `flows`: how many of its WAN sockets send at once (each socket's kernel cap is the budget
    // divided by it; wanlink::Pacer::socket_cap).
    virtual void set_rate(uint64_t bytes_per_s, int flows) = 0;
    // Work-conserving caps inside the rank (a rate-managed Alltoallv/w): the bytes the call
    // sends to each peer (world rank, bytes). While set, each socket's cap is the budget in
    // proportion to its peer's bytes among the sockets still sending, instead of an equal part,
    // so that the rank's flows finish together. Empty: equal parts. Set before the call's
    // set_rate; cleared before the set_rate that ends it.
    virtual void set_weights(const std::vector<std::pair<int, uint64_t>>& w) = 0;
    virtual uint64_t rate() const = 0;
    // The k-th socket (in the order of the peers) may not start writing before now + first +
    // k x stride (spreading the unpaced first packets of many flows; see WanPhase).
    virtual void stagger(int64_t first_ns, int64_t stride_ns) = 0;
    virtual int flows() const = 0;
    // One record per connection: counters and the socket's TCP_INFO now (host names empty: the
    // caller knows them). For WANMPI_WAN_STATS, before FINI closes the sockets.
    virtual std::vector<wanlink::LinkStat> link_stats() const = 0;
};

// What the start-up settled about the links (impi_startup.hpp), by world rank: each link's
// handshake result and TLS session, the link key for reconnect handshakes, and the host socket
// that reconnecting peers dial (kept only if some link can resume).
struct WanLinks {
    impi::LinkSetup link;
    std::vector<impi::LinkResult> results;
    std::vector<std::unique_ptr<wanlink::Tls>> tls;
    base::Fd listener;
};

// `conns[r]`: the connection to world rank r (every rank is an IMPI host: host rank == world
// rank); entries for ranks not in `peers` are closed.
std::unique_ptr<WanTransport> make_wan_transport(const impi::Job& job, int my_rank,
                                                 std::vector<base::Fd> conns,
                                                 const std::vector<int>& peers, WanLinks links);

}  // namespace wanmpi::core
