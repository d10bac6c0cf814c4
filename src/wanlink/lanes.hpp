// Lanes (issue 14, docs/design/lanes.md part 2): k TCP connections per link between two wanmpi
// hosts, so that a segment lost on one connection delays only the messages of the streams on it.
// This file holds what every user of the link agrees on: the WANMPI_WAN_LANES setting, how
// `auto` resolves from the path, and the fixed hash that puts a (context id, tag) stream on a
// lane (the same on every host and relay, so one stream is one FIFO lane end to end).
//
// Threading: pure functions; lanes_setting() parses the environment once (thread-safe).
#pragma once

#include <cstdint>
#include <string>

#include "base/status.hpp"

namespace wanmpi::wanlink {

// WANMPI_WAN_LANES: 1..16, or 0 for auto. A malformed value is an error (MPI_Init fails with it).
base::Status parse_lanes(const std::string& text, unsigned* out);
base::Status lanes_setting(unsigned* out);

// WANMPI_WAN_LANE_OPEN_S in ms: how long the connecting side tries to open an extra lane before
// the link goes on without it (docs/design/lanes.md "A lane that cannot be opened").
int64_t lane_open_ms();

// WANMPI_WAN_STRIPE (docs/design/lanes.md "Striping large messages"): whether the granted DATA
// of a long message is spread over a link's lanes. auto: when the connection's congestion
// control is loss-based (cubic, reno; not BBR). A malformed value is an error.
enum class Stripe : uint8_t { off, on, autos };
base::Status parse_stripe(const std::string& text, Stripe* out);
base::Status stripe_setting(Stripe* out);
Stripe stripe_mode();  // the setting, auto if malformed (MPI_Init refused it already)

// What `auto` offers on a path of this smoothed RTT (microseconds; 0: unknown): one lane on a
// LAN (below 2 ms nothing is gained), 4 above.
unsigned auto_lanes(uint32_t srtt_us);

// The lane of a matching packet of (context id, tag) on a link of k lanes.
inline unsigned lane_of(uint64_t cid, int32_t tag, unsigned k) {
    if (k <= 1) return 0;
    // splitmix64's finalizer over both fields: neighbouring tags and contexts spread evenly.
    uint64_t x = cid * 0x9e3779b97f4a7c15ull ^ uint64_t(uint32_t(tag));
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    // The high half picks the lane (multiply-shift): the low bits of small inputs mix poorly.
    return unsigned(((x >> 32) * k) >> 32);
}

}  // namespace wanmpi::wanlink
