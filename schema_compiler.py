"""Compile the JSON Schemas in ``schemas/`` into fast validity predicates.

The fast-path contract
----------------------
``compile_schema(name, schemas)`` returns ``is_valid(instance) -> bool`` whose verdict is
exactly that of::

    Draft202012Validator(schemas[name], registry=...,
                         format_checker=Draft202012Validator.FORMAT_CHECKER).is_valid(instance)

for every JSON value (anything ``json.loads`` can produce, NaN and Infinity included).
It is a fast path only: it never says *why* an instance is invalid, so a caller that gets
False runs jsonschema to collect the detailed errors.  Where jsonschema itself raises
(multipleOf 0.5 against NaN, nesting past the recursion limit), the predicate says False,
leaving jsonschema to raise.  A True for an instance that jsonschema rejects would let bad
data in, so the semantics mirror jsonschema 4.x keyword by keyword: bool is not a number,
5.0 is an integer, ``enum``/``const``/``uniqueItems`` use jsonschema's ``equal`` (True != 1
but 1 == 1.0), ``pattern`` is ``re.search``, and comparisons are written so that NaN
passes bounds exactly as it does there.

``format`` is delegated to the very functions registered in
``Draft202012Validator.FORMAT_CHECKER.checkers``, so a format is checked here if and only
if jsonschema checks it in this environment (e.g. "date" and, with rfc3339-validator
installed, "date-time"; "uri" is not checked without rfc3987).

Supported keywords: type, enum, const, multipleOf, minimum, maximum, exclusiveMinimum,
exclusiveMaximum, minLength, maxLength, pattern, format, items, prefixItems, minItems,
maxItems, uniqueItems, contains, minContains, maxContains, properties, patternProperties,
additionalProperties, propertyNames, required, minProperties, maxProperties,
dependentRequired, dependentSchemas, allOf, anyOf, oneOf, not, if/then/else, $ref (JSON
pointer fragments, cyclic refs allowed).  Annotations ($schema, $id, $defs, $comment,
title, description, default, examples, ...) are ignored.  Any other keyword (e.g.
unevaluatedProperties, $dynamicRef) raises ``SchemaCompileError`` at compile time, so a
schema change can never silently skip a rule.

How it is fast
--------------
Every compiled (sub)schema is a ``_TypeTable``: a dict from the *exact* Python type of
an instance (NoneType, bool, int, float, str, list, dict) to a handler specialised for
that type, with the type test, keyword dispatch and ``oneOf`` branch selection already
resolved at compile time.  Validating a value is ``table[type(value)](value)``: one dict
lookup and usually one call, sometimes a C function such as a compiled regex's
``search``.  Objects with properties + required + additionalProperties false (every
object of the data files) run as straight-line code generated once the tables are
complete (``_straight_line``): one ``get`` per property, and the value's test in place
where it is a type check, a length or bound, or an array's loop (about a quarter less
time than a loop over the object's items).  Verdicts for strings under a pattern or a
format are cached (``_StringMemo``) because data repeat dates, sources and slugs.  Any
other type (subclasses, Decimal, ...) falls back to a slower generic path that uses
jsonschema's isinstance-based type checks.
"""

from __future__ import annotations

import itertools
import numbers
import re
from collections.abc import Mapping as AbcMapping
from collections.abc import Sequence as AbcSequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Iterable, Mapping, Optional
from urllib.parse import unquote, urldefrag, urljoin

from jsonschema import Draft202012Validator

__all__ = ["compile_schema", "SchemaCompileError", "DEFAULT_BASE"]

Check = Callable[[Any], Any]  # internal handlers return something truthy/falsy
DEFAULT_BASE = "https://reviewsd.invalid/schemas/"
FORMAT_CHECKER = Draft202012Validator.FORMAT_CHECKER

_NONE = type(None)
# The exact types json.loads produces; every table has a handler for each of them.
_JSON_TYPES: tuple[type, ...] = (_NONE, bool, int, float, str, list, dict)

# Keywords without any effect on validity (jsonschema ignores them too).
_ANNOTATIONS = frozenset({
    "$schema", "$id", "$defs", "$comment", "$anchor", "$dynamicAnchor", "title", "description",
    "default", "examples", "deprecated", "readOnly", "writeOnly", "contentMediaType",
    "contentEncoding", "contentSchema",
})
_ASSERTIONS = frozenset({
    "type", "enum", "const", "multipleOf", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "minLength", "maxLength", "pattern", "format", "items", "prefixItems",
    "minItems", "maxItems", "uniqueItems", "contains", "minContains", "maxContains", "properties",
    "patternProperties", "additionalProperties", "propertyNames", "required", "minProperties",
    "maxProperties", "dependentRequired", "dependentSchemas", "allOf", "anyOf", "oneOf", "not",
    "if", "then", "else", "$ref",
})
_KNOWN = _ANNOTATIONS | _ASSERTIONS


class SchemaCompileError(ValueError):
    """The schema uses a keyword or a construct this compiler does not support."""


# --------------------------------------------------------------------------- building blocks


