// Big-endian put/get helpers for wire formats (IMPI and our own). Never memcpy a struct onto the
// wire: encode field by field with these. Header-only, no state.
#pragma once

#include <cstddef>
#include <cstdint>

namespace wanmpi::base {

inline void put_be16(uint8_t* p, uint16_t v) { p[0] = uint8_t(v >> 8); p[1] = uint8_t(v); }
inline void put_be32(uint8_t* p, uint32_t v) {
    p[0] = uint8_t(v >> 24); p[1] = uint8_t(v >> 16); p[2] = uint8_t(v >> 8); p[3] = uint8_t(v);
}
inline void put_be64(uint8_t* p, uint64_t v) {
    put_be32(p, uint32_t(v >> 32));
    put_be32(p + 4, uint32_t(v));
}
inline uint16_t get_be16(const uint8_t* p) { return uint16_t((p[0] << 8) | p[1]); }
inline uint32_t get_be32(const uint8_t* p) {
    return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}
inline uint64_t get_be64(const uint8_t* p) {
    return (uint64_t(get_be32(p)) << 32) | get_be32(p + 4);
}

}  // namespace wanmpi::base
