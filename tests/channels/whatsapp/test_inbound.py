"""WhatsApp Cloud notifications as the layer's messages, WhatsApp's formatting, the webhook's two
checks and the config's phone numbers: text, media, voice notes, button replies and locations;
statuses, reactions and other numbers' changes skipped with the reason; Meta's signature."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from homarus.channels.whatsapp.config import WhatsAppConfig, account_mode, e164
from homarus.channels.whatsapp.format import to_whatsapp
from homarus.channels.whatsapp.inbound import normalize_notification
from homarus.channels.whatsapp.webhook import challenge_answer, sign, verify_signature

NUMBER = "106540352242922"


def note(*messages: dict[str, Any], statuses: list[dict[str, Any]] | None = None, number: str = NUMBER) -> Any:
    value: dict[str, Any] = {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "15550100000", "phone_number_id": number},
        "contacts": [{"profile": {"name": "Kerry"}, "wa_id": "16315551234"}],
        "messages": list(messages),
    }
    if statuses is not None:
        value["statuses"] = statuses
    return {
        "object": "whatsapp_business_account",
        "entry": [{"id": "1", "changes": [{"value": value, "field": "messages"}]}],
    }


def msg(**kw: Any) -> dict[str, Any]:
    return {"from": "16315551234", "id": "wamid.1", "timestamp": "1700000000", **kw}


def normalize(body: Any) -> Any:
    return normalize_notification(body, account_id="default", phone_number_id=NUMBER)


def test_a_text_message_is_a_dm_from_an_e164_number() -> None:
    out = normalize(note(msg(type="text", text={"body": " hello "}, context={"id": "wamid.0", "forwarded": True})))
    [m] = out.messages
    assert (m.chat_kind, m.chat_id, m.sender_id, m.sender_name, m.text) == (
        "direct",
        "+16315551234",
        "+16315551234",
        "Kerry",
        "hello",
    )
    assert m.message_id == "wamid.1" and m.timestamp == 1_700_000_000_000 and m.reply_to_id == "wamid.0"
    assert m.forwarded_from is not None


def test_media_voice_notes_buttons_and_locations() -> None:
    out = normalize(
        note(
            msg(id="a", type="image", image={"id": "11", "mime_type": "image/jpeg", "caption": "look"}),
            msg(id="b", type="audio", audio={"id": "12", "mime_type": "audio/ogg; codecs=opus", "voice": True}),
            msg(id="c", type="document", document={"id": "13", "mime_type": "application/pdf", "filename": "a.pdf"}),
            msg(
                id="d",
                type="interactive",
                interactive={"type": "button_reply", "button_reply": {"id": "y", "title": "Yes"}},
            ),
            msg(id="e", type="location", location={"latitude": 1.5, "longitude": 2.5, "name": "Home"}),
        )
    )
    image, voice, doc, button, place = out.messages
    assert (image.text, image.attachments[0].kind, image.attachments[0].ref) == ("look", "image", "11")
    assert voice.attachments[0].kind == "voice" and doc.attachments[0].file_name == "a.pdf"
    assert button.text == "Yes" and place.text == "[location: 1.5, 2.5 — Home]"


def test_reactions_statuses_other_numbers_and_junk_are_skipped_with_the_reason() -> None:
    out = normalize(
        note(
            msg(type="reaction", reaction={"message_id": "wamid.0", "emoji": "👍"}),
            msg(type="image", image={}),
            msg(**{"from": "not-a-number"}, type="text", text={"body": "x"}),
            statuses=[
                {
                    "id": "wamid.out",
                    "status": "failed",
                    "recipient_id": "1555",
                    "errors": [{"code": 131047, "title": "Re-engagement message"}],
                },
                {"id": "wamid.ok", "status": "delivered", "recipient_id": "1555"},
            ],
        )
    )
    assert out.messages == ()
    assert [why for _, why in out.skipped] == ["a reaction message", "a image without a media id", "no sender or id"]
    assert out.failures == (("1555", "131047: Re-engagement message"),)
    other = normalize(note(msg(type="text", text={"body": "x"}), number="999"))
    assert other.messages == () and other.skipped == (("change", "for another number (999)"),)
    assert normalize({"object": "page"}).skipped == (("notification", "object 'page'"),)
    assert normalize("junk").messages == ()


def test_markdown_in_whatsapp_formatting() -> None:
    assert to_whatsapp("**bold** _it_ ~~gone~~ `x<y` 5 < 6 & 7") == "*bold* _it_ ~gone~ `x<y` 5 < 6 & 7"
    assert to_whatsapp("[docs](https://x.org/a?b=1) and [bad](ftp://h/x)") == "docs (https://x.org/a?b=1) and bad"
    md = "# Title\n\n1. one\n2. two\n\n> quoted\n\n```py\nprint(1)\n```"
    assert to_whatsapp(md) == "*Title*\n\n1. one\n2. two\n\n> quoted\n\n```\nprint(1)\n```"


def test_the_signature_and_the_verify_handshake() -> None:
    body = b'{"object":"whatsapp_business_account"}'
    good = {"x-hub-signature-256": sign("secret", body)}
    assert good["x-hub-signature-256"].startswith("sha256=") and len(good["x-hub-signature-256"]) == 71
    assert verify_signature("secret", good, body)
    assert not verify_signature("secret", good, body + b" ")
    assert not verify_signature("other", good, body)
    assert not verify_signature("secret", {}, body)
    query = {"hub.mode": "subscribe", "hub.verify_token": "phrase", "hub.challenge": "42"}
    assert challenge_answer("phrase", query) == (200, b"42")
    assert challenge_answer("phrase", {**query, "hub.verify_token": "nope"})[0] == 403
    assert challenge_answer(None, query)[0] == 403
    assert challenge_answer("phrase", {**query, "hub.challenge": ""})[0] == 400


def test_allow_from_numbers_are_e164_and_webhook_paths_differ() -> None:
    assert e164("+1 (555) 123-4567") == "+15551234567" and e164(15551234567) == "+15551234567"
    assert e164("whatsapp:+15551234567") == "+15551234567" and e164("*") == "*"
    cfg = WhatsAppConfig.model_validate({"dmPolicy": "allowlist", "allowFrom": ["1 555 123 4567"]})
    assert cfg.account("default")["allow_from"] == ("+15551234567",)
    with pytest.raises(ValidationError, match="share the webhookPath"):
        WhatsAppConfig.model_validate(
            {"accounts": {"a": {"phoneNumberId": "100001"}, "b": {"phoneNumberId": "100002"}}}
        )
    with pytest.raises(ValidationError, match="share the webhookPath"):
        WhatsAppConfig.model_validate({"mode": "cloud", "accounts": {"a": {}, "b": {}}})
    # without a mode or a number, an account is a linked personal number: no webhook at all
    personal = WhatsAppConfig.model_validate({"accounts": {"a": {}, "b": {"authDir": "/tmp/wa-b"}}})
    assert [account_mode(personal.account(a)) for a in ("a", "b")] == ["personal", "personal"]
    assert account_mode({"phone_number_id": "100001"}) == "cloud"
    with pytest.raises(ValidationError):
        WhatsAppConfig.model_validate({"phoneNumberId": "+1555"})
