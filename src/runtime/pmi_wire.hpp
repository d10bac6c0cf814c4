// PMI-1 wire protocol codec, shared by the client in libwanmpi (pmi_client) and the server in
// mpirun (pmi_server).
//
// Wire format ("PMI v1", as spoken by MPICH's simple PMI and Hydra): one message per line,
//     cmd=<name> key=value key=value...\n
// tokens separated by single or repeated spaces. Keys are non-empty and contain no space, '=' or
// newline. Values run to the next unescaped space; a backslash escapes the following character
// (MPICH >= 4.1 writes "\ " for a space inside a value). Older servers (Hydra 4.0, Debian 12) do
// not unescape, so values with spaces do not survive them; values without spaces or backslashes are
// byte-identical under both rules. Multi-line "mcmd=spawn ... endcmd" messages are not parsed here.
//
// Stateless functions, plus LineBuffer (one per connection, not thread-safe).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.hpp"

namespace wanmpi::runtime {

struct PmiMsg {
    std::string cmd;
    std::vector<std::pair<std::string, std::string>> args;  // in wire order

    PmiMsg() = default;
    explicit PmiMsg(std::string c) : cmd(std::move(c)) {}
    PmiMsg& add(std::string key, std::string value) {
        args.emplace_back(std::move(key), std::move(value));
        return *this;
    }
    PmiMsg& add(std::string key, long long value) {
        return add(std::move(key), std::to_string(value));
    }

    // First value for key, or nullptr.
    const std::string* find(std::string_view key) const;
    // Integer value for key (decimal, optional sign); nullopt if absent or not an integer.
    std::optional<long long> get_int(std::string_view key) const;
};

// Parse one line. `line` may or may not end in "\n" (a trailing "\r\n" or spaces are ignored).
// Errors (Errc::proto_error) name what is wrong: missing "cmd=", empty key, NUL byte, ...
base::Status parse_pmi_line(std::string_view line, PmiMsg* out);

// Encode msg as one line including the trailing '\n'. Values are escaped (space and backslash get a
// backslash). Keys and values must not contain '\n' or NUL (checked by the callers that take user
// input; here they are replaced by '?' so a line can never be split).
std::string format_pmi_line(const PmiMsg& msg);

std::string pmi_escape(std::string_view v);
std::string pmi_unescape(std::string_view v);

// True if `key` can be sent as a PMI key (non-empty, printable, no space, '=' or backslash).
bool pmi_key_ok(std::string_view key);

// Accumulates bytes from a stream and hands out complete lines (without the '\n').
// A line longer than max_line bytes puts the buffer into the overflow state (sticky): the peer is
// broken or hostile and the connection should be dropped.
class LineBuffer {
public:
    explicit LineBuffer(size_t max_line = 1 << 20) : max_line_(max_line) {}
    void append(const char* data, size_t n);
    // Next complete line, or nullopt if none is buffered (or overflowed).
    std::optional<std::string> next_line();
    bool overflow() const { return overflow_; }
    size_t pending() const { return buf_.size() - pos_; }
    // The bytes of an unterminated last line (for error messages).
    std::string_view partial() const { return std::string_view(buf_).substr(pos_); }

private:
    std::string buf_;
    size_t pos_ = 0;
    size_t scan_ = 0;  // bytes after pos_ already known to contain no '\n'
    size_t max_line_;
    bool overflow_ = false;
};

// Printable excerpt of untrusted bytes for error messages (control characters escaped, cut at
// max characters).
std::string printable_excerpt(std::string_view s, size_t max = 80);

}  // namespace wanmpi::runtime
