// The 'self' transport; see self.cpp for its design. Use make_transport("self") (registry.hpp).
#pragma once

#include <memory>

#include "transport/transport.hpp"

namespace wanmpi::transport {

std::unique_ptr<Transport> make_self_transport();

}  // namespace wanmpi::transport
