/* MPI_T performance variables against known traffic between ranks 0 and 1 (2 ranks; the route
 * between them is whatever the job gives: shm, tcp or, over two clusters, wan):
 *   - rank 0 sends N_EAGER short and N_LONG long messages (rendezvous, or IMPI's long protocol)
 *     and rank 1 answers once; the per-route message and byte counters of both ranks must
 *     count exactly those, on the route that <route>_peers says leads to the other rank, and
 *     nothing on the others;
 *   - rank 1 receives nothing until everything arrived (it probes for a last marker), so the
 *     unexpected queue holds N_EAGER + N_LONG + 1 entries: unexpected_recvq_length and its
 *     high-water mark must say so, and 0 / the same peak once they are received;
 *   - rank 1 posts N_POSTED receives that nothing matches: posted_recvq_length is N_POSTED;
 *   - over the wan route, the link counters must have grown by at least the payload (IMPI
 *     headers come on top) and wan_link_connections is 1 (one lane: WANMPI_WAN_LANES=1).
 * Each rank resets its handles at a point where no message can be on its way to or from it
 * uncounted, so every count is exact. No collectives until the checks are done. */
#include <stdlib.h>

#include "mpit_util.h"

#define N_EAGER 10
#define EAGER_BYTES 100
#define N_LONG 3
#define LONG_BYTES (1 << 20)
#define N_POSTED 3

static const char *routes[] = {"self", "shm", "tcp", "wan"};
enum { NR = 4 };
static MPI_T_pvar_session ses;

typedef struct {
    MPI_T_pvar_handle h;
} H;

static H alloc_h(const char *name, int cls)
{
    H x;
    int count = 0;
    OK(MPI_T_pvar_handle_alloc(ses, pvar_index(name, cls), NULL, &x.h, &count));
    CHECK(count == 1, "%s: count %d", name, count);
    return x;
}

static unsigned long long rd(H x)
{
    unsigned long long v = 0;
    OK(MPI_T_pvar_read(ses, x.h, &v));
    return v;
}