def _true(_: Any) -> bool:
    return True


def _false(_: Any) -> bool:
    return False


class _TypeTable(dict):
    """Exact Python type -> handler. Other types (subclasses, Decimal, ...) get `slow`."""

    __slots__ = ("slow",)

    def __init__(self, handlers: Mapping[type, Check], slow: Check) -> None:
        super().__init__(handlers)
        self.slow = slow

    def __missing__(self, key: type) -> Check:
        return self.slow  # not stored: the table stays limited to the JSON types


@dataclass(frozen=True)
class _Node:
    """A compiled schema: its per-type table and a plain predicate over any value."""

    table: _TypeTable
    check: Check


def _node(handlers: Mapping[type, Check], slow: Check) -> _Node:
    table = _TypeTable(handlers, slow)

    def check(x: Any) -> Any:
        return table[type(x)](x)

    return _Node(table, check)


_ALWAYS = _node(dict.fromkeys(_JSON_TYPES, _true), _true)
_NEVER = _node(dict.fromkeys(_JSON_TYPES, _false), _false)


def _all(checks: Iterable[Check]) -> Check:
    """Conjunction, with the trivial cases folded away at compile time."""
    checks = [c for c in checks if c is not _true]
    if any(c is _false for c in checks):
        return _false
    if not checks:
        return _true
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        a, b = checks
        return lambda x: a(x) and b(x)
    items = tuple(checks)

    def all_of(x: Any) -> bool:
        for c in items:
            if not c(x):
                return False
        return True

    return all_of


def _any(checks: Iterable[Check]) -> Check:
    checks = [c for c in checks if c is not _false]
    if any(c is _true for c in checks):
        return _true
    if not checks:
        return _false
    if len(checks) == 1:
        return checks[0]
    items = tuple(checks)
    return lambda x: any(c(x) for c in items)


def _one(checks: Iterable[Check]) -> Check:
    # Branches that statically reject this type cannot count, so a oneOf over disjoint
    # types (e.g. [string, null]) collapses to the single branch that can match.
    checks = [c for c in checks if c is not _false]
    if not checks:
        return _false
    if len(checks) == 1:
        return checks[0]
    items = tuple(checks)

    def one_of(x: Any) -> bool:
        found = False
        for c in items:
            if c(x):
                if found:
                    return False
                found = True
        return found

    return one_of


def _negate(check: Check) -> Check:
    if check is _true:
        return _false
    if check is _false:
        return _true
    return lambda x: not check(x)


# --------------------------------------------------------------------------- jsonschema's equality
# Mirrors jsonschema._utils.equal / unbool / uniq (4.x): in JSON Schema True != 1 and
# False != 0, recursively, while 1 == 1.0.  Copied rather than imported because _utils is
# private; the differential tests pin the behaviour.

_TRUE_TOKEN, _FALSE_TOKEN = object(), object()


def _unbool(element: Any) -> Any:
    if element is True:
        return _TRUE_TOKEN
    if element is False:
        return _FALSE_TOKEN
    return element


def _equal(one: Any, two: Any) -> bool:
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return one == two
    if isinstance(one, AbcSequence) and isinstance(two, AbcSequence):
        return len(one) == len(two) and all(_equal(i, j) for i, j in zip(one, two))
    if isinstance(one, AbcMapping) and isinstance(two, AbcMapping):
        return len(one) == len(two) and all(k in two and _equal(v, two[k]) for k, v in one.items())
    return _unbool(one) == _unbool(two)


def _uniq(container: Any) -> bool:
    """jsonschema's uniq, quirks included (sorted neighbours first, brute force if unsortable)."""
    try:
        ordered = sorted(_unbool(i) for i in container)
        for i, j in zip(ordered, itertools.islice(ordered, 1, None)):
            if _equal(i, j):
                return False
    except (NotImplementedError, TypeError):
        seen: list[Any] = []
        for e in container:
            e = _unbool(e)
            for i in seen:
                if _equal(i, e):
                    return False
            seen.append(e)
    return True


def _unique_items(array: list) -> bool:
    # If a set keeps every element, no two are == (nor identical), so jsonschema's equal
    # (which only ever makes fewer things equal, via unbool) finds no duplicate either.
    # Otherwise (a possible duplicate, or unhashable items) ask the exact algorithm.
    try:
        if len(set(array)) == len(array):
            return True
    except TypeError:
        pass
    return _uniq(array)


# --------------------------------------------------------------------------- types

# jsonschema's draft 2020-12 type checker, for the generic (non-JSON-type) path.
_TYPE_TESTS: dict[str, Check] = {
    "array": lambda x: isinstance(x, list),
    "boolean": lambda x: isinstance(x, bool),
    "integer": lambda x: not isinstance(x, bool)
    and (isinstance(x, int) or (isinstance(x, float) and x.is_integer())),
    "null": lambda x: x is None,
    "number": lambda x: not isinstance(x, bool) and isinstance(x, numbers.Number),
    "object": lambda x: isinstance(x, dict),
    "string": lambda x: isinstance(x, str),
}

