// PMI-1 client: how a wanmpi rank finds its rank, size and job, and exchanges bootstrap
// key-value pairs with the other ranks through the process manager (wanmpi's mpirun, or MPICH's
// Hydra mpiexec, which speak the same wire protocol; see pmi_wire.hpp).
//
// Lifecycle: from_env() once in MPI_Init (it connects and runs init / get_maxes / get_my_kvsname /
// get_appnum / get_universe_size); then put() + fence() + get() as often as needed; finalize()
// once in MPI_Finalize (mpirun treats a rank that initialised PMI and exits without finalize() as
// failed); or abort() instead, after which the caller should _exit(code) — mpirun kills the job.
// The destructor only closes the connection.
//
// Environment, exactly as MPICH's simple PMI client reads it:
//   PMI_FD=n                 inherited connected socket; rank from PMI_RANK, size from PMI_SIZE
//                            (defaults 0 and 1)
//   PMI_PORT=host:port       connect over TCP; with PMI_ID=n, rank and size come from the server
//                            ("cmd=initack pmiid=n"), otherwise from PMI_RANK / PMI_SIZE
//   neither                  singleton: rank 0 of 1 with an in-process key-value space. If a PMIx
//                            launcher is detected (PMIX_RANK, OMPI_COMM_WORLD_SIZE, ...),
//                            from_env() fails instead of silently starting N singletons.
//
// Threading: not thread-safe; only the thread that runs MPI_Init/MPI_Finalize calls it.
// Every call blocks until the server answers; fence() blocks until every rank has called it.
// If mpirun dies, calls fail with Errc::link_failed (the socket reaches EOF), and fd() can be
// watched for that by a progress engine.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "base/kvs.hpp"
#include "base/status.hpp"
#include "runtime/pmi_wire.hpp"

namespace wanmpi::runtime {

class PmiClient final : public base::Kvs {
public:
    // Connects according to the environment. On failure returns nullptr and sets *err (if given)
    // to a message naming the variable or the server's complaint.
    static std::unique_ptr<PmiClient> from_env(base::Status* err);
    // Singleton client without looking at the environment (tests, tools).
    static std::unique_ptr<PmiClient> singleton();

    ~PmiClient() override;
    PmiClient(const PmiClient&) = delete;
    PmiClient& operator=(const PmiClient&) = delete;

    int rank() const override { return rank_; }
    int size() const override { return size_; }
    // key: 1..max_key_len() printable bytes without space, '=' or backslash;
    // value: 0..max_value_len() bytes without newline or NUL. Spaces survive wanmpi's mpirun and
    // MPICH >= 4.1, not Hydra 4.0 (Debian 12): keep values free of spaces to be portable.
    base::Status put(const std::string& key, const std::string& value) override;
    // PMI barrier: after it returns, every key put by any rank before its fence() is visible.
    // Fails (Errc::peer_failed) if the process manager reports that a rank exited instead.
    base::Status fence() override;
    // nullopt if the key does not exist, or on error (then last_error() says why).
    std::optional<std::string> get(const std::string& key) override;
    // Like get(), but tells "not found" (ok status, *found=false) from a failure.
    base::Status get(const std::string& key, std::string* value, bool* found);

    // Name of the job's key-value space; unique per job (mpirun: "kvs_<pid>_<random>"; Hydra:
    // "kvs_<pid>_<n>_<random>_<host>"; singleton: "singleton_<pid>_<random>"). Only
    // [A-Za-z0-9_.-] characters are guaranteed for names made by wanmpi; Hydra's contain the host
    // name.
    const std::string& kvsname() const { return kvsname_; }
    int appnum() const { return appnum_; }
    // Processes the job may grow to; -1 if the process manager does not know (Hydra says -1).
    int universe_size() const { return universe_size_; }
    // Longest key / value that survives the process manager. PMI's *_max values count the
    // terminating NUL (Hydra 4.0 advertises vallen_max=1024 and keeps 1023 bytes), so these are
    // one less: 1023 under Hydra, 16383 under wanmpi's mpirun.
    size_t max_key_len() const { return keylen_max_ - 1; }
    size_t max_value_len() const { return vallen_max_ - 1; }
    bool is_singleton() const { return singleton_; }
    // The connection to the process manager (-1 for singletons and after finalize()).
    int fd() const { return fd_; }
    const base::Status& last_error() const { return last_error_; }

    // Tell the process manager that this process is aborting the job with `code` and a message
    // (spaces allowed; sent escaped). Does not wait and does not exit: the caller prints what it
    // wants and then calls _exit(code); mpirun prints the message and kills every rank.
    base::Status abort(int code, const std::string& msg);
    // Tell the process manager this rank is done; closes the connection. Idempotent.
    base::Status finalize();

private:
    PmiClient() = default;
    base::Status connect_and_init();
    base::Status send(const PmiMsg& m);
    base::Status recv(PmiMsg* m);
    // Send q and read the reply, which must be `expect`; a non-zero rc= in it is an error.
    base::Status call(const PmiMsg& q, const char* expect, PmiMsg* reply);
    base::Status fail(base::Status s);

    int fd_ = -1;
    bool singleton_ = false;
    bool finalized_ = false;
    int rank_ = 0;
    int size_ = 1;
    int appnum_ = 0;
    int universe_size_ = 1;
    size_t kvsname_max_ = 256;
    size_t keylen_max_ = 256;
    size_t vallen_max_ = 1024;
    std::string kvsname_;
    std::map<std::string, std::string> local_;  // singleton key-value space
    LineBuffer in_{1 << 20};
    base::Status last_error_;
};

}  // namespace wanmpi::runtime
