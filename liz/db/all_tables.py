"""Imports every table module so `Base.metadata` holds every table.

Alembic's env and the schema drift tests import this module. Add one import line
here for each new table module.
"""

from __future__ import annotations

from liz.connectors import tables as connector_tables  # noqa: F401
from liz.db import idempotency as idempotency_models  # noqa: F401
from liz.db import tables as tables
from liz.db import tool_approvals as tool_approval_tables  # noqa: F401
from liz.db import usage as usage_tables  # noqa: F401
from liz.db.tables import Base as Base
from liz.facts import tables as fact_tables  # noqa: F401
from liz.learning_queue import tables as learning_tables  # noqa: F401
from liz.twitter import tables as twitter_tables  # noqa: F401