# Which exact JSON types each type name admits, and the extra test needed (floats are
# integers only when integral).
_TYPE_GATES: dict[str, dict[type, Check]] = {
    "array": {list: _true},
    "boolean": {bool: _true},
    "integer": {int: _true, float: float.is_integer},
    "null": {_NONE: _true},
    "number": {int: _true, float: _true},
    "object": {dict: _true},
    "string": {str: _true},
}


def _is_number(x: Any) -> bool:
    return not isinstance(x, bool) and isinstance(x, numbers.Number)


def _type_names(schema: dict) -> Optional[tuple[str, ...]]:
    if "type" not in schema:
        return None
    names = schema["type"]
    names = [names] if isinstance(names, str) else names
    if not isinstance(names, list) or not all(isinstance(n, str) and n in _TYPE_GATES for n in names):
        raise SchemaCompileError(f"unsupported type {schema['type']!r}")
    return tuple(names)


def _type_gates(names: Optional[tuple[str, ...]]) -> dict[type, Check]:
    """Exact type -> extra test, for the types `names` admits (all types when None)."""
    if names is None:
        return dict.fromkeys(_JSON_TYPES, _true)
    gates: dict[type, Check] = {}
    for name in names:
        for t, gate in _TYPE_GATES[name].items():
            # "number" admits every float; "integer" only integral ones.
            gates[t] = _true if gates.get(t) is _true or gate is _true else gate
    return gates


# --------------------------------------------------------------------------- keyword values


def _number(schema: dict, key: str) -> Any:
    value = schema[key]
    if type(value) not in (int, float):
        raise SchemaCompileError(f"{key} must be a number, not {value!r}")
    return value


def _count(schema: dict, key: str, default: Any = None) -> Any:
    if key not in schema:
        return default
    value = schema[key]
    if type(value) is not int or value < 0:
        raise SchemaCompileError(f"{key} must be a non-negative integer, not {value!r}")
    return value


def _strings(schema: dict, key: str) -> tuple[str, ...]:
    value = schema.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SchemaCompileError(f"{key} must be a list of strings, not {value!r}")
    return tuple(value)


def _schema_list(schema: dict, key: str) -> list:
    value = schema[key]
    if not isinstance(value, list) or not value:
        raise SchemaCompileError(f"{key} must be a non-empty list of schemas")
    return value


def _schema_map(schema: dict, key: str) -> dict:
    value = schema.get(key, {})
    if not isinstance(value, dict):
        raise SchemaCompileError(f"{key} must be an object")
    return value


# --------------------------------------------------------------------------- strings and numbers


def _length_rule(lo: int, hi: Optional[int]) -> Check:
    if hi is None:
        return _true if lo == 0 else _inlined(lambda x: len(x) >= lo, "len(v) >= {}", lo)
    if lo == 0:
        return _inlined(lambda x: len(x) <= hi, "len(v) <= {}", hi)
    return _inlined(lambda x: lo <= len(x) <= hi, "{} <= len(v) <= {}", lo, hi)


def _inlined(check: Check, condition: str, *constants: Any) -> Check:
    """`check` marked with the same test as an expression over `v` (constants as names: see _straight_line)."""
    check.inline = (condition, constants)  # type: ignore[attr-defined]
    return check


def _regex(pattern: str) -> re.Pattern:
    try:
        return re.compile(pattern)
    except re.error as error:
        raise SchemaCompileError(f"invalid pattern {pattern!r}: {error}") from None


def _string_rule(schema: dict) -> Check:
    """minLength/maxLength (code points, like len) and pattern (re.search), for strings."""
    length = _length_rule(_count(schema, "minLength", 0), _count(schema, "maxLength"))
    if "pattern" not in schema:
        return length
    if not isinstance(schema["pattern"], str):
        raise SchemaCompileError("pattern must be a string")
    search = _regex(schema["pattern"]).search  # a C function: no Python frame per call
    if length is _true:
        return search
    return lambda x: length(x) and search(x)


def _number_rule(schema: dict) -> Check:
    # Written as `not (x < lo)` rather than `x >= lo`, exactly like jsonschema, so NaN
    # passes every bound there and here.
    rules: list[Check] = []
    lo = _number(schema, "minimum") if "minimum" in schema else None
    hi = _number(schema, "maximum") if "maximum" in schema else None
    if lo is not None and hi is not None:
        rules.append(_inlined(lambda x: not (x < lo or x > hi), "not (v < {} or v > {})", lo, hi))
    elif lo is not None:
        rules.append(_inlined(lambda x: not x < lo, "not v < {}", lo))
    elif hi is not None:
        rules.append(_inlined(lambda x: not x > hi, "not v > {}", hi))
    if "exclusiveMinimum" in schema:
        xlo = _number(schema, "exclusiveMinimum")
        rules.append(lambda x: not x <= xlo)
    if "exclusiveMaximum" in schema:
        xhi = _number(schema, "exclusiveMaximum")
        rules.append(lambda x: not x >= xhi)
    if "multipleOf" in schema:
        rules.append(_multiple_of(_number(schema, "multipleOf")))
    return _all(rules)


