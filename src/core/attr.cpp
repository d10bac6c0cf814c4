// Attribute caching (issue 3 fills this in). Until keyvals exist there is nothing to copy/delete.
#include "core/attr.hpp"

namespace wanmpi::core {
int attr_comm_copy(Comm*, Comm*) { return MPI_SUCCESS; }
int attr_comm_delete_all(Comm*) { return MPI_SUCCESS; }
}  // namespace wanmpi::core
