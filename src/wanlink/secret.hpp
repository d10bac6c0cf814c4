// The job secret and the security level between clusters (issue 13, docs/security.md).
//
// Every cluster of a job and impi-server hold the same secret; it never crosses the network.
// From it come (handshake.hpp): the mutual challenge-response with impi-server (an AUTH method
// beside IMPI's NONE and KEY), the key every inter-cluster connection proves it holds before a
// single IMPI packet is accepted, and the pre-shared key of the TLS 1.3 sessions.
//
// Where it comes from: WANMPI_JOB_SECRET_FILE=PATH (the file's bytes, one trailing newline
// dropped; refused, as ssh refuses a private key, if the group or others may read it or it is
// not ours), else WANMPI_JOB_SECRET=... (visible in /proc/PID/environ to the same user: the
// file is the better choice). At least 16 bytes. The secret is never logged, never printed by
// wanmpi-info, and never put into the bootstrap key-value space.
//
// WANMPI_WAN_SECURITY=none|auth|tls (default: auth when a secret is given, else none) is what
// this cluster requires of its connections to other clusters; `tls` implies `auth`. Two
// clusters use the stricter of their settings. WANMPI_WAN_ALLOW_PLAIN=1 lets a cluster that
// requires auth or tls still talk to a plain IMPI peer (which can do neither) in clear text.
//
// Threading: thread-safe; the environment is read once per process.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.hpp"

namespace wanmpi::wanlink {

struct Secret {
    std::vector<uint8_t> bytes;  // empty: no secret given
    // "WANMPI_JOB_SECRET_FILE=/path" or "WANMPI_JOB_SECRET" (never the value itself)
    std::string source;
    bool set() const { return !bytes.empty(); }
};
// The secret from the environment (cached after the first successful call). ok with an empty
// secret when neither variable is set; an error that says what is wrong with the file or value.
base::Status job_secret(Secret* out);
// The checks of job_secret() on one file, for tests and for impi-server's -secret-file.
base::Status read_secret_file(const std::string& path, Secret* out);

enum class Security { none = 0, auth = 1, tls = 2 };
const char* security_name(Security s);  // "none", "auth", "tls"
// WANMPI_WAN_SECURITY, resolved against the secret: fails on an unknown name, or auth/tls
// without a secret (the message says how to give one).
base::Status wan_security(Security* out);
// WANMPI_WAN_ALLOW_PLAIN.
bool allow_plain();
// WANMPI_WAN_RECONNECT_S: how long a broken connection between clusters may take to come back
// before the job fails (0: no reconnect, a broken connection fails the job at once).
int64_t reconnect_ms();
// WANMPI_WAN_KEEPALIVE_S: a silent peer is declared lost after about this long (TCP
// keepalive); 0 leaves keepalive off.
int64_t keepalive_s();

}  // namespace wanmpi::wanlink
