"""Settings of durable learning, from ``LIZ_LEARNING_*`` environment variables or ``.env``."""

from __future__ import annotations

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class LearningSettings(BaseSettings):
    """How this process works the queue of learning jobs."""

    model_config = SettingsConfigDict(
        env_prefix="LIZ_LEARNING_",
        env_file=".env",
        extra="ignore",
        env_ignore_empty=True,
        populate_by_name=True,
    )

    # Work the queue in this process (every liz process does unless told not to).
    worker: bool = True
    # How often an idle worker looks for jobs that became due (seconds).
    poll_seconds: float = Field(default=5.0, gt=0)
    # Jobs tried at once by one process (each is a different user: a user's are in order).
    concurrency: int = Field(default=4, ge=1, le=64)
    # A user's messages are learned together once the conversation has been quiet this
    # long (seconds), at the next beat (every half of it; see liz.learning_queue.beats):
    # one extraction call, one embedding request and at most one reconcile call per burst
    # instead of per message. 0: right after each reply.
    learn_after_idle: float = Field(default=30.0, ge=0, validation_alias="LIZ_LEARN_AFTER_IDLE")
    # ...or once this many are waiting, and never more than this many in one round.
    # (LIZ_LEARNING_BATCH_SIZE, its former name, is still read.)
    batch_size: int = Field(
        default=16,
        ge=1,
        le=64,
        validation_alias=AliasChoices("LIZ_LEARN_BATCH", "LIZ_LEARNING_BATCH_SIZE"),
    )
    # Learning gives way to replies: it starts once no turn has been under way in this
    # process for this long (seconds), so a burst of turns is not slowed by it...
    quiet_seconds: float = Field(default=0.05, ge=0)
    # ...but waits no longer than this for such a lull (seconds; 0: it never waits).
    max_defer_seconds: float = Field(default=5.0, ge=0)
    # A worker's claim on a job, renewed every third of it while the work goes on; when
    # it runs out (the process died), another takes over.
    lease_seconds: float = Field(default=30.0, gt=0)
    # A message whose reply never came (the process died mid-request) is learned from
    # alone after this long.
    reply_wait_seconds: float = Field(default=300.0, ge=0)
    # Retries wait about this long first, then twice as long each time, up to the cap,
    # for as long as the LLM or the database stays down.
    first_retry_seconds: float = Field(default=5.0, gt=0)
    max_retry_seconds: float = Field(default=900.0, gt=0)
    # On shutdown, how long tries under way may take before they are cancelled (their
    # jobs stay queued for the next process).
    shutdown_seconds: float = Field(default=10.0, ge=0)
    # Tries of one message that get unusable LLM answers (not JSON, wrong shape) or
    # that the endpoint refuses (a 4xx such as 400: too long, against its policy)
    # before it is given up on and listed as failed (`liz facts queue --failed`); the
    # user's later messages are learned meanwhile.
    max_bad_answers: int = Field(default=5, ge=1, le=100)
