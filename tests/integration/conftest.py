import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from testing.broker import Broker  # noqa: E402
from testing.http_receiver import Receiver  # noqa: E402


@pytest.fixture
def broker():
    b = Broker().start()
    yield b
    b.stop()


@pytest.fixture
def receiver():
    r = Receiver().start()
    yield r
    r.stop()
