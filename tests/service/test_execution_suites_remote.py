"""The execution-mode suites written for local devices (tests/execution), run unchanged against the same
devices through the service: the ``device`` fixture gives remote devices here."""
import pytest

from tests.execution.conftest import *  # noqa: F401,F403  (the suites' fixtures: jobs, models)
from tests.execution.test_asynchronous import *  # noqa: F401,F403
from tests.execution.test_burst_and_reusable import *  # noqa: F401,F403
from tests.execution.test_deadlines import *  # noqa: F401,F403
from tests.execution.test_fenced import *  # noqa: F401,F403

from .conftest import served_device_names

# a 1 ms deadline that must still be ahead when the server validates the launch: a round trip to
# another process on a loaded machine can take that long
del test_deadline_passing_while_queued  # noqa: F821
# waits for Future.running() to mean "started on the device"; a remote execution's future runs from its
# launch (the server does not report when its job starts)
del test_high_priority_overtakes_queued_low  # noqa: F821


@pytest.fixture(params=served_device_names())
def device(request, suite_service):
    return suite_service.get_device(request.param)
