#include "wanlink/lanes.hpp"

#include <algorithm>

#include "base/tunables.hpp"
#include "wanlink/handshake.hpp"

namespace wanmpi::wanlink {

using base::Errc;
using base::Status;

static base::Tunable<std::string> t_lanes(
    "WAN", "LANES", "auto",
    "TCP connections (lanes) per link between two wanmpi hosts of different clusters, 1..16. "
    "Messages of one (communicator, tag) always take the same lane; a segment lost on one lane "
    "then delays only the messages on it, not those of other tags (MPI's order is restored by "
    "sequence numbers: docs/design/lanes.md). The link uses the smaller of the two sides' "
    "values (and of impi-relay's, which carries each lane as a pair of its own); a plain IMPI "
    "peer gets one lane. auto: 1 on a path below 2 ms round trip, 4 above (the connecting side "
    "measures it, or the relay for a host behind one; an accepting side set to auto takes the "
    "connecting side's choice).",
    base::Level::tuner);

static base::Tunable<int64_t> t_lane_open(
    "WAN", "LANE_OPEN_S", 10,
    "Seconds an extra lane (WANMPI_WAN_LANES) may take to open. A lane not open by then (a "
    "firewall that lets one connection per host through, a relay or host out of descriptors) "
    "is given up: both ends go on with the lanes they have, its streams move to another lane, "
    "and the connecting side logs it. Each connection attempt waits at most 1 s here.",
    base::Level::tuner);

Status parse_lanes(const std::string& text, unsigned* out) {
    if (text.empty() || text == "auto") {
        *out = 0;
        return Status::OK();
    }
    auto n = base::parse_int(text);
    if (!n || *n < 1 || *n > int64_t(kMaxLanes))
        return Status(Errc::invalid, "WANMPI_WAN_LANES='" + text + "': expected 1.." +
                                         std::to_string(kMaxLanes) + " or auto");
    *out = unsigned(*n);
    return Status::OK();
}

Status lanes_setting(unsigned* out) { return parse_lanes(t_lanes.get(), out); }

static base::Tunable<std::string> t_stripe(
    "WAN", "STRIPE", "auto",
    "Spread the data of a long message (after the receiver granted it) over the lanes of its "
    "link (WANMPI_WAN_LANES > 1), each packet to whichever lane's connection takes data first, "
    "so that one transfer uses every lane and a lane slowed by loss carries less. on, off, or "
    "auto: when the connection's congestion control is loss-based (cubic, reno; not BBR, where "
    "one connection already fills a lossy path and striping only puts the transfer on the "
    "other streams' lanes). Only messages of at least lanes x WANMPI_WAN_FRAGMENT bytes, and "
    "never during a rate-managed collective (WANMPI_WAN_RATE): each lane of a peer is paced to "
    "the peer's whole part of the link there, so striping would overrun it.",
    base::Level::tuner);

Status parse_stripe(const std::string& text, Stripe* out) {
    if (text.empty() || text == "auto") *out = Stripe::autos;
    else if (text == "on" || text == "1") *out = Stripe::on;
    else if (text == "off" || text == "0") *out = Stripe::off;
    else
        return Status(Errc::invalid, "WANMPI_WAN_STRIPE='" + text + "': expected auto, on or off");
    return Status::OK();
}

Status stripe_setting(Stripe* out) { return parse_stripe(t_stripe.get(), out); }

Stripe stripe_mode() {
    Stripe s = Stripe::autos;
    if (!stripe_setting(&s).ok()) s = Stripe::autos;
    return s;
}

int64_t lane_open_ms() { return std::max<int64_t>(1, t_lane_open.get()) * 1000; }

unsigned auto_lanes(uint32_t srtt_us) { return srtt_us >= 2000 ? 4 : 1; }

}  // namespace wanmpi::wanlink
