/* Lists every MPI_T control variable as "cvar NAME = VALUE" (the value printed the way
 * `wanmpi-info --tunables` prints a tunable: bools 0/1, integers in decimal, doubles with %g,
 * an enumeration's item name, strings as they are), checking on the way that get_info, the
 * handles and the reads agree with each other. check_cvars.cmake compares the list with
 * wanmpi-info's. Runs before MPI_Init (as MPI_T allows) and again inside MPI. */
#include <stdlib.h>

#include "mpit_util.h"

static void list_cvars(int print)
{
    int n = 0;
    OK(MPI_T_cvar_get_num(&n));
    CHECK(n > 50, "only %d control variables", n);
    for (int i = 0; i < n; i++) {
        char name[256], desc[4096];
        int name_len = sizeof name, desc_len = sizeof desc, verb, bind, scope;
        MPI_Datatype dt;
        MPI_T_enum en;
        OK(MPI_T_cvar_get_info(i, name, &name_len, &verb, &dt, &en, desc, &desc_len, &bind,
                               &scope));
        CHECK(name_len == (int)strlen(name) + 1, "%s: name_len %d", name, name_len);
        CHECK(desc_len > 1, "%s: no description", name);
        CHECK(bind == MPI_T_BIND_NO_OBJECT, "%s: bind %d", name, bind);
        CHECK(scope == MPI_T_SCOPE_READONLY || scope == MPI_T_SCOPE_LOCAL ||
                  scope == MPI_T_SCOPE_ALL_EQ,
              "%s: scope %d", name, scope);
        CHECK(verb >= MPI_T_VERBOSITY_USER_BASIC && verb <= MPI_T_VERBOSITY_MPIDEV_ALL,
              "%s: verbosity %d", name, verb);
        int idx = -1;
        OK(MPI_T_cvar_get_index(name, &idx));
        CHECK(idx == i, "%s: get_index %d, listed at %d", name, idx, i);
        /* The length query: *len == 0 returns the length needed. */
        int need = 0;
        OK(MPI_T_cvar_get_info(i, NULL, &need, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
        CHECK(need == name_len, "%s: length query %d, expected %d", name, need, name_len);

        MPI_T_cvar_handle h;
        int count = 0;
        OK(MPI_T_cvar_handle_alloc(i, NULL, &h, &count));
        char value[8192] = "";
        if (dt == MPI_CHAR) {
            CHECK(count >= 1 && count <= (int)sizeof value, "%s: count %d", name, count);
            char *buf = malloc((size_t)count);
            OK(MPI_T_cvar_read(h, buf));
            snprintf(value, sizeof value, "%s", buf);
            free(buf);
        } else if (en != MPI_T_ENUM_NULL) {
            CHECK(dt == MPI_INT && count == 1, "%s: enum with datatype/count %d", name, count);
            int v = -1, items = 0, item_val = -1;
            char ename[256], item[256];
            int elen = sizeof ename, ilen = sizeof item;
            OK(MPI_T_cvar_read(h, &v));
            OK(MPI_T_enum_get_info(en, &items, ename, &elen));
            CHECK(items > 0 && v >= 0 && v < items, "%s: value %d of %d items", name, v, items);
            if (v >= 0 && v < items) {
                OK(MPI_T_enum_get_item(en, v, &item_val, item, &ilen));
                CHECK(item_val == v, "%s: item %d has value %d", name, v, item_val);
                snprintf(value, sizeof value, "%s", item);
            }
        } else if (dt == MPI_INT) {
            int v = -7;
            OK(MPI_T_cvar_read(h, &v));
            CHECK(v == 0 || v == 1, "%s: bool %d", name, v);
            snprintf(value, sizeof value, "%d", v);
        } else if (dt == MPI_COUNT) {
            MPI_Count v = 0;
            OK(MPI_T_cvar_read(h, &v));
            snprintf(value, sizeof value, "%lld", (long long)v);
        } else if (dt == MPI_DOUBLE) {
            double v = 0;
            OK(MPI_T_cvar_read(h, &v));
            snprintf(value, sizeof value, "%g", v);
        } else {
            CHECK(0, "%s: unexpected datatype", name);
        }
        OK(MPI_T_cvar_handle_free(&h));
        CHECK(h == MPI_T_CVAR_HANDLE_NULL, "%s: handle not reset by free", name);
        if (print) printf("cvar %s = %s\n", name, value);
    }
}

int main(int argc, char **argv)
{
    int provided;
    OK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    list_cvars(0); /* before MPI_Init */
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    list_cvars(me == 0);
    OK(MPI_T_finalize());
    int rc = mpit_done(1);
    MPI_Finalize();
    return rc;
}
