"""Cores for a start on one node (tide.sched.placement._pick_cores) on bit
masks pick what the list walk it replaced picked (kept here as the
reference): random layouts (sockets with overlapping or missing core
lists, none at all), GPU subsets, free-core masks, counts and binding."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tide.sched.index import GpuLayout
from tide.sched.placement import _pick_cores, socket_masks


def reference(
    layout: GpuLayout, gpus: tuple[int, ...], core_mask: int, cores: int, binding: bool
) -> tuple[int, ...] | None:
    """The list walk before bit masks (placement.py at cda9515), verbatim."""
    near: list[int] = []
    for g in gpus:
        for c in layout.socket_cores[g] if layout.socket_cores else ():
            if core_mask >> c & 1 and c not in near:
                near.append(c)
    near.sort()
    if binding and gpus and layout.socket_cores and any(layout.socket_cores[g] for g in gpus):
        return tuple(near[:cores]) if len(near) >= cores else None
    chosen = near[:cores]
    if len(chosen) < cores:
        taken = set(chosen)
        c = 0
        while len(chosen) < cores and core_mask >> c:
            if core_mask >> c & 1 and c not in taken:
                chosen.append(c)
            c += 1
        if len(chosen) < cores:
            return None
    return tuple(sorted(chosen))


@st.composite
def cases(draw: st.DrawFn) -> tuple:
    count = draw(st.integers(1, 8))
    n_cores = draw(st.sampled_from([4, 16, 70, 128]))
    core_ids = st.integers(0, n_cores - 1)
    socket_cores = draw(
        st.one_of(
            st.just(()),
            st.lists(st.lists(core_ids, max_size=12).map(tuple), min_size=count, max_size=count),
        )
    )
    layout = GpuLayout(count, tuple(range(count)), (), tuple(socket_cores))
    gpus = tuple(sorted(draw(st.sets(st.integers(0, count - 1), max_size=count))))
    core_mask = draw(st.integers(0, (1 << n_cores) - 1))
    cores = draw(st.integers(0, n_cores + 2))
    return layout, gpus, core_mask, cores, draw(st.booleans())


@settings(max_examples=1000)
@given(cases())
def test_bit_masks_pick_what_the_list_walk_picked(case: tuple) -> None:
    layout, gpus, core_mask, cores, binding = case
    got = _pick_cores(layout, gpus, core_mask, cores, binding, socket_masks(layout))
    assert got == reference(layout, gpus, core_mask, cores, binding)
