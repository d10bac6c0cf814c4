/* op_local.c: every predefined op on every type the standard allows, through MPI_Reduce_local,
 * checked against the same operation computed serially in C; invalid op/type pairs fail with
 * MPI_ERR_OP; user-defined ops (commutative or not, also with the large-count callback);
 * MPI_Op_commutative, MPI_Op_free; predefined ops on derived types made of one basic type.
 * Rank-local: every rank runs the same checks (a reduction is the same on each). */
#include "mptest.h"

#include <complex.h>
#include <stdbool.h>

#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wtype-limits" /* the macros below test signedness */
#endif

#define N 7

/* ---- integers: every op but MAXLOC/MINLOC ---- */
#define INT_TEST(T, DT, NAME)                                                                      \
    static void test_int_##NAME(void)                                                              \
    {                                                                                              \
        MPI_Op ops[10] = {MPI_MAX, MPI_MIN, MPI_SUM, MPI_PROD, MPI_LAND,                           \
                          MPI_LOR, MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR};                         \
        T in[N], io[N], exp[N];                                                                    \
        int o, i;                                                                                  \
        if (DT == MPI_DATATYPE_NULL) return;                                                       \
        for (o = 0; o < 10; o++) {                                                                 \
            for (i = 0; i < N; i++) {                                                              \
                in[i] = (T)((i * 37 + 11) % 9 - (((T)-1) < 0 ? 3 : 0));                            \
                io[i] = (T)((i * 53 + 5) % 7 - (((T)-1) < 0 ? 2 : 0));                             \
                if (i == 0) in[i] = 0;                                                             \
                if (i == 1) io[i] = 0;                                                             \
                switch (o) {                                                                       \
                case 0: exp[i] = in[i] > io[i] ? in[i] : io[i]; break;                             \
                case 1: exp[i] = in[i] < io[i] ? in[i] : io[i]; break;                             \
                case 2: exp[i] = (T)(in[i] + io[i]); break;                                        \
                case 3: exp[i] = (T)(in[i] * io[i]); break;                                        \
                case 4: exp[i] = (T)(in[i] && io[i]); break;                                       \
                case 5: exp[i] = (T)(in[i] || io[i]); break;                                       \
                case 6: exp[i] = (T)(!in[i] != !io[i]); break;                                     \
                case 7: exp[i] = (T)(in[i] & io[i]); break;                                        \
                case 8: exp[i] = (T)(in[i] | io[i]); break;                                        \
                default: exp[i] = (T)(in[i] ^ io[i]); break;                                       \
                }                                                                                  \
            }                                                                                      \
            MT_MPI(MPI_Reduce_local(in, io, N, DT, ops[o]));                                       \
            for (i = 0; i < N; i++)                                                                \
                if (io[i] != exp[i]) {                                                             \
                    MT_CHECK(0, "%s op #%d element %d: got %lld expected %lld", #NAME, o, i,       \
                             (long long)io[i], (long long)exp[i]);                                 \
                    break;                                                                         \
                }                                                                                  \
        }                                                                                          \
    }

INT_TEST(signed char, MPI_SIGNED_CHAR, schar)
INT_TEST(unsigned char, MPI_UNSIGNED_CHAR, uchar)
INT_TEST(short, MPI_SHORT, short)
INT_TEST(unsigned short, MPI_UNSIGNED_SHORT, ushort)
INT_TEST(int, MPI_INT, int)
INT_TEST(unsigned, MPI_UNSIGNED, unsigned)
INT_TEST(long, MPI_LONG, long)
INT_TEST(unsigned long, MPI_UNSIGNED_LONG, ulong)
INT_TEST(long long, MPI_LONG_LONG, llong)
INT_TEST(unsigned long long, MPI_UNSIGNED_LONG_LONG, ullong)
INT_TEST(int8_t, MPI_INT8_T, int8)
INT_TEST(int16_t, MPI_INT16_T, int16)
INT_TEST(int32_t, MPI_INT32_T, int32)
INT_TEST(int64_t, MPI_INT64_T, int64)
INT_TEST(uint8_t, MPI_UINT8_T, uint8)
INT_TEST(uint16_t, MPI_UINT16_T, uint16)
INT_TEST(uint32_t, MPI_UINT32_T, uint32)
INT_TEST(uint64_t, MPI_UINT64_T, uint64)
INT_TEST(MPI_Aint, MPI_AINT, aint)
INT_TEST(MPI_Offset, MPI_OFFSET, offset)
INT_TEST(MPI_Count, MPI_COUNT, count)
INT_TEST(int, MPI_INTEGER, integer)
INT_TEST(int8_t, MPI_INTEGER1, integer1)
INT_TEST(int16_t, MPI_INTEGER2, integer2)
INT_TEST(int32_t, MPI_INTEGER4, integer4)
INT_TEST(int64_t, MPI_INTEGER8, integer8)

