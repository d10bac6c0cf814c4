#include "runtime/pmi_wire.hpp"

#include <cstdio>
#include <cstring>

namespace wanmpi::runtime {

using base::Errc;
using base::Status;

const std::string* PmiMsg::find(std::string_view key) const {
    for (const auto& kv : args)
        if (kv.first == key) return &kv.second;
    return nullptr;
}

std::optional<long long> PmiMsg::get_int(std::string_view key) const {
    const std::string* v = find(key);
    if (!v || v->empty() || v->size() > 19) return std::nullopt;
    size_t i = 0;
    bool neg = false;
    if ((*v)[0] == '-' || (*v)[0] == '+') {
        neg = (*v)[0] == '-';
        i = 1;
        if (v->size() == 1) return std::nullopt;
    }
    long long r = 0;
    for (; i < v->size(); ++i) {
        char c = (*v)[i];
        if (c < '0' || c > '9') return std::nullopt;
        r = r * 10 + (c - '0');
    }
    return neg ? -r : r;
}

std::string pmi_escape(std::string_view v) {
    std::string r;
    r.reserve(v.size());
    for (char c : v) {
        if (c == '\n' || c == '\0') {
            r += '?';
            continue;
        }
        if (c == ' ' || c == '\\') r += '\\';
        r += c;
    }
    return r;
}

std::string pmi_unescape(std::string_view v) {
    std::string r;
    r.reserve(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
        if (v[i] == '\\' && i + 1 < v.size()) ++i;
        r += v[i];
    }
    return r;
}

bool pmi_key_ok(std::string_view key) {
    if (key.empty()) return false;
    for (unsigned char c : key)
        if (c <= ' ' || c == '=' || c == '\\' || c == 0x7f) return false;
    return true;
}

std::string printable_excerpt(std::string_view s, size_t max) {
    std::string r;
    for (size_t i = 0; i < s.size(); ++i) {
        if (r.size() >= max) {
            r += "...";
            break;
        }
        unsigned char c = static_cast<unsigned char>(s[i]);
        if (c == '\n') r += "\\n";
        else if (c == '\r') r += "\\r";
        else if (c == '\t') r += "\\t";
        else if (c < 0x20 || c >= 0x7f) {
            char b[8];
            std::snprintf(b, sizeof b, "\\x%02x", c);
            r += b;
        } else r += static_cast<char>(c);
    }
    return r;
}

Status parse_pmi_line(std::string_view line, PmiMsg* out) {
    out->cmd.clear();
    out->args.clear();
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r' || line.back() == ' '))
        line.remove_suffix(1);
    if (line.find('\0') != std::string_view::npos)
        return Status(Errc::proto_error, "NUL byte in PMI line");
    if (line.find('\n') != std::string_view::npos)
        return Status(Errc::proto_error, "embedded newline in PMI line");
    if (line.substr(0, 4) != "cmd=")
        return Status(Errc::proto_error, "PMI-1 line does not start with \"cmd=\"");
    size_t p = 0;
    bool first = true;
    while (p < line.size()) {
        while (p < line.size() && line[p] == ' ') ++p;
        if (p >= line.size()) break;
        size_t k = p;
        while (p < line.size() && line[p] != ' ' && line[p] != '=') ++p;
        if (p == k) return Status(Errc::proto_error, "empty key in PMI line");
        std::string key(line.substr(k, p - k));
        std::string val;
        if (p < line.size() && line[p] == '=') {
            ++p;
            std::string raw;
            while (p < line.size() && line[p] != ' ') {
                if (line[p] == '\\' && p + 1 < line.size()) {
                    raw += line[p + 1];
                    p += 2;
                } else {
                    raw += line[p++];
                }
            }
            val = std::move(raw);
        }
        if (first) {
            if (val.empty()) return Status(Errc::proto_error, "empty command name in PMI line");
            out->cmd = std::move(val);
            first = false;
        } else {
            out->args.emplace_back(std::move(key), std::move(val));
        }
    }
    return Status::OK();
}

std::string format_pmi_line(const PmiMsg& msg) {
    std::string r = "cmd=";
    r += pmi_escape(msg.cmd);
    for (const auto& kv : msg.args) {
        r += ' ';
        for (char c : kv.first) r += (c == ' ' || c == '=' || c == '\n' || c == '\0') ? '_' : c;
        r += '=';
        r += pmi_escape(kv.second);
    }
    r += '\n';
    return r;
}

void LineBuffer::append(const char* data, size_t n) {
    if (overflow_) return;
    // Compact once the consumed prefix dominates, so long-lived connections do not grow.
    if (pos_ > 0 && pos_ >= buf_.size() / 2) {
        buf_.erase(0, pos_);
        pos_ = 0;
    }
    buf_.append(data, n);
}

std::optional<std::string> LineBuffer::next_line() {
    if (overflow_) return std::nullopt;
    size_t nl = buf_.find('\n', pos_ + scan_);
    if (nl == std::string::npos) {
        scan_ = buf_.size() - pos_;
        if (scan_ > max_line_) overflow_ = true;
        return std::nullopt;
    }
    if (nl - pos_ > max_line_) {
        overflow_ = true;
        return std::nullopt;
    }
    std::string line = buf_.substr(pos_, nl - pos_);
    pos_ = nl + 1;
    scan_ = 0;
    if (pos_ == buf_.size()) {
        buf_.clear();
        pos_ = 0;
    }
    return line;
}

}  // namespace wanmpi::runtime
