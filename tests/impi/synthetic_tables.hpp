// Synthetic IMPI cluster tables for the IMPI tests (the agent test and the fuzz targets): client
// `client` has one host per entry of procs_per_host, at 10.<client>.<h>.1 port 5000+h, with that
// many processes (pids 100, 101, ...). Header-only: each test program includes it once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/impi_tables.hpp"
#include "runtime/impi_wire.hpp"

namespace wanmpi::impi::synthetic {

inline ClusterTables tables(int client, const std::vector<int>& procs_per_host) {
    ClusterTables t;
    for (size_t h = 0; h < procs_per_host.size(); ++h) {
        std::string a = "10." + std::to_string(client) + "." + std::to_string(h) + ".1";
        HostId id = host_id_from_ipv4(a);
        uint16_t port = uint16_t(5000 + h);
        t.hosts.push_back({id, port, uint32_t(procs_per_host[h])});
        for (int i = 0; i < procs_per_host[h]; ++i)
            t.procs.push_back(make_proc_id(id, port, 100 + i));
    }
    return t;
}

}  // namespace wanmpi::impi::synthetic
