from __future__ import annotations

import ssl

from homarus.tls import client_context, context_for


def test_https_bases_share_the_verifying_context() -> None:
    ctx = context_for("https://api.example.test/v1")
    assert ctx is client_context()
    assert ctx.cert_store_stats()["x509_ca"] > 0
    assert context_for("HTTPS://api.example.test") is ctx


def test_plain_http_bases_skip_the_ca_bundle_but_still_fail_closed() -> None:
    ctx = context_for("http://127.0.0.1:8080/v1")
    assert ctx is not client_context()
    assert ctx.cert_store_stats()["x509_ca"] == 0  # nothing trusted: an https hop cannot verify
    assert ctx.verify_mode == ssl.CERT_REQUIRED
    assert ctx.check_hostname
    assert context_for("http://localhost") is ctx
