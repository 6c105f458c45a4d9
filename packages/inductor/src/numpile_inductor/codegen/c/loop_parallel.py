"""OpenMP over an outer loop whose iterations are independent (issue 23, item 3).

`for i in range(n): out[i] = f(x[i, :])` over rows: each iteration writes only row `i`
of the arrays it writes and reads those arrays only at row `i`, so the iterations may
run in any order, on any thread. The outermost loop of a scalar C nest (`loop_body`)
gets `#pragma omp for` when its body proves that (`numpile_inductor.loop_independence`,
without its `while` loops: their work counter is shared).

Run time decides the rest, in an `if` around the region (the nest runs serially, outside
any region, where it fails): the fast form of the nest (every
bounds check hoisted, no `goto` left in it: an error or a bail needs the serial order),
at least two iterations, at least `PARALLEL_WORK` elements in the arrays the nest uses
(below, a parallel region costs more than it saves), and no array it writes sharing
memory with another it uses (their byte extents are disjoint). Each thread's
floating-point flags are ORed into the function's.

    >>> independent_iterations(node)  # doctest: +SKIP
    True
"""

from __future__ import annotations

import re

from ...loop_independence import independent_iterations as independent_iterations
from .loop_body import CArray

#: Elements the arrays of a nest must hold together before its outer loop runs threaded
#: (the kernels' default OpenMP threshold).
PARALLEL_WORK = 65536


def parallel_nest(lines: list[str], arrays: list[CArray], trips: str) -> tuple[list[str], bool]:
    """The outer loop `lines` (its `for` head first, then its signal poll) as an OpenMP
    loop taken when the run-time conditions hold (else `lines` as they are), and whether
    it may bail: an
    iteration that would leave the function (an index out of bounds, an int overflow)
    ends its own iteration and makes the nest bail after the loop (the arrays restored,
    the loop run with NumPy, which raises as eager does)."""
    head, *rest = lines
    serial = lines
    rest = [line for line in rest if "PyErr_CheckSignals" not in line]
    bails = any(_LEAVE.search(line) for line in rest)
    if bails:
        rest = [_LEAVE.sub("{ np_par_failed = 1; goto NP_PAR_NEXT; }", line) for line in rest]
        *inside, end = rest
        rest = [*inside, f"{_indent(end)}    {NEXT_LABEL}: ;", end]
    indent = _indent(head)
    sizes = " + ".join(_size(array) for array in arrays) or "0"
    disjoint = [
        f"np_par_disjoint({_extent(one)}, {_extent(other)})"
        for one in arrays
        if one.written
        for other in arrays
        if other is not one
    ]
    clause = " && ".join([f"({trips}) >= 2", f"({sizes}) >= {PARALLEL_WORK}", *disjoint])
    # NOTE: the serial copy runs outside any region (the nest as it was): a region whose
    # `if` clause is false still sets a team up, which costs more than a short nest.
    return [
        f"{indent}if ({clause}) {{",
        f"{indent}int np_par_fp = 0;",
        f"{indent}int np_par_failed = 0;",
        f"{indent}#pragma omp parallel reduction(|:np_par_fp, np_par_failed)",
        f"{indent}{{",
        f"{indent}#pragma omp for schedule(static)",
        head,
        *rest,
        f"{indent}np_par_fp |= NP_FP_TEST();",
        f"{indent}}}",
        f"{indent}*np_fp |= np_par_fp;",
        *([f"{indent}if (np_par_failed) {{ goto bail; }}"] if bails else []),
        f"{indent}}} else {{",
        *serial,
        f"{indent}}}",
    ], bails


#: The label ending an iteration of an outer loop with OpenMP (numbered per copy of the
#: nest by `number_labels`: labels are per function in C).
NEXT_LABEL = "NP_PAR_NEXT"

# NOTE: how the C of a nest leaves its function (not allowed out of an OpenMP region).
_LEAVE = re.compile(r"goto (fail|bail|eager);")


def number_labels(lines: list[str]) -> list[str]:
    """`lines` with each copy of the OpenMP nests' label (and the jumps to it before it)
    numbered apart: the function holds several copies of a nest."""
    out: list[str] = []
    count = 0
    for line in lines:
        if NEXT_LABEL in line:
            labelled = line.replace(NEXT_LABEL, f"np_par_next{count}")
            if f"{NEXT_LABEL}: ;" in line:
                count += 1
            line = labelled
        out.append(line)
    return out


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _size(array: CArray) -> str:
    return " * ".join(f"{array.name}_n{axis}" for axis in range(array.ndim)) or "1"


def _extent(array: CArray) -> str:
    # The byte range [low, high) the array's elements span, as two C expressions.
    low = " + ".join(
        f"(({array.name}_s{axis} < 0 && {array.name}_n{axis} > 0) ? "
        f"({array.name}_n{axis} - 1) * {array.name}_s{axis} : 0)"
        for axis in range(array.ndim)
    )
    high = " + ".join(
        f"(({array.name}_s{axis} > 0 && {array.name}_n{axis} > 0) ? "
        f"({array.name}_n{axis} - 1) * {array.name}_s{axis} : 0)"
        for axis in range(array.ndim)
    )
    item = array.dtype.itemsize
    base = f"(const char *){array.name}_d"
    return f"{base} + ({low or '0'}) * {item}, {base} + ({high or '0'} + 1) * {item}"


#: C the nests with OpenMP need once per module: whether two byte ranges are disjoint.
PARALLEL_HELPERS = r"""
#ifndef NP_PAR_DISJOINT
#define NP_PAR_DISJOINT
static inline int np_par_disjoint(const char *a_lo, const char *a_hi,
                                  const char *b_lo, const char *b_hi)
{
    return a_hi <= b_lo || b_hi <= a_lo;
}
#endif
"""
