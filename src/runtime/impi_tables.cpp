#include "runtime/impi_tables.hpp"

#include <algorithm>
#include <cstring>

#include "base/codec.hpp"
#include "base/tunables.hpp"

namespace wanmpi::impi {

using base::Errc;
using base::get_be32;
using base::get_be64;
using base::put_be32;
using base::put_be64;
using base::Status;

// Defaults for long fat pipes (docs/design/impi.md): 1 MiB packets and 64 unacknowledged packets
// per proc pair keep 64 MiB in flight, enough for 10 Gbit/s x 50 ms from one pair; ACKs every 16
// packets arrive well before the window closes. LAM's 64 KiB x 20 would cap a pair at ~500 Mbit/s
// over a 20 ms round trip. Every value is negotiated down to the smallest client's/host's.
static base::Tunable<int64_t> t_datalen(
    "IMPI", "C_DATALEN", 1 << 20,
    "Largest IMPI packet payload this cluster offers (IMPI_C_DATALEN); the job uses the minimum "
    "over all clusters. Messages up to it are sent eagerly, longer ones after a round trip.",
    base::Level::user, "IMPI_C_DATALEN");
static base::Tunable<int64_t> t_hiwater(
    "IMPI", "H_HIWATER", 64,
    "Most unacknowledged IMPI packets per ordered proc pair (IMPI_H_HIWATER); the job uses the "
    "minimum over all hosts. In flight per pair: HIWATER x the negotiated DATALEN.",
    base::Level::user, "IMPI_H_HIWATER");
static base::Tunable<int64_t> t_ackmark(
    "IMPI", "H_ACKMARK", 16,
    "A receiver acknowledges every ACKMARK IMPI packets of a proc pair (IMPI_H_ACKMARK); the job "
    "uses the minimum over all hosts (at most HIWATER).",
    base::Level::user, "IMPI_H_ACKMARK");
static base::Tunable<int64_t> t_xsize(
    "IMPI", "COLL_XSIZE", -1,
    "Smallest data size in bytes for the long IMPI collective protocols (IMPI_C_COLL_XSIZE); -1: "
    "the IMPI default 1024. Every cluster must use the same value.",
    base::Level::tuner, "IMPI_COLL_XSIZE", true);
static base::Tunable<int64_t> t_maxlinear(
    "IMPI", "COLL_MAXLINEAR", -1,
    "Number of cluster masters up to which IMPI collectives are linear, tree above "
    "(IMPI_C_COLL_MAXLINEAR); -1: the IMPI default 4. Every cluster must use the same value.",
    base::Level::tuner, "IMPI_COLL_MAXLINEAR", true);
static base::Tunable<bool> t_plain(
    "IMPI", "PLAIN", false,
    "Offer only IMPI version 0.0 (no wanmpi extensions, not even with other wanmpi clusters).",
    base::Level::tuner);

namespace {

Status bad(const std::string& m) { return Status(Errc::proto_error, m); }
Status invalid(const std::string& m) { return Status(Errc::invalid, m); }

std::string lname(uint32_t label) {
    const char* n = label_name(label);
    return n ? n : "label " + std::to_string(label);
}

// Caps that bound every allocation made from numbers a peer sent.
constexpr uint32_t kMaxHosts = 1u << 20;
constexpr uint32_t kMaxProcs = 1u << 20;

bool versions_ok(const std::vector<Version>& v) {
    if (v.empty() || v[0] != kVersionPlain) return false;
    for (size_t i = 1; i < v.size(); ++i)
        if (!(v[i - 1] < v[i])) return false;
    return true;
}

// Splits `data` into per-client pieces of elem * count[c] bytes for the clients in `mask`.
// count == nullptr: one element per client.
Status split_fixed(const CollReply& r, uint32_t label, int n, size_t elem,
                   const std::vector<uint32_t>* count, std::vector<const uint8_t*>* part) {
    part->assign(size_t(n), nullptr);
    uint64_t off = 0;
    for (int c = 0; c < n; ++c) {
        if (!(r.mask & (1u << c))) continue;
        uint64_t len = uint64_t(elem) * (count ? (*count)[size_t(c)] : 1);
        if (off + len > r.data.size())
            return bad("the reply to " + lname(label) + " is too short for client " +
                       std::to_string(c) + " (" + std::to_string(r.data.size()) + " bytes)");
        (*part)[size_t(c)] = r.data.data() + off;
        off += len;
    }
    if (off != r.data.size())
        return bad("the reply to " + lname(label) + " has " + std::to_string(r.data.size()) +
                   " bytes, expected " + std::to_string(off));
    return Status::OK();
}

}  // namespace

std::string version_text(Version v) {
    if (v.major == kVersionWanmpi.major) return "wanmpi." + std::to_string(v.minor);
    return std::to_string(v.major) + "." + std::to_string(v.minor);
}

std::string Job::Host::addr() const {
    auto a = ipv4_from_host_id(id);
    return a ? *a : std::string();
}

int Job::rank_of(const Proc& p) const {
    auto it = proc_index.find({p.host, p.pid});
    return it == proc_index.end() ? -1 : it->second;
}

Proc make_proc_id(const HostId& host, uint16_t port, int64_t pid) {
    return Proc{host, int64_t((uint64_t(port) << 32) | uint32_t(pid))};
}

std::string relay_of(const Proc& p) {
    if ((uint64_t(p.pid) >> 40) != kRelayPidTag) return "";
    auto a = ipv4_from_host_id(p.host);
    return a ? *a : std::string();
}

ClusterTables client_values() {
    ClusterTables t;
    auto clamp_u32 = [](int64_t v) { return uint32_t(std::clamp<int64_t>(v, 0, 0xffffffffLL)); };
    auto clamp_i32 = [](int64_t v) {
        return int32_t(std::clamp<int64_t>(v, INT32_MIN, INT32_MAX));
    };
    t.datalen = clamp_u32(t_datalen.get());
    t.hiwater = clamp_u32(t_hiwater.get());
    t.ackmark = clamp_u32(t_ackmark.get());
    t.coll_xsize = clamp_i32(t_xsize.get());
    t.coll_maxlinear = clamp_i32(t_maxlinear.get());
    if (t_plain.get()) t.versions = {kVersionPlain};
    return t;
}

Status validate(const ClusterTables& t) {
    if (!versions_ok(t.versions))
        return invalid("the IMPI version list must be strictly ascending and start with 0.0");
    if (t.datalen < 1) return invalid("IMPI_C_DATALEN must be at least 1");
    if (t.tag_ub < kMinTagUb) return invalid("IMPI_C_TAGUB must be at least 32767");
    if (t.coll_xsize < -1) return invalid("IMPI_COLL_XSIZE must be -1 (default) or >= 0");
    if (t.coll_maxlinear < -1) return invalid("IMPI_COLL_MAXLINEAR must be -1 (default) or >= 0");
    if (t.ackmark < 1 || t.hiwater < t.ackmark)
        return invalid("IMPI_H_ACKMARK (" + std::to_string(t.ackmark) + ") must be between 1 and "
                       "IMPI_H_HIWATER (" + std::to_string(t.hiwater) + ")");
    if (t.hosts.empty()) return invalid("a client needs at least one IMPI host");
    if (t.hosts.size() > kMaxHosts || t.procs.size() > kMaxProcs)
        return invalid("too many IMPI hosts or procs");
    uint64_t sum = 0;
    for (const auto& h : t.hosts) {
        if (h.port == 0) return invalid("an IMPI host has port 0");
        sum += h.nprocs;
    }
    if (sum != t.procs.size())
        return invalid("the hosts carry " + std::to_string(sum) + " procs, but " +
                       std::to_string(t.procs.size()) + " procs are listed");
    return Status::OK();
}

std::vector<uint8_t> contribution(const ClusterTables& t, uint32_t label) {
    std::vector<uint8_t> d;
    auto u32 = [&](uint32_t v) {
        size_t o = d.size();
        d.resize(o + 4);
        put_be32(&d[o], v);
    };
    auto id16 = [&](const HostId& id) { d.insert(d.end(), id.begin(), id.end()); };
    switch (label) {
    case C_VERSION:
        for (auto v : t.versions) {
            u32(v.major);
            u32(v.minor);
        }
        break;
    case C_NHOSTS: u32(uint32_t(t.hosts.size())); break;
    case C_NPROCS: u32(uint32_t(t.procs.size())); break;
    case C_DATALEN: u32(t.datalen); break;
    case C_TAGUB: u32(uint32_t(t.tag_ub)); break;
    case C_COLL_XSIZE: u32(uint32_t(t.coll_xsize)); break;
    case C_COLL_MAXLINEAR: u32(uint32_t(t.coll_maxlinear)); break;
    case H_IPV6:
        for (const auto& h : t.hosts) id16(h.id);
        break;
    case H_PORT:
        for (const auto& h : t.hosts) u32(h.port);
        break;
    case H_NPROCS:
        for (const auto& h : t.hosts) u32(h.nprocs);
        break;
    case H_ACKMARK:
        for (size_t i = 0; i < t.hosts.size(); ++i) u32(t.ackmark);
        break;
    case H_HIWATER:
        for (size_t i = 0; i < t.hosts.size(); ++i) u32(t.hiwater);
        break;
    case P_IPV6:
        for (const auto& p : t.procs) id16(p.host);
        break;
    case P_PID:
        for (const auto& p : t.procs) {
            size_t o = d.size();
            d.resize(o + 8);
            put_be64(&d[o], uint64_t(p.pid));
        }
        break;
    }
    return d;
}

Status collate(int n, std::map<uint32_t, CollReply> replies, Job* out) {
    if (n < 1 || n > 32) return bad("number of clients " + std::to_string(n) + " not in 1..32");
    const uint32_t all = n == 32 ? 0xffffffffu : (1u << n) - 1;
    Job job;
    CollReply none;
    auto reply = [&](uint32_t label) -> const CollReply& {
        auto it = replies.find(label);
        return it == replies.end() ? none : it->second;
    };
    for (auto& [label, r] : replies)
        if (r.mask & ~all)
            return bad("the reply to " + lname(label) + " names a client beyond the " +
                       std::to_string(n) + " of the job (mask 0x" + std::to_string(r.mask) + ")");
    // Labels every client must send: nothing can be guessed for them.
    for (uint32_t label : {C_NHOSTS, C_NPROCS, H_IPV6, H_PORT, H_NPROCS, P_IPV6, P_PID}) {
        uint32_t m = reply(label).mask;
        if (m != all)
            for (int c = 0; c < n; ++c)
                if (!(m & (1u << c)))
                    return bad("client " + std::to_string(c) + " did not send " + lname(label));
    }
    std::vector<const uint8_t*> part;
    job.clients.resize(size_t(n));

    // Client counts first: they size everything else.
    std::vector<uint32_t> cnt_hosts(static_cast<size_t>(n)), cnt_procs(static_cast<size_t>(n));
    Status s = split_fixed(reply(C_NHOSTS), C_NHOSTS, n, 4, nullptr, &part);
    if (!s.ok()) return s;
    uint64_t th = 0, tp = 0;
    for (int c = 0; c < n; ++c) {
        cnt_hosts[size_t(c)] = get_be32(part[size_t(c)]);
        th += cnt_hosts[size_t(c)];
        if (cnt_hosts[size_t(c)] == 0) return bad("client " + std::to_string(c) + " has no hosts");
    }
    s = split_fixed(reply(C_NPROCS), C_NPROCS, n, 4, nullptr, &part);
    if (!s.ok()) return s;
    for (int c = 0; c < n; ++c) {
        cnt_procs[size_t(c)] = get_be32(part[size_t(c)]);
        tp += cnt_procs[size_t(c)];
    }
    if (th > kMaxHosts || tp > kMaxProcs)
        return bad("the job claims " + std::to_string(th) + " hosts and " + std::to_string(tp) +
                   " procs, more than wanmpi accepts");
    int host = 0, rank = 0;
    for (int c = 0; c < n; ++c) {
        auto& cl = job.clients[size_t(c)];
        cl.first_host = host;
        cl.nhosts = int(cnt_hosts[size_t(c)]);
        cl.first_rank = rank;
        cl.nprocs = int(cnt_procs[size_t(c)]);
        host += cl.nhosts;
        rank += cl.nprocs;
    }

    // Versions: each client's list is ascending and starts with 0.0, so a list begins at every
    // 0.0 element of the concatenation (the reply carries no lengths).
    {
        const CollReply& r = reply(C_VERSION);
        if (r.data.size() % 8) return bad("the reply to IMPI_C_VERSION is not a list of pairs");
        std::vector<std::vector<Version>> lists;
        for (size_t o = 0; o < r.data.size(); o += 8) {
            Version v{get_be32(&r.data[o]), get_be32(&r.data[o + 4])};
            if (v == kVersionPlain) lists.emplace_back();
            if (lists.empty()) return bad("a client's IMPI_C_VERSION list does not start with 0.0");
            lists.back().push_back(v);
        }
        if (lists.size() != size_t(__builtin_popcount(r.mask)))
            return bad("the reply to IMPI_C_VERSION holds " + std::to_string(lists.size()) +
                       " lists for " + std::to_string(__builtin_popcount(r.mask)) +
                       " clients (every list must start with 0.0)");
        size_t k = 0;
        for (int c = 0; c < n; ++c) {
            auto& v = job.clients[size_t(c)].versions;
            if (r.mask & (1u << c)) {
                v = std::move(lists[k++]);
                if (!versions_ok(v))
                    return bad("client " + std::to_string(c) +
                               "'s IMPI_C_VERSION list is not strictly ascending");
            } else {
                v = {kVersionPlain};  // a client that sent no list speaks 0.0
            }
        }
        job.version_matrix.resize(size_t(n * n));
        for (int a = 0; a < n; ++a)
            for (int b = 0; b < n; ++b) {
                Version best = kVersionPlain;
                for (auto va : job.clients[size_t(a)].versions)
                    for (auto vb : job.clients[size_t(b)].versions)
                        if (va == vb && best < va) best = va;
                job.version_matrix[size_t(a * n + b)] = best;
            }
    }

    // Per-client scalars.
    auto scalars = [&](uint32_t label, std::vector<std::pair<int, uint32_t>>* v) -> Status {
        Status st = split_fixed(reply(label), label, n, 4, nullptr, &part);
        if (!st.ok()) return st;
        v->clear();
        for (int c = 0; c < n; ++c)
            if (part[size_t(c)]) v->push_back({c, get_be32(part[size_t(c)])});
        return Status::OK();
    };
    std::vector<std::pair<int, uint32_t>> vals;
    if (!(s = scalars(C_DATALEN, &vals)).ok()) return s;
    job.maxlen = vals.empty() ? kFallbackDatalen : 0xffffffffu;
    for (auto [c, v] : vals) {
        if (v < 1) return bad("client " + std::to_string(c) + " sent IMPI_C_DATALEN 0");
        job.maxlen = std::min(job.maxlen, v);
    }
    if (!(s = scalars(C_TAGUB, &vals)).ok()) return s;
    job.tag_ub = vals.empty() ? kMinTagUb : INT32_MAX;
    for (auto [c, v] : vals) {
        if (int32_t(v) < kMinTagUb)
            return bad("client " + std::to_string(c) + " sent IMPI_C_TAGUB " +
                       std::to_string(int32_t(v)) + ", below the mandated 32767");
        job.tag_ub = std::min(job.tag_ub, int32_t(v));
    }
    struct Agreed {
        uint32_t label;
        int32_t def;
        const char* env;
        int32_t* out;
    };
    for (Agreed a : {Agreed{C_COLL_XSIZE, kDefaultXsize, "IMPI_COLL_XSIZE", &job.xsize},
                     Agreed{C_COLL_MAXLINEAR, kDefaultMaxlinear, "IMPI_COLL_MAXLINEAR",
                            &job.maxlinear}}) {
        if (!(s = scalars(a.label, &vals)).ok()) return s;
        *a.out = a.def;
        int first = -1;
        for (auto [c, raw] : vals) {
            int32_t v = int32_t(raw);
            if (v < -1)
                return bad("client " + std::to_string(c) + " sent " + lname(a.label) + " " +
                           std::to_string(v) + " (must be -1 or >= 0)");
            if (v == -1) v = a.def;
            if (first < 0) {
                first = c;
                *a.out = v;
            } else if (v != *a.out) {
                return Status(Errc::invalid,
                              "clients disagree on " + lname(a.label) + ": client " +
                                  std::to_string(first) + " uses " + std::to_string(*a.out) +
                                  ", client " + std::to_string(c) + " uses " + std::to_string(v) +
                                  " (set " + a.env + " to the same value for every cluster)");
            }
        }
    }

    // Hosts.
    job.hosts.resize(size_t(th));
    for (int c = 0; c < n; ++c)
        for (int i = 0; i < job.clients[size_t(c)].nhosts; ++i)
            job.hosts[size_t(job.clients[size_t(c)].first_host + i)].client = c;
    auto per_host = [&](uint32_t label, size_t elem, auto&& fn) -> Status {
        Status st = split_fixed(reply(label), label, n, elem, &cnt_hosts, &part);
        if (!st.ok()) return st;
        for (int c = 0; c < n; ++c) {
            if (!part[size_t(c)]) continue;
            for (uint32_t i = 0; i < cnt_hosts[size_t(c)]; ++i) {
                int h = job.clients[size_t(c)].first_host + int(i);
                st = fn(c, h, part[size_t(c)] + elem * i);
                if (!st.ok()) return st;
            }
        }
        return Status::OK();
    };
    s = per_host(H_IPV6, 16, [&](int, int h, const uint8_t* p) {
        std::memcpy(job.hosts[size_t(h)].id.data(), p, 16);
        return Status::OK();
    });
    if (!s.ok()) return s;
    s = per_host(H_PORT, 4, [&](int c, int h, const uint8_t* p) {
        uint32_t port = get_be32(p);
        if (port < 1 || port > 65535)
            return bad("client " + std::to_string(c) + " sent IMPI_H_PORT " +
                       std::to_string(port) + " for host " + std::to_string(h));
        job.hosts[size_t(h)].port = uint16_t(port);
        return Status::OK();
    });
    if (!s.ok()) return s;
    std::vector<uint64_t> hsum(static_cast<size_t>(n));
    s = per_host(H_NPROCS, 4, [&](int c, int h, const uint8_t* p) {
        uint32_t np = get_be32(p);
        hsum[size_t(c)] += np;
        if (hsum[size_t(c)] > cnt_procs[size_t(c)])
            return bad("client " + std::to_string(c) + "'s hosts carry more procs than its "
                       "IMPI_C_NPROCS " + std::to_string(cnt_procs[size_t(c)]));
        job.hosts[size_t(h)].nprocs = int(np);
        return Status::OK();
    });
    if (!s.ok()) return s;
    for (int c = 0; c < n; ++c)
        if (hsum[size_t(c)] != cnt_procs[size_t(c)])
            return bad("client " + std::to_string(c) + "'s IMPI_H_NPROCS add up to " +
                       std::to_string(hsum[size_t(c)]) + ", not its IMPI_C_NPROCS " +
                       std::to_string(cnt_procs[size_t(c)]));
    // Errata rule: ackmark and hiwater are the minima over every host of the job.
    uint32_t ack = 0xffffffffu, hi = 0xffffffffu;
    bool any_ack = false, any_hi = false;
    s = per_host(H_ACKMARK, 4, [&](int c, int h, const uint8_t* p) {
        uint32_t v = get_be32(p);
        if (v < 1)
            return bad("client " + std::to_string(c) + " sent IMPI_H_ACKMARK 0 for host " +
                       std::to_string(h));
        ack = std::min(ack, v);
        any_ack = true;
        return Status::OK();
    });
    if (!s.ok()) return s;
    s = per_host(H_HIWATER, 4, [&](int c, int h, const uint8_t* p) {
        uint32_t v = get_be32(p);
        if (v < 1)
            return bad("client " + std::to_string(c) + " sent IMPI_H_HIWATER 0 for host " +
                       std::to_string(h));
        hi = std::min(hi, v);
        any_hi = true;
        return Status::OK();
    });
    if (!s.ok()) return s;
    job.hiwater = any_hi ? hi : kFallbackHiwater;
    // Minima taken separately can give ackmark > hiwater, which would deadlock (the sender stops
    // at hiwater, the receiver acknowledges only at ackmark); every rank clamps the same way.
    job.ackmark = std::min(any_ack ? ack : kFallbackAckmark, job.hiwater);

    // Procs, in global rank order; host of each proc from the hosts' nprocs.
    job.procs.resize(size_t(tp));
    {
        int r = 0;
        for (int h = 0; h < int(th); ++h) {
            auto& hh = job.hosts[size_t(h)];
            hh.first_rank = r;
            for (int i = 0; i < hh.nprocs; ++i, ++r) {
                job.procs[size_t(r)].host = h;
                job.procs[size_t(r)].client = hh.client;
            }
        }
    }
    auto per_proc = [&](uint32_t label, size_t elem, auto&& fn) -> Status {
        Status st = split_fixed(reply(label), label, n, elem, &cnt_procs, &part);
        if (!st.ok()) return st;
        for (int c = 0; c < n; ++c)
            for (uint32_t i = 0; i < cnt_procs[size_t(c)]; ++i)
                fn(job.clients[size_t(c)].first_rank + int(i), part[size_t(c)] + elem * i);
        return Status::OK();
    };
    s = per_proc(P_IPV6, 16, [&](int r, const uint8_t* p) {
        std::memcpy(job.procs[size_t(r)].id.host.data(), p, 16);
    });
    if (!s.ok()) return s;
    s = per_proc(P_PID, 8, [&](int r, const uint8_t* p) {
        job.procs[size_t(r)].id.pid = int64_t(get_be64(p));
    });
    if (!s.ok()) return s;
    for (int r = 0; r < int(tp); ++r) {
        const Proc& p = job.procs[size_t(r)].id;
        auto [it, fresh] = job.proc_index.emplace(std::make_pair(p.host, p.pid), r);
        if (!fresh)
            return bad("ranks " + std::to_string(it->second) + " and " + std::to_string(r) +
                       " have the same IMPI_Proc (host id and pid): proc ids must be unique");
    }
    job.replies = std::move(replies);
    *out = std::move(job);
    return Status::OK();
}

// ---- text form ----------------------------------------------------------------------------------

static const char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string base64url_encode(const uint8_t* p, size_t n) {
    std::string s;
    s.reserve((n + 2) / 3 * 4);
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t(p[i]) << 16) | (uint32_t(p[i + 1]) << 8) | p[i + 2];
        for (int k = 3; k >= 0; --k) s += kB64[(v >> (6 * k)) & 63];
    }
    if (n - i == 1) {
        uint32_t v = uint32_t(p[i]) << 16;
        s += kB64[(v >> 18) & 63];
        s += kB64[(v >> 12) & 63];
    } else if (n - i == 2) {
        uint32_t v = (uint32_t(p[i]) << 16) | (uint32_t(p[i + 1]) << 8);
        s += kB64[(v >> 18) & 63];
        s += kB64[(v >> 12) & 63];
        s += kB64[(v >> 6) & 63];
    }
    return s;
}

