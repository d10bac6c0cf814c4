#include "runtime/launch_options.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <ifaddrs.h>
#include <map>
#include <netinet/in.h>
#include <sstream>
#include <unistd.h>

#include "base/socket.hpp"

namespace wanmpi::runtime {

using base::Errc;
using base::Status;

static Status usage(std::string msg) { return Status(Errc::invalid, std::move(msg)); }

static bool parse_positive(const std::string& s, int* out) {
    if (s.empty() || s.size() > 9) return false;
    int v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + (c - '0');
    }
    if (v <= 0) return false;
    *out = v;
    return true;
}

static bool valid_host_name(const std::string& h) {
    if (h.empty() || h.size() > 255) return false;
    for (unsigned char c : h)
        if (c <= ' ' || c == ',' || c == '\'' || c == '"' || c == '\\' || c >= 0x7f) return false;
    return true;
}

Status parse_host_list(const std::string& s, std::vector<HostSpec>* out) {
    std::vector<HostSpec> hosts;
    size_t p = 0;
    while (p <= s.size()) {
        size_t c = s.find(',', p);
        if (c == std::string::npos) c = s.size();
        std::string item = s.substr(p, c - p);
        p = c + 1;
        if (item.empty()) return usage("empty host name in host list '" + s + "'");
        HostSpec h;
        size_t colon = item.rfind(':');
        // "a:b:c" is an IPv6 address without slots; "host:N" has slots.
        if (colon != std::string::npos && item.find(':') == colon) {
            if (!parse_positive(item.substr(colon + 1), &h.slots))
                return usage("bad slot count in host '" + item + "' (expected host:N, N > 0)");
            h.slots_given = true;
            item.resize(colon);
        }
        if (!valid_host_name(item)) return usage("invalid host name '" + item + "'");
        h.name = item;
        hosts.push_back(h);
        if (c == s.size()) break;
    }
    merge_hosts(out, hosts);
    return Status::OK();
}

Status parse_hostfile_text(const std::string& text, const std::string& fname,
                           std::vector<HostSpec>* out) {
    std::istringstream in(text);
    std::string line;
    int lineno = 0;
    std::vector<HostSpec> hosts;
    while (std::getline(in, line)) {
        ++lineno;
        auto where = [&] { return fname + ":" + std::to_string(lineno) + ": "; };
        size_t hash = line.find('#');
        if (hash != std::string::npos) line.resize(hash);
        std::istringstream words(line);
        std::string w;
        if (!(words >> w)) continue;
        HostSpec h;
        size_t colon = w.rfind(':');
        if (colon != std::string::npos && w.find(':') == colon) {
            if (!parse_positive(w.substr(colon + 1), &h.slots))
                return usage(where() + "bad slot count in '" + w + "'");
            h.slots_given = true;
            w.resize(colon);
        }
        if (!valid_host_name(w)) return usage(where() + "invalid host name '" + w + "'");
        h.name = w;
        while (words >> w) {
            if (w.rfind("slots=", 0) == 0) {
                if (!parse_positive(w.substr(6), &h.slots))
                    return usage(where() + "bad '" + w + "' (expected slots=N, N > 0)");
                h.slots_given = true;
            } else if (w.rfind("max_slots=", 0) == 0 || w.rfind("max-slots=", 0) == 0) {
                // Open MPI's upper bound; we always allow oversubscription.
            } else {
                return usage(where() + "unknown host attribute '" + w +
                             "' (expected slots=N)");
            }
        }
        hosts.push_back(h);
    }
    if (hosts.empty()) return usage(fname + ": no hosts in hostfile");
    merge_hosts(out, hosts);
    return Status::OK();
}

void merge_hosts(std::vector<HostSpec>* into, const std::vector<HostSpec>& add) {
    for (const auto& h : add) {
        bool found = false;
        for (auto& e : *into) {
            if (e.name == h.name) {
                e.slots += h.slots;
                e.slots_given = e.slots_given || h.slots_given;
                found = true;
                break;
            }
        }
        if (!found) into->push_back(h);
    }
}

std::vector<Placement> place_ranks(const std::vector<HostSpec>& hosts, int np) {
    std::vector<Placement> out;
    if (np <= 0) return out;
    if (hosts.empty()) {
        out.push_back({"localhost", true, 0, np});
        return out;
    }
    std::vector<int> count(hosts.size(), 0);
    int left = np;
    for (size_t i = 0; i < hosts.size() && left > 0; ++i) {
        count[i] = std::min(hosts[i].slots, left);
        left -= count[i];
    }
    for (size_t i = 0; left > 0; i = (i + 1) % hosts.size()) {
        ++count[i];
        --left;
    }
    int rank = 0;
    for (size_t i = 0; i < hosts.size(); ++i) {
        if (count[i] == 0) continue;
        out.push_back({hosts[i].name, is_local_host(hosts[i].name), rank, count[i]});
        rank += count[i];
    }
    return out;
}

