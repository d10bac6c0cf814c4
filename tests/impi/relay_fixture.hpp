// A synthetic IMPI job with one private client behind impi-relay, for the relay's unit tests and
// fuzz targets (relay_map_test.cpp, impi_fuzz.cpp). Header-only: include it once per program.
//
// Every client c has the synthetic tables of synthetic_tables.hpp (hosts 10.c.h.1:5000+h). The
// private client's relay presents its hosts as 192.0.2.1:7000+i and its procs as
// 192.0.2.1 / relay_proc_pid(i); the outside hosts are presented inside as 10.99.0.1:8000+i,
// the k-th outside proc as 10.99.0.1 / relay_proc_pid(k). The
// expected server replies (outside view) and inward replies (inside view) are computed here
// directly from those rules, not with the functions under test.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/codec.hpp"
#include "runtime/impi_relay.hpp"
#include "runtime/impi_resume.hpp"
#include "runtime/impi_tables.hpp"
#include "synthetic_tables.hpp"

namespace wanmpi::impi::relay_fixture {

inline const HostId kPub = host_id_from_ipv4("192.0.2.1");
inline const HostId kPriv = host_id_from_ipv4("10.99.0.1");

struct World {
    int client = 0;                        // the private client
    std::vector<ClusterTables> ts;         // every client's real tables
    RelayFaces faces;
    std::vector<uint32_t> nhosts, nprocs;  // per client
    std::map<uint32_t, std::vector<uint8_t>> agent;  // the private client's contributions
    std::map<uint32_t, CollReply> server;  // what impi-server answers (outside view)
    std::map<uint32_t, CollReply> inward;  // what the agent must get (inside view)
    Job out, in;
    RelayMap map;
    int first_own_host = 0;
    uint32_t own_nhosts() const { return nhosts[size_t(client)]; }
    uint32_t own_nprocs() const { return nprocs[size_t(client)]; }
};

inline bool rewritten(uint32_t label) {
    return label == H_IPV6 || label == H_PORT || label == P_IPV6 || label == P_PID;
}

// The private client's contribution as the server must see it.
inline std::vector<uint8_t> expected_outward(const World& w, uint32_t label) {
    std::vector<uint8_t> v = contribution(w.ts[size_t(w.client)], label);
    uint8_t b[8];
    switch (label) {
    case H_IPV6:
        v.clear();
        for (auto& id : w.faces.own_host_ids) v.insert(v.end(), id.begin(), id.end());
        break;
    case H_PORT:
        v.clear();
        for (uint32_t p : w.faces.own_host_ports) {
            base::put_be32(b, p);
            v.insert(v.end(), b, b + 4);
        }
        break;
    case P_IPV6:
        v.clear();
        for (uint32_t i = 0; i < w.own_nprocs(); ++i)
            v.insert(v.end(), w.faces.proc_host.begin(), w.faces.proc_host.end());
        break;
    case P_PID:
        v.clear();
        for (uint32_t i = 0; i < w.own_nprocs(); ++i) {
            base::put_be64(b, relay_proc_pid(i));
            v.insert(v.end(), b, b + 8);
        }
        break;
    }
    return v;
}

// hosts_per_client[c] = procs per host of client c.
inline World make_world(const std::vector<std::vector<int>>& hosts_per_client, int client,
                        int trunks = 1, int index = 0) {
    World w;
    w.client = client;
    int nc = int(hosts_per_client.size());
    uint32_t outside = 0;
    for (int c = 0; c < nc; ++c) {
        w.ts.push_back(synthetic::tables(c, hosts_per_client[size_t(c)]));
        w.nhosts.push_back(uint32_t(w.ts.back().hosts.size()));
        w.nprocs.push_back(uint32_t(w.ts.back().procs.size()));
        if (c < client) w.first_own_host += int(w.nhosts.back());
        if (c != client) outside += w.nhosts.back();
    }
    for (uint32_t i = 0; i < w.own_nhosts(); ++i) {
        w.faces.own_host_ids.push_back(kPub);
        w.faces.own_host_ports.push_back(7000 + i);
    }
    for (uint32_t i = 0; i < outside; ++i) {
        w.faces.out_host_ids.push_back(kPriv);
        w.faces.out_host_ports.push_back(8000 + i);
    }
    w.faces.proc_host = kPub;
    w.faces.out_proc_host = kPriv;
    uint32_t all = (1u << nc) - 1;
    for (uint32_t label : kLabelOrder) {
        w.agent[label] = contribution(w.ts[size_t(client)], label);
        CollReply s{all, {}}, in{all, {}};
        size_t outside_i = 0, outside_p = 0;
        for (int c = 0; c < nc; ++c) {
            std::vector<uint8_t> mine = contribution(w.ts[size_t(c)], label);
            if (c == client) {
                std::vector<uint8_t> o = expected_outward(w, label);
                s.data.insert(s.data.end(), o.begin(), o.end());
                in.data.insert(in.data.end(), mine.begin(), mine.end());
                continue;
            }
            s.data.insert(s.data.end(), mine.begin(), mine.end());
            if (label == H_IPV6 || label == H_PORT) {
                for (uint32_t h = 0; h < w.nhosts[size_t(c)]; ++h, ++outside_i) {
                    if (label == H_IPV6) {
                        auto& id = w.faces.out_host_ids[outside_i];
                        in.data.insert(in.data.end(), id.begin(), id.end());
                    } else {
                        uint8_t b[4];
                        base::put_be32(b, w.faces.out_host_ports[outside_i]);
                        in.data.insert(in.data.end(), b, b + 4);
                    }
                }
            } else if (label == P_IPV6 || label == P_PID) {
                for (uint32_t q = 0; q < w.nprocs[size_t(c)]; ++q, ++outside_p) {
                    if (label == P_IPV6) {
                        in.data.insert(in.data.end(), kPriv.begin(), kPriv.end());
                    } else {
                        uint8_t b[8];
                        base::put_be64(b, relay_proc_pid(outside_p));
                        in.data.insert(in.data.end(), b, b + 8);
                    }
                }
            } else {
                in.data.insert(in.data.end(), mine.begin(), mine.end());
            }
        }
        w.server[label] = s;
        w.inward[label] = in;
    }
    base::Status st = collate(nc, w.server, &w.out);
    if (st.ok()) st = collate(nc, w.inward, &w.in);
    if (st.ok()) st = make_relay_map(client, trunks, index, w.out, w.in, &w.map);
    if (!st.ok()) throw std::runtime_error("relay_fixture: " + st.message());
    return w;
}

// What impi-relay -state writes for client 1 of world `w` (impi_resume.hpp): made-up
// addresses and ports, both views of the job, a patterned session nonce.
inline RelayState sample_state(const World& w) {
    RelayState st;
    st.server = "10.0.0.1:7000";
    st.client = 1;
    st.pub = "10.0.0.9";
    st.priv = "192.168.1.9";
    st.port = 4000;
    st.ports = {4001, 4002, 4003, 4004, 4005};
    st.flags = 5;
    for (size_t i = 0; i < 32; ++i) st.session[i] = uint8_t(0xa0 + i);
    st.out = encode_job(w.out);
    st.in = encode_job(w.in);
    return st;
}

}  // namespace wanmpi::impi::relay_fixture
