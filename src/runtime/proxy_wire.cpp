#include "runtime/proxy_wire.hpp"

#include "base/codec.hpp"

namespace wanmpi::runtime {

using base::Errc;
using base::Status;

static constexpr size_t kHeader = 9;

void append_frame(std::string* out, FrameType t, uint32_t rank, std::string_view payload) {
    uint8_t h[kHeader];
    h[0] = static_cast<uint8_t>(t);
    base::put_be32(h + 1, rank);
    base::put_be32(h + 5, static_cast<uint32_t>(payload.size()));
    out->append(reinterpret_cast<const char*>(h), kHeader);
    out->append(payload.data(), payload.size());
}

std::string be32_payload(uint32_t v) {
    uint8_t b[4];
    base::put_be32(b, v);
    return std::string(reinterpret_cast<const char*>(b), 4);
}

std::optional<uint32_t> be32_from(std::string_view p) {
    if (p.size() != 4) return std::nullopt;
    return base::get_be32(reinterpret_cast<const uint8_t*>(p.data()));
}

static bool known_type(uint8_t t) {
    return (t >= 1 && t <= 6) || (t >= 16 && t <= 21);
}

Status FrameDecoder::feed(const char* data, size_t n) {
    if (pos_ > 0 && pos_ >= buf_.size() / 2) {
        buf_.erase(0, pos_);
        pos_ = 0;
    }
    buf_.append(data, n);
    // Validate the header of the next frame as soon as it is complete, so garbage is reported
    // at once instead of waiting for a bogus length to arrive.
    size_t p = pos_;
    while (buf_.size() - p >= kHeader) {
        auto* h = reinterpret_cast<const uint8_t*>(buf_.data() + p);
        if (!known_type(h[0]))
            return Status(Errc::proto_error, "unknown frame type " + std::to_string(h[0]));
        uint32_t len = base::get_be32(h + 5);
        if (len > kMaxFramePayload)
            return Status(Errc::proto_error, "frame of " + std::to_string(len) + " bytes");
        if (buf_.size() - p - kHeader < len) break;
        p += kHeader + len;
    }
    return Status::OK();
}

bool FrameDecoder::next(Frame* f) {
    if (buf_.size() - pos_ < kHeader) return false;
    auto* h = reinterpret_cast<const uint8_t*>(buf_.data() + pos_);
    uint32_t len = base::get_be32(h + 5);
    if (buf_.size() - pos_ - kHeader < len) return false;
    f->type = static_cast<FrameType>(h[0]);
    f->rank = base::get_be32(h + 1);
    f->payload.assign(buf_, pos_ + kHeader, len);
    pos_ += kHeader + len;
    if (pos_ == buf_.size()) {
        buf_.clear();
        pos_ = 0;
    }
    return true;
}

void put_strings(std::string* out, const std::vector<std::string>& v) {
    out->append(be32_payload(static_cast<uint32_t>(v.size())));
    for (const auto& s : v) {
        out->append(be32_payload(static_cast<uint32_t>(s.size())));
        out->append(s);
    }
}

bool get_strings(std::string_view in, std::vector<std::string>* v) {
    v->clear();
    auto take32 = [&](uint32_t* x) {
        if (in.size() < 4) return false;
        *x = base::get_be32(reinterpret_cast<const uint8_t*>(in.data()));
        in.remove_prefix(4);
        return true;
    };
    uint32_t n = 0;
    if (!take32(&n) || n > in.size()) return false;  // each string needs >= 4 bytes
    for (uint32_t i = 0; i < n; ++i) {
        uint32_t len = 0;
        if (!take32(&len) || len > in.size()) return false;
        v->emplace_back(in.substr(0, len));
        in.remove_prefix(len);
    }
    return in.empty();
}

// Job payload: strings ["wanmpi-job-1", first_rank, count, size, host_index, cwd, argc,
// argv..., env...] so fields are self-delimiting and the format can grow at the end.
std::string encode_job(const ProxyJob& j) {
    std::vector<std::string> v = {"wanmpi-job-1",
                                  std::to_string(j.first_rank),
                                  std::to_string(j.count),
                                  std::to_string(j.size),
                                  std::to_string(j.host_index),
                                  j.cwd,
                                  std::to_string(j.argv.size())};
    v.insert(v.end(), j.argv.begin(), j.argv.end());
    v.insert(v.end(), j.env.begin(), j.env.end());
    std::string out;
    put_strings(&out, v);
    return out;
}

static bool to_u32(const std::string& s, uint32_t* out) {
    if (s.empty() || s.size() > 10) return false;
    uint64_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + static_cast<uint64_t>(c - '0');
    }
    if (v > 0xffffffffu) return false;
    *out = static_cast<uint32_t>(v);
    return true;
}

Status decode_job(std::string_view payload, ProxyJob* j) {
    std::vector<std::string> v;
    if (!get_strings(payload, &v) || v.size() < 7 || v[0] != "wanmpi-job-1")
        return Status(Errc::proto_error, "malformed job description from mpirun");
    uint32_t argc = 0;
    if (!to_u32(v[1], &j->first_rank) || !to_u32(v[2], &j->count) || !to_u32(v[3], &j->size) ||
        !to_u32(v[4], &j->host_index) || !to_u32(v[6], &argc) || argc == 0 ||
        argc > v.size() - 7 || j->count == 0 || j->first_rank + uint64_t(j->count) > j->size)
        return Status(Errc::proto_error, "inconsistent job description from mpirun");
    j->cwd = v[5];
    j->argv.assign(v.begin() + 7, v.begin() + 7 + argc);
    j->env.assign(v.begin() + 7 + argc, v.end());
    for (const auto& e : j->env)
        if (e.find('=') == std::string::npos || e[0] == '=')
            return Status(Errc::proto_error, "malformed environment entry in job description");
    return Status::OK();
}

}  // namespace wanmpi::runtime
