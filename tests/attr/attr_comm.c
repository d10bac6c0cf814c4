/* attr_comm: communicator attributes with copy and delete callbacks.
 *
 * Every callback appends an event (kind, keyval index, communicator, value) to a log, so the
 * test checks which callbacks ran, how often, with which arguments and in which order:
 *   - Comm_dup runs the copy callbacks (not for MPI_COMM_NULL_COPY_FN keyvals), with the old
 *     communicator and the keyval's extra_state; MPI_COMM_DUP_FN copies the value unchanged;
 *     a copy callback returning flag = 0 copies nothing;
 *   - Comm_free runs the delete callbacks in the reverse order of setting (LIFO), with the
 *     communicator being freed;
 *   - setting an attribute again runs the delete callback on the old value first;
 *   - Comm_delete_attr runs it once; a failing delete callback makes set/delete fail and keeps the
 *     attribute; a failing copy callback makes Comm_dup fail;
 *   - a keyval freed while in use keeps working for the attributes that use it;
 *   - callbacks may call attribute functions on the same communicator (get, delete another);
 *   - attributes on MPI_COMM_WORLD and MPI_COMM_SELF, and predefined keyvals cannot be set,
 *     deleted or freed; invalid keyvals give errors.
 * Runs on any number of ranks (Comm_dup is collective). */
#include "mptest.h"

#define MAXEV 64
enum { EV_COPY = 1, EV_DELETE = 2 };
struct event {
    int kind, key, value;
    MPI_Comm comm;
};
static struct event ev[MAXEV];
static int nev;
static int keys[8];       /* keyval handles by index */
static int extra[8];      /* extra_state targets by index */
static int fail_delete;   /* delete callback returns MPI_ERR_OTHER while set */
static int copy_flag = 1; /* what the copy callback returns in *flag */

static int key_index(int keyval)
{
    int i;
    for (i = 0; i < 8; i++)
        if (keys[i] == keyval)
            return i;
    return -1;
}

static void record(int kind, int keyval, MPI_Comm comm, void *value)
{
    if (nev < MAXEV) {
        ev[nev].kind = kind;
        ev[nev].key = key_index(keyval);
        ev[nev].comm = comm;
        ev[nev].value = (int)(intptr_t)value;
    }
    nev++;
}

static int copy_cb(MPI_Comm oldcomm, int keyval, void *extra_state, void *in, void *out, int *flag)
{
    int i = key_index(keyval);
    MT_CHECK(i >= 0 && extra_state == &extra[i], "copy: keyval %d / extra_state mismatch", i);
    record(EV_COPY, keyval, oldcomm, in);
    *(void **)out = (void *)((intptr_t)in + 1000);
    *flag = copy_flag;
    return MPI_SUCCESS;
}

static int delete_cb(MPI_Comm comm, int keyval, void *value, void *extra_state)
{
    int i = key_index(keyval);
    MT_CHECK(i >= 0 && extra_state == &extra[i], "delete: keyval %d / extra_state mismatch", i);
    record(EV_DELETE, keyval, comm, value);
    return fail_delete ? MPI_ERR_OTHER : MPI_SUCCESS;
}

static int failing_copy_cb(MPI_Comm oldcomm, int keyval, void *extra_state, void *in, void *out,
                           int *flag)
{
    (void)oldcomm;
    (void)keyval;
    (void)extra_state;
    (void)in;
    (void)out;
    *flag = 1;
    return MPI_ERR_OTHER;
}

/* Delete callback that reads its own attribute and deletes the attribute of keys[5]. */
static int reentrant_delete_cb(MPI_Comm comm, int keyval, void *value, void *extra_state)
{
    void *v = NULL;
    int flag = 0;
    (void)extra_state;
    record(EV_DELETE, keyval, comm, value);
    MT_MPI(MPI_Comm_get_attr(comm, keyval, &v, &flag));
    MT_CHECK(flag && v == value, "get_attr inside delete callback: flag %d", flag);
    MT_MPI(MPI_Comm_delete_attr(comm, keys[5]));
    return MPI_SUCCESS;
}

