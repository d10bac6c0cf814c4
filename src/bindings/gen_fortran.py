#!/usr/bin/env python3
"""Generate wanmpi's Fortran bindings (mpif.h, the `mpi` module, the C++ entry points) from the
same lists as the C bindings (functions/*.txt) and from include/mpi.h.in's #defines, so that the
Fortran side covers every C function and every constant has the value the C side has.

Usage: gen_fortran.py FUNCTIONS_DIR MPI_H_IN FORTRAN_SRC_DIR OUT_DIR

Outputs (into OUT_DIR):
  mpif.h                 constants, sentinels (common blocks), EXTERNALs; fixed and free form
  mpi.f90                module `mpi`: the same declarations plus explicit interfaces for the
                         routines MPICH's `use mpi` declares (see has_module_interface)
  fortran_bindings.cpp   mpi_x_ and pmpi_x_ entry points (gfortran naming: lower case + "_")
  fortran_have.h         WANMPI_HAVE_MPI_X for each C function (guards the hand-written code)
  fortran_coverage.txt   every C function and how Fortran binds it (generated/hand/skip/...)
  constants_check.c      a C program checking each Fortran constant against mpi.h (a test)

Conventions (MPICH's): handles are INTEGERs equal to the C handles (C handles are ints), except
MPI_File (a pointer in C: MPI_File_f2c/c2f). MPI_Status is 5 ints in C and Fortran alike, so
statuses pass through. mpi_x_ calls the C MPI_X (so a C profiling library sees Fortran calls);
pmpi_x_ calls PMPI_X.

Parameter kinds understood (C type and name -> Fortran):
  void *buf (any name but those below)   choice buffer; MPI_BOTTOM / MPI_IN_PLACE /
                                         MPI_BUFFER_AUTOMATIC recognised by address
  void *baseptr                          INTEGER(KIND=MPI_ADDRESS_KIND) or TYPE(C_PTR) (8 bytes)
  int, handle, MPI_Aint/Count/Offset     INTEGER / INTEGER(KIND=...) by reference
  T *x, T x[], int x[][3]                passed through (same representation)
  flag, commute, reorder, high, weighted, periods, remain_dims   LOGICAL
  index, array_of_indices (with requests)   made 1-based
  MPI_Status *, MPI_Status []            INTEGER(MPI_STATUS_SIZE[,*]); MPI_STATUS(ES)_IGNORE
  int array_of_errcodes[], *weights[]    MPI_ERRCODES_IGNORE, MPI_UNWEIGHTED, MPI_WEIGHTS_EMPTY
  const char *, const char x[]           CHARACTER*(*) in: trailing blanks dropped (Info keys
                                         and values: leading too)
  char *                                 CHARACTER*(*) out: blank-padded, truncated to its length
  MPI_User_function *, *errhandler_function *   passed through (Fortran's by-reference
                                         arguments match the C signature)
  return double / MPI_Aint               Fortran function (MPI_WTIME, MPI_AINT_ADD)
Anything else makes the function UNSUPPORTED unless fortran/exceptions.txt says how it is bound.

Declarations follow MPICH (up to 4.0, Debian 12's), since programs written against it are what
users bring: mpif.h types only MPI_WTIME/MPI_WTICK (and PMPI_), and the `mpi` module gives
explicit interfaces only where MPICH's does (has_module_interface); every routine is callable
either way, the others through implicit interfaces as from mpif.h.
"""
import re
import sys
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_bindings  # noqa: E402  (the C generator's parser: one reading of the lists)

HANDLE_TYPES = {"MPI_Comm", "MPI_Group", "MPI_Datatype", "MPI_Op", "MPI_Errhandler",
                "MPI_Request", "MPI_Info", "MPI_Win", "MPI_Message", "MPI_Session"}
KIND_TYPES = {"MPI_Aint": "MPI_ADDRESS_KIND", "MPI_Count": "MPI_COUNT_KIND",
              "MPI_Offset": "MPI_OFFSET_KIND"}
LOGICAL_NAMES = {"flag", "commute", "reorder", "high", "weighted", "periods", "remain_dims"}
# Callbacks whose C signature is what a Fortran subroutine with by-reference arguments gets.
PASS_CALLBACKS = {"MPI_User_function", "MPI_Comm_errhandler_function", "MPI_Comm_errhandler_fn",
                  "MPI_Win_errhandler_function", "MPI_Win_errhandler_fn", "MPI_Handler_function",
                  "MPI_Session_errhandler_function"}
# Arrays that a list may write as `T *name` rather than `T name[]` (both mean the same in C;
# Fortran needs to know, for the interface). `index` is a scalar in Waitany/Testany.
ARRAY_NAMES = {"ranks", "ranks1", "ranks2", "dims", "periods", "coords", "index", "edges",
               "sources", "destinations", "degrees", "weights", "sourceweights", "destweights",
               "neighbors", "sendcounts", "recvcounts", "displs", "sdispls", "rdispls",
               "sendtypes", "recvtypes", "remain_dims", "array_of_errcodes"}
