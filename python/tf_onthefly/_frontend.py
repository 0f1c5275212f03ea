"""The generators as Python functions for the front ends other than TensorFlow's (JAX in
tf_onthefly/jax, PyTorch in tf_onthefly/torch), built from the op specs in the core, so a
generator registered into the core (a built-in one, or a user's library loaded later) has
them without a line written for it. Imports no framework.

Every function takes what the TensorFlow wrapper of the same generator takes:

    name(batch_size, <attributes without a default>, <tensor inputs>, seed, step, *,
         <attributes with a default>, first_sample=0, num_samples=None, name=None)

and returns its outputs as a tuple. Where a built-in wrapper's Python differs from its op's
spec, ADJUSTMENTS says how (tests/frontend_test.py checks every signature against the
TensorFlow wrappers). A front end supplies what is its own: dtype names, tensors, the call.
"""

import dataclasses
import inspect
import re
from typing import Callable, Dict, Optional, Tuple

from tf_onthefly import _values

# Inputs and attributes the SDK gives every generator (core::CommonInputSpecs, CommonAttrSpecs).
COMMON_INPUTS = ("seed", "step", "first_sample")
COMMON_ATTRS = ("Tindex", "batch_size", "num_samples")


@dataclasses.dataclass(frozen=True)
class Adjustment:
    """How a TensorFlow wrapper's Python differs from its op's spec."""

    defaults: Dict[str, object] = dataclasses.field(default_factory=dict)  # attr -> its Python default
    derive: Optional[Callable[[dict], dict]] = None  # attributes from the others (a None default)
    options: Dict[str, object] = dataclasses.field(default_factory=dict)  # Python-only keywords
    outputs: Optional[Callable[[tuple, dict], tuple]] = None  # which outputs are returned


ADJUSTMENTS = {
    # label_dtype=None: int32 for classification, float32 for regression.
    "OnTheFly>TeacherTask": Adjustment(
        defaults={"label_dtype": None},
        derive=lambda a: {"label_dtype": a["label_dtype"] or ("int32" if a["task"] == "classification" else "float32")},
    ),
    # The boxes only with return_boxes=True.
    "OnTheFly>ProceduralShapes": Adjustment(
        options={"return_boxes": False},
        outputs=lambda outs, options: outs if options["return_boxes"] else outs[:2],
    ),
}


def _default(attr: dict):
    """An attribute's default as the spec writes it: a float's as its literal (`max_size:
    float = 0.7` -> 0.7; the JSON value is the float32 it becomes, 0.699999988)."""
    value = attr.get("default")
    if attr["type"] == "float" and value is not None:
        return float(attr["spec"].split("=", 1)[1])
    return value