static void expect_event(int i, int kind, int key, MPI_Comm comm, int value, int line)
{
    if (i >= nev) {
        mt_fail(__FILE__, line, "event", "event %d missing (only %d events)", i, nev);
        return;
    }
    if (ev[i].kind != kind || ev[i].key != key || ev[i].comm != comm || ev[i].value != value)
        mt_fail(__FILE__, line, "event",
                "event %d is (%s, key %d, comm 0x%x, value %d), expected (%s, key %d, comm 0x%x, "
                "value %d)",
                i, ev[i].kind == EV_COPY ? "copy" : "delete", ev[i].key, (unsigned)ev[i].comm,
                ev[i].value, kind == EV_COPY ? "copy" : "delete", key, (unsigned)comm, value);
}
#define EXPECT_EVENT(i, kind, key, comm, value) expect_event(i, kind, key, comm, value, __LINE__)

static void expect_attr(MPI_Comm comm, int key, int present, int value, int line)
{
    void *v = NULL;
    int flag = -1;
    int rc = MPI_Comm_get_attr(comm, keys[key], &v, &flag);
    if (rc != MPI_SUCCESS) {
        mt_fail(__FILE__, line, "Comm_get_attr", "returned %d", rc);
        return;
    }
    if (flag != present)
        mt_fail(__FILE__, line, "Comm_get_attr", "key %d: flag %d, expected %d", key, flag,
                present);
    else if (present && (int)(intptr_t)v != value)
        mt_fail(__FILE__, line, "Comm_get_attr", "key %d: value %d, expected %d", key,
                (int)(intptr_t)v, value);
}
#define EXPECT_ATTR(comm, key, present, value) expect_attr(comm, key, present, value, __LINE__)

static void expect_error(int rc, int cls, const char *what, int line)
{
    int c = -1;
    if (rc == MPI_SUCCESS) {
        mt_fail(__FILE__, line, what, "succeeded, expected an error");
        return;
    }
    MPI_Error_class(rc, &c);
    if (cls >= 0 && c != cls)
        mt_fail(__FILE__, line, what, "error class %d, expected %d", c, cls);
}
#define EXPECT_ERROR(call, cls) expect_error((call), (cls), #call, __LINE__)

#define SETV(comm, key, value) MT_MPI(MPI_Comm_set_attr(comm, keys[key], (void *)(intptr_t)(value)))

