// Status: the internal error type. Grouped by what a failure affects (STYLE.md §4):
//   request  - one operation failed (truncation, cancelled, bad argument)
//   link     - a connection to a peer broke; requests on it fail
//   peer     - a peer process is gone
//   process  - this process cannot go on (out of memory, cannot set up a transport)
// No exceptions on hot paths; functions return Status (cheap when ok: no allocation).
#pragma once

#include <string>
#include <utility>

namespace wanmpi::base {

enum class Errc {
    ok = 0,
    no_resource,   // back-pressure: try again later (not an error to report)
    invalid,       // bad argument or malformed input
    truncated,
    link_failed,
    peer_failed,
    proto_error,   // malformed bytes from the network
    io_error,
    fatal,
};

class Status {
public:
    Status() = default;
    Status(Errc c, std::string msg, int sys_errno = 0)
        : code_(c), errno_(sys_errno), msg_(std::move(msg)) {}
    static Status OK() { return {}; }
    bool ok() const { return code_ == Errc::ok; }
    explicit operator bool() const { return ok(); }
    Errc code() const { return code_; }
    int sys_errno() const { return errno_; }
    const std::string& message() const { return msg_; }

private:
    Errc code_ = Errc::ok;
    int errno_ = 0;
    std::string msg_;
};

}  // namespace wanmpi::base
