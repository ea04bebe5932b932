"""Restyling only what changed: a focus move or a pane's class must not restyle a whole pane.

Textual restyles a node *and every node under it* when its classes or its focus change, since
a rule such as `Pane.-x Label` or `Pane:focus Label` could depend on it. The lab's rules do not:
a pane's classes set only the pane's own display and border, and no rule styles a pane's
children by the pane's focus. So the lab restyles the one node, which keeps `1`–`4` (a class
change on two panes and a focus move) from re-applying the stylesheet to ~290 nodes per key.
"""

from __future__ import annotations

from textual._context import NoActiveAppError
from textual.dom import DOMNode


def restyle(node: DOMNode) -> None:
    """Re-apply the stylesheet to this node alone (not to its children)."""
    try:
        node.app.stylesheet.update_nodes([node], animate=False)
    except NoActiveAppError:
        pass  # not in an app (yet): it is styled when mounted


class FocusRestylesSelf:
    """For a container that takes the focus itself (a scrolling pane): a focus change
    restyles the container only, as no rule styles its children by its focus."""

    def watch_has_focus(self, _has_focus: bool) -> None:
        """Replaces Widget.watch_has_focus, which restyles the whole subtree."""
        assert isinstance(self, DOMNode)
        restyle(self)