int main(int argc, char **argv)
{
    int provided, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    OK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    OK(MPI_T_pvar_session_create(&ses));

    H msent[NR], mrecv[NR], bsent[NR], brecv[NR];
    int peer_route = -1;
    for (int k = 0; k < NR; k++) {
        char n[64];
        snprintf(n, sizeof n, "%s_msgs_sent", routes[k]);
        msent[k] = alloc_h(n, MPI_T_PVAR_CLASS_COUNTER);
        snprintf(n, sizeof n, "%s_msgs_recv", routes[k]);
        mrecv[k] = alloc_h(n, MPI_T_PVAR_CLASS_COUNTER);
        snprintf(n, sizeof n, "%s_bytes_sent", routes[k]);
        bsent[k] = alloc_h(n, MPI_T_PVAR_CLASS_AGGREGATE);
        snprintf(n, sizeof n, "%s_bytes_recv", routes[k]);
        brecv[k] = alloc_h(n, MPI_T_PVAR_CLASS_AGGREGATE);
        snprintf(n, sizeof n, "%s_peers", routes[k]);
        H p = alloc_h(n, MPI_T_PVAR_CLASS_SIZE);
        unsigned long long peers = rd(p);
        if (k == 0) CHECK(peers == 1, "self_peers %llu", peers);
        else if (peers) peer_route = k;
    }
    CHECK(size == 2 && peer_route > 0, "2 ranks on one route expected (size %d)", size);
    if (errs) MPI_Abort(MPI_COMM_WORLD, 1);
    H ulen = alloc_h("unexpected_recvq_length", MPI_T_PVAR_CLASS_LEVEL);
    H plen = alloc_h("posted_recvq_length", MPI_T_PVAR_CLASS_LEVEL);
    H uhwm = alloc_h("unexpected_recvq_hwm", MPI_T_PVAR_CLASS_HIGHWATERMARK);
    H phwm = alloc_h("posted_recvq_hwm", MPI_T_PVAR_CLASS_HIGHWATERMARK);
    H wsent = alloc_h("wan_link_bytes_sent", MPI_T_PVAR_CLASS_AGGREGATE);
    H wpk = alloc_h("wan_link_packets_sent", MPI_T_PVAR_CLASS_COUNTER);
    H wconn = alloc_h("wan_link_connections", MPI_T_PVAR_CLASS_SIZE);
    /* Continuous variables cannot be started; the others can, all at once. */
    EXPECT_RC(MPI_T_pvar_start(ses, ulen.h), MPI_T_ERR_PVAR_NO_STARTSTOP);
    OK(MPI_T_pvar_start(ses, MPI_T_PVAR_ALL_HANDLES));

    char *buf = calloc(LONG_BYTES, 1);
    int token = 0;
    MPI_Request reqs[N_EAGER + N_LONG + 1];
    if (me == 0) {
        /* After this receive nothing is on its way to or from rank 0 until it sends. */
        MPI_Recv(&token, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        OK(MPI_T_pvar_reset(ses, MPI_T_PVAR_ALL_HANDLES));
        for (int i = 0; i < N_EAGER; i++)
            MPI_Isend(buf, EAGER_BYTES, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &reqs[i]);
        for (int i = 0; i < N_LONG; i++)
            MPI_Isend(buf, LONG_BYTES, MPI_BYTE, 1, 3, MPI_COMM_WORLD, &reqs[N_EAGER + i]);
        MPI_Isend(&token, 1, MPI_INT, 1, 4, MPI_COMM_WORLD, &reqs[N_EAGER + N_LONG]);
        MPI_Waitall(N_EAGER + N_LONG + 1, reqs, MPI_STATUSES_IGNORE);
        MPI_Recv(&token, 1, MPI_INT, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        /* Reset before the first message: rank 0 sends nothing before it has this one. */
        OK(MPI_T_pvar_reset(ses, MPI_T_PVAR_ALL_HANDLES));
        MPI_Send(&token, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
        MPI_Probe(0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* everything before it is here too */
        unsigned long long u = rd(ulen);
        CHECK(u == N_EAGER + N_LONG + 1, "unexpected_recvq_length %llu", u);
        MPI_Request pr[N_POSTED];
        for (int i = 0; i < N_POSTED; i++)
            MPI_Irecv(&token, 1, MPI_INT, 0, 100 + i, MPI_COMM_WORLD, &pr[i]);
        unsigned long long p = rd(plen);
        CHECK(p == N_POSTED, "posted_recvq_length %llu", p);
        for (int i = 0; i < N_POSTED; i++) {
            MPI_Cancel(&pr[i]);
            MPI_Wait(&pr[i], MPI_STATUS_IGNORE);
        }
        p = rd(plen);
        CHECK(p == 0, "posted_recvq_length %llu after cancel", p);
        for (int i = 0; i < N_EAGER; i++)
            MPI_Recv(buf, EAGER_BYTES, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < N_LONG; i++)
            MPI_Recv(buf, LONG_BYTES, MPI_BYTE, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(&token, 1, MPI_INT, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        u = rd(ulen);
        CHECK(u == 0, "unexpected_recvq_length %llu after receiving", u);
        MPI_Send(&token, 1, MPI_INT, 0, 5, MPI_COMM_WORLD);
    }
    OK(MPI_T_pvar_stop(ses, MPI_T_PVAR_ALL_HANDLES));

    const unsigned long long data_msgs = N_EAGER + N_LONG + 1;
    const unsigned long long data_bytes =
        (unsigned long long)N_EAGER * EAGER_BYTES + (unsigned long long)N_LONG * LONG_BYTES + sizeof(int);
    unsigned long long want_ms = me == 0 ? data_msgs : 2, want_bs = me == 0 ? data_bytes : 2 * sizeof(int);
    unsigned long long want_mr = me == 0 ? 1 : data_msgs, want_br = me == 0 ? sizeof(int) : data_bytes;
    for (int k = 0; k < NR; k++) {
        int on = k == peer_route;
        unsigned long long ms = rd(msent[k]), mr = rd(mrecv[k]), bs = rd(bsent[k]), br = rd(brecv[k]);
        CHECK(ms == (on ? want_ms : 0), "%s_msgs_sent %llu", routes[k], ms);
        CHECK(mr == (on ? want_mr : 0), "%s_msgs_recv %llu", routes[k], mr);
        CHECK(bs == (on ? want_bs : 0), "%s_bytes_sent %llu", routes[k], bs);
        CHECK(br == (on ? want_br : 0), "%s_bytes_recv %llu", routes[k], br);
    }
    if (me == 1) {
        unsigned long long uh = rd(uhwm), ph = rd(phwm);
        CHECK(uh == data_msgs, "unexpected_recvq_hwm %llu", uh);
        CHECK(ph == N_POSTED, "posted_recvq_hwm %llu", ph);
    }
    unsigned long long conns = rd(wconn), wbytes = rd(wsent), wpkts = rd(wpk);
    if (routes[peer_route][0] == 'w') {
        CHECK(conns == 1, "wan_link_connections %llu", conns);
        CHECK(wbytes >= want_bs + 128 * want_ms, "wan_link_bytes_sent %llu < payload %llu + headers",
              wbytes, want_bs);
        CHECK(wpkts >= want_ms, "wan_link_packets_sent %llu < %llu messages", wpkts, want_ms);
    } else {
        CHECK(conns == 0 && wbytes == 0 && wpkts == 0, "wan link counters %llu %llu %llu",
              conns, wbytes, wpkts);
    }

    /* A stopped counter keeps its value; readreset returns it and zeroes the handle. */
    unsigned long long v = 0;
    OK(MPI_T_pvar_readreset(ses, msent[peer_route].h, &v));
    CHECK(v == want_ms, "readreset gave %llu", v);
    CHECK(rd(msent[peer_route]) == 0, "readreset did not zero the handle");
    /* A write sets the value; counting continues from it. */
    unsigned long long w = 1000;
    OK(MPI_T_pvar_write(ses, msent[peer_route].h, &w));
    OK(MPI_T_pvar_start(ses, msent[peer_route].h));
    if (me == 0) MPI_Send(&token, 1, MPI_INT, 1, 6, MPI_COMM_WORLD);
    else MPI_Recv(&token, 1, MPI_INT, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    v = rd(msent[peer_route]);
    CHECK(v == (me == 0 ? 1001u : 1000u), "after write + one message: %llu", v);

    OK(MPI_T_pvar_session_free(&ses));
    OK(MPI_T_finalize());
    free(buf);
    int rc = mpit_done(1);
    MPI_Finalize();
    return rc;
}
