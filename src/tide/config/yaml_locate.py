"""Line numbers for paths in a YAML document, so schema errors say where."""

from __future__ import annotations

from collections.abc import Sequence

import yaml


class Locator:
    def __init__(self, text: str) -> None:
        try:
            self.root = yaml.compose(text, Loader=yaml.SafeLoader)
        except yaml.YAMLError:
            self.root = None

    def line(self, path: Sequence[str | int]) -> int | None:
        """1-based line of the deepest node on `path` that exists."""
        node = self.root
        best = node.start_mark.line + 1 if node is not None else None
        for part in path:
            node = _child(node, part)
            if node is None:
                break
            best = node.start_mark.line + 1
        return best


def _child(node: yaml.Node | None, part: str | int) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if key.value == str(part):
                return value
        return None
    if isinstance(node, yaml.SequenceNode) and isinstance(part, int):
        return node.value[part] if 0 <= part < len(node.value) else None
    return None


def key_line(locator: Locator, path: Sequence[str | int], key: str) -> int | None:
    """Line of `key` itself inside the mapping at `path` (for unknown-key warnings)."""
    node = locator.root
    for part in path:
        node = _child(node, part)
    if isinstance(node, yaml.MappingNode):
        for k, _ in node.value:
            if k.value == key:
                return k.start_mark.line + 1
    return locator.line(path)
