/* info_env: MPI-4 info calls outside MPI_Init..MPI_Finalize and MPI_Info_create_env.
 *   - MPI_Info_create / set / dup before MPI_Init, read after it, and again after MPI_Finalize;
 *   - MPI_Info_create_env gives the same keys and values before MPI_Init, during and after
 *     (and command/argv, if set, from the arguments given: MPICH 4.0 does not set them).
 * Single rank: after MPI_Finalize nothing can be gathered, so each rank judges itself. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int errs;
#define CHECK(c, ...)                                                                              \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            printf("FAIL line %d: ", __LINE__);                                                    \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
            errs++;                                                                                \
        }                                                                                          \
    } while (0)

static const char *keys[] = {"command", "argv", "maxprocs", "soft", "host", "arch", "wdir", "file",
                             "thread_level"};

static void same_env(MPI_Info a, MPI_Info b, const char *when)
{
    int i;
    for (i = 0; i < (int)(sizeof keys / sizeof keys[0]); i++) {
        char va[MPI_MAX_INFO_VAL], vb[MPI_MAX_INFO_VAL];
        int fa = 0, fb = 0, la = MPI_MAX_INFO_VAL, lb = MPI_MAX_INFO_VAL;
        MPI_Info_get_string(a, keys[i], &la, va, &fa);
        MPI_Info_get_string(b, keys[i], &lb, vb, &fb);
        CHECK(fa == fb && (!fa || strcmp(va, vb) == 0), "%s: key %s differs (%d/%d)", when,
              keys[i], fa, fb);
    }
}

static void check_value(MPI_Info info, const char *key, const char *want, const char *when,
                        int optional)
{
    char v[MPI_MAX_INFO_VAL];
    int flag = 0, len = MPI_MAX_INFO_VAL;
    MPI_Info_get_string(info, key, &len, v, &flag);
    CHECK((optional && !flag) || (flag && strcmp(v, want) == 0),
          "%s: %s = \"%s\" (flag %d), expected \"%s\"", when, key, flag ? v : "", flag, want);
}

int main(int argc, char **argv)
{
    MPI_Info pre, pre_dup, env_before, env_now;
    char *fake_argv[] = {(char *)"prog", (char *)"-x", (char *)"42", NULL};
    int rank = 0;

    MPI_Info_create(&pre);
    MPI_Info_set(pre, "before", "init");
    MPI_Info_dup(pre, &pre_dup);
    MPI_Info_create_env(argc, argv, &env_before);

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    check_value(pre, "before", "init", "after MPI_Init", 0);
    check_value(pre_dup, "before", "init", "dup, after MPI_Init", 0);
    MPI_Info_set(pre, "during", "yes");
    MPI_Info_create_env(argc, argv, &env_now);
    same_env(env_before, env_now, "create_env before vs during");
    MPI_Info_free(&env_now);
    MPI_Info_create_env(3, fake_argv, &env_now);
    check_value(env_now, "command", "prog", "create_env with arguments", 1);
    check_value(env_now, "argv", "-x 42", "create_env with arguments", 1);
    MPI_Info_free(&env_now);
    MPI_Finalize();

    check_value(pre, "during", "yes", "after MPI_Finalize", 0);
    MPI_Info_delete(pre, "before");
    {
        int n = -1;
        MPI_Info_get_nkeys(pre, &n);
        CHECK(n == 1, "after MPI_Finalize: %d keys, expected 1", n);
    }
    MPI_Info_create_env(argc, argv, &env_now);
    same_env(env_before, env_now, "create_env before vs after");
    MPI_Info_free(&env_now);
    MPI_Info_free(&env_before);
    MPI_Info_free(&pre);
    MPI_Info_free(&pre_dup);
    if (rank == 0 && errs == 0)
        printf(" No Errors\n");
    fflush(stdout);
    return errs ? 1 : 0;
}