/* ---- floating point: MAX MIN SUM PROD ---- */
#define FLOAT_TEST(T, DT, NAME)                                                                    \
    static void test_float_##NAME(void)                                                            \
    {                                                                                              \
        MPI_Op ops[4] = {MPI_MAX, MPI_MIN, MPI_SUM, MPI_PROD};                                     \
        T in[N], io[N], exp[N];                                                                    \
        int o, i;                                                                                  \
        if (DT == MPI_DATATYPE_NULL) return;                                                       \
        for (o = 0; o < 4; o++) {                                                                  \
            for (i = 0; i < N; i++) {                                                              \
                in[i] = (T)(i * 1.5 - 4.25);                                                       \
                io[i] = (T)(3.5 - i * 0.75);                                                       \
                switch (o) {                                                                       \
                case 0: exp[i] = in[i] > io[i] ? in[i] : io[i]; break;                             \
                case 1: exp[i] = in[i] < io[i] ? in[i] : io[i]; break;                             \
                case 2: exp[i] = in[i] + io[i]; break;                                             \
                default: exp[i] = in[i] * io[i]; break;                                            \
                }                                                                                  \
            }                                                                                      \
            MT_MPI(MPI_Reduce_local(in, io, N, DT, ops[o]));                                       \
            for (i = 0; i < N; i++)                                                                \
                if (io[i] != exp[i]) {                                                             \
                    MT_CHECK(0, "%s op #%d element %d: got %g expected %g", #NAME, o, i,           \
                             (double)io[i], (double)exp[i]);                                       \
                    break;                                                                         \
                }                                                                                  \
        }                                                                                          \
    }

FLOAT_TEST(float, MPI_FLOAT, float)
FLOAT_TEST(double, MPI_DOUBLE, double)
FLOAT_TEST(long double, MPI_LONG_DOUBLE, ldouble)
FLOAT_TEST(float, MPI_REAL, real)
FLOAT_TEST(double, MPI_DOUBLE_PRECISION, dprec)
FLOAT_TEST(float, MPI_REAL4, real4)
FLOAT_TEST(double, MPI_REAL8, real8)

/* ---- complex: SUM PROD ---- */
#define COMPLEX_TEST(T, DT, NAME)                                                                  \
    static void test_complex_##NAME(void)                                                          \
    {                                                                                              \
        T in[N], io[N], exp[N];                                                                    \
        int o, i;                                                                                  \
        if (DT == MPI_DATATYPE_NULL) return;                                                       \
        for (o = 0; o < 2; o++) {                                                                  \
            for (i = 0; i < N; i++) {                                                              \
                in[i] = (T)(i - 2.5) + (T)(0.5 * i) * I;                                           \
                io[i] = (T)(1.25 * i) - (T)(i - 1.0) * I;                                          \
                exp[i] = o == 0 ? in[i] + io[i] : in[i] * io[i];                                   \
            }                                                                                      \
            MT_MPI(MPI_Reduce_local(in, io, N, DT, o == 0 ? MPI_SUM : MPI_PROD));                  \
            for (i = 0; i < N; i++)                                                                \
                if (io[i] != exp[i]) {                                                             \
                    MT_CHECK(0, "%s op #%d element %d: got %g%+gi expected %g%+gi", #NAME, o, i,   \
                             (double)creall(io[i]), (double)cimagl(io[i]),                         \
                             (double)creall(exp[i]), (double)cimagl(exp[i]));                      \
                    break;                                                                         \
                }                                                                                  \
        }                                                                                          \
    }

