#include "netns.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <exception>
#include <set>
#include <thread>

#include "common.hpp"

namespace wanmpi::wanemu {

std::string netns_path(const std::string& name) { return "/run/netns/" + name; }

std::vector<std::string> list_netns() {
    std::vector<std::string> out;
    DIR* d = ::opendir("/run/netns");
    if (!d) {
        return out;
    }
    while (dirent* e = ::readdir(d)) {
        std::string n = e->d_name;
        if (n != "." && n != "..") {
            out.push_back(n);
        }
    }
    ::closedir(d);
    return out;
}

bool netns_exists(const std::string& name) {
    struct stat st;
    return ::stat(netns_path(name).c_str(), &st) == 0;
}

void netns_create(const std::vector<std::string>& names) {
    std::string batch;
    for (const auto& n : names) {
        batch += "netns add " + n + "\n";
    }
    run_checked({"ip", "-batch", "-"}, "creating network namespaces", batch);
}

std::vector<std::string> netns_delete(const std::vector<std::string>& names) {
    std::string batch;
    for (const auto& n : names) {
        if (netns_exists(n)) {
            batch += "netns del " + n + "\n";
        }
    }
    if (!batch.empty()) {
        run_command({"ip", "-force", "-batch", "-"}, batch);
    }
    std::vector<std::string> failed;
    for (const auto& n : names) {
        if (netns_exists(n)) {
            failed.push_back(n);
        }
    }
    return failed;
}

void run_in_netns(const std::string& ns, const std::function<void()>& fn) {
    std::exception_ptr ex;
    std::thread t([&] {
        try {
            int fd = ::open(netns_path(ns).c_str(), O_RDONLY | O_CLOEXEC);
            if (fd < 0) {
                throw_errno("cannot open namespace " + ns);
            }
            if (::setns(fd, CLONE_NEWNET) != 0) {
                int e = errno;
                ::close(fd);
                errno = e;
                throw_errno("cannot enter namespace " + ns);
            }
            ::close(fd);
            fn();
        } catch (...) {
            ex = std::current_exception();
        }
    });
    t.join();
    if (ex) {
        std::rethrow_exception(ex);
    }
}

void write_sysctl(const std::string& key, const std::string& value) {
    std::string path = "/proc/sys/" + key;
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        throw_errno("cannot open " + path);
    }
    ssize_t n = ::write(fd, value.data(), value.size());
    int e = errno;
    ::close(fd);
    if (n != ssize_t(value.size())) {
        errno = e;
        throw_errno("cannot write " + path);
    }
}

int create_tun(const std::string& ifname, bool gso, int mtu, int txqueuelen) {
    int fd = ::open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        throw_errno("cannot open /dev/net/tun");
    }
    ifreq ifr{};
    std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
    ifr.ifr_flags = IFF_TUN | IFF_NO_PI | (gso ? IFF_VNET_HDR : 0);
    if (::ioctl(fd, TUNSETIFF, &ifr) != 0) {
        int e = errno;
        ::close(fd);
        errno = e;
        throw_errno("TUNSETIFF " + ifname);
    }
    if (gso) {
        unsigned off = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN;
        if (::ioctl(fd, TUNSETOFFLOAD, off) != 0) {
            int e = errno;
            ::close(fd);
            errno = e;
            throw_errno("TUNSETOFFLOAD " + ifname);
        }
    }
    int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0) {
        int e = errno;
        ::close(fd);
        errno = e;
        throw_errno("socket");
    }
    auto ctl = [&](unsigned long req, const char* what) {
        if (::ioctl(s, req, &ifr) != 0) {
            int e = errno;
            ::close(s);
            ::close(fd);
            errno = e;
            throw_errno(std::string(what) + " " + ifname);
        }
    };
    ifr.ifr_mtu = mtu;
    ctl(SIOCSIFMTU, "set mtu");
    ifr.ifr_qlen = txqueuelen;
    ctl(SIOCSIFTXQLEN, "set txqueuelen");
    ctl(SIOCGIFFLAGS, "get flags");
    ifr.ifr_flags = short(ifr.ifr_flags | IFF_UP);
    ctl(SIOCSIFFLAGS, "set up");
    ::close(s);
    return fd;
}

namespace {

std::set<ino_t> netns_inodes(const std::vector<std::string>& names) {
    std::set<ino_t> out;
    for (const auto& n : names) {
        struct stat st;
        if (::stat(netns_path(n).c_str(), &st) == 0) {
            out.insert(st.st_ino);
        }
    }
    return out;
}

std::vector<int> pids_in(const std::set<ino_t>& inodes) {
    std::vector<int> out;
    if (inodes.empty()) {
        return out;
    }
    DIR* d = ::opendir("/proc");
    if (!d) {
        return out;
    }
    int self = ::getpid();
    while (dirent* e = ::readdir(d)) {
        char* end = nullptr;
        long pid = std::strtol(e->d_name, &end, 10);
        if (*end != '\0' || pid <= 0 || pid == self) {
            continue;
        }
        struct stat st;
        std::string p = std::string("/proc/") + e->d_name + "/ns/net";
        if (::stat(p.c_str(), &st) == 0 && inodes.count(st.st_ino)) {
            out.push_back(int(pid));
        }
    }
    ::closedir(d);
    return out;
}

}  // namespace

int kill_netns_processes(const std::vector<std::string>& names, int grace_ms) {
    auto inodes = netns_inodes(names);
    auto pids = pids_in(inodes);
    int found = int(pids.size());
    if (pids.empty()) {
        return 0;
    }
    for (int p : pids) {
        ::kill(p, SIGTERM);
    }
    int64_t deadline = now_ns() + int64_t(grace_ms) * k_ms;
    while (!pids.empty() && now_ns() < deadline) {
        ::usleep(10000);
        pids = pids_in(inodes);
    }
    // Processes may fork while we look: repeat SIGKILL sweeps until none is left.
    for (int round = 0; round < 200 && !pids.empty(); ++round) {
        for (int p : pids) {
            ::kill(p, SIGKILL);
        }
        ::usleep(10000);
        pids = pids_in(inodes);
    }
    return found;
}

}  // namespace wanmpi::wanemu