def _multiple_of(divisor: Any) -> Check:
    """jsonschema's multipleOf, including its float and overflow handling."""
    if isinstance(divisor, float):

        def multiple_of_float(x: Any) -> bool:
            quotient = x / divisor
            try:
                return not int(quotient) != quotient
            except OverflowError:
                return (Fraction(x) / Fraction(divisor)).denominator == 1

        return multiple_of_float
    return lambda x: not x % divisor


class _StringMemo(dict):
    """Verdict cache for an expensive string handler (regex search, format check).

    Data repeat the same dates, sources and slugs over and over, and a dict hit costs a
    tenth of a regex search.  The handler for an exact str is a pure function of its
    value, so a cached verdict is exact.  ``memo.__getitem__`` serves as the handler
    itself: a hit runs entirely in C.  A miss costs a Python call, though, so a cache
    that fills up (ids, URLs: values that hardly repeat) takes itself out of the type
    tables (`slots`) and hands them the bare handler back.  Memory stays bounded: at
    most LIMIT entries, no long strings."""

    __slots__ = ("handler", "slots")
    LIMIT = 8192  # > 20 years of distinct dates
    MAX_KEY_LENGTH = 200

    def __init__(self, handler: Check) -> None:
        super().__init__()
        self.handler = handler
        self.slots: list[tuple[_TypeTable, type]] = []  # filled by _Compiler._find_memo_slots

    def __missing__(self, value: str) -> bool:
        verdict = bool(self.handler(value))
        if len(value) <= self.MAX_KEY_LENGTH:
            if len(self) >= self.LIMIT:
                self._saturated()
            self[value] = verdict
        return verdict

    def _saturated(self) -> None:
        self.clear()
        slots, self.slots = self.slots, []
        for table, t in slots:
            table[t] = self.handler
        # Closures that captured the memo itself (allOf parts...) keep a working cache.


def _memoized(handler: Check) -> Check:
    if handler is _true or handler is _false:
        return handler
    return _StringMemo(handler).__getitem__


def _format_rule(name: Any) -> Check:
    """Exactly FormatChecker.check: the registered function, its listed exceptions mean
    False, and an unregistered format is not checked at all."""
    if not isinstance(name, str):
        raise SchemaCompileError("format must be a string")
    if name not in FORMAT_CHECKER.checkers:
        return _true
    func, raises = FORMAT_CHECKER.checkers[name]

    def conforms(x: Any) -> bool:
        try:
            return bool(func(x))
        except raises:
            return False

    return conforms


# --------------------------------------------------------------------------- objects


def _closed_object(props: dict[str, _TypeTable], required: tuple[str, ...]) -> Check:
    """The common case: properties + required + additionalProperties false, one loop."""
    get = props.get
    size = len(props)
    # With every key known, len(o) == len(props) means every property, hence every
    # required one, is present; only otherwise do we look for the required names.
    shortcut = set(required) <= props.keys()

    def closed_object(o: dict) -> bool:
        for k, v in o.items():
            table = get(k)
            if table is None or not table[type(v)](v):
                return False
        if shortcut and len(o) == size:
            return True
        for name in required:
            if name not in o:
                return False
        return True

    if shortcut:
        closed_object.properties = (props, required)  # type: ignore[attr-defined]  (see _straight_line)
    return closed_object


_ABSENT = object()


def _inline_test(handler: Check, name: str, env: dict[str, Any]) -> list[str]:
    """Lines (indented for _straight_line's branches) returning False unless `handler(v)`, which env holds as `name`."""
    if handler is _true:
        return ["        pass"]
    inline = getattr(handler, "inline", None)
    if inline is not None:
        condition, constants = inline
        names = [f"{name}_c{n}" for n in range(len(constants))]
        env.update(zip(names, constants))
        return [f"        if not ({condition.format(*names)}):", "            return False"]
    spec = getattr(handler, "spec", None)
    if spec is not None:  # _simple_array's loop, in place
        lo, hi, items, unique = spec
        env[f"{name}_items"], env[f"{name}_lo"], env[f"{name}_hi"] = items, lo, hi
        bounds = f"{name}_lo <= len(v)" + ("" if hi is None else f" <= {name}_hi")
        lines = [f"        if not ({bounds}):", "            return False"]
        if items is not None:
            lines += ["        for x in v:", f"            if not {name}_items[type(x)](x):", "                return False"]
        if unique:
            env["_unique_items"] = _unique_items
            lines += ["        if len(v) > 1 and not _unique_items(v):", "            return False"]
        return lines
    return [f"        if not {name}(v):", "            return False"]


