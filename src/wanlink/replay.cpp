#include "wanlink/replay.hpp"

#include <algorithm>
#include <cstring>

namespace wanmpi::wanlink {

void SendLog::append(const iovec* iov, int n, size_t bytes) {
    for (int i = 0; i < n && bytes > 0; ++i) {
        const char* p = static_cast<const char*>(iov[i].iov_base);
        size_t len = std::min(iov[i].iov_len, bytes);
        bytes -= len;
        while (len > 0) {
            const size_t at = size_t(end_ - base_) % kChunk;
            if (at == 0 && end_ - base_ == chunks_.size() * kChunk)
                chunks_.emplace_back(new char[kChunk]);
            const size_t take = std::min(len, kChunk - at);
            std::memcpy(chunks_.back().get() + at, p, take);
            p += take;
            len -= take;
            end_ += take;
        }
    }
}

bool SendLog::ack(uint64_t off) {
    if (off > end_) return false;
    if (off <= begin_) return true;
    begin_ = off;
    while (!chunks_.empty() && begin_ - base_ >= kChunk) {
        chunks_.pop_front();
        base_ += kChunk;
    }
    return true;
}

int SendLog::iov_from(uint64_t from, iovec* out, int max) const {
    int n = 0;
    from = std::clamp(from, begin_, end_);
    while (from < end_ && n < max) {
        const size_t ci = size_t((from - base_) / kChunk);
        const size_t at = size_t((from - base_) % kChunk);
        const size_t len = size_t(std::min<uint64_t>(kChunk - at, end_ - from));
        out[n++] = {chunks_[ci].get() + at, len};
        from += len;
    }
    return n;
}

}  // namespace wanmpi::wanlink
