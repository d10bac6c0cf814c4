// The 'tcp' transport; see tcp.cpp for its design. Use make_transport("tcp") (registry.hpp).
#pragma once

#include <memory>

#include "transport/transport.hpp"

namespace wanmpi::transport {

std::unique_ptr<Transport> make_tcp_transport();

}  // namespace wanmpi::transport