def _straight_line(props: dict[str, _TypeTable], required: tuple[str, ...],
                   straight: Callable[[Check], Optional[Check]]) -> Check:
    """_closed_object as straight-line code, made once every table is complete (the compiler's last step).

    The loop looks every key up in `props`, then the value's type in its table, then calls the
    handler. Here each property is one `o.get`; a value of a type its table accepts is tested
    in place (no call when the handler is _true); any other type still goes through the
    table (its slow path, _false, or a _StringMemo whose slot may change: see _saturated).
    A nested closed object is called as its own straight-line code (`straight`), or, in a
    cycle still being made, through its table.
    The verdict is the loop's: every present property valid, every required one present, and
    no other key (counted: len(o) equals the properties present).
    """
    lines = ["def closed_object(o):", f"    if len(o) > {len(props)}:", "        return False", "    absent = 0"]
    env: dict[str, Any] = {"_ABSENT": _ABSENT}
    for i, (name, table) in enumerate(props.items()):
        env[f"k{i}"], env[f"t{i}"] = name, table
        lines += [f"    v = o.get(k{i}, _ABSENT)", "    if v is _ABSENT:",
                  "        return False" if name in required else "        absent += 1"]
        for j, (t, handler) in enumerate(table.items()):
            if hasattr(handler, "properties"):
                handler = straight(handler)
            if handler is None or handler is _false or isinstance(getattr(handler, "__self__", None), _StringMemo):
                continue
            env[f"y{i}_{j}"], env[f"h{i}_{j}"] = t, handler
            lines.append(f"    elif type(v) is y{i}_{j}:")
            lines += _inline_test(handler, f"h{i}_{j}", env)
        lines += [f"    elif not t{i}[type(v)](v):", "        return False"]
    lines.append(f"    return len(o) + absent == {len(props)}")
    exec("\n".join(lines), env)  # noqa: S102  (our own code, from names bound in env)
    return env["closed_object"]


def _required(required: tuple[str, ...]) -> Check:
    if not required:
        return _true

    def has_required(o: dict) -> bool:
        for name in required:
            if name not in o:
                return False
        return True

    return has_required


def _property_values(
    props: dict[str, _TypeTable],
    patterns: list[tuple[Callable, _TypeTable]],
    additional: Optional[_TypeTable],
) -> Check:
    """properties, patternProperties and additionalProperties over an object's items."""
    if not props and not patterns and additional is None:
        return _true
    get = props.get
    if not patterns:
        if additional is None:
            pairs = tuple(props.items())

            def known_values(o: dict) -> bool:
                for k, table in pairs:
                    if k in o and not table[type(o[k])](o[k]):
                        return False
                return True

            return known_values

        def values(o: dict) -> bool:
            for k, v in o.items():
                table = get(k, additional)
                if not table[type(v)](v):
                    return False
            return True

        return values
    # jsonschema decides "additional" with all patterns joined by "|", while each
    # patternProperties entry is searched on its own; mirror both.
    joined = _regex("|".join(p.pattern for p, _ in patterns)).search
    searches = tuple((p.search, table) for p, table in patterns)

    def general_values(o: dict) -> bool:
        for k, v in o.items():
            table = get(k)
            if table is not None and not table[type(v)](v):
                return False
            for search, ptable in searches:
                if search(k) and not ptable[type(v)](v):
                    return False
            if table is None and additional is not None and not joined(k):
                if not additional[type(v)](v):
                    return False
        return True

    return general_values


def _property_names(names: _TypeTable) -> Check:
    def property_names(o: dict) -> bool:
        for k in o:
            if not names[type(k)](k):
                return False
        return True

    return property_names


def _dependent_required(deps: dict[str, tuple[str, ...]]) -> Check:
    pairs = tuple(deps.items())

    def dependent_required(o: dict) -> bool:
        for name, needed in pairs:
            if name in o:
                for other in needed:
                    if other not in o:
                        return False
        return True

    return dependent_required


def _dependent_schemas(deps: dict[str, _Node]) -> Check:
    pairs = tuple((name, node.check) for name, node in deps.items())
    return lambda o: all(check(o) for name, check in pairs if name in o)


# --------------------------------------------------------------------------- arrays


def _array_items(prefix: tuple[_TypeTable, ...], items: Optional[_TypeTable], no_more: bool) -> Check:
    """prefixItems, then items (a schema, or false: nothing after the prefix)."""
    if not prefix:
        if no_more:
            return lambda a: not a
        if items is None:
            return _true

        def all_items(a: list) -> bool:
            for v in a:
                if not items[type(v)](v):
                    return False
            return True

        return all_items
    n = len(prefix)

    def prefixed_items(a: list) -> bool:
        for v, table in zip(a, prefix):
            if not table[type(v)](v):
                return False
        if no_more:
            return len(a) <= n
        if items is not None:
            for v in itertools.islice(a, n, None):
                if not items[type(v)](v):
                    return False
        return True

    return prefixed_items


def _simple_array(lo: int, hi: Optional[int], items: Optional[_TypeTable], unique: bool) -> Check:
    """The common case (items, minItems, maxItems, uniqueItems) fused into one loop."""
    if items is None and not unique:
        return _length_rule(lo, hi)

    def array(a: list) -> bool:
        n = len(a)
        if n < lo or (hi is not None and n > hi):
            return False
        if items is not None:
            for v in a:
                if not items[type(v)](v):
                    return False
        return not unique or n < 2 or _unique_items(a)

    array.spec = (lo, hi, items, unique)  # type: ignore[attr-defined]  (see _straight_line)
    return array


