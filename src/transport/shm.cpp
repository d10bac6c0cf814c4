// 'shm' transport: set-up and tear-down (segments, attaching local peers, single-copy reads).
// The design, the ring protocol and the hot path are in shm_impl.hpp.
#include "transport/shm.hpp"

#include <fcntl.h>
#include <linux/membarrier.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "base/log.hpp"
#include "base/tunables.hpp"
#include "transport/common.hpp"
#include "transport/shm_impl.hpp"

namespace wanmpi::transport {
namespace shm_impl {
namespace {


base::Tunable<int64_t> t_ring_size(
    "SHM", "RING_SIZE", 256 * 1024,
    "Bytes of each shared-memory ring (one per ordered pair of ranks on a host); rounded up to a "
    "power of two between 64k and 1g. Frames larger than a quarter ring are streamed in chunks.",
    base::Level::tuner);
base::Tunable<int64_t> t_max_inline(
    "SHM", "MAX_INLINE", 16 * 1024,
    "Largest payload the shm transport takes in one try_send (the eager fast path); capped at a "
    "quarter of the receiver's ring.",
    base::Level::tuner);
base::Tunable<std::string> t_segment(
    "SHM", "SEGMENT", "auto",
    "How shared memory is passed between ranks: memfd (fd taken with pidfd_getfd, nothing named in "
    "/dev/shm), shm_open (job-unique /dev/shm name, unlinked once every peer mapped it), or auto "
    "(memfd when the kernel permits it, else shm_open).",
    base::Level::tuner);
const bool t_segment_named = (t_segment.set_choices({"auto", "memfd", "shm_open"}), true);
base::Tunable<bool> t_cma(
    "SHM", "CMA", true,
    "Single-copy reads of large messages from a peer's memory (process_vm_readv). Off, or not "
    "permitted by the kernel, large messages go through the rings in chunks.",
    base::Level::tuner);
base::Tunable<int64_t> t_cma_chunk(
    "SHM", "CMA_CHUNK", int64_t(1) << 30,
    "Largest single process_vm_readv call (bytes); larger reads loop.", base::Level::developer);
base::Tunable<bool> t_membarrier(
    "SHM", "MEMBARRIER", true,
    "Use membarrier(2) so that sending a frame needs no memory fence (the rank going to sleep "
    "pays instead); off, both sides fence.",
    base::Level::developer);
base::Tunable<int64_t> t_prefault(
    "SHM", "PREFAULT", 16,
    "Map the pages of this rank's rings (in and out) at start-up when the host has at most this "
    "many ranks (-1: always, 0: never). Otherwise the first pass through each ring takes a page "
    "fault every 4 KiB (about 1 us each in a VM): small messages were ~2x slower for the first "
    "~2,000 per pair. Costs ring size x 2 x (local ranks - 1) of memory per rank at once.",
    base::Level::tuner);
base::Tunable<int64_t> t_death_check(
    "SHM", "DEATH_CHECK", 16384,
    "Poll local peers' pidfds for an exit every this many progress calls (and after every "
    "wake-up).",
    base::Level::developer);

int sys_pidfd_open(pid_t pid) {
    return int(::syscall(SYS_pidfd_open, pid, 0));
}
int sys_pidfd_getfd(int pidfd, int fd) {
    return int(::syscall(SYS_pidfd_getfd, pidfd, fd, 0));
}

// Whether the process behind `pidfd` has exited (a pidfd turns readable then; a zombie counts).
// A process in the middle of exiting has already dropped its files, so taking one of its fds
// fails (ESRCH; EBADF on older kernels) a moment before the pidfd turns readable: `wait_ms`
// covers that moment on error paths.
bool pidfd_exited(int pidfd, int wait_ms) {
    if (pidfd < 0) return false;
    pollfd p{pidfd, POLLIN, 0};
    int n;
    do n = ::poll(&p, 1, wait_ms);
    while (n < 0 && errno == EINTR);
    return n == 1 && (p.revents & POLLIN);
}



Status sys_error(const std::string& what, int e) {
    return Status(base::Errc::fatal, "shm: " + what + ": " + base::errno_text(e), e);
}

uint64_t pow2_at_least(uint64_t v) {
    uint64_t p = 1;
    while (p < v)
        p <<= 1;
    return p;
}

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    size_t b = 0;
    for (;;) {
        size_t e = s.find(sep, b);
        out.push_back(s.substr(b, e == std::string::npos ? std::string::npos : e - b));
        if (e == std::string::npos) break;
        b = e + 1;
    }
    return out;
}

bool parse_u64(const std::string& s, uint64_t& v, int base = 10) {
    if (s.empty()) return false;
    char* end = nullptr;
    errno = 0;
    unsigned long long x = std::strtoull(s.c_str(), &end, base);
    if (errno || *end) return false;
    v = x;
    return true;
}

}  // namespace

Status ShmTransport::init(const JobInfo& job, base::Kvs& kvs, const std::vector<int>& peers) {
    rank_ = job.rank;
    size_ = job.size;
    job_hash_ = detail::job_hash(job.job_id);
    death_interval_ = uint64_t(std::max<int64_t>(1, t_death_check.get()));
    cma_chunk_ = uint64_t(std::max<int64_t>(4096, t_cma_chunk.get()));
    auto host = [&](int r) { return job.host_of.empty() ? 0 : job.host_of[r]; };
    if (!job.host_of.empty() && int(job.host_of.size()) != size_)
        return Status(base::Errc::invalid, "shm: host_of has the wrong size");
    std::vector<int> locals;
    for (int r = 0; r < size_; ++r)
        if (host(r) == host(rank_)) locals.push_back(r);
    auto local_index = [&](int r) {
        return int(std::lower_bound(locals.begin(), locals.end(), r) - locals.begin());
    };
    my_local_ = local_index(rank_);
    nslots_ = uint32_t(locals.size());
    peers_.assign(size_, nullptr);
    for (int r : peers) {
        if (r < 0 || r >= size_ || r == rank_ || host(r) != host(rank_))
            return Status(base::Errc::invalid, "shm: cannot serve rank " + std::to_string(r) +
                                                   " (not another rank of "
                                                   "this host)");
        if (peers_[r]) continue;
        owned_.push_back(std::make_unique<Peer>());
        Peer* p = owned_.back().get();
        p->rank = r;
        p->local = local_index(r);
        peers_[r] = p;
        rx_.push_back(p);
    }
    int64_t rs = std::clamp<int64_t>(t_ring_size.get(), 64 * 1024, int64_t(1) << 30);
    ring_size_ = pow2_at_least(uint64_t(rs));
    stride_ = kPage + ring_size_;
    seg_len_ = kPage + nslots_ * stride_;

    epfd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epfd_ < 0) return sys_error("epoll_create1", errno);
    if (rx_.empty()) return Status::OK();

