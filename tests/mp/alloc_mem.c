/* alloc_mem: MPI_Alloc_mem/MPI_Free_mem for several sizes (0 B to 16 MiB); the memory is writable,
 * suitably aligned, and usable as send and receive buffers. */
#include "mptest.h"

int main(int argc, char **argv)
{
    MPI_Aint sizes[] = {0, 1, 8, 4096, 100000, 1 << 20, 16 << 20};
    int i, peer;
    mt_init(&argc, &argv);
    peer = mt_partner();

    for (i = 0; i < (int)(sizeof sizes / sizeof sizes[0]); i++) {
        MPI_Aint n = sizes[i];
        unsigned char *sb = NULL, *rb = NULL;
        MPI_Request rq;
        MPI_Status st;
        int count = -1;
        MT_MPI(MPI_Alloc_mem(n, MPI_INFO_NULL, &sb));
        MT_MPI(MPI_Alloc_mem(n, MPI_INFO_NULL, &rb));
        if (n > 0) {
            MT_CHECK(sb != NULL && rb != NULL, "Alloc_mem(%ld) returned NULL", (long)n);
            if (!sb || !rb)
                continue;
            MT_CHECK(((uintptr_t)sb % sizeof(double)) == 0, "Alloc_mem(%ld) misaligned %p",
                     (long)n, (void *)sb);
        }
        mt_fill(sb, (size_t)n, (uint64_t)(mt_rank * 10 + i));
        MPI_Irecv(rb, (int)n, MPI_BYTE, peer, i, MPI_COMM_WORLD, &rq);
        MPI_Send(sb, (int)n, MPI_BYTE, peer, i, MPI_COMM_WORLD);
        MPI_Wait(&rq, &st);
        MPI_Get_count(&st, MPI_BYTE, &count);
        MT_CHECK(count == (int)n, "size %ld: received %d bytes", (long)n, count);
        MT_CHECK(mt_verify(rb, (size_t)n, (uint64_t)(peer * 10 + i)) < 0,
                 "size %ld: data mismatch at %lld", (long)n,
                 mt_verify(rb, (size_t)n, (uint64_t)(peer * 10 + i)));
        MT_MPI(MPI_Free_mem(sb));
        MT_MPI(MPI_Free_mem(rb));
    }
    return mt_finalize();
}
