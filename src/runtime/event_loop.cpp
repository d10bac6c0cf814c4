#include "runtime/event_loop.hpp"

#include <cerrno>
#include <ctime>
#include <sys/epoll.h>
#include <unistd.h>
#include <vector>

namespace wanmpi::runtime {

EventLoop::EventLoop() { ep_ = epoll_create1(EPOLL_CLOEXEC); }

EventLoop::~EventLoop() {
    if (ep_ >= 0) ::close(ep_);
}

int64_t EventLoop::now_ms() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

bool EventLoop::add(int fd, uint32_t events, FdHandler h) {
    remove(fd);
    uint64_t id = next_id_++;
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = id;
    if (epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev) != 0) return false;
    entries_[id] = std::make_shared<Entry>(Entry{fd, events, std::move(h)});
    by_fd_[fd] = id;
    return true;
}

void EventLoop::modify(int fd, uint32_t events) {
    auto it = by_fd_.find(fd);
    if (it == by_fd_.end()) return;
    auto& e = entries_[it->second];
    if (e->events == events) return;
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = it->second;
    if (epoll_ctl(ep_, EPOLL_CTL_MOD, fd, &ev) == 0) e->events = events;
}

void EventLoop::remove(int fd) {
    auto it = by_fd_.find(fd);
    if (it == by_fd_.end()) return;
    epoll_ctl(ep_, EPOLL_CTL_DEL, fd, nullptr);
    entries_.erase(it->second);
    by_fd_.erase(it);
}

uint64_t EventLoop::after(int64_t delay_ms, TimerFn fn) {
    uint64_t id = next_id_++;
    timers_.emplace(now_ms() + (delay_ms < 0 ? 0 : delay_ms), Timer{id, std::move(fn)});
    return id;
}

void EventLoop::cancel(uint64_t timer_id) {
    for (auto it = timers_.begin(); it != timers_.end(); ++it) {
        if (it->second.id == timer_id) {
            timers_.erase(it);
            return;
        }
    }
}

int EventLoop::run_once(int64_t max_wait_ms) {
    int64_t wait = max_wait_ms;
    if (!timers_.empty()) {
        int64_t until = timers_.begin()->first - now_ms();
        if (until < 0) until = 0;
        if (wait < 0 || until < wait) wait = until;
    }
    epoll_event evs[64];
    int n = epoll_wait(ep_, evs, 64, static_cast<int>(wait));
    if (n < 0 && errno != EINTR) n = 0;
    for (int i = 0; i < n; ++i) {
        uint64_t key = evs[i].data.u64;  // epoll_event is packed: copy before binding a ref
        auto it = entries_.find(key);
        if (it == entries_.end()) continue;  // removed by an earlier handler in this batch
        std::shared_ptr<Entry> e = it->second;  // keep alive while its handler runs
        e->handler(evs[i].events);
    }
    int64_t now = now_ms();
    // Timers added by handlers below with zero delay run in the next round, not this one.
    std::vector<uint64_t> due;
    for (auto it = timers_.begin(); it != timers_.end() && it->first <= now; ++it)
        due.push_back(it->second.id);
    for (uint64_t id : due) {
        for (auto it = timers_.begin(); it != timers_.end(); ++it) {
            if (it->second.id == id) {
                TimerFn fn = std::move(it->second.fn);
                timers_.erase(it);
                fn();
                break;
            }
        }
    }
    return n;
}

}  // namespace wanmpi::runtime
