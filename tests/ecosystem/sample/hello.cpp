// Sample MPI program in C++ (the C interface, as MPI-3 and later define it).
#include <mpi.h>
#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    std::vector<int> all(size);
    MPI_Allgather(&rank, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD);
    int errs = 0;
    for (int r = 0; r < size; ++r) errs += all[r] != r;
    MPI_Allreduce(MPI_IN_PLACE, &errs, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) std::printf(errs ? " Found %d errors (C++)\n" : " No Errors (C++)\n", errs);
    MPI_Finalize();
    return 0;
}