def python_name(op: str) -> str:
    """OnTheFly>RandomBatch -> random_batch."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", op.split(">")[-1]).lower()


@dataclasses.dataclass
class Bound:
    """One call's arguments, sorted: `attrs` for the core's configure (types as dtype names),
    the generator's own `inputs` in the op's order, and the common ones."""

    attrs: dict
    inputs: list
    seed: object
    step: object
    first_sample: object
    options: dict
    name: Optional[str]


@dataclasses.dataclass
class Spec:
    """A generator's Python face, from its op spec (core_api.h, specs JSON)."""

    op: str
    name: str
    doc: str
    attrs: Dict[str, dict]  # its own attributes' specs, in the op's order
    inputs: Dict[str, dict]  # its own tensor inputs' specs, in the op's order
    outputs: Tuple[str, ...]
    positional: Tuple[str, ...]
    keywords: Dict[str, object]  # keyword-only name -> default (dtypes by name)
    adjustment: Adjustment

    @classmethod
    def from_json(cls, generator: dict) -> "Spec":
        op = generator["name"]
        adjustment = ADJUSTMENTS.get(op, Adjustment())
        attrs = {a["name"]: a for a in generator["attrs"] if a["name"] not in COMMON_ATTRS}
        inputs = {i["name"]: i for i in generator["inputs"] if i["name"] not in COMMON_INPUTS}
        required = [n for n, a in attrs.items() if "default" not in a and n not in adjustment.defaults]
        keywords = {n: adjustment.defaults.get(n, _default(a)) for n, a in attrs.items() if n not in required}
        keywords.update(adjustment.options)
        keywords.update(first_sample=0, num_samples=None, name=None)
        return cls(
            op=op,
            name=python_name(op),
            doc=generator.get("doc", "").strip(),
            attrs=attrs,
            inputs=inputs,
            outputs=tuple(o["name"] for o in generator["outputs"]),
            positional=("batch_size", *required, *inputs, "seed", "step"),
            keywords=keywords,
            adjustment=adjustment,
        )

    def signature(self, dtype_default: Callable[[str], object] = lambda name: name) -> inspect.Signature:
        """The function's signature; `dtype_default` turns a dtype name into the front end's
        dtype for the defaults of type attributes."""
        P = inspect.Parameter

        def default(n, v):
            return dtype_default(v) if v is not None and self.attrs.get(n, {}).get("type") == "type" else v

        return inspect.Signature(
            [P(n, P.POSITIONAL_OR_KEYWORD) for n in self.positional]
            + [P(n, P.KEYWORD_ONLY, default=default(n, v)) for n, v in self.keywords.items()]
        )

    def docstring(self, framework: str) -> str:
        head = (
            f"{self.name}({', '.join(self.positional)}, *, ...) for {framework}: the op {self.op}, the "
            f"same values as tf_onthefly.{self.name} bit for bit (docs/counter-contract.md).\n\n"
        )
        return head + self.doc

    # Arguments that may be a framework's arrays (the rest are Python values fixed per call).
    def dynamic(self) -> Tuple[str, ...]:
        return (*self.inputs, "seed", "step", "first_sample")

    def split(self, args, kwargs) -> Tuple[dict, dict]:
        """One call's arguments as (Python values by name, array arguments by name), checked
        for missing, repeated and unknown names; plain dict work, which torch.compile traces."""
        if len(args) > len(self.positional):
            raise TypeError(f"{self.name}() takes {len(self.positional)} positional arguments, got {len(args)}")
        values = dict(zip(self.positional, args))
        for k, v in kwargs.items():
            if k in values:
                raise TypeError(f"{self.name}() got multiple values for argument {k!r}")
            if k not in self.keywords and k not in self.positional:
                raise TypeError(
                    f"{self.name}() got an unexpected keyword argument {k!r} ({self.op} has no such argument)"
                )
            values[k] = v
        missing = [n for n in self.positional if n not in values]
        if missing:
            raise TypeError(f"{self.name}() missing required arguments: {', '.join(map(repr, missing))}")
        dynamic = {n: values.pop(n, 0) for n in self.dynamic()}
        return values, dynamic

    def constants(self, values: dict, dtype_name: Callable[[object, str], str]) -> Tuple[dict, dict, Optional[str]]:
        """(attrs for the core's configure, Python-only options, name) from split's Python
        values; `dtype_name(value, arg)` names a dtype ("float32", "bfloat16", ...) or refuses it."""
        values = dict(values)
        for k, v in self.keywords.items():
            values.setdefault(k, v)
        attrs = {n: values[n] for n in self.attrs}
        if self.adjustment.derive is not None:
            attrs.update(self.adjustment.derive(attrs))
        for n, v in attrs.items():
            attrs[n] = attr_value(v, n, self.attrs[n], dtype_name)
        num_samples = values["num_samples"]
        attrs.update(
            batch_size=_values.int_value(values["batch_size"], "batch_size"),
            num_samples=-1 if num_samples is None else _values.int_value(num_samples, "num_samples"),
        )
        return attrs, {n: values[n] for n in self.adjustment.options}, values["name"]

    def bind(self, args, kwargs, dtype_name: Callable[[object, str], str]) -> Bound:
        """Sorts and converts one call's arguments."""
        values, dynamic = self.split(args, kwargs)
        attrs, options, name = self.constants(values, dtype_name)
        return Bound(
            attrs=attrs,
            inputs=[dynamic[n] for n in self.inputs],
            seed=dynamic["seed"],
            step=dynamic["step"],
            first_sample=dynamic["first_sample"],
            options=options,
            name=name,
        )

    def returned(self, outputs, options: dict) -> tuple:
        outputs = tuple(outputs)
        return self.adjustment.outputs(outputs, options) if self.adjustment.outputs else outputs