# Length arguments for logical output arrays / converted MPI-1 address arrays.
LENGTH_NAMES = ("maxdims", "ndims", "count", "n")
# void * arguments that are not choice buffers.
VOID_SPECIAL = {"attribute_val", "attribute_val_in", "attribute_val_out", "extra_state",
                "buffer_addr"}
# C-side sentinels -> Fortran variable (in a common block named MPI_FC_<NAME>) and its shape.
SENTINELS = [("MPI_BOTTOM", "INTEGER", ""), ("MPI_IN_PLACE", "INTEGER", ""),
             ("MPI_BUFFER_AUTOMATIC", "INTEGER", ""),
             ("MPI_STATUS_IGNORE", "INTEGER", "(MPI_STATUS_SIZE)"),
             ("MPI_STATUSES_IGNORE", "INTEGER", "(MPI_STATUS_SIZE,1)"),
             ("MPI_ERRCODES_IGNORE", "INTEGER", "(1)"),
             ("MPI_UNWEIGHTED", "INTEGER", "(1)"), ("MPI_WEIGHTS_EMPTY", "INTEGER", "(1)"),
             ("MPI_ARGV_NULL", "CHARACTER*1", "(1)"), ("MPI_ARGVS_NULL", "CHARACTER*1", "(1,1)")]
# Predefined callbacks that Fortran names as EXTERNAL procedures (fortran_runtime.cpp).
CALLBACK_EXTERNALS = ["MPI_NULL_COPY_FN", "MPI_NULL_DELETE_FN", "MPI_DUP_FN",
                      "MPI_COMM_NULL_COPY_FN", "MPI_COMM_NULL_DELETE_FN", "MPI_COMM_DUP_FN",
                      "MPI_TYPE_NULL_COPY_FN", "MPI_TYPE_NULL_DELETE_FN", "MPI_TYPE_DUP_FN",
                      "MPI_WIN_NULL_COPY_FN", "MPI_WIN_NULL_DELETE_FN", "MPI_WIN_DUP_FN",
                      "MPI_CONVERSION_FN_NULL"]
# Pointer-valued C constants with no Fortran counterpart (large-count callbacks: mpi_f08 only).
C_ONLY_POINTERS = {"MPI_CONVERSION_FN_NULL_C"}
# Constants whose Fortran kind is not default INTEGER.
OFFSET_CONSTANTS = {"MPI_DISPLACEMENT_CURRENT"}
NO_INTERFACE_NOTE = "no explicit interface in `use mpi` (as in MPICH)"
STR_OUT_MIN = 8192 + 1  # >= every MPI_MAX_* string length (MPI_MAX_LIBRARY_VERSION_STRING)
# Routines that MPICH's `use mpi` leaves without an explicit interface although they have no
# void * argument (its buildiface: %skip_routines and %scalarVectorRoutines): a scalar may be
# passed where the routine takes an array (MPI_WAITALL(1, req, ...), MPI_CART_CREATE(..., 1,
# dims, period, ...) with scalars), which an interface would reject.
MPICH_NO_INTERFACE = {
    "MPI_Pcontrol", "MPI_Startall", "MPI_Testall", "MPI_Testany", "MPI_Testsome", "MPI_Waitall",
    "MPI_Waitany", "MPI_Waitsome", "MPI_Dims_create", "MPI_Cart_rank", "MPI_Cart_coords",
    "MPI_Cart_get", "MPI_Graph_neighbors", "MPI_Cart_sub", "MPI_Cart_map", "MPI_Cart_create",
    "MPI_Graph_create", "MPI_Dist_graph_create", "MPI_Dist_graph_create_adjacent",
    "MPI_Dist_graph_neighbors", "MPI_Group_translate_ranks"}


