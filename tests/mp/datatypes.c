/* datatypes: every predefined C datatype (MPI-3.1 table 3.2 and the MINLOC/MAXLOC pair types)
 * sent and received with correct values, 1, 17 and 5000 elements (the largest crosses any eager
 * limit), between partners and to self; Get_count equals the element count. Values are compared
 * as values (not bytes), so padding in long double and pair types does not matter. */
#include "mptest.h"

#include <complex.h>
#include <stdbool.h>
#include <wchar.h>

#define DEF_SCALAR(id, T, expr)                                                                    \
    static void fill_##id(void *b, int n, int s)                                                   \
    {                                                                                              \
        T *p = (T *)b;                                                                             \
        int i;                                                                                     \
        for (i = 0; i < n; i++)                                                                    \
            p[i] = (T)(expr);                                                                      \
    }                                                                                              \
    static int check_##id(const void *b, int n, int s)                                             \
    {                                                                                              \
        const T *p = (const T *)b;                                                                 \
        int i;                                                                                     \
        for (i = 0; i < n; i++)                                                                    \
            if (p[i] != (T)(expr))                                                                 \
                return i;                                                                          \
        return -1;                                                                                 \
    }

#define DEF_PAIR(id, T1, T2)                                                                       \
    typedef struct {                                                                               \
        T1 v;                                                                                      \
        T2 k;                                                                                      \
    } pair_##id;                                                                                   \
    static void fill_##id(void *b, int n, int s)                                                   \
    {                                                                                              \
        pair_##id *p = (pair_##id *)b;                                                             \
        int i;                                                                                     \
        memset(b, 0, sizeof(*p) * (size_t)n);                                                      \
        for (i = 0; i < n; i++) {                                                                  \
            p[i].v = (T1)(i * 3 - s * 7);                                                          \
            p[i].k = (T2)(i - 5 * s);                                                              \
        }                                                                                          \
    }                                                                                              \
    static int check_##id(const void *b, int n, int s)                                             \
    {                                                                                              \
        const pair_##id *p = (const pair_##id *)b;                                                 \
        int i;                                                                                     \
        for (i = 0; i < n; i++)                                                                    \
            if (p[i].v != (T1)(i * 3 - s * 7) || p[i].k != (T2)(i - 5 * s))                        \
                return i;                                                                          \
        return -1;                                                                                 \
    }

/* Signed values alternate in sign; wide types use their high bits; unsigned types wrap. */
#define SIGNED_EXPR ((i % 2 ? -1 : 1) * (i * 37 + s * 1001 + 3))
#define WIDE_EXPR ((i % 2 ? -1 : 1) * (((long long)i << 33) + s * 1001 + 3))
#define UWIDE_EXPR ((((unsigned long long)i << 35) | 0x8000000000000000ull) + (unsigned)s)
#define FLOAT_EXPR (i * 0.25 - s * 3.5)

DEF_SCALAR(char, char, 'A' + (i + s) % 26)
DEF_SCALAR(schar, signed char, SIGNED_EXPR % 128)
DEF_SCALAR(uchar, unsigned char, i * 7 + s)
DEF_SCALAR(byte, unsigned char, 255 - (i + s) % 256)
DEF_SCALAR(wchar, wchar_t, 0x3B1 + (i + s) % 100)
DEF_SCALAR(short, short, SIGNED_EXPR % 32000)
DEF_SCALAR(ushort, unsigned short, 65535 - i * 3 - s)
DEF_SCALAR(int, int, SIGNED_EXPR * 1000)
DEF_SCALAR(unsigned, unsigned, 0xF0000000u + (unsigned)(i * 1000 + s))
DEF_SCALAR(long, long, WIDE_EXPR)
DEF_SCALAR(ulong, unsigned long, UWIDE_EXPR)
DEF_SCALAR(llong, long long, WIDE_EXPR)
DEF_SCALAR(llongint, long long int, -WIDE_EXPR)
DEF_SCALAR(ullong, unsigned long long, UWIDE_EXPR)
DEF_SCALAR(float, float, FLOAT_EXPR)
DEF_SCALAR(double, double, FLOAT_EXPR * 1e200)
DEF_SCALAR(ldouble, long double, (long double)i / 3.0L - s)
DEF_SCALAR(bool, bool, (i + s) % 3 == 0)
DEF_SCALAR(int8, int8_t, SIGNED_EXPR % 128)
DEF_SCALAR(int16, int16_t, SIGNED_EXPR % 32000)
DEF_SCALAR(int32, int32_t, SIGNED_EXPR * 100000)
DEF_SCALAR(int64, int64_t, WIDE_EXPR)
DEF_SCALAR(uint8, uint8_t, 200 + (i + s) % 56)
DEF_SCALAR(uint16, uint16_t, 60000 + (i + s) % 5000)
DEF_SCALAR(uint32, uint32_t, 4000000000u + (uint32_t)(i + s))
DEF_SCALAR(uint64, uint64_t, UWIDE_EXPR)
DEF_SCALAR(aint, MPI_Aint, WIDE_EXPR)
DEF_SCALAR(offset, MPI_Offset, -WIDE_EXPR)
DEF_SCALAR(count, MPI_Count, WIDE_EXPR + 1)
DEF_SCALAR(packed, unsigned char, (i * 13 + s) % 256)
DEF_SCALAR(ccomplex, float _Complex, (float)i + (float)s * 1.5f * I)
DEF_SCALAR(cfcomplex, float _Complex, (float)s - (float)i * 0.5f * I)
DEF_SCALAR(cdcomplex, double _Complex, (double)i * 1e100 + (double)s * I)
DEF_SCALAR(cldcomplex, long double _Complex, (long double)i / 7.0L + (long double)s / 3.0L * I)
DEF_PAIR(float_int, float, int)
DEF_PAIR(double_int, double, int)
DEF_PAIR(long_int, long, int)
DEF_PAIR(two_int, int, int)
DEF_PAIR(short_int, short, int)
DEF_PAIR(ldouble_int, long double, int)

