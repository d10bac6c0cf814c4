// The bootstrap key-value space as the library sees it (implemented by the PMI-1 client in
// src/runtime). Keys and values are short printable strings without spaces or '='.
// Collective semantics as in PMI-1: put() your keys, fence() (everyone), then get() anyone's.
// Called only from the thread that runs MPI_Init/MPI_Finalize.
#pragma once

#include <optional>
#include <string>

#include "base/status.hpp"

namespace wanmpi::base {

class Kvs {
public:
    virtual ~Kvs() = default;
    virtual int rank() const = 0;
    virtual int size() const = 0;
    virtual Status put(const std::string& key, const std::string& value) = 0;
    virtual Status fence() = 0;
    virtual std::optional<std::string> get(const std::string& key) = 0;
};

}  // namespace wanmpi::base