bool base64url_decode(std::string_view s, std::vector<uint8_t>* out) {
    auto val = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        if (c == '-') return 62;
        if (c == '_') return 63;
        return -1;
    };
    if (s.size() % 4 == 1) return false;
    out->clear();
    out->reserve(s.size() / 4 * 3 + 2);
    uint32_t acc = 0;
    int bits = 0;
    for (char c : s) {
        int v = val(c);
        if (v < 0) return false;
        acc = (acc << 6) | uint32_t(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out->push_back(uint8_t(acc >> bits));
            acc &= (1u << bits) - 1;
        }
    }
    return acc == 0;  // canonical: the unused low bits are zero
}

// Binary form: "WJ" 0x01, Uint4 nclients, Uint4 nlabels, then per label (ascending)
// Uint4 label, Uint4 mask, Uint4 length, bytes.
std::string encode_job(const Job& job) {
    std::vector<uint8_t> b = {'W', 'J', 1};
    auto u32 = [&](uint32_t v) {
        size_t o = b.size();
        b.resize(o + 4);
        put_be32(&b[o], v);
    };
    u32(uint32_t(job.nclients()));
    u32(uint32_t(job.replies.size()));
    for (const auto& [label, r] : job.replies) {
        u32(label);
        u32(r.mask);
        u32(uint32_t(r.data.size()));
        b.insert(b.end(), r.data.begin(), r.data.end());
    }
    return base64url_encode(b.data(), b.size());
}