class Unsupported(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Reading the lists and mpi.h.in

def parse_param(p):
    """'const MPI_Aint array_of_displacements[]' -> dict(base, const, ptr, array, dim2, name)."""
    if p.strip() == "...":
        return dict(raw=p, base="...", const=False, ptr=0, array=False, dim2=None, name="...")
    m = re.match(r"^(?P<type>.*?)(?P<name>\w+)\s*(?P<br>(\[\s*\d*\s*\])*)\s*$", p.strip())
    if not m:
        raise Unsupported(f"cannot parse parameter '{p}'")
    t = m.group("type")
    const = bool(re.search(r"\bconst\b", t))
    t = re.sub(r"\bconst\b", "", t)
    ptr = t.count("*")
    base = t.replace("*", "").strip()
    brackets = re.findall(r"\[\s*(\d*)\s*\]", m.group("br"))
    dim2 = None
    if len(brackets) == 2 and brackets[1]:
        dim2 = int(brackets[1])
    elif len(brackets) > 1:
        raise Unsupported(f"parameter '{p}': only T x[][N] is understood")
    return dict(raw=p, base=base, const=const, ptr=ptr, array=bool(brackets), dim2=dim2,
                name=m.group("name"))


def read_functions(fdir):
    files = sorted(Path(fdir).glob("*.txt"))
    funcs = [f for path in files for f in gen_bindings.parse(path)]
    return funcs


def read_exceptions(path):
    out = {}
    for n, raw in enumerate(Path(path).read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 2)
        if len(parts) < 2 or parts[1] not in ("hand", "skip", "mpi1"):
            raise SystemExit(f"{path}:{n}: expected 'NAME hand|skip|mpi1 [reason]'")
        out[parts[0]] = (parts[1], parts[2] if len(parts) > 2 else "")
    return out


def read_constants(mpi_h_in):
    """#define MPI_X <integer expression> from mpi.h.in, evaluated. Pointer-valued defines are
    returned separately (they are sentinels or null callbacks on the Fortran side)."""
    text = Path(mpi_h_in).read_text()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    raw, order, pointers = {}, [], []
    for line in text.splitlines():
        # MPI's names, and the WAN rate attribute keys (wanmpi's and GridMPI's aliases)
        m = re.match(r"^\s*#\s*define\s+(MPIX?_\w+|WANMPI_MAXRATE|WANMPI_MATB|YAMPI_PSP_\w+)"
                     r"(\(?)\s*(.*)$", line)
        if not m or m.group(2):
            continue
        name, val = m.group(1), m.group(3).strip()
        if name.startswith("MPI_T_") and not name.startswith("MPI_T_ERR_"):
            continue  # the tools interface is C only (MPI 4.0 §15); its error classes are not
        raw[name] = val
        order.append(name)
    macros = {"WANMPI_DT": lambda size, idx: 0x4c000000 | (size << 8) | idx}

    def evaluate(name, seen=()):
        v = raw[name]
        if re.search(r"\*\s*\)", v) or '"' in v:
            return None  # pointer casts, strings
        v = re.sub(r"\(\s*(MPI_\w+|int|unsigned|long)\s*\)", "", v)  # integer-handle casts

        def ident(m):
            w = m.group(0)
            if w in macros or re.fullmatch(r"0[xX][0-9a-fA-F]+|\d+", w):
                return w
            if w in raw and w not in seen:
                r = evaluate(w, seen + (name,))
                if r is None:
                    raise ValueError(w)
                return str(r)
            raise ValueError(w)
        try:
            expr = re.sub(r"\b[A-Za-z_]\w*\b|\b0[xX][0-9a-fA-F]+\b|\b\d+\b", ident, v)
            if not re.fullmatch(r"[\w\s()|&<>+\-~,*^]*", expr):
                return None
            return int(eval(expr, {"__builtins__": {}}, macros))
        except (ValueError, SyntaxError, TypeError, NameError):
            return None
    consts = []
    for name in order:
        v = evaluate(name)
        if v is None:
            pointers.append((name, raw[name]))
        else:
            consts.append((name, v))
    return consts, pointers


def status_layout(mpi_h_in):
    """MPI_STATUS_SIZE and the 1-based Fortran indexes of the public fields, from the C struct."""
    text = Path(mpi_h_in).read_text()
    m = re.search(r"typedef\s+struct\s+MPI_Status\s*\{(.*?)\}\s*MPI_Status\s*;", text, re.S)
    if not m:
        raise SystemExit("gen_fortran: no 'typedef struct MPI_Status {...} MPI_Status;' "
                         "in mpi.h.in")
    fields = re.findall(r"\bint\s+(\w+)\s*;", m.group(1))
    if len(re.findall(r";", m.group(1))) != len(fields):
        raise SystemExit("gen_fortran: MPI_Status must be made of ints for Fortran statuses")
    return len(fields), {f: i + 1 for i, f in enumerate(fields) if f.startswith("MPI_")}


# ---------------------------------------------------------------------------------------------
# Classifying a function's parameters

class Arg:
    """One Fortran dummy argument: how the C++ entry point receives it, converts it and declares
    it in the Fortran interface."""

    def __init__(self, name, ctype, fdecl, expr, pre=(), post=(), hidden_len=False, imports=(),
                 always=()):
        self.name, self.ctype, self.fdecl, self.expr = name, ctype, fdecl, expr
        self.always = list(always)  # run even when the call failed
        self.pre, self.post, self.hidden_len, self.imports = list(pre), list(post), hidden_len, \
            set(imports)


def classify(func, mode, names_in_func):
    """Return the list of Arg for `func` (a gen_bindings dict), or raise Unsupported."""
    params = [parse_param(p) for p in func["params"]]
    pnames = {p["name"] for p in params}
    has_requests = "array_of_requests" in pnames
    args = []
    for p in params:
        args.append(classify_param(func, p, pnames, has_requests, mode))
    return args


def length_of(func, pnames):
    for n in LENGTH_NAMES:
        if n in pnames:
            return n
    raise Unsupported(f"{func['name']}: no length argument among {LENGTH_NAMES}")


def classify_param(func, p, pnames, has_requests, mode):
    n, base, ptr, arr = p["name"], p["base"], p["ptr"], p["array"]
    if ptr == 1 and not arr and base not in ("void", "char", "MPI_Status") and \
            (n.startswith("array_of_") or (n in ARRAY_NAMES and not (n == "index" and has_requests))):
        ptr, arr = 0, True
    fname = func["name"]
    local = f"w_{n}"
    if base == "...":
        raise Unsupported("variadic")
    # -- void *: choice buffers and addresses
    if base == "void":
        if ptr != 1 or arr:
            raise Unsupported(f"parameter '{p['raw']}'")
        if n == "baseptr":
            return Arg(n, "MPI_Aint *", "INTEGER(KIND=MPI_ADDRESS_KIND) :: " + n, n,
                       imports=["MPI_ADDRESS_KIND"])
        if n in VOID_SPECIAL:
            raise Unsupported(f"void *{n} (needs a hand-written binding)")
        return Arg(n, "void *", f"!GCC$ ATTRIBUTES NO_ARG_CHECK :: {n}\n"
                   f"TYPE(*), DIMENSION(*) :: {n}", f"wf_buf({n})")
    # -- strings
    if base == "char":
        if ptr + (1 if arr else 0) != 1:
            raise Unsupported(f"parameter '{p['raw']}' (string arrays need a hand-written binding)")
        if p["const"]:
            both = "true" if (fname.startswith("MPI_Info_") and n in ("key", "value")) else "false"
            return Arg(n, "const char *", f"CHARACTER(LEN=*) :: {n}", f"{local}.c_str()",
                       pre=[f"std::string {local} = wf_str_in({n}, {n}_len, {both});"],
                       hidden_len=True)
        for q in pnames:
            if q != "resultlen" and re.search(r"len$", q):
                raise Unsupported(f"output string with a length argument '{q}'")
        return Arg(n, "char *", f"CHARACTER(LEN=*) :: {n}", f"{local}.data()",
                   pre=[f"wf_str_out {local}({n}_len);"],
                   post=[f"{local}.copy_to({n}, {n}_len);"], hidden_len=True)
    # -- statuses
    if base == "MPI_Status":
        if ptr == 1 and not arr:
            return Arg(n, "MPI_Fint *", f"INTEGER :: {n}(MPI_STATUS_SIZE)", f"wf_status({n})",
                       imports=["MPI_STATUS_SIZE"])
        if ptr == 0 and arr:
            return Arg(n, "MPI_Fint *", f"INTEGER :: {n}(MPI_STATUS_SIZE, *)",
                       f"wf_statuses({n})", imports=["MPI_STATUS_SIZE"])
        raise Unsupported(f"parameter '{p['raw']}'")
    # -- callbacks
    if base.endswith("_function") or base.endswith("_fn"):
        if base in PASS_CALLBACKS and ptr == 1 and not arr:
            return Arg(n, "wf_proc", f"EXTERNAL :: {n}",
                       f"reinterpret_cast<{base} *>({n})")
        raise Unsupported(f"callback {base} (needs a hand-written trampoline)")
    # -- integers, handles, address-sized integers
    if base == "int" or base in HANDLE_TYPES or base == "MPI_File" or base in KIND_TYPES:
        nderef = ptr + (1 if arr else 0)
        if nderef > 1:
            raise Unsupported(f"parameter '{p['raw']}'")
        dims = ""
        if arr:
            dims = f"({p['dim2']}, *)" if p["dim2"] else "(*)"
        is_logical = base == "int" and n in LOGICAL_NAMES
        mpi1 = mode == "mpi1" and base == "MPI_Aint"
        if base in KIND_TYPES and not mpi1:
            kind = KIND_TYPES[base]
            decl = f"INTEGER(KIND={kind}) :: {n}{dims}"
            ctype = f"{base} *"
            imports = [kind]
        elif is_logical:
            decl, ctype, imports = f"LOGICAL :: {n}{dims}", "MPI_Fint *", []
        else:
            decl, ctype, imports = f"INTEGER :: {n}{dims}", "MPI_Fint *", []
        if nderef == 0:  # by value in C
            if base == "MPI_File":
                expr = f"wf_file_f2c(*{n})"
            elif is_logical:
                expr = f"(*{n} != 0)"
            elif mpi1:
                expr = f"static_cast<MPI_Aint>(*{n})"
            elif base in HANDLE_TYPES:
                expr = f"static_cast<{base}>(*{n})"
            else:
                expr = f"*{n}"
            return Arg(n, ctype, decl, expr, imports=imports)
        # pointer or array
        if base == "MPI_File":
            if arr:
                raise Unsupported("arrays of MPI_File")
            init = "MPI_FILE_NULL" if fname.endswith("_open") else f"wf_file_f2c(*{n})"
            return Arg(n, ctype, decl, f"&{local}", pre=[f"MPI_File {local} = {init};"],
                       post=[f"*{n} = wf_file_c2f({local});"])
        if mpi1:
            if not arr:
                return Arg(n, ctype, decl, f"&{local}", pre=[f"MPI_Aint {local} = *{n};"],
                           post=[f"if (!wf_aint_to_fint({local}, {n}, \"{fname}\", &w_rc)) "
                                 f"break;"])
            # MPI-1 address arrays are all inputs (MPI_TYPE_HINDEXED, MPI_TYPE_STRUCT)
            ln = length_of(func, pnames)
            return Arg(n, ctype, decl, f"{local}.data()",
                       pre=[f"std::vector<MPI_Aint> {local}({n}, {n} + wf_len(*{ln}));"])
        if is_logical and not p["const"]:
            if arr:
                ln = length_of(func, pnames)
                return Arg(n, ctype, decl, n, imports=imports,
                           post=[f"wf_logicals({n}, *{ln});"])
            return Arg(n, ctype, decl, n, post=[f"wf_logicals({n}, 1);"])
        # Fortran indexes requests from 1. Waitany's index is set even when the completed
        # request failed; Waitsome's indices are valid on success and with MPI_ERR_IN_STATUS.
        if base == "int" and has_requests and n == "index" and not arr:
            return Arg(n, ctype, decl, f"&{local}", pre=[f"int {local} = MPI_UNDEFINED;"],
                       always=[f"*{n} = {local} >= 0 ? {local} + 1 : {local};"])
        if base == "int" and has_requests and n == "array_of_indices":
            return Arg(n, ctype, decl, n,
                       always=["if ((w_rc == MPI_SUCCESS || wf_in_status(w_rc)) && "
                               "*outcount != MPI_UNDEFINED)",
                               f"    for (int i = 0; i < *outcount; ++i) {n}[i] += 1;"])
        cast = f"reinterpret_cast<{base} *>({n})" if base in HANDLE_TYPES else n
        if p["dim2"]:
            cast = f"reinterpret_cast<int (*)[{p['dim2']}]>({n})"
        if base == "int" and n == "array_of_errcodes":
            cast = f"wf_errcodes({n})"
        if base == "int" and n.endswith("weights"):
            cast = f"wf_weights({n})"
        return Arg(n, ctype, decl, cast, imports=imports)
    raise Unsupported(f"parameter '{p['raw']}'")


def has_module_interface(func):
    """Whether the `mpi` module declares `func` with an explicit interface. As MPICH's `use mpi`
    (up to 4.0, gfortran; Debian 12's mpi_base.mod): not for routines with a choice buffer or any
    other void * argument (buffers, MPI_ALLOC_MEM's baseptr, attribute values, extra state),
    nor for MPICH_NO_INTERFACE, nor for the MPI-IO routines (ROMIO's, absent from Debian's
    module) other than the file error-handler ones. Programs written against MPICH depend on the
    gaps: a scalar for an unused array (MPI_ALLTOALLV(MPI_IN_PLACE, 0, 0, MPI_DATATYPE_NULL,
    ...)), a default INTEGER displacement to MPI_FILE_SET_VIEW, or their own profiling routine
    named MPI_SEND in a scope that uses the module (which a module procedure MPI_SEND would
    clash with). Those routines are still bound; calls go through implicit interfaces, as from
    mpif.h, so they need -fallow-argument-mismatch too (which mpifort adds, as MPICH's does)."""
    name = func["name"]
    if name in MPICH_NO_INTERFACE:
        return False
    if name.startswith("MPI_File_") and not name.endswith("_errhandler"):
        return False
    return not any(parse_param(p)["base"] == "void" for p in func["params"] if p.strip() != "...")


def has_pmpi_interface(func):
    """MPICH's module declares no PMPI_ routine but the typed functions PMPI_WTIME and
    PMPI_WTICK (also declared by mpif.h); a PMPI_ interface would clash with a profiling library
    that defines or declares the routine beside `use mpi`."""
    return func["ret"] == "double" and has_module_interface(func)


# ---------------------------------------------------------------------------------------------
# Emitting

def lower(name):
    return name.lower() + "_"


def cxx_binding(func, args):
    name = func["name"]
    ret = func["ret"]
    fparams, hidden = [], []
    for a in args:
        if a.ctype == "wf_proc":
            fparams.append(f"wf_proc {a.name}")
        else:
            sep = "" if a.ctype.endswith("*") else " "
            fparams.append(f"{a.ctype}{sep}{a.name}")
        if a.hidden_len:
            hidden.append(f"size_t {a.name}_len")
    if ret == "int":
        fparams.append("MPI_Fint *ierr")
    plist = ", ".join(fparams + hidden) or "void"
    call_args = ", ".join(a.expr for a in args)
    fwd = ", ".join([a.name for a in args] + (["ierr"] if ret == "int" else []) +
                    [f"{a.name}_len" for a in args if a.hidden_len])
    body = []
    pre = [s for a in args for s in a.pre]
    post = [s for a in args for s in a.post]
    always = [s for a in args for s in a.always]
    if ret == "int":
        body += ["    " + s for s in pre]
        body.append(f"    int w_rc = w_fn({call_args});")
        body += ["    " + s for s in always]
        if post:
            body.append("    if (w_rc == MPI_SUCCESS) do {")
            body += ["        " + s for s in post]
            body.append("    } while (false);")
        body.append("    *ierr = w_rc;")
        cret = "void"
    else:
        if pre or post or always:
            raise Unsupported(f"{ret}-returning function with conversions")
        body.append(f"    return w_fn({call_args});")
        cret = {"double": "double", "MPI_Aint": "MPI_Aint"}[ret]
    extra = "" if plist == "void" else ", " + plist
    impl = (f"static inline {cret} wf_{name}(decltype(&P{name}) w_fn{extra}) noexcept {{\n" +
            "\n".join(body) + "\n}\n")
    call_prefix = "" if cret == "void" else "return "
    sep = ", " if fwd else ""
    out = [impl]
    for prefix in ("", "P"):
        sym = lower(prefix + name)
        out.append(f"WF_EXPORT {cret} {sym}({plist}) noexcept {{ {call_prefix}"
                   f"wf_{name}(&{prefix}{name}{sep}{fwd}); }}")
    return "\n".join(out) + "\n"


def wrap_fortran(line, indent, width=100):
    """Free-form continuation for long lines."""
    if len(line) <= width:
        return [line]
    out, cur = [], line
    while len(cur) > width:
        cut = cur.rfind(",", 0, width - 2)
        if cut < 0:
            break
        out.append(cur[:cut + 1] + " &")
        cur = " " * (indent + 4) + cur[cut + 1:].lstrip()
    out.append(cur)
    return out


def fortran_interface(func, args, prefix=""):
    """An interface body for the `mpi` module."""
    uname = (prefix + func["name"]).upper()
    ret = func["ret"]
    dummies = [a.name for a in args] + (["ierror"] if ret == "int" else [])
    imports = sorted(set().union(*[a.imports for a in args])) if args else []
    lines = []
    if ret == "int":
        head = f"SUBROUTINE {uname}({', '.join(dummies)})"
        tail = f"END SUBROUTINE {uname}"
    elif ret == "double":
        head = f"DOUBLE PRECISION FUNCTION {uname}({', '.join(dummies)})"
        tail = f"END FUNCTION {uname}"
    elif ret == "MPI_Aint":
        head = f"FUNCTION {uname}({', '.join(dummies)})"
        tail = f"END FUNCTION {uname}"
        imports = sorted(set(imports) | {"MPI_ADDRESS_KIND"})
    else:
        raise Unsupported(f"return type {ret}")
    lines += wrap_fortran("    " + head, 4)
    if imports:
        lines.append("      IMPORT :: " + ", ".join(imports))
    lines.append("      IMPLICIT NONE")
    if ret == "MPI_Aint":
        lines.append(f"      INTEGER(KIND=MPI_ADDRESS_KIND) :: {uname}")
    for a in args:
        for d in a.fdecl.split("\n"):
            lines.append("      " + d)
    if ret == "int":
        lines.append("      INTEGER :: ierror")
    lines.append("    " + tail)
    return lines


def fixed_line(s):
    """A line valid in both fixed form (code in columns 7..72) and free form."""
    line = "       " + s
    if len(line) > 72:
        raise SystemExit(f"gen_fortran: mpif.h line longer than 72 columns: {line}")
    return line


def declarations(consts, status_size, status_fields, for_module):
    """Constant and sentinel declarations shared by mpif.h and the module (fixed-form safe)."""
    L = []
    extra = [("MPI_STATUS_SIZE", status_size)] + \
            [(f, i) for f, i in sorted(status_fields.items(), key=lambda x: x[1])] + \
            [("MPI_ADDRESS_KIND", 8), ("MPI_OFFSET_KIND", 8), ("MPI_COUNT_KIND", 8),
             ("MPI_INTEGER_KIND", 4)]
    cvals = dict(consts)
    for n, v in extra:  # Fortran-only constants; mpi.h.in may define them too, but alike
        if n in cvals and cvals[n] != v:
            raise SystemExit(f"gen_fortran: mpi.h.in says {n}={cvals[n]}, Fortran needs {v}")
    seen = set()
    for n, v in extra + consts:
        if n.upper() in seen:
            continue
        seen.add(n.upper())
        if n in OFFSET_CONSTANTS:
            L.append(fixed_line(f"INTEGER(KIND=MPI_OFFSET_KIND) {n}"))
        elif -2**31 <= v < 2**31:
            L.append(fixed_line(f"INTEGER {n}"))
        else:
            L.append(fixed_line(f"INTEGER(KIND=8) {n}"))
        L.append(fixed_line(f"PARAMETER ({n}={v})"))
    L.append(fixed_line("LOGICAL MPI_SUBARRAYS_SUPPORTED"))
    L.append(fixed_line("PARAMETER (MPI_SUBARRAYS_SUPPORTED=.FALSE.)"))
    L.append(fixed_line("LOGICAL MPI_ASYNC_PROTECTS_NONBLOCKING"))
    L.append(fixed_line("PARAMETER (MPI_ASYNC_PROTECTS_NONBLOCKING=.FALSE.)"))
    L.append("!     Sentinels, recognised by address (one common block each).")
    for n, t, shape in SENTINELS:
        L.append(fixed_line(f"{t} {n}{shape}"))
        L.append(fixed_line(f"COMMON /{n.replace('MPI_', 'MPI_FC_', 1)}/ {n}"))
        L.append(fixed_line(f"SAVE /{n.replace('MPI_', 'MPI_FC_', 1)}/"))
    L.append("!     Predefined callbacks.")
    for n in CALLBACK_EXTERNALS:
        L.append(fixed_line(f"EXTERNAL {n}"))
    return L


def main():
    fdir, mpi_h_in, fsrc, outdir = (Path(a) for a in sys.argv[1:5])
    outdir.mkdir(parents=True, exist_ok=True)
    funcs = read_functions(fdir)
    exceptions = read_exceptions(fsrc / "exceptions.txt")
    consts, pointers = read_constants(mpi_h_in)
    status_size, status_fields = status_layout(mpi_h_in)
    cnames = {f["name"] for f in funcs}

    known_ptr = {n for n, _, _ in SENTINELS} | set(CALLBACK_EXTERNALS) | C_ONLY_POINTERS
    warnings = []
    for n, v in pointers:
        if n not in known_ptr and not re.match(r"^MPIX?_\w+$", v) and n != "MPI_FILE_NULL":
            warnings.append(f"constant {n} = {v} has no Fortran equivalent")

    # hand-written functions: C++ markers and interface blocks
    hand_cxx = set()
    for src in sorted(fsrc.glob("*.cpp")):
        hand_cxx |= set(re.findall(r"WANMPI_F_HAND\((MPIX?_\w+)\)", src.read_text()))
    hand_blocks = {}
    cur = None
    for line in (fsrc / "mpi_hand.f90").read_text().splitlines():
        m = re.match(r"^\s*!\s*@function\s+(\w+)", line)
        if m:
            cur = m.group(1)
            hand_blocks[cur] = []
        elif cur:
            hand_blocks[cur].append(line)

    coverage, bindings, interfaces = [], [], []
    for f in funcs:
        name = f["name"]
        action, reason = exceptions.get(name, (None, ""))
        if action == "skip":
            coverage.append((name, "skip", reason))
            continue
        if action == "hand":
            missing = [w for w, ok in (("C++ WANMPI_F_HAND", name in hand_cxx),
                                       ("interface block", name in hand_blocks or
                                        not has_module_interface(f))) if not ok]
            if missing:
                coverage.append((name, "UNSUPPORTED",
                                 f"listed as hand but no {', '.join(missing)}"))
            else:
                note = "" if has_module_interface(f) else f"; {NO_INTERFACE_NOTE}"
                coverage.append((name, "hand", reason + note))
            continue
        if name.startswith("MPIX_"):
            coverage.append((name, "skip", "C-only extension"))
            continue
        if name.startswith("MPI_T_"):
            coverage.append((name, "skip", "the tools interface is C only (MPI 4.0 §15)"))
            continue
        if re.search(r"_(c2f|f2c|c2f08|f082c|f2f08|f082f)$", name):
            coverage.append((name, "skip", "C-only interoperability function"))
            continue
        if name.endswith("_c"):
            coverage.append((name, "skip", "large-count variant (mpi_f08 only)"))
            continue
        try:
            if f["ret"] not in ("int", "double", "MPI_Aint"):
                raise Unsupported(f"return type {f['ret']}")
            args = classify(f, action, None)
            if any(a.expr.startswith("wf_file_") or "wf_file_" in " ".join(a.pre) for a in args):
                if "MPI_File_f2c" not in cnames or "MPI_File_c2f" not in cnames:
                    raise Unsupported("MPI_File arguments need MPI_File_f2c/c2f in the lists")
            binding = cxx_binding(f, args)
            iface = []
            if has_module_interface(f):
                iface += fortran_interface(f, args)
            if has_pmpi_interface(f):
                iface += fortran_interface(f, args, "P")
        except Unsupported as e:
            coverage.append((name, "UNSUPPORTED", str(e)))
            continue
        bindings.append(binding)
        if iface:
            interfaces.append(["  INTERFACE"] + iface + ["  END INTERFACE"])
        coverage.append((name, "mpi1" if action == "mpi1" else "generated",
                         "" if iface else NO_INTERFACE_NOTE))
    for name in exceptions:
        if name not in cnames:
            coverage.append((name, "absent", "listed in exceptions.txt, not (yet) in the C lists"))

    # ---- fortran_bindings.cpp
    (outdir / "fortran_bindings.cpp").write_text(
        "// Generated by gen_fortran.py from functions/*.txt: do not edit.\n"
        "// Fortran entry points: mpi_x_ calls MPI_X (so C profiling tools see Fortran calls),\n"
        "// pmpi_x_ calls PMPI_X. Conversions: see gen_fortran.py and fortran_support.hpp.\n"
        "#include \"fortran/fortran_support.hpp\"\n\n"
        "extern \"C\" {\n\n" + "\n".join(bindings) + "\n}  // extern \"C\"\n")
    # ---- fortran_have.h
    (outdir / "fortran_have.h").write_text(
        "// Generated by gen_fortran.py: the C functions present in the lists.\n#pragma once\n" +
        "".join(f"#define WANMPI_HAVE_{f['name']} 1\n" for f in funcs))

    # ---- mpif.h
    decl = declarations(consts, status_size, status_fields, False)
    # Typed functions: MPI_WTIME and MPI_WTICK (and PMPI_), as in MPICH's mpif.h. Not
    # MPI_AINT_ADD/MPI_AINT_DIFF: MPICH leaves them to the program, and programs written against
    # it declare them (`INTEGER(KIND=MPI_ADDRESS_KIND), EXTERNAL :: MPI_AINT_ADD`), which a
    # second declaration here would make a compile error. The `mpi` module declares them.
    ext = []
    for f in funcs:
        if f["ret"] == "double" and any(c[0] == f["name"] and c[1] in ("generated", "hand")
                                        for c in coverage):
            for pre in ("", "P"):
                ext.append(fixed_line(f"DOUBLE PRECISION {pre}{f['name'].upper()}"))
                ext.append(fixed_line(f"EXTERNAL {pre}{f['name'].upper()}"))
    header = ["!     mpif.h -- wanmpi's Fortran 77 interface. Generated by",
              "!     gen_fortran.py from include/mpi.h.in and the function lists:",
              "!     do not edit. Valid in fixed and free form: code in columns",
              "!     7-72, no continuation lines. No mpi_f08 (docs/fortran.md)."]
    (outdir / "mpif.h").write_text("\n".join(header + decl + ext) + "\n")

    # ---- mpi.f90 (module)
    mod = ["! The `mpi` module of wanmpi (generated by gen_fortran.py: do not edit).",
           "! Constants and sentinels are those of mpif.h; explicit interfaces for the routines",
           "! MPICH's `use mpi` declares (no choice buffer or other void * argument, no",
           "! scalar-or-array argument); the others are called through implicit interfaces,",
           "! as from mpif.h (gen_fortran.py: has_module_interface).",
           "MODULE mpi", "  IMPLICIT NONE"]
    mod += ["  " + l.lstrip() if not l.startswith("!") else "  " + l for l in decl]
    for iface in interfaces:
        mod += iface
    mod.append("  ! ---- hand-written bindings (src/bindings/fortran/mpi_hand.f90)")
    by_name = {f["name"]: f for f in funcs}
    for name, lines in hand_blocks.items():
        if name == "ALWAYS":
            mod += lines
        elif name in cnames and exceptions.get(name, ("",))[0] == "hand" and \
                has_module_interface(by_name[name]):
            mod += lines
            if has_pmpi_interface(by_name[name]):
                mod += [re.sub(r"\b(SUBROUTINE|FUNCTION)\s+MPI_", r"\1 PMPI_", l)
                        for l in lines]
    mod.append("END MODULE mpi")
    (outdir / "mpi.f90").write_text("\n".join(mod) + "\n")

    # ---- constants_check.c: the C compiler's values of the constants must be the ones written
    # into mpif.h and the module (tests/fortran runs it).
    chk = ["/* Generated by gen_fortran.py: checks the Fortran constants against mpi.h. */",
           "#include <mpi.h>", "#include <stdio.h>", "", "int main(void)", "{",
           "    int errs = 0;"]
    for n, v in consts:
        chk.append(f"    if ((long long)({n}) != {v}LL) {{ printf(\"{n}: C %lld, Fortran {v}\\n\", "
                   f"(long long)({n})); errs++; }}")
    chk.append(f"    if (sizeof(MPI_Status) / sizeof(int) != {status_size}) {{ "
               f"printf(\"MPI_STATUS_SIZE\\n\"); errs++; }}")
    chk += ["    printf(\"%d constants checked, %d errors\\n\", " + str(len(consts)) + ", errs);",
            "    if (!errs) printf(\" No Errors\\n\");", "    return errs != 0;", "}"]
    (outdir / "constants_check.c").write_text("\n".join(chk) + "\n")

    # ---- coverage
    width = max(len(c[0]) for c in coverage) if coverage else 10
    lines = ["# Fortran coverage of the C functions (generated by gen_fortran.py).",
             "# generated | mpi1 | hand | skip (reason) | absent | UNSUPPORTED (reason)"]
    lines += [f"{n:<{width}}  {k:<11}  {r}".rstrip() for n, k, r in coverage]
    lines += [f"# warning: {w}" for w in warnings]
    (outdir / "fortran_coverage.txt").write_text("\n".join(lines) + "\n")
    unsupported = [c for c in coverage if c[1] == "UNSUPPORTED"]
    for n, _, r in unsupported:
        print(f"gen_fortran: warning: no Fortran binding for {n}: {r}", file=sys.stderr)
    for w in warnings:
        print(f"gen_fortran: warning: {w}", file=sys.stderr)


if __name__ == "__main__":
    main()
