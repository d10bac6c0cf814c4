/* attr_predef: the predefined attributes of MPI_COMM_WORLD and the deprecated MPI-1 attribute API.
 *   - MPI_TAG_UB >= 32767 and a message with that tag goes through; MPI_HOST is MPI_PROC_NULL or a
 *     rank; MPI_IO is a rank, MPI_ANY_SOURCE or MPI_PROC_NULL; MPI_WTIME_IS_GLOBAL (if set) 0 or 1;
 *     MPI_APPNUM (if set) >= 0; MPI_UNIVERSE_SIZE (if set) >= the world size; MPI_LASTUSEDCODE is
 *     set, >= MPI_ERR_LASTCODE, and follows MPI_Add_error_class / MPI_Add_error_code;
 *   - the same values through MPI_Attr_get;
 *   - MPI_Keyval_create / MPI_Attr_put / MPI_Attr_get / MPI_Attr_delete / MPI_Keyval_free with
 *     MPI_DUP_FN, MPI_NULL_COPY_FN and MPI_NULL_DELETE_FN, across MPI_Comm_dup. */
#include "mptest.h"

static int get_int_attr(MPI_Comm comm, int key, int *flag)
{
    void *v = NULL;
    int *p;
    *flag = -1;
    MT_MPI(MPI_Comm_get_attr(comm, key, &v, flag));
    if (*flag != 1)
        return 0;
    p = (int *)v;
    return p ? *p : -12345;
}

