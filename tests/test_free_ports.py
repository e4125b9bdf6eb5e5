"""scripts/free_ports.py: the ports tests and scripts start their servers on."""
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "scripts"))
import free_ports  # noqa: E402


@pytest.fixture(autouse=True)
def clean_module(monkeypatch):
    """Each test starts with nothing remembered (the tests run before it in this process
    took ports through the same module), every port bindable and the default ephemeral
    range, whatever the machine has."""
    monkeypatch.setattr(free_ports, "_recent", {})
    monkeypatch.setattr(free_ports, "_bindable", lambda ports: True)
    monkeypatch.setattr(free_ports, "_ephemeral_low", lambda: 32768)


class ScriptedRandom:
    """A random source that returns the given values in order."""

    def __init__(self, *values):
        self.values = list(values)

    def randrange(self, low, high):
        value = self.values.pop(0)
        assert low <= value < high
        return value


def test_a_port_handed_out_is_not_handed_out_again_before_it_is_bound():
    # Two servers whose ports are picked before either starts: the first one's port is still
    # free when the second is picked, and must not be picked again.
    first = free_ports.free_port_bases(1, rng=ScriptedRandom(27001))
    second = free_ports.free_port_bases(1, rng=ScriptedRandom(27001, 27002))
    assert first == [27001]
    assert second == [27002]


def test_ranges_do_not_overlap_recent_ports():
    free_ports.free_port_bases(1, rng=ScriptedRandom(27104))
    bases = free_ports.free_port_bases(1, span=4, rng=ScriptedRandom(27101, 27105))
    assert bases == [27105]


def test_only_the_last_recent_ports_are_remembered():
    free_ports.free_port_bases(1, rng=ScriptedRandom(27201))
    later = [27300 + i for i in range(free_ports.RECENT)]
    free_ports.free_port_bases(len(later), rng=ScriptedRandom(*later))
    assert free_ports.free_port_bases(1, rng=ScriptedRandom(27201)) == [27201]
