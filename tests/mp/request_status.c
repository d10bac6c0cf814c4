/* request_status: MPI_Request_free and MPI_Request_get_status.
 *   Request_free on an active Isend (eager and rendezvous size): the handle becomes
 *   MPI_REQUEST_NULL and the message is still delivered; on a completed request; on an inactive
 *   persistent request.
 *   Request_get_status polls a receive without freeing it: flag and status right, handle
 *   unchanged, and a later Wait returns the same status; on MPI_REQUEST_NULL it gives flag true
 *   and an empty status; MPI_STATUS_IGNORE accepted. */
#include "mptest.h"

int main(int argc, char **argv)
{
    int peer, i;
    const int sizes[] = {4, 1 << 20};
    mt_init(&argc, &argv);
    peer = mt_partner();

    /* Request_free on active sends: the receiver must still get every message. */
    for (i = 0; i < 2; i++) {
        int n = sizes[i];
        unsigned char *sb = (unsigned char *)mt_malloc((size_t)n), *rb = (unsigned char *)mt_malloc((size_t)n);
        MPI_Request s, r;
        MPI_Status st;
        long long bad;
        int count;
        mt_fill(sb, (size_t)n, (uint64_t)(mt_rank + 10 * i));
        MPI_Irecv(rb, n, MPI_BYTE, peer, 10 + i, MPI_COMM_WORLD, &r);
        MPI_Isend(sb, n, MPI_BYTE, peer, 10 + i, MPI_COMM_WORLD, &s);
        MPI_Request_free(&s);
        MT_CHECK(s == MPI_REQUEST_NULL, "Request_free did not null the handle");
        MPI_Wait(&r, &st);
        MPI_Get_count(&st, MPI_BYTE, &count);
        bad = mt_verify(rb, (size_t)n, (uint64_t)(peer + 10 * i));
        MT_CHECK(count == n && bad < 0, "freed Isend of %d B: received %d B, bad %lld", n, count,
                 bad);
        /* The buffer of a freed send may be reused only once we know it was received; the
         * partner's acknowledgement tells us. */
        MPI_Sendrecv(NULL, 0, MPI_BYTE, peer, 20 + i, NULL, 0, MPI_BYTE, peer, 20 + i,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        free(sb);
        free(rb);
    }

    /* Request_get_status on a receive. */
    {
        int in = -1, out = 500 + mt_rank, flag = 0, polls = 0, count;
        MPI_Request r, s;
        MPI_Status st1, st2;
        MPI_Irecv(&in, 1, MPI_INT, peer, 30, MPI_COMM_WORLD, &r);
        /* Nothing sent yet with tag 30: not complete (the partner sends only after the handshake
         * below, which needs this rank to get there first). */
        MPI_Request_get_status(r, &flag, &st1);
        MT_CHECK(flag == 0, "Request_get_status: complete before the message was sent");
        MPI_Sendrecv(NULL, 0, MPI_BYTE, peer, 31, NULL, 0, MPI_BYTE, peer, 31, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        MPI_Isend(&out, 1, MPI_INT, peer, 30, MPI_COMM_WORLD, &s);
        flag = 0;
        while (!flag) {
            MPI_Request_get_status(r, &flag, &st1);
            polls++;
        }
        MT_CHECK(r != MPI_REQUEST_NULL, "Request_get_status freed the request");
        MPI_Get_count(&st1, MPI_INT, &count);
        MT_CHECK(st1.MPI_SOURCE == peer && st1.MPI_TAG == 30 && count == 1 && in == 500 + peer,
                 "Request_get_status: %s value %d", mt_status_str(&st1, MPI_INT), in);
        MPI_Request_get_status(r, &flag, MPI_STATUS_IGNORE);
        MT_CHECK(flag == 1, "second Request_get_status flag %d", flag);
        MPI_Wait(&r, &st2);
        MT_CHECK(r == MPI_REQUEST_NULL && st2.MPI_SOURCE == st1.MPI_SOURCE &&
                     st2.MPI_TAG == st1.MPI_TAG,
                 "Wait after Request_get_status: %s", mt_status_str(&st2, MPI_INT));
        MPI_Wait(&s, MPI_STATUS_IGNORE);

        flag = 0;
        MPI_Request_get_status(MPI_REQUEST_NULL, &flag, &st1);
        MPI_Get_count(&st1, MPI_INT, &count);
        MT_CHECK(flag == 1 && st1.MPI_SOURCE == MPI_ANY_SOURCE && st1.MPI_TAG == MPI_ANY_TAG &&
                     count == 0,
                 "Request_get_status(NULL): flag %d %s", flag, mt_status_str(&st1, MPI_INT));
    }

    /* Request_free on a completed request (via get_status) and on an inactive persistent one. */
    {
        int in = -1, out = 7, flag = 0;
        MPI_Request r, s, p;
        MPI_Irecv(&in, 1, MPI_INT, peer, 40, MPI_COMM_WORLD, &r);
        MPI_Isend(&out, 1, MPI_INT, peer, 40, MPI_COMM_WORLD, &s);
        while (!flag)
            MPI_Request_get_status(r, &flag, MPI_STATUS_IGNORE);
        MPI_Request_free(&r);
        MT_CHECK(r == MPI_REQUEST_NULL && in == 7, "free of completed receive: value %d", in);
        MPI_Wait(&s, MPI_STATUS_IGNORE);
        MPI_Send_init(&out, 1, MPI_INT, peer, 41, MPI_COMM_WORLD, &p);
        MPI_Request_free(&p);
        MT_CHECK(p == MPI_REQUEST_NULL, "free of inactive persistent request did not null it");
    }
    return mt_finalize();
}