def _contains(table: _TypeTable, lo: int, hi: Optional[int]) -> Check:
    def contains(a: list) -> bool:
        matches = 0
        for v in a:
            if table[type(v)](v):
                matches += 1
        return matches >= lo and (hi is None or matches <= hi)

    return contains


# --------------------------------------------------------------------------- the compiler

# A keyword that applies whatever the instance type: given an exact JSON type it returns
# the handler specialised for that type, given None the generic predicate.
_Universal = Callable[[Optional[type]], Check]


class _Compiler:
    def __init__(self, schemas: Mapping[str, dict]) -> None:
        self._docs: dict[str, Any] = {}  # document URI -> schema
        self._by_name: dict[str, str] = {}  # file name -> document URI
        for name, schema in schemas.items():
            own_id = schema.get("$id") if isinstance(schema, dict) else None
            uri = urldefrag(urljoin(DEFAULT_BASE, own_id if isinstance(own_id, str) else name))[0]
            self._docs[uri] = schema
            self._by_name[name] = uri
        self._refs: dict[tuple[str, str], _Node] = {}
        self._tables: list[_TypeTable] = []  # every table built, for _find_memo_slots
        self.memos: list[_StringMemo] = []  # every memo the tables hold, found by _find_memo_slots

    def compile_file(self, schema_file: str) -> _Node:
        """The file's schema, or with "#/json/pointer" appended the subschema there."""
        name, _, fragment = schema_file.partition("#")
        if name not in self._by_name:
            raise SchemaCompileError(f"unknown schema file {name!r}")
        uri = self._by_name[name]
        node = self._ref(f"{uri}#{fragment}" if fragment else uri, uri)
        self._find_memo_slots()
        self._straighten_closed_objects()
        return node

    def _straighten_closed_objects(self) -> None:
        """Put _straight_line's version of every closed object in the tables (they are complete now)."""
        made: dict[int, Optional[Check]] = {}

        def straight(handler: Check) -> Optional[Check]:
            """The straight-line version of a loop closed object; None while it is being made (a cycle)."""
            if id(handler) not in made:
                made[id(handler)] = None
                made[id(handler)] = _straight_line(*handler.properties, straight)  # type: ignore[attr-defined]
            return made[id(handler)]

        for table in self._tables:
            for t, handler in table.items():
                if hasattr(handler, "properties"):
                    table[t] = straight(handler) or handler

    def _find_memo_slots(self) -> None:
        """Tell each memo which table entries hold it, so that it can step aside."""
        for table in self._tables:
            for t, handler in table.items():
                memo = getattr(handler, "__self__", None)
                if isinstance(memo, _StringMemo):
                    memo.slots.append((table, t))
                    if all(memo is not known for known in self.memos):
                        self.memos.append(memo)

    # ----------------------------------------------------------------- $ref

    def _ref(self, ref: Any, base: str) -> _Node:
        """Compile a $ref target once; a target still being compiled (a cycle) is
        returned as a forwarding node that is bound when its compilation finishes."""
        if not isinstance(ref, str):
            raise SchemaCompileError("$ref must be a string")
        uri, fragment = urldefrag(urljoin(base, ref))
        uri = self._document_uri(uri)
        key = (uri, unquote(fragment))
        if key in self._refs:
            return self._refs[key]
        forward, bind = _forwarding_node()
        self._tables.append(forward.table)
        self._refs[key] = forward
        schema, target_base = self._resolve(uri, key[1])
        node = self._compile(schema, target_base)
        if node is forward:
            raise SchemaCompileError(f"$ref cycle that never reaches a schema: {ref!r}")
        self._refs[key] = node
        bind(node)
        return node

    def _document_uri(self, uri: str) -> str:
        if uri in self._docs:
            return uri
        name = uri.rsplit("/", 1)[-1]  # also accept a bare file name from schemas/
        if name in self._by_name:
            return self._by_name[name]
        raise SchemaCompileError(f"unresolvable $ref to {uri!r}")

    def _resolve(self, uri: str, pointer: str) -> tuple[Any, str]:
        """Follow a JSON pointer into a document, tracking embedded $id base changes."""
        target, base = self._docs[uri], uri
        if pointer == "":
            return target, base
        if not pointer.startswith("/"):
            raise SchemaCompileError(f"unsupported $ref fragment {pointer!r} (anchors)")
        for token in pointer[1:].split("/"):
            token = token.replace("~1", "/").replace("~0", "~")
            if isinstance(target, dict) and isinstance(target.get("$id"), str):
                base = urljoin(base, target["$id"])
            try:
                target = target[int(token)] if isinstance(target, list) else target[token]
            except (KeyError, IndexError, ValueError, TypeError):
                raise SchemaCompileError(f"unresolvable $ref pointer {pointer!r} in {uri}") from None
        return target, base

    # ----------------------------------------------------------------- schemas

    def _compile(self, schema: Any, base: str) -> _Node:
        if schema is True:
            return _ALWAYS
        if schema is False:
            return _NEVER
        if not isinstance(schema, dict):
            raise SchemaCompileError(f"a schema must be an object or a boolean, not {schema!r}")
        unknown = schema.keys() - _KNOWN
        if unknown:
            raise SchemaCompileError(f"unsupported keyword(s) {sorted(unknown)} in schema at {base}")
        if isinstance(schema.get("$id"), str):
            base = urljoin(base, schema["$id"])
        if "$ref" in schema and not (schema.keys() & _ASSERTIONS) - {"$ref"}:
            return self._ref(schema["$ref"], base)  # a bare $ref: reuse the target as is
        return self._compile_assertions(schema, base)

    def _compile_assertions(self, schema: dict, base: str) -> _Node:
        names = _type_names(schema)
        gates = _type_gates(names)
        string = _string_rule(schema)
        number = _number_rule(schema)
        obj = self._object_rule(schema, base)
        array = self._array_rule(schema, base)
        universals = self._universals(schema, base)
        by_kind = {str: string, int: number, float: number, dict: obj, list: array}

        handlers: dict[type, Check] = {}
        for t in _JSON_TYPES:
            if t not in gates:
                handlers[t] = _false
            else:
                handlers[t] = _all([gates[t], by_kind.get(t, _true), *(u(t) for u in universals)])
        if "pattern" in schema or schema.get("format") in FORMAT_CHECKER.checkers:
            handlers[str] = _memoized(handlers[str])
        generic = [u(None) for u in universals]
        node = _node(handlers, _slow_path(names, string, number, obj, array, generic))
        self._tables.append(node.table)
        return node

    def _universals(self, schema: dict, base: str) -> list[_Universal]:
        found: list[_Universal] = []
        if "enum" in schema:
            found.append(_enum(schema["enum"]))
        if "const" in schema:
            found.append(_const(schema["const"]))
        if "format" in schema:
            rule = _format_rule(schema["format"])
            found.append(lambda t: rule)
        if "$ref" in schema:
            found.append(_by_type([self._ref(schema["$ref"], base)], _all))
        for key, combine in (("allOf", _all), ("anyOf", _any), ("oneOf", _one)):
            if key in schema:
                nodes = [self._compile(s, base) for s in _schema_list(schema, key)]
                found.append(_by_type(nodes, combine))
        if "not" in schema:
            found.append(_by_type([self._compile(schema["not"], base)], lambda cs: _negate(cs[0])))
        if "if" in schema:
            found.append(self._if_then_else(schema, base))
        return found

    def _if_then_else(self, schema: dict, base: str) -> _Universal:
        cond = self._compile(schema["if"], base)
        then = self._compile(schema.get("then", True), base)
        other = self._compile(schema.get("else", True), base)

        def specialise(t: Optional[type]) -> Check:
            c, a, b = (n.table[t] if t else n.check for n in (cond, then, other))
            if c is _true or a is b:  # the outcome of "if" does not matter
                return a
            if c is _false:
                return b
            return lambda x: a(x) if c(x) else b(x)

        return specialise

    def _object_rule(self, schema: dict, base: str) -> Check:
        props = {k: self._compile(s, base).table for k, s in _schema_map(schema, "properties").items()}
        patterns = [(_regex(p), self._compile(s, base).table)
                    for p, s in _schema_map(schema, "patternProperties").items()]
        required = _strings(schema, "required")
        extra = schema.get("additionalProperties", True)
        closed = extra is False
        additional = None if closed or extra is True else self._compile(extra, base).table
        rules: list[Check] = []
        if closed and not patterns:
            rules.append(_closed_object(props, required))
        else:
            rules.append(_required(required))
            rules.append(_property_values(props, patterns, _NEVER.table if closed else additional))
        if "propertyNames" in schema:
            rules.append(_property_names(self._compile(schema["propertyNames"], base).table))
        rules.append(_length_rule(_count(schema, "minProperties", 0), _count(schema, "maxProperties")))
        if "dependentRequired" in schema:
            deps = _schema_map(schema, "dependentRequired")
            rules.append(_dependent_required({k: _strings(deps, k) for k in deps}))
        if "dependentSchemas" in schema:
            deps = _schema_map(schema, "dependentSchemas")
            rules.append(_dependent_schemas({k: self._compile(s, base) for k, s in deps.items()}))
        return _all(rules)

    def _array_rule(self, schema: dict, base: str) -> Check:
        prefix = tuple(self._compile(s, base).table for s in schema.get("prefixItems", []))
        items = schema.get("items", True)
        no_more = items is False
        table = None if no_more or items is True else self._compile(items, base).table
        lo, hi = _count(schema, "minItems", 0), _count(schema, "maxItems")
        unique = bool(schema.get("uniqueItems", False))
        if not prefix and not no_more and "contains" not in schema:
            return _simple_array(lo, hi, table, unique)
        rules = [_length_rule(lo, hi), _array_items(prefix, table, no_more)]
        if unique:
            rules.append(_unique_items)
        if "contains" in schema:
            contains = self._compile(schema["contains"], base).table
            rules.append(_contains(contains, _count(schema, "minContains", 1), _count(schema, "maxContains")))
        return _all(rules)


