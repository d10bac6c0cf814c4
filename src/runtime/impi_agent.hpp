// The client side of the IMPI start-up (../shared/IMPI.md §3): a cluster's agent connects to
// impi-server (or to an impi-relay, which speaks the same protocol), authenticates, joins with
// its client rank, sends the 14 COLL labels, DONE, and collates the replies into the global Job.
//
// Lifecycle: start() once (blocking, bounded by the configured timeouts); then the server
// connection stays open for the whole run: watch server_fd() for readability and call
// poll_server() when it is readable (or now and then; startup() does so while the agent's rank
// is in the host-to-host dance); a closed connection before our FINI means another cluster
// died, or the server did. fini() sends FINI once every proc of this cluster has finished, and
// stops watching (server_fd() then returns -1), but the socket stays
// open until the Agent is destroyed: keep the Agent until the process exits, so that the server
// reads FINI before it sees the close. Destroying an Agent without fini() closes the socket,
// and the server then takes the whole job down: that is how a dying cluster tells the others.
// Threading: one Agent is used by one thread at a time; separate Agents are independent.
//
// Authentication, as GridMPI users know it: IMPI_AUTH_NONE (any value) offers method NONE,
// IMPI_AUTH_KEY=<decimal 64-bit> offers KEY with that key; both may be set (the server picks).
// With neither, wanmpi offers NONE (impi-server's default is to accept NONE then too). With a
// job secret (WANMPI_JOB_SECRET_FILE, docs/security.md) it offers wanmpi's mutual
// challenge-response instead, which the server prefers.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "base/socket.hpp"
#include "base/status.hpp"
#include "runtime/impi_tables.hpp"
#include "wanlink/secret.hpp"

namespace wanmpi::impi {

struct AuthConfig {
    bool none = true;        // offer IMPI_AUTH_NONE
    bool key = false;        // offer IMPI_AUTH_KEY ...
    uint64_t key_value = 0;  // ... with this key
    // With a job secret, wanmpi's challenge-response method (wanlink/handshake.hpp) is offered
    // and NONE only if IMPI_AUTH_NONE is set explicitly.
    wanlink::Secret secret;
};
// From IMPI_AUTH_NONE / IMPI_AUTH_KEY (also WANMPI_IMPI_AUTH_NONE / _KEY) and the job secret.
// Fails on a key that is not a decimal 64-bit number, or a secret file that is not safe.
base::Status auth_from_env(AuthConfig* out);

struct AgentConfig {
    int client = 0;              // our client rank, 0..31 (mpirun -client ID)
    std::string server;          // "addr:port" of impi-server or impi-relay
    AuthConfig auth;
    int64_t connect_timeout_ms = 30000;   // keep retrying a refused connect this long
    int64_t startup_timeout_ms = 300000;  // the whole start-up (waits for the other clusters)
};
// WANMPI_IMPI_CLIENT / WANMPI_IMPI_SERVER (set by mpirun -client), the auth variables, and
// WANMPI_IMPI_CONNECT_TIMEOUT / WANMPI_IMPI_STARTUP_TIMEOUT (seconds). *enabled is false (and
// the status ok) when this process is not part of an IMPI job (no WANMPI_IMPI_SERVER).
base::Status agent_config_from_env(AgentConfig* out, bool* enabled);

class Agent {
public:
    Agent() = default;
    ~Agent() = default;
    Agent(Agent&&) = default;
    Agent& operator=(Agent&&) = default;

    // AUTH -> IMPI -> 14 x COLL -> DONE, then collate(). On error the connection is closed (the
    // server then fails the job for everyone) and the message names the server and the step,
    // e.g. "IMPI server 10.0.0.1:7000 closed the connection while waiting for the other clients
    // to join (wrong IMPI_AUTH_KEY? ...)".
    base::Status start(const AgentConfig& cfg, const ClusterTables& tables, Job* job);

    // The server connection (nonblocking), -1 before start() and after fini(). Readable means
    // the server closed it or sent a notice: call poll_server().
    int server_fd() const { return finished_ ? -1 : fd_.get(); }
    // Whether poll_server() still needs calling: the connection is open, or this agent is
    // waiting for its impi-relay to come back (server_fd() is -1 then, and changes after).
    bool watching() const { return !finished_ && (fd_ || reconnecting_); }
    // Never blocks for long. ok: nothing happened (yet), or the agent waits for its impi-relay
    // to come back: a relay that said KEEP (impi_resume.hpp) and whose connection dropped
    // without a LOST notice is redialled (mutual HMAC AUTH, then BACK) for up to
    // WANMPI_WAN_RECONNECT_S; each call tries at most once (the connect and the exchange are
    // bounded by a few seconds). Otherwise Errc::peer_failed with a message that
    // names what was lost ("IMPI server ... closed the connection before our FINI: client 1 ...
    // died"). Once it has failed it keeps returning the same status.
    base::Status poll_server();
    // Sends FINI (the connection closes with the Agent). Idempotent; after a lost server it
    // returns that loss.
    base::Status fini();

    const std::string& server() const { return cfg_.server; }
    // The server's session nonce when the wanmpi method was used (all zero otherwise).
    const std::array<uint8_t, 32>& session() const { return session_; }
    int client() const { return cfg_.client; }

private:
    base::Status connect_server(int64_t deadline_ms);
    base::Status send_all(const uint8_t* p, size_t n, int64_t deadline_ms, const char* what);
    base::Status recv_all(uint8_t* p, size_t n, int64_t deadline_ms, const char* what);
    base::Status closed(const char* what, int err);
    base::Status come_back();  // one attempt to reconnect to the relay (see poll_server())

    AgentConfig cfg_;
    base::Fd fd_;
    bool finished_ = false;
    base::Status lost_;
    std::string notice_;  // bytes of a LOST notice received so far
    std::string server_name_ = "IMPI server";
    bool started_ = false;  // the start-up (DONE) is over
    std::array<uint8_t, 32> session_{};  // for messages; "impi-relay ADDR" behind one
    // impi-relay restarts: the relay said KEEP; while reconnecting_, since when, why, and when
    // to try next. fini_sent_: FINI went out (a relay that comes back passes it on in BACK).
    bool hmac_ = false;
    bool keep_ = false;
    bool reconnecting_ = false;
    bool fini_sent_ = false;
    int64_t away_since_ = 0, next_try_ = 0, backoff_ = 10;
    std::string away_why_;
};

}  // namespace wanmpi::impi
