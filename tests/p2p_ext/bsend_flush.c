/* MPI_Buffer_flush and MPI_Buffer_iflush (MPI 4.1): a flush completes only once every message
 * buffered by MPI_Bsend has left the attached buffer, after which the buffer space is free again
 * (a second Bsend that did not fit before now fits). Built only where mpi.h announces MPI 4.1 or
 * is wanmpi's (which has these calls while it still says 4.0). */
#include "mptest.h"

#if defined(WANMPI_VERSION) || MPI_VERSION > 4 || (MPI_VERSION == 4 && MPI_SUBVERSION >= 1)
#define HAVE_FLUSH 1
#endif

#define MSG 100000

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
#ifdef HAVE_FLUSH
    {
        static char s1[MSG], s2[MSG], r1[MSG], r2[MSG];
        int size = MPI_BSEND_OVERHEAD + MSG, cls = 0, rc, peer = mt_partner(), bsize = 0;
        char *buf = malloc((size_t)size);
        void *back = NULL;
        MPI_Request req;

        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MT_MPI(MPI_Buffer_attach(buf, size));
        mt_fill(s1, MSG, 1 + (uint64_t)mt_rank);
        mt_fill(s2, MSG, 50 + (uint64_t)mt_rank);

        /* To myself: the buffer holds one message; the flush waits for the receive. */
        MT_MPI(MPI_Bsend(s1, MSG, MPI_BYTE, mt_rank, 1, MPI_COMM_WORLD));
        rc = MPI_Bsend(s2, MSG, MPI_BYTE, mt_rank, 1, MPI_COMM_WORLD);
        MPI_Error_class(rc, &cls);
        MT_CHECK(cls == MPI_ERR_BUFFER, "second Bsend into a full buffer: class %d", cls);
        MT_MPI(MPI_Buffer_iflush(&req));
        MT_MPI(MPI_Recv(r1, MSG, MPI_BYTE, mt_rank, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        MT_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        MT_MPI(MPI_Bsend(s2, MSG, MPI_BYTE, mt_rank, 1, MPI_COMM_WORLD));
        MT_MPI(MPI_Recv(r2, MSG, MPI_BYTE, mt_rank, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        MT_CHECK(mt_verify(r1, MSG, 1 + (uint64_t)mt_rank) < 0, "self message 1 corrupted");
        MT_CHECK(mt_verify(r2, MSG, 50 + (uint64_t)mt_rank) < 0, "self message 2 corrupted");

        /* To the partner, blocking flush after the matching receive was posted. */
        MT_MPI(MPI_Bsend(s1, MSG, MPI_BYTE, peer, 2, MPI_COMM_WORLD));
        MT_MPI(MPI_Recv(r1, MSG, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        MT_MPI(MPI_Buffer_flush());
        MT_CHECK(mt_verify(r1, MSG, 1 + (uint64_t)peer) < 0, "partner message corrupted");

        /* Nothing buffered: both complete at once. */
        MT_MPI(MPI_Buffer_flush());
        MT_MPI(MPI_Buffer_iflush(&req));
        MT_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));

        MT_MPI(MPI_Buffer_detach(&back, &bsize));
        MT_CHECK(back == buf && bsize == size, "detach gave %p/%d", back, bsize);
        free(buf);
    }
#endif
    return mt_finalize();
}