    // Wake socket: abstract unix datagram, named from job and rank (no file to clean up).
    wake_fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (wake_fd_ < 0) return sys_error("socket(AF_UNIX)", errno);
    std::string wake_name = "wanmpi-" + detail::hex64(job_hash_) + "-" + std::to_string(rank_);
    {
        sockaddr_un sa{};
        sa.sun_family = AF_UNIX;
        std::memcpy(sa.sun_path + 1, wake_name.data(), wake_name.size());
        socklen_t len = socklen_t(offsetof(sockaddr_un, sun_path) + 1 + wake_name.size());
        if (::bind(wake_fd_, reinterpret_cast<sockaddr*>(&sa), len) != 0) {
            if (errno != EADDRINUSE) return sys_error("bind wake socket", errno);
            // Another job hashed to the same name: let the kernel pick a unique one.
            WANMPI_LOG(debug, "shm: wake socket name %s in use, autobinding", wake_name.c_str());
            sa_family_t fam = AF_UNIX;
            if (::bind(wake_fd_, reinterpret_cast<sockaddr*>(&fam), sizeof fam) != 0)
                return sys_error("autobind wake socket", errno);
            sockaddr_un got{};
            socklen_t gl = sizeof got;
            getsockname(wake_fd_, reinterpret_cast<sockaddr*>(&got), &gl);
            wake_name.assign(got.sun_path + 1, gl - offsetof(sockaddr_un, sun_path) - 1);
        }
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = wake_fd_;
    if (epoll_ctl(epfd_, EPOLL_CTL_ADD, wake_fd_, &ev) != 0) return sys_error("epoll_ctl", errno);

    // The segment.
    const std::string& mode = t_segment.get();
    if (mode != "auto" && mode != "memfd" && mode != "shm_open")
        return Status(base::Errc::invalid,
                      "shm: WANMPI_SHM_SEGMENT must be auto, memfd or "
                      "shm_open, not '" +
                          mode + "'");
    int fd = -1;
    if (mode != "shm_open") {
        fd = ::memfd_create("wanmpi-shm", MFD_CLOEXEC);
        if (fd < 0 && mode == "memfd") return sys_error("memfd_create", errno);
        if (fd >= 0 && mode == "auto") {
            // Can a process take fds from another with pidfd_getfd here (kernel >= 5.6, not
            // blocked by seccomp)? Try it on ourselves; peers of the same user get the same answer
            // unless ptrace rules differ, which connect() reports.
            int pfd = sys_pidfd_open(getpid());
            int dup = pfd >= 0 ? sys_pidfd_getfd(pfd, fd) : -1;
            int e = errno;
            if (dup >= 0) ::close(dup);
            if (pfd >= 0) ::close(pfd);
            if (dup < 0) {
                WANMPI_LOG(info, "shm: pidfd_getfd not usable (%s), using shm_open",
                           base::errno_text(e).c_str());
                ::close(fd);
                fd = -1;
            }
        }
    }
    if (fd < 0) {
        shm_name_ = "/wanmpi-" + detail::hex64(job_hash_) + "-" + std::to_string(rank_);
        fd = ::shm_open(shm_name_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 && errno == EEXIST) {
            // A stale object of an earlier job with the same hash (it crashed): replace it.
            ::shm_unlink(shm_name_.c_str());
            fd = ::shm_open(shm_name_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        }
        if (fd < 0) {
            int e = errno;
            shm_name_.clear();
            return sys_error("shm_open", e);
        }
    }
    memfd_ = fd;
    if (::ftruncate(fd, off_t(seg_len_)) != 0) return sys_error("ftruncate segment", errno);
    void* m = ::mmap(nullptr, seg_len_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) return sys_error("mmap segment", errno);
    seg_ = static_cast<uint8_t*>(m);
    my_hdr_ = reinterpret_cast<SegHeader*>(seg_);
    my_hdr_->magic = kMagic;
    my_hdr_->version = kVersion;
    my_hdr_->rank = rank_;
    my_hdr_->pid = getpid();
    my_hdr_->job_hash = job_hash_;
    my_hdr_->ring_size = ring_size_;
    my_hdr_->slot_stride = stride_;
    my_hdr_->nslots = nslots_;
    my_hdr_->expected_mappers = uint32_t(rx_.size());
    {
        int q = int(::syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0));
        // On an oversubscribed host ranks sleep on almost every message, and a membarrier
        // per sleep (a syscall plus an IPI to every CPU running a rank) costs more than the
        // fence it saves each sender: use fences there.
        membarrier_ =
            job.local_ranks <= job.cores &&
            q > 0 && (q & MEMBARRIER_CMD_GLOBAL_EXPEDITED) && t_membarrier.get() &&
            ::syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0;
        my_hdr_->membarrier = membarrier_ ? 1 : 0;
    }
    my_hdr_->seg_len = seg_len_;
    {
        int64_t pf = t_prefault.get();
        prefault_ = pf < 0 || (pf > 0 && job.local_ranks <= pf);
    }
    for (Peer* p : rx_) {
        uint8_t* slot = seg_ + kPage + uint64_t(p->local) * stride_;
        prefault(slot, stride_);
        p->in_ctrl = reinterpret_cast<RingCtrl*>(slot);
        p->in_data = slot + kPage;
        p->in_size = ring_size_;
        p->in_mask = ring_size_ - 1;
    }

    // KVS value: version:pid:m:fd|s:name:seg_len:wake_name:probe_addr(hex)
    std::string v = "1:" + std::to_string(getpid()) + ":" +
                    (shm_name_.empty() ? "m:" + std::to_string(fd) : "s:" + shm_name_) + ":" +
                    std::to_string(seg_len_) + ":" + wake_name + ":" +
                    detail::hex64(reinterpret_cast<uint64_t>(&my_hdr_->magic));
    return kvs.put("shm-" + std::to_string(rank_), v);
}

Status ShmTransport::map_peer(Peer& p, const std::string& value) {
    std::string who = "rank " + std::to_string(p.rank);
    auto bad = [&](const std::string& why) {
        return Status(base::Errc::fatal, "shm: " + who + ": " + why);
    };
    auto f = split(value, ':');
    uint64_t pid = 0, seg_len = 0, probe = 0;
    if (f.size() != 7 || f[0] != "1" || !parse_u64(f[1], pid) || (f[2] != "m" && f[2] != "s") ||
        !parse_u64(f[4], seg_len) || !parse_u64(f[6], probe, 16) || f[5].empty() ||
        f[5].size() > sizeof(sockaddr_un::sun_path) - 2)
        return bad("malformed address '" + value + "'");
    p.pid = pid_t(pid);
    who += " (pid " + std::to_string(pid) + ")";
    // The peer died during start-up (core's last fence keeps a live peer in MPI_Init until we
    // are done here): say so, and nothing about settings. Its shm_open name, if any, goes too:
    // the owner would have unlinked it at exit, had it exited normally.
    auto exited = [&] {
        if (f[2] == "s") ::shm_unlink(f[3].c_str());
        return Status(base::Errc::peer_failed,
                      "shm: " + detail::shm_attach_error(who, true, 0, "", 0));
    };
    int open_err = 0;
    p.pidfd = sys_pidfd_open(p.pid);
    if (p.pidfd < 0) {
        open_err = errno;
        if (open_err == ESRCH) return exited();
        WANMPI_LOG(warn, "shm: pidfd_open(%d): %s; exits of local peers will not be noticed",
                   int(p.pid), base::errno_text(open_err).c_str());
    }
    int fd = -1;
    if (f[2] == "m") {
        uint64_t remote_fd;
        if (!parse_u64(f[3], remote_fd)) return bad("malformed fd in '" + value + "'");
        int getfd_err = open_err;  // without a pidfd, why there is none
        if (p.pidfd >= 0) {
            fd = sys_pidfd_getfd(p.pidfd, int(remote_fd));
            if (fd < 0) getfd_err = errno;
        }
        if (fd < 0) {
            std::string path = "/proc/" + std::to_string(pid) + "/fd/" + f[3];
            fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
            if (fd < 0) {
                int proc_err = errno;
                bool gone = getfd_err == ESRCH || proc_err == ESRCH ||
                            pidfd_exited(p.pidfd, getfd_err == EBADF ? 100 : 0) ||
                            (p.pidfd < 0 && ::kill(p.pid, 0) != 0 && errno == ESRCH);
                if (gone) return exited();
                return Status(base::Errc::fatal,
                              "shm: " + detail::shm_attach_error(who, false, getfd_err, path,
                                                                 proc_err));
            }
        }
    } else {
        fd = ::shm_open(f[3].c_str(), O_RDWR | O_CLOEXEC, 0);
        if (fd < 0) {
            int e = errno;
            if (pidfd_exited(p.pidfd, 0)) return exited();
            return bad("shm_open " + f[3] + ": " + base::errno_text(e));
        }
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || uint64_t(st.st_size) < seg_len || seg_len < 2 * kPage) {
        ::close(fd);
        return bad("shared-memory segment has the wrong size");
    }
    void* m = ::mmap(nullptr, seg_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int e = errno;
    ::close(fd);
    if (m == MAP_FAILED) return bad("mmap: " + base::errno_text(e));
    p.map = m;
    p.map_len = seg_len;
    auto* h = static_cast<SegHeader*>(m);
    if (h->magic != kMagic || h->version != kVersion)
        return bad("segment is not a wanmpi shm segment of this version");
    if (h->rank != p.rank || h->pid != int64_t(pid) || h->job_hash != job_hash_)
        return bad("segment belongs to another process or job (pid reused?)");
    if (h->nslots != nslots_ || h->ring_size < 64 * 1024 || (h->ring_size & (h->ring_size - 1)) ||
        h->slot_stride != kPage + h->ring_size || h->seg_len != seg_len ||
        kPage + uint64_t(h->nslots) * h->slot_stride > seg_len)
        return bad("segment geometry does not match this host's rank count");
    // A shm_open segment outlives its owner, so a peer that died a moment ago maps fine: report
    // it here, as a start-up failure, rather than as a death at its first message.
    if (pidfd_exited(p.pidfd, 0)) return exited();
    if (f[2] == "s") {
        uint32_t expected = h->expected_mappers;
        if (aref(h->mapped).fetch_add(1, std::memory_order_acq_rel) + 1 == expected)
            ::shm_unlink(f[3].c_str());  // last one in: the name is no longer needed
    }
    p.out_seg = h;
    uint8_t* slot = static_cast<uint8_t*>(m) + kPage + uint64_t(my_local_) * h->slot_stride;
    prefault(slot, h->slot_stride);
    p.out_ctrl = reinterpret_cast<RingCtrl*>(slot);
    p.out_data = slot + kPage;
    p.out_size = h->ring_size;
    p.out_mask = h->ring_size - 1;
    uint64_t max_rec = p.out_size / 4;
    p.max_single = max_rec - kFramePrefix;
    p.max_cont = max_rec - kContPrefix;
    p.cheap = membarrier_ && h->membarrier == 1;
    p.wake.sun_family = AF_UNIX;
    std::memcpy(p.wake.sun_path + 1, f[5].data(), f[5].size());
    p.wake_len = socklen_t(offsetof(sockaddr_un, sun_path) + 1 + f[5].size());
    if (p.pidfd >= 0) {
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = p.pidfd;
        if (epoll_ctl(epfd_, EPOLL_CTL_ADD, p.pidfd, &ev) != 0)
            return bad("epoll_ctl pidfd: " + base::errno_text(errno));
    }
    if (cma_ok_) {
        // Probe single-copy reads on this peer: read its header's magic through CMA.
        uint64_t got = 0;
        iovec l{&got, sizeof got}, r{reinterpret_cast<void*>(probe), sizeof got};
        ssize_t n = ::process_vm_readv(p.pid, &l, 1, &r, 1, 0);
        if (n < 0 && errno == ESRCH) return exited();  // not a reason to give up CMA for all
        if (n != ssize_t(sizeof got) || got != kMagic) {
            WANMPI_LOG(info,
                       "shm: single-copy reads from %s not possible (%s); large messages "
                       "go through the rings",
                       who.c_str(), n < 0 ? base::errno_text(errno).c_str() : "short read");
            cma_ok_ = false;
        }
    }
    return Status::OK();
}

Status ShmTransport::connect(base::Kvs& kvs) {
    cma_ok_ = t_cma.get();
    max_inline_ = uint64_t(std::max<int64_t>(0, t_max_inline.get()));
    for (Peer* p : rx_) {
        auto v = kvs.get("shm-" + std::to_string(p->rank));
        if (!v)
            return Status(base::Errc::fatal,
                          "shm: no address for rank " + std::to_string(p->rank) + " in the KVS");
        Status st = map_peer(*p, *v);
        if (!st) return st;
        max_inline_ = std::min(max_inline_, p->max_single);
    }
    if (rx_.empty()) cma_ok_ = false;
    return Status::OK();
}

void ShmTransport::finalize() {
    // Core has quiesced, so queues should be empty; give queued data one more chance, but never
    // wait here: the receivers are finalizing too and no longer consume.
    if (nqueued_) {
        for (Peer* p : rx_)
            if (!p->q.empty()) push(*p);
        if (nqueued_)
            WANMPI_LOG(debug, "shm: finalize with sends still queued for %d peers", nqueued_);
    }
    if (my_hdr_) aref(my_hdr_->finalized).store(1, std::memory_order_release);
    cleanup();
}

void ShmTransport::cleanup() {
    for (auto& p : owned_) {
        if (p->pidfd >= 0) ::close(p->pidfd);
        p->pidfd = -1;
        if (p->map) ::munmap(p->map, p->map_len);
        p->map = nullptr;
        p->state = p->state == Peer::ok ? Peer::gone : p->state;
    }
    rx_.clear();
    if (seg_) ::munmap(seg_, seg_len_);
    seg_ = nullptr;
    my_hdr_ = nullptr;
    if (memfd_ >= 0) ::close(memfd_);
    memfd_ = -1;
    if (!shm_name_.empty()) ::shm_unlink(shm_name_.c_str());
    shm_name_.clear();
    if (wake_fd_ >= 0) ::close(wake_fd_);
    wake_fd_ = -1;
    if (epfd_ >= 0) ::close(epfd_);
    epfd_ = -1;
    nqueued_ = 0;
}

Status ShmTransport::get(int peer, uint64_t remote_addr, void* local, uint64_t len) {
    if (unsigned(peer) >= peers_.size() || !peers_[peer])
        return Status(base::Errc::invalid,
                      "shm: get from rank " + std::to_string(peer) + ", which is not a local peer");
    if (!cma_ok_) return Status(base::Errc::invalid, "shm: single-copy reads are not available");
    Peer& p = *peers_[peer];
    uint64_t done = 0;
    while (done < len) {
        size_t n = size_t(std::min<uint64_t>(len - done, cma_chunk_));
        iovec l{static_cast<uint8_t*>(local) + done, n};
        iovec r{reinterpret_cast<void*>(remote_addr + done), n};
        ssize_t got = ::process_vm_readv(p.pid, &l, 1, &r, 1, 0);
        if (got < 0) {
            int e = errno;
            if (e == EINTR) continue;
            std::string what = "shm: read of " + std::to_string(len) + " bytes from rank " +
                               std::to_string(peer) + " (pid " + std::to_string(p.pid) +
                               "): " + base::errno_text(e);
            if (e == ESRCH) return Status(base::Errc::peer_failed, what, e);
            if (e == EFAULT) return Status(base::Errc::invalid, what, e);
            return Status(base::Errc::io_error, what, e);
        }
        if (got == 0)
            return Status(base::Errc::io_error,
                          "shm: read from rank " + std::to_string(peer) + " made no progress");
        done += uint64_t(got);
    }
    return Status::OK();
}

}  // namespace shm_impl


namespace detail {

std::string shm_attach_error(const std::string& who, bool exited, int getfd_errno,
                             const std::string& proc_path, int proc_errno) {
    if (exited)
        return who +
               " exited during start-up, before this rank had attached its shared memory (the "
               "launcher reports how it ended)";
    std::string s = who + ": cannot take its shared-memory fd (pidfd_getfd: " +
                    base::errno_text(getfd_errno) + ", " + proc_path + ": " +
                    base::errno_text(proc_errno) + ")";
    // The hint is for a kernel that refuses to hand over another process's fd (ptrace rules,
    // seccomp, no pidfd_getfd): shm_open needs none of that. For anything else (EMFILE, a
    // bad fd number) it would send the user after a setting that changes nothing.
    auto refused = [](int e) { return e == EPERM || e == EACCES || e == ENOSYS; };
    if (refused(getfd_errno) || refused(proc_errno))
        s += "; this host does not let a process take another's fds (ptrace rules such as "
             "kernel.yama.ptrace_scope, seccomp, or a kernel before 5.6): try "
             "WANMPI_SHM_SEGMENT=shm_open";
    return s;
}

}  // namespace detail

std::unique_ptr<Transport> make_shm_transport() {
    return std::make_unique<shm_impl::ShmTransport>();
}

}  // namespace wanmpi::transport