static int legacy_deletes;
static int legacy_delete(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)extra;
    MT_CHECK((intptr_t)value == 7 + mt_rank || (intptr_t)value == 8 + mt_rank,
             "legacy delete got value %ld", (long)(intptr_t)value);
    legacy_deletes++;
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    int flag, v, cls, code, last, last2;
    void *pv;

    mt_init(&argc, &argv);
    MT_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    v = get_int_attr(MPI_COMM_WORLD, MPI_TAG_UB, &flag);
    MT_CHECK(flag == 1 && v >= 32767, "MPI_TAG_UB flag %d value %d", flag, v);
    if (flag == 1 && v >= 32767) {
        /* the largest tag works */
        int x = 1234 + mt_rank, y = -1;
        MT_MPI(MPI_Sendrecv(&x, 1, MPI_INT, mt_rank, v, &y, 1, MPI_INT, mt_rank, v, MPI_COMM_WORLD,
                            MPI_STATUS_IGNORE));
        MT_CHECK(y == x, "message with tag MPI_TAG_UB: got %d", y);
    }
    v = get_int_attr(MPI_COMM_WORLD, MPI_HOST, &flag);
    MT_CHECK(flag == 1 && (v == MPI_PROC_NULL || (v >= 0 && v < mt_size)), "MPI_HOST %d %d", flag,
             v);
    v = get_int_attr(MPI_COMM_WORLD, MPI_IO, &flag);
    MT_CHECK(flag == 1 &&
                 (v == MPI_ANY_SOURCE || v == MPI_PROC_NULL || (v >= 0 && v < mt_size)),
             "MPI_IO %d %d", flag, v);
    v = get_int_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &flag);
    MT_CHECK(flag == 0 || v == 0 || v == 1, "MPI_WTIME_IS_GLOBAL %d", v);
    v = get_int_attr(MPI_COMM_WORLD, MPI_APPNUM, &flag);
    MT_CHECK(flag == 0 || v >= 0, "MPI_APPNUM %d", v);
    v = get_int_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &flag);
    MT_CHECK(flag == 0 || v >= mt_size, "MPI_UNIVERSE_SIZE %d < world size %d", v, mt_size);

    last = get_int_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &flag);
    MT_CHECK(flag == 1 && last >= MPI_ERR_LASTCODE, "MPI_LASTUSEDCODE flag %d value %d", flag,
             last);
    MT_MPI(MPI_Add_error_class(&cls));
    last2 = get_int_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &flag);
    MT_CHECK(flag == 1 && last2 >= cls && last2 >= last,
             "MPI_LASTUSEDCODE %d after adding class %d (before: %d)", last2, cls, last);
    MT_MPI(MPI_Add_error_code(cls, &code)); /* LASTUSEDCODE is the largest class (MPI 4.0 9.5) */
    last = get_int_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &flag);
    MT_CHECK(flag == 1 && last >= last2, "MPI_LASTUSEDCODE %d after adding code %d", last, code);

    /* deprecated names see the same values */
    pv = NULL;
    flag = -1;
    MT_MPI(MPI_Attr_get(MPI_COMM_WORLD, MPI_TAG_UB, &pv, &flag));
    MT_CHECK(flag == 1 && pv && *(int *)pv >= 32767, "MPI_Attr_get(MPI_TAG_UB)");

    /* MPI-1 keyvals */
    {
        int kdup = MPI_KEYVAL_INVALID, knull = MPI_KEYVAL_INVALID, knodel = MPI_KEYVAL_INVALID;
        MPI_Comm d;
        MT_MPI(MPI_Keyval_create(MPI_DUP_FN, legacy_delete, &kdup, NULL));
        MT_MPI(MPI_Keyval_create(MPI_NULL_COPY_FN, legacy_delete, &knull, NULL));
        MT_MPI(MPI_Keyval_create(MPI_DUP_FN, MPI_NULL_DELETE_FN, &knodel, NULL));
        MT_CHECK(kdup != knull && knull != knodel && kdup != knodel, "keyvals not distinct");
        MT_MPI(MPI_Attr_put(MPI_COMM_WORLD, kdup, (void *)(intptr_t)(7 + mt_rank)));
        MT_MPI(MPI_Attr_put(MPI_COMM_WORLD, knull, (void *)(intptr_t)(8 + mt_rank)));
        MT_MPI(MPI_Attr_put(MPI_COMM_WORLD, knodel, (void *)(intptr_t)99));
        MT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &d));
        pv = NULL;
        MT_MPI(MPI_Attr_get(d, kdup, &pv, &flag));
        MT_CHECK(flag == 1 && (intptr_t)pv == 7 + mt_rank, "MPI_DUP_FN copy: flag %d value %ld",
                 flag, (long)(intptr_t)pv);
        MT_MPI(MPI_Attr_get(d, knull, &pv, &flag));
        MT_CHECK(flag == 0, "MPI_NULL_COPY_FN attribute was copied");
        MT_MPI(MPI_Attr_get(d, knodel, &pv, &flag));
        MT_CHECK(flag == 1 && (intptr_t)pv == 99, "MPI_DUP_FN copy of knodel");
        legacy_deletes = 0;
        MT_MPI(MPI_Comm_free(&d));
        MT_CHECK(legacy_deletes == 1, "freeing the dup ran %d deletes, expected 1", legacy_deletes);
        MT_MPI(MPI_Attr_delete(MPI_COMM_WORLD, kdup));
        MT_MPI(MPI_Attr_delete(MPI_COMM_WORLD, knull));
        MT_MPI(MPI_Attr_delete(MPI_COMM_WORLD, knodel));
        MT_CHECK(legacy_deletes == 3, "Attr_delete ran %d deletes in all, expected 3",
                 legacy_deletes);
        MT_MPI(MPI_Attr_get(MPI_COMM_WORLD, kdup, &pv, &flag));
        MT_CHECK(flag == 0, "attribute still there after MPI_Attr_delete");
        MT_MPI(MPI_Keyval_free(&kdup));
        MT_MPI(MPI_Keyval_free(&knull));
        MT_MPI(MPI_Keyval_free(&knodel));
        MT_CHECK(kdup == MPI_KEYVAL_INVALID && knull == MPI_KEYVAL_INVALID,
                 "MPI_Keyval_free did not reset the handle");
    }
    return mt_finalize();
}
