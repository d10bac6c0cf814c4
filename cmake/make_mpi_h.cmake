# Paste the generated prototypes into mpi.h.in (cmake -P script; see src/bindings/CMakeLists.txt).
file(READ ${IN} text)
file(READ ${PROTO} protos)
string(REPLACE "WANMPI_PROTOTYPES_HERE" "${protos}" text "${text}")
string(REPLACE "WANMPI_VERSION_HERE" "${VERSION}" text "${text}")
string(REPLACE "WANMPI_NUMVERSION_HERE" "${NUMVERSION}" text "${text}")
file(WRITE ${OUT}.tmp "${text}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.tmp)
