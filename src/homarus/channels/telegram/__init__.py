"""Telegram, the reference channel: a Bot API client, long polling or a webhook, HTML formatting.

``plugin`` is the bundled plugin (manifest + ``register``) and imports nothing else of this
package; the rest loads when a Telegram account starts.
"""
