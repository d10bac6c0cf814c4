#include "runtime/impi_startup.hpp"

#include <algorithm>
#include <unistd.h>

#include "base/log.hpp"
#include "base/tunables.hpp"
#include "wanlink/compress.hpp"
#include "wanlink/lanes.hpp"

namespace wanmpi::impi {

using base::Errc;
using base::Status;

namespace {

// "!" + base64url: PMI-safe; at most ~940 bytes, below Hydra's 1023 per value.
std::string encode_error(const std::string& m) {
    return "!" + base64url_encode(reinterpret_cast<const uint8_t*>(m.data()),
                                  std::min<size_t>(m.size(), 700));
}

std::string decode_error(const std::string& v) {
    std::vector<uint8_t> b;
    if (v.size() < 1 || v[0] != '!' || !base64url_decode(std::string_view(v).substr(1), &b))
        return "(unreadable error text)";
    return std::string(b.begin(), b.end());
}

}  // namespace

Status startup_options_from_env(StartupOptions* out, bool* enabled) {
    StartupOptions o;
    Status s = agent_config_from_env(&o.agent, enabled);
    if (!s.ok() || !*enabled) return s;
    o.values = client_values();
    o.listen = listen_config_from_env();
    o.dance = dance_config_from_env();
    *out = std::move(o);
    return Status::OK();
}

std::string host_advert(const Listener& l, int64_t pid) {
    return l.addr + ":" + std::to_string(l.port) + ":" + std::to_string(pid);
}

Status tables_from_adverts(const std::vector<std::string>& adverts, const ClusterTables& values,
                           ClusterTables* out) {
    ClusterTables t = values;
    t.hosts.clear();
    t.procs.clear();
    for (size_t r = 0; r < adverts.size(); ++r) {
        const std::string& a = adverts[r];
        auto bad = [&] {
            return Status(Errc::proto_error, "rank " + std::to_string(r) +
                                                 "'s IMPI host advert '" + a + "' is malformed");
        };
        auto c2 = a.rfind(':');
        if (c2 == std::string::npos || c2 == 0) return bad();
        auto c1 = a.rfind(':', c2 - 1);
        if (c1 == std::string::npos) return bad();
        std::string addr = a.substr(0, c1);
        auto port = base::parse_int(a.substr(c1 + 1, c2 - c1 - 1));
        auto pid = base::parse_int(a.substr(c2 + 1));
        HostId id = host_id_from_ipv4(addr);
        if (!port || *port < 1 || *port > 65535 || !pid || *pid < 0 || *pid > 0xffffffffLL ||
            !ipv4_from_host_id(id) || *ipv4_from_host_id(id) != addr)
            return bad();
        t.hosts.push_back(LocalHost{id, uint16_t(*port), 1});
        t.procs.push_back(make_proc_id(id, uint16_t(*port), *pid));
    }
    *out = std::move(t);
    return Status::OK();
}

Status startup(base::Kvs& kvs, const StartupOptions& opt, Startup* out) {
    const std::string& p = opt.key_prefix;
    const int me = kvs.rank();
    Status s;

    // 1. Host socket and advert.
    Listener l;
    Status local = open_listener(opt.listen, &l);
    s = kvs.put(p + "-host-" + std::to_string(me),
                local.ok() ? host_advert(l, int64_t(::getpid())) : encode_error(local.message()));
    if (!s.ok()) return s;
    if (!(s = kvs.fence()).ok()) return s;

    // 2. The agent.
    std::unique_ptr<Agent> agent;
    if (me == 0) {
        std::string err;
        std::vector<std::string> adverts(size_t(kvs.size()));
        for (int r = 0; r < kvs.size() && err.empty(); ++r) {
            auto v = kvs.get(p + "-host-" + std::to_string(r));
            if (!v) err = "rank " + std::to_string(r) + " published no IMPI host address";
            else if (!v->empty() && (*v)[0] == '!')
                err = "rank " + std::to_string(r) + ": " + decode_error(*v);
            else adverts[size_t(r)] = *v;
        }
        ClusterTables t;
        Job job;
        if (err.empty()) {
            s = tables_from_adverts(adverts, opt.values, &t);
            if (!s.ok()) err = s.message();
        }
        if (err.empty()) {
            agent = std::make_unique<Agent>();
            s = agent->start(opt.agent, t, &job);
            if (!s.ok()) {
                err = s.message();
                agent.reset();
            }
        }
        if (err.empty()) s = kvs_put_long(kvs, p + "-job", encode_job(job));
        else s = kvs.put(p + "-error", encode_error(err));
        if (!s.ok()) return s;
        // The server's session nonce (not a secret: it binds the link key to this job run).
        if (err.empty()) {
            const auto& sn = agent->session();
            if (!(s = kvs.put(p + "-session", base64url_encode(sn.data(), sn.size()))).ok()) return s;
        }
    }
    if (!(s = kvs.fence()).ok()) return s;

    // 3. The job and the dance.
    if (auto e = kvs.get(p + "-error")) return Status(Errc::peer_failed, decode_error(*e));
    if (!local.ok()) return local;
    std::string text;
    bool found = false;
    if (!(s = kvs_get_long(kvs, p + "-job", &text, &found)).ok()) return s;
    if (!found) return Status(Errc::proto_error, "the IMPI agent (rank 0) published no job");
    Startup r;
    if (!(s = decode_job(text, &r.job)).ok()) return s;
    r.client = opt.agent.client;
    if (r.client >= r.job.nclients())
        return Status(Errc::proto_error, "the IMPI job has no client " + std::to_string(r.client));
    const auto& cl = r.job.clients[size_t(r.client)];
    if (cl.nprocs != kvs.size() || cl.nhosts != kvs.size())
        return Status(Errc::proto_error, "the IMPI job gives client " + std::to_string(r.client) +
                                             " " + std::to_string(cl.nprocs) + " procs, but " +
                                             std::to_string(kvs.size()) + " ranks run here");
    r.rank = cl.first_rank + me;
    r.host = cl.first_host + me;
    const auto& h = r.job.hosts[size_t(r.host)];
    if (h.port != l.port || h.addr() != l.addr)
        return Status(Errc::proto_error, "the IMPI job lists host " + std::to_string(r.host) +
                                             " at " + h.addr() + ":" + std::to_string(h.port) +
                                             ", not at this rank's " + l.addr + ":" +
                                             std::to_string(l.port));
    // The agent keeps watching impi-server while it dances: if another cluster dies now (one
    // whose hosts cannot reach ours, say), the server's LOST notice or close ends the dance at
    // once, and this cluster with it, instead of a wait for hosts that will never connect.
    DanceConfig dc = opt.dance;
    // Security: which connections run wanmpi's link handshake, and what they demand.
    if (!(s = wanlink::wan_security(&r.security)).ok()) return s;
    wanlink::CompressPolicy zp;
    if (!(s = wanlink::compress_policy(&zp)).ok()) return s;
    bool zf_auto = true;
    wanlink::Filter zf_fixed = wanlink::Filter::none;
    if (!(s = wanlink::filter_policy(&zf_auto, &zf_fixed)).ok()) return s;
    unsigned lanes = 1;
    if (!(s = wanlink::lanes_setting(&lanes)).ok()) return s;
    wanlink::Stripe stripe;
    if (!(s = wanlink::stripe_setting(&stripe)).ok()) return s;
    r.link.lanes = uint8_t(lanes);
    {
        std::vector<uint8_t> sn;
        auto v = kvs.get(p + "-session");
        if (v && base64url_decode(*v, &sn) && sn.size() == 32)
            std::copy(sn.begin(), sn.end(), r.link.session.begin());
        wanlink::Secret secret;
        if (!(s = wanlink::job_secret(&secret)).ok()) return s;
        r.link.keyed = secret.set();
        if (secret.set()) r.link.key = wanlink::link_key(secret, r.link.session.data());
        r.link.flags = uint8_t((r.security != wanlink::Security::none ? wanlink::kFlagAuth : 0) |
                               (r.security == wanlink::Security::tls ? wanlink::kFlagTls : 0) |
                               (wanlink::reconnect_ms() > 0 ? wanlink::kFlagResume : 0) |
                               (zp.mode != wanlink::CompressPolicy::off
                                    ? wanlink::kFlagZstd | wanlink::kFlagZfilter
                                    : 0));
    }
    std::vector<DancePeer> peers;
    for (size_t hh = 0; hh < r.job.hosts.size(); ++hh) {
        const auto& jh = r.job.hosts[hh];
        DancePeer dp;
        dp.addr = jh.addr();
        dp.port = jh.port;
        dp.name = "host " + std::to_string(hh) + " (client " + std::to_string(jh.client) + ")";
        // A host impi-relay presents: say so, messages about it may concern the relay.
        if (jh.nprocs > 0 && size_t(jh.first_rank) < r.job.procs.size()) {
            const std::string via = relay_of(r.job.procs[size_t(jh.first_rank)].id);
            if (!via.empty()) dp.name += " through impi-relay at " + via;
            dp.relayed = !via.empty();
        }
        dp.skip = !dc.intra_client && jh.client == r.client;
        // Both ends wanmpi: the link handshake runs, also through impi-relay (which runs it on
        // each of its two legs with the job's key: impi_relay_data.cpp).
        dp.ext = !dp.skip && r.job.wanmpi_pair(r.client, jh.client);
        if (!dp.skip && !dp.ext && r.security != wanlink::Security::none && !wanlink::allow_plain())
            return Status(Errc::invalid,
                          "WANMPI_WAN_SECURITY=" + std::string(wanlink::security_name(r.security)) +
                              ": " + dp.name + " at " + dp.addr + ":" + std::to_string(dp.port) +
                              " is a plain IMPI host, which cannot authenticate; set "
                              "WANMPI_WAN_ALLOW_PLAIN=1 to talk to it in clear text");
        peers.push_back(dp);
    }
    dc.link = &r.link;
    dc.link_out = &r.links;
    if (agent && agent->server_fd() >= 0) {
        dc.watch_fd = agent->server_fd();
        Agent* a = agent.get();
        dc.watch = [a] { return a->poll_server(); };
    }
    if (!(s = dance(l.fd.get(), r.host, peers, dc, &r.conns)).ok()) return s;
    // TLS after the dance, one connection at a time in ascending host order: both ends of
    // every pair take the same order, so the lowest unfinished pair is always the next one on
    // both sides and the sequence cannot deadlock.
    r.tls.resize(r.job.hosts.size());
    for (size_t hh = 0; hh < r.links.size(); ++hh) {
        if (!r.links[hh].tls || !r.conns[hh]) continue;
        const bool client = int(hh) < r.host;  // we connected to the lower hosts
        s = wanlink::Tls::handshake(r.conns[hh].get(), client, r.links[hh].psk.data(),
                                    dc.timeout_ms, &r.tls[hh]);
        if (!s.ok())
            return Status(s.code(), "TLS with " + peers[hh].name + ": " + s.message());
        base::set_nonblock(r.conns[hh].get(), false);
    }
    r.listener = std::move(l.fd);
    r.agent = std::move(agent);
    WANMPI_LOG(debug, "IMPI: rank %d of %d, host %d, client %d", r.rank, r.job.size(), r.host,
               r.client);
    *out = std::move(r);
    return Status::OK();
}

}  // namespace wanmpi::impi
