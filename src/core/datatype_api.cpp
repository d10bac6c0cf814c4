// MPI datatype functions (issue 3 extends this file): queries on statuses and types.
#include <cstring>

#include "bindings/impl.hpp"
#include "core/datatype.hpp"
#include "core/engine.hpp"
#include "core/errors.hpp"

namespace wanmpi::impl {
using namespace wanmpi::core;

// ---- status and type queries ----------------------------------------------------------------
static int64_t status_bytes(const MPI_Status* st) {
    return int64_t(uint64_t(uint32_t(st->count_lo)) |
                   (uint64_t(uint32_t(st->count_hi_and_cancelled) & 0x7fffffffu) << 32));
}

int Get_count_c(const MPI_Status* status, MPI_Datatype dt, MPI_Count* count) {
    const Datatype* d = datatype_lookup(dt);
    if (!d) return raise(nullptr, make_error(MPI_ERR_TYPE, "invalid datatype 0x%x", unsigned(dt)));
    int64_t b = status_bytes(status);
    if (d->size == 0) *count = 0;
    else *count = (b % d->size) ? MPI_UNDEFINED : b / d->size;
    return MPI_SUCCESS;
}
int Get_count(const MPI_Status* status, MPI_Datatype dt, int* count) {
    MPI_Count c = 0;
    int rc = Get_count_c(status, dt, &c);
    if (rc == MPI_SUCCESS) *count = c > 0x7fffffff ? MPI_UNDEFINED : int(c);
    return rc;
}

// Basic elements: pair types (MPI_DOUBLE_INT, ...) hold two each.
int Get_elements_c(const MPI_Status* status, MPI_Datatype dt, MPI_Count* count) {
    const Datatype* d = datatype_lookup(dt);
    if (!d) return raise(nullptr, make_error(MPI_ERR_TYPE, "invalid datatype 0x%x", unsigned(dt)));
    int64_t b = status_bytes(status);
    if (d->size == 0) {
        *count = 0;
        return MPI_SUCCESS;
    }
    bool pair = (d->handle >= MPI_FLOAT_INT && d->handle <= MPI_LONG_DOUBLE_INT) ||
                d->handle == MPI_2INTEGER || d->handle == MPI_2REAL ||
                d->handle == MPI_2DOUBLE_PRECISION;
    if (!pair) {
        *count = (b % d->size) ? MPI_UNDEFINED : b / d->size;
        return MPI_SUCCESS;
    }
    int64_t first = d->size - 4;  // the value part; the index is an int
    if (d->handle == MPI_2INTEGER || d->handle == MPI_2REAL || d->handle == MPI_2DOUBLE_PRECISION)
        first = d->size / 2;
    int64_t full = b / d->size, rem = b % d->size;
    *count = full * 2 + (rem == 0 ? 0 : rem == first ? 1 : MPI_UNDEFINED);
    if (rem != 0 && rem != first) *count = MPI_UNDEFINED;
    return MPI_SUCCESS;
}
int Get_elements_x(const MPI_Status* status, MPI_Datatype dt, MPI_Count* count) {
    return Get_elements_c(status, dt, count);
}
int Get_elements(const MPI_Status* status, MPI_Datatype dt, int* count) {
    MPI_Count c = 0;
    int rc = Get_elements_c(status, dt, &c);
    if (rc == MPI_SUCCESS) *count = c > 0x7fffffff ? MPI_UNDEFINED : int(c);
    return rc;
}

int Status_set_elements_x(MPI_Status* status, MPI_Datatype dt, MPI_Count count) {
    const Datatype* d = datatype_lookup(dt);
    if (!d) return raise(nullptr, make_error(MPI_ERR_TYPE, "invalid datatype 0x%x", unsigned(dt)));
    if (count < 0) return raise(nullptr, make_error(MPI_ERR_COUNT, "negative count"));
    uint64_t b = uint64_t(count * d->size);
    status->count_lo = int(uint32_t(b));
    status->count_hi_and_cancelled = int((uint32_t(status->count_hi_and_cancelled) & 0x80000000u) |
                                         uint32_t((b >> 32) & 0x7fffffff));
    return MPI_SUCCESS;
}
int Status_set_elements(MPI_Status* status, MPI_Datatype dt, int count) {
    return Status_set_elements_x(status, dt, count);
}
int Status_set_cancelled(MPI_Status* status, int flag) {
    uint32_t v = uint32_t(status->count_hi_and_cancelled);
    status->count_hi_and_cancelled = int(flag ? (v | 0x80000000u) : (v & 0x7fffffffu));
    return MPI_SUCCESS;
}

int Type_size_x(MPI_Datatype dt, MPI_Count* size) {
    const Datatype* d = datatype_lookup(dt);
    if (!d) return raise(nullptr, make_error(MPI_ERR_TYPE, "invalid datatype 0x%x", unsigned(dt)));
    *size = d->size;
    return MPI_SUCCESS;
}
int Type_size(MPI_Datatype dt, int* size) {
    MPI_Count s = 0;
    int rc = Type_size_x(dt, &s);
    if (rc == MPI_SUCCESS) *size = int(s);
    return rc;
}
int Type_get_name(MPI_Datatype dt, char* name, int* resultlen) {
    const Datatype* d = datatype_lookup(dt);
    if (!d) return raise(nullptr, make_error(MPI_ERR_TYPE, "invalid datatype 0x%x", unsigned(dt)));
    size_t n = std::strlen(d->name);
    std::memcpy(name, d->name, n + 1);
    *resultlen = int(n);
    return MPI_SUCCESS;
}

}  // namespace wanmpi::impl
