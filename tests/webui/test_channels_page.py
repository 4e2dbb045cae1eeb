"""The Control UI's channels page in headless Chromium: a Telegram account (the fake Bot API),
a stranger's pairing request arriving live and approved from the page, a dead letter sent again."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from homarus.providers.scripted import Reply, ScriptedProvider
from tests.conftest import TEST_TOKEN
from tests.fakes.telegram_server import FakeTelegram, run_fake_telegram
from tests.webui.harness import Served, served
from tests.webui.test_browser import _close_contexts, _connected, _open  # noqa: F401 - the fixture too

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

OWNER = 7001
STRANGER = 7002


def _config(fake: FakeTelegram) -> dict[str, Any]:
    return {
        "models": {"providers": {"test": {"api": "scripted", "models": [{"id": "m"}]}}},
        "agents": {"defaults": {"model": {"primary": "test/m"}, "heartbeat": {"every": "0m"}}},
        "channels": {"telegram": {"botToken": fake.token, "apiRoot": fake.api_root, "allowFrom": [OWNER]}},
        "messages": {"inbound": {"debounceMs": 0}},
    }


def _until(page: Page, check: Callable[[], Any], timeout_s: float = 10.0) -> None:
    """Poll ``check`` (something outside the page) while the page keeps running."""
    for _ in range(int(timeout_s / 0.05)):
        if check():
            return
        page.wait_for_timeout(50)
    raise AssertionError("timed out")


@pytest.fixture
def telegram(tmp_path: Path) -> Iterator[tuple[Served, FakeTelegram]]:
    with run_fake_telegram() as fake, served(tmp_path, _config(fake)) as gw:
        yield gw, fake


def test_pairing_is_approved_and_a_dead_letter_sent_again_from_the_page(
    browser: Browser, telegram: tuple[Served, FakeTelegram]
) -> None:
    gw, fake = telegram
    page, watch = _open(browser, gw)
    _connected(page)
    page.click("a[data-tab=channels]")
    page.wait_for_selector("#channels-grid [data-card=accounts] >> text=running")
    assert "polling" in page.inner_text("[data-card=accounts]")
    assert "Nobody is waiting" in page.inner_text("[data-card='pairing requests']")

    fake.user_message(STRANGER, "hello?", first_name="Grace")  # arrives while the page is open
    page.wait_for_selector("#channels-badge >> text=1")
    row = page.wait_for_selector("[data-request]")
    assert row is not None and "Grace" in row.inner_text()
    assert "the first sender you approve becomes the owner" in page.inner_text("[data-card='pairing requests']")
    page.click("[data-request] [data-decision=approve]")
    page.wait_for_selector("[data-request]", state="detached")
    page.wait_for_selector("#channels-badge", state="hidden")
    _until(page, lambda: len(fake.texts_to(STRANGER)) == 2)
    assert "approved" in fake.texts_to(STRANGER)[-1]
    assert gw.gateway.config.commands.owner_allow_from == (f"telegram:{STRANGER}",)

    # the owner blocked the bot: the reply becomes a dead letter; unblocked, it is sent again
    gw.gateway.models.overrides["test"] = ScriptedProvider([Reply("you will get this eventually")])
    fake.blocked.add(str(OWNER))
    fake.user_message(OWNER, "ping")
    page.click("#channels-refresh")
    page.wait_for_selector("[data-dead]", timeout=20_000)
    assert "you will get this eventually" in page.inner_text("[data-card=delivery]")
    fake.blocked.discard(str(OWNER))
    page.click("[data-dead] [data-action=replay]")
    page.wait_for_selector("[data-dead]", state="detached")
    _until(page, lambda: fake.texts_to(OWNER))
    assert fake.texts_to(OWNER) == ["you will get this eventually"]
    assert fake.token not in page.content()
    assert watch.errors == []


def test_a_device_waiting_to_pair_is_approved_from_the_page(browser: Browser, tmp_path: Path) -> None:
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from tests.gateway.ws.test_device_pairing import REMOTE, Phone

    with served(tmp_path, {"agents": {"defaults": {"heartbeat": {"every": "0m"}}}}) as gw:

        class Live:
            url = f"ws://127.0.0.1:{gw.port}"

        async def attempt(phone: Phone) -> dict[str, Any]:
            client, res = await phone.connect(Live, token=TEST_TOKEN, headers=REMOTE)  # type: ignore[arg-type]
            await client.ws.close()
            return res

        def connect(phone: Phone) -> dict[str, Any]:
            # Playwright's sync API keeps its own loop running in this thread: the client gets one
            with ThreadPoolExecutor(1) as pool:
                return pool.submit(asyncio.run, attempt(phone)).result(timeout=30)

        page, watch = _open(browser, gw)
        _connected(page)
        page.click("a[data-tab=channels]")
        page.wait_for_selector("[data-card=devices] >> text=No device has asked to pair")
        phone = Phone()
        assert connect(phone)["error"]["code"] == "NOT_PAIRED"
        page.wait_for_selector("#channels-badge >> text=1")
        page.wait_for_selector("[data-card=devices] >> text=Ada's phone")
        page.click("[data-device-request] [data-decision=approve]")
        page.wait_for_selector("[data-card=devices] >> text=paired")
        page.wait_for_selector("#channels-badge", state="hidden")
        assert connect(phone)["ok"] is True
        assert watch.errors == []


def test_a_personal_whatsapp_number_is_linked_from_the_page(browser: Browser, tmp_path: Path) -> None:
    from homarus.channels.whatsapp import linked
    from tests.fakes.whatsapp_web import FakeWhatsAppWeb

    fake = FakeWhatsAppWeb()
    linked.register_engine("fake", fake.factory)
    config = {
        "agents": {"defaults": {"heartbeat": {"every": "0m"}}},
        "channels": {"whatsapp": {"mode": "personal", "engine": "fake"}},
    }
    with served(tmp_path, config) as gw:
        page, watch = _open(browser, gw)
        _connected(page)
        page.click("a[data-tab=channels]")
        page.wait_for_selector("[data-card=accounts] >> text=unlinked")
        assert "channels login whatsapp" in page.inner_text("[data-card=accounts]")
        page.click("[data-card=accounts] [data-action=link]")
        first = page.wait_for_selector("[data-linking] img[data-qr]")
        assert first is not None
        shown = first.get_attribute("src") or ""
        assert shown.startswith("data:image/png;base64,")
        fake.show_code()  # WhatsApp rotates the code: the page draws the new one
        page.wait_for_function("(old) => document.querySelector('[data-qr]')?.src !== old", arg=shown)
        page.wait_for_timeout(5500)  # a refresh of the page keeps the panel and its code
        assert page.query_selector("[data-linking] img[data-qr]") is not None
        fake.scan()
        page.wait_for_selector("[data-linking]", state="detached")
        page.wait_for_selector("[data-card=accounts] >> text=running")
        assert "+15550009999" in page.inner_text("[data-card=accounts]")
        assert page.query_selector("[data-card=accounts] [data-action=link]") is None
        assert watch.errors == []
