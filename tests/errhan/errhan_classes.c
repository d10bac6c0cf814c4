/* errhan_classes: error classes, codes and strings.
 *   - every MPI-3.1 error class is its own class and has a non-empty MPI_Error_string;
 *   - MPI_Add_error_class / MPI_Add_error_code / MPI_Add_error_string round trips: classes and
 *     codes are distinct, MPI_Error_class maps each code to its class, MPI_Error_string returns
 *     exactly the added string (and "" for a class or code without one), a string can be replaced;
 *   - a code can be added to a predefined class (MPI_ERR_ARG);
 *   - MPI_Add_error_string on a predefined class fails; MPI_LASTUSEDCODE covers all new classes. */
#include "mptest.h"

#define NC 6
#define NK 4

int main(int argc, char **argv)
{
    static const int classes[] = {
        MPI_SUCCESS, MPI_ERR_BUFFER, MPI_ERR_COUNT, MPI_ERR_TYPE, MPI_ERR_TAG, MPI_ERR_COMM,
        MPI_ERR_RANK, MPI_ERR_REQUEST, MPI_ERR_ROOT, MPI_ERR_GROUP, MPI_ERR_OP, MPI_ERR_TOPOLOGY,
        MPI_ERR_DIMS, MPI_ERR_ARG, MPI_ERR_UNKNOWN, MPI_ERR_TRUNCATE, MPI_ERR_OTHER,
        MPI_ERR_INTERN, MPI_ERR_IN_STATUS, MPI_ERR_PENDING, MPI_ERR_KEYVAL, MPI_ERR_NO_MEM,
        MPI_ERR_BASE, MPI_ERR_INFO_KEY, MPI_ERR_INFO_VALUE, MPI_ERR_INFO_NOKEY, MPI_ERR_SPAWN,
        MPI_ERR_PORT, MPI_ERR_SERVICE, MPI_ERR_NAME, MPI_ERR_WIN, MPI_ERR_SIZE, MPI_ERR_DISP,
        MPI_ERR_INFO, MPI_ERR_LOCKTYPE, MPI_ERR_ASSERT, MPI_ERR_RMA_CONFLICT, MPI_ERR_RMA_SYNC,
        MPI_ERR_RMA_RANGE, MPI_ERR_RMA_ATTACH, MPI_ERR_RMA_SHARED, MPI_ERR_RMA_FLAVOR,
        MPI_ERR_FILE, MPI_ERR_NOT_SAME, MPI_ERR_AMODE, MPI_ERR_UNSUPPORTED_DATAREP,
        MPI_ERR_UNSUPPORTED_OPERATION, MPI_ERR_NO_SUCH_FILE, MPI_ERR_FILE_EXISTS,
        MPI_ERR_BAD_FILE, MPI_ERR_ACCESS, MPI_ERR_NO_SPACE, MPI_ERR_QUOTA, MPI_ERR_READ_ONLY,
        MPI_ERR_FILE_IN_USE, MPI_ERR_DUP_DATAREP, MPI_ERR_CONVERSION, MPI_ERR_IO};
    int ncls = (int)(sizeof classes / sizeof classes[0]);
    int cls[NC], code[NC][NK + 1], i, j, k, c, len, rc, last, flag;
    char s[MPI_MAX_ERROR_STRING], want[MPI_MAX_ERROR_STRING];
    void *pv;

    mt_init(&argc, &argv);
    MT_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MT_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));

    for (i = 0; i < ncls; i++) {
        c = -1;
        MT_MPI(MPI_Error_class(classes[i], &c));
        MT_CHECK(c == classes[i], "Error_class(%d) = %d", classes[i], c);
        s[0] = 0;
        len = -1;
        MT_MPI(MPI_Error_string(classes[i], s, &len));
        MT_CHECK(len > 0 && len < MPI_MAX_ERROR_STRING && (int)strlen(s) == len,
                 "Error_string(%d): length %d, \"%s\"", classes[i], len, s);
        MT_CHECK(classes[i] <= MPI_ERR_LASTCODE, "class %d > MPI_ERR_LASTCODE", classes[i]);
    }

    /* user classes, codes and strings */
    for (i = 0; i < NC; i++) {
        MT_MPI(MPI_Add_error_class(&cls[i]));
        code[i][0] = cls[i];
        for (k = 1; k <= NK; k++)
            MT_MPI(MPI_Add_error_code(cls[i], &code[i][k]));
        for (k = 0; k <= NK; k++) {
            if ((i + k) % 3 == 0)
                continue; /* some without a string */
            snprintf(want, sizeof want, "rank %d: class %d code %d", mt_rank, i, k);
            MT_MPI(MPI_Add_error_string(code[i][k], want));
        }
    }
    for (i = 0; i < NC; i++)
        for (k = 0; k <= NK; k++) {
            for (j = 0; j < ncls; j++)
                MT_CHECK(code[i][k] != classes[j], "new value %d is a predefined class",
                         code[i][k]);
            for (j = 0; j < i * (NK + 1) + k; j++)
                MT_CHECK(code[j / (NK + 1)][j % (NK + 1)] != code[i][k],
                         "value %d handed out twice", code[i][k]);
        }
    for (i = 0; i < NC; i++)
        for (k = 0; k <= NK; k++) {
            c = -1;
            MT_MPI(MPI_Error_class(code[i][k], &c));
            MT_CHECK(c == cls[i], "Error_class of code %d = %d, expected %d", code[i][k], c,
                     cls[i]);
            s[0] = 'x';
            s[1] = 0;
            len = -1;
            MT_MPI(MPI_Error_string(code[i][k], s, &len));
            if ((i + k) % 3 == 0)
                want[0] = 0;
            else
                snprintf(want, sizeof want, "rank %d: class %d code %d", mt_rank, i, k);
            MT_CHECK(strcmp(s, want) == 0 && len == (int)strlen(want),
                     "Error_string(%d) = \"%s\" (len %d), expected \"%s\"", code[i][k], s, len,
                     want);
        }
    /* replacing a string */
    MT_MPI(MPI_Add_error_string(code[1][2], "replaced"));
    MT_MPI(MPI_Error_string(code[1][2], s, &len));
    MT_CHECK(strcmp(s, "replaced") == 0, "replaced string reads \"%s\"", s);

    /* a code in a predefined class */
    MT_MPI(MPI_Add_error_code(MPI_ERR_ARG, &k));
    c = -1;
    MT_MPI(MPI_Error_class(k, &c));
    MT_CHECK(c == MPI_ERR_ARG, "class of a code added to MPI_ERR_ARG: %d", c);
    MT_MPI(MPI_Add_error_string(k, "my bad argument"));
    MT_MPI(MPI_Error_string(k, s, &len));
#ifndef MPICH_NUMVERSION /* MPICH 4.0 returns the class's text for such codes */
    MT_CHECK(strcmp(s, "my bad argument") == 0, "string \"%s\"", s);

    /* strings of predefined classes cannot be changed (erroneous; MPICH does not detect it) */
    rc = MPI_Add_error_string(MPI_ERR_ARG, "nope");
    MT_CHECK(rc != MPI_SUCCESS, "Add_error_string on a predefined class succeeded");
#endif

    (void)rc;
    pv = NULL;
    MT_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &pv, &flag));
    last = flag && pv ? *(int *)pv : -1;
    for (i = 0; i < NC; i++) /* the largest class in use (MPI 4.0 9.5) */
        MT_CHECK(cls[i] <= last, "class %d > MPI_LASTUSEDCODE %d", cls[i], last);
    return mt_finalize();
}