def attr_value(value, arg: str, spec: dict, dtype_name):
    """A Python value as the core's configure takes it (JSON): integers and floats by the
    rules every front end shares (an int attribute named *_seed is a 64-bit word, as the
    seed), dtypes by name. Allowed values, ranges and the rest: the core checks them, with
    the op's messages."""
    kind = spec["type"]
    if kind == "int":
        return _values.int_value(value, arg, unsigned_64=arg.endswith("_seed"))
    if kind == "float":
        return _values.float_value(value, arg)
    if kind == "type":
        return dtype_name(value, arg)
    if kind == "list(int)":
        return [_values.int_value(v, f"{arg}[{i}]") for i, v in enumerate(value)]
    return value


def specs(core) -> Dict[str, Spec]:
    """Python name -> Spec for every generator registered in `core` (a _core.Core)."""
    return {s.name: s for s in (Spec.from_json(g) for g in core.specs()["generators"])}


def make_function(spec: Spec, run: Callable, framework: str, dtype_default=lambda name: name) -> Callable:
    """The generator's function: `run(spec, *args, **kwargs)` does the work."""

    def function(*args, **kwargs):
        return run(spec, args, kwargs)

    function.__name__ = function.__qualname__ = spec.name
    function.__doc__ = spec.docstring(framework)
    function.__signature__ = spec.signature(dtype_default)
    return function


def check_step_shape(shape, op: str):
    """Refuses a step that is neither a scalar nor a vector of steps (shape [n]: the n steps'
    batches in one call, stacked), as the ops do."""
    if len(shape) > 1:
        raise ValueError(
            f"{op}: step must be an integer scalar, or a vector of steps of shape [n], got shape {list(shape)}"
        )


def seed_words(value, arg: str):
    """A Python or NumPy seed (an integer, or a pair) or step (an integer, or a vector of
    steps: a list or 1-D array) as int64 words, a NumPy array of shape [], [2] or (a step
    vector) [n]; None where `value` is not such a value (a framework's array: the front end
    converts it)."""
    import numpy as np

    if _values.is_integer(value):
        return np.asarray(_values.int_value(value, arg, unsigned_64=True), np.int64)
    if isinstance(value, (tuple, list)) and all(_values.is_integer(v) for v in value):
        if arg != "step" and (arg != "seed" or len(value) != 2):
            raise ValueError(
                f"{arg} must be {'an integer or a pair of integers' if arg == 'seed' else 'an integer'}, got {value!r}"
            )
        return np.asarray([_values.int_value(v, arg, unsigned_64=True) for v in value], np.int64)
    if (
        isinstance(value, np.ndarray)
        and value.dtype.kind in "iu"
        and (value.shape in ((), (2,)) or arg == "step" and value.ndim == 1)
    ):
        return seed_words([int(v) for v in value.ravel()] if value.shape else int(value), arg)
    return None


class Generators(dict):
    """One front end's functions, name -> function, for every generator in the core: `make(spec)`
    makes one; each is also set in `namespace` (the front end's module)."""

    def __init__(self, core, make: Callable, namespace: dict):
        super().__init__()
        self.core, self.make, self.namespace = core, make, namespace
        self.add_new()

    def add_new(self) -> dict:
        """Functions for the generators the core has gained; returns them."""
        added = {n: self.make(s) for n, s in specs(self.core).items() if n not in self}
        self.update(added)
        self.namespace.update(added)
        return added

    def load(self, path: str) -> dict:
        """Loads a library of generators built with the SDK (docs/writing-a-generator.md);
        returns the functions of those it added. A refused registration is an ImportError
        naming what differs."""
        self.core.load_library(path)
        return self.add_new()
