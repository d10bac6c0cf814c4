#include "runtime/impi_startup.hpp"

#include <algorithm>
#include <unistd.h>

#include "base/log.hpp"
#include "base/tunables.hpp"

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
    if (agent && agent->server_fd() >= 0) {
        dc.watch_fd = agent->server_fd();
        Agent* a = agent.get();
        dc.watch = [a] { return a->poll_server(); };
    }
    if (!(s = dance(l.fd.get(), r.host, r.job, dc, &r.conns)).ok()) return s;
    l.fd.reset();
    r.agent = std::move(agent);
    WANMPI_LOG(debug, "IMPI: rank %d of %d, host %d, client %d", r.rank, r.job.size(), r.host,
               r.client);
    *out = std::move(r);
    return Status::OK();
}

}  // namespace wanmpi::impi
