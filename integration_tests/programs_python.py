"""Python around NumPy that capture handles: containers in and out, constant-trip loops,
shape-dependent branches, inlined helpers, closures, keyword arguments and defaults, in-place
updates of locals and of inputs; plus a few programs that graph-break (compiled without
fullgraph) to check that the fallback stays correct."""

from __future__ import annotations

import functools

import numpy as np
from harness import Inputs, program

python = functools.partial(program, "python")


def _pair(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    return (rng.standard_normal((n, 3)), rng.standard_normal((n, 3)))


def _scale(x, factor=2.0):
    return x * factor


def _affine(x, w, *, bias=0.5):
    return _scale(x @ w) + bias


@python(lambda rng, n: ((rng.standard_normal(n), rng.standard_normal(n)),))
def tuple_in_tuple_out(pair):
    a, b = pair
    return b, a + b


@python(lambda rng, n: ([rng.standard_normal(n) for _ in range(3)],))
def list_in_list_out(arrays):
    return [a * i for i, a in enumerate(arrays)]


@python(
    lambda rng, n: (
        {
            "w": rng.standard_normal((3, 2)),
            "b": rng.standard_normal(2),
            "x": rng.standard_normal((n, 3)),
        },
    )
)
def dict_in_dict_out(params):
    y = params["x"] @ params["w"] + params["b"]
    return {"y": y, "norm": np.sqrt((y * y).sum()), "w": params["w"]}


@python(lambda rng, n: (rng.standard_normal(n),))
def loop_constant_trip_count(x):
    for _ in range(4):
        x = x * 0.5 + 1.0
    return x


@python(lambda rng, n: (rng.standard_normal(n),))
def loop_accumulates_list(x):
    powers = []
    y = np.ones_like(x)
    for _ in range(3):
        y = y * x
        powers.append(y)
    return tuple(powers)


@python(lambda rng, n: (rng.standard_normal((n, 3)),))
def shape_dependent_branch(x):
    if x.shape[0] > 5:
        return x.sum(axis=0)
    return x.sum(axis=1)


@python(lambda rng, n: (rng.standard_normal((n, 3)),))
def ndim_and_dtype_branch(x):
    if x.ndim == 2 and x.dtype == np.float64:
        x = x.T
    return x * 2


@python(lambda rng, n: (rng.standard_normal((n, 3)), rng.standard_normal((3, 2))))
def inlined_helpers_with_kwargs(x, w):
    return _affine(x, w, bias=-1.0), _affine(x, w)


@python(lambda rng, n: (rng.standard_normal(n),))
def closure_over_constant(x):
    k = 3.0

    def shift(y):
        return y + k

    return shift(x) * shift(-x)


@python(lambda rng, n: (rng.standard_normal(n),))
def lambda_and_map(x):
    fns = [np.sin, np.cos, lambda v: v * v]
    return [f(x) for f in fns]


@python(lambda rng, n: Inputs((rng.standard_normal(n),), {"scale": 3.0}))
def keyword_arguments(x, offset=1.0, *, scale=1.0):
    return x * scale + offset


@python(lambda rng, n: (rng.standard_normal(n), rng.standard_normal(n)))
def inplace_on_local_intermediates(x, y):
    z = x + y
    z *= 2.0
    z -= x
    z[0] = 100.0
    return z


@python(lambda rng, n: (rng.standard_normal(n),))
def inplace_add_on_input(x):
    x += 1.0
    return x


@python(lambda rng, n: (rng.standard_normal((n, 3)),))
def setitem_on_input(x):
    x[0] = 5.0
    x[:, -1] = x[:, 0] * 2.0
    return x.sum()


@python(lambda rng, n: (rng.standard_normal(n), rng.standard_normal(n)))
def mutate_input_return_nothing(x, y):
    x *= y
    np.add(y, 1.0, out=y)


@python(lambda rng, n: (rng.standard_normal(n),))
def out_argument_into_local(x):
    buf = np.empty_like(x)
    np.multiply(x, 3.0, out=buf)
    np.sin(buf, out=buf)
    return buf


@python(lambda rng, n: (rng.standard_normal(n), rng.standard_normal(n)))
def out_argument_into_input(x, y):
    r = np.add(x, y, out=x)
    return r is x


@python(lambda rng, n: (rng.standard_normal((n, 3)),))
def shape_arithmetic_in_python(x):
    rows, cols = x.shape
    half = rows // 2
    return x[:half].reshape(half * cols), rows * cols, len(x)


@python(lambda rng, n: (rng.standard_normal(n), 3))
def python_int_argument_as_trip_count(x, k):
    for i in range(k):
        x = x + i
    return x


@python(lambda rng, n: (rng.standard_normal((n, 3)),))
def zip_enumerate_over_rows_of_constant_count(x):
    cols = [x[:, j] for j in range(3)]
    weights = (0.5, 1.0, 2.0)
    total = np.zeros(x.shape[0])
    for i, (w, c) in enumerate(zip(weights, cols, strict=True)):
        total = total + w * c - i
    return total


@python(lambda rng, n: (rng.standard_normal((n, 3)),), fullgraph=False)
def generator_expression_sum(x):
    return sum(x[:, j] * j for j in range(3))


@python(_pair)
def tuple_unpack_and_swap(a, b):
    a, b = b, a
    return a - b, (a, b)


@python(lambda rng, n: (rng.standard_normal(n),))
def none_and_constants_out(x):
    return None, 1, "ok", (x * 2, 3.5)


@python(lambda rng, n: (rng.standard_normal((n, 3)),))
def method_chain_with_attribute_access(x):
    y = x.T.copy()
    return y.shape, y.size, y.nbytes, y.T.flags.c_contiguous, y.mean(axis=1)


@python(lambda rng, n: (rng.standard_normal(n),))
def nested_function_calls_and_recursion_free_helpers(x):
    def square(v):
        return v * v

    def poly(v):
        return square(v) + 2.0 * v + 1.0

    return poly(poly(x))


@python(lambda rng, n: (rng.standard_normal(n),))
def isinstance_and_type_checks(x):
    if isinstance(x, np.ndarray) and np.issubdtype(x.dtype, np.floating):
        return x * 2
    return x


@python(lambda rng, n: (rng.standard_normal(n),), fullgraph=False)
def data_dependent_branch_graph_breaks(x):
    if x.sum() > 0:
        return x * 2.0
    return x - 1.0


@python(lambda rng, n: (rng.standard_normal(n),), fullgraph=False)
def boolean_mask_graph_breaks(x):
    y = x[x > 0]
    return y * 2.0, y.shape


@python(lambda rng, n: (rng.standard_normal(n),), fullgraph=False)
def item_then_python_math(x):
    m = x.max().item()
    return x / (abs(m) + 1.0), m


@python(lambda rng, n: (rng.standard_normal(n), []), fullgraph=False)
def append_to_input_list(x, log):
    log.append(x.sum())
    x -= 1.0
    return x.mean()


@python(lambda rng, n: (rng.standard_normal(n),))
def float_power_and_boolean_mask_in_a_try_block(x):
    # Neither can raise on its data (unlike an integer power or an integer index): no break.
    try:
        y = x ** np.arange(x.shape[0]) + x[x > 0].sum()
    except ValueError:
        y = x
    return y
