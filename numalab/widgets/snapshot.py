"""How an explorer is displayed in a notebook: the live widget and, after it, a static snapshot
of its last view (the summary table as HTML and the figure as PNG) that follows every update, so
a saved notebook shows the explorer's last view without a kernel (JupyterLab, ``nbconvert --to
html``).

While the live widget is on screen a style rule carried by the widget hides *its own* snapshot
and nothing else: each explorer has a number (:attr:`Snapshot.uid`, counted per process), its
widget carries the class ``numalab-live-<uid>`` and its snapshot ``numalab-snapshot-<uid>``, and
the rule hides only a ``numalab-snapshot-<uid>`` output (and the PNG output right after it) that
follows a ``numalab-live-<uid>`` output of the same cell. Text printed before the explorer, or a
second explorer in the same cell, is left alone. Without a kernel nothing renders the widget, so
the rule is absent and the snapshot shows.
"""

from __future__ import annotations

import base64
import html
import itertools

#: explorer numbers: unique within a process, hence within one cell's outputs
_UIDS = itertools.count(1)


def live_css(uid: int) -> str:
    """The style rule explorer ``uid``'s live widget carries: while the widget is rendered, its
    own snapshot outputs (the HTML table and the PNG right after it) are hidden -- in
    JupyterLab / Voila (``jp-OutputArea-child``) and the classic notebook (``output_area``)."""
    rules = []
    for child in (".jp-OutputArea-child", ".output_area"):
        live = f"{child}:has(.numalab-live-{uid})"
        snap = f"{child}:has(.numalab-snapshot-{uid})"
        rules += [f"{live}~{snap}", f"{live}~{snap}+{child}"]
    return "<style>" + ",".join(rules) + "{display:none}</style>"


class Snapshot:
    """Mixin of :class:`.explorers.Explorer`: the static snapshot and ``_ipython_display_``.

    Uses the explorer's ``title``, ``tooltips``, ``controls``, ``params``, ``summary_title``
    and, in a live kernel, ``wait`` / ``wait_first``."""

    #: in a live kernel, displaying the explorer returns once this answer is on screen:
    #: "final" (the cell ends with the refined view, so a saved notebook stores it), "first"
    #: (the first answer; the refinement continues in the background) or None (at once)
    display_waits: str | None = "final"
    _handles = None
    _snapshot_parts = None
    _last_png = b""

    def _new_uid(self) -> int:
        self.uid = next(_UIDS)
        return self.uid

    def snapshot_html(self) -> str:
        """The last view as static HTML: the summary table or the refusal message."""
        return self._snapshot_parts[0] if self._snapshot_parts else ""

    def _snapshot(self, table_html: str, png) -> None:
        if png is not None:
            self._last_png = png
        self._snapshot_parts = (table_html, png)
        if self._handles is None:
            return
        html_handle, png_handle = self._handles
        html_handle.update(self._snapshot_bundle(table_html), raw=True)
        png_handle.update(self._png_bundle(png), raw=True)

    def _snapshot_bundle(self, table_html: str) -> dict:
        head = (f'<div class="numalab-snapshot numalab-snapshot-{self.uid}"><b>{html.escape(self.title)}</b> '
                f'<span style="color:#666">(snapshot of the explorer\'s last view; run the notebook to move '
                f'its controls)</span><br>{self._controls_html()}{table_html}</div>')
        return {"text/html": head, "text/plain": f"{self.title}: {self.summary_title(self.params)}"}

    def _png_bundle(self, png) -> dict:
        if not png:
            return {"text/plain": ""}
        return {"image/png": base64.b64encode(png).decode("ascii"), "text/plain": f"<{self.title} figure>"}

    def _controls_html(self) -> str:
        cells = "".join(f'<span style="margin-right:1.2em" title="{html.escape(self.tooltips.get(k, ""))}">'
                        f'{html.escape(getattr(c, "description", k) or k)}: <b>{html.escape(str(c.value))}</b></span>'
                        for k, c in self.controls.items())
        return f'<div style="margin:0.3em 0">{cells}</div>'

    def _ipython_display_(self):
        from IPython.display import display

        bundle = self.widget._repr_mimebundle_()
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        data = dict(data)
        data["text/plain"] = (f"{type(self).__name__}: live controls need a running kernel; "
                              "the snapshot below shows the last view")
        display(data, raw=True)
        table, png = self._snapshot_parts or ("", None)
        self._handles = (display(self._snapshot_bundle(table), raw=True, display_id=True),
                         display(self._png_bundle(png if png is not None else self._last_png), raw=True,
                                 display_id=True))
        # the widget is on screen, its progress bar moving: wait here for the answer the cell
        # should end with (the updates reach the page meanwhile)
        if self.live and self.display_waits == "final":
            self.wait(self.display_timeout)
        elif self.live and self.display_waits == "first":
            self.wait_first(self.display_timeout)

    #: the longest a cell waits in ``_ipython_display_`` (s); the explorer keeps computing after
    display_timeout = 900.0

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)