bool is_local_host(const std::string& name) {
    if (name == "localhost" || name == "localhost.localdomain" || name == "ip6-localhost" ||
        name == "::1" || name.rfind("127.", 0) == 0)
        return true;
    char hn[256] = {0};
    if (gethostname(hn, sizeof hn - 1) == 0) {
        std::string h = hn;
        if (name == h) return true;
        std::string shorth = h.substr(0, h.find('.'));
        if (name == shorth) return true;
    }
    // An address literal of one of our interfaces. Names are not resolved: a DNS lookup for an
    // unknown name can stall start-up for seconds.
    in_addr a4{};
    in6_addr a6{};
    bool is4 = inet_pton(AF_INET, name.c_str(), &a4) == 1;
    bool is6 = !is4 && inet_pton(AF_INET6, name.c_str(), &a6) == 1;
    if (!is4 && !is6) return false;
    ifaddrs* ifs = nullptr;
    if (getifaddrs(&ifs) != 0) return false;
    bool local = false;
    for (ifaddrs* i = ifs; i && !local; i = i->ifa_next) {
        if (!i->ifa_addr) continue;
        if (is4 && i->ifa_addr->sa_family == AF_INET)
            local = reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr == a4.s_addr;
        if (is6 && i->ifa_addr->sa_family == AF_INET6)
            local = std::memcmp(&reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr, &a6,
                                sizeof a6) == 0;
    }
    freeifaddrs(ifs);
    return local;
}

Status split_command(const std::string& s, std::vector<std::string>* words) {
    words->clear();
    std::string cur;
    bool have = false;
    for (size_t i = 0; i < s.size(); ++i) {
        char c = s[i];
        if (c == ' ' || c == '\t' || c == '\n') {
            if (have) words->push_back(cur);
            cur.clear();
            have = false;
        } else if (c == '\'') {
            size_t e = s.find('\'', i + 1);
            if (e == std::string::npos) return usage("unterminated ' in command: " + s);
            cur += s.substr(i + 1, e - i - 1);
            have = true;
            i = e;
        } else if (c == '"') {
            size_t j = i + 1;
            for (; j < s.size() && s[j] != '"'; ++j) {
                if (s[j] == '\\' && j + 1 < s.size() &&
                    (s[j + 1] == '"' || s[j + 1] == '\\' || s[j + 1] == '$' || s[j + 1] == '`'))
                    ++j;
                cur += s[j];
            }
            if (j >= s.size()) return usage("unterminated \" in command: " + s);
            have = true;
            i = j;
        } else if (c == '\\' && i + 1 < s.size()) {
            cur += s[++i];
            have = true;
        } else {
            cur += c;
            have = true;
        }
    }
    if (have) words->push_back(cur);
    return Status::OK();
}

std::string shell_quote(const std::string& w) {
    bool safe = !w.empty();
    for (unsigned char c : w)
        if (!(isalnum(c) || std::strchr("@%+=:,./-_", c))) safe = false;
    if (safe) return w;
    std::string r = "'";
    for (char c : w) {
        if (c == '\'') r += "'\\''";
        else r += c;
    }
    return r + "'";
}

namespace {

// Option table. Single- and double-dash spellings of the MPICH (Hydra) and Open MPI names.
enum class Opt {
    np, host, hostfile, launcher, x, genv, timeout, tag, no_cleanup, help, version, wdir, ignore,
};
struct OptName {
    const char* name;
    Opt opt;
    bool arg;
};
const OptName kOpts[] = {
    {"n", Opt::np, true},           {"np", Opt::np, true},
    {"c", Opt::np, true},           {"host", Opt::host, true},
    {"hosts", Opt::host, true},     {"H", Opt::host, true},
    {"hostfile", Opt::hostfile, true}, {"machinefile", Opt::hostfile, true},
    {"f", Opt::hostfile, true},     {"launcher-exec", Opt::launcher, true},
    {"x", Opt::x, true},            {"genv", Opt::genv, true},
    {"env", Opt::genv, true},       {"timeout", Opt::timeout, true},
    {"tag-output", Opt::tag, false}, {"prepend-rank", Opt::tag, false},
    {"l", Opt::tag, false},         {"disable-auto-cleanup", Opt::no_cleanup, false},
    {"h", Opt::help, false},        {"help", Opt::help, false},
    {"version", Opt::version, false}, {"V", Opt::version, false},
    {"wdir", Opt::wdir, true},      {"wd", Opt::wdir, true},
    {"oversubscribe", Opt::ignore, false},
};

bool valid_env_name(const std::string& n) {
    if (n.empty() || isdigit(static_cast<unsigned char>(n[0]))) return false;
    for (unsigned char c : n)
        if (!(isalnum(c) || c == '_')) return false;
    return true;
}

}  // namespace

