#include "runtime/output_mux.hpp"

#include <cerrno>
#include <unistd.h>
#include <vector>

#include "base/socket.hpp"

namespace wanmpi::runtime {

void OutputMux::emit(int stream, const std::string& s) {
    int i = stream == 2 ? 1 : 0;
    if (s.empty() || broken_[i]) return;
    // EPIPE (e.g. "mpirun ... | head"): drop further output of that stream, keep the job going.
    if (base::write_full(fds_[i], s.data(), s.size()) < 0 && errno == EPIPE) broken_[i] = true;
}

void OutputMux::data(int rank, int stream, const char* d, size_t n, int64_t now_ms) {
    Sink& s = sinks_[{rank, stream}];
    std::string out;
    size_t start = 0;
    for (size_t i = 0; i < n; ++i) {
        if (d[i] != '\n') continue;
        if (!s.mid_line) out += prefix(rank);
        out += s.partial;
        out.append(d + start, i + 1 - start);
        s.partial.clear();
        s.mid_line = false;
        start = i + 1;
    }
    if (start < n) {
        if (s.partial.empty()) s.since = now_ms;
        s.partial.append(d + start, n - start);
        // A "line" this long is not a line: pass it through rather than buffer without bound.
        if (s.partial.size() > (1u << 20)) {
            emit(stream, out);
            out.clear();
            write_partial(rank, stream, s);
        }
    }
    emit(stream, out);
}

void OutputMux::write_partial(int rank, int stream, Sink& s) {
    if (s.partial.empty()) return;
    std::string out = s.mid_line ? std::string() : prefix(rank);
    out += s.partial;
    s.partial.clear();
    s.mid_line = true;
    emit(stream, out);
}

void OutputMux::flush_rank(int rank) {
    for (int stream : {1, 2}) {
        auto it = sinks_.find({rank, stream});
        if (it == sinks_.end()) continue;
        write_partial(rank, stream, it->second);
        // With tags, end the line so the next rank's tag starts a line of its own.
        if (tag_ && it->second.mid_line) emit(stream, "\n");
        sinks_.erase(it);
    }
}

int64_t OutputMux::flush_due(int64_t now_ms) {
    int64_t next = -1;
    for (auto& [key, s] : sinks_) {
        if (s.partial.empty()) continue;
        if (now_ms - s.since >= partial_ms_) {
            write_partial(key.first, key.second, s);
        } else {
            int64_t d = s.since + partial_ms_;
            if (next < 0 || d < next) next = d;
        }
    }
    return next;
}

void OutputMux::flush_all() {
    std::vector<int> ranks;
    for (auto& [key, s] : sinks_) ranks.push_back(key.first);
    for (int r : ranks) flush_rank(r);
}

}  // namespace wanmpi::runtime
