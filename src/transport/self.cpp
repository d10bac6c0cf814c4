// 'self' transport: frames a rank sends to itself.
//
// One FIFO of entries, each either a copied frame (from try_send: the caller's buffers are free
// on return, so we copy) or a queued SendOp (post_send: delivered straight from the caller's
// buffer, then completed). Delivery happens in progress(), never inside a send, as the interface
// requires. Copied frames are recycled through a free list so steady-state sends do not allocate.
//
// Blocking: another thread may send to us while the progress thread sleeps on wait_fd() (the
// progress lock is released while sleeping), so a send made while `sleeping_` is set writes the
// eventfd; finish_sleep() drains it.
#include "transport/self.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <vector>

#include "base/log.hpp"
#include "transport/common.hpp"

namespace wanmpi::transport {
namespace {

struct Copied {
    uint8_t hdr[kHeaderSize];
    std::vector<uint8_t> data;
    uint64_t len = 0;
};

struct Entry {
    Copied* copy = nullptr;  // exactly one of copy / op is set
    SendOp* op = nullptr;
};

class SelfTransport final : public Transport {
public:
    ~SelfTransport() override {
        for (Copied* c : free_)
            delete c;
        for (Entry& e : q_)
            delete e.copy;
        if (efd_ >= 0) ::close(efd_);
    }
    const char* name() const override { return "self"; }

    Status init(const JobInfo& job, base::Kvs&, const std::vector<int>& peers) override {
        rank_ = job.rank;
        for (int p : peers)
            if (p != rank_)
                return Status(base::Errc::invalid,
                              "self transport asked to serve rank " + std::to_string(p));
        efd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (efd_ < 0)
            return Status(base::Errc::fatal, "self: eventfd: " + base::errno_text(errno), errno);
        return Status::OK();
    }
    Status connect(base::Kvs&) override { return Status::OK(); }
    void finalize() override {
        if (!q_.empty())
            WANMPI_LOG(debug, "self: finalize drops %zu undelivered frames", q_.size());
    }

    SendResult try_send(int peer, const uint8_t* hdr, const void* payload, uint64_t len) override {
        if (peer != rank_) return SendResult::failed;
        if (len > kMaxInline) return SendResult::would_block;
        Copied* c;
        if (!free_.empty()) {
            c = free_.back();
            free_.pop_back();
        } else {
            c = new Copied;
        }
        std::memcpy(c->hdr, hdr, kHeaderSize);
        c->len = len;
        if (len) {
            if (c->data.size() < len) c->data.resize(len);
            std::memcpy(c->data.data(), payload, len);
        }
        q_.push_back(Entry{c, nullptr});
        poke();
        return SendResult::done;
    }

    void post_send(int peer, SendOp* op) override {
        if (peer != rank_) {
            failed_.fail(op);
        } else {
            q_.push_back(Entry{nullptr, op});
        }
        poke();
    }

    int progress(RecvSink& sink) override {
        if (q_.empty() && failed_.empty()) return 0;
        int n = detail::run_completions(failed_);
        // Deliver only what is queued now: frames a callback sends to self wait for the next
        // call, so one progress() call is bounded.
        size_t todo = q_.size();
        while (todo-- > 0 && !q_.empty()) {
            Entry e = q_.front();
            q_.pop_front();
            const uint8_t* hdr = e.copy ? e.copy->hdr : e.op->hdr;
            const void* data =
                e.copy ? static_cast<const void*>(e.copy->data.data()) : e.op->payload;
            uint64_t len = e.copy ? e.copy->len : e.op->len;
            void* buf = sink.on_header(rank_, hdr, len);
            if (buf) {
                if (len) std::memcpy(buf, data, len);
                sink.on_frame(rank_, hdr, buf, len);
            } else {
                sink.on_frame(rank_, hdr, data, len);
            }
            if (e.copy) {
                if (e.copy->data.capacity() > kKeepCapacity)
                    std::vector<uint8_t>().swap(e.copy->data);
                free_.push_back(e.copy);
            } else {
                e.op->sent = e.op->len;
                if (e.op->on_complete) e.op->on_complete(e.op, true);
            }
            ++n;
        }
        return n;
    }

    int wait_fd() const override { return efd_; }
    void prepare_sleep() override {
        sleeping_.store(true, std::memory_order_seq_cst);
        // Frames already queued must not be slept on: core's final progress() finds them, but a
        // queue filled by another thread between that check and the sleep needs the eventfd.
        if (!q_.empty()) poke();
    }
    void finish_sleep() override {
        sleeping_.store(false, std::memory_order_relaxed);
        uint64_t v;
        while (::read(efd_, &v, sizeof v) > 0) {}
    }

    bool supports_get() const override { return true; }
    Status get(int peer, uint64_t remote_addr, void* local, uint64_t len) override {
        if (peer != rank_) return Status(base::Errc::invalid, "self: get from another rank");
        if (len) std::memmove(local, reinterpret_cast<const void*>(remote_addr), len);
        return Status::OK();
    }
    uint64_t max_inline() const override { return kMaxInline; }

private:
    static constexpr uint64_t kMaxInline = 64 * 1024;
    static constexpr size_t kKeepCapacity = 64 * 1024;

    void poke() {
        if (sleeping_.load(std::memory_order_seq_cst)) {
            uint64_t one = 1;
            ssize_t w = ::write(efd_, &one, sizeof one);
            (void)w;
        }
    }

    int rank_ = 0;
    int efd_ = -1;
    std::atomic<bool> sleeping_{false};
    std::deque<Entry> q_;
    std::vector<Copied*> free_;
    detail::OpQueue failed_;
};

}  // namespace

std::unique_ptr<Transport> make_self_transport() {
    return std::make_unique<SelfTransport>();
}

}  // namespace wanmpi::transport
