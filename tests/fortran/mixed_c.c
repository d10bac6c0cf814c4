/* The C half of mixed.f90: receives Fortran INTEGER handles and statuses, converts them with
 * MPI_X_f2c / MPI_Status_f2c, uses them, and hands C objects back with MPI_X_c2f; reads and
 * writes attributes shared with Fortran. Returns the number of errors it found. Standard MPI
 * only. */
#include <mpi.h>
#include <stdio.h>

/* Attributes across languages (MPI 4.0 §19.3.7): a value set from Fortran reads in C as a
 * pointer to an address-sized integer; a pointer set from C reads in Fortran as its address. */
static int c_attr_value;
int c_attrs(MPI_Fint *fcomm, MPI_Fint *fkey, MPI_Aint *expected, MPI_Aint *cptr)
{
    int errs = 0, flag = 0;
    MPI_Aint *val = NULL;
    MPI_Comm comm = MPI_Comm_f2c(*fcomm);
    MPI_Comm_get_attr(comm, *fkey, &val, &flag);
    if (!flag || *val != *expected) {
        errs++;
        printf("C: Fortran attribute flag %d value %ld\n", flag, flag ? (long)*val : 0L);
    }
    MPI_Comm_set_attr(comm, *fkey, &c_attr_value);
    *cptr = (MPI_Aint)&c_attr_value;
    return errs;
}

int c_side(MPI_Fint *fcomm, MPI_Fint *ftype, MPI_Fint *fop, MPI_Fint *fstatus, MPI_Fint *finfo,
           MPI_Fint *fgroup, MPI_Fint *newcomm, MPI_Fint *newreq, MPI_Fint *cstatus_out)
{
    int errs = 0, result, size, wsize, rank, count, flag;
    MPI_Comm comm = MPI_Comm_f2c(*fcomm);
    MPI_Datatype type = MPI_Type_f2c(*ftype);
    MPI_Op op = MPI_Op_f2c(*fop);
    MPI_Info info = MPI_Info_f2c(*finfo);
    MPI_Group group = MPI_Group_f2c(*fgroup), wgroup;
    MPI_Status st;
    char value[MPI_MAX_INFO_VAL + 1];
    static int sendval;
    int in[3] = {1, 2, 3}, inout[3] = {10, 20, 30};

    MPI_Comm_compare(comm, MPI_COMM_WORLD, &result);
    if (result != MPI_CONGRUENT) { errs++; printf("C: comm compare %d\n", result); }
    MPI_Comm_size(comm, &size);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    MPI_Comm_rank(comm, &rank);
    if (size != wsize) errs++;
    MPI_Type_size(type, &size);
    if (size != 3 * 4) { errs++; printf("C: type size %d\n", size); }
    MPI_Reduce_local(in, inout, 3, MPI_INT, op);   /* the Fortran op: inout = in + 2*inout */
    if (inout[0] != 21 || inout[2] != 63) { errs++; printf("C: user op %d\n", inout[0]); }
    MPI_Info_get(info, "from", MPI_MAX_INFO_VAL, value, &flag);
    if (!flag || value[0] != 'F') errs++;
    MPI_Comm_group(MPI_COMM_WORLD, &wgroup);
    MPI_Group_compare(group, wgroup, &result);
    if (result != MPI_IDENT) errs++;
    MPI_Group_free(&wgroup);
    if (MPI_Comm_c2f(comm) != *fcomm || MPI_Type_c2f(type) != *ftype) errs++;

    /* a Fortran status, received in Fortran from rank `rank` with tag 5, 2 integers */
    MPI_Status_f2c(fstatus, &st);
    if (st.MPI_SOURCE != rank || st.MPI_TAG != 5) {
        errs++;
        printf("C: status %d %d\n", st.MPI_SOURCE, st.MPI_TAG);
    }
    MPI_Get_count(&st, MPI_INT, &count);
    if (count != 2) { errs++; printf("C: count %d\n", count); }
    st.MPI_TAG = 77;
    MPI_Status_c2f(&st, cstatus_out);

    /* C objects for Fortran: a reversed copy of comm and a pending send to self */
    MPI_Comm c;
    MPI_Comm_split(comm, 0, -rank, &c);
    *newcomm = MPI_Comm_c2f(c);
    MPI_Request req;
    sendval = 1000 + rank;
    MPI_Isend(&sendval, 1, MPI_INT, rank, 9, comm, &req);
    *newreq = MPI_Request_c2f(req);
    return errs;
}
