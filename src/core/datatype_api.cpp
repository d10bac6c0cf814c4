// MPI datatype queries: counts and elements of statuses, sizes, extents, envelope and contents,
// names, addresses. Constructors are in dt_ctor.cpp, pack/unpack in dt_pack.cpp.
//
// Functions marked nolock in functions/datatype.txt (the status and size queries) only read
// type fields that never change after construction, through the lock-free datatype_get().
#include <climits>
#include <cstring>

#include "bindings/impl.hpp"
#include "core/datatype.hpp"
#include "core/errors.hpp"

namespace wanmpi::impl {
using namespace wanmpi::core;

#define GET_TYPE(d, h)             \
    Datatype* d = datatype_get(h); \
    if (!d) return raise(nullptr, datatype_error(h))
#define CHECK(cond, cls, ...) \
    if (!(cond)) return raise(nullptr, make_error(cls, __VA_ARGS__))

static int to_int(int64_t v) { return (v > INT_MAX || v < INT_MIN) ? MPI_UNDEFINED : int(v); }
static MPI_Aint to_aint(int64_t v) { return v; }

// ---- status queries -----------------------------------------------------------------------------
static int64_t status_bytes(const MPI_Status* st) {
    return int64_t(uint64_t(uint32_t(st->count_lo)) |
                   (uint64_t(uint32_t(st->count_hi_and_cancelled) & 0x7fffffffu) << 32));
}

int Get_count_c(const MPI_Status* status, MPI_Datatype dt, MPI_Count* count) {
    CHECK(status && status != MPI_STATUS_IGNORE, MPI_ERR_ARG,
          "status is NULL or MPI_STATUS_IGNORE");
    CHECK(count, MPI_ERR_ARG, "count is NULL");
    GET_TYPE(d, dt);
    int64_t b = status_bytes(status);
    if (d->size == 0)
        *count = 0;
    else
        *count = (b % d->size) ? MPI_UNDEFINED : b / d->size;
    return MPI_SUCCESS;
}
int Get_count(const MPI_Status* status, MPI_Datatype dt, int* count) {
    MPI_Count c = 0;
    int rc = Get_count_c(status, dt, &c);
    if (rc == MPI_SUCCESS) *count = to_int(c);
    return rc;
}

// Basic elements received: pair types hold two each; MPI_UNDEFINED if the data ends inside a
// basic element.
int Get_elements_c(const MPI_Status* status, MPI_Datatype dt, MPI_Count* count) {
    CHECK(status && status != MPI_STATUS_IGNORE, MPI_ERR_ARG,
          "status is NULL or MPI_STATUS_IGNORE");
    CHECK(count, MPI_ERR_ARG, "count is NULL");
    GET_TYPE(d, dt);
    int64_t n = datatype_elements(*d, status_bytes(status));
    *count = n < 0 ? MPI_UNDEFINED : n;
    return MPI_SUCCESS;
}
int Get_elements_x(const MPI_Status* status, MPI_Datatype dt, MPI_Count* count) {
    return Get_elements_c(status, dt, count);
}
int Get_elements(const MPI_Status* status, MPI_Datatype dt, int* count) {
    MPI_Count c = 0;
    int rc = Get_elements_c(status, dt, &c);
    if (rc == MPI_SUCCESS) *count = to_int(c);
    return rc;
}

// `count` basic elements of a sequence of `dt` (so that MPI_Get_elements on the same type
// returns `count`, and MPI_Get_count the whole elements they make).
int Status_set_elements_c(MPI_Status* status, MPI_Datatype dt, MPI_Count count) {
    CHECK(status && status != MPI_STATUS_IGNORE, MPI_ERR_ARG,
          "status is NULL or MPI_STATUS_IGNORE");
    GET_TYPE(d, dt);
    CHECK(count >= 0, MPI_ERR_COUNT, "negative count %lld", (long long)count);
    uint64_t b = uint64_t(datatype_bytes_of_elements(*d, count));
    status->count_lo = int(uint32_t(b));
    status->count_hi_and_cancelled = int((uint32_t(status->count_hi_and_cancelled) & 0x80000000u) |
                                         uint32_t((b >> 32) & 0x7fffffff));
    return MPI_SUCCESS;
}
int Status_set_elements_x(MPI_Status* status, MPI_Datatype dt, MPI_Count count) {
    return Status_set_elements_c(status, dt, count);
}
int Status_set_elements(MPI_Status* status, MPI_Datatype dt, int count) {
    return Status_set_elements_c(status, dt, count);
}
int Status_set_cancelled(MPI_Status* status, int flag) {
    CHECK(status && status != MPI_STATUS_IGNORE, MPI_ERR_ARG,
          "status is NULL or MPI_STATUS_IGNORE");
    uint32_t v = uint32_t(status->count_hi_and_cancelled);
    status->count_hi_and_cancelled = int(flag ? (v | 0x80000000u) : (v & 0x7fffffffu));
    return MPI_SUCCESS;
}

// ---- size and extents ---------------------------------------------------------------------------
int Type_size_c(MPI_Datatype dt, MPI_Count* size) {
    GET_TYPE(d, dt);
    CHECK(size, MPI_ERR_ARG, "size is NULL");
    *size = d->size;
    return MPI_SUCCESS;
}
int Type_size_x(MPI_Datatype dt, MPI_Count* size) { return Type_size_c(dt, size); }
int Type_size(MPI_Datatype dt, int* size) {
    MPI_Count s = 0;
    CHECK(size, MPI_ERR_ARG, "size is NULL");
    int rc = Type_size_c(dt, &s);
    if (rc == MPI_SUCCESS) *size = to_int(s);
    return rc;
}

int Type_get_extent_c(MPI_Datatype dt, MPI_Count* lb, MPI_Count* extent) {
    GET_TYPE(d, dt);
    CHECK(lb && extent, MPI_ERR_ARG, "lb or extent is NULL");
    *lb = d->lb;
    *extent = d->extent;
    return MPI_SUCCESS;
}
int Type_get_extent_x(MPI_Datatype dt, MPI_Count* lb, MPI_Count* extent) {
    return Type_get_extent_c(dt, lb, extent);
}
int Type_get_extent(MPI_Datatype dt, MPI_Aint* lb, MPI_Aint* extent) {
    GET_TYPE(d, dt);
    CHECK(lb && extent, MPI_ERR_ARG, "lb or extent is NULL");
    *lb = to_aint(d->lb);
    *extent = to_aint(d->extent);
    return MPI_SUCCESS;
}
int Type_get_true_extent_c(MPI_Datatype dt, MPI_Count* true_lb, MPI_Count* true_extent) {
    GET_TYPE(d, dt);
    CHECK(true_lb && true_extent, MPI_ERR_ARG, "true_lb or true_extent is NULL");
    *true_lb = d->true_lb;
    *true_extent = d->true_ub - d->true_lb;
    return MPI_SUCCESS;
}
int Type_get_true_extent_x(MPI_Datatype dt, MPI_Count* true_lb, MPI_Count* true_extent) {
    return Type_get_true_extent_c(dt, true_lb, true_extent);
}
int Type_get_true_extent(MPI_Datatype dt, MPI_Aint* true_lb, MPI_Aint* true_extent) {
    MPI_Count l = 0, e = 0;
    CHECK(true_lb && true_extent, MPI_ERR_ARG, "true_lb or true_extent is NULL");
    int rc = Type_get_true_extent_c(dt, &l, &e);
    if (rc == MPI_SUCCESS) *true_lb = l, *true_extent = e;
    return rc;
}
// MPI-1 forms (removed in MPI-3; kept for old codes).
int Type_extent(MPI_Datatype dt, MPI_Aint* extent) {
    GET_TYPE(d, dt);
    CHECK(extent, MPI_ERR_ARG, "extent is NULL");
    *extent = d->extent;
    return MPI_SUCCESS;
}
int Type_lb(MPI_Datatype dt, MPI_Aint* displacement) {
    GET_TYPE(d, dt);
    CHECK(displacement, MPI_ERR_ARG, "displacement is NULL");
    *displacement = d->lb;
    return MPI_SUCCESS;
}
int Type_ub(MPI_Datatype dt, MPI_Aint* displacement) {
    GET_TYPE(d, dt);
    CHECK(displacement, MPI_ERR_ARG, "displacement is NULL");
    *displacement = d->ub;
    return MPI_SUCCESS;
}

// ---- envelope and contents ----------------------------------------------------------------------
int Type_get_envelope_c(MPI_Datatype dt, MPI_Count* num_integers, MPI_Count* num_addresses,
                        MPI_Count* num_large_counts, MPI_Count* num_datatypes, int* combiner) {
    GET_TYPE(d, dt);
    CHECK(num_integers && num_addresses && num_large_counts && num_datatypes && combiner,
          MPI_ERR_ARG, "NULL output argument");
    *num_integers = MPI_Count(d->ints.size());
    *num_addresses = MPI_Count(d->aints.size());
    *num_large_counts = MPI_Count(d->counts.size());
    *num_datatypes = MPI_Count(d->types.size());
    *combiner = d->combiner;
    return MPI_SUCCESS;
}
int Type_get_envelope(MPI_Datatype dt, int* num_integers, int* num_addresses, int* num_datatypes,
                      int* combiner) {
    GET_TYPE(d, dt);
    CHECK(num_integers && num_addresses && num_datatypes && combiner, MPI_ERR_ARG,
          "NULL output argument");
    CHECK(d->counts.empty(), MPI_ERR_TYPE,
          "datatype 0x%x was made with large counts: use MPI_Type_get_envelope_c", unsigned(dt));
    *num_integers = int(d->ints.size());
    *num_addresses = int(d->aints.size());
    *num_datatypes = int(d->types.size());
    *combiner = d->combiner;
    return MPI_SUCCESS;
}

static int get_contents(MPI_Datatype dt, int64_t max_i, int64_t max_a, int64_t max_c, int64_t max_d,
                        int* ints, MPI_Aint* aints, MPI_Count* counts, MPI_Datatype* types) {
    GET_TYPE(d, dt);
    CHECK(d->combiner != MPI_COMBINER_NAMED, MPI_ERR_TYPE,
          "%s is a named predefined datatype: it has no contents", d->name);
    CHECK(int64_t(d->ints.size()) <= max_i && int64_t(d->aints.size()) <= max_a &&
              int64_t(d->counts.size()) <= max_c && int64_t(d->types.size()) <= max_d,
          MPI_ERR_ARG,
          "arrays too small for the contents (need %zu integers, %zu addresses, %zu counts, %zu "
          "datatypes)",
          d->ints.size(), d->aints.size(), d->counts.size(), d->types.size());
    CHECK((d->ints.empty() || ints) && (d->aints.empty() || aints) &&
              (d->counts.empty() || counts) && (d->types.empty() || types),
          MPI_ERR_ARG, "NULL array argument");
    if (!d->ints.empty()) std::memcpy(ints, d->ints.data(), d->ints.size() * sizeof(int));
    if (!d->aints.empty()) std::memcpy(aints, d->aints.data(), d->aints.size() * sizeof(MPI_Aint));
    if (!d->counts.empty())
        std::memcpy(counts, d->counts.data(), d->counts.size() * sizeof(MPI_Count));
    for (size_t i = 0; i < d->types.size(); ++i) {
        types[i] = d->types[i];
        // Derived types come back as new references the caller frees (MPI 4.0 §5.1.13).
        datatype_retain(datatype_get(d->types[i]));
    }
    return MPI_SUCCESS;
}
int Type_get_contents_c(MPI_Datatype dt, MPI_Count max_integers, MPI_Count max_addresses,
                        MPI_Count max_large_counts, MPI_Count max_datatypes,
                        int array_of_integers[], MPI_Aint array_of_addresses[],
                        MPI_Count array_of_large_counts[], MPI_Datatype array_of_datatypes[]) {
    return get_contents(dt, max_integers, max_addresses, max_large_counts, max_datatypes,
                        array_of_integers, array_of_addresses, array_of_large_counts,
                        array_of_datatypes);
}
int Type_get_contents(MPI_Datatype dt, int max_integers, int max_addresses, int max_datatypes,
                      int array_of_integers[], MPI_Aint array_of_addresses[],
                      MPI_Datatype array_of_datatypes[]) {
    return get_contents(dt, max_integers, max_addresses, 0, max_datatypes, array_of_integers,
                        array_of_addresses, nullptr, array_of_datatypes);
}

// ---- names --------------------------------------------------------------------------------------
int Type_set_name(MPI_Datatype dt, const char* type_name) {
    GET_TYPE(d, dt);
    CHECK(type_name, MPI_ERR_ARG, "type_name is NULL");
    std::snprintf(d->name, sizeof d->name, "%s", type_name);
    return MPI_SUCCESS;
}
int Type_get_name(MPI_Datatype dt, char* type_name, int* resultlen) {
    GET_TYPE(d, dt);
    CHECK(type_name && resultlen, MPI_ERR_ARG, "type_name or resultlen is NULL");
    size_t n = strnlen(d->name, sizeof d->name - 1);
    std::memcpy(type_name, d->name, n);
    type_name[n] = 0;
    *resultlen = int(n);
    return MPI_SUCCESS;
}

// ---- addresses ----------------------------------------------------------------------------------
int Get_address(const void* location, MPI_Aint* address) {
    CHECK(address, MPI_ERR_ARG, "address is NULL");
    *address = MPI_Aint(reinterpret_cast<uintptr_t>(location));
    return MPI_SUCCESS;
}
int Address(void* location, MPI_Aint* address) { return Get_address(location, address); }
MPI_Aint Aint_add(MPI_Aint base, MPI_Aint disp) {
    return MPI_Aint(uint64_t(base) + uint64_t(disp));
}
MPI_Aint Aint_diff(MPI_Aint addr1, MPI_Aint addr2) {
    return MPI_Aint(uint64_t(addr1) - uint64_t(addr2));
}

}  // namespace wanmpi::impl
