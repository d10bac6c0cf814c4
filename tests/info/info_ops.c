/* info_ops: every MPI_Info call and its errors.
 *   - create, set (new keys keep insertion order; setting a key again replaces its value in
 *     place), get (truncation to valuelen characters plus the terminator), get_valuelen,
 *     get_string (MPI-4: buflen in/out, buflen 0 asks for the size), get_nkeys, get_nthkey,
 *     delete, dup (independent copies), free (handle becomes MPI_INFO_NULL);
 *   - keys of MPI_MAX_INFO_KEY characters and values of MPI_MAX_INFO_VAL characters work, longer
 *     ones fail with MPI_ERR_INFO_KEY / MPI_ERR_INFO_VALUE; deleting a missing key fails with
 *     MPI_ERR_INFO_NOKEY; MPI_INFO_NULL fails (MPI_ERR_INFO or MPI_ERR_ARG); nthkey out of range
 *     fails; MPI_INFO_ENV can be read and duplicated;
 *   - many objects (create/free churn reuses handles correctly). */
#include "mptest.h"

static void expect_error(int rc, int cls1, int cls2, const char *what, int line)
{
    int c = -1;
    if (rc == MPI_SUCCESS) {
        mt_fail(__FILE__, line, what, "succeeded, expected an error");
        return;
    }
    MPI_Error_class(rc, &c);
    if (c != cls1 && c != cls2)
        mt_fail(__FILE__, line, what, "error class %d, expected %d or %d", c, cls1, cls2);
}
#define EXPECT_ERROR(call, c1, c2) expect_error((call), (c1), (c2), #call, __LINE__)

static void expect_value(MPI_Info info, const char *key, const char *want, int line)
{
    char v[MPI_MAX_INFO_VAL + 1];
    int flag = -1, len = -1;
    MT_MPI(MPI_Info_get(info, key, MPI_MAX_INFO_VAL, v, &flag));
    if (!want) {
        if (flag)
            mt_fail(__FILE__, line, key, "present (\"%s\"), expected absent", v);
        return;
    }
    if (!flag) {
        mt_fail(__FILE__, line, key, "absent, expected \"%s\"", want);
        return;
    }
    if (strcmp(v, want) != 0)
        mt_fail(__FILE__, line, key, "value \"%s\", expected \"%s\"", v, want);
    MT_MPI(MPI_Info_get_valuelen(info, key, &len, &flag));
    if (!flag || len != (int)strlen(want))
        mt_fail(__FILE__, line, key, "valuelen %d flag %d, expected %d", len, flag,
                (int)strlen(want));
}
#define EXPECT_VALUE(info, key, want) expect_value(info, key, want, __LINE__)

static void expect_keys(MPI_Info info, const char *const *want, int n, int line)
{
    char k[MPI_MAX_INFO_KEY + 1];
    int nkeys = -1, i;
    MT_MPI(MPI_Info_get_nkeys(info, &nkeys));
    if (nkeys != n) {
        mt_fail(__FILE__, line, "nkeys", "%d keys, expected %d", nkeys, n);
        return;
    }
    for (i = 0; i < n; i++) {
        k[0] = 0;
        MT_MPI(MPI_Info_get_nthkey(info, i, k));
        if (strcmp(k, want[i]) != 0)
            mt_fail(__FILE__, line, "nthkey", "key %d is \"%s\", expected \"%s\"", i, k, want[i]);
    }
}
#define EXPECT_KEYS(info, ...)                                                                     \
    do {                                                                                           \
        static const char *const w_[] = {__VA_ARGS__};                                            \
        expect_keys(info, w_, (int)(sizeof w_ / sizeof w_[0]), __LINE__);                          \
    } while (0)

