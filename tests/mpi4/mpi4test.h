/* mpi4test.h: what the tests/mpi4 programs share. Standard MPI only, so they also run under
 * MPICH or Open MPI. CHECK records and prints a failure (the first 20 of them per rank) and goes
 * on; mpi4_verdict() sums the failures over `comm` (collectives are fine here: these programs
 * test MPI 4.0 additions on top of a working MPI), prints " No Errors" (the convention the ctest
 * helper looks for) or the count on its rank 0, and gives main's exit code. */
#ifndef MPI4TEST_H
#define MPI4TEST_H

#include <mpi.h>
#include <stdio.h>

static int rank = -1, errs;

#define CHECK(cond, ...)                                          \
    do {                                                          \
        if (!(cond)) {                                            \
            if (++errs < 20) {                                    \
                printf("[%d] %s:%d: ", rank, __FILE__, __LINE__); \
                printf(__VA_ARGS__);                              \
                printf("\n");                                     \
                fflush(stdout);                                   \
            }                                                     \
        }                                                         \
    } while (0)

/* The error class of a return code (MPI_SUCCESS stays 0). */
static int cls(int rc)
{
    int c = rc;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &c);
    return c;
}

static int mpi4_verdict(MPI_Comm comm)
{
    int total = errs, me = 0;
    if (comm != MPI_COMM_NULL) {
        MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, comm);
        MPI_Comm_rank(comm, &me);
    }
    if (me == 0) {
        if (total == 0)
            printf(" No Errors\n");
        else
            printf(" Found %d errors\n", total);
    }
    return total != 0;
}

#endif
