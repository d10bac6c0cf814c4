#include "wanlink/pacer.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>

#include <linux/sockios.h>
#include <sys/ioctl.h>

#include "wanlink/sockopt.hpp"

namespace wanmpi::wanlink {

void Pacer::set_rate(uint64_t bytes_per_s, int64_t now_ns) {
    rate_ = bytes_per_s;
    if (!rate_) return;
    bps_ = kPayloadShare * double(rate_);
    depth_ = std::max<size_t>(65536, size_t(bps_ * 0.005));
    // A new rate starts from an empty bucket: what the old one allowed may still be in the
    // kernel, and the new phase (a collective's share) must not begin with a burst.
    tokens_ = 0;
    last_ns_ = now_ns;
}

void Pacer::refill(int64_t now_ns) {
    if (now_ns > last_ns_) {
        tokens_ = std::min(double(depth_), tokens_ + bps_ * double(now_ns - last_ns_) * 1e-9);
        last_ns_ = now_ns;
    }
}

size_t Pacer::allow(size_t want, int64_t now_ns) {
    if (!rate_) return want;
    refill(now_ns);
    if (tokens_ < double(std::min(want, kQuantum))) return 0;
    return std::min(want, size_t(tokens_));
}

void Pacer::consume(size_t n) {
    if (rate_) tokens_ -= double(n);
}

int64_t Pacer::wait_ns(size_t want, int64_t now_ns) {
    if (!rate_) return 0;
    refill(now_ns);
    // Wake up well before the bucket is full: a late wake-up (the process may not get a core at
    // once) must not find it full, or the tokens it would have gathered meanwhile are lost.
    double need = double(std::min(want, depth_ / 4)) - tokens_;
    return need <= 0 ? 0 : int64_t(std::ceil(need / bps_ * 1e9));
}

VolumeShare volume_share(const int64_t* bytes, size_t n, size_t me) {
    VolumeShare r;
    double total = 0;
    for (size_t i = 0; i < n; ++i)
        if (bytes[i] > 0) {
            total += double(bytes[i]);
            if (i < me) ++r.index;
            ++r.senders;
        }
    if (me >= n || bytes[me] <= 0) return VolumeShare{};
    const double floor = total / double(4 * r.senders);
    double sum = 0;
    for (size_t i = 0; i < n; ++i)
        if (bytes[i] > 0) sum += std::max(double(bytes[i]), floor);
    r.share = std::min(1.0, std::max(double(bytes[me]), floor) / sum);
    return r;
}

int set_socket_pacing(int fd, uint64_t bytes_per_s) {
    uint64_t v = bytes_per_s ? bytes_per_s : ~uint64_t(0);
    return setsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, &v, sizeof v) == 0 ? 0 : errno;
}

int64_t socket_unsent(int fd) {
    int v = 0;
    return ioctl(fd, SIOCOUTQNSD, &v) == 0 && v > 0 ? v : 0;
}

int64_t socket_queued(int fd) {
    int v = 0;
    return ioctl(fd, SIOCOUTQ, &v) == 0 && v > 0 ? v : 0;
}

uint64_t socket_pacing(int fd) {
    uint64_t v = 0;
    socklen_t len = sizeof v;
    if (getsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, &v, &len) != 0) return 0;
    if (len == 4) v = uint32_t(v) == ~uint32_t(0) ? ~uint64_t(0) : uint32_t(v);
    return v;
}

}  // namespace wanmpi::wanlink
