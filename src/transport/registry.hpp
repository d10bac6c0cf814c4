// Transport registry: the explicit list of transports this build has (STYLE.md: no magic
// self-registration). Core calls make_transport() once per name in WANMPI_TRANSPORTS.
// Ownership: the caller owns the returned object; it is used from one thread at a time.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "transport/transport.hpp"

namespace wanmpi::transport {

// "self", "shm" or "tcp"; nullptr for an unknown name.
std::unique_ptr<Transport> make_transport(const std::string& name);

// Names make_transport() accepts, in the default preference order.
const std::vector<std::string>& transport_names();

}  // namespace wanmpi::transport