struct dtype {
    MPI_Datatype t;
    const char *name;
    size_t size;
    void (*fill)(void *, int, int);
    int (*check)(const void *, int, int);
};

#define T(mpi, id, ctype) {mpi, #mpi, sizeof(ctype), fill_##id, check_##id}

int main(int argc, char **argv)
{
    struct dtype types[] = {
        T(MPI_CHAR, char, char),
        T(MPI_SIGNED_CHAR, schar, signed char),
        T(MPI_UNSIGNED_CHAR, uchar, unsigned char),
        T(MPI_BYTE, byte, unsigned char),
        T(MPI_WCHAR, wchar, wchar_t),
        T(MPI_SHORT, short, short),
        T(MPI_UNSIGNED_SHORT, ushort, unsigned short),
        T(MPI_INT, int, int),
        T(MPI_UNSIGNED, unsigned, unsigned),
        T(MPI_LONG, long, long),
        T(MPI_UNSIGNED_LONG, ulong, unsigned long),
        T(MPI_LONG_LONG, llong, long long),
        T(MPI_LONG_LONG_INT, llongint, long long int),
        T(MPI_UNSIGNED_LONG_LONG, ullong, unsigned long long),
        T(MPI_FLOAT, float, float),
        T(MPI_DOUBLE, double, double),
        T(MPI_LONG_DOUBLE, ldouble, long double),
        T(MPI_C_BOOL, bool, bool),
        T(MPI_INT8_T, int8, int8_t),
        T(MPI_INT16_T, int16, int16_t),
        T(MPI_INT32_T, int32, int32_t),
        T(MPI_INT64_T, int64, int64_t),
        T(MPI_UINT8_T, uint8, uint8_t),
        T(MPI_UINT16_T, uint16, uint16_t),
        T(MPI_UINT32_T, uint32, uint32_t),
        T(MPI_UINT64_T, uint64, uint64_t),
        T(MPI_AINT, aint, MPI_Aint),
        T(MPI_OFFSET, offset, MPI_Offset),
        T(MPI_COUNT, count, MPI_Count),
        T(MPI_PACKED, packed, unsigned char),
        T(MPI_C_COMPLEX, ccomplex, float _Complex),
        T(MPI_C_FLOAT_COMPLEX, cfcomplex, float _Complex),
        T(MPI_C_DOUBLE_COMPLEX, cdcomplex, double _Complex),
        T(MPI_C_LONG_DOUBLE_COMPLEX, cldcomplex, long double _Complex),
        T(MPI_FLOAT_INT, float_int, pair_float_int),
        T(MPI_DOUBLE_INT, double_int, pair_double_int),
        T(MPI_LONG_INT, long_int, pair_long_int),
        T(MPI_2INT, two_int, pair_two_int),
        T(MPI_SHORT_INT, short_int, pair_short_int),
        T(MPI_LONG_DOUBLE_INT, ldouble_int, pair_ldouble_int),
    };
    const int counts[] = {1, 17, 5000};
    int nt = (int)(sizeof types / sizeof types[0]), t, c, peer;

    mt_init(&argc, &argv);
    peer = mt_partner();
    for (t = 0; t < nt; t++) {
        for (c = 0; c < 3; c++) {
            int n = counts[c], tag = t * 3 + c, got = -1, bad;
            size_t bytes = types[t].size * (size_t)n;
            void *sb = mt_malloc(bytes), *rb = mt_malloc(bytes);
            MPI_Request r;
            MPI_Status st;
            types[t].fill(sb, n, mt_rank + 1);
            memset(rb, 0xA5, bytes);
            MPI_Irecv(rb, n, types[t].t, peer, tag, MPI_COMM_WORLD, &r);
            MPI_Send(sb, n, types[t].t, peer, tag, MPI_COMM_WORLD);
            MPI_Wait(&r, &st);
            MPI_Get_count(&st, types[t].t, &got);
            MT_CHECK(got == n, "%s x %d: Get_count %d", types[t].name, n, got);
            bad = types[t].check(rb, n, peer + 1);
            MT_CHECK(bad < 0, "%s x %d: element %d has the wrong value", types[t].name, n, bad);
            free(sb);
            free(rb);
        }
    }
    return mt_finalize();
}