COMPLEX_TEST(float _Complex, MPI_C_FLOAT_COMPLEX, cfloat)
COMPLEX_TEST(double _Complex, MPI_C_DOUBLE_COMPLEX, cdouble)
COMPLEX_TEST(long double _Complex, MPI_C_LONG_DOUBLE_COMPLEX, cldouble)
COMPLEX_TEST(float _Complex, MPI_CXX_FLOAT_COMPLEX, cxxfloat)
COMPLEX_TEST(double _Complex, MPI_CXX_DOUBLE_COMPLEX, cxxdouble)
COMPLEX_TEST(long double _Complex, MPI_CXX_LONG_DOUBLE_COMPLEX, cxxldouble)
COMPLEX_TEST(float _Complex, MPI_COMPLEX, fcomplex)
COMPLEX_TEST(double _Complex, MPI_DOUBLE_COMPLEX, fdcomplex)
COMPLEX_TEST(float _Complex, MPI_COMPLEX8, complex8)
COMPLEX_TEST(double _Complex, MPI_COMPLEX16, complex16)

/* ---- logical: LAND LOR LXOR on C bool, C++ bool (1 byte) and Fortran LOGICAL (0/1 ints) ---- */
#define LOGICAL_TEST(T, DT, NAME)                                                                  \
    static void test_logical_##NAME(void)                                                          \
    {                                                                                              \
        MPI_Op ops[3] = {MPI_LAND, MPI_LOR, MPI_LXOR};                                             \
        T in[4] = {0, 0, 1, 1}, io[4], exp[4];                                                     \
        int o, i;                                                                                  \
        if (DT == MPI_DATATYPE_NULL) return;                                                       \
        for (o = 0; o < 3; o++) {                                                                  \
            for (i = 0; i < 4; i++) {                                                              \
                io[i] = (T)(i & 1);                                                                \
                exp[i] = (T)(o == 0 ? (in[i] && io[i]) : o == 1 ? (in[i] || io[i])                 \
                                                                : (!in[i] != !io[i]));             \
            }                                                                                      \
            MT_MPI(MPI_Reduce_local(in, io, 4, DT, ops[o]));                                       \
            for (i = 0; i < 4; i++)                                                                \
                MT_CHECK(io[i] == exp[i], "%s op #%d element %d: got %d expected %d", #NAME, o, i, \
                         (int)io[i], (int)exp[i]);                                                 \
        }                                                                                          \
    }

LOGICAL_TEST(bool, MPI_C_BOOL, cbool)
LOGICAL_TEST(bool, MPI_CXX_BOOL, cxxbool)
LOGICAL_TEST(int, MPI_LOGICAL, logical)

static void test_byte(void)
{
    unsigned char in[N], io[N], exp[N];
    MPI_Op ops[3] = {MPI_BAND, MPI_BOR, MPI_BXOR};
    int o, i;
    for (o = 0; o < 3; o++) {
        for (i = 0; i < N; i++) {
            in[i] = (unsigned char)(0x5a + 17 * i);
            io[i] = (unsigned char)(0xc3 - 29 * i);
            exp[i] = (unsigned char)(o == 0   ? in[i] & io[i]
                                     : o == 1 ? in[i] | io[i]
                                              : in[i] ^ io[i]);
        }
        MT_MPI(MPI_Reduce_local(in, io, N, MPI_BYTE, ops[o]));
        MT_CHECK(memcmp(io, exp, N) == 0, "MPI_BYTE op #%d", o);
    }
}

