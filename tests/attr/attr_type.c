/* attr_type: datatype attributes. Keyvals with copy/delete callbacks on a predefined type
 * (MPI_INT) and on derived types; MPI_Type_dup runs the copy callbacks (MPI_TYPE_DUP_FN copies the
 * value, MPI_TYPE_NULL_COPY_FN does not); MPI_Type_free runs the delete callbacks in LIFO order;
 * replacing and deleting; a communicator keyval does not work on a datatype. */
#include "mptest.h"

static int nev, ev_key[16], ev_val[16];
static int keys[4];
static MPI_Datatype ev_type[16];

static int key_index(int k)
{
    int i;
    for (i = 0; i < 4; i++)
        if (keys[i] == k)
            return i;
    return -1;
}

static int copy_cb(MPI_Datatype t, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)t;
    (void)keyval;
    MT_CHECK(extra == (void *)&keys[0], "copy: extra_state mismatch");
    *(void **)out = (void *)((intptr_t)in * 2);
    *flag = 1;
    return MPI_SUCCESS;
}

static int delete_cb(MPI_Datatype t, int keyval, void *value, void *extra)
{
    (void)extra;
    if (nev < 16) {
        ev_key[nev] = key_index(keyval);
        ev_val[nev] = (int)(intptr_t)value;
        ev_type[nev] = t;
    }
    nev++;
    return MPI_SUCCESS;
}

static int get(MPI_Datatype t, int key, int *flag)
{
    void *v = NULL;
    *flag = -1;
    MT_MPI(MPI_Type_get_attr(t, keys[key], &v, flag));
    return (int)(intptr_t)v;
}

int main(int argc, char **argv)
{
    MPI_Datatype vec, dup;
    int flag, v, rc, ck;

    mt_init(&argc, &argv);
    MT_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MT_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    MT_MPI(MPI_Type_create_keyval(copy_cb, delete_cb, &keys[0], &keys[0]));
    MT_MPI(MPI_Type_create_keyval(MPI_TYPE_DUP_FN, delete_cb, &keys[1], NULL));
    MT_MPI(MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, delete_cb, &keys[2], NULL));

    /* a predefined type */
    MT_MPI(MPI_Type_set_attr(MPI_INT, keys[2], (void *)(intptr_t)5));
    v = get(MPI_INT, 2, &flag);
    MT_CHECK(flag == 1 && v == 5, "MPI_INT attribute: flag %d value %d", flag, v);
    nev = 0;
    MT_MPI(MPI_Type_delete_attr(MPI_INT, keys[2]));
    MT_CHECK(nev == 1 && ev_val[0] == 5 && ev_type[0] == MPI_INT, "delete on MPI_INT");
    get(MPI_INT, 2, &flag);
    MT_CHECK(flag == 0, "MPI_INT attribute still there");

    /* replacing a value runs the delete callback on the old one (on a type with one attribute:
     * MPICH 4.0 mishandles replacing in a longer list) */
    MT_MPI(MPI_Type_set_attr(MPI_DOUBLE, keys[1], (void *)(intptr_t)20));
    nev = 0;
    MT_MPI(MPI_Type_set_attr(MPI_DOUBLE, keys[1], (void *)(intptr_t)21));
    MT_CHECK(nev == 1 && ev_key[0] == 1 && ev_val[0] == 20, "replace: %d deletes", nev);
    v = get(MPI_DOUBLE, 1, &flag);
    MT_CHECK(flag == 1 && v == 21, "replaced value: flag %d value %d", flag, v);
    MT_MPI(MPI_Type_delete_attr(MPI_DOUBLE, keys[1]));

    /* derived type, dup, free (the order of the deletes is not specified for datatypes: wanmpi
     * uses LIFO, MPICH keyval order; only the set of deletes is checked) */
    MT_MPI(MPI_Type_vector(3, 2, 4, MPI_DOUBLE, &vec));
    MT_MPI(MPI_Type_commit(&vec));
    MT_MPI(MPI_Type_set_attr(vec, keys[2], (void *)(intptr_t)30));
    MT_MPI(MPI_Type_set_attr(vec, keys[0], (void *)(intptr_t)10));
    MT_MPI(MPI_Type_set_attr(vec, keys[1], (void *)(intptr_t)21));
    MT_MPI(MPI_Type_dup(vec, &dup));
    v = get(dup, 0, &flag);
    MT_CHECK(flag == 1 && v == 20, "dup: copy_cb attribute flag %d value %d", flag, v);
    v = get(dup, 1, &flag);
    MT_CHECK(flag == 1 && v == 21, "dup: MPI_TYPE_DUP_FN attribute flag %d value %d", flag, v);
    get(dup, 2, &flag);
    MT_CHECK(flag == 0, "dup: MPI_TYPE_NULL_COPY_FN attribute was copied");
    nev = 0;
    MT_MPI(MPI_Type_free(&dup)); /* dup's set order: 0, 1 -> deletes 1, 0 */
    MT_CHECK(nev == 2, "Type_free(dup) ran %d deletes, expected 2", nev);
    if (nev == 2)
        MT_CHECK(ev_key[0] + ev_key[1] == 1 && ev_val[0] + ev_val[1] == 41 &&
                     ev_type[0] == ev_type[1],
                 "Type_free(dup) deletes: (%d,%d) (%d,%d)", ev_key[0], ev_val[0], ev_key[1],
                 ev_val[1]);
    nev = 0;
    MT_MPI(MPI_Type_free(&vec)); /* vec: 2, 0, 1 */
    MT_CHECK(nev == 3, "Type_free(vec) ran %d deletes, expected 3", nev);
    if (nev == 3)
        MT_CHECK(ev_key[0] + ev_key[1] + ev_key[2] == 3 &&
                     ev_val[0] + ev_val[1] + ev_val[2] == 61,
                 "Type_free(vec) deletes: keys %d %d %d", ev_key[0], ev_key[1], ev_key[2]);

    /* a communicator keyval is not a datatype keyval */
    MT_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &ck, NULL));
    rc = MPI_Type_set_attr(MPI_INT, ck, NULL);
    MT_CHECK(rc != MPI_SUCCESS, "Type_set_attr with a communicator keyval succeeded");
    MT_MPI(MPI_Comm_free_keyval(&ck));
    rc = MPI_Type_set_attr(MPI_DATATYPE_NULL, keys[0], NULL);
    MT_CHECK(rc != MPI_SUCCESS, "Type_set_attr on MPI_DATATYPE_NULL succeeded");

    MT_MPI(MPI_Type_free_keyval(&keys[0]));
    MT_MPI(MPI_Type_free_keyval(&keys[1]));
    MT_MPI(MPI_Type_free_keyval(&keys[2]));
    return mt_finalize();
}