# --------------------------------------------------------------------------- helpers of the compiler


def _forwarding_node() -> tuple[_Node, Callable[[_Node], None]]:
    """A node for a $ref target still being compiled; `bind` points it at the result."""
    target: list[Check] = []

    def forward(x: Any) -> Any:
        return target[0](x)

    node = _node({}, forward)  # every lookup misses until bound

    def bind(result: _Node) -> None:
        target.append(result.check)
        node.table.update(result.table)

    return node, bind


def _by_type(nodes: list[_Node], combine: Callable[[list[Check]], Check]) -> _Universal:
    """Specialise an applicator (allOf, anyOf, oneOf, not, $ref) to one instance type."""

    def specialise(t: Optional[type]) -> Check:
        return combine([n.table[t] if t else n.check for n in nodes])

    return specialise


def _enum(values: Any) -> _Universal:
    if not isinstance(values, list):
        raise SchemaCompileError("enum must be a list")
    if all(type(v) is str for v in values):
        # For an exact str, equal() is ==, which is what set membership uses; a value of
        # any other exact JSON type never equals a str.
        members = frozenset(values)
        specialised = {str: members.__contains__}
    else:
        specialised = {}
    items = tuple(values)

    def generic(x: Any) -> bool:
        return any(_equal(each, x) for each in items)

    return lambda t: specialised.get(t, _false) if specialised and t else generic


