"""Translation units: one generated module compiled as several C files at once, then linked.

GCC compiles one file on one core, and a graph's module is one file of 900-1500 lines: on
two cores, half the machine waits. `split_module` cuts a module's text (as
`codegen/c/wrapper.py` writes it) into a header, its prelude, which every unit includes
and the runtime precompiles (`numpile_runtime.BuildJob.header`), and up to `parts` units:

- the first unit holds the module's entry points (`call`, the method table, `PyInit_`,
  everything after the `ENTRY_POINTS` line) and the definitions of its globals;
- each function marked `noinline` (kernels, loop functions, their checked copies) is
  defined in one unit, chosen to even out the lines per unit, and declared in the others:
  it is never inlined anyway, so a call across units costs what it cost before;
- everything else (static helpers, constants, prototypes) is in every unit, where GCC
  drops what that unit does not use;
- a `static` global becomes one hidden global: defined in the first unit, `extern` in the
  others.

Text the splitter does not recognize keeps the module whole (one unit), never wrong.

    >>> units = split_module(module_text, parts=2, min_lines=0)  # doctest: +SKIP
    >>> len(units.sources)  # doctest: +SKIP
    2
"""

from __future__ import annotations

import re

import attrs

__all__ = [
    "ENTRY_POINTS",
    "MIN_SPLIT_LINES",
    "ModuleUnits",
    "PRELUDE_BEGIN",
    "PRELUDE_END",
    "split_module",
]

# NOTE: the lines the wrapper writes around the module's prelude (the same text in every
# module: the header its units include, precompiled once).
PRELUDE_BEGIN = "/* The prelude: the same in every module. */"
PRELUDE_END = "/* End of the prelude. */"
# NOTE: the line the wrapper writes before the module's entry points (and the definitions of
# the prelude's globals): what follows it belongs to the first unit only.
ENTRY_POINTS = "/* The module's entry points. */"

# NOTE: a second unit costs a compiler process, its header and a link step (about 40 ms of
# CPU): worth it only when it takes at least this many (weighted) lines off the first.
MIN_SPLIT_LINES = 150

# NOTE: GCC's time per line relative to a line of a loop function at -O3, measured per
# function on the loop workloads' modules (docs/performance_notes.md): a line of `call`
# costs about two (it inlines NumPy's and Python's helpers), one at -O1 about half.
_CALL_LINE = 2.0
_O1_LINE = 0.5

_HIDDEN = "NP_HIDDEN "
# A top-level static variable: `static <type> <name>[...] = <value>;` (one declarator).
_STATIC_VARIABLE = re.compile(
    r"^static (?P<declaration>(?!inline )(?!const )[A-Za-z_][\w \*]*?\b(?P<name>\w+)"
    r"(?:\[[^\]]*\])*)(?P<value> = .+)?;(?P<comment>\s*/\*.*\*/)?$"
)
_ATTRIBUTE = re.compile(r"__attribute__\(\((?:[^()]|\([^()]*\))*\)\)\s*")
_LABEL = re.compile(r"[A-Za-z_]\w*:")
# A function's declaration on one line: `static <type> <name>(<parameters>);`.
_PROTOTYPE = re.compile(r"^static [A-Za-z_][\w \*]*?\b(?P<name>[A-Za-z_]\w*)\([^()]*\);$")
# A function's name on its signature's first line: the identifier before the first '('.
_FUNCTION_NAME = re.compile(r"\b(?P<name>[A-Za-z_]\w*)\(")


@attrs.frozen
class ModuleUnits:
    """A module as a header and translation units; the first unit holds the entry points.

    >>> ModuleUnits("", ("int x;",)).sources
    ('int x;',)
    """

    header: str
    sources: tuple[str, ...]


@attrs.frozen
class _Function:
    start: int  # first line: its attribute lines, else its signature
    body: int  # the line '{' that opens its body
    end: int  # the line '}' that closes it
    name: str
    noinline: bool
    weight: float  # its lines, times what a line costs GCC at its -O level (see _O1_LINE)


def split_module(source: str, *, parts: int, min_lines: int) -> ModuleUnits:
    """`source` as its prelude (the header: the text between `PRELUDE_BEGIN` and
    `PRELUDE_END`, when it has them) and at most `parts` translation units, splitting only
    where a unit other than the first gets at least `min_lines` lines of functions.

    >>> split_module("int f(void) { return 1; }", parts=2, min_lines=0).sources
    ('int f(void) { return 1; }',)
    """
    begin = source.find(PRELUDE_BEGIN + "\n")
    end = source.find("\n" + PRELUDE_END + "\n", begin)
    if begin < 0 or end < 0:
        return ModuleUnits("", (source,))
    prelude = source[begin : end + len(PRELUDE_END) + 2]
    body = source[:begin] + source[end + len(PRELUDE_END) + 2 :]
    lines = body.split("\n")
    whole = ModuleUnits(prelude, (body,))
    if parts < 2 or ENTRY_POINTS not in lines:
        return whole
    entry = lines.index(ENTRY_POINTS)
    functions = _functions(lines[:entry])
    if functions is None:
        return whole
    movable = _with_helpers(functions, lines, entry)
    owner = _assign(movable, _entry_weight(lines[entry:]), parts, min_lines)
    if not any(owner.values()):
        return whole
    units = _units(lines, entry, functions, owner, parts)
    return whole if units is None else ModuleUnits(prelude, units)


