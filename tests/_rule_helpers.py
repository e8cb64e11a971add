"""Rules the rule tests share, and a maker of rules as a notebook cell makes them."""

from __future__ import annotations

import linecache

import numpy as np

from numalab.rules import Param, Rule


def notebook_rule(src: str, **options) -> Rule:
    """A rule defined the way a Jupyter cell defines one: its function lives in ``__main__``
    (not importable anywhere else) and its source is kept by linecache, as IPython keeps a
    cell's. The first function the cell defines is the rule."""
    filename = f"<notebook cell {abs(hash(src)):x}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns = {"__name__": "__main__", "np": np}
    exec(compile(src, filename, "exec"), ns)  # noqa: S102 -- the test's own source
    fn = next(v for v in ns.values() if getattr(getattr(v, "__code__", None), "co_filename", None) == filename)
    return Rule(options.pop("name", fn.__name__), fn, **options)


#: notebook 08's rule: the scanner's PID in any window, or k distinct PIDs in the newest two
ANY_OR_K = '''
def any_window_or_k(view, k=2):
    """Scan when the scanner's PID is in any window, or when at least k distinct PIDs were
    recorded in the two newest windows (a VMA many threads use)."""
    recent = view.union(min(2, view.windows))
    return view.has_scanner(view.union(view.windows)) | (view.popcount(recent) >= k)
'''


def mine_own_pid(view):
    """The v6.4 own-PID test, written as a user rule (an importable module-level function)."""
    return view.own_pid


def no_huge(view, pages=4096):
    """Refuse VMAs of more than ``pages`` pages (a skip rule)."""
    return view.size_pages > pages


NO_HUGE_PARAMS = {"pages": Param(4096, "largest VMA scanned (pages)", lo=1)}


def any_window_or_k(view, k=2):
    """Notebook 08's rule as an importable function (the hypothesis agreement draws it)."""
    recent = view.union(min(2, view.windows))
    return view.has_scanner(view.union(view.windows)) | (view.popcount(recent) >= k)


def starved_or_late(view):
    """Scan a VMA the scanner has not seen in two passes while the mm's clock is past it."""
    return (view.numa_scan_seq - view.prev_scan_seq > 2) & (view.now >= view.next_scan)


def user_rules():
    """A small family of user rules, of both kinds and placed between the built-in tests."""
    return [
        Rule("any_or_k", any_window_or_k, params={"k": Param(2, "distinct PIDs", lo=1, hi="width")},
             after="own_pid"),
        Rule("refuse_big", no_huge, kind="skip", before="own_pid", params=NO_HUGE_PARAMS),
        Rule("late", starved_or_late, before="early_passes"),
    ]
