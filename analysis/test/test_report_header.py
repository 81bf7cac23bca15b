"""The report's first line names the backend and the kernel whose qdiscs ran the network (docs/metrics.md, `run`)."""

from typing import Any

from rtclab import report


def first_line(**run: Any) -> str:
    return report.render({"run": {"id": "r1", "duration_s": 2.0, **run}, "flows": [], "calls": []}).splitlines()[0]


def test_the_uml_guest_kernel_and_its_tick_rate_are_named() -> None:
    line = first_line(backend="uml", backend_kernel="6.1.176", backend_kernel_hz=100)
    assert line.endswith("backend uml (guest kernel 6.1.176, HZ 100)")


def test_the_kernel_backend_names_the_host_tick_rate_alone() -> None:
    assert first_line(backend="kernel", backend_kernel=None, backend_kernel_hz=250).endswith("backend kernel (HZ 250)")


def test_userspace_names_no_kernel() -> None:
    assert first_line(backend="userspace", backend_kernel=None, backend_kernel_hz=None).endswith("backend userspace")