def _functions(lines: list[str]) -> list[_Function] | None:
    # The top-level function definitions before the entry points, in the wrapper's layout (a
    # signature at column 0, then '{' and '}' alone on their lines); None where the text has
    # a top-level line of another shape that could define something (then nothing moves).
    found: list[_Function] = []
    index = 0
    while index < len(lines):
        if not _opens_function(lines, index):
            index += 1
            continue
        name = _FUNCTION_NAME.search(_ATTRIBUTE.sub("", lines[index]))
        end = _closing(lines, index + 1)
        if name is None or end is None:
            return None
        first = index
        while first > 0 and lines[first - 1].startswith("__attribute__(("):
            first -= 1
        heads = lines[first : index + 1]
        noinline = any("noinline" in head for head in heads)
        cheap = any('optimize("O1"' in head or 'optimize("O0"' in head for head in heads)
        weight = (end - first + 1) * (_O1_LINE if cheap else 1.0)
        found.append(_Function(first, index + 1, end, name.group("name"), noinline, weight))
        index = end + 1
    return found


def _opens_function(lines: list[str], index: int) -> bool:
    # Whether line `index` is a one-line signature at column 0 whose body follows as '{'.
    line = lines[index]
    if not line or line[0] in " \t#/{}" or index + 1 >= len(lines):
        return False
    return lines[index + 1] == "{" and line.rstrip().endswith(")") and "(" in line


def _closing(lines: list[str], opening: int) -> int | None:
    for index in range(opening + 1, len(lines)):
        if lines[index] == "}":
            return index
        line = lines[index]
        if line[:1] not in ("", " ", "\t", "#") and not _LABEL.fullmatch(line):
            return None  # column 0 inside a body: not the wrapper's layout
    return None


def _with_helpers(functions: list[_Function], lines: list[str], entry: int) -> list[_Function]:
    # The movable (noinline) functions, each weighing too the static functions only it calls
    # (a kernel's generic copy, say): GCC compiles those in whichever unit it goes to.
    movable = [f for f in functions if f.noinline]
    text = {f.name: "\n".join(lines[f.body : f.end]) for f in movable}
    entry_text = "\n".join(lines[entry:])
    extra = dict.fromkeys(text, 0.0)
    for helper in functions:
        if helper.noinline or f"{helper.name}(" in entry_text:
            continue
        callers = [name for name, body in text.items() if f"{helper.name}(" in body]
        if len(callers) == 1:
            extra[callers[0]] += helper.weight
    return [attrs.evolve(f, weight=f.weight + extra[f.name]) for f in movable]


def _entry_weight(lines: list[str]) -> float:
    # What the entry points weigh: `call` (dense with inlined C-API helpers) counts twice,
    # the method table and module boilerplate not at all.
    functions = _functions(lines)
    calls = [f for f in functions or () if f.name == "call"]
    if not calls:
        return float(len(lines))
    return sum(_CALL_LINE * f.weight for f in calls)


def _assign(
    movable: list[_Function], entry_weight: float, parts: int, min_lines: int
) -> dict[str, int]:
    # Which unit defines each movable function: the heaviest first, each into the unit with
    # the least weight so far (the first starts with its entry points' weight).
    load = [entry_weight] + [0.0] * (parts - 1)
    owner: dict[str, int] = {}
    for function in sorted(movable, key=lambda f: (-f.weight, f.start)):
        unit = min(range(parts), key=lambda u: (load[u], u))
        owner[function.name] = unit
        load[unit] += function.weight
    if not any(load[unit] >= min_lines for unit in range(1, parts)):
        return dict.fromkeys(owner, 0)
    return owner


def _units(
    lines: list[str],
    entry: int,
    functions: list[_Function],
    owner: dict[str, int],
    parts: int,
) -> tuple[str, ...] | None:
    # The text of each unit; None where a top-level static cannot be shared.
    shared = set(owner)
    by_start = {f.start: f for f in functions}
    units: list[list[str]] = [[] for _ in range(parts)]
    index = 0
    while index < entry:
        function = by_start.get(index)
        if function is not None:
            text = lines[function.start : function.end + 1]
            where = owner.get(function.name)
            if where is None:
                for unit in units:
                    unit.extend(text)
            else:
                definition = _hidden(text, function.body - function.start - 1)
                prototype = _prototype(definition[: function.body - function.start])
                for number, unit in enumerate(units):
                    unit.extend(definition if number == where else prototype)
            index = function.end + 1
            continue
        line = lines[index]
        variable = _STATIC_VARIABLE.match(line)
        if variable is not None:
            if "," in re.sub(r"\{[^{}]*\}", "", variable.group("value") or ""):
                return None  # several declarators: not one global
            declaration = f"{_HIDDEN}{variable.group('declaration')}"
            units[0].append(f"{declaration}{variable.group('value') or ''};")
            for unit in units[1:]:
                unit.append(f"extern {declaration};")
        elif line.startswith(("static inline ", "static const ")):
            for unit in units:
                unit.append(line)
        elif line.startswith("static "):
            declared = _PROTOTYPE.match(_ATTRIBUTE.sub("", line))
            if declared is None:
                return None  # a static that is not one plain variable: not shared safely
            if declared.group("name") in shared:
                line = line.replace("static ", _HIDDEN, 1)
            for unit in units:
                unit.append(line)
        else:
            for unit in units:
                unit.append(line)
        index += 1
    units[0].extend(lines[entry:])
    return tuple("\n".join(unit) for unit in units)


def _hidden(text: list[str], signature: int) -> list[str]:
    # A function's definition, global to the library: `static` on its signature line (the
    # last line before '{') becomes NP_HIDDEN.
    out = list(text)
    if "static " in out[signature]:
        out[signature] = out[signature].replace("static ", _HIDDEN, 1)
    else:
        out[signature] = _HIDDEN + out[signature]
    return out


def _prototype(head: list[str]) -> list[str]:
    # The declaration of a function from its attribute lines and signature.
    return [*head[:-1], head[-1] + ";"]
