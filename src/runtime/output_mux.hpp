// mpirun's stdout/stderr forwarding: bytes from every rank (local pipes or proxy frames) are cut
// into lines and written whole, so lines of different ranks never interleave, optionally
// prefixed "[rank] " (--tag-output, like Hydra's -l). A partial line (a prompt without newline)
// is written after it has waited `partial_ms` without more data, and at the rank's end.
//
// Writes are blocking: a slow reader of mpirun's output slows the job down instead of growing
// buffers. Single-threaded (mpirun's loop).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

namespace wanmpi::runtime {

class OutputMux {
public:
    OutputMux(bool tag, int out_fd = 1, int err_fd = 2, int64_t partial_ms = 200)
        : tag_(tag), fds_{out_fd, err_fd}, partial_ms_(partial_ms) {}

    // stream: 1 stdout, 2 stderr
    void data(int rank, int stream, const char* d, size_t n, int64_t now_ms);
    // Write out the unterminated last lines of the rank (at its exit).
    void flush_rank(int rank);
    // Write partial lines that have waited long enough; returns the next deadline (-1: none).
    int64_t flush_due(int64_t now_ms);
    void flush_all();

private:
    struct Sink {
        std::string partial;
        bool mid_line = false;  // an unterminated piece of the current line was already written
        int64_t since = 0;
    };
    void emit(int stream, const std::string& s);
    std::string prefix(int rank) const { return tag_ ? "[" + std::to_string(rank) + "] " : ""; }
    void write_partial(int rank, int stream, Sink& s);

    bool tag_;
    int fds_[2];
    bool broken_[2] = {false, false};
    int64_t partial_ms_;
    std::map<std::pair<int, int>, Sink> sinks_;  // (rank, stream)
};

}  // namespace wanmpi::runtime
