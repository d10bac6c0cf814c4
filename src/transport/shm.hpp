// The 'shm' transport; see shm_impl.hpp for its design. Use make_transport("shm") (registry.hpp).
#pragma once

#include <memory>
#include <string>

#include "transport/transport.hpp"

namespace wanmpi::transport {

std::unique_ptr<Transport> make_shm_transport();

namespace detail {
// Why connect() could not attach a local peer's segment at start-up, as it reports it (here so
// that tests can check the wording). `who` names the peer ("rank 3 (pid 1234)"). A peer that
// `exited` is named as the cause; otherwise both errnos are given (pidfd_getfd, then opening
// `proc_path`), with the hint to use WANMPI_SHM_SEGMENT=shm_open only if one of them says the
// kernel refused (EPERM, EACCES, ENOSYS), the one case where that setting helps.
std::string shm_attach_error(const std::string& who, bool exited, int getfd_errno,
                             const std::string& proc_path, int proc_errno);
}  // namespace detail

}  // namespace wanmpi::transport
