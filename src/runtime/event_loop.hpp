// Single-threaded epoll event loop with one-shot timers, used by mpirun and wanmpi-proxy.
//
// Handlers run on the loop's thread. A handler may add or remove any fd or timer, including its
// own: entries are looked up by a unique id per registration, so an fd closed and reused inside
// one batch of events never reaches the old handler.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

namespace wanmpi::runtime {

class EventLoop {
public:
    using FdHandler = std::function<void(uint32_t events)>;
    using TimerFn = std::function<void()>;

    EventLoop();
    ~EventLoop();
    EventLoop(const EventLoop&) = delete;
    EventLoop& operator=(const EventLoop&) = delete;

    // Watch fd for `events` (EPOLLIN/EPOLLOUT...). Returns false with errno set (EPERM for
    // regular files, which epoll cannot watch). Re-adding a watched fd replaces its handler.
    bool add(int fd, uint32_t events, FdHandler h);
    void modify(int fd, uint32_t events);
    // Stop watching fd (call before closing it). No-op if not watched.
    void remove(int fd);
    bool watched(int fd) const { return by_fd_.count(fd) != 0; }

    // One-shot timer after delay_ms; returns an id for cancel().
    uint64_t after(int64_t delay_ms, TimerFn fn);
    void cancel(uint64_t timer_id);

    // Wait for events (at most max_wait_ms, -1: until an event or timer; 0: poll) and run their
    // handlers, then due timers. Returns how many fd events were handled.
    int run_once(int64_t max_wait_ms = -1);

    static int64_t now_ms();

private:
    struct Entry {
        int fd;
        uint32_t events;
        FdHandler handler;
    };
    int ep_ = -1;
    uint64_t next_id_ = 1;
    std::unordered_map<int, uint64_t> by_fd_;
    std::unordered_map<uint64_t, std::shared_ptr<Entry>> entries_;
    struct Timer {
        uint64_t id;
        TimerFn fn;
    };
    std::multimap<int64_t, Timer> timers_;
};

}  // namespace wanmpi::runtime
