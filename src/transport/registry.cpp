#include "transport/registry.hpp"

#include "transport/self.hpp"
#include "transport/shm.hpp"
#include "transport/tcp.hpp"

namespace wanmpi::transport {

std::unique_ptr<Transport> make_transport(const std::string& name) {
    if (name == "self") return make_self_transport();
    if (name == "shm") return make_shm_transport();
    if (name == "tcp") return make_tcp_transport();
    return nullptr;
}

const std::vector<std::string>& transport_names() {
    static const std::vector<std::string> names = {"self", "shm", "tcp"};
    return names;
}

}  // namespace wanmpi::transport
