#include "topology.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>

#include "common.hpp"

namespace wanmpi::wanemu {

namespace {

constexpr int k_max_clusters = 64;
constexpr int k_max_hosts_per_cluster = 200;
constexpr int k_max_hosts = 1000;

std::string exact(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

}  // namespace

int64_t link_params::effective_queue_bytes() const {
    if (queue_bytes >= 0) {
        return queue_bytes;  // 0: none
    }
    double bdp = rate_bps / 8.0 * 2.0 * double(delay_ns) / 1e9;
    return std::max<int64_t>(64 * 1024, static_cast<int64_t>(bdp));
}

std::string link_params::describe() const {
    std::string s = "delay=" + format_duration(delay_ns) + " rate=" + format_rate(rate_bps);
    if (rate_bps > 0) {
        s += " queue=";
        if (queue_bytes != 0) {
            s += format_size(effective_queue_bytes());
            if (queue_bytes < 0) {
                s += "(auto)";
            }
        }
        if (queue_pkts > 0) {
            s += (queue_bytes != 0 ? "," : "") + std::to_string(queue_pkts) + "p";
        }
    }
    s += " loss=" + format_fraction(loss);
    if (jitter_ns > 0) {
        s += " jitter=" + format_duration(jitter_ns);
    }
    return s;
}

std::string link_params::queue_spec() const {
    std::string s = queue_bytes < 0 ? "auto" : queue_bytes > 0 ? std::to_string(queue_bytes) : "";
    if (queue_pkts > 0) {
        s += (s.empty() ? "" : "+") + std::to_string(queue_pkts) + "p";
    }
    return s.empty() ? "0" : s;  // "0" (no limit at all) never passes validate()
}

void link_params::validate(int mtu) const {
    if (queue_bytes == 0 && queue_pkts == 0) {
        throw error("the queue needs a limit (a size such as 64KB, a packet count such as 100p, "
                    "or auto)");
    }
    if (queue_bytes > 0 && queue_bytes < mtu) {
        throw error("queue " + format_size(queue_bytes) + " (" + std::to_string(queue_bytes) +
                    " bytes) is smaller than one packet (MTU " + std::to_string(mtu) + " bytes)");
    }
}

std::string link_params::serialize() const {
    return "delay=" + std::to_string(delay_ns) + "ns jitter=" + std::to_string(jitter_ns) +
           "ns rate=" + exact(rate_bps) + " queue=" + queue_spec() + " loss=" + exact(loss);
}

void apply_param(link_params& p, const std::string& key_in, const std::string& value) {
    std::string key = lower(key_in);
    auto bad = [&](const char* what) {
        return error("bad " + key + " '" + value + "': expected " + what);
    };
    if (key == "delay") {
        auto v = parse_duration_ns(value);
        if (!v || *v < 0 || *v > 10 * 1000 * k_ms) {
            throw bad("a duration up to 10s such as 10ms or 500us");
        }
        p.delay_ns = *v;
    } else if (key == "jitter") {
        auto v = parse_duration_ns(value);
        if (!v || *v < 0 || *v > 10 * 1000 * k_ms) {
            throw bad("a duration such as 1ms");
        }
        p.jitter_ns = *v;
    } else if (key == "rate" || key == "bw" || key == "bandwidth") {
        auto v = parse_rate_bps(value);
        if (!v || *v < 0 || (*v > 0 && *v < 8000) || *v > 1e12) {
            throw bad("a rate such as 200mbit or 1gbit (at least 8kbit), or 'unlimited'");
        }
        p.rate_bps = *v;
    } else if (key == "queue" || key == "limit") {
        // The value replaces the whole limit: what it does not name is not limited, so `100p`
        // alone is 100 packets of any size (add `auto+` or a size to keep a byte limit too).
        // Both limits are joined by '+' ("64KB+100p"); on the command line ',' works too.
        std::string v = lower(trim(value));
        std::replace(v.begin(), v.end(), ',', '+');
        int64_t bytes = 0, pkts = 0;
        for (const auto& part : split(v, '+', false)) {
            if (part == "auto") {
                bytes = -1;
            } else if (!part.empty() && (part.back() == 'p' || part.ends_with("pkts") ||
                                         part.ends_with("packets"))) {
                size_t digits = part.find_first_not_of("0123456789");
                std::string n = part.substr(0, digits);
                std::string unit = part.substr(digits);
                if (n.empty() || n.size() > 9 ||
                    (unit != "p" && unit != "pkts" && unit != "packets")) {
                    throw bad("a packet count such as 100p");
                }
                if (std::stoll(n) <= 0) {
                    throw error("bad queue '" + value + "': a queue must hold at least one packet");
                }
                pkts = std::stoll(n);
            } else {
                auto b = parse_size_bytes(part);
                if (!b || *b < 0) {
                    throw bad("a size such as 64KB, a packet count such as 100p, both as "
                              "64KB+100p, or auto");
                }
                if (*b == 0) {
                    throw error("bad queue '" + value + "': a queue must hold at least one packet");
                }
                bytes = *b;
            }
        }
        if (bytes == 0 && pkts == 0) {
            throw bad(
                "a size such as 64KB, a packet count such as 100p, both as 64KB+100p, or auto");
        }
        p.queue_bytes = bytes;
        p.queue_pkts = pkts;
    } else if (key == "queue_pkts" || key == "qpkts") {
        char* end = nullptr;
        long long n = std::strtoll(value.c_str(), &end, 10);
        if (value.empty() || *end != '\0' || n < 0 || n > 100000000) {
            throw bad("a packet count (0 = no packet limit)");
        }
        p.queue_pkts = n;
    } else if (key == "loss" || key == "plr") {
        auto v = parse_fraction(value);
        if (!v) {
            throw bad("a fraction such as 0.5% or 0.005, within 0..100%");
        }
        p.loss = *v;
    } else {
        throw error("unknown link parameter '" + key_in +
                    "' (known: delay, rate, queue, queue_pkts, loss, jitter)");
    }
}

std::string host_info::addr_seen_from(int from_cluster) const {
    if (!priv_addr.empty() && (from_cluster == cluster || pub_addr.empty())) {
        return priv_addr;
    }
    return pub_addr;
}

int topology::cluster_index(const std::string& name) const {
    for (size_t i = 0; i < clusters.size(); ++i) {
        if (clusters[i].name == name) {
            return int(i);
        }
    }
    return -1;
}

int topology::link_index(const std::string& name) const {
    for (size_t i = 0; i < links.size(); ++i) {
        const auto& l = links[i];
        if (l.name == name || clusters[l.b].name + "-" + clusters[l.a].name == name) {
            return int(i);
        }
    }
    return -1;
}

void topology::validate() const {
    if (clusters.empty()) {
        throw error("topology has no clusters");
    }
    if (int(clusters.size()) > k_max_clusters) {
        throw error("too many clusters (at most " + std::to_string(k_max_clusters) + ")");
    }
    if (mtu < 576 || mtu > 65000) {
        throw error("mtu " + std::to_string(mtu) + " out of range 576..65000");
    }
    std::set<std::string> names;
    size_t total = 0;
    for (const auto& c : clusters) {
        if (!valid_label(c.name, 24)) {
            throw error("bad cluster name '" + c.name +
                        "': use letters, digits and '-' (at most 24 characters)");
        }
        if (c.host_names.empty()) {
            throw error("cluster " + c.name + " has no hosts");
        }
        if (int(c.host_names.size()) > k_max_hosts_per_cluster) {
            throw error("cluster " + c.name + " has more than " +
                        std::to_string(k_max_hosts_per_cluster) + " hosts");
        }
        if (c.frontends < 1 || c.frontends > int(c.host_names.size())) {
            throw error("cluster " + c.name + ": frontends=" + std::to_string(c.frontends) +
                        " must be 1.." + std::to_string(c.host_names.size()) +
                        " (the number of its hosts)");
        }
        for (const auto& h : c.host_names) {
            if (!valid_label(h, 40)) {
                throw error("bad host name '" + h +
                            "': use letters, digits and '-' (no '_': Open MPI rejects it)");
            }
            if (!names.insert(h).second) {
                throw error("host name '" + h + "' used twice");
            }
        }
        total += c.host_names.size();
    }
    if (total > size_t(k_max_hosts)) {
        throw error("too many hosts (at most " + std::to_string(k_max_hosts) + ")");
    }
    std::set<std::string> lnames;
    std::set<std::pair<int, int>> pairs;
    for (const auto& l : links) {
        for (int d = 0; d < 2; ++d) {
            try {
                (d == 0 ? l.ab : l.ba).validate(mtu);
            } catch (const error& e) {
                throw error("link " + clusters[size_t(d == 0 ? l.a : l.b)].name + ">" +
                            clusters[size_t(d == 0 ? l.b : l.a)].name + ": " + e.what());
            }
        }
        if (l.a == l.b) {
            throw error("link " + l.name + " joins a cluster to itself");
        }
        if (!lnames.insert(l.name).second) {
            throw error("link name '" + l.name + "' is ambiguous");
        }
        if (!pairs.insert({std::min(l.a, l.b), std::max(l.a, l.b)}).second) {
            throw error("clusters " + clusters[l.a].name + " and " + clusters[l.b].name +
                        " are linked twice");
        }
    }
}

std::string topology::serialize() const {
    std::string s = "mtu " + std::to_string(mtu) + "\ngso " + (gso ? "on" : "off") + "\ninterval " +
                    (interval_ns > 0 ? std::to_string(interval_ns) + "ns" : std::string("off")) +
                    "\n";
    for (const auto& c : clusters) {
        s += "cluster " + c.name + " hosts=" + join(c.host_names, ",") +
             (c.is_private ? " private" : " public");
        if (c.nic_bps > 0) {
            s += " nic=" + exact(c.nic_bps);
        }
        if (c.frontends != 1) {
            s += " frontends=" + std::to_string(c.frontends);
        }
        s += "\n";
    }
    for (const auto& l : links) {
        s +=
            "link " + clusters[l.a].name + ">" + clusters[l.b].name + " " + l.ab.serialize() + "\n";
        s +=
            "link " + clusters[l.b].name + ">" + clusters[l.a].name + " " + l.ba.serialize() + "\n";
    }
    return s;
}

std::string address_plan::public_subnet(int c) const {
    return "10." + std::to_string(100 + run_index) + "." + std::to_string(c) + ".0/24";
}
std::string address_plan::private_subnet(int c) const {
    return "10." + std::to_string(100 + run_index) + "." + std::to_string(128 + c) + ".0/24";
}
std::string address_plan::public_gateway(int c) const {
    return "10." + std::to_string(100 + run_index) + "." + std::to_string(c) + ".1";
}
std::string address_plan::public_host(int c, int j) const {
    return "10." + std::to_string(100 + run_index) + "." + std::to_string(c) + "." +
           std::to_string(10 + j);
}
std::string address_plan::private_host(int c, int j) const {
    return "10." + std::to_string(100 + run_index) + "." + std::to_string(128 + c) + "." +
           std::to_string(10 + j);
}

std::vector<host_info> make_hosts(const topology& t, const address_plan& plan) {
    std::vector<host_info> out;
    for (size_t c = 0; c < t.clusters.size(); ++c) {
        const auto& cl = t.clusters[c];
        for (size_t j = 0; j < cl.host_names.size(); ++j) {
            host_info h;
            h.name = cl.host_names[j];
            h.cluster = int(c);
            h.index = int(j);
            // The first F hosts are front-ends; in a private cluster only they are dual-homed.
            bool fe = int(j) < cl.frontends;
            h.role = fe ? host_role::frontend : host_role::compute;
            if (!cl.is_private || fe) {
                h.pub_addr = plan.public_host(int(c), int(j));
            }
            if (cl.is_private) {
                h.priv_addr = plan.private_host(int(c), int(j));
            }
            out.push_back(h);
        }
    }
    return out;
}

namespace {

std::string default_host_name(const std::string& cluster, int j) {
    bool digit_end = !cluster.empty() && std::isdigit(static_cast<unsigned char>(cluster.back()));
    return cluster + (digit_end ? "h" : "") + std::to_string(j);
}

// Applies "k=v" tokens (each may hold several, comma-separated) to p.
void apply_tokens(link_params& p, const std::vector<std::string>& toks, size_t from) {
    for (size_t i = from; i < toks.size(); ++i) {
        for (const auto& kv : split(toks[i], ',')) {
            size_t eq = kv.find('=');
            if (eq == std::string::npos) {
                throw error("expected key=value, got '" + kv + "'");
            }
            apply_param(p, kv.substr(0, eq), kv.substr(eq + 1));
        }
    }
}

link_info& get_or_add_link(topology& t, int a, int b, const link_params& defaults) {
    for (auto& l : t.links) {
        if ((l.a == a && l.b == b) || (l.a == b && l.b == a)) {
            return l;
        }
    }
    link_info l;
    l.a = a;
    l.b = b;
    l.name = t.clusters[a].name + "-" + t.clusters[b].name;
    l.ab = l.ba = defaults;
    t.links.push_back(l);
    return t.links.back();
}

}  // namespace

topology parse_topology(const std::string& text, const std::string& origin) {
    topology t;
    link_params defaults;
    int lineno = 0;
    for (const auto& raw : split(text, '\n', false)) {
        ++lineno;
        std::string_view line = raw;
        if (size_t h = line.find('#'); h != line.npos) {
            line = line.substr(0, h);
        }
        auto toks = split_ws(line);
        if (toks.empty()) {
            continue;
        }
        try {
            const std::string& d = toks[0];
            auto need = [&](size_t n) {
                if (toks.size() < n) {
                    throw error("'" + d + "' needs more arguments");
                }
            };
            if (d == "mtu") {
                need(2);
                char* end = nullptr;
                long v = std::strtol(toks[1].c_str(), &end, 10);
                if (*end != '\0' || v < 576 || v > 65000) {
                    throw error("bad mtu '" + toks[1] + "'");
                }
                t.mtu = int(v);
            } else if (d == "gso") {
                need(2);
                if (toks[1] != "on" && toks[1] != "off") {
                    throw error("gso takes on or off");
                }
                t.gso = toks[1] == "on";
            } else if (d == "interval") {
                need(2);
                if (toks[1] == "off") {
                    t.interval_ns = 0;
                } else {
                    auto v = parse_duration_ns(toks[1]);
                    if (!v || *v < 100 * k_us || *v > 10000 * k_ms) {
                        throw error("bad interval '" + toks[1] + "' (100us..10s, or off)");
                    }
                    t.interval_ns = *v;
                }
            } else if (d == "defaults") {
                apply_tokens(defaults, toks, 1);
            } else if (d == "cluster") {
                need(2);
                cluster_info c;
                c.name = toks[1];
                if (t.cluster_index(c.name) >= 0) {
                    throw error("cluster " + c.name + " declared twice");
                }
                int count = 1;
                for (size_t i = 2; i < toks.size(); ++i) {
                    const auto& tok = toks[i];
                    if (tok == "private") {
                        c.is_private = true;
                    } else if (tok == "public") {
                        c.is_private = false;
                    } else if (starts_with(tok, "hosts=")) {
                        std::string v = tok.substr(6);
                        if (!v.empty() && std::all_of(v.begin(), v.end(), [](char ch) {
                                return std::isdigit(static_cast<unsigned char>(ch));
                            })) {
                            if (v.size() > 4 || std::stoi(v) < 1) {
                                throw error("bad host count '" + v + "'");
                            }
                            count = std::stoi(v);
                            c.host_names.clear();
                        } else {
                            c.host_names = split(v, ',');
                            if (c.host_names.empty()) {
                                throw error("empty host list");
                            }
                        }
                    } else if (starts_with(tok, "nic=")) {
                        auto r = parse_rate_bps(tok.substr(4));
                        if (!r || *r < 0) {
                            throw error("bad nic rate '" + tok.substr(4) + "'");
                        }
                        c.nic_bps = *r;
                    } else if (starts_with(tok, "frontends=")) {
                        std::string v = tok.substr(10);
                        char* end = nullptr;
                        long f = std::strtol(v.c_str(), &end, 10);
                        if (v.empty() || *end != '\0' || f < 1 || f > k_max_hosts_per_cluster) {
                            throw error("bad frontends '" + v + "' (a count, at least 1)");
                        }
                        c.frontends = int(f);  // checked against the hosts in validate()
                    } else {
                        throw error("unknown cluster option '" + tok +
                                    "' (known: hosts=N|names, private, public, nic=RATE, "
                                    "frontends=F)");
                    }
                }
                if (c.host_names.empty()) {
                    for (int j = 0; j < count; ++j) {
                        c.host_names.push_back(default_host_name(c.name, j));
                    }
                }
                t.clusters.push_back(c);
            } else if (d == "link") {
                need(2);
                size_t arrow = toks[1].find('>');
                if (arrow != std::string::npos) {
                    std::string an = toks[1].substr(0, arrow), bn = toks[1].substr(arrow + 1);
                    int a = t.cluster_index(an), b = t.cluster_index(bn);
                    if (a < 0 || b < 0) {
                        throw error("unknown cluster in '" + toks[1] + "'");
                    }
                    auto& l = get_or_add_link(t, a, b, defaults);
                    apply_tokens(l.a == a ? l.ab : l.ba, toks, 2);
                } else {
                    need(3);
                    int a = t.cluster_index(toks[1]), b = t.cluster_index(toks[2]);
                    if (a < 0) {
                        throw error("unknown cluster '" + toks[1] + "' (declare it first)");
                    }
                    if (b < 0) {
                        throw error("unknown cluster '" + toks[2] + "' (declare it first)");
                    }
                    if (a == b) {
                        throw error("a link needs two different clusters");
                    }
                    for (const auto& l : t.links) {
                        if ((l.a == a && l.b == b) || (l.a == b && l.b == a)) {
                            throw error("clusters " + toks[1] + " and " + toks[2] +
                                        " are already linked");
                        }
                    }
                    link_params p = defaults;
                    apply_tokens(p, toks, 3);
                    auto& l = get_or_add_link(t, a, b, p);
                    l.ab = l.ba = p;
                }
            } else if (d == "mesh") {
                link_params p = defaults;
                apply_tokens(p, toks, 1);
                for (size_t a = 0; a < t.clusters.size(); ++a) {
                    for (size_t b = a + 1; b < t.clusters.size(); ++b) {
                        bool exists = false;
                        for (const auto& l : t.links) {
                            exists |= (l.a == int(a) && l.b == int(b)) ||
                                      (l.a == int(b) && l.b == int(a));
                        }
                        if (!exists) {
                            get_or_add_link(t, int(a), int(b), p);
                        }
                    }
                }
            } else {
                throw error("unknown directive '" + d +
                            "' (known: cluster, link, mesh, defaults, mtu, gso, interval)");
            }
        } catch (const error& e) {
            throw error(origin + ":" + std::to_string(lineno) + ": " + e.what());
        }
    }
    try {
        t.validate();
    } catch (const error& e) {
        throw error(origin + ": " + e.what());
    }
    return t;
}

topology make_quick_topology(const quick_form& q) {
    if (q.clusters < 1 || q.clusters > k_max_clusters) {
        throw error("--clusters must be 1.." + std::to_string(k_max_clusters));
    }
    if (q.hosts < 1 || q.hosts > k_max_hosts_per_cluster) {
        throw error("--hosts must be 1.." + std::to_string(k_max_hosts_per_cluster));
    }
    if (q.frontends < 1 || q.frontends > q.hosts) {
        throw error("--frontends " + std::to_string(q.frontends) + ": must be 1.." +
                    std::to_string(q.hosts) + " (--hosts)");
    }
    topology t;
    t.mtu = q.mtu;
    t.gso = q.gso;
    for (int c = 0; c < q.clusters; ++c) {
        cluster_info ci;
        ci.name = "c" + std::to_string(c);
        for (int j = 0; j < q.hosts; ++j) {
            ci.host_names.push_back(default_host_name(ci.name, j));
        }
        ci.nic_bps = q.nic_bps;
        ci.frontends = q.frontends;
        t.clusters.push_back(ci);
    }
    if (!q.private_spec.empty()) {
        const std::string& s = q.private_spec;
        if (std::all_of(s.begin(), s.end(),
                        [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); })) {
            int k = s.size() > 3 ? 1000 : std::stoi(s);
            if (k > q.clusters) {
                throw error("--private " + s + ": only " + std::to_string(q.clusters) +
                            " clusters");
            }
            for (int c = q.clusters - k; c < q.clusters; ++c) {
                t.clusters[c].is_private = true;
            }
        } else {
            for (const auto& n : split(s, ',')) {
                int c = t.cluster_index(n);
                if (c < 0) {
                    throw error("--private: no cluster named '" + n + "' (clusters are c0..c" +
                                std::to_string(q.clusters - 1) + ")");
                }
                t.clusters[c].is_private = true;
            }
        }
    }
    for (int a = 0; a < q.clusters; ++a) {
        for (int b = a + 1; b < q.clusters; ++b) {
            get_or_add_link(t, a, b, q.params);
        }
    }
    t.validate();
    return t;
}

}  // namespace wanmpi::wanemu
