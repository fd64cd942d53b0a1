"""Imports every model module so `Base.metadata` holds every table.

Alembic's env and the schema drift tests import this module. Add one import line
here for each new model module.
"""

from __future__ import annotations

from liz.db import idempotency as idempotency_models  # noqa: F401
from liz.db import models as models
from liz.db import tool_approvals as tool_approval_models  # noqa: F401
from liz.db.models import Base as Base
from liz.facts import tables as fact_tables  # noqa: F401
from liz.learning_queue import tables as learning_tables  # noqa: F401
from liz.twitter import models as twitter_models  # noqa: F401
