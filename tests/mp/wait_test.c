/* wait_test: completion calls on arrays mixing active requests and MPI_REQUEST_NULL:
 *   MPI_Wait/MPI_Test on MPI_REQUEST_NULL give an empty status (and flag true);
 *   Waitany/Testany on all-null arrays give MPI_UNDEFINED (Testany flag true), Waitsome/Testsome
 *   give outcount MPI_UNDEFINED, Testall flag true;
 *   Waitany and Waitsome hand out every completion exactly once with the right status and index;
 *   Testany/Testsome poll to completion; Testall returns false without modifying any request while
 *   one receive provably cannot complete (its message is sent only after a later handshake), then
 *   true with every status filled in; MPI_Test loops a single request to completion. */
#include "mptest.h"

#define K 12           /* real requests per phase */
#define SLOTS (K + K / 2) /* array slots: every third one is MPI_REQUEST_NULL */

static int peer;
static int sendval[SLOTS], recvval[SLOTS];
static MPI_Request sreq[SLOTS];

static int slot_tag(int phase, int k) { return phase * 100 + k; }
static int is_null_slot(int k) { return k % 3 == 2; }

static void check_empty(const MPI_Status *st, const char *what)
{
    int count = -1;
    MPI_Get_count(st, MPI_INT, &count);
    MT_CHECK(st->MPI_SOURCE == MPI_ANY_SOURCE && st->MPI_TAG == MPI_ANY_TAG && count == 0,
             "%s: status not empty (%s)", what, mt_status_str(st, MPI_INT));
}

/* Posts receives into the non-null slots and sends the partner's counterparts (reverse order). */
static void post(int phase, MPI_Request *rreq)
{
    int k;
    for (k = 0; k < SLOTS; k++) {
        rreq[k] = MPI_REQUEST_NULL;
        recvval[k] = -1;
        if (!is_null_slot(k))
            MPI_Irecv(&recvval[k], 1, MPI_INT, peer, slot_tag(phase, k), MPI_COMM_WORLD, &rreq[k]);
    }
    for (k = SLOTS - 1; k >= 0; k--) {
        sreq[k] = MPI_REQUEST_NULL;
        sendval[k] = mt_rank * 10000 + slot_tag(phase, k);
        if (!is_null_slot(k))
            MPI_Isend(&sendval[k], 1, MPI_INT, peer, slot_tag(phase, k), MPI_COMM_WORLD, &sreq[k]);
    }
}

static void check_slot(int phase, int k, const MPI_Status *st, const char *what)
{
    MT_CHECK(k >= 0 && k < SLOTS && !is_null_slot(k), "%s: bad index %d", what, k);
    if (k < 0 || k >= SLOTS)
        return;
    MT_CHECK(st->MPI_SOURCE == peer && st->MPI_TAG == slot_tag(phase, k) &&
                 recvval[k] == peer * 10000 + slot_tag(phase, k),
             "%s: slot %d value %d %s", what, k, recvval[k], mt_status_str(st, MPI_INT));
}

static void null_cases(void)
{
    MPI_Request r[4] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Status st, sts[4];
    int idx = -5, flag = -5, outcount = -5, idxs[4];
    MPI_Request one = MPI_REQUEST_NULL;

    MPI_Wait(&one, &st);
    check_empty(&st, "Wait(NULL)");
    MPI_Test(&one, &flag, &st);
    MT_CHECK(flag == 1, "Test(NULL) flag %d", flag);
    check_empty(&st, "Test(NULL)");
    MPI_Waitany(4, r, &idx, &st);
    MT_CHECK(idx == MPI_UNDEFINED, "Waitany(all null) index %d", idx);
    check_empty(&st, "Waitany(all null)");
    flag = -5;
    MPI_Testany(4, r, &idx, &flag, &st);
    MT_CHECK(flag == 1 && idx == MPI_UNDEFINED, "Testany(all null) flag %d index %d", flag, idx);
    MPI_Waitsome(4, r, &outcount, idxs, sts);
    MT_CHECK(outcount == MPI_UNDEFINED, "Waitsome(all null) outcount %d", outcount);
    MPI_Testsome(4, r, &outcount, idxs, sts);
    MT_CHECK(outcount == MPI_UNDEFINED, "Testsome(all null) outcount %d", outcount);
    flag = -5;
    MPI_Testall(4, r, &flag, sts);
    MT_CHECK(flag == 1, "Testall(all null) flag %d", flag);
    MPI_Waitall(4, r, sts);
    MPI_Waitall(0, r, MPI_STATUSES_IGNORE);
    MPI_Waitany(0, r, &idx, &st);
    MT_CHECK(idx == MPI_UNDEFINED, "Waitany(0) index %d", idx);
}

static void waitany_phase(int phase)
{
    MPI_Request rreq[SLOTS];
    int seen[SLOTS] = {0}, n = 0, idx;
    MPI_Status st;
    post(phase, rreq);
    for (;;) {
        MPI_Waitany(SLOTS, rreq, &idx, &st);
        if (idx == MPI_UNDEFINED)
            break;
        check_slot(phase, idx, &st, "Waitany");
        MT_CHECK(rreq[idx] == MPI_REQUEST_NULL, "Waitany did not free slot %d", idx);
        MT_CHECK(!seen[idx], "Waitany returned slot %d twice", idx);
        seen[idx] = 1;
        n++;
        if (n > K)
            break;
    }
    MT_CHECK(n == K, "Waitany completed %d of %d", n, K);
    MPI_Waitall(SLOTS, sreq, MPI_STATUSES_IGNORE);
}