def _const(value: Any) -> _Universal:
    if type(value) is str:
        return lambda t: value.__eq__ if t is str else (_false if t else lambda x: _equal(x, value))
    return lambda t: lambda x: _equal(x, value)


def _slow_path(
    names: Optional[tuple[str, ...]], string: Check, number: Check, obj: Check, array: Check,
    universals: list[Check],
) -> Check:
    """Any value whose exact type is not a JSON type: jsonschema's isinstance semantics."""
    tests = tuple(_TYPE_TESTS[n] for n in names) if names is not None else None
    rest = _all(universals)

    def slow(x: Any) -> bool:
        if tests is not None and not any(test(x) for test in tests):
            return False
        if isinstance(x, str) and not string(x):
            return False
        if _is_number(x) and not number(x):
            return False
        if isinstance(x, dict) and not obj(x):
            return False
        if isinstance(x, list) and not array(x):
            return False
        return bool(rest(x))

    return slow


# --------------------------------------------------------------------------- public API


def compile_schema(schema_file: str, schemas: Mapping[str, dict], *, keep_memos: bool = True) -> Callable[[Any], bool]:
    """Compile `schemas[schema_file]` into ``is_valid(instance) -> bool``.

    `schema_file` may end in a JSON pointer fragment ("reviews.schema.json#/properties/reviews"):
    the subschema there, its $refs resolved as in the whole file.

    `schemas` maps file names ("review.schema.json") to parsed schemas; ``$ref``s resolve
    against each schema's ``$id`` (or, failing that, by file name).  Raises
    SchemaCompileError for anything unsupported.  See the module docstring for the
    contract: same verdict as jsonschema's Draft202012Validator with its FORMAT_CHECKER.

    With ``keep_memos=False`` the string verdict caches are emptied after every call: for
    large documents validated once, whose strings the caches would otherwise keep alive
    (scattered over the parse's memory, they keep the allocator from returning it).
    """
    compiler = _Compiler(schemas)
    table = compiler.compile_file(schema_file).table
    memos = () if keep_memos else tuple(compiler.memos)

    def is_valid(instance: Any) -> bool:
        try:
            return bool(table[type(instance)](instance))
        except Exception:
            # Where jsonschema itself raises (multipleOf 0.5 on NaN, a value nested past
            # the recursion limit, a failing custom format...) there is no verdict to
            # mirror: answer False so that the caller runs jsonschema and sees for itself.
            return False
        finally:
            for memo in memos:
                memo.clear()

    return is_valid


if __name__ == "__main__":  # python schema_compiler.py DATA_DIR: time both data files
    import json
    import sys
    import time
    from pathlib import Path

    schema_dir = Path(__file__).resolve().parent / "schemas"
    all_schemas = {p.name: json.loads(p.read_text("utf-8")) for p in schema_dir.glob("*.schema.json")}
    data_dir = Path(sys.argv[1] if len(sys.argv) > 1 else "data")
    for file_name, schema_name in (("reviews.json", "reviews.schema.json"), ("insights.json", "insights.schema.json")):
        doc = json.loads((data_dir / file_name).read_text("utf-8"))
        started = time.perf_counter()
        predicate = compile_schema(schema_name, all_schemas)
        compiled = time.perf_counter()
        verdict = predicate(doc)
        done = time.perf_counter()
        print(f"{file_name}: {verdict}  compile {compiled - started:.4f} s  validate {done - compiled:.3f} s")
