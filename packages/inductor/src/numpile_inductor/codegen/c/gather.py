"""Gathers in C: an index read from data (`x[idx]`, a `Load` with `Indirect` bindings) as
one checked C local per loop iteration.

The index value is converted to int64, counted from the end when negative (NumPy's rule
for integer index arrays) and checked against its dim: out of bounds, the kernel sets
`NP_BAD_INDEX` in the flags it returns, records the index, its axis and the dim's size,
and reads element 0 instead (so the loop never reads outside the array). The wrapper
then fails the call with NumPy's `IndexError` message (`np_bad_index_error`); the
outputs of a failed call are dropped. When several indices are out of bounds, which one
the message names is the one a thread recorded last.

    >>> indirect_index_lines("gx0", "t3", 1000, 0)[:2]
    ['int64_t gx0 = (int64_t)(t3);', 'gx0 += gx0 < 0 ? (int64_t)1000 : 0;']
"""

from __future__ import annotations

__all__ = ["GATHER_GLOBALS", "GATHER_HELPERS", "indirect_index_lines"]

GATHER_HELPERS = r"""
/* Gathers (codegen/c/gather.py): an index out of bounds, as the kernel flags it. */
#define NP_BAD_INDEX (1 << 29)
extern NP_HIDDEN int64_t g_bad_index, g_bad_axis, g_bad_size;
static void np_bad_index(int64_t index, int64_t axis, int64_t size)
{
    g_bad_index = index;
    g_bad_axis = axis;
    g_bad_size = size;
}
/* NumPy's IndexError for the recorded index. */
static void np_bad_index_error(void)
{
    PyErr_Format(PyExc_IndexError, "index %lld is out of bounds for axis %lld with size %lld",
                 (long long)g_bad_index, (long long)g_bad_axis, (long long)g_bad_size);
}
"""

# The definitions of the globals GATHER_HELPERS declares: once per module, in the translation
# unit that holds its entry points (codegen/c/translation_units.py).
GATHER_GLOBALS = """\
NP_HIDDEN int64_t g_bad_index = 0;
NP_HIDDEN int64_t g_bad_axis = 0;
NP_HIDDEN int64_t g_bad_size = 0;"""


def indirect_index_lines(name: str, value: str, size: int, axis: int) -> list[str]:
    """The C statements defining gather index `name` from the C value `value` of an
    integer index into a dim of `size` (the `axis`-th of the gathered array)."""
    return [
        f"int64_t {name} = (int64_t)({value});",
        f"{name} += {name} < 0 ? (int64_t){size} : 0;",
        f"if ((uint64_t){name} >= (uint64_t){size}) {{ np_bad_index({value}, {axis}, {size}); "
        f"np_fp |= NP_BAD_INDEX; {name} = 0; }}",
    ]