/* ---- MAXLOC / MINLOC on every pair type; ties keep the smaller index ---- */
#define PAIR_TEST(V, I, DT, NAME)                                                                  \
    static void test_pair_##NAME(void)                                                             \
    {                                                                                              \
        struct {                                                                                   \
            V v;                                                                                   \
            I i;                                                                                   \
        } in[N], io[N], exp[N];                                                                    \
        int o, k;                                                                                  \
        if (DT == MPI_DATATYPE_NULL) return;                                                       \
        for (o = 0; o < 2; o++) {                                                                  \
            memset(in, 0, sizeof in), memset(io, 0, sizeof io), memset(exp, 0, sizeof exp);       \
            for (k = 0; k < N; k++) {                                                              \
                in[k].v = (V)((k * 5) % 4), in[k].i = (I)(10 + k);                                 \
                io[k].v = (V)((k * 3) % 4), io[k].i = (I)(20 - k);                                 \
                exp[k] = io[k];                                                                    \
                if (o == 0 ? in[k].v > io[k].v : in[k].v < io[k].v) exp[k] = in[k];                \
                else if (in[k].v == io[k].v && in[k].i < io[k].i) exp[k].i = in[k].i;              \
            }                                                                                      \
            MT_MPI(MPI_Reduce_local(in, io, N, DT, o == 0 ? MPI_MAXLOC : MPI_MINLOC));             \
            for (k = 0; k < N; k++)                                                                \
                MT_CHECK(io[k].v == exp[k].v && io[k].i == exp[k].i,                               \
                         "%s %s element %d: got (%g,%g) expected (%g,%g)", #NAME,                  \
                         o == 0 ? "MAXLOC" : "MINLOC", k, (double)io[k].v, (double)io[k].i,        \
                         (double)exp[k].v, (double)exp[k].i);                                      \
        }                                                                                          \
    }

PAIR_TEST(float, int, MPI_FLOAT_INT, float_int)
PAIR_TEST(double, int, MPI_DOUBLE_INT, double_int)
PAIR_TEST(long, int, MPI_LONG_INT, long_int)
PAIR_TEST(int, int, MPI_2INT, two_int)
PAIR_TEST(short, int, MPI_SHORT_INT, short_int)
PAIR_TEST(long double, int, MPI_LONG_DOUBLE_INT, ldouble_int)
PAIR_TEST(int, int, MPI_2INTEGER, two_integer)
PAIR_TEST(float, float, MPI_2REAL, two_real)
PAIR_TEST(double, double, MPI_2DOUBLE_PRECISION, two_dprec)

/* ---- invalid pairs: MPI_ERR_OP ---- */
static void expect_err_op(MPI_Op op, MPI_Datatype dt, const char *what)
{
    char in[64] = {0}, io[64] = {0};
    int rc = MPI_Reduce_local(in, io, 1, dt, op), cls = -1;
    MPI_Error_class(rc, &cls);
    MT_CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_OP,
             "%s: returned %d (class %d), expected MPI_ERR_OP", what, rc, cls);
}

/* ---- user ops ---- */
static int g_last_dt_ok;
static void user_concat(void *in, void *io, int *len, MPI_Datatype *dt)
{
    /* non-commutative: io = in * 10 + io (digits), so the order of operands shows */
    int i, *a = (int *)in, *b = (int *)io;
    g_last_dt_ok = (*dt == MPI_INT);
    for (i = 0; i < *len; i++) b[i] = a[i] * 10 + b[i];
}
static void user_max(void *in, void *io, int *len, MPI_Datatype *dt)
{
    int i;
    double *a = (double *)in, *b = (double *)io;
    (void)dt;
    for (i = 0; i < *len; i++)
        if (a[i] > b[i]) b[i] = a[i];
}
#if MPI_VERSION >= 4
static void user_sum_c(void *in, void *io, MPI_Count *len, MPI_Datatype *dt)
{
    MPI_Count i;
    long *a = (long *)in, *b = (long *)io;
    (void)dt;
    for (i = 0; i < *len; i++) b[i] += a[i];
}
#endif
/* A user op on a derived type gets the derived handle and `count` of its elements. */
static MPI_Datatype g_pair_t;
static void user_pairs(void *in, void *io, int *len, MPI_Datatype *dt)
{
    int i, *a = (int *)in, *b = (int *)io;
    g_last_dt_ok = (*dt == g_pair_t);
    for (i = 0; i < *len; i++) b[4 * i] += a[4 * i], b[4 * i + 2] -= a[4 * i + 2];
}

