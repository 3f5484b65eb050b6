"""fast_init: the same objects as the dataclass's own ``__init__``, and only where it is safe."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slurm_ext import decisions
from slurm_ext.frozen import fast_init
from slurm_ext.model import Job, JobState, MalleableSpec

CLASSES = [decisions.StartJob, decisions.Expand, decisions.Shrink, decisions.RaisePriority,
           decisions.NoAction, Job]  # fmt: skip


def reference(cls: type) -> type:
    """The same dataclass with the ``__init__`` dataclasses generates."""
    spec = [(f.name, f.type, dataclasses.field(default=f.default)) for f in dataclasses.fields(cls)]
    return dataclasses.make_dataclass(f"Ref{cls.__name__}", spec, frozen=True, slots=True)


def values(cls: type) -> st.SearchStrategy[dict[str, object]]:
    pick = {
        "int": st.integers(-5, 10**9), "int | None": st.none() | st.integers(0, 99),
        "str": st.text(max_size=5), "float": st.floats(allow_nan=False),
        "float | None": st.none() | st.floats(allow_nan=False), "JobState": st.sampled_from(JobState),
        "tuple[str, ...]": st.lists(st.text(max_size=3), max_size=3).map(tuple),
        "MalleableSpec | None": st.none() | st.builds(MalleableSpec, st.just(1), st.integers(1, 9)),
    }  # fmt: skip
    fields = dataclasses.fields(cls)
    required = {f.name: pick[str(f.type)] for f in fields if f.default is dataclasses.MISSING}
    optional = {f.name: pick[str(f.type)] for f in fields if f.default is not dataclasses.MISSING}
    return st.fixed_dictionaries(required, optional=optional)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
@given(data=st.data())
def test_fast_init_builds_what_the_generated_init_builds(cls, data):
    kw = data.draw(values(cls))
    ref = reference(cls)(**kw)
    for obj in (cls(**kw), cls(*[kw.get(f.name, f.default) for f in dataclasses.fields(cls)])):
        assert type(obj) is cls  # never left as the twin it is written through
        assert dataclasses.astuple(obj) == dataclasses.astuple(ref)
        assert hash(obj) == hash(cls(**kw)) and obj == cls(**kw)
        with pytest.raises(dataclasses.FrozenInstanceError):
            obj.reason = "changed"  # type: ignore[misc]


def test_fast_init_keeps_the_signature():
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'nodes'"):
        decisions.StartJob(1)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'size'"):
        decisions.Expand(1, 2, size=3)  # type: ignore[call-arg]
    assert decisions.Expand(1, new_size=2).for_job is None


def test_fast_init_refuses_classes_it_would_break():
    @dataclass(slots=True)
    class Mutable:
        x: int

    @dataclass(frozen=True)
    class NoSlots:
        x: int

    @dataclass(frozen=True, slots=True)
    class Checked:
        x: int

        def __post_init__(self) -> None:
            assert self.x > 0

    @dataclass(frozen=True, slots=True)
    class Factory:
        x: list[int] = dataclasses.field(default_factory=list)

    for cls in (Mutable, NoSlots, Checked, Factory):
        with pytest.raises(TypeError, match="fast_init"):
            fast_init(cls)


def test_a_subclass_instance_keeps_its_class():
    # the twin has the class's layout only: a subclass's instance (here with a slot of its own)
    # is written slot by slot
    class Tagged(decisions.StartJob):
        __slots__ = ("tag",)

    obj = Tagged(3, 4, "why")
    assert type(obj) is Tagged
    assert (obj.job_id, obj.nodes, obj.reason) == (3, 4, "why")
    with pytest.raises(dataclasses.FrozenInstanceError):
        obj.nodes = 5  # type: ignore[misc]