static void waitsome_phase(int phase, int use_test)
{
    MPI_Request rreq[SLOTS];
    int seen[SLOTS] = {0}, n = 0, out, idxs[SLOTS], j, spins = 0;
    MPI_Status sts[SLOTS];
    const char *what = use_test ? "Testsome" : "Waitsome";
    post(phase, rreq);
    for (;;) {
        if (use_test) {
            MPI_Testsome(SLOTS, rreq, &out, idxs, sts);
            spins++;
        } else
            MPI_Waitsome(SLOTS, rreq, &out, idxs, sts);
        if (out == MPI_UNDEFINED)
            break;
        MT_CHECK(out >= 0 && out <= K, "%s outcount %d", what, out);
        if (!use_test)
            MT_CHECK(out >= 1, "Waitsome returned outcount %d with requests active", out);
        for (j = 0; j < out && j < SLOTS; j++) {
            int k = idxs[j];
            check_slot(phase, k, &sts[j], what);
            if (k < 0 || k >= SLOTS)
                continue;
            MT_CHECK(!seen[k], "%s returned slot %d twice", what, k);
            seen[k] = 1;
            n++;
        }
        if (n > K)
            break;
    }
    MT_CHECK(n == K, "%s completed %d of %d", what, n, K);
    MPI_Waitall(SLOTS, sreq, MPI_STATUSES_IGNORE);
}

/* Testany until the K ordinary receives are done; Testall must stay false (and leave every
 * request alone) while the gated receive is pending; after the handshake Testall turns true. */
static void testany_testall_phase(int phase)
{
    MPI_Request rreq[SLOTS + 1], copy[SLOTS + 1], gsend;
    int seen[SLOTS] = {0}, n = 0, idx, flag, k, gate_in = -1, gate_out = 4242;
    MPI_Status st, sts[SLOTS + 1];
    post(phase, rreq);
    MPI_Irecv(&gate_in, 1, MPI_INT, peer, slot_tag(phase, 99), MPI_COMM_WORLD, &rreq[SLOTS]);

    for (k = 0; k < 10; k++) {
        memcpy(copy, rreq, sizeof copy);
        flag = -1;
        MPI_Testall(SLOTS + 1, rreq, &flag, sts);
        MT_CHECK(flag == 0, "Testall true while the gated receive cannot have completed");
        MT_CHECK(!memcmp(copy, rreq, sizeof copy), "Testall returned false but changed requests");
    }
    while (n < K) {
        flag = -1;
        MPI_Testany(SLOTS, rreq, &idx, &flag, &st);
        if (!flag) {
            MT_CHECK(idx == MPI_UNDEFINED, "Testany flag 0 with index %d", idx);
            continue;
        }
        MT_CHECK(idx != MPI_UNDEFINED, "Testany: all null after %d of %d completions", n, K);
        if (idx == MPI_UNDEFINED)
            break;
        check_slot(phase, idx, &st, "Testany");
        MT_CHECK(!seen[idx], "Testany returned slot %d twice", idx);
        seen[idx] = 1;
        n++;
    }
    flag = -1;
    MPI_Testall(SLOTS + 1, rreq, &flag, sts);
    MT_CHECK(flag == 0, "Testall true before the gate message was sent");

    /* Handshake, then the partner sends the gated message. */
    MPI_Sendrecv(NULL, 0, MPI_BYTE, peer, slot_tag(phase, 98), NULL, 0, MPI_BYTE, peer,
                 slot_tag(phase, 98), MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Isend(&gate_out, 1, MPI_INT, peer, slot_tag(phase, 99), MPI_COMM_WORLD, &gsend);
    do {
        MPI_Testall(SLOTS + 1, rreq, &flag, sts);
    } while (!flag);
    MT_CHECK(gate_in == 4242 && sts[SLOTS].MPI_SOURCE == peer &&
                 sts[SLOTS].MPI_TAG == slot_tag(phase, 99),
             "gated receive: value %d %s", gate_in, mt_status_str(&sts[SLOTS], MPI_INT));
    for (k = 0; k <= SLOTS; k++)
        MT_CHECK(rreq[k] == MPI_REQUEST_NULL, "Testall true but slot %d not freed", k);
    for (k = 0; k < SLOTS; k++)
        if (is_null_slot(k))
            check_empty(&sts[k], "Testall status of a null slot");
    MPI_Wait(&gsend, MPI_STATUS_IGNORE);
    MPI_Waitall(SLOTS, sreq, MPI_STATUSES_IGNORE);
}

static void test_single(void)
{
    int out = 31337 + mt_rank, in = -1, flag = 0;
    MPI_Request r, s;
    MPI_Status st;
    MPI_Irecv(&in, 1, MPI_INT, peer, 777, MPI_COMM_WORLD, &r);
    MPI_Isend(&out, 1, MPI_INT, peer, 777, MPI_COMM_WORLD, &s);
    while (!flag)
        MPI_Test(&r, &flag, &st);
    MT_CHECK(r == MPI_REQUEST_NULL && in == 31337 + peer && st.MPI_SOURCE == peer &&
                 st.MPI_TAG == 777,
             "Test loop: value %d %s", in, mt_status_str(&st, MPI_INT));
    MPI_Wait(&s, &st);
    MT_CHECK(s == MPI_REQUEST_NULL, "Wait did not free the send request");
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    peer = mt_partner();
    null_cases();
    waitany_phase(1);
    waitsome_phase(2, 0);
    waitsome_phase(3, 1);
    testany_testall_phase(4);
    test_single();
    return mt_finalize();
}
