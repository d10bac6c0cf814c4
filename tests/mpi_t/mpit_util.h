/* mpit_util.h: checks shared by the MPI_T test programs (standard MPI only). CHECK prints the
 * failing line at once and counts it; mpit_done() prints " No Errors" or the count. */
#ifndef MPIT_UTIL_H
#define MPIT_UTIL_H

#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int errs = 0;
static int me = 0;

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (!(cond)) {                                                          \
            printf("[rank %d] FAIL %s:%d: %s: ", me, __FILE__, __LINE__, #cond); \
            printf(__VA_ARGS__);                                                \
            printf("\n");                                                       \
            fflush(stdout);                                                     \
            errs++;                                                             \
        }                                                                       \
    } while (0)

/* An MPI_T call that must return `want`. */
#define EXPECT_RC(call, want)                                                          \
    do {                                                                               \
        int rc_ = (call);                                                              \
        CHECK(rc_ == (want), "%s returned %d, expected %s (%d)", #call, rc_, #want, want); \
    } while (0)
#define OK(call) EXPECT_RC(call, MPI_SUCCESS)

static inline int pvar_index(const char *name, int cls)
{
    int i = -1;
    int rc = MPI_T_pvar_get_index(name, cls, &i);
    CHECK(rc == MPI_SUCCESS, "no performance variable %s of class %d (rc %d)", name, cls, rc);
    return i;
}

static inline int cvar_index(const char *name)
{
    int i = -1;
    int rc = MPI_T_cvar_get_index(name, &i);
    CHECK(rc == MPI_SUCCESS, "no control variable %s (rc %d)", name, rc);
    return i;
}

/* The end of a test: the errors of every rank of MPI_COMM_WORLD (or, after MPI_Finalize, of
 * this process: in_mpi 0) summed, " No Errors" or the count on rank 0; the exit status. */
static inline int mpit_done(int in_mpi)
{
    int total = errs;
    if (in_mpi) MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0) {
        if (total) printf(" Found %d errors\n", total);
        else printf(" No Errors\n");
    }
    return total != 0;
}

#endif
