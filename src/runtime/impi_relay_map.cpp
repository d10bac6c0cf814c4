// impi-relay's pure parts: the two views of the job, the per-packet check and rewrite, the
// label rewriting of the start-up, and the trunk control codecs (impi_relay.hpp).
#include <cstring>

#include "base/codec.hpp"
#include "runtime/impi_relay.hpp"

namespace wanmpi::impi {

using base::Errc;
using base::get_be32;
using base::get_be64;
using base::put_be32;
using base::put_be64;
using base::Status;

int RelayMap::trunk_of(int host) const {
    const Job::Client& c = out.clients[size_t(client)];
    int idx;
    if (own(host)) idx = host - c.first_host;
    else idx = host < c.first_host ? host : host - c.nhosts;
    return trunks > 0 ? idx % trunks : 0;
}

Status make_relay_map(int client, int trunks, int index, Job out, Job in, RelayMap* m) {
    auto bad = [](const std::string& what) {
        return Status(Errc::proto_error, "relay: the two views of the job differ: " + what);
    };
    if (client < 0 || client >= out.nclients()) return bad("client " + std::to_string(client));
    if (trunks < 1 || index < 0 || index >= trunks) return bad("trunk index");
    if (out.nclients() != in.nclients() || out.hosts.size() != in.hosts.size() ||
        out.procs.size() != in.procs.size())
        return bad("client, host or proc counts");
    for (size_t h = 0; h < out.hosts.size(); ++h)
        if (out.hosts[h].client != in.hosts[h].client || out.hosts[h].nprocs != in.hosts[h].nprocs)
            return bad("host " + std::to_string(h));
    for (size_t r = 0; r < out.procs.size(); ++r) {
        const auto &a = out.procs[r], &b = in.procs[r];
        if (a.host != b.host || a.client != b.client) return bad("proc " + std::to_string(r));
    }
    m->client = client;
    m->trunks = trunks;
    m->index = index;
    m->out = std::move(out);
    m->in = std::move(in);
    return Status::OK();
}

static void put_proc(uint8_t* p, const Proc& id) {
    std::memcpy(p, id.host.data(), 16);
    put_be64(p + 16, uint64_t(id.pid));
}

std::string relay_rewrite(const RelayMap& m, int h, int j, bool outward, uint8_t hdr[kPacketHeader],
                          uint64_t* payload, bool resumable) {
    Packet p;
    std::string err = decode_packet(hdr, m.out.maxlen, &p);
    if (!err.empty()) return err;
    *payload = packet_has_payload(p.type) ? p.len : 0;
    // FINI names no proc (LAM: zero host ids, pid -1); it ends the connection, nothing to map.
    if (p.type == PK_FINI) return "";
    if (p.type == PK_WAN_ACK && !resumable)
        return "a wanmpi stream acknowledgement on a pair whose hosts did not agree to resume";
    const Job& from = outward ? m.in : m.out;
    const Job& to = outward ? m.out : m.in;
    int sh = outward ? h : j, dh = outward ? j : h;
    int rs = from.rank_of(p.src), rd = from.rank_of(p.dest);
    if (rs < 0 || from.procs[size_t(rs)].host != sh)
        return "packet type " + std::to_string(p.type) + " from a proc that host " +
               std::to_string(sh) + " does not carry";
    if (rd < 0 || from.procs[size_t(rd)].host != dh)
        return "packet type " + std::to_string(p.type) + " for a proc that host " +
               std::to_string(dh) + " does not carry";
    put_proc(hdr + 8, to.procs[size_t(rs)].id);
    put_proc(hdr + 32, to.procs[size_t(rd)].id);
    return "";
}

std::string relay_check_dance(const RelayMap& m, int rep, bool rep_own, uint32_t rank) {
    if (rank >= m.out.hosts.size())
        return "host rank " + std::to_string(rank) + " is out of range (the job has " +
               std::to_string(m.out.hosts.size()) + " hosts)";
    if (m.own(int(rank)) == rep_own)
        return "host " + std::to_string(rank) + " is on the same side as host " + std::to_string(rep);
    if (int(rank) <= rep)
        return "host " + std::to_string(rank) + " must accept from host " + std::to_string(rep) +
               ", not connect to it";
    return "";
}

static size_t label_elem(uint32_t label) {
    switch (label) {
    case H_IPV6: case P_IPV6: return 16;
    case H_PORT: return 4;
    case P_PID: return 8;
    default: return 0;
    }
}

Status relay_outward_contribution(const RelayFaces& f, uint32_t label, const std::vector<uint8_t>& in,
                                  uint32_t own_nhosts, uint32_t own_nprocs,
                                  std::vector<uint8_t>* out) {
    size_t e = label_elem(label);
    if (e == 0) {
        *out = in;
        return Status::OK();
    }
    bool per_host = label == H_IPV6 || label == H_PORT;
    size_t n = per_host ? own_nhosts : own_nprocs;
    if (in.size() != n * e)
        return Status(Errc::proto_error, std::string("the agent sent ") + std::to_string(in.size()) +
                                             " bytes for " + label_name(label) + ", expected " +
                                             std::to_string(n * e));
    if (per_host && (f.own_host_ids.size() != n || f.own_host_ports.size() != n))
        return Status(Errc::fatal, "relay: no face for every host of the cluster");
    out->assign(n * e, 0);
    for (size_t i = 0; i < n; ++i) {
        uint8_t* p = out->data() + i * e;
        switch (label) {
        case H_IPV6: std::memcpy(p, f.own_host_ids[i].data(), 16); break;
        case H_PORT: put_be32(p, f.own_host_ports[i]); break;
        case P_IPV6: std::memcpy(p, f.proc_host.data(), 16); break;
        case P_PID: put_be64(p, relay_proc_pid(i)); break;
        }
    }
    return Status::OK();
}

Status relay_inward_reply(const RelayFaces& f, int client, uint32_t label, const CollReply& reply,
                          const std::vector<uint8_t>& agent, const std::vector<uint32_t>& nhosts,
                          const std::vector<uint32_t>& nprocs, CollReply* out) {
    size_t e = label_elem(label);
    *out = reply;
    if (e == 0) return Status::OK();
    bool per_host = label == H_IPV6 || label == H_PORT;
    const auto& counts = per_host ? nhosts : nprocs;
    size_t nclients = counts.size();
    uint32_t all = nclients >= 32 ? 0xffffffffu : ((1u << nclients) - 1);
    if (reply.mask != all)
        return Status(Errc::proto_error, std::string("the server's ") + label_name(label) +
                                             " reply lacks a client (mask " +
                                             std::to_string(reply.mask) + ")");
    size_t total = 0;
    for (uint32_t c : counts) total += size_t(c) * e;
    if (reply.data.size() != total)
        return Status(Errc::proto_error, std::string("the server's ") + label_name(label) +
                                             " reply has " + std::to_string(reply.data.size()) +
                                             " bytes, expected " + std::to_string(total));
    size_t off = 0, outside = 0;
    for (size_t c = 0; c < nclients; ++c) {
        size_t part = size_t(counts[c]) * e;
        if (int(c) == client) {
            if (agent.size() != part)
                return Status(Errc::proto_error, std::string("the cluster's ") + label_name(label) +
                                                     " part does not match what its agent sent");
            std::memcpy(out->data.data() + off, agent.data(), part);
        } else {
            for (size_t i = 0; i < counts[c]; ++i, ++outside) {
                if (per_host && (outside >= f.out_host_ids.size() || outside >= f.out_host_ports.size()))
                    return Status(Errc::fatal, "relay: no face for every outside host");
                uint8_t* p = out->data.data() + off + i * e;
                switch (label) {
                case H_IPV6: std::memcpy(p, f.out_host_ids[outside].data(), 16); break;
                case H_PORT: put_be32(p, f.out_host_ports[outside]); break;
                case P_IPV6: std::memcpy(p, f.out_proc_host.data(), 16); break;
                case P_PID: put_be64(p, relay_proc_pid(outside)); break;
                }
            }
        }
        off += part;
    }
    return Status::OK();
}

// ---- trunk control codecs --------------------------------------------------------------------

std::vector<uint8_t> encode_trunk_hello(const TrunkHello& h) {
    std::vector<uint8_t> v(36);
    put_be32(v.data(), 2);
    std::memcpy(&v[4], h.pub.data(), 16);
    std::memcpy(&v[20], h.priv.data(), 16);
    return v;
}

std::string decode_trunk_hello(const uint8_t* p, size_t n, TrunkHello* h) {
    if (n != 36) return "TRNK has " + std::to_string(n) + " bytes, expected 36";
    // Version 2: TJOB carries the link key (every relay of a job must run one release).
    if (get_be32(p) != 2)
        return "TRNK version " + std::to_string(get_be32(p)) +
               " is not 2 (every impi-relay of a job must run one wanmpi release)";
    std::memcpy(h->pub.data(), p + 4, 16);
    std::memcpy(h->priv.data(), p + 20, 16);
    if (!ipv4_from_host_id(h->pub) || !ipv4_from_host_id(h->priv))
        return "TRNK addresses are not IPv4";
    return "";
}

std::vector<uint8_t> encode_trunk_ports(const TrunkPorts& t) {
    std::vector<uint8_t> v(8 + 4 * t.ports.size());
    put_be32(v.data(), t.n_pub);
    put_be32(&v[4], t.n_priv);
    for (size_t i = 0; i < t.ports.size(); ++i) put_be32(&v[8 + 4 * i], t.ports[i]);
    return v;
}

std::string decode_trunk_ports(const uint8_t* p, size_t n, bool with_ports, TrunkPorts* t) {
    if (n < 8) return "TPRT is too short";
    t->n_pub = get_be32(p);
    t->n_priv = get_be32(p + 4);
    // At most 2^20 hosts in a job (impi_tables.cpp validate()).
    if (t->n_pub > (1u << 20) || t->n_priv > (1u << 20)) return "TPRT asks for too many ports";
    size_t want = with_ports ? 8 + 4 * (size_t(t->n_pub) + t->n_priv) : 8;
    if (n != want) return "TPRT has " + std::to_string(n) + " bytes, expected " + std::to_string(want);
    t->ports.clear();
    if (with_ports)
        for (size_t i = 0; i < size_t(t->n_pub) + t->n_priv; ++i) {
            uint32_t port = get_be32(p + 8 + 4 * i);
            if (port == 0 || port > 65535) return "TPRT port " + std::to_string(port) + " is invalid";
            t->ports.push_back(port);
        }
    return "";
}

namespace {
constexpr size_t kTrunkKeys = 4 + 32 + 32;  // TJOB's link flags, key and session nonce
}  // namespace

std::vector<uint8_t> encode_trunk_job(const TrunkJob& t) {
    std::vector<uint8_t> v(20 + t.out.size() + t.in.size() + kTrunkKeys);
    uint8_t* p = v.data();  // not &v[i]: with an empty inside view that is v[v.size()]
    put_be32(p, t.trunks);
    put_be32(p + 4, t.index);
    put_be32(p + 8, t.client);
    put_be32(p + 12, uint32_t(t.out.size()));
    std::memcpy(p + 16, t.out.data(), t.out.size());
    put_be32(p + 16 + t.out.size(), uint32_t(t.in.size()));
    std::memcpy(p + 20 + t.out.size(), t.in.data(), t.in.size());
    uint8_t* k = p + 20 + t.out.size() + t.in.size();
    put_be32(k, (t.keys.keyed ? 0x100u : 0u) | t.keys.flags);
    std::memcpy(k + 4, t.keys.key.data(), 32);  // zero unless keyed
    std::memcpy(k + 36, t.keys.session.data(), 32);
    return v;
}

std::string decode_trunk_job(const uint8_t* p, size_t n, TrunkJob* t) {
    if (n < 20 + kTrunkKeys) return "TJOB is too short";
    t->trunks = get_be32(p);
    t->index = get_be32(p + 4);
    t->client = get_be32(p + 8);
    if (t->trunks < 2 || t->trunks > 64 || t->index == 0 || t->index >= t->trunks || t->client >= 32)
        return "TJOB has an invalid trunk index, trunk count or client";
    size_t a = get_be32(p + 12);
    if (a > n - 20 - kTrunkKeys) return "TJOB's outside view is longer than the message";
    size_t b = get_be32(p + 16 + a);
    if (b != n - 20 - a - kTrunkKeys) return "TJOB's inside view does not fill the message";
    t->out.assign(reinterpret_cast<const char*>(p + 16), a);
    t->in.assign(reinterpret_cast<const char*>(p + 20 + a), b);
    const uint8_t* k = p + 20 + a + b;
    const uint32_t f = get_be32(k);
    if (f & ~0x1FFu) return "TJOB has unknown link flags";
    if ((f & 0xFF) & ~(wanlink::kFlagAuth | wanlink::kFlagTls | wanlink::kFlagResume))
        return "TJOB has unknown link flags";
    t->keys.keyed = (f & 0x100) != 0;
    t->keys.flags = uint8_t(f & 0xFF);
    std::memcpy(t->keys.key.data(), k + 4, 32);
    std::memcpy(t->keys.session.data(), k + 36, 32);
    return "";
}

}  // namespace wanmpi::impi
