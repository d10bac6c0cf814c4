/* recv_arrived: blocking receives of messages that arrived before the receive was posted.
 *
 * An MPI may complete such a receive straight from its unexpected-message queue (wanmpi does,
 * without a request, for whole small messages). What must still hold:
 *   - tag selection picks the right message among many that wait, in any order;
 *   - a buffer larger than the message: MPI_Get_count reports the message's size, bytes past it
 *     are untouched; MPI_STATUS_IGNORE is accepted; zero-byte messages;
 *   - a buffer smaller than the message: MPI_ERR_TRUNCATE (errors return), and the next message
 *     still matches correctly;
 *   - non-overtaking: a large (rendezvous) message sent first with Isend and a small one sent
 *     after it with the same tag are received in that order; so are synchronous-mode sends
 *     mixed with standard ones;
 *   - blocking standard sends racing ahead of the receiver (a flood) all arrive, in order.
 * Ranks pair up (mt_partner); the even rank of a pair receives, after the sender is done. */
#include "mptest.h"

#define NMSG 24
#define BIG (256 * 1024)

static int size_of(int i) { return i % 6 == 5 ? 0 : 1 + (i * 37) % 3000; }
static unsigned char byte_of(int i, int k) { return (unsigned char)(i * 13 + k * 7 + 1); }

int main(int argc, char **argv)
{
    int peer, i, k, count;
    MPI_Status st;
    unsigned char *buf, *big;
    mt_init(&argc, &argv);
    peer = mt_partner();
    buf = (unsigned char *)mt_malloc(4096);
    big = (unsigned char *)mt_malloc(BIG + 16);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int sender = mt_rank % 2 == 1, receiver = mt_rank % 2 == 0 && peer != mt_rank;

    /* 1. many waiting messages, received in reverse tag order into larger buffers */
    if (sender) {
        for (i = 0; i < NMSG; i++) {
            for (k = 0; k < size_of(i); k++) buf[k] = byte_of(i, k);
            MT_MPI(MPI_Send(buf, size_of(i), MPI_BYTE, peer, 100 + i, MPI_COMM_WORLD));
        }
    }
    mt_barrier();
    if (receiver) {
        for (i = NMSG - 1; i >= 0; i--) {
            memset(buf, 0xee, 4096);
            MT_MPI(MPI_Recv(buf, 4000, MPI_BYTE, peer, 100 + i, MPI_COMM_WORLD, &st));
            MPI_Get_count(&st, MPI_BYTE, &count);
            MT_CHECK(count == size_of(i), "msg %d: count %d, want %d", i, count, size_of(i));
            MT_CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == 100 + i, "msg %d: source %d tag %d",
                     i, st.MPI_SOURCE, st.MPI_TAG);
            for (k = 0; k < size_of(i); k++)
                if (buf[k] != byte_of(i, k)) {
                    MT_CHECK(0, "msg %d: byte %d = %d, want %d", i, k, buf[k], byte_of(i, k));
                    break;
                }
            MT_CHECK(buf[size_of(i)] == 0xee, "msg %d: wrote past the message", i);
        }
    }
    mt_barrier();

    /* 2. truncation of a waiting message, then the next one with the same tag */
    if (sender) {
        for (k = 0; k < 100; k++) buf[k] = byte_of(1, k);
        MT_MPI(MPI_Send(buf, 100, MPI_BYTE, peer, 7, MPI_COMM_WORLD));
        MT_MPI(MPI_Send(buf, 10, MPI_BYTE, peer, 7, MPI_COMM_WORLD));
    }
    mt_barrier();
    if (receiver) {
        int rc = MPI_Recv(buf, 50, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &st);
        int cls = -1;
        MPI_Error_class(rc, &cls);
        MT_CHECK(cls == MPI_ERR_TRUNCATE, "100 bytes into 50: error class %d, want %d", cls,
                 MPI_ERR_TRUNCATE);
        memset(buf, 0, 100);
        MT_MPI(MPI_Recv(buf, 100, MPI_BYTE, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        for (k = 0; k < 10; k++)
            MT_CHECK(buf[k] == byte_of(1, k), "after truncation: byte %d = %d", k, buf[k]);
    }
    mt_barrier();

    /* 3. non-overtaking: rendezvous first (Isend), eager second, same tag; then ssend/send */
    if (sender) {
        MPI_Request r;
        for (k = 0; k < BIG; k++) big[k] = (unsigned char)(k % 251);
        MT_MPI(MPI_Isend(big, BIG, MPI_BYTE, peer, 9, MPI_COMM_WORLD, &r));
        for (k = 0; k < 8; k++) buf[k] = (unsigned char)(200 + k);
        MT_MPI(MPI_Send(buf, 8, MPI_BYTE, peer, 9, MPI_COMM_WORLD));
        mt_barrier();
        MT_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        int one = 1, two = 2, three = 3;
        MT_MPI(MPI_Send(&one, 1, MPI_INT, peer, 11, MPI_COMM_WORLD));
        MT_MPI(MPI_Ssend(&two, 1, MPI_INT, peer, 11, MPI_COMM_WORLD));
        MT_MPI(MPI_Send(&three, 1, MPI_INT, peer, 11, MPI_COMM_WORLD));
    } else {
        mt_barrier();
    }
    if (receiver) {
        memset(big, 0, BIG + 16);
        MT_MPI(MPI_Recv(big, BIG + 16, MPI_BYTE, peer, 9, MPI_COMM_WORLD, &st));
        MPI_Get_count(&st, MPI_BYTE, &count);
        MT_CHECK(count == BIG, "first tag-9 message: %d bytes, want the large one (%d)", count,
                 BIG);
        for (k = 0; k < BIG; k += 4099)
            MT_CHECK(big[k] == (unsigned char)(k % 251), "large message byte %d", k);
        MT_MPI(MPI_Recv(buf, 100, MPI_BYTE, peer, 9, MPI_COMM_WORLD, &st));
        MPI_Get_count(&st, MPI_BYTE, &count);
        MT_CHECK(count == 8 && buf[0] == 200 && buf[7] == 207, "second tag-9 message: %d bytes",
                 count);
        for (k = 1; k <= 3; k++) {
            int v = 0;
            MT_MPI(MPI_Recv(&v, 1, MPI_INT, peer, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            MT_CHECK(v == k, "ssend/send order: got %d, want %d", v, k);
        }
    }
    mt_barrier();

    /* 4. a flood of small blocking sends ahead of a slow receiver */
    if (sender) {
        for (i = 0; i < 20000; i++) MT_MPI(MPI_Send(&i, 1, MPI_INT, peer, 13, MPI_COMM_WORLD));
    } else if (receiver) {
        for (i = 0; i < 20000; i++) {
            int v = -1;
            MT_MPI(MPI_Recv(&v, 1, MPI_INT, peer, 13, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            if (v != i) {
                MT_CHECK(0, "flood: message %d carried %d", i, v);
                break;
            }
            if (i % 5000 == 0) {  /* fall behind now and then */
                double t = MPI_Wtime();
                while (MPI_Wtime() - t < 0.02) {}
            }
        }
    }
    free(buf);
    free(big);
    return mt_finalize();
}
