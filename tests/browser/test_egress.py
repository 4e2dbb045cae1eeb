"""What the browser tool reports as blocked is what its own page asked for: Chromium's background
traffic (requests with no page, e.g. to accounts.google.com) and other tabs' requests are kept
apart, so a navigation is never answered with someone else's refusal. Bounded as before."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from homarus.browser.egress import MAX_BLOCKED, Egress, _page_of


def test_a_page_sees_only_its_own_refusals_after_its_mark() -> None:
    egress = Egress()
    page, other = object(), object()
    egress.refuse("https://early.example/", "before the mark", page)
    mark = egress.mark()
    egress.refuse("http://localhost/secret", "private address", page)
    egress.refuse("https://accounts.google.com/", "Unable to resolve hostname")  # the browser's own
    egress.refuse("http://10.0.0.1/", "private address", other)
    assert egress.since(mark, page) == [("http://localhost/secret", "private address")]
    assert egress.since(mark, other) == [("http://10.0.0.1/", "private address")]
    assert len(egress.blocked) == 4  # everything is still there to inspect


def test_refusals_are_bounded_and_a_mark_survives_the_trimming() -> None:
    egress = Egress()
    page = object()
    for i in range(MAX_BLOCKED + 20):
        egress.refuse(f"http://10.0.0.{i % 250}/", "private", page)
    mark = egress.mark()
    egress.refuse("http://localhost/x", "private", page)
    assert len(egress.blocked) == MAX_BLOCKED
    assert egress.since(mark, page) == [("http://localhost/x", "private")]


def test_a_request_without_a_frame_has_no_page() -> None:
    class ServiceWorkerRequest:
        @property
        def frame(self) -> Any:
            raise RuntimeError("Service Worker requests do not have an associated frame")

    page = object()
    assert _page_of(ServiceWorkerRequest()) is None
    assert _page_of(SimpleNamespace(frame=SimpleNamespace(page=page))) is page