static void test_user_ops(void)
{
    MPI_Op op;
    int commute = -1, i;
    int a[3] = {1, 2, 3}, b[3] = {4, 5, 6};
    double x[2] = {1.0, 7.0}, y[2] = {3.0, 2.0};

    MT_MPI(MPI_Op_create(user_concat, 0, &op));
    MT_MPI(MPI_Op_commutative(op, &commute));
    MT_CHECK(commute == 0, "non-commutative op reports commute=%d", commute);
    g_last_dt_ok = 0;
    MT_MPI(MPI_Reduce_local(a, b, 3, MPI_INT, op));
    MT_CHECK(b[0] == 14 && b[1] == 25 && b[2] == 36, "user op order: %d %d %d", b[0], b[1], b[2]);
    MT_CHECK(g_last_dt_ok, "user op did not receive MPI_INT");
    MT_MPI(MPI_Op_free(&op));
    MT_CHECK(op == MPI_OP_NULL, "MPI_Op_free did not set MPI_OP_NULL");

    MT_MPI(MPI_Op_create(user_max, 1, &op));
    MT_MPI(MPI_Op_commutative(op, &commute));
    MT_CHECK(commute == 1, "commutative op reports commute=%d", commute);
    MT_MPI(MPI_Reduce_local(x, y, 2, MPI_DOUBLE, op));
    MT_CHECK(y[0] == 3.0 && y[1] == 7.0, "user max: %g %g", y[0], y[1]);
    MT_MPI(MPI_Op_free(&op));

    MT_MPI(MPI_Op_commutative(MPI_SUM, &commute));
    MT_CHECK(commute == 1, "MPI_SUM commute=%d", commute);
    MT_MPI(MPI_Op_commutative(MPI_MAXLOC, &commute));
    MT_CHECK(commute == 1, "MPI_MAXLOC commute=%d", commute);

#if MPI_VERSION >= 4
    {
        long la[4] = {1, 2, 3, 4}, lb[4] = {10, 20, 30, 40};
        MT_MPI(MPI_Op_create_c(user_sum_c, 1, &op));
        MT_MPI(MPI_Reduce_local(la, lb, 4, MPI_LONG, op));
        MT_CHECK(lb[0] == 11 && lb[3] == 44, "user op (large-count form): %ld %ld", lb[0], lb[3]);
        MT_MPI(MPI_Op_free(&op));
    }
#endif
    {
        /* derived: 2 ints used out of each 4 (vector), user op sees the derived handle */
        int in[12], io[12], ex[12];
        MPI_Type_vector(2, 1, 2, MPI_INT, &g_pair_t); /* ints 0 and 2; extent 12 */
        MPI_Type_create_resized(g_pair_t, 0, 16, &g_pair_t);
        MPI_Type_commit(&g_pair_t);
        for (i = 0; i < 12; i++) in[i] = i, io[i] = ex[i] = 100 + i;
        for (i = 0; i < 3; i++) ex[4 * i] += in[4 * i], ex[4 * i + 2] -= in[4 * i + 2];
        MT_MPI(MPI_Op_create(user_pairs, 0, &op));
        g_last_dt_ok = 0;
        MT_MPI(MPI_Reduce_local(in, io, 3, g_pair_t, op));
        MT_CHECK(g_last_dt_ok, "user op did not receive the derived datatype");
        MT_CHECK(memcmp(io, ex, sizeof io) == 0, "user op on a derived type");
        MT_MPI(MPI_Op_free(&op));
        MPI_Type_free(&g_pair_t);
    }
}

