// The 'shm' transport; see shm.cpp for its design. Use make_transport("shm") (registry.hpp).
#pragma once

#include <memory>

#include "transport/transport.hpp"

namespace wanmpi::transport {

std::unique_ptr<Transport> make_shm_transport();

}  // namespace wanmpi::transport
