/* huge_count: messages of more than 2 GiB (slow label; needs 2 ranks and ~2.1 GiB per rank).
 *   Rank 0 -> 1: 2 GiB + 16 MiB of MPI_BYTE with the MPI-4 large-count API (MPI_Send_c,
 *   MPI_Recv_c, MPI_Get_count_c); MPI_Get_count on that status gives MPI_UNDEFINED (the count
 *   does not fit an int). Skipped, with a note, when the library's MPI_VERSION < 4.
 *   Rank 1 -> 0: INT_MAX elements of MPI_BYTE through the plain int-count MPI_Isend/MPI_Recv.
 * Every byte is checked. */
#include "mptest.h"

#include <limits.h>

int main(int argc, char **argv)
{
    size_t big = ((size_t)2 << 30) + ((size_t)16 << 20), n;
    unsigned char *buf;
    MPI_Status st;
    long long bad;

    mt_init(&argc, &argv);
    if (mt_size != 2) {
        if (mt_rank == 0)
            printf("huge_count: needs exactly 2 ranks\n");
        MT_CHECK(mt_size == 2, "run with -n 2");
        return mt_finalize();
    }
    buf = (unsigned char *)mt_malloc(big);

#if MPI_VERSION >= 4
    if (mt_rank == 0) {
        mt_fill(buf, big, 41);
        MPI_Send_c(buf, (MPI_Count)big, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
    } else {
        MPI_Count c = -1;
        int ci = 0;
        memset(buf + big - 4096, 0, 4096);
        MPI_Recv_c(buf, (MPI_Count)big, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &st);
        MPI_Get_count_c(&st, MPI_BYTE, &c);
        MT_CHECK(c == (MPI_Count)big, "MPI_Get_count_c %lld, expected %zu", (long long)c, big);
        MPI_Get_count(&st, MPI_BYTE, &ci);
        MT_CHECK(ci == MPI_UNDEFINED, "MPI_Get_count of a %zu-byte message gave %d, expected "
                 "MPI_UNDEFINED", big, ci);
        bad = mt_verify(buf, big, 41);
        MT_CHECK(bad < 0, "Send_c/Recv_c of %zu B: mismatch at byte %lld", big, bad);
    }
#else
    if (mt_rank == 0)
        printf("huge_count: MPI_VERSION %d < 4, large-count (_c) calls skipped\n", MPI_VERSION);
#endif

    n = (size_t)INT_MAX;
    if (mt_rank == 1) {
        MPI_Request r;
        mt_fill(buf, n, 42);
        MPI_Isend(buf, INT_MAX, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else {
        int c = -1;
        memset(buf + n - 4096, 0, 4096);
        MPI_Recv(buf, INT_MAX, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_BYTE, &c);
        MT_CHECK(c == INT_MAX, "INT_MAX bytes: Get_count %d", c);
        bad = mt_verify(buf, n, 42);
        MT_CHECK(bad < 0, "INT_MAX bytes: mismatch at byte %lld", bad);
    }
    free(buf);
    return mt_finalize();
}