int main(int argc, char **argv)
{
    MPI_Info info, dup, null = MPI_INFO_NULL, many[200];
    char v[MPI_MAX_INFO_VAL + 2], longkey[MPI_MAX_INFO_KEY + 2];
    static char longval[MPI_MAX_INFO_VAL + 2];
    int flag, len, n, i, j;

    mt_init(&argc, &argv);
    MT_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MT_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));

    MT_MPI(MPI_Info_create(&info));
    MT_CHECK(info != MPI_INFO_NULL, "Info_create returned MPI_INFO_NULL");
    MT_MPI(MPI_Info_get_nkeys(info, &n));
    MT_CHECK(n == 0, "new info has %d keys", n);
    MT_MPI(MPI_Info_set(info, "zeta", "1"));
    MT_MPI(MPI_Info_set(info, "alpha", "two"));
    MT_MPI(MPI_Info_set(info, "mid", "three three"));
    EXPECT_KEYS(info, "zeta", "alpha", "mid");
    MT_MPI(MPI_Info_set(info, "alpha", "replaced value")); /* same place */
    EXPECT_KEYS(info, "zeta", "alpha", "mid");
    EXPECT_VALUE(info, "alpha", "replaced value");
    EXPECT_VALUE(info, "zeta", "1");
    EXPECT_VALUE(info, "nope", NULL);
    EXPECT_VALUE(info, "Alpha", NULL); /* keys are case sensitive */

    /* Info_get truncates to valuelen characters and terminates (MPICH also returns
     * MPI_ERR_INFO_VALUE then; the standard just says the value is truncated) */
    memset(v, 'x', sizeof v);
    flag = 0;
    (void)MPI_Info_get(info, "alpha", 4, v, &flag);
    MT_CHECK(flag && strcmp(v, "repl") == 0, "truncated get: \"%s\"", v);

    /* Info_get_string */
    len = 0;
    v[0] = 'C';
    MT_MPI(MPI_Info_get_string(info, "alpha", &len, v, &flag));
    MT_CHECK(flag && len == 15 && v[0] == 'C', "get_string buflen 0: flag %d len %d", flag, len);
    len = 5;
    MT_MPI(MPI_Info_get_string(info, "alpha", &len, v, &flag));
    MT_CHECK(flag && len == 15 && strcmp(v, "repl") == 0, "get_string buflen 5: len %d \"%s\"",
             len, v);
    len = sizeof v;
    MT_MPI(MPI_Info_get_string(info, "alpha", &len, v, &flag));
    MT_CHECK(flag && len == 15 && strcmp(v, "replaced value") == 0, "get_string: len %d \"%s\"",
             len, v);
    len = 10;
    v[0] = 'C';
    MT_MPI(MPI_Info_get_string(info, "missing", &len, v, &flag));
    MT_CHECK(!flag && v[0] == 'C', "get_string of a missing key: flag %d", flag);

    /* dup is an independent copy */
    MT_MPI(MPI_Info_dup(info, &dup));
    MT_CHECK(dup != info, "Info_dup returned the same handle");
    EXPECT_KEYS(dup, "zeta", "alpha", "mid");
    MT_MPI(MPI_Info_delete(dup, "zeta"));
    MT_MPI(MPI_Info_set(dup, "new", "v"));
    EXPECT_KEYS(dup, "alpha", "mid", "new");
    EXPECT_KEYS(info, "zeta", "alpha", "mid");
    EXPECT_VALUE(info, "new", NULL);
    MT_MPI(MPI_Info_free(&dup));
    MT_CHECK(dup == MPI_INFO_NULL, "Info_free did not reset the handle");
    EXPECT_VALUE(info, "mid", "three three");

    /* delete */
    MT_MPI(MPI_Info_delete(info, "alpha"));
    EXPECT_KEYS(info, "zeta", "mid");
    EXPECT_ERROR(MPI_Info_delete(info, "alpha"), MPI_ERR_INFO_NOKEY, MPI_ERR_INFO_NOKEY);

    /* length limits */
    memset(longkey, 'k', MPI_MAX_INFO_KEY);
    longkey[MPI_MAX_INFO_KEY] = 0;
    memset(longval, 'v', MPI_MAX_INFO_VAL);
    longval[MPI_MAX_INFO_VAL] = 0;
    MT_MPI(MPI_Info_set(info, longkey, longval));
    MT_MPI(MPI_Info_get_valuelen(info, longkey, &len, &flag));
    MT_CHECK(flag && len == MPI_MAX_INFO_VAL, "longest value: len %d", len);
    MT_MPI(MPI_Info_get(info, longkey, MPI_MAX_INFO_VAL, v, &flag));
    MT_CHECK(flag && strcmp(v, longval) == 0, "longest value read back wrong");
    MT_MPI(MPI_Info_get_nthkey(info, 2, v));
    /* MPICH 4.0 returns MPI_MAX_INFO_KEY - 1 characters of it */
    MT_CHECK(strlen(v) >= MPI_MAX_INFO_KEY - 1 && strncmp(v, longkey, strlen(v)) == 0,
             "longest key read back wrong (%d characters)", (int)strlen(v));
    longkey[MPI_MAX_INFO_KEY] = 'k';
    longkey[MPI_MAX_INFO_KEY + 1] = 0;
    EXPECT_ERROR(MPI_Info_set(info, longkey, "v"), MPI_ERR_INFO_KEY, MPI_ERR_INFO_KEY);
    longval[MPI_MAX_INFO_VAL] = 'v';
    longval[MPI_MAX_INFO_VAL + 1] = 0;
    EXPECT_ERROR(MPI_Info_set(info, "k", longval), MPI_ERR_INFO_VALUE, MPI_ERR_INFO_VALUE);
    EXPECT_ERROR(MPI_Info_get_nthkey(info, 3, v), MPI_ERR_ARG, MPI_ERR_INFO_KEY);
    EXPECT_ERROR(MPI_Info_get_nthkey(info, -1, v), MPI_ERR_ARG, MPI_ERR_INFO_KEY);

    /* MPI_INFO_NULL */
    EXPECT_ERROR(MPI_Info_set(MPI_INFO_NULL, "a", "b"), MPI_ERR_INFO, MPI_ERR_ARG);
    EXPECT_ERROR(MPI_Info_get_nkeys(MPI_INFO_NULL, &n), MPI_ERR_INFO, MPI_ERR_ARG);
    EXPECT_ERROR(MPI_Info_dup(MPI_INFO_NULL, &dup), MPI_ERR_INFO, MPI_ERR_ARG);
    EXPECT_ERROR(MPI_Info_free(&null), MPI_ERR_INFO, MPI_ERR_ARG);

    /* MPI_INFO_ENV: readable, duplicable */
    MT_MPI(MPI_Info_get_nkeys(MPI_INFO_ENV, &n));
    for (i = 0; i < n; i++) {
        char k[MPI_MAX_INFO_KEY + 1];
        MT_MPI(MPI_Info_get_nthkey(MPI_INFO_ENV, i, k));
        MT_MPI(MPI_Info_get_valuelen(MPI_INFO_ENV, k, &len, &flag));
        MT_CHECK(flag && len >= 0 && len <= MPI_MAX_INFO_VAL, "MPI_INFO_ENV key %s", k);
    }
    MT_MPI(MPI_Info_get(MPI_INFO_ENV, "command", MPI_MAX_INFO_VAL, v, &flag));
    MT_MPI(MPI_Info_dup(MPI_INFO_ENV, &dup));
    MT_MPI(MPI_Info_get_nkeys(dup, &j));
    MT_CHECK(j == n, "dup of MPI_INFO_ENV has %d keys, MPI_INFO_ENV %d", j, n);
    MT_MPI(MPI_Info_free(&dup));

    /* churn: many objects, every other freed and recreated */
    for (i = 0; i < 200; i++) {
        char k[32], val[32];
        MT_MPI(MPI_Info_create(&many[i]));
        snprintf(k, sizeof k, "key%d", i);
        snprintf(val, sizeof val, "value%d", i);
        MT_MPI(MPI_Info_set(many[i], k, val));
    }
    for (i = 0; i < 200; i += 2)
        MT_MPI(MPI_Info_free(&many[i]));
    for (i = 0; i < 200; i += 2) {
        MT_MPI(MPI_Info_create(&many[i]));
        MT_MPI(MPI_Info_set(many[i], "again", "yes"));
    }
    for (i = 0; i < 200; i++) {
        char k[32], val[32];
        snprintf(k, sizeof k, "key%d", i);
        snprintf(val, sizeof val, "value%d", i);
        MT_MPI(MPI_Info_get_nkeys(many[i], &n));
        MT_CHECK(n == 1, "info %d has %d keys", i, n);
        if (i % 2)
            EXPECT_VALUE(many[i], k, val);
        else
            EXPECT_VALUE(many[i], "again", "yes");
        MT_MPI(MPI_Info_free(&many[i]));
    }
    MT_MPI(MPI_Info_free(&info));
    return mt_finalize();
}