/* ---- predefined ops on derived types made of one basic type (MPI 4.0 §6.9.2: the op applies
 * to each basic element). MPICH 4.0.2's MPI_Reduce_local rejects derived types, so this part
 * runs on wanmpi only. ---- */
static void test_derived(void)
{
    MPI_Datatype vec, pairs, st;
    double in[12], io[12], ex[12];
    int i;
    /* vector of doubles: SUM touches only the typemap, holes keep their value */
    MPI_Type_vector(3, 2, 4, MPI_DOUBLE, &vec); /* doubles 0,1,4,5,8,9 */
    MPI_Type_commit(&vec);
    for (i = 0; i < 12; i++) in[i] = i + 0.5, io[i] = ex[i] = 100.0 - i;
    for (i = 0; i < 12; i++)
        if (i % 4 < 2 && i < 10) ex[i] = in[i] + io[i];
    MT_MPI(MPI_Reduce_local(in, io, 1, vec, MPI_SUM));
    MT_CHECK(memcmp(io, ex, sizeof io) == 0, "MPI_SUM on a vector of doubles");
    MPI_Type_free(&vec);

    /* contiguous of MPI_2INT with MAXLOC */
    {
        int a[8] = {5, 0, 1, 1, 7, 2, 7, 3}, b[8] = {4, 9, 1, 0, 8, 8, 7, 1};
        int e[8] = {5, 0, 1, 0, 8, 8, 7, 1};
        MPI_Type_contiguous(2, MPI_2INT, &pairs);
        MPI_Type_commit(&pairs);
        MT_MPI(MPI_Reduce_local(a, b, 2, pairs, MPI_MAXLOC));
        MT_CHECK(memcmp(b, e, sizeof b) == 0,
                 "MAXLOC on contiguous(2, MPI_2INT): %d %d %d %d %d %d %d %d", b[0], b[1], b[2],
                 b[3], b[4], b[5], b[6], b[7]);
        MPI_Type_free(&pairs);
    }
    /* struct of ints only (one basic type): BXOR */
    {
        int bl[2] = {1, 2};
        MPI_Aint dp[2] = {8, 0};
        MPI_Datatype ty[2] = {MPI_INT, MPI_INT};
        int a[3] = {0xf0, 0x0f, 0x33}, b[3] = {0xff, 0xff, 0x11};
        int e[3] = {0xf0 ^ 0xff, 0x0f ^ 0xff, 0x33 ^ 0x11};
        MPI_Type_create_struct(2, bl, dp, ty, &st);
        MPI_Type_commit(&st);
        MT_MPI(MPI_Reduce_local(a, b, 1, st, MPI_BXOR));
        MT_CHECK(memcmp(b, e, sizeof b) == 0, "BXOR on struct of ints");
        MPI_Type_free(&st);
    }
    /* a predefined op the basic type does not allow, through a derived type */
    MPI_Type_contiguous(2, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);
    expect_err_op(MPI_BAND, vec, "BAND on contiguous(double)");
    MPI_Type_free(&vec);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    test_int_schar(); test_int_uchar(); test_int_short(); test_int_ushort(); test_int_int();
    test_int_unsigned(); test_int_long(); test_int_ulong(); test_int_llong(); test_int_ullong();
    test_int_int8(); test_int_int16(); test_int_int32(); test_int_int64(); test_int_uint8();
    test_int_uint16(); test_int_uint32(); test_int_uint64(); test_int_aint(); test_int_offset();
    test_int_count(); test_int_integer(); test_int_integer1(); test_int_integer2();
    test_int_integer4(); test_int_integer8();
    test_float_float(); test_float_double(); test_float_ldouble(); test_float_real();
    test_float_dprec(); test_float_real4(); test_float_real8();
    test_complex_cfloat(); test_complex_cdouble(); test_complex_cldouble(); test_complex_cxxfloat();
    test_complex_cxxdouble(); test_complex_cxxldouble(); test_complex_fcomplex();
    test_complex_fdcomplex(); test_complex_complex8(); test_complex_complex16();
    test_logical_cbool(); test_logical_cxxbool(); test_logical_logical();
    test_byte();
    test_pair_float_int(); test_pair_double_int(); test_pair_long_int(); test_pair_two_int();
    test_pair_short_int(); test_pair_ldouble_int(); test_pair_two_integer(); test_pair_two_real();
    test_pair_two_dprec();

    expect_err_op(MPI_SUM, MPI_BYTE, "SUM on MPI_BYTE");
    expect_err_op(MPI_BAND, MPI_FLOAT, "BAND on MPI_FLOAT");
    expect_err_op(MPI_BXOR, MPI_DOUBLE, "BXOR on MPI_DOUBLE");
    expect_err_op(MPI_MAX, MPI_C_DOUBLE_COMPLEX, "MAX on MPI_C_DOUBLE_COMPLEX");
    expect_err_op(MPI_MAXLOC, MPI_INT, "MAXLOC on MPI_INT");
    expect_err_op(MPI_MINLOC, MPI_DOUBLE, "MINLOC on MPI_DOUBLE");
    expect_err_op(MPI_SUM, MPI_2INT, "SUM on MPI_2INT");
    expect_err_op(MPI_SUM, MPI_C_BOOL, "SUM on MPI_C_BOOL");
    expect_err_op(MPI_PROD, MPI_LOGICAL, "PROD on MPI_LOGICAL");
    {
        /* invalid op handle */
        int a = 1, b = 2, rc, cls = -1;
        rc = MPI_Reduce_local(&a, &b, 1, MPI_INT, MPI_OP_NULL);
        MPI_Error_class(rc, &cls);
        MT_CHECK(cls == MPI_ERR_OP, "MPI_OP_NULL: class %d", cls);
    }
    test_user_ops();
#ifdef WANMPI
    test_derived();
#endif
#ifdef WANMPI
    /* wanmpi also defines REPLACE and NO_OP for MPI_Reduce_local (MPI defines them for
     * accumulate only), quad precision and 128-bit Fortran types, and checks mixed structs. */
    {
        int a[2] = {1, 2}, b[2] = {3, 4};
        MT_MPI(MPI_Reduce_local(a, b, 2, MPI_INT, MPI_NO_OP));
        MT_CHECK(b[0] == 3 && b[1] == 4, "NO_OP changed the buffer");
        MT_MPI(MPI_Reduce_local(a, b, 2, MPI_INT, MPI_REPLACE));
        MT_CHECK(b[0] == 1 && b[1] == 2, "REPLACE did not copy");
    }
#ifdef __SIZEOF_FLOAT128__
    {
        __float128 q[2] = {1.5, 2}, r[2] = {0.25, 3};
        __int128 i[2] = {(__int128)1 << 100, 5}, j[2] = {3, (__int128)7 << 90};
        MT_MPI(MPI_Reduce_local(q, r, 2, MPI_REAL16, MPI_SUM));
        MT_CHECK(r[0] == 1.75 && r[1] == 5, "REAL16 SUM");
        MT_MPI(MPI_Reduce_local(i, j, 2, MPI_INTEGER16, MPI_SUM));
        MT_CHECK(j[0] == ((__int128)1 << 100) + 3 && j[1] == ((__int128)7 << 90) + 5,
                 "INTEGER16 SUM");
    }
#endif
    {
        int bl[2] = {1, 1};
        MPI_Aint dp[2] = {0, 8};
        MPI_Datatype ty[2] = {MPI_INT, MPI_DOUBLE}, mixed;
        MPI_Type_create_struct(2, bl, dp, ty, &mixed);
        MPI_Type_commit(&mixed);
        expect_err_op(MPI_SUM, mixed, "SUM on struct {int, double}");
        MPI_Type_free(&mixed);
    }
#endif
    return mt_finalize();
}
