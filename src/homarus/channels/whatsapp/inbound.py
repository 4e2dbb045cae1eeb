"""A WhatsApp Cloud webhook notification as the channel layer's :class:`InboundMessage` list.

One notification (``object: whatsapp_business_account``) holds entries of changes; a change of
field ``messages`` for this account's number (``metadata.phone_number_id``) holds ``messages``
(what people sent) and ``statuses`` (what became of what the bot sent). Every message is a DM:
the chat and the sender are the person's number in E.164 (``+`` and the ``wa_id``), as the
original names WhatsApp peers. Text, captions, button replies and locations are text; images,
audio (a ``voice`` note when recorded), video, documents and stickers are attachments fetched by
media id. Reactions, contacts, system and unsupported messages are skipped with the reason, and
failed statuses are returned for the log (the 24-hour window closing is the usual one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from homarus.channels.model import Attachment, AttachmentKind, InboundMessage

__all__ = ["Notification", "normalize_notification"]

_MEDIA: Final[dict[str, AttachmentKind]] = {
    "image": "image",
    "audio": "audio",
    "video": "video",
    "document": "document",
    "sticker": "sticker",
}


@dataclass(frozen=True, slots=True)
class Notification:
    messages: tuple[InboundMessage, ...]
    #: (what was skipped, why)
    skipped: tuple[tuple[str, str], ...]
    #: (recipient, error) of sends WhatsApp reports as failed
    failures: tuple[tuple[str, str], ...]


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def normalize_notification(body: Any, *, account_id: str, phone_number_id: str) -> Notification:
    messages: list[InboundMessage] = []
    skipped: list[tuple[str, str]] = []
    failures: list[tuple[str, str]] = []
    data = _object(body)
    if data.get("object") != "whatsapp_business_account":
        return Notification((), (("notification", f"object {data.get('object')!r}"),), ())
    for entry in _list(data.get("entry")):
        for change in _list(_object(entry).get("changes")):
            change = _object(change)
            value = _object(change.get("value"))
            if change.get("field") != "messages":
                skipped.append(("change", f"field {change.get('field')!r}"))
                continue
            number = str(_object(value.get("metadata")).get("phone_number_id") or "")
            if number != phone_number_id:
                skipped.append(("change", f"for another number ({number or 'none'})"))
                continue
            names = {
                str(_object(c).get("wa_id") or ""): str(_object(_object(c).get("profile")).get("name") or "")
                for c in _list(value.get("contacts"))
            }
            for raw in _list(value.get("messages")):
                msg, why = _message(_object(raw), names, account_id)
                if msg is None:
                    skipped.append((str(_object(raw).get("id") or "message"), why))
                else:
                    messages.append(msg)
            for status in _list(value.get("statuses")):
                status = _object(status)
                if status.get("status") == "failed":
                    errors = [_object(e) for e in _list(status.get("errors"))]
                    why = "; ".join(f"{e.get('code')}: {e.get('title') or e.get('message')}" for e in errors)
                    failures.append((str(status.get("recipient_id") or ""), why or "failed"))
    return Notification(tuple(messages), tuple(skipped), tuple(failures))


def _message(raw: dict[str, Any], names: dict[str, str], account_id: str) -> tuple[InboundMessage | None, str]:
    wa_id, message_id, kind = str(raw.get("from") or ""), str(raw.get("id") or ""), str(raw.get("type") or "")
    if not wa_id.isdigit() or not message_id:
        return None, "no sender or id"
    text = ""
    attachments: tuple[Attachment, ...] = ()
    if kind == "text":
        text = str(_object(raw.get("text")).get("body") or "")
    elif kind in _MEDIA:
        media = _object(raw.get(kind))
        if not media.get("id"):
            return None, f"a {kind} without a media id"
        att_kind: AttachmentKind = "voice" if kind == "audio" and media.get("voice") else _MEDIA[kind]
        name = str(media.get("filename") or "") or None
        attachments = (Attachment(att_kind, str(media["id"]), str(media.get("mime_type") or "") or None, name),)
        text = str(media.get("caption") or "")
    elif kind == "interactive":
        reply = _object(raw.get("interactive"))
        chosen = _object(reply.get("button_reply")) or _object(reply.get("list_reply"))
        text = str(chosen.get("title") or "")
    elif kind == "button":
        text = str(_object(raw.get("button")).get("text") or "")
    elif kind == "location":
        place = _object(raw.get("location"))
        label = " ".join(str(place.get(k) or "") for k in ("name", "address")).strip()
        text = f"[location: {place.get('latitude')}, {place.get('longitude')}{f' — {label}' if label else ''}]"
    else:
        return None, f"a {kind or 'typeless'} message"
    if not text.strip() and not attachments:
        return None, "no text and no media"
    context = _object(raw.get("context"))
    try:
        timestamp = int(str(raw.get("timestamp") or "0")) * 1000
    except ValueError:
        timestamp = 0
    person = f"+{wa_id}"
    msg = InboundMessage(
        channel="whatsapp",
        account_id=account_id,
        chat_kind="direct",
        chat_id=person,
        message_id=message_id,
        sender_id=person,
        sender_name=names.get(wa_id, ""),
        text=text.strip(),
        timestamp=timestamp,
        reply_to_id=str(context["id"]) if context.get("id") else None,
        forwarded_from="someone" if context.get("forwarded") or context.get("frequently_forwarded") else None,
        attachments=attachments,
    )
    return msg, ""