Status parse_launch_options(const std::vector<std::string>& args, LaunchOptions* o) {
    size_t i = 0;
    for (; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--") {
            ++i;
            break;
        }
        if (a.size() < 2 || a[0] != '-') break;  // the program
        std::string name = a.substr(a[1] == '-' ? 2 : 1);
        std::string value;
        bool inline_value = false;
        size_t eq = name.find('=');
        if (a[1] == '-' && eq != std::string::npos) {
            value = name.substr(eq + 1);
            name.resize(eq);
            inline_value = true;
        }
        if (name == "client") {
            // Two arguments, so outside the table: -client ID ADDR:PORT.
            if (inline_value) return usage("use '-client ID ADDR:PORT' (two separate arguments)");
            if (i + 2 >= args.size() || args[i + 1].rfind("-", 0) == 0 ||
                args[i + 2].rfind("-", 0) == 0)
                return usage("'" + a + "' needs two arguments: the client id (0..31) and the "
                             "impi-server's ADDR:PORT");
            const std::string& id = args[i + 1];
            const std::string& server = args[i + 2];
            i += 2;
            int v = 0;
            bool id_ok = !id.empty() && id.size() <= 2;
            for (char c : id) id_ok = id_ok && c >= '0' && c <= '9';
            if (id_ok) v = std::atoi(id.c_str());
            if (!id_ok || v > 31)
                return usage("'" + a + " " + id + "': the IMPI client id must be 0..31");
            if (!base::parse_host_port(server))
                return usage("'" + a + " " + id + " " + server + "': expected the impi-server's "
                             "address as ADDR:PORT (what impi-server printed)");
            if (o->impi_client >= 0) return usage("'" + a + "' given twice");
            o->impi_client = v;
            o->impi_server = server;
            o->env_set.push_back("WANMPI_IMPI_CLIENT=" + std::to_string(v));
            o->env_set.push_back("WANMPI_IMPI_SERVER=" + server);
            continue;
        }
        const OptName* spec = nullptr;
        for (const auto& s : kOpts)
            if (name == s.name) spec = &s;
        if (!spec) return usage("unknown option '" + a + "'");
        if (spec->arg && !inline_value) {
            if (i + 1 >= args.size()) return usage("option '" + a + "' needs an argument");
            value = args[++i];
        } else if (!spec->arg && inline_value) {
            return usage("option '--" + name + "' takes no argument");
        }
        switch (spec->opt) {
        case Opt::np:
            if (!parse_positive(value, &o->np))
                return usage("'" + a + " " + value + "': the number of processes must be a "
                             "positive integer");
            break;
        case Opt::host: {
            Status s = parse_host_list(value, &o->hosts);
            if (!s.ok()) return s;
            break;
        }
        case Opt::hostfile: {
            std::ifstream f(value);
            if (!f) return usage("cannot read hostfile '" + value + "': " + std::strerror(errno));
            std::stringstream ss;
            ss << f.rdbuf();
            Status s = parse_hostfile_text(ss.str(), value, &o->hosts);
            if (!s.ok()) return s;
            break;
        }
        case Opt::launcher: {
            std::vector<std::string> w;
            Status s = split_command(value, &w);
            if (!s.ok()) return s;
            if (w.empty()) return usage("--launcher-exec needs a command");
            o->launcher = value;
            break;
        }
        case Opt::x: {
            size_t e = value.find('=');
            std::string n = value.substr(0, e);
            if (!valid_env_name(n)) return usage("-x '" + value + "': invalid variable name");
            if (e == std::string::npos) o->env_names.push_back(n);
            else o->env_set.push_back(value);
            break;
        }
        case Opt::genv:
            if (!valid_env_name(value)) return usage(a + " '" + value + "': invalid variable name");
            if (i + 1 >= args.size()) return usage("option '" + a + "' needs NAME VALUE");
            o->env_set.push_back(value + "=" + args[++i]);
            break;
        case Opt::timeout: {
            char* end = nullptr;
            errno = 0;
            double t = std::strtod(value.c_str(), &end);
            if (value.empty() || *end != '\0' || errno != 0 || !(t > 0) || t > 1e7)
                return usage("'" + a + " " + value + "': the timeout must be a positive number "
                             "of seconds");
            o->timeout_s = t;
            break;
        }
        case Opt::tag: o->tag_output = true; break;
        case Opt::no_cleanup: o->auto_cleanup = false; break;
        case Opt::help: o->help = true; break;
        case Opt::version: o->version = true; break;
        case Opt::wdir:
            if (value.empty()) return usage("--wdir needs a directory");
            o->wdir = value;
            break;
        case Opt::ignore: break;
        }
    }
    o->program.assign(args.begin() + static_cast<long>(i), args.end());
    if (o->help || o->version) return Status::OK();
    if (o->program.empty()) return usage("no program to run");
    return Status::OK();
}

}  // namespace wanmpi::runtime
