"""Restyling only what changed: a focus move or a pane's class must not restyle a whole pane.

Textual restyles a node *and every node under it* when its classes or its focus change, since
a rule such as `Pane.-x Label` or `Pane:focus Label` could depend on it. The lab's rules do not:
a pane's classes set only the pane's own display and border, and no rule styles a pane's
children by the pane's focus. So the lab restyles the one node, which keeps `1`–`4` (a class
change on two panes and a focus move) from re-applying the stylesheet to ~290 nodes per key;
and a key's marks on a pane (current, focused) are one restyle of it (`restyled_once`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from textual._context import NoActiveAppError
from textual.css.styles import RenderStyles, RulesMap
from textual.dom import DOMNode
from textual.widget import Widget

_batches: list[list[DOMNode]] = []
"""Restyles asked for inside `restyled_once`, innermost last."""


def restyle(node: DOMNode) -> None:
    """Re-apply the stylesheet to this node alone (not to its children); inside
    `restyled_once`, when it ends."""
    if _batches:
        batch = _batches[-1]
        if all(kept is not node for kept in batch):
            batch.append(node)
        return
    _apply([node])


def _apply(nodes: list[DOMNode]) -> None:
    try:
        nodes[0].app.stylesheet.update_nodes(nodes, animate=False)
    except NoActiveAppError:
        return  # not in an app (yet): it is styled when mounted
    for node in nodes:
        if isinstance(node, Widget) and (node._layout_required or node._repaint_required):
            # A pane shown, hidden or marked focused: its layout or repaint goes to the
            # screen now, in the key's handler. Left to the pane's next idle (Textual's way),
            # it reached the screen after the update the focused widget itself had asked
            # for: that frame drew the old layout or border, and what the key changed came
            # a frame later (`4` in the presenter layout and the grid: ~30-40 ms).
            node._check_refresh()


@contextmanager
def restyled_once() -> Iterator[None]:
    """Restyle each node asked for inside once, at the end: a pane key marks a pane
    current and then focused (or a pane neither), a restyle each."""
    batch: list[DOMNode] = []
    _batches.append(batch)
    try:
        yield
    finally:
        _batches.pop()
        if batch:
            _apply(batch)


class NoFocusStyles:
    """For a pane that takes the focus itself (a scrolling pane): no rule styles it, or
    anything in it, by its focus — its border lights up by the `-focused` class the lab sets
    (`LabScreen.watch_focused`), restyled with the pane's other marks — so its own focus
    change restyles nothing (`tests/app/test_focus_cost.py` checks the stylesheet's rules)."""

    def watch_has_focus(self, _has_focus: bool) -> None:
        """Replaces Widget.watch_has_focus, which restyles the whole subtree."""


class FocusStylesKept:
    """For a widget whose styles take long to work out — a DataTable matches each of its
    dozen component classes against every rule, 2–4 ms a focus change, on the key that
    focuses it — its styles in each state are worked out once and put back after.

    The state is what rules can select on: the widget's classes and pseudo-classes (focus,
    hover…), its ancestors', the theme and the stylesheet itself (a new one forgets them).
    """

    _styles_kept: tuple[object, dict[object, tuple[RulesMap, dict[str, RenderStyles]]]] | None = (
        None
    )
    """(the stylesheet's rules they were worked out by, styles by state)."""

    def watch_has_focus(self, _has_focus: bool) -> None:
        """Replaces Widget.watch_has_focus, which works the styles out each time."""
        assert isinstance(self, Widget)
        try:
            stylesheet = self.app.stylesheet
        except NoActiveAppError:
            return  # not in an app (yet): it is styled when mounted
        rules = stylesheet.rules
        if self._styles_kept is None or self._styles_kept[0] is not rules:
            self._styles_kept = (rules, {})
        kept = self._styles_kept[1]
        state = (
            self.app.theme,
            *(
                (node.classes, frozenset(node.get_pseudo_classes()))
                for node in self.ancestors_with_self
            ),
        )
        found = kept.get(state)
        if found is None:
            self.update_node_styles(animate=False)
            kept[state] = (self.styles.base.get_rules(), dict(self._component_styles))
            return
        base_rules, components = found
        stylesheet.replace_rules(self, base_rules)
        self._component_styles.clear()
        self._component_styles.update(components)
        self.refresh()
