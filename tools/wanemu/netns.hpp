// Network-namespace plumbing for wanemu: creating and deleting named namespaces (the
// `ip netns` convention, /run/netns/<name>, so `ip netns exec` works on them too), running code
// inside one, TUN devices, and killing every process left in a run's namespaces.
//
// Lifecycle/ownership: namespaces are named and persist until netns_delete(); TUN fds returned
// by create_tun() are owned by the caller (closing the last fd removes the device).
// Threading: run_in_netns() runs its function on a short-lived thread that setns()es, so the
// calling thread's namespace never changes; everything else is safe to call from any thread.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace wanmpi::wanemu {

std::string netns_path(const std::string& name);
std::vector<std::string> list_netns();  // names under /run/netns
bool netns_exists(const std::string& name);

void netns_create(const std::vector<std::string>& names);  // throws error
// Deletes the names (best effort, continues on errors); returns the names that failed.
std::vector<std::string> netns_delete(const std::vector<std::string>& names);

// Runs fn on a thread that has joined namespace `ns`; exceptions propagate.
void run_in_netns(const std::string& ns, const std::function<void()>& fn);

// Writes a sysctl under /proc/sys (net.* entries refer to the calling thread's namespace).
void write_sysctl(const std::string& key, const std::string& value);  // key "net/ipv4/ip_forward"

// Creates (in the calling thread's namespace) an up TUN device in IFF_TUN|IFF_NO_PI mode, with
// IFF_VNET_HDR and TSO/checksum offload when gso is set, the given MTU and txqueuelen.
int create_tun(const std::string& ifname, bool gso, int mtu, int txqueuelen);

// Sends SIGTERM to every process whose network namespace is one of `names`, waits up to
// grace_ms for them to exit, then SIGKILLs the rest. Returns how many processes were found.
int kill_netns_processes(const std::vector<std::string>& names, int grace_ms);

}  // namespace wanmpi::wanemu
