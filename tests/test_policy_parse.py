"""Policy.parse: the one parser of policy text (CLI, sweeps, widgets, demo)."""

import pytest
from hypothesis import given, settings, strategies as st

from numalab.errors import NumalabValueError, check_seeds
from numalab.policy import Policy

PROFILES = Policy.profiles()


def _variants():
    out = []
    for n in PROFILES:
        out.append(Policy.profile(n))
        out.append(Policy.profile(n, history=5))
        if n != "pre-6.4":
            for rule in Policy.adaptive_rules():
                out.append(Policy.profile(n, history="adaptive", adapt=rule))
    out += [Policy(history=4, rules="own_pid,hot,shared=3"), Policy(history=6, rotation="ring"),
            Policy.profile("6.12", forced_one=False), Policy.profile("6.4", width=128),
            Policy(rules="early_passes=mm,own_pid"),
            Policy.profile("6.12", history="adaptive", adapt="span", n_max=16, adapt_enabled=False)]
    return out


@pytest.mark.parametrize("pol", _variants(), ids=lambda p: p.name)
def test_round_trips_every_name(pol):
    back = Policy.parse(pol.name)
    assert back == pol and back.name == pol.name


@given(st.sampled_from(PROFILES), st.integers(1, 64))
@settings(max_examples=60)
def test_history_argument_sets_n(profile, n):
    assert Policy.parse(profile, history=n) == Policy.profile(profile, history=n)
    assert Policy.parse(profile, history=str(n)) == Policy.profile(profile, history=n)


def test_shorthands():
    assert Policy.parse("adaptive:span") == Policy.profile("6.12", history="adaptive", adapt="span")
    assert Policy.parse("6.12+adaptive:span") == Policy.parse("6.12+adaptive=span")
    assert Policy.parse("6.4", history="adaptive:popcount").name == "6.4+adaptive=popcount"
    assert Policy.parse("6.12+N=4", history="profile").windows == 4
    p = Policy.profile("6.8")
    assert Policy.parse(p) is p


@pytest.mark.parametrize("text", ["", "  ", "6.13", "6.12+N=0", "6.12+N=65", "6.12+foo", "6.12+N=4+N=5",
                                  "6.12+", "N=x", "6.12+adaptive=nope", None, 4])
def test_bad_text_names_the_parameter(text):
    with pytest.raises(NumalabValueError, match="policy|N|adapt"):
        Policy.parse(text)


@pytest.mark.parametrize("history", [0, -1, 1.5, True, "sometimes", "adaptive:nope"])
def test_bad_history(history):
    with pytest.raises(NumalabValueError, match="history|adapt"):
        Policy.parse("6.12", history=history)


def test_check_seeds():
    assert check_seeds(3) == [0, 1, 2]
    assert check_seeds([5, 2**63 - 1]) == [5, 2**63 - 1]
    for bad in (0, True, [], [1, 1], [-1], [2**63], "3", 10**6, 1.0):
        with pytest.raises(NumalabValueError, match="seeds"):
            check_seeds(bad)
