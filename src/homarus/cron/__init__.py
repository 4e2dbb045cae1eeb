"""Cron jobs: schedules, the ``jobs.json`` store, run logs and the scheduler.

This package knows nothing about agents or the gateway: a job's run is an injected async
callable, so the whole state machine (due times, backoff, catch-up, concurrency) is tested with
a fake clock. ``homarus.gateway.cron_wiring`` supplies the real runner.
"""

from __future__ import annotations