Status decode_job(std::string_view text, Job* out) {
    std::vector<uint8_t> b;
    if (!base64url_decode(text, &b)) return bad("IMPI job text is not base64url");
    if (b.size() < 11 || b[0] != 'W' || b[1] != 'J' || b[2] != 1)
        return bad("IMPI job text has an unknown format");
    size_t o = 3;
    uint32_t n = get_be32(&b[o]);
    uint32_t nl = get_be32(&b[o + 4]);
    o += 8;
    if (n < 1 || n > 32) return bad("IMPI job text: bad number of clients");
    std::map<uint32_t, CollReply> replies;
    for (uint32_t i = 0; i < nl; ++i) {
        if (b.size() - o < 12) return bad("IMPI job text is truncated");
        uint32_t label = get_be32(&b[o]);
        CollReply r;
        r.mask = get_be32(&b[o + 4]);
        uint32_t len = get_be32(&b[o + 8]);
        o += 12;
        if (b.size() - o < len) return bad("IMPI job text is truncated");
        r.data.assign(b.begin() + long(o), b.begin() + long(o + len));
        o += len;
        if (!replies.emplace(label, std::move(r)).second)
            return bad("IMPI job text repeats a label");
    }
    if (o != b.size()) return bad("IMPI job text has trailing bytes");
    return collate(int(n), std::move(replies), out);
}

