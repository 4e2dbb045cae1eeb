"""The `cron` config section: reference defaults, camelCase keys, closed."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from homarus.config.cron import CronConfig


def test_defaults_match_the_reference() -> None:
    cfg = CronConfig()
    assert (cfg.enabled, cfg.max_concurrent_runs, cfg.store) == (True, 1, None)
    assert (cfg.run_log.max_bytes, cfg.run_log.keep_lines) == (2_000_000, 2000)


def test_camel_case_and_bounds() -> None:
    cfg = CronConfig.model_validate({"maxConcurrentRuns": 3, "runLog": {"keepLines": 50}, "webhookToken": "s3cret"})
    assert cfg.max_concurrent_runs == 3 and cfg.run_log.keep_lines == 50
    assert cfg.webhook_token is not None and cfg.webhook_token.get_secret_value() == "s3cret"
    with pytest.raises(ValidationError):
        CronConfig.model_validate({"maxConcurrentRuns": 0})
    with pytest.raises(ValidationError):
        CronConfig.model_validate({"sessionRetention": "24h"})
