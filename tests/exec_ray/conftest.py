"""One real Ray cluster (head + three nodes) for every Ray test of the session:
starting one costs ~8-12 s and ~1 GiB, so it is shared, and always shut down."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import raycluster


@pytest.fixture(scope="session")
def rc() -> Iterator[raycluster.RayTestCluster]:
    ray = pytest.importorskip("ray", reason="the Ray executor needs ray: pip install 'tide[ray]'")
    tc = raycluster.start()
    print(f"\nRay cluster (head + {len(tc.nodes)} nodes) up in {tc.started_in:.1f} s")
    try:
        ray.init(address=tc.address, namespace="tide-test", log_to_driver=False)
        yield tc
    finally:
        ray.shutdown()
        tc.cluster.shutdown()


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under `pytest -n 2 --dist loadgroup` (make test) every test that needs
    the Ray cluster runs on one worker, so one cluster is started, not two.
    Marked after xdist had read the groups, the Ray tests ran on both workers
    with a cluster each."""
    for item in items:
        if "rc" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("ray"))