Status kvs_put_long(base::Kvs& kvs, const std::string& key, const std::string& value,
                    size_t max_piece) {
    if (max_piece == 0) return invalid("kvs_put_long: max_piece is 0");
    size_t pieces = value.empty() ? 1 : (value.size() + max_piece - 1) / max_piece;
    for (size_t i = 0; i < pieces; ++i) {
        Status s = kvs.put(key + "-" + std::to_string(i), value.substr(i * max_piece, max_piece));
        if (!s.ok()) return s;
    }
    return kvs.put(key + "-n", std::to_string(pieces));
}

Status kvs_get_long(base::Kvs& kvs, const std::string& key, std::string* value, bool* found) {
    *found = false;
    value->clear();
    auto n = kvs.get(key + "-n");
    if (!n) return Status::OK();
    auto pieces = base::parse_int(*n);
    if (!pieces || *pieces < 1 || *pieces > 1000000)
        return bad("KVS key " + key + "-n holds '" + *n + "', not a piece count");
    for (int64_t i = 0; i < *pieces; ++i) {
        auto v = kvs.get(key + "-" + std::to_string(i));
        if (!v) return bad("KVS key " + key + "-" + std::to_string(i) + " is missing");
        *value += *v;
    }
    *found = true;
    return Status::OK();
}

}  // namespace wanmpi::impi