int main(int argc, char **argv)
{
    MPI_Comm a, b, c;
    void *v;
    int flag, i, k;

    mt_init(&argc, &argv);
    MT_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MT_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));

    /* key 0: copy_cb/delete_cb; 1: NULL_COPY/delete_cb; 2: COMM_DUP_FN/delete_cb;
     * 3: NULL_COPY/NULL_DELETE; 4: reentrant delete; 5: delete_cb; 6: failing copy */
    MT_MPI(MPI_Comm_create_keyval(copy_cb, delete_cb, &keys[0], &extra[0]));
    MT_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_cb, &keys[1], &extra[1]));
    MT_MPI(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, delete_cb, &keys[2], &extra[2]));
    MT_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &keys[3],
                                  &extra[3]));
    MT_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, reentrant_delete_cb, &keys[4], &extra[4]));
    MT_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_cb, &keys[5], &extra[5]));
    MT_MPI(MPI_Comm_create_keyval(failing_copy_cb, MPI_COMM_NULL_DELETE_FN, &keys[6], &extra[6]));
    for (i = 0; i < 7; i++)
        for (k = 0; k < i; k++)
            MT_CHECK(keys[i] != keys[k] && keys[i] != MPI_KEYVAL_INVALID, "keyvals %d and %d", i,
                     k);

    /* --- dup copies, in setting order; free deletes in reverse order ------------------------ */
    MT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &a));
    EXPECT_ATTR(a, 0, 0, 0);
    SETV(a, 1, 11); /* set order: 1, 0, 2, 3 */
    SETV(a, 0, 10);
    SETV(a, 2, 12);
    SETV(a, 3, 13);
    EXPECT_ATTR(a, 0, 1, 10);
    EXPECT_ATTR(a, 1, 1, 11);
    EXPECT_ATTR(a, 2, 1, 12);
    EXPECT_ATTR(a, 3, 1, 13);
    MT_CHECK(nev == 0, "%d callbacks ran while setting new attributes", nev);

    nev = 0;
    MT_MPI(MPI_Comm_dup(a, &b));
    MT_CHECK(nev == 1, "Comm_dup ran %d callbacks, expected 1 (copy of key 0)", nev);
    EXPECT_EVENT(0, EV_COPY, 0, a, 10);
    EXPECT_ATTR(b, 0, 1, 1010); /* copy_cb's value */
    EXPECT_ATTR(b, 1, 0, 0);    /* NULL_COPY_FN: not copied */
    EXPECT_ATTR(b, 2, 1, 12);   /* COMM_DUP_FN: same value */
    EXPECT_ATTR(b, 3, 0, 0);
    EXPECT_ATTR(a, 0, 1, 10); /* the original is untouched */

    nev = 0;
    MT_MPI(MPI_Comm_free(&b)); /* b's attributes were set in order 0, 2 */
    MT_CHECK(nev == 2, "Comm_free ran %d callbacks, expected 2", nev);
    EXPECT_EVENT(0, EV_DELETE, 2, b == MPI_COMM_NULL ? ev[0].comm : b, 12);
    EXPECT_EVENT(1, EV_DELETE, 0, ev[0].comm, 1010);
    MT_CHECK(ev[0].comm != a && ev[0].comm != MPI_COMM_NULL, "delete got comm 0x%x",
             (unsigned)ev[0].comm);

    /* copy callback returning flag = 0: nothing copied, but the callback ran */
    copy_flag = 0;
    nev = 0;
    MT_MPI(MPI_Comm_dup(a, &b));
    MT_CHECK(nev == 1, "Comm_dup ran %d callbacks, expected 1", nev);
    EXPECT_ATTR(b, 0, 0, 0);
    EXPECT_ATTR(b, 2, 1, 12);
    nev = 0;
    MT_MPI(MPI_Comm_free(&b));
    MT_CHECK(nev == 1, "Comm_free ran %d callbacks, expected 1 (key 2)", nev);
    copy_flag = 1;

    /* --- replacing a value deletes the old one; delete_attr deletes once ------------------- */
    nev = 0;
    SETV(a, 1, 21);
    MT_CHECK(nev == 1, "replacing ran %d callbacks, expected 1", nev);
    EXPECT_EVENT(0, EV_DELETE, 1, a, 11);
    EXPECT_ATTR(a, 1, 1, 21);
    nev = 0;
    MT_MPI(MPI_Comm_delete_attr(a, keys[1]));
    MT_CHECK(nev == 1, "delete_attr ran %d callbacks, expected 1", nev);
    EXPECT_EVENT(0, EV_DELETE, 1, a, 21);
    EXPECT_ATTR(a, 1, 0, 0);
    nev = 0;
    (void)MPI_Comm_delete_attr(a, keys[1]); /* no such attribute any more: no callback */
    MT_CHECK(nev == 0, "deleting a missing attribute ran %d callbacks", nev);

    /* --- failing delete callback: set and delete fail, the attribute stays ------------------ */
    fail_delete = 1;
    EXPECT_ERROR(MPI_Comm_set_attr(a, keys[2], (void *)(intptr_t)99), -1);
    EXPECT_ATTR(a, 2, 1, 12);
    EXPECT_ERROR(MPI_Comm_delete_attr(a, keys[2]), -1);
    EXPECT_ATTR(a, 2, 1, 12);
    fail_delete = 0;

    /* --- failing copy callback: dup fails, the original keeps its attributes --------------- */
    /* (The order of copy callbacks is not specified: wanmpi copies in setting order, MPICH in
     * reverse; so the partial copy before the failure is not checked here.) */
    MT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    SETV(c, 2, 72);
    SETV(c, 6, 76);
    SETV(c, 5, 75);
    nev = 0;
    b = MPI_COMM_WORLD;
    EXPECT_ERROR(MPI_Comm_dup(c, &b), -1);
    MT_CHECK(b == MPI_COMM_NULL || b == MPI_COMM_WORLD, "failed dup returned a communicator");
    for (i = 0; i < nev && i < MAXEV; i++)
        MT_CHECK(ev[i].kind == EV_DELETE && ev[i].key == 2 && ev[i].value == 72,
                 "failed dup: event %d (kind %d key %d value %d) is not the undoing of key 2", i,
                 ev[i].kind, ev[i].key, ev[i].value);
    EXPECT_ATTR(c, 2, 1, 72);
    EXPECT_ATTR(c, 6, 1, 76);
    EXPECT_ATTR(c, 5, 1, 75);
    nev = 0;
    MT_MPI(MPI_Comm_free(&c)); /* 5, 6 (no delete callback), 2 */
    MT_CHECK(nev == 2, "free ran %d callbacks, expected 2", nev);
    EXPECT_EVENT(0, EV_DELETE, 5, ev[0].comm, 75);
    EXPECT_EVENT(1, EV_DELETE, 2, ev[0].comm, 72);

    /* --- keyval freed while in use: its attributes still copy and delete ------------------- */
    k = keys[0];
    MT_MPI(MPI_Comm_free_keyval(&keys[0]));
    MT_CHECK(keys[0] == MPI_KEYVAL_INVALID, "free_keyval did not set MPI_KEYVAL_INVALID");
    keys[0] = k; /* keep the index for key_index(); the handle stays valid while in use */
    nev = 0;
    MT_MPI(MPI_Comm_dup(a, &b));
    MT_CHECK(nev == 1, "dup after free_keyval ran %d callbacks, expected 1", nev);
    EXPECT_ATTR(b, 0, 1, 1010);

    /* --- callbacks calling attribute functions on the same communicator ------------------- */
    SETV(b, 5, 55);
    SETV(b, 4, 44); /* b: 0, 2, 5, 4 */
    nev = 0;
    MT_MPI(MPI_Comm_delete_attr(b, keys[4])); /* its callback deletes key 5 */
    MT_CHECK(nev == 2, "delete_attr ran %d callbacks, expected 2", nev);
    EXPECT_EVENT(0, EV_DELETE, 4, b, 44);
    EXPECT_EVENT(1, EV_DELETE, 5, b, 55);
    EXPECT_ATTR(b, 4, 0, 0);
    EXPECT_ATTR(b, 5, 0, 0);
    nev = 0;
    MT_MPI(MPI_Comm_free(&b)); /* LIFO: 2, then 0 */
    MT_CHECK(nev == 2, "free ran %d callbacks, expected 2", nev);
    EXPECT_EVENT(0, EV_DELETE, 2, ev[0].comm, 12);
    EXPECT_EVENT(1, EV_DELETE, 0, ev[0].comm, 1010);

    /* --- free the last user of the freed keyval ------------------------------------------- */
    nev = 0;
    MT_MPI(MPI_Comm_free(&a)); /* a: 0, 2, 3 */
    MT_CHECK(nev == 2, "free ran %d callbacks, expected 2", nev);
    EXPECT_EVENT(0, EV_DELETE, 2, ev[0].comm, 12);
    EXPECT_EVENT(1, EV_DELETE, 0, ev[0].comm, 10);

    /* --- MPI_COMM_WORLD and MPI_COMM_SELF carry attributes too ---------------------------- */
    nev = 0;
    SETV(MPI_COMM_WORLD, 5, 500 + mt_rank);
    SETV(MPI_COMM_SELF, 5, 600 + mt_rank);
    EXPECT_ATTR(MPI_COMM_WORLD, 5, 1, 500 + mt_rank);
    EXPECT_ATTR(MPI_COMM_SELF, 5, 1, 600 + mt_rank);
    MT_MPI(MPI_Comm_delete_attr(MPI_COMM_SELF, keys[5]));
    EXPECT_EVENT(0, EV_DELETE, 5, MPI_COMM_SELF, 600 + mt_rank);
    MT_MPI(MPI_Comm_delete_attr(MPI_COMM_WORLD, keys[5]));
    EXPECT_EVENT(1, EV_DELETE, 5, MPI_COMM_WORLD, 500 + mt_rank);

    /* --- errors ------------------------------------------------------------------------------ */
    EXPECT_ERROR(MPI_Comm_set_attr(MPI_COMM_WORLD, MPI_KEYVAL_INVALID, NULL), MPI_ERR_KEYVAL);
    EXPECT_ERROR(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_KEYVAL_INVALID, &v, &flag),
                 MPI_ERR_KEYVAL);
    EXPECT_ERROR(MPI_Comm_set_attr(MPI_COMM_NULL, keys[5], NULL), MPI_ERR_COMM);
    {
        int tk = MPI_KEYVAL_INVALID, pre = MPI_TAG_UB;
        MT_MPI(MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN, &tk, NULL));
        /* a datatype keyval is not a communicator keyval */
        EXPECT_ERROR(MPI_Comm_set_attr(MPI_COMM_WORLD, tk, NULL), MPI_ERR_KEYVAL);
        MT_MPI(MPI_Type_free_keyval(&tk));
        /* predefined attributes cannot be changed, deleted or freed */
        EXPECT_ERROR(MPI_Comm_set_attr(MPI_COMM_WORLD, MPI_TAG_UB, NULL), -1);
        EXPECT_ERROR(MPI_Comm_delete_attr(MPI_COMM_WORLD, MPI_TAG_UB), -1);
        EXPECT_ERROR(MPI_Comm_free_keyval(&pre), -1);
    }

    for (i = 1; i < 7; i++)
        MT_MPI(MPI_Comm_free_keyval(&keys[i]));
    return mt_finalize();
}
