/* sendrecv: MPI_Sendrecv and MPI_Sendrecv_replace around a periodic ring (right neighbour gets,
 * left neighbour sends; with one rank both are self) and along a non-periodic chain whose ends use
 * MPI_PROC_NULL, 0 B to 4 MiB; Sendrecv with different send and receive sizes and types; statuses
 * (source, tag, count) and data checked. Rings are the pattern that deadlocks with blocking sends
 * of rendezvous size, so this also checks Sendrecv does not serialize send before receive. */
#include "mptest.h"

static const int sizes[] = {0, 1, 1000, 65536, 1 << 20, 4 << 20};
#define NSIZES ((int)(sizeof sizes / sizeof sizes[0]))
#define MAXSZ (4 << 20)

int main(int argc, char **argv)
{
    int right, left, i;
    unsigned char *sbuf, *rbuf;
    MPI_Status st;
    long long bad;
    int count;

    mt_init(&argc, &argv);
    right = (mt_rank + 1) % mt_size;
    left = (mt_rank + mt_size - 1) % mt_size;
    sbuf = (unsigned char *)mt_malloc(MAXSZ);
    rbuf = (unsigned char *)mt_malloc(MAXSZ);

    for (i = 0; i < NSIZES; i++) {
        int n = sizes[i];
        /* Periodic ring. */
        mt_fill(sbuf, (size_t)n, (uint64_t)(mt_rank * 100 + i));
        memset(rbuf, 0, (size_t)n);
        MPI_Sendrecv(sbuf, n, MPI_BYTE, right, i, rbuf, MAXSZ, MPI_BYTE, left, i, MPI_COMM_WORLD,
                     &st);
        MPI_Get_count(&st, MPI_BYTE, &count);
        MT_CHECK(st.MPI_SOURCE == left && st.MPI_TAG == i && count == n, "ring %d B: %s", n,
                 mt_status_str(&st, MPI_BYTE));
        bad = mt_verify(rbuf, (size_t)n, (uint64_t)(left * 100 + i));
        MT_CHECK(bad < 0, "ring %d B: mismatch at %lld", n, bad);

        /* Ring with Sendrecv_replace, in the other direction, with a wildcard receive: the only
         * message with this tag, or the only message from `right` in flight. */
        mt_fill(rbuf, (size_t)n, (uint64_t)(mt_rank * 100 + i + 50));
        MPI_Sendrecv_replace(rbuf, n, MPI_BYTE, left, 1000 + i, i % 2 ? right : MPI_ANY_SOURCE,
                             i % 2 ? MPI_ANY_TAG : 1000 + i, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_BYTE, &count);
        MT_CHECK(st.MPI_SOURCE == right && st.MPI_TAG == 1000 + i && count == n,
                 "replace %d B: %s", n, mt_status_str(&st, MPI_BYTE));
        bad = mt_verify(rbuf, (size_t)n, (uint64_t)(right * 100 + i + 50));
        MT_CHECK(bad < 0, "replace %d B: mismatch at %lld", n, bad);

        /* Non-periodic chain: the ends talk to MPI_PROC_NULL. */
        {
            int up = mt_rank + 1 < mt_size ? mt_rank + 1 : MPI_PROC_NULL;
            int down = mt_rank > 0 ? mt_rank - 1 : MPI_PROC_NULL;
            mt_fill(sbuf, (size_t)n, (uint64_t)(mt_rank * 100 + i + 70));
            memset(rbuf, 0xAB, 16);
            MPI_Sendrecv(sbuf, n, MPI_BYTE, up, 2000 + i, rbuf, n, MPI_BYTE, down, 2000 + i,
                         MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_BYTE, &count);
            if (down == MPI_PROC_NULL) {
                MT_CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG &&
                             count == 0,
                         "chain end %d B: %s", n, mt_status_str(&st, MPI_BYTE));
                MT_CHECK(n == 0 || rbuf[0] == 0xAB, "receive from PROC_NULL wrote the buffer");
            } else {
                MT_CHECK(st.MPI_SOURCE == down && count == n, "chain %d B: %s", n,
                         mt_status_str(&st, MPI_BYTE));
                bad = mt_verify(rbuf, (size_t)n, (uint64_t)(down * 100 + i + 70));
                MT_CHECK(bad < 0, "chain %d B: mismatch at %lld", n, bad);
            }
        }
    }

    /* Different types and counts on the two sides: send 250 ints, receive up to 4000 bytes. */
    {
        int ints[250], j;
        unsigned char bytes[4000];
        for (j = 0; j < 250; j++)
            ints[j] = mt_rank * 1000 + j;
        MPI_Sendrecv(ints, 250, MPI_INT, right, 3000, bytes, 4000, MPI_BYTE, left, 3000,
                     MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_BYTE, &count);
        MT_CHECK(count == 250 * (int)sizeof(int), "mixed types: %d bytes", count);
        memcpy(ints, bytes, sizeof ints);
        for (j = 0; j < 250; j++)
            if (ints[j] != left * 1000 + j) {
                MT_CHECK(ints[j] == left * 1000 + j, "mixed types: int %d is %d", j, ints[j]);
                break;
            }
    }

    /* Sendrecv with MPI_STATUS_IGNORE and with self. */
    {
        int a = mt_rank, b = -1;
        MPI_Sendrecv(&a, 1, MPI_INT, mt_rank, 4000, &b, 1, MPI_INT, mt_rank, 4000, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        MT_CHECK(b == mt_rank, "Sendrecv to self got %d", b);
    }

    free(sbuf);
    free(rbuf);
    return mt_finalize();
}
