"""The Discord REST client's rate limits, as Discord documents its headers, on a fake clock."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from homarus.channels.discord.api import DiscordApi, DiscordApiError, RateLimits
from tests.fakes.discord_server import FAKE_TOKEN, run_fake_discord


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def headers(bucket: str, remaining: int, reset_after: float) -> httpx.Headers:
    return httpx.Headers(
        {
            "x-ratelimit-bucket": bucket,
            "x-ratelimit-remaining": str(remaining),
            "x-ratelimit-reset-after": str(reset_after),
        }
    )


def test_an_exhausted_bucket_waits_for_its_reset_per_major_parameter() -> None:
    clock = Clock()
    limits = RateLimits(clock)
    route = "POST /channels/{channel}/messages"
    assert limits.wait_for(route, "c1") == 0.0  # nothing known yet
    limits.update(route, "c1", headers("b1", 0, 2.5))
    assert limits.wait_for(route, "c1") == pytest.approx(2.5)
    assert limits.wait_for(route, "c2") == 0.0  # another channel is another bucket
    clock.now += 2.5
    assert limits.wait_for(route, "c1") == 0.0
    limits.update(route, "c1", headers("b1", 3, 1.0))
    assert limits.wait_for(route, "c1") == 0.0


def test_a_global_limit_holds_every_route() -> None:
    clock = Clock()
    limits = RateLimits(clock)
    limits.limited(4.0, is_global=True)
    assert limits.wait_for("GET /users/@me", "") == pytest.approx(4.0)
    limits.limited(9.0, is_global=False)  # a route's own 429 does not hold the others
    assert limits.wait_for("GET /users/@me", "") == pytest.approx(4.0)


async def test_a_429_is_raised_with_its_wait_and_a_global_one_holds_the_client() -> None:
    with run_fake_discord() as fake:
        fake.add_dm("42")
        api = DiscordApi(FAKE_TOKEN, fake.api_root)
        try:
            fake.limit_next(0.25, is_global=True)
            with pytest.raises(DiscordApiError) as caught:
                await api.create_message("42", "hi")
            assert caught.value.status == 429 and caught.value.retry_after == 0.25
            assert api.limits.wait_for("GET /users/@me", "") > 0  # every route waits now
            sent = await api.create_message("42", "hi again")  # waits out the global limit, then goes
            assert sent["content"] == "hi again"
            for _ in range(4):  # the bucket holds 5: the sixth request waits for the reset
                await api.create_message("42", "more")
            assert api.limits.wait_for("POST /channels/{channel}/messages", "42") > 0
            await api.create_message("42", "after the reset")
            assert fake.posted_to("42")[-1] == "after the reset"
        finally:
            await api.aclose()


async def test_errors_carry_discords_code_and_never_the_token() -> None:
    with run_fake_discord() as fake:
        api = DiscordApi(FAKE_TOKEN, fake.api_root)
        bad = DiscordApi("not-the-token", fake.api_root)
        try:
            with pytest.raises(DiscordApiError) as unknown:
                await api.create_message("999", "hi")
            assert (unknown.value.status, unknown.value.code) == (404, 10003)
            fake.add_dm("42")
            with pytest.raises(DiscordApiError) as too_long:
                await api.create_message("42", "x" * 2001)
            assert too_long.value.code == 50035
            with pytest.raises(DiscordApiError) as refused:
                await bad.get_me()
            assert refused.value.status == 401 and "not-the-token" not in str(refused.value)
        finally:
            await api.aclose()
            await bad.aclose()


async def test_a_file_goes_as_multipart_with_its_payload_json(tmp_path: Path) -> None:
    with run_fake_discord() as fake:
        fake.add_dm("42")
        report = tmp_path / "report.pdf"
        report.write_bytes(b"%PDF-1.7 tiny")
        api = DiscordApi(FAKE_TOKEN, fake.api_root)
        try:
            sent = await api.create_message("42", "the report", reply_to="77", file=report, mime_type="application/pdf")
        finally:
            await api.aclose()
        posted = fake.posted[-1]
        assert sent["id"] == posted.id and posted.content == "the report"
        assert posted.files == [("report.pdf", b"%PDF-1.7 tiny")]
        assert posted.body["message_reference"] == {"message_id": "77", "fail_if_not_exists": False}
        assert posted.body["attachments"] == [{"id": 0, "filename": "report.pdf"}]
