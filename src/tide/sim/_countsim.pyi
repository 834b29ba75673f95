"""Types of the C kernel (src/tide/sim/_countsim.c); see tide.sim.count_fast."""

from collections.abc import Callable
from typing import Any, overload

from _typeshed import ReadableBuffer

# the arrays: contiguous float64 (submit, runlen, limit) and int64 (need, acct) buffers,
# numpy arrays in practice (which typeshed does not see as buffers on Python 3.11)
def run(
    submit: Any,
    runlen: Any,
    need: Any,
    limit: Any,
    acct: Any,
    n_accounts: int,
    nodes: int,
    gpus_per_node: int,
    mode: int,
    sjf: bool,
    bf_interval: float,
    plot_period: float,
    /,
) -> dict[str, Any]: ...
def parse_swf(data: ReadableBuffer, width: int, /) -> bytearray | None: ...
def make_slots(
    cls: type, names: tuple[str, ...], columns: tuple[Any, ...], n: int, /
) -> list[Any]: ...
def join_groups(items: list[str], index: Any, bounds: Any, sep: str, /) -> list[str]: ...
def group_dicts(
    bounds: Any, keys: Any, values: Any, names: list[str], /
) -> list[dict[str, int]]: ...
@overload
def csv_rows(columns: tuple[Any, ...], kinds: str, special: str, decimals: int, /) -> bytes: ...
@overload
def csv_rows(
    columns: tuple[Any, ...],
    kinds: str,
    special: str,
    decimals: int,
    write: Callable[[bytes], object],
    /,
) -> None: ...
def hostlists(
    flat: Any, bounds: Any, nums: Any, digits: list[str], names: list[str], head: str, tail: str, /
) -> list[str]: ...
def numbered(prefix: str, values: Any, /) -> list[str]: ...
def suffixed(items: list[str], suffix: str, /) -> list[str]: ...
def keep_heap() -> bool: ...
def svg_path(x: Any, y: Any, move: Any, /) -> str: ...
def occupancy(
    bounds: Any, node: Any, gpus: Any, row_of_node: Any, start: Any, end: Any, by_start: Any,
    by_end: Any, n_rows: int, edges: Any, cap: Any, /
) -> bytes: ...

OCCUPANCY_ONE_GPUS: int
CSV_ROWS_WRITE: int
